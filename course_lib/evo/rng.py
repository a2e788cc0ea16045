"""Counter-based random numbers in TensorFlow ops: SplitMix64 streams per row, Threefry for keys.

Every random value is a pure function of a key and a counter: the individual's global
row in the population and the gene (or word) index within the row. Why not
``tf.random.stateless_*``: those number their outputs by position in the requested
shape, so a batch of rows would draw different numbers from the same rows of the whole
population. Here values depend only on (key, row, column), so batched equals
unbatched, chunked equals unchunked, a resumed run equals the uninterrupted one, and
being integer math, eager, graph and XLA runs draw bit-identical numbers.

The words: row r of key k is a SplitMix64 stream (Steele, Lea and Flood 2014, the
generator behind Java's SplittableRandom; the constants of Vigna's splitmix64.c)
started at a point hashed from (k, r), and each 64-bit output gives two 32-bit words.
Two multiplies and three xor-shifts per two words, against Threefry-2x32-20's twenty rounds
of adds, rotations and xors per evaluation.

The generator of the words is a named choice (``GENERATORS``): "splitmix64" (the default) or
"threefry", one Threefry-2x32-20 evaluation per word (per pair of normals): other numbers,
the same properties. ``Model.compile(generator=...)`` picks one for a model's programs;
``drawing(name)`` picks one for code run directly; ``course bench ga`` times the two.
tests/test_evo_rng.py checks both generators' uniformity and independence.

Keys are ``uint32[2]`` tensors; ``fold_in`` derives independent keys from (key, data),
e.g. (seed, generation), then (generation key, node), then (node key, draw).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from course_lib.evo import fastmath
from course_lib.evo.fusion import materialize, per_element

U32 = tf.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _u32(value: int) -> tf.Tensor:
    return tf.constant(value, U32)


def _rotl(x: tf.Tensor, r: int) -> tf.Tensor:
    return tf.bitwise.left_shift(x, _u32(r)) | tf.bitwise.right_shift(x, _u32(32 - r))


GENERATORS = ("splitmix64", "threefry")
_WORDS: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("evo_random_words", default=None)
_GENERATOR = contextvars.ContextVar("evo_generator", default=GENERATORS[0])


@contextlib.contextmanager
def counting():
    """Count the random 32-bit words drawn by the code traced or run inside: ``with counting() as n: ...``,
    then ``n[0]`` (what one generation draws)."""
    count = [0]
    token = _WORDS.set(count)
    try:
        yield count
    finally:
        _WORDS.reset(token)


def _drawn(words: int) -> None:
    count = _WORDS.get()
    if count is not None:
        count[0] += words


def check_generator(generator: str) -> str:
    """``generator`` if it names one of ``GENERATORS``, else a clear error."""
    if generator not in GENERATORS:
        raise ValueError(f"unknown random-word generator {generator!r}; choose one of {', '.join(GENERATORS)}")
    return generator


@contextlib.contextmanager
def drawing(generator: str):
    """Draw the words of the code run (or traced) inside with ``generator``, one of ``GENERATORS``."""
    token = _GENERATOR.set(check_generator(generator))
    try:
        yield
    finally:
        _GENERATOR.reset(token)


def with_generator(generator: str, fn):
    """``fn`` drawing its words with ``generator`` whenever it runs or is traced."""
    check_generator(generator)

    @functools.wraps(fn)
    def drawn(*args, **kwargs):
        with drawing(generator):
            return fn(*args, **kwargs)

    return drawn


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
    """The root key of a seed (any whole number in [0, 2**64), a Python or NumPy integer)."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be a whole number in [0, 2**64), got {seed!r}")
    seed = int(seed)
    return tf.constant([seed & 0xFFFFFFFF, seed >> 32], U32)


def fold_in(k: tf.Tensor, data: Any) -> tf.Tensor:
    """A new key from ``k`` and an integer.

    A tensor (the generation) is hashed with Threefry, once per generation. A Python
    int (which node, which draw) is hashed here in Python and xor-ed into the key:
    Threefry keyed by distinct keys gives independent streams, and two xors cost
    nothing where XLA repeats them in each consumer.
    """
    if isinstance(data, tf.Tensor):
        _drawn(2)
        a, b = threefry2x32(k, tf.cast(data, U32), _u32(0x9E3779B9))
        return materialize(tf.stack([a, b]), k)
    return k ^ tf.constant(_mix64(int(data)), U32)


# SplitMix64: its increment (2**64 over the golden ratio, odd) and its output function's two
# multipliers; the Python ints of fold_in and the tensors of the streams use the same ones
_WEYL = 0x9E3779B97F4A7C15
_MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def _mix64(data: int) -> list[int]:
    """Two 32-bit words from SplitMix64's finaliser of ``data``."""
    z = (data * _WEYL + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * _MIX[0]) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * _MIX[1]) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return [z & 0xFFFFFFFF, z >> 32]


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


@dataclass(frozen=True)
class Picked(Rows):
    """Rows whose draws are keyed by the given numbers ``picked`` (size,), not by their place: rows given
    the same number draw the same words (the two children of one pair of parents, ``paired_mates``)."""

    picked: Any = None

    def index(self) -> tf.Tensor:
        return tf.cast(self.picked, tf.int32)


def _u64(value: int) -> tf.Tensor:
    return tf.constant(value, tf.uint64)


def splitmix64(z: tf.Tensor) -> tf.Tensor:
    """SplitMix64's output function: a bijection of uint64 that mixes every input bit into every output bit."""
    z = (z ^ tf.bitwise.right_shift(z, _u64(30))) * _u64(_MIX[0])
    z = (z ^ tf.bitwise.right_shift(z, _u64(27))) * _u64(_MIX[1])
    return z ^ tf.bitwise.right_shift(z, _u64(31))


def _streams(k: tf.Tensor, rows: Rows, count: int) -> tf.Tensor:
    """``count`` uint64 words per row, (B, count): row r's SplitMix64 stream from a start hashed from
    (key, r), a random point of the 2**64 cycle. Two rows' streams overlap with probability about
    B² · count / 2**64 (2**-30 for 4,096 rows of 1,024 words), and an overlap would only repeat some
    words between two rows of one draw. The starts are pinned: one hash per row."""
    key64 = tf.bitwise.left_shift(tf.cast(k[0], tf.uint64), _u64(32)) | tf.cast(k[1], tf.uint64)
    row = tf.cast(rows.index(), tf.uint64) + _u64(1)
    start = materialize(splitmix64(key64 + row * _u64(_WEYL)), k)
    column = tf.cast(tf.range(count), tf.uint64) + _u64(1)
    return splitmix64(start[:, None] + column[None, :] * _u64(_WEYL))


def _counters(k: tf.Tensor, rows: Rows, count: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Threefry of counters (global row, column) for ``count`` columns: two words each, (B, count)."""
    r = tf.cast(rows.index(), U32)[:, None]
    c = tf.cast(tf.range(count), U32)[None, :]
    return threefry2x32(k, r, c)


def bits(k: tf.Tensor, rows: Rows, shape: tuple[int, ...]) -> tf.Tensor:
    """Random uint32 words, shape (rows.size, *shape).

    Words 2c and 2c + 1 of a row are the two halves of its stream's word c, split by a
    bitcast of the pinned 64-bit words (free in memory; splitting by shifts would make every
    consumer's loop pick a half per element). The
    bitcast takes memory order: the low half first on the little-endian CPUs and GPUs
    TensorFlow runs on, as ``_pairs`` takes it by shifts.
    """
    count = math.prod(shape)
    _drawn(rows.size * count)
    if _GENERATOR.get() == "threefry":  # one evaluation per word, keeping its first output
        return tf.reshape(materialize(_counters(k, rows, count)[0], k), (rows.size, *shape))
    wide = materialize(_streams(k, rows, (count + 1) // 2), k)
    words = tf.reshape(tf.bitcast(wide, U32), (rows.size, 2 * wide.shape[1]))[:, :count]
    return tf.reshape(words, (rows.size, *shape))


def _pairs(k: tf.Tensor, rows: Rows, count: int) -> list[tf.Tensor]:
    """Two uint32 words per counter, [(B, count), (B, count)], pinned together: the two halves of a
    stream word (Threefry's two outputs with the "threefry" generator), each computed once."""
    _drawn(2 * rows.size * count)
    if _GENERATOR.get() == "threefry":
        return materialize(list(_counters(k, rows, count)), k)
    wide = _streams(k, rows, count)
    return materialize([tf.cast(wide, U32), tf.cast(tf.bitwise.right_shift(wide, _u64(32)), U32)], k)


def _unit(words: tf.Tensor) -> tf.Tensor:
    """[0, 1) floats from the top 24 bits (exact in float32)."""
    return tf.cast(tf.bitwise.right_shift(words, _u32(8)), tf.float32) * (2.0 ** -24)


def uniform(k: tf.Tensor, rows: Rows, shape: tuple[int, ...]) -> tf.Tensor:
    """Uniform float32 in [0, 1)."""
    return _unit(bits(k, rows, shape))


def integers(k: tf.Tensor, rows: Rows, shape: tuple[int, ...], n: int) -> tf.Tensor:
    """Uniform int32 in [0, n), by multiply-high (Lemire) of a 32-bit word; bias <= n / 2**32.

    For n a power of two that is a plain shift (the same numbers, cheaper).
    """
    if not 1 <= n <= 2**31:
        raise ValueError(f"integers needs 1 <= n <= 2**31, got {n}")
    words = bits(k, rows, shape)
    if n == 1:
        return tf.zeros_like(words, tf.int32)
    if n & (n - 1) == 0:
        return tf.cast(tf.bitwise.right_shift(words, _u32(33 - n.bit_length())), tf.int32)
    wide = tf.cast(words, tf.uint64) * tf.constant(n, tf.uint64)
    return tf.cast(tf.bitwise.right_shift(wide, tf.constant(32, tf.uint64)), tf.int32)


def normal(k: tf.Tensor, rows: Rows, shape: tuple[int, ...]) -> tf.Tensor:
    """Standard normal float32 by Box-Muller: a pair of words gives two normals.

    Counter c of a row gives radius r and angle u (a pair of words, ``_pairs``); column c
    gets r·cos(2πu) and column c + half gets r·sin(2πu). Both are computed on the pairs as
    one flat vector and pinned together (``fusion.per_element``): the log and sqrt run once
    per pair, and the cosines in whole vectors instead of ending each row in scalar steps.
    """
    count = math.prod(shape)
    half = (count + 1) // 2
    a, b = _pairs(k, rows, half)

    def box_muller(a, b):
        radius = tf.sqrt(-2.0 * fastmath.log(_unit(a) + 2.0 ** -24))  # (0, 1]: log stays finite
        u = _unit(b)
        return [radius * fastmath.cos_2pi(u), radius * fastmath.cos_2pi(u - 0.25)]

    cosines, sines = per_element(box_muller, a, b, key=k)
    return tf.reshape(tf.concat([cosines, sines], axis=1)[:, :count], (rows.size, *shape))
