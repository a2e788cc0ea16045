"""The hypothesis a trace supports: the category that took most of the steps, said as a sentence.

Every number in the sentence is read from the trace (the step breakdown, the counters, the op
table), so a re-run renders its own; the fixed words name the mechanism and what usually fixes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course_lib.profile.breakdown import CATEGORIES, Breakdown, step_breakdown
from course_lib.profile.counters import Counters, counters
from course_lib.profile.ops import OpTable, op_stats
from course_lib.profile.trace import Trace

REST_TOLERANCE = 1.1  # a rest of the step within 10% of its first time is read as unchanged
LEAD_MARGIN = 1.1  # a category leads another where its share is this many times the other's in every step
ARITHMETIC_SHARE = 0.8  # traced functions' share of the step from which the rest is not worth reading first


@dataclass
class Hypothesis:
    """What the trace points at: ``bottleneck`` (a breakdown category), its ``share``, the ``sentence``."""

    bottleneck: str
    share: float
    sentence: str
    breakdown: Breakdown
    counters: Counters
    ops: OpTable
    contender: str | None = None  # a category whose order with ``bottleneck`` changes from step to step

    @property
    def named(self) -> str:
        """The bottleneck as a reader may quote it: one category, or two where this run cannot order them."""
        if self.contender is None:
            return self.bottleneck
        return f"{self.bottleneck} or {self.contender} (this run cannot tell which is larger)"

    def __str__(self) -> str:
        return self.sentence

    def _repr_markdown_(self) -> str:
        return f"**Hypothesis:** {self.sentence}"

    __repr__ = __str__


def _per_step(n: int, steps: int) -> str:
    per = n / steps
    return f"{per:.0f}" if per == int(per) else f"{per:.1f}"


def leads(b: Breakdown, first: str, second: str) -> bool:
    """Whether ``first`` took at least ``LEAD_MARGIN`` times ``second``'s share in every step: an order that
    holds step after step, not one read from the steps' total alone."""
    return all(p[first] > LEAD_MARGIN * p[second] for p in b.parts)


def _reading(cat: str, b: Breakdown, c: Counters, ops: OpTable, runner_up: bool) -> str:
    """What ``cat``'s share of the step says, with the counts behind it; ``runner_up``: name the next category
    too where the traced functions leave much of the step to it."""
    share, steps = b.share(cat), c.steps
    if cat == "input":
        return (f"{share:.0%} of each step waits for input: the step thread sits in tf.data's IteratorGetNext "
                "while the pipeline produces the next batch; make the pipeline keep up (read in parallel, "
                "parse whole batches, prefetch)")
    if cat == "tracing":
        names = ", ".join(sorted(c.traces)) or "a function"
        return (f"{share:.0%} of each step makes graphs (tracing the Python function, then optimising and "
                f"instantiating the new graph): {c.retraces} retraces of {names} in {steps} steps; give the "
                "function arguments that keep its signature (tensors, not new Python values)")
    if cat == "compile":
        return (f"{share:.0%} of each step compiles with XLA: {c.xla_compilations} compilations in {steps} "
                "steps; keep the shapes and Python arguments the compiled function sees the same")
    if cat == "python":
        return (f"{share:.0%} of each step is spent on the step thread outside TensorFlow, in the program's "
                "own Python or libraries it calls (NumPy, file reads), which no op table names; find what the "
                "program does there every step, and do it once, or in TensorFlow")
    if cat == "eager":
        return (f"{share:.0%} of each step dispatches ops one at a time ({_per_step(c.eager_ops, steps)} eager "
                "ops per step): trace the step into one tf.function")
    lead = ops.leader if ops.rows else "no op"
    text = (f"{share:.0%} of each step runs inside traced functions, and {lead} leads the op time with "
            f"{ops.share(lead, of='op time'):.0%} of it")
    if share >= ARITHMETIC_SHARE:
        return text + ": what remains is mostly the ops' own arithmetic"
    if runner_up:
        rest = sorted((k for k in CATEGORIES if k != cat), key=b.share, reverse=True)
        if leads(b, rest[0], rest[1]):
            return text + (f"; the next largest share is {rest[0]} ({b.share(rest[0]):.0%} of each step), "
                           "worth reading before the ops")
        return text + (f"; the rest of the step goes mostly to {rest[0]} and {rest[1]} ({b.share(rest[0]):.0%} and "
                       f"{b.share(rest[1]):.0%}), worth reading before the ops")
    return text


def hypothesis(trace: Trace) -> Hypothesis:
    """Read the bottleneck from ``trace``: the breakdown's largest category, with the counts behind it.

    Where the largest and the next largest category change order from step to step (neither ``leads``),
    the sentence reads both and says that this run cannot tell which is larger.
    """
    b, c, ops = step_breakdown(trace), counters(trace), op_stats(trace)
    cat = b.dominant
    second = max((k for k in CATEGORIES if k != cat), key=b.share)
    if b.share(second) > 0 and not leads(b, cat, second):
        text = (f"this run cannot tell whether {cat} or {second} takes more of each step (their order is not the "
                f"same in every step), so read both: {_reading(cat, b, c, ops, False)}; and "
                f"{_reading(second, b, c, ops, False)}")
        return Hypothesis(cat, b.share(cat), text, b, c, ops, contender=second)
    return Hypothesis(cat, b.share(cat), _reading(cat, b, c, ops, True), b, c, ops)


def fix_reading(before: Breakdown, after: Breakdown, removed: str) -> dict[str, float]:
    """What a fix's traces say about its speedup, next to the bound ``1/(1 - share)``.

    The bound assumes the fix removes the ``removed`` share of the step and leaves the rest of the
    step as it was. Reading the rest of the step (every category but ``removed``, milliseconds per
    step) in both traces tests that assumption: a rest that grew means the fix slowed the remaining
    work (the speedup falls short of the bound), a rest that shrank means the first trace filed part
    of the removed cost under another category (it beats the bound). Each step is a measurement, so a
    change is read only where every step agrees: a rest grew where every step after the fix took more
    than ``REST_TOLERANCE`` times every step before, and the other way round for shrank.

    Returns:
        ``bound``: ``1/(1 - share)`` of the first trace; ``traced``: the ratio of the two traces'
        median step times; ``rest_before_ms`` and ``rest_after_ms`` (medians over the steps); ``rest``:
        "grew", "shrank", "held" (every step of both traces within ``REST_TOLERANCE`` of each other) or
        "unclear" (the steps overlap, so this run cannot tell); ``removed_after``: the share of
        ``removed`` left after the fix.
    """
    if removed not in CATEGORIES:
        raise ValueError(f"unknown category {removed!r}; choose one of: {', '.join(CATEGORIES)}")

    def rests_ms(b: Breakdown) -> list[float]:
        return [row["ms"] * (1 - row[f"{removed} %"] / 100) for row in b.rows]

    before_steps, after_steps = rests_ms(before), rests_ms(after)
    rest_before, rest_after = float(np.median(before_steps)), float(np.median(after_steps))
    low, high = min(before_steps + after_steps), max(before_steps + after_steps)
    if min(after_steps) > REST_TOLERANCE * max(before_steps):
        change = "grew"
    elif max(after_steps) * REST_TOLERANCE < min(before_steps):
        change = "shrank"
    elif high <= REST_TOLERANCE * low:
        change = "held"
    else:
        change = "unclear"
    return {"bound": 1 / max(1 - before.share(removed), 1e-3), "traced": before.step_ms / after.step_ms,
            "rest_before_ms": rest_before, "rest_after_ms": rest_after, "rest": change,
            "removed_after": after.share(removed)}
