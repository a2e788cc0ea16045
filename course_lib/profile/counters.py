"""Counts read from a trace: traces of ``tf.function``s, XLA compilations, copies to a device, py_functions, eager ops.

Each ``tf.function`` call leaves an event named after the function whose ``tf_function_call``
statistic says whether that call traced (``traced-...``) or reused a graph (``notTraced-...``). XLA
leaves one ``...Compiler::RunBackend`` event per executable it builds. Copies to a GPU are the device's
``MemcpyH2D`` events (none on a machine without one). ``py_function`` and ``numpy_function`` run as
``EagerPyFunc`` / ``PyFunc`` ops.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from course_lib.profile import kinds
from course_lib.profile.trace import Trace

_H2D = re.compile(r"memcpy\s*h(ost)?\s*to?\s*d", re.IGNORECASE)


@dataclass
class Counters:
    """What the profiled steps did that a timing alone does not show."""

    steps: int
    traces: Counter = field(default_factory=Counter)  # function name -> traces inside the profiled steps
    calls: Counter = field(default_factory=Counter)  # function name -> calls inside the profiled steps
    xla_compilations: int = 0
    host_to_device_copies: int = 0
    py_function_calls: int = 0
    eager_ops: int = 0  # ops dispatched one by one, outside any traced function

    @property
    def retraces(self) -> int:
        """Traces during the profiled steps: the warm-up ran first, so each one traced again."""
        return sum(self.traces.values())

    @property
    def rows(self) -> list[dict]:
        return [{"counter": "steps", "value": self.steps},
                {"counter": "tf.function calls", "value": sum(self.calls.values())},
                {"counter": "retraces", "value": self.retraces},
                {"counter": "XLA compilations", "value": self.xla_compilations},
                {"counter": "host-to-device copies", "value": self.host_to_device_copies},
                {"counter": "py_function calls", "value": self.py_function_calls},
                {"counter": "eager ops", "value": self.eager_ops}]

    def _repr_html_(self) -> str:
        from course_lib.tables import table
        return table(self.rows)

    def __repr__(self) -> str:
        return "\n".join(f"{r['counter']:>22}: {r['value']}" for r in self.rows)


def counters(trace: Trace) -> Counters:
    """Count, inside the profiled steps, retraces, XLA compilations, host-to-device copies and py_functions."""
    steps = trace.require_steps()
    lo, hi = steps[0].start_us, steps[-1].end_us
    out = Counters(len(steps))
    for e in trace.events:
        if e.start_us < lo or e.start_us >= hi:
            continue
        call = e.stats.get("tf_function_call")
        if call is not None:
            out.calls[e.name] += 1
            if str(call).startswith("traced"):
                out.traces[e.name] += 1
        if kinds.is_compile(e):
            out.xla_compilations += 1
        if e.on_device and _H2D.search(e.name):
            out.host_to_device_copies += 1
        if kinds.op_type(e) in kinds.PY_FUNCTION_TYPES:
            out.py_function_calls += 1
        if kinds.is_eager_dispatch(e) and e.thread == steps[0].thread:
            out.eager_ops += 1
    return out
