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

    def __str__(self) -> str:
        return self.sentence

    def _repr_markdown_(self) -> str:
        return f"**Hypothesis:** {self.sentence}"

    __repr__ = __str__


def _per_step(n: int, steps: int) -> str:
    per = n / steps
    return f"{per:.0f}" if per == int(per) else f"{per:.1f}"


def hypothesis(trace: Trace) -> Hypothesis:
    """Read the bottleneck from ``trace``: the breakdown's largest category, with the counts behind it."""
    b, c, ops = step_breakdown(trace), counters(trace), op_stats(trace)
    cat = b.dominant
    share, steps = b.share(cat), c.steps
    if cat == "input":
        text = (f"{share:.0%} of each step waits for input: the step thread sits in tf.data's IteratorGetNext "
                "while the pipeline produces the next batch; make the pipeline keep up (read in parallel, "
                "parse whole batches, prefetch)")
    elif cat == "tracing":
        names = ", ".join(sorted(c.traces)) or "a function"
        text = (f"{share:.0%} of each step makes graphs (tracing the Python function, then optimising and "
                f"instantiating the new graph): {c.retraces} retraces of {names} in {steps} steps; give the "
                "function arguments that keep its signature (tensors, not new Python values)")
    elif cat == "compile":
        text = (f"{share:.0%} of each step compiles with XLA: {c.xla_compilations} compilations in {steps} "
                "steps; keep the shapes and Python arguments the compiled function sees the same")
    elif cat == "python":
        text = (f"{share:.0%} of each step is spent on the step thread outside TensorFlow, in the program's "
                "own Python or libraries it calls (NumPy, file reads), which no op table names; find what the "
                "program does there every step, and do it once, or in TensorFlow")
    elif cat == "eager":
        text = (f"{share:.0%} of each step dispatches ops one at a time ({_per_step(c.eager_ops, steps)} eager "
                "ops per step): trace the step into one tf.function")
    else:
        lead = ops.leader if ops.rows else "no op"
        text = (f"{share:.0%} of each step runs inside traced functions, and {lead} leads the op time with "
                f"{ops.share(lead, of='op time'):.0%} of it")
        if share >= ARITHMETIC_SHARE:
            text += ": what remains is mostly the ops' own arithmetic"
        else:
            runner_up = max((k for k in CATEGORIES if k != cat), key=b.share)
            text += (f"; the next largest share is {runner_up} ({b.share(runner_up):.0%} of each step), "
                     "worth reading before the ops")
    return Hypothesis(cat, share, text, b, c, ops)


def fix_reading(before: Breakdown, after: Breakdown, removed: str) -> dict[str, float]:
    """What a fix's traces say about its speedup, next to the bound ``1/(1 - share)``.

    The bound assumes the fix removes the ``removed`` share of the step and leaves the rest of the
    step as it was. Reading the rest of the step (every category but ``removed``, milliseconds per
    step, the median over the steps) in both traces tests that assumption: a rest that grew means
    the fix slowed the remaining work (the speedup falls short of the bound), a rest that shrank
    means the first trace filed part of the removed cost under another category (it beats the bound).

    Returns:
        ``bound``: ``1/(1 - share)`` of the first trace; ``traced``: the ratio of the two traces'
        median step times; ``rest_before_ms`` and ``rest_after_ms``; ``rest``: "grew", "shrank" or
        "held" (within ``REST_TOLERANCE``); ``removed_after``: the share of ``removed`` left after the fix.
    """
    if removed not in CATEGORIES:
        raise ValueError(f"unknown category {removed!r}; choose one of: {', '.join(CATEGORIES)}")

    def rest_ms(b: Breakdown) -> float:
        return float(np.median([row["ms"] * (1 - row[f"{removed} %"] / 100) for row in b.rows]))

    rest_before, rest_after = rest_ms(before), rest_ms(after)
    change = "grew" if rest_after > REST_TOLERANCE * rest_before else \
        "shrank" if rest_after < rest_before / REST_TOLERANCE else "held"
    return {"bound": 1 / max(1 - before.share(removed), 1e-3), "traced": before.step_ms / after.step_ms,
            "rest_before_ms": rest_before, "rest_after_ms": rest_after, "rest": change,
            "removed_after": after.share(removed)}
