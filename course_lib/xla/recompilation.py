"""Recompilation on new shapes, and how to avoid it: a jit-compiled function called on vectors of many
lengths compiles once per shape, unless its signature leaves the length open or the inputs are padded to a
few bucket sizes (with a mask, so the padding changes nothing)."""

from __future__ import annotations

from typing import Sequence

import tensorflow as tf

from course_lib import bench, graphs
from course_lib.xla.counting import compilations_in
from course_lib.xla.workloads import elementwise_chain


def masked_chain_mean(x, n):
    """Mean of ``elementwise_chain(x)`` over the first ``n`` entries: padding past ``n`` changes nothing."""
    mask = tf.range(tf.shape(x)[0]) < n
    total = tf.reduce_sum(tf.where(mask, elementwise_chain(x), tf.zeros_like(x)))
    return total / tf.cast(n, x.dtype)


def bucket(n: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds ``n`` entries."""
    for b in sorted(buckets):
        if n <= b:
            return b
    raise ValueError(f"length {n} is larger than the largest bucket {max(buckets)}; add a bigger bucket")


def pad_to_bucket(x, buckets: Sequence[int]):
    """``x`` (1-D) zero-padded to its bucket's length, and its true length as an int32 tensor."""
    x = tf.convert_to_tensor(x)
    n = int(x.shape[0])
    return tf.pad(x, [[0, bucket(n, buckets) - n]]), tf.constant(n, tf.int32)


STRATEGIES = ("a new shape per call", "input_signature with None", "pad to buckets")
BUCKETS = (256, 512, 1024, 2048)


def _recompiling_function(strategy: str, buckets: Sequence[int]):
    if strategy == "a new shape per call":
        f = tf.function(masked_chain_mean, jit_compile=True)
        return f, lambda x: f(x, tf.constant(int(x.shape[0]), tf.int32))
    if strategy == "input_signature with None":
        f = tf.function(masked_chain_mean, jit_compile=True,
                        input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.int32)])
        return f, lambda x: f(x, tf.constant(int(x.shape[0]), tf.int32))
    if strategy == "pad to buckets":
        f = tf.function(masked_chain_mean, jit_compile=True)
        return f, lambda x: f(*pad_to_bucket(x, buckets))
    raise ValueError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def recompilations(lengths: Sequence[int], strategy: str, *, buckets: Sequence[int] = BUCKETS,
                   seed: int = 0) -> dict:
    """Call a jit-compiled function on vectors of ``lengths`` with one ``strategy``; count traces and
    XLA compilations, and time the whole sequence the first time (compiling) and again (cached).
    The profiler that counts compilations runs throughout, so every pass carries its small overhead."""
    inputs = [tf.random.stateless_uniform([n], seed=(seed, i)) for i, n in enumerate(lengths)]
    fn, call = _recompiling_function(strategy, buckets)
    # Retracing is what this measures: the traces are counted below, so TensorFlow's warning about them is kept out.
    with graphs.captured_tf_warnings():
        timing, compilations = compilations_in(
            lambda: bench.measure(lambda: [call(x) for x in inputs], name=strategy, repeats=3, warmup=0))
    return {"strategy": strategy, "calls": len(lengths), "distinct lengths": len(set(lengths)),
            "traces": fn.experimental_get_tracing_count(), "XLA compilations": compilations,
            "first pass (ms)": timing.first_call_s * 1e3, "cached pass (ms)": timing.median_s * 1e3}


def recompilation_table(lengths: Sequence[int], *, buckets: Sequence[int] = BUCKETS) -> list[dict]:
    """``recompilations`` for every strategy, as rows for ``tables.table``."""
    return [recompilations(lengths, s, buckets=buckets) for s in STRATEGIES]
