"""Auto-clustering, in a process started with the flags.

``jit_compile=True`` compiles one ``tf.function`` as a whole. Auto-clustering
(``TF_XLA_FLAGS=--tf_xla_auto_jit=2``) lets TensorFlow carve compilable clusters out of every graph
instead; the flag is read when TensorFlow starts, so it is measured in a process started with it
(``run_with_flags`` for one call, ``jit_vs_auto`` for live processes timed in turns), and on a CPU it also
needs ``--tf_xla_cpu_global_jit`` (without it only GPU clusters are formed)."""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from course_lib import bench, processes
from course_lib.xla.counting import compilations_in, measure_and_count
from course_lib.xla.workloads import AUTO, GRAPH, JIT, workload_args, workload_function

AUTO_JIT_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"


def run_with_flags(target: str, flags: str = AUTO_JIT_FLAGS, *, timeout: float = 600, **kwargs) -> Any:
    """Run ``module:function(**kwargs)`` in a fresh Python whose TensorFlow starts with
    ``TF_XLA_FLAGS=flags`` (``processes.run``); return what it returned (anything JSON can carry)."""
    return processes.run(target, kwargs=kwargs, xla_flags=flags, timeout=timeout).result


START_UP_N = 16  # elements of the call that starts TensorFlow's (and XLA's) machinery in a fresh process


class CountedCall:
    """A zero-argument call whose first call is profiled for the XLA executables it compiles: what a live
    worker (``processes.Workers``) reports through ``info()``, beside anything else it was given."""

    def __init__(self, call: Callable[[], Any], **info: Any):
        self.call, self.compilations, self.extra = call, None, info

    def __call__(self) -> Any:
        if self.compilations is None:
            out, self.compilations = compilations_in(lambda: bench.force(self.call()))
            return out
        return self.call()

    def info(self) -> dict:
        return {"compilations": self.compilations, **self.extra}


def workload_worker(workload: str, n: int, jit_compile: bool = False) -> CountedCall:
    """Runs in a live worker process (``jit_vs_auto``): a tf.function of the workload on ``n`` elements,
    auto-clustered when the process started with the flags, or ``jit_compile``.

    The function is first called once on ``START_UP_N`` elements (``info()["start_up_s"]``): that first call
    of the process also pays the one-time start-up of what it uses (XLA's compiler among them), so the first
    call then timed at ``n`` holds only this shape's tracing and compiling, as in a process already running."""
    fn = tf.function(workload_function(workload), jit_compile=True if jit_compile else None)
    small = workload_args(workload, START_UP_N)
    start_up = bench.measure(lambda: fn(*small), name="start-up", repeats=1, warmup=0, number=1).first_call_s
    args = workload_args(workload, n)
    return CountedCall(lambda: fn(*args), start_up_s=start_up)


def auto_clustered_worker(workload: str, n: int, repeats: int = 5, jit_compile: bool = False) -> dict:
    """Runs in a fresh process (``run_with_flags``): ``workload_worker``'s call timed, with the XLA
    compilations its first call caused and the process's start-up call, as JSON."""
    call = workload_worker(workload, n, jit_compile)
    timing, compilations = measure_and_count(call.call, name=workload, repeats=repeats)
    return {"timing": timing.to_dict(), "compilations": compilations, **call.extra}


def jit_vs_auto(workload: str = "elementwise chain", n: int = 1_000_000, *, repeats: int = 5,
                flags: str = AUTO_JIT_FLAGS, auto: bool = True) -> bench.Comparison:
    """The plain graph, ``jit_compile=True`` and (unless ``auto`` is False) auto-clustering on one workload.

    Auto-clustering is set when TensorFlow starts, so it needs a process of its own; so that no ratio sets
    a child process against the notebook's warm one, every variant gets live processes of its own (two,
    asked in rotation: ``processes.Workers``, with two more plain-graph processes as the A/A twin), asked
    in turns for ``repeats`` rounds. ``params["compilations"]`` holds how many XLA executables each
    variant's first call compiled, ``params["start-up (s)"]`` its first process's first call
    (``workload_worker``)."""
    variants = {GRAPH: ({}, {}), JIT: ({}, {"jit_compile": True})}
    if auto:
        variants[AUTO] = ({"TF_XLA_FLAGS": flags}, {})
    with processes.Workers("course_lib.xla.auto_clustering:workload_worker", variants,
                           kwargs={"workload": workload, "n": n}) as workers:
        comparison = workers.compare(repeats=repeats, title=f"graph, jit_compile and auto-clustering: {workload}, "
                                                            f"n={n:,}, each in two live processes of its own, in turns",
                                     params={"workload": workload, "n": n,
                                             "TF_XLA_FLAGS": {name: env.get("TF_XLA_FLAGS", "")
                                                              for name, (env, _) in variants.items()}})
        info = {name: workers.info(name) for name in variants}
    comparison.params["compilations"] = {name: i["compilations"] for name, i in info.items()}
    comparison.params["start-up (s)"] = {name: i["start_up_s"] for name, i in info.items()}
    return comparison
