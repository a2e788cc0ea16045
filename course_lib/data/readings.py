"""Sentences that read lecture 04's measurements: the epoch's floor, the step with nothing beside it,
and whether the pipeline's CPU work lengthened the steps. Each reads its figure with its interval and
calls a difference only where the course's noise rule does (``bench.Comparison.call``)."""

from __future__ import annotations

from typing import Mapping

from course_lib import bench
from course_lib.data.pipelines import Work
from course_lib.data.recorder import Recorder

NEAR_FLOOR = 1.25  # "near the floor": an epoch within a quarter of its steps, where a faster pipeline wins little


def floor_reading(result: bench.Comparison, work: Work, batches: int) -> str:
    """What the widget's epochs say against their floor, the consumer's steps alone.

    The floor is ``batches`` steps of ``work`` as it was calibrated (read once, never timed again), so it is
    the same step the epochs ran. A variant is near the floor when its epoch's whole interval against the
    floor lies under ``NEAR_FLOOR``, and on the edge when the interval reaches across it; the fastest is
    named with the variants its ratio could not be told from.

    Args:
        result: the widget's comparison of pipeline variants (one epoch per call).
        work: the consumer's step the epochs ran.
        batches: the batches in one epoch, one step each.
    """
    if not isinstance(work, Work):
        raise TypeError(f"work must be the data.Work the epochs ran, got {type(work).__name__}")
    if not isinstance(batches, int) or batches < 1:
        raise ValueError(f"batches must be a whole number >= 1, got {batches!r}")
    floor_s = batches * work.step_s
    against = {v: bench.ratio_interval(result[v].times_s, [floor_s], result.confidence) for v in result.names}
    near = [v for v in result.names if against[v][1] < NEAR_FLOOR]
    edge = [v for v in result.names if against[v][0] <= NEAR_FLOOR <= against[v][1]]
    text = (f"The consumer's {batches} steps, {work.step_s * 1e3:.0f} ms each as calibrated, take "
            f"{floor_s * 1e3:.0f} ms: the floor of an epoch, give or take how much the steps themselves vary. ")
    if near:
        text += (f"Within a quarter of that floor: {_listed(near, against)}; there the steps fill most of the "
                 "epoch, and a faster pipeline can win back at most the rest. ")
    elif not edge:  # every interval lies wholly past the quarter
        text += ("No variant came within a quarter of that floor: each left the consumer waiting, or the "
                 "machine slowed the steps. ")
    if edge:
        text += (f"On the edge of a quarter of that floor, so a re-run may place it either side: "
                 f"{_listed(edge, against)}. ")
    fastest = max(result.names, key=result.speedup)
    ties = [v for v in result.names if v != fastest and not result.apart(v, fastest)]
    text += f"The fastest was {fastest}" + (
        f", which this run could not tell apart from {', '.join(ties)}." if ties else
        ", ahead of every other variant by more than the noise.")
    if "cache" in result.names:
        cache = result["cache"]
        text += (f" Cache: first epoch {cache.first_call_s * 1e3:.0f} ms (reading and decoding), later epochs "
                 f"{cache.median_s * 1e3:.0f} ms ({_times_floor(against['cache'])}).")
    return text


def steps_compared(runs: Mapping[str, Recorder], baseline: str = "naive") -> bench.Comparison:
    """The consumer's steps in two recorded runs as a comparison: ``baseline``, where no pipeline work ran
    during a step, against the run with the most pipeline work during its steps.

    Each step is one round (its first apart, as the first call, since it may warm what the others reuse).
    The two runs ran one after the other, not in turns, and no A/A pair was timed, so the comparison is
    judged on the least noise floor (``bench.MIN_FLOOR``).
    """
    if baseline not in runs:
        raise ValueError(f"no recorded run {baseline!r}; recorded: {', '.join(runs)}")
    others = [n for n in runs if n != baseline]
    if not others:
        raise ValueError("steps_compared needs a second recorded run to set against the baseline")
    busiest = max(others, key=lambda n: runs[n].overlap()["hidden_s"])
    timings = []
    for name in (baseline, busiest):
        steps = runs[name].durations("step")
        if len(steps) < 2:
            raise ValueError(f"the {name} run recorded {len(steps)} step(s); a comparison needs at least 2")
        timings.append(bench.Timing(name=name, first_call_s=steps[0], times_s=steps[1:], number=1))
    return bench.Comparison(timings=timings, baseline=baseline, title="the consumer's steps, recorded")


def steps_reading(steps: bench.Comparison) -> str:
    """Whether the pipeline's CPU work beside the steps lengthened them, from ``steps_compared``."""
    baseline = steps.baseline
    (busy,) = [n for n in steps.names if n != baseline]
    total = {n: (steps[n].first_call_s + sum(steps[n].times_s)) * 1e3 for n in (baseline, busy)}
    text = (f"In the recorded runs the steps took {total[baseline]:.0f} ms in all with {baseline}, where no "
            f"pipeline work ran during a step, and {total[busy]:.0f} ms with {busy}, where the most did; "
            f"step for step, {busy} against {baseline}: {steps.judged(busy)}")
    call = steps.call(busy)
    if call == "slower":
        return text + (": longer steps are what the pipeline's own CPU work (parsing records, entering Python "
                       "for each `py_function` call) does when it shares the cores with the step's matrix "
                       "products, but the two runs ran one after the other, not in turns, so this run cannot "
                       "tell that cost from a change in the machine's load between them.")
    if call == "faster":
        return text + (": the steps ran shorter beside the pipeline's work, which can only take CPU from them, "
                       "so the machine's load changed between the two runs; this run cannot say what the "
                       "pipeline's work costs a step.")
    return text + (": the pipeline's own CPU work beside the steps did not lengthen them by a difference this "
                   "run could call.")


def _times_floor(interval: tuple[float, float]) -> str:
    return f"{interval[0]:.2f}–{interval[1]:.2f}x the floor"


def _listed(names, against) -> str:
    return ", ".join(f"{v} ({_times_floor(against[v])})" for v in names)


def no_step_reading(no_step: bench.Comparison, variant: str = "prefetch") -> str:
    """What ``variant`` did against the baseline with a consumer that does no work (``step_ms=0``), where
    prefetch has no step to hide production behind."""
    over = no_step.baseline
    if not no_step.apart(variant, over):
        return (f"With no step, {variant} against {over}: {no_step.uncalled(variant, over)}, with no step to hide "
                "production behind.")
    if no_step.speedup(variant, over) < 1:
        return (f"With no step, {variant} cost time: handing each batch from its thread to the consumer is "
                "overhead with nothing to hide.")
    return (f"Even with no step, {variant} gained here: its thread produced the next batch while the loop "
            "handed over the last one.")
