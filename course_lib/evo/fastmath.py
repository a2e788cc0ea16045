"""cos(2πx) and log(x) from basic arithmetic, for speed and for identical bits; argmin from plain reductions.

XLA:CPU lowers cos to one scalar libm call per element (no SIMD),
and TensorFlow's own kernels compute a vectorised main part
and a scalar remainder that can differ in the last bit, so a batch of rows could
get other values than the same rows of the whole population. Range reduction plus
a polynomial uses only +, *, / and bit casts: XLA vectorises it, and every batch
size gets the same bits within a mode. Across modes the last bit can differ: XLA
compiles the arithmetic its own way (it may fuse and reorder operations, so some
normals differ from eager and graph execution in the last bits), so float runs
agree across modes only to rounding; integer ones bit for bit. Accurate to
float32 rounding. Rastrigin, Ackley and the Box-Muller normals use these.

XLA:CPU lowers ``tf.argmin`` to a reduction over (value, index) pairs that it does not
vectorise; a least value (``reduce_min``) and then the least index that holds it
(``first_index``, held as float32, a reduction it vectorises where an int32 one is not) are two
plain reductions: ``argmin`` gives ``tf.argmin``'s answer (the first least value) faster on wide rows.
"""

from __future__ import annotations

import math

import tensorflow as tf

# Taylor coefficients of cos(b) in b², b in [0, π/2]: truncation error < 1e-9
_COS = [(-1) ** k / math.factorial(2 * k) for k in range(7)]


def cos_2pi(x: tf.Tensor) -> tf.Tensor:
    """cos(2πx) for float32 x."""
    a = tf.abs(x - tf.round(x))  # [0, 1/2]: one period folded
    flip = a > 0.25  # cos(2πa) = -cos(2π(1/2 - a))
    b = (2.0 * math.pi) * tf.where(flip, 0.5 - a, a)  # [0, π/2]
    b2 = b * b
    c = tf.constant(_COS[-1], x.dtype)
    for coef in reversed(_COS[:-1]):
        c = c * b2 + coef
    return tf.where(flip, -c, c)


_LN2 = math.log(2.0)


def log(x: tf.Tensor) -> tf.Tensor:
    """Natural log of positive, normal float32 x."""
    word = tf.bitcast(x, tf.int32)
    exponent = tf.bitwise.right_shift(word, 23) - 127
    mantissa = tf.bitcast((word & 0x7FFFFF) | 0x3F800000, tf.float32)  # [1, 2)
    big = mantissa > math.sqrt(2.0)  # fold to [sqrt(1/2), sqrt(2)): a short series
    mantissa = tf.where(big, 0.5 * mantissa, mantissa)
    exponent = tf.cast(exponent + tf.cast(big, tf.int32), tf.float32)
    s = (mantissa - 1.0) / (mantissa + 1.0)  # log m = 2 atanh(s), |s| < 0.172
    s2 = s * s
    series = 2.0 * s * (1.0 + s2 * (1 / 3 + s2 * (1 / 5 + s2 * (1 / 7 + s2 * (1 / 9)))))
    return exponent * _LN2 + series


def mean_and_std(x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The mean and (population) std of ``x`` as float32, summed in float64.

    A float32 sum depends on the order its kernel adds in, and XLA and TensorFlow add in
    different orders, so the history's mean and std could differ in the last bit between modes
    even for integer fitness. Summed in float64, integer values (and most others) round to the
    same float32 whatever the order: the history then agrees bit for bit across modes wherever
    the fitness is integer.
    """
    d = tf.cast(x, tf.float64)
    mean = tf.reduce_mean(d)
    std = tf.sqrt(tf.reduce_mean(tf.square(d - mean)))
    return tf.cast(mean, tf.float32), tf.cast(std, tf.float32)


def first_index(mask: tf.Tensor, axis: int) -> tf.Tensor:
    """int32: the index of the first True of ``mask`` along ``axis`` (its size where none is), as a least
    index held as float32 (exact below 2**24): a reduction XLA:CPU vectorises, where an int32 one or an
    argmax is not."""
    size = mask.shape[axis]
    shape = [1] * len(mask.shape)
    shape[axis] = size
    index = tf.reshape(tf.cast(tf.range(size), tf.float32), shape)
    return tf.cast(tf.reduce_min(tf.where(mask, index, float(size)), axis=axis), tf.int32)


def argmin(x: tf.Tensor, axis: int) -> tf.Tensor:
    """int32: the index of the first least value of ``x`` along ``axis`` (as ``tf.argmin``), where a
    NaN counts as least (the first NaN's index), so a NaN is never passed over in silence."""
    x = tf.where(tf.math.is_nan(x), tf.constant(-math.inf, x.dtype), x) if x.dtype.is_floating else x
    return first_index(x <= tf.reduce_min(x, axis=axis, keepdims=True), axis)
