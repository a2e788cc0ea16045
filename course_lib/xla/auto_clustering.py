"""Auto-clustering, in a process started with the flags.

``jit_compile=True`` compiles one ``tf.function`` as a whole. Auto-clustering
(``TF_XLA_FLAGS=--tf_xla_auto_jit=2``) lets TensorFlow carve compilable clusters out of every graph
instead; the flag is read when TensorFlow starts, so it is measured in a process started with it
(``run_with_flags`` for one call, ``jit_vs_auto`` for live processes timed in turns: ``variant_processes``
says how each variant's processes start, ``BUILDERS`` what each builds), and on a CPU it also
needs ``--tf_xla_cpu_global_jit`` (without it only GPU clusters are formed)."""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from course_lib import bench, processes
from course_lib.arguments import whole
from course_lib.xla.counting import compilations_in, measure_and_count
from course_lib.xla.workloads import AUTO, GRAPH, JIT, jit_compiled, plain_graph, workload_args, workload_function

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


def auto_clustered(fn: Callable) -> Callable:
    """Auto-clustering: the function unchanged, in a process whose environment held ``TF_XLA_FLAGS`` when
    TensorFlow started (``variant_processes``); TensorFlow then compiles the clusters it finds in every
    graph. In a process started without the flags this is the plain graph."""
    return tf.function(fn)


BUILDERS: dict[str, Callable[[Callable], Callable]] = {GRAPH: plain_graph, JIT: jit_compiled, AUTO: auto_clustered}


def variant_processes(flags: str = AUTO_JIT_FLAGS, auto: bool = True) -> dict[str, tuple[dict, dict]]:
    """Each variant's live processes (``processes.Workers``): the environment they start with, and the
    builder of ``BUILDERS`` their worker applies to the workload."""
    variants = {GRAPH: ({}, {"variant": GRAPH}), JIT: ({}, {"variant": JIT})}
    if auto:
        variants[AUTO] = ({"TF_XLA_FLAGS": flags}, {"variant": AUTO})
    return variants


def workload_worker(workload: str, n: int, variant: str = GRAPH) -> CountedCall:
    """Runs in a live worker process (``jit_vs_auto``): the workload on ``n`` elements, built by
    ``BUILDERS[variant]``.

    The function is first called once on ``START_UP_N`` elements (``info()["start_up_s"]``): that first call
    of the process also pays the one-time start-up of what it uses (XLA's compiler among them), so the first
    call then timed at ``n`` holds only this shape's tracing and compiling, as in a process already running."""
    if variant not in BUILDERS:
        raise ValueError(f"unknown variant {variant!r}; choose one of: {', '.join(BUILDERS)}")
    fn = BUILDERS[variant](workload_function(workload))
    small = workload_args(workload, START_UP_N)
    start_up = bench.measure(lambda: fn(*small), name="start-up", repeats=1, warmup=0, number=1).first_call_s
    args = workload_args(workload, n)
    return CountedCall(lambda: fn(*args), start_up_s=start_up)


def auto_clustered_worker(workload: str, n: int, repeats: int = 5, jit_compile: bool = False) -> dict:
    """Runs in a fresh process (``run_with_flags``): ``workload_worker``'s call, auto-clustered (or
    ``jit_compile``), timed, with the XLA compilations its first call caused and the process's start-up
    call, as JSON."""
    call = workload_worker(workload, n, JIT if jit_compile else AUTO)
    timing, compilations = measure_and_count(call.call, name=workload, repeats=repeats)
    return {"timing": timing.to_dict(), "compilations": compilations, **call.extra}


def jit_vs_auto(workload: str = "elementwise chain", n: int = 1_000_000, *, repeats: int = 5, calls: int = 10,
                flags: str = AUTO_JIT_FLAGS, auto: bool = True) -> bench.Comparison:
    """The plain graph, ``jit_compile=True`` and (unless ``auto`` is False) auto-clustering on one workload.

    Auto-clustering is set when TensorFlow starts, so it needs a process of its own; so that no ratio sets
    a child process against the notebook's warm one, every variant gets live processes of its own (two,
    asked in rotation: ``processes.Workers``, with two more plain-graph processes as the A/A twin), asked
    in turns for ``repeats`` rounds. Each turn times ``calls`` calls back to back, as ``bench.compare`` does
    in one process; the same processes then time one call a turn, a call made after its process waited for
    all the others, and ``params["one call a turn"]`` holds those medians (seconds) and the verdict of
    ``jit_compile`` against the graph on them. ``params["compilations"]`` holds how many XLA executables
    each variant's first call compiled, ``params["start-up (s)"]`` its first process's first call
    (``workload_worker``)."""
    whole("calls", calls, 1)
    variants = variant_processes(flags, auto)
    with processes.Workers("course_lib.xla.auto_clustering:workload_worker", variants,
                           kwargs={"workload": workload, "n": n}) as workers:
        comparison = workers.compare(repeats=repeats, number=calls,
                                     title=f"graph, jit_compile and auto-clustering: {workload}, n={n:,}, each in two "
                                           f"live processes of its own, in turns, {calls} calls a turn",
                                     params={"workload": workload, "n": n, "calls a turn": calls,
                                             "TF_XLA_FLAGS": {name: env.get("TF_XLA_FLAGS", "")
                                                              for name, (env, _) in variants.items()}})
        one = workers.compare(repeats=repeats, number=1)
        info = {name: workers.info(name) for name in variants}
    comparison.params["one call a turn"] = {"median (s)": {name: one[name].median_s for name in variants},
                                            "jit_compile": one.judged(JIT)}
    comparison.params["compilations"] = {name: i["compilations"] for name, i in info.items()}
    comparison.params["start-up (s)"] = {name: i["start_up_s"] for name, i in info.items()}
    return comparison


def turn_text(comparison: bench.Comparison) -> str:
    """What ``jit_vs_auto``'s two timings of the same processes show: its table's ``calls`` calls a turn, back to
    back as ``bench.compare`` times them in one process, against one call a turn, each made after its process
    waited for all the others. Each variant's two per-call medians are called apart only where they differ by
    more than that variant's noise floor."""
    calls, one = comparison.params.get("calls a turn"), comparison.params.get("one call a turn")
    if not isinstance(calls, int) or not isinstance(one, dict):
        raise ValueError("the comparison holds no 'calls a turn' and 'one call a turn'; build it with jit_vs_auto")
    cold = {name: one["median (s)"][name] / comparison[name].median_s for name in comparison.names}
    text = (f"The table times {calls} calls a turn, back to back, as the comparisons inside this notebook's process "
            "do. The same processes then timed one call a turn, each made after its process had waited for all "
            "the others: " + "; ".join(f"{name} {one['median (s)'][name] * 1e3:#.3g} ms a call against "
                                        f"{comparison[name].median_s * 1e3:#.3g} ms" for name in comparison.names)
            + f". Timed so, `jit_compile` against the graph reads {one['jit_compile']}, against "
              f"{comparison.judged(JIT)} in the table. ")
    if all(ratio > comparison.floor(name) for name, ratio in cold.items()):
        return text + ("Every variant's call was slower after a wait than back to back, by more than its noise "
                       "floor: a call after a wait finds the process's threads parked and its data pushed out of "
                       "the cache by the other processes, so one call a turn times a cold call, and calls back to "
                       "back, like every comparison run inside one process, a warm one.")
    return text + ("Here not every variant's call after a wait was slower than back to back by more than its noise "
                   "floor, so this run does not show that waiting costs a call anything.")
