"""Which rows of a tensor repeat an earlier row, compiled, in one sort.

Why not a lexicographic sort: that is one stable sort per column, and genomes have tens to thousands
of genes. Here each row is hashed to one 64-bit word (its values' bits, each column times its own
odd random weight, summed with wrap-around, then mixed by SplitMix64's output function), the rows
are sorted once by that word, and a row repeats when it equals, value for value, the row sorted just
before it. Equal rows have equal words, so they sit together unless a different row's word collides
with theirs and sorts between them (probability about P² / 2**64): then a repeat is missed, never
invented. Floats compare as values (-0.0 equals 0.0, every NaN equals every NaN).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.evo.rng import splitmix64

_WEIGHT_SEED = 20141028  # fixed: the weights only need to differ between columns


def _bits(x: tf.Tensor) -> tf.Tensor:
    """(P, n) uint64: each value's bits, floats canonical (-0.0 as 0.0, one NaN)."""
    x = tf.reshape(x, (x.shape[0], -1))
    if x.dtype.is_floating:
        x = tf.where(tf.equal(x, 0), tf.zeros_like(x), x)
        x = tf.where(tf.math.is_nan(x), tf.fill(tf.shape(x), tf.constant(np.nan, x.dtype)), x)
        x = tf.bitcast(x, {2: tf.uint16, 4: tf.uint32, 8: tf.uint64}[x.dtype.size])
    elif x.dtype == tf.bool:
        x = tf.cast(x, tf.uint8)
    elif x.dtype.is_integer and not x.dtype.is_unsigned and x.dtype.size < 8:
        x = tf.cast(x, tf.int64)
    if x.dtype == tf.int64:
        return tf.bitcast(x, tf.uint64)
    return tf.cast(x, tf.uint64)


def repeated(x: tf.Tensor) -> tf.Tensor:
    """bool (P,): the rows of ``x`` (P, ...) whose values all equal those of an earlier row."""
    p = x.shape[0]
    if p is None or p < 2:
        return tf.zeros([tf.shape(x)[0]], tf.bool)
    bits = _bits(x)
    n = bits.shape[1]
    weights = np.random.default_rng(_WEIGHT_SEED).integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    word = splitmix64(tf.reduce_sum(bits * tf.constant(weights), axis=1))
    order = tf.argsort(tf.bitcast(word, tf.int64), stable=True)  # stable: an earlier row sorts first
    rows = tf.gather(bits, order)
    same = tf.reduce_all(tf.equal(rows[1:], rows[:-1]), axis=1)
    return tf.scatter_nd(order[:, None], tf.cast(tf.concat([[False], same], 0), tf.int32), [p]) > 0
