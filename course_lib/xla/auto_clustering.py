"""Auto-clustering, in a process started with the flags.

``jit_compile=True`` compiles one ``tf.function`` as a whole. Auto-clustering
(``TF_XLA_FLAGS=--tf_xla_auto_jit=2``) lets TensorFlow carve compilable clusters out of every graph
instead; the flag is read when TensorFlow starts, so it is measured in a fresh process
(``run_with_flags``, through ``course_lib.processes``), and on a CPU it also needs
``--tf_xla_cpu_global_jit`` (without it only GPU clusters are formed). Variants compared with it run in
fresh processes too (``process_comparison``)."""

from __future__ import annotations

import statistics
from typing import Any, Mapping

import tensorflow as tf

from course_lib import bench, processes
from course_lib.arguments import whole
from course_lib.xla.counting import measure_and_count
from course_lib.xla.workloads import AUTO, GRAPH, JIT, workload_args, workload_function

AUTO_JIT_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"


def run_with_flags(target: str, flags: str = AUTO_JIT_FLAGS, *, timeout: float = 600, **kwargs) -> Any:
    """Run ``module:function(**kwargs)`` in a fresh Python whose TensorFlow starts with
    ``TF_XLA_FLAGS=flags`` (``processes.run``); return what it returned (anything JSON can carry)."""
    return processes.run(target, kwargs=kwargs, xla_flags=flags, timeout=timeout).result


def timing_from_dict(d: Mapping) -> bench.Timing:
    """A ``bench.Timing`` back from ``Timing.to_dict()`` (how a subprocess reports one)."""
    return bench.Timing(name=d["name"], first_call_s=d["first_call_s"], times_s=list(d["times_s"]),
                        number=d["number"])


def process_comparison(target: str, variants: Mapping[str, tuple[str, Mapping]], *, rounds: int = 1,
                       title: str = "", timeout: float = 600, **kwargs) -> bench.Comparison:
    """Compare variants that each run in a fresh process: ``name -> (TF_XLA_FLAGS, extra kwargs)``.

    When one variant needs its own process (auto-clustering is set when TensorFlow starts), the variants it
    is compared with run in fresh processes too, so no ratio sets a child process against the notebook's
    warm one. ``target`` is a ``module:function`` returning ``{"timing": Timing.to_dict(), "compilations":
    int}`` and optionally ``"start_up_s"`` (the process's first call, before the timed one; its median over the
    rounds goes to ``params["start-up (s)"]``); ``rounds`` run every variant once in turn (A, B, A, B, ...),
    so a machine that slows down hits all variants alike, and each variant's timed repeats are pooled. The
    baseline is the first variant.
    """
    if not variants:
        raise ValueError("process_comparison needs at least one variant: {name: (flags, kwargs)}")
    whole("rounds", rounds, 1)
    times: dict[str, list[float]] = {name: [] for name in variants}
    firsts: dict[str, list[float]] = {name: [] for name in variants}
    compilations: dict[str, list[int]] = {name: [] for name in variants}
    start_ups: dict[str, list[float]] = {name: [] for name in variants}
    number: dict[str, int] = {}
    for _ in range(rounds):
        for name, (flags, extra) in variants.items():
            result = run_with_flags(target, flags, timeout=timeout, **kwargs, **dict(extra))
            timing = timing_from_dict(result["timing"])
            times[name] += timing.times_s
            firsts[name].append(timing.first_call_s)
            compilations[name].append(result["compilations"])
            if "start_up_s" in result:
                start_ups[name].append(result["start_up_s"])
            number.setdefault(name, timing.number)
    timings = [bench.Timing(name, statistics.median(firsts[name]), times[name], number[name]) for name in variants]
    params = {**kwargs, "rounds": rounds, "TF_XLA_FLAGS": {n: f for n, (f, _) in variants.items()},
              "compilations": {n: max(c) for n, c in compilations.items()}}
    if all(start_ups.values()):
        params["start-up (s)"] = {n: statistics.median(s) for n, s in start_ups.items()}
    return bench.Comparison(timings, baseline=next(iter(variants)), machine=bench.machine(), title=title,
                            params=params)


START_UP_N = 16  # elements of the call that starts TensorFlow's (and XLA's) machinery in a fresh process


def auto_clustered_worker(workload: str, n: int, repeats: int = 5, jit_compile: bool = False) -> dict:
    """Runs in a fresh process: a tf.function of the workload (auto-clustered when the process started with
    the flags, or ``jit_compile``), its timing and the XLA compilations it caused at ``n`` elements.

    The function is first called once on ``START_UP_N`` elements (``start_up_s``): that first call of the
    process also pays the one-time start-up of what it uses (XLA's compiler among them), so the first call
    then timed at ``n`` holds only this shape's tracing and compiling, as in a process already running."""
    fn = tf.function(workload_function(workload), jit_compile=True if jit_compile else None)
    small = workload_args(workload, START_UP_N)
    start_up = bench.measure(lambda: fn(*small), name="start-up", repeats=1, warmup=0, number=1).first_call_s
    args = workload_args(workload, n)
    timing, compilations = measure_and_count(lambda: fn(*args), name=workload, repeats=repeats)
    return {"timing": timing.to_dict(), "compilations": compilations, "start_up_s": start_up}


def jit_vs_auto(workload: str = "elementwise chain", n: int = 1_000_000, *, repeats: int = 5,
                flags: str = AUTO_JIT_FLAGS, auto: bool = True, rounds: int = 1) -> bench.Comparison:
    """The plain graph, ``jit_compile=True`` and (unless ``auto`` is False) auto-clustering on one workload,
    each in fresh processes, ``rounds`` times in turn (``process_comparison``); ``params["compilations"]``
    holds how many XLA executables each variant compiled, ``params["start-up (s)"]`` each process's first call
    (``auto_clustered_worker``)."""
    variants = {GRAPH: ("", {}), JIT: ("", {"jit_compile": True})}
    if auto:
        variants[AUTO] = (flags, {})
    return process_comparison("course_lib.xla.auto_clustering:auto_clustered_worker", variants, rounds=rounds,
                              title=f"graph, jit_compile and auto-clustering: {workload}, n={n:,}, "
                                    f"fresh processes", workload=workload, n=n, repeats=repeats)
