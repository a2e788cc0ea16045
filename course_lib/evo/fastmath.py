"""cos(2πx) as a polynomial, because XLA:CPU calls scalar libm for ``cos``.

On CPU, XLA vectorises exp, log and sqrt but lowers cos/sin to one libm call per
element (about 10x slower than NumPy's SIMD cos here). Rastrigin, Ackley and the
Box-Muller normals all need cos(2πx); range reduction plus an even polynomial is
plain multiply-add code that XLA vectorises, accurate to float32 rounding.
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
