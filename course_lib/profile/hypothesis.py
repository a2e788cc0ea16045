"""The hypothesis a trace supports: the category that took most of the steps, said as a sentence.

Every number in the sentence is read from the trace (the step breakdown, the counters, the op
table), so a re-run renders its own; the fixed words name the mechanism and what usually fixes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from course_lib.bench import interval_text, ratio_text
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


def fix_reading(before: Breakdown, after: Breakdown, removed: str) -> dict[str, Any]:
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
        ``removed`` left after the fix; ``bound_range`` and ``traced_range``: the least and greatest each
        ratio takes over single steps (a step's own bound; any step before over any step after), the
        spread a re-run's few steps may land anywhere in; ``removed``; ``steps_before`` and
        ``steps_after``: how many steps each trace profiled; ``step_before_ms`` and ``step_after_ms``: their
        median step times.
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
    steps_before, steps_after = [row["ms"] for row in before.rows], [row["ms"] for row in after.rows]
    bounds = [1 / max(1 - row[f"{removed} %"] / 100, 1e-3) for row in before.rows]
    return {"bound": 1 / max(1 - before.share(removed), 1e-3), "traced": before.step_ms / after.step_ms,
            "bound_range": (min(bounds), max(bounds)),
            "traced_range": (min(steps_before) / max(steps_after), max(steps_before) / min(steps_after)),
            "rest_before_ms": rest_before, "rest_after_ms": rest_after, "rest": change,
            "removed_after": after.share(removed), "removed": removed, "steps_before": len(before.steps),
            "steps_after": len(after.steps), "step_before_ms": before.step_ms, "step_after_ms": after.step_ms}


LEFT_SHARE = 0.005  # a share of the removed category at or under this, after the fix, is read as none left


def _times_as(longer: float, shorter: float, words: str) -> str:
    """", 2x as long" for ``longer`` against ``shorter``; "" where ``shorter`` is 0 and no factor exists."""
    return f", {ratio_text(longer / shorter)} {words}" if shorter > 0 else ""


def _rest_words(r: Mapping[str, Any]) -> str:
    """How the rest of the step compares between the traces, in the words ``fix_reading``'s ``rest`` allows."""
    before, after, rest = r["rest_before_ms"], r["rest_after_ms"], r["rest"]
    if rest == "grew":
        return (f"{_times_as(after, before, 'as long')}: longer in every traced step than in any step of the first "
                "trace, so the bound's assumption failed")
    if rest == "shrank":
        return (f"{_times_as(before, after, 'shorter')}: shorter in every traced step than in any step of the first "
                "trace, so the bound's assumption failed")
    if rest == "held":
        return (f", about what it took before (every step of both traces within {REST_TOLERANCE - 1:.0%} of each "
                "other): the bound's assumption held")
    median = "less" if after < before else "more" if after > before else "the same"
    return (f", {median} by the medians, but single steps of the two traces overlap, so step by step these few "
            "steps cannot tell whether the rest changed")


STATISTICS = ("the bound comes from the steps' total time and the traced ratio from their medians, and over so "
              "few steps the two part")


def _range_text(low: float, high: float) -> str:
    return f"{ratio_text(low).removesuffix('x')}–{ratio_text(high)}"


def _traced_words(r: Mapping[str, Any]) -> str:
    """What the traced ratio's place beside the bound shows about the traced steps: read only where every single
    step puts it on one side of every step's bound, since a re-run's few steps may land anywhere in those ranges."""
    (traced_low, traced_high), (bound_low, bound_high) = r["traced_range"], r["bound_range"]
    before, after = r["rest_before_ms"], r["rest_after_ms"]
    if traced_low > bound_high:
        if after < before and r["rest"] != "held":
            words = (f"above the bound, which means the rest of the step also shrank in the traced steps (its median "
                     f"from {before:.1f} to {after:.1f} ms)")
            if r["rest"] == "unclear":
                words += ", a shrink of the medians that single overlapping steps leave unsettled"
            return words
        return (f"above the bound although the rest of the step did not shrink beyond its steps' spread ({before:.1f} "
                f"to {after:.1f} ms): {STATISTICS}")
    if traced_high < bound_low:
        causes = []
        if r["removed_after"] > LEFT_SHARE:
            causes.append(f"the fixed steps still spent {r['removed_after']:.0%} of their time in `{r['removed']}`")
        if after > before and r["rest"] != "held":
            causes.append(f"their rest took {after:.1f} ms against {before:.1f} ms"
                          + (" by the medians" if r["rest"] == "unclear" else ""))
        if causes:
            return "below the bound: " + " and ".join(causes)
        return (f"below the bound although the fix left no `{r['removed']}` to speak of and the rest of the step did "
                f"not grow beyond its steps' spread: {STATISTICS}")
    return (f"single steps give it {_range_text(traced_low, traced_high)} and the bound "
            f"{_range_text(bound_low, bound_high)}, so these few steps cannot tell it from the bound")


def _timed_words(r: Mapping[str, Any], interval: tuple[float, float] | None) -> str:
    """Where the timed ratio's interval lies against what single steps give the traced ratio and the bound."""
    if interval is None:
        return "With too few rounds for an interval, this run cannot place the timed ratio against the other two."
    lo, hi = interval
    (traced_low, traced_high), (bound_low, bound_high) = r["traced_range"], r["bound_range"]
    if hi < traced_low:
        against_trace = ("Its interval lies below every traced step's ratio: the trace's few steps are not the timed "
                         "calls, and the timed calls gained less")
    elif lo > traced_high:
        against_trace = ("Its interval lies above every traced step's ratio: the trace's few steps are not the timed "
                         "calls, and the timed calls gained more")
    else:
        against_trace = "Its interval meets the traced steps' range, so this run cannot tell the two apart"
    if hi < bound_low:
        return f"{against_trace}; it lies below every step's bound."
    if lo > bound_high:
        return f"{against_trace}; it lies above every step's bound."
    return f"{against_trace}; it meets the bound's range."


def fix_ratios(reading: Mapping[str, Any], timed: float, interval: tuple[float, float] | None = None,
               why: Mapping[str, str] | None = None) -> str:
    """A fix's three ratios, side by side in two paragraphs: what each measures, and what their order shows.

    The bound (``1/(1 - share)`` of the first trace) assumes the rest of the step unchanged; the traced
    ratio compares the median steps of the few steps each trace profiled after its warm-up; the timed
    ratio (``timed``, with its ``interval``, None where too few rounds gave none) compares medians over
    many timed calls. Each clause is chosen by the values of ``reading`` (``fix_reading``'s dict), a place
    beside the bound or the trace only where every single step agrees (``bound_range``, ``traced_range``):
    a traced ratio above the bound means the rest of the step shrank in the traced steps, a timed interval
    clear of the traced steps means the trace's steps are not the timed calls. ``why`` maps a ``rest`` reading
    ("grew", "shrank", "held", "unclear") to sentences on its mechanism, added where that reading holds.
    """
    r, removed = reading, reading["removed"]
    extra = (why or {}).get(r["rest"], "")
    if r["steps_before"] == r["steps_after"]:
        steps = f"the {r['steps_before']} steps each trace profiled after its warm-up"
    else:
        steps = f"the {r['steps_before']} and {r['steps_after']} steps the two traces profiled after their warm-up"
    timed_text = f"{ratio_text(timed)} {interval_text(*interval)}" if interval is not None else ratio_text(timed)
    return (f"Removing the `{removed}` share alone would give {ratio_text(r['bound'])}: a bound that assumes the "
            f"rest of the step (all but `{removed}`) keeps the {r['rest_before_ms']:.1f} ms it took in the first "
            f"trace. In the fixed trace the rest took {r['rest_after_ms']:.1f} ms{_rest_words(r)}."
            + (f" {extra}" if extra else "")
            + f"\n\nThe traced ratio, {ratio_text(r['traced'])}, compares the median step of {steps} "
            f"({r['step_before_ms']:.1f} ms against {r['step_after_ms']:.1f} ms): {_traced_words(r)}. "
            f"The timed ratio, {timed_text}, compares the two programs' medians over many timed calls. "
            f"{_timed_words(r, interval)}")
