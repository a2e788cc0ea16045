"""What a call did, counted from the TensorFlow profiler (``course_lib.profile``) and from Linux's
per-thread counters: the XLA compilations it caused (how recompilation on new shapes is seen), the kernels a
plain graph runs, and how many threads did the work."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import tensorflow as tf

from course_lib import bench, graphs
from course_lib.arguments import whole
from course_lib.profile import capture, counters, op_stats


def compilations_in(block: Callable[[], Any]) -> tuple[Any, int]:
    """Run ``block()`` once under the profiler; (what it returned, the XLA executables compiled meanwhile)."""
    returned = []
    trace = capture(lambda: returned.append(block()), steps=1, warmup=0)
    return returned[0], counters(trace).xla_compilations


def count_compilations(fn: Callable, calls: Iterable[Sequence]) -> int:
    """Call ``fn(*args)`` for each ``args`` in ``calls`` and count the XLA compilations they caused
    (the count replaces TensorFlow's retracing warning, which is kept out)."""
    def call_each():
        for args in calls:
            bench.force(fn(*args))

    with graphs.captured_tf_warnings():
        return compilations_in(call_each)[1]


def graph_kernels(fn: Callable, *args) -> Counter:
    """The kernels one call of ``tf.function(fn)(*args)`` runs, by op type: what is left of the traced graph
    after TensorFlow's graph optimiser (Grappler) rewrote it, read from the profiler."""
    graph = tf.function(getattr(fn, "python_function", fn))
    bench.force(graph(*args))  # traced and optimised before the profiled call
    trace = capture(lambda: graph(*args), steps=1, warmup=0)
    return Counter({row["op type"]: row["calls"] for row in op_stats(trace, where="host").rows})


def busy_threads(fn: Callable[[], Any], *, calls: int = 10, share: float = 0.2) -> int | None:
    """How many threads of this process did at least ``share`` of the CPU time spent in ``calls`` calls of
    ``fn`` (read from Linux's per-thread counters, so other processes on the machine do not count); None
    where the system does not report them."""
    def cpu_ticks() -> dict[str, int]:
        ticks = {}
        for task in Path("/proc/self/task").glob("*"):
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # the thread ended
                continue
            ticks[task.name] = int(fields[11]) + int(fields[12])  # user and system time
        return ticks

    if not Path("/proc/self/task").is_dir():
        return None
    whole("calls", calls, 1)
    bench.force(fn())
    before = cpu_ticks()
    for _ in range(calls):
        bench.force(fn())
    used = [t - before.get(name, 0) for name, t in cpu_ticks().items()]
    total = sum(used)
    return sum(1 for t in used if t >= share * total) if total else None


def measure_and_count(fn: Callable[[], Any], *, name: str, repeats: int = 5,
                      warmup: int = 1) -> tuple[bench.Timing, int]:
    """``bench.measure`` of ``fn``, and the XLA compilations its first call caused (profiled apart,
    so the profiler does not slow the steady state)."""
    first, compilations = compilations_in(lambda: bench.measure(fn, name=name, repeats=1, warmup=0, number=1))
    timing = bench.measure(fn, name=name, repeats=repeats, warmup=warmup)
    timing.first_call_s = first.first_call_s
    return timing, compilations
