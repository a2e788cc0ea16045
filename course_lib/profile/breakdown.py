"""The step breakdown: where each step's time went on the thread that ran it.

In the manner of TensorBoard's input-pipeline analysis, but computed here from the trace's events.
Each instant of a step on its thread goes to the first category that covers it, in this order:
``input`` (waiting in tf.data's ``IteratorGetNext``, on any thread), ``compile`` (XLA compiling),
``tracing`` (a ``tf.function`` building its graph, and the runtime readying a traced graph before it
runs: optimising and instantiating a new one, looking up a known one), ``function`` (running a traced
function), ``eager`` (dispatching ops one by one) and ``python`` (the step thread in none of these:
the program's own Python, or libraries it calls outside TensorFlow such as NumPy). ``idle`` is
measured apart: the share of the step during which no op ran on any thread or device, whatever the
step thread was doing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course_lib.profile import kinds
from course_lib.profile.trace import Event, Step, Trace

CATEGORIES = ("input", "compile", "tracing", "function", "eager", "python")


def _category(e: Event, step: Step) -> str | None:
    if e.on_device:
        return None
    if kinds.is_input(e):
        return "input"
    if e.thread != step.thread:
        return None
    if kinds.is_compile(e):
        return "compile"
    if kinds.is_tracing(e):
        return "tracing"
    if kinds.is_function_call(e):
        return "function"
    if kinds.kind(e) == "eager":
        return "eager"
    return None


def _readying(trace: Trace, e: Event, step: Step) -> tuple[float, float] | None:
    """For the graph run (``EagerKernelExecute``) of a traced function's execution on the step thread, the
    span from the execution's start to the run's: the runtime readying the graph (``kinds.is_kernel_run``)."""
    if e.thread != step.thread or e.parent < 0 or not kinds.is_kernel_run(e):
        return None
    execution = trace.events[e.parent]
    return (execution.start_us, e.start_us) if kinds.is_function_execution(execution) else None


def _covered(intervals: list[tuple[float, float]], points: np.ndarray) -> np.ndarray:
    """Which of ``points`` fall inside any of ``intervals``."""
    mask = np.zeros(len(points), bool)
    for lo, hi in intervals:
        mask |= (points >= lo) & (points < hi)
    return mask


def split_step(trace: Trace, step: Step) -> dict[str, float]:
    """Microseconds of ``step`` per category, and ``idle``."""
    events = [e for e in trace.in_step(step) if "step_num" not in e.stats]
    spans: dict[str, list] = {c: [] for c in CATEGORIES[:-1]}
    busy = []
    for e in events:
        lo, hi = max(e.start_us, step.start_us), min(e.end_us, step.end_us)
        if hi <= lo:
            continue
        c = _category(e, step)
        if c is not None:
            spans[c].append((lo, hi))
        readying = _readying(trace, e, step)
        if readying is not None:
            spans["tracing"].append((max(readying[0], step.start_us), min(readying[1], step.end_us)))
        if kinds.op_type(e) is not None:
            busy.append((lo, hi))
    edges = np.unique([step.start_us, step.end_us] + [x for s in spans.values() for iv in s for x in iv]
                      + [x for iv in busy for x in iv])
    lengths, mids = np.diff(edges), (edges[:-1] + edges[1:]) / 2
    left = np.ones(len(mids), bool)
    out = {}
    for c in CATEGORIES[:-1]:
        mine = left & _covered(spans[c], mids)
        out[c] = float(lengths[mine].sum())
        left &= ~mine
    out["python"] = float(lengths[left].sum())
    out["idle"] = float(lengths[~_covered(busy, mids)].sum())
    return out


@dataclass
class Breakdown:
    """Per-step shares; ``share(category)`` over all the steps together."""

    steps: list[Step]
    parts: list[dict[str, float]]

    def share(self, category: str) -> float:
        """The fraction of all the steps' time in ``category`` (one of ``CATEGORIES`` or ``idle``)."""
        return sum(self._per_step_us(category)) / sum(s.duration_us for s in self.steps)

    def median_ms(self, category: str) -> float:
        """Milliseconds per step in ``category``, the median over the steps (one slow step does not move it)."""
        return float(np.median(self._per_step_us(category))) / 1e3

    def _per_step_us(self, category: str) -> list[float]:
        if category not in CATEGORIES + ("idle",):
            raise ValueError(f"unknown category {category!r}; choose one of: {', '.join(CATEGORIES)}, idle")
        return [p[category] for p in self.parts]

    @property
    def dominant(self) -> str:
        """The category that took the most of the steps' time."""
        return max(CATEGORIES, key=self.share)

    @property
    def step_ms(self) -> float:
        """The median step time in milliseconds."""
        return float(np.median([s.duration_us for s in self.steps])) / 1e3

    @property
    def rows(self) -> list[dict]:
        rows = []
        for s, p in zip(self.steps, self.parts):
            row = {"step": s.number, "ms": s.duration_us / 1e3}
            row.update({f"{c} %": 100 * p[c] / s.duration_us for c in CATEGORIES + ("idle",)})
            rows.append(row)
        return rows

    def _repr_html_(self) -> str:
        from course_lib.tables import table
        return table(self.rows)

    def __repr__(self) -> str:
        from course_lib.tables import text_table_of
        return text_table_of(self.rows, ".1f")


def step_breakdown(trace: Trace) -> Breakdown:
    """Split every marked step of ``trace`` into ``CATEGORIES`` and ``idle``."""
    steps = trace.require_steps()
    return Breakdown(steps, [split_step(trace, s) for s in steps])
