"""Op statistics: where the ops' time went, per op type or per op, on the host and on each device.

Self time: an op's duration less the ops nested inside it on the same thread (a function-call op
waits for the ops of its body; counting both would count that time twice). Shares are of the
profiled steps' total time, so a row reads "Conv2DBackpropFilter: 31% of the steps".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from course_lib import kernels
from course_lib.profile import kinds
from course_lib.profile.trace import Trace


def self_times(trace: Trace) -> list[tuple[int, float]]:
    """(event index, self time in µs) for every op event of the trace."""
    is_op = [kinds.op_type(e) is not None for e in trace.events]
    own = {i: e.duration_us for i, e in enumerate(trace.events) if is_op[i]}
    for i, e in enumerate(trace.events):
        if not is_op[i]:
            continue
        p = e.parent
        while p >= 0 and not is_op[p]:
            p = trace.events[p].parent
        if p >= 0:
            own[p] -= e.duration_us
    return [(i, max(t, 0.0)) for i, t in own.items()]


@dataclass
class OpTable:
    """Rows of op statistics, largest self time first; shown as a table in a notebook."""

    rows: list[dict]
    by: str

    def libraries(self) -> set[str]:
        """The libraries whose kernels ran the table's ops (``"oneDNN"``, ``"XLA"``, ``"TensorFlow"``)."""
        return {lib for r in self.rows for lib in r["kernels by"].split(", ")}

    @property
    def leader(self) -> str:
        """The op type (or op) with the most self time."""
        if not self.rows:
            raise ValueError("no ops in this table: the profiled steps ran no TensorFlow op")
        return self.rows[0][self.by]

    def share(self, name: str, of: str = "steps") -> float:
        """The fraction of the steps' time (``of="steps"``) or of all op time (``of="op time"``) in ``name``."""
        if of not in ("steps", "op time"):
            raise ValueError(f"of must be 'steps' or 'op time', got {of!r}")
        return next((r[f"% of {of}"] / 100 for r in self.rows if r[self.by] == name), 0.0)

    def head(self, n: int = 10) -> OpTable:
        return OpTable(self.rows[:n], self.by)

    def _repr_html_(self) -> str:
        from course_lib.tables import table
        return table(self.rows)

    def __repr__(self) -> str:
        from course_lib.tables import text_table
        return text_table([self.by, "where", "kernels by", "calls", "self (ms)", "% of steps", "% of op time"],
                          [[r[self.by], r["where"], r["kernels by"], r["calls"], f"{r['self (ms)']:.3f}",
                            f"{r['% of steps']:.1f}", f"{r['% of op time']:.1f}"] for r in self.rows])


def op_stats(trace: Trace, by: str = "op type", where: str | None = None, top: int | None = None) -> OpTable:
    """Self time per op type (``by="op type"``) or per op (``by="op"``) inside the profiled steps.

    ``where``: ``"host"``, ``"device"`` or None for both. Rows: the name, where it ran, calls, self
    time in ms, its share of the steps' total time (ops that ran at once on several threads can
    together exceed 100%) and of all the ops' self time. Op types are ops, not kernel names
    (``kernels.op_of``); ``kernels by`` says which library ran them (oneDNN, XLA, TensorFlow's own).
    """
    if by not in ("op type", "op"):
        raise ValueError(f"by must be 'op type' or 'op', got {by!r}")
    if where not in (None, "host", "device"):
        raise ValueError(f"where must be 'host', 'device' or None, got {where!r}")
    steps = trace.require_steps()
    lo, hi = steps[0].start_us, steps[-1].end_us
    step_total = sum(s.duration_us for s in steps)
    total: dict = defaultdict(float)
    calls: dict = defaultdict(int)
    libraries: dict = defaultdict(set)
    for i, t in self_times(trace):
        e = trace.events[i]
        side = "device" if e.on_device else "host"
        if e.end_us <= lo or e.start_us >= hi or (where and side != where):
            continue
        key = (kinds.op_type(e) if by == "op type" else kinds.op_name(e), side)
        total[key] += t
        calls[key] += 1
        libraries[key].add(kernels.library_of(kinds.kernel(e) or ""))
    op_total = sum(total.values()) or 1.0
    rows = [{by: name, "where": side, "kernels by": ", ".join(sorted(libraries[(name, side)])),
             "calls": calls[(name, side)], "self (ms)": us / 1e3,
             "% of steps": 100 * us / step_total, "% of op time": 100 * us / op_total}
            for (name, side), us in sorted(total.items(), key=lambda kv: -kv[1])]
    return OpTable(rows[:top] if top else rows, by)
