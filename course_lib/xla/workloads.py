"""Where XLA wins and loses on a CPU: the workloads (a fusable elementwise chain, random numbers and
their two halves), their graph and XLA variants, and the readings of their comparisons (the cache a vector
fits in, the rates at which each variant moved data, the calls it takes to pay back a compilation)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import tensorflow as tf

from course_lib import bench, graphs
from course_lib.arguments import whole
from course_lib.xla.counting import busy_threads

GRAPH, JIT, AUTO = "graph (tf.function)", "XLA (jit_compile=True)", "XLA auto-clustering"


def elementwise_chain(x):
    """Cheap elementwise ops, thirty as written: as separate kernels each reads and writes the whole
    tensor; fused, XLA makes one pass over memory."""
    y = x
    for _ in range(6):
        y = tf.maximum(y * 0.9 + 0.1 * x * x, -1.0)
    return y


def random_numbers(x, seed):
    """Mostly random-number generation (counter-based Philox, then a transform to a normal distribution).
    ``seed`` is a tensor argument: with a constant seed and a static shape the graph's constant folding
    could draw the numbers once, when the graph is optimised, and every call would only add them."""
    return tf.random.stateless_normal(tf.shape(x), seed=seed) * 0.1 + x


def random_bits(x, seed):
    """The first half of ``random_numbers`` alone: the generator's raw 32-bit words, one per entry of ``x``."""
    return tf.random.stateless_uniform(tf.shape(x), seed=seed, minval=None, maxval=None, dtype=tf.uint32)


def box_muller(u1, u2):
    """The second half alone: normal numbers from two vectors of uniform numbers in (0, 1], two per pair
    (a logarithm, a square root, a sine and a cosine), the transform XLA's optimised HLO of ``random_numbers``
    applies to the bits."""
    radius = tf.sqrt(-2.0 * tf.math.log(u1))
    angle = 2.0 * np.pi * u2
    return tf.concat([radius * tf.cos(angle), radius * tf.sin(angle)], axis=0)


WORKLOADS: dict[str, Callable] = {"elementwise chain": elementwise_chain, "random numbers": random_numbers,
                                  "random bits": random_bits, "Box-Muller": box_muller}
SEED = (1, 2)  # the seed the random workloads receive as an argument


def workload_input(n: int, seed: int = 0):
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a whole number of elements >= 1, got {n!r}")
    return tf.random.stateless_uniform([int(n)], seed=(seed, 0), minval=-1.0, maxval=1.0)


def workload_args(workload: str, n: int) -> tuple:
    """The arguments a workload is called with: the input vector, for the random workloads with the seed
    tensor; for Box-Muller the two vectors of uniform numbers (``n // 2`` each) it turns into ``n`` normal ones."""
    workload_function(workload)
    if workload == "Box-Muller":
        half = max(int(n) // 2, 1)
        return tuple(1.0 - tf.random.stateless_uniform([half], seed=(i, 1)) for i in range(2))  # in (0, 1]
    x = workload_input(n)
    return (x, tf.constant(SEED, tf.int32)) if workload in ("random numbers", "random bits") else (x,)


def workload_function(name: str) -> Callable:
    """The workload called ``name`` (a key of ``WORKLOADS``), or a ValueError naming the choices."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of: {', '.join(WORKLOADS)}")
    return WORKLOADS[name]


def plain_graph(fn: Callable) -> Callable:
    """The baseline: the function traced into one graph, which TensorFlow runs kernel by kernel."""
    return tf.function(fn)


def jit_compiled(fn: Callable) -> Callable:
    """XLA on one function: all of it compiled into one program, or the call fails."""
    return tf.function(fn, jit_compile=True)


def workload_variants() -> dict[str, Callable[..., Callable]]:
    """Builders for ``SpeedupWidget``, graph and XLA (``plain_graph``, ``jit_compiled``): each takes
    ``workload`` and ``n`` and returns the call to time, compiled fresh (so the first call shows what tracing
    or compiling costs)."""

    def builder(make: Callable[[Callable], Callable]):
        def build(workload: str = "elementwise chain", n: int = 1_000_000):
            fn = make(workload_function(workload))
            args = workload_args(workload, n)
            return lambda: fn(*args)
        return build

    return {GRAPH: builder(plain_graph), JIT: builder(jit_compiled)}


def variant_threads(workload: str, n: int, *, calls: int = 5) -> dict[str, int | None]:
    """``busy_threads`` of the graph and the XLA variant of one workload at ``n`` elements (``workload_variants``;
    the retracing warning of building them again is kept out)."""
    with graphs.captured_tf_warnings():
        return {name: busy_threads(build(workload, n), calls=calls) for name, build in workload_variants().items()}


def cache_bytes(folder: str | Path = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """The largest CPU cache of this machine in bytes (the last level, usually), read from Linux's ``folder``
    (``index*/size`` files such as ``32K``), or None if unknown."""
    sizes = []
    for f in Path(folder).glob("index*/size"):
        text = f.read_text().strip().upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes) if sizes else None


def fusion_rows(results: Mapping[int, bench.Comparison], *, kernels: int) -> list[dict]:
    """Graph against XLA on the elementwise chain at each size ``n``: whether the vector fits in the largest
    cache, and the rates at which each moved data. The graph runs ``kernels`` kernels per call (``graph_kernels``),
    each reading and writing at least one vector of 4-byte floats; XLA's fused loop reads and writes one."""
    whole("kernels", kernels, 1)
    cache = cache_bytes()
    rows = []
    for n, comparison in sorted(results.items()):
        graph, fused = comparison[GRAPH].median_s, comparison[JIT].median_s
        rows.append({"n": f"{n:,}", "vector (MiB)": 4 * n / 2**20,
                     "fits in the largest cache": "unknown" if cache is None else ("yes" if 4 * n <= cache else "no"),
                     "graph (ms)": graph * 1e3, "XLA (ms)": fused * 1e3,
                     "XLA speedup": bench.ratio_text(comparison.speedup(JIT)),
                     "graph's kernels moved (GB/s)": kernels * 8 * n / graph / 1e9,
                     "XLA's loop moved (GB/s)": 8 * n / fused / 1e9})
    return rows


def rate_change_text(in_cache: bench.Comparison, out_of_cache: bench.Comparison, n_in: int, n_out: int) -> str:
    """Whether the graph's data rate fell when its vector left the cache, called only beyond both runs' noise.

    The rate's ratio (in the cache over outside) is ``n_in / n_out`` times the graph's median time at ``n_out``
    over its time at ``n_in``; the two sizes were timed in separate runs, so its interval resamples each
    side's rounds on its own, and it is judged against the larger of the two runs' noise floors."""
    scale = n_in / n_out
    graph_in, graph_out = in_cache[GRAPH], out_of_cache[GRAPH]
    lo, hi = (scale * r for r in bench.ratio_interval(graph_out.times_s, graph_in.times_s, paired=False))
    ratio, floor = scale * graph_out.median_s / graph_in.median_s, max(in_cache.noise_floor, out_of_cache.noise_floor)
    call = bench.judge(lo, hi, floor)
    if call == "faster":
        return (f"the graph's data rate fell {bench.ratio_text(ratio)} {bench.interval_text(lo, hi)} from the "
                "in-cache size to the out-of-cache one")
    if call == "slower":
        return (f"the graph's data rate rose {bench.ratio_text(1 / ratio)} {bench.interval_text(1 / hi, 1 / lo)} "
                "outside the cache")
    return (f"the graph's data rate in the cache over outside: {bench.ratio_text(ratio)} "
            f"{bench.interval_text(lo, hi)}, {bench.call_words(call, lo, hi)} against a noise floor of "
            f"{bench.ratio_text(floor)}")


def break_even_calls(comparison: bench.Comparison, variant: str, over: str | None = None) -> float:
    """How many calls it takes for ``variant``'s faster steady state to pay back its slower first call
    (compilation); ``inf`` when it is not faster, 0 when its first call is not slower."""
    over = over or comparison.baseline
    a, b = comparison[variant], comparison[over]
    extra = a.first_call_s - b.first_call_s
    saving = b.median_s - a.median_s
    if extra <= 0:
        return 0.0
    return float("inf") if saving <= 0 else extra / saving
