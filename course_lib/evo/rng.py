"""Counter-based random numbers: Threefry-2x32 written in TensorFlow ops, as JAX does.

Every random value is a pure function of a key and a counter: the individual's global
row in the population and the gene (or word) index within the row. Why not
``tf.random.stateless_*``: those number their outputs by position in the requested
shape, so a batch of rows would draw different numbers from the same rows of the whole
population. Here values depend only on (key, row, column), so batched equals
unbatched, chunked equals unchunked, a resumed run equals the uninterrupted one, and
being integer math, eager, graph and XLA runs draw bit-identical numbers.

Keys are ``uint32[2]`` tensors; ``fold_in`` derives independent keys from (key, data),
e.g. (seed, generation), then (generation key, node), then (node key, draw).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from course_lib.evo.fastmath import cos_2pi

U32 = tf.uint32
_XLA = contextvars.ContextVar("evo_compiling_with_xla", default=False)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _u32(value: int) -> tf.Tensor:
    return tf.constant(value, U32)


def _rotl(x: tf.Tensor, r: int) -> tf.Tensor:
    return tf.bitwise.left_shift(x, _u32(r)) | tf.bitwise.right_shift(x, _u32(32 - r))


def threefry2x32(key: tf.Tensor, x0: tf.Tensor, x1: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011) on broadcastable uint32 counters."""
    k0, k1 = key[0], key[1]
    ks = (k0, k1, k0 ^ k1 ^ _u32(_PARITY))
    x0, x1 = x0 + k0, x1 + k1
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + _u32(i + 1)
    return x0, x1


def key(seed: int) -> tf.Tensor:
    """The root key of a seed (any int in [0, 2**64))."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be a whole number in [0, 2**64), got {seed!r}")
    return tf.constant([seed & 0xFFFFFFFF, seed >> 32], U32)


def fold_in(k: tf.Tensor, data: Any) -> tf.Tensor:
    """A new key from ``k`` and an integer (a Python int or a scalar integer tensor)."""
    d = tf.cast(data, U32) if isinstance(data, tf.Tensor) else _u32(int(data) & 0xFFFFFFFF)
    a, b = threefry2x32(k, d, _u32(0x9E3779B9))
    return materialize(tf.stack([a, b]), k)


@dataclass(frozen=True)
class Rows:
    """Rows [start, start + size) of a population of ``total`` individuals.

    ``start`` may be a tensor (a batch inside a loop); ``size`` and ``total`` are static.
    """

    start: Any
    size: int
    total: int

    @classmethod
    def all(cls, n: int) -> "Rows":
        return cls(0, n, n)

    def index(self) -> tf.Tensor:
        return tf.range(self.size) + tf.cast(self.start, tf.int32)

    def take(self, x: tf.Tensor) -> tf.Tensor:
        """These rows of a tensor that holds all ``total`` rows."""
        if self.size == self.total:
            return x
        rank = len(x.shape)
        return tf.slice(x, [self.start] + [0] * (rank - 1), [self.size] + [-1] * (rank - 1))


def _counters(k: tf.Tensor, rows: Rows, count: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Threefry of counters (global row, column) for ``count`` columns: two words each, (B, count)."""
    r = tf.cast(rows.index(), U32)[:, None]
    c = tf.cast(tf.range(count), U32)[None, :]
    return threefry2x32(k, r, c)


def bits(k: tf.Tensor, rows: Rows, shape: tuple[int, ...]) -> tf.Tensor:
    """Random uint32 words, shape (rows.size, *shape).

    One Threefry call per word, keeping its first output: a plain elementwise loop
    that XLA vectorises (interleaving both outputs measured slower).
    """
    return tf.reshape(materialize(_counters(k, rows, math.prod(shape))[0], k), (rows.size, *shape))


@contextlib.contextmanager
def compiling_with_xla():
    """Mark the functions traced inside as XLA-compiled, so ``materialize`` pins results."""
    token = _XLA.set(True)
    try:
        yield
    finally:
        _XLA.reset(token)


def materialize(x: tf.Tensor, k: tf.Tensor) -> tf.Tensor:
    """``x`` unchanged, but computed once into memory when compiled with XLA.

    XLA:CPU vectorises plain elementwise loops, but it fuses producers into their
    consumers: a per-row or per-word draw is then recomputed for every gene that reads
    it, and inside a gather or a reshape the fused loop runs scalar (more than 10x
    slower for Threefry). XLA cannot fuse across a while loop, so ``x`` goes through
    one whose trip count (1) comes from the key and so is unknown at compile time.
    Eager and graph execution already compute every tensor once: no-op there.
    """
    if not _XLA.get():
        return x
    odd = k[0] | 1
    one = tf.cast(odd // odd, tf.int32)  # 1, opaque to XLA's simplifier
    _, y = tf.while_loop(lambda i, y: i < one, lambda i, y: (i + 1, y * tf.cast(one, y.dtype)), (0, x))
    return y


def _unit(words: tf.Tensor) -> tf.Tensor:
    """[0, 1) floats from the top 24 bits (exact in float32)."""
    return tf.cast(tf.bitwise.right_shift(words, _u32(8)), tf.float32) * (2.0 ** -24)


def uniform(k: tf.Tensor, rows: Rows, shape: tuple[int, ...]) -> tf.Tensor:
    """Uniform float32 in [0, 1)."""
    return _unit(bits(k, rows, shape))


def integers(k: tf.Tensor, rows: Rows, shape: tuple[int, ...], n: int) -> tf.Tensor:
    """Uniform int32 in [0, n), by multiply-high (Lemire) of a 32-bit word; bias <= n / 2**32."""
    if not 1 <= n <= 2**31:
        raise ValueError(f"integers needs 1 <= n <= 2**31, got {n}")
    wide = tf.cast(bits(k, rows, shape), tf.uint64) * tf.constant(n, tf.uint64)
    return tf.cast(tf.bitwise.right_shift(wide, tf.constant(32, tf.uint64)), tf.int32)


def normal(k: tf.Tensor, rows: Rows, shape: tuple[int, ...]) -> tf.Tensor:
    """Standard normal float32 by Box-Muller from the two words of one Threefry call."""
    a, b = _counters(k, rows, math.prod(shape))
    radius = tf.sqrt(-2.0 * tf.math.log(_unit(a) + 2.0 ** -24))  # (0, 1]: log stays finite
    return tf.reshape(radius * cos_2pi(_unit(b)), (rows.size, *shape))
