"""Mutation ops: bit flips, random integer values, Gaussian noise.

Each picks genes per individual with a per-gene ``rate``. When the expected number of
picks per genome is small (typically 1/L), drawing a float per gene wastes almost all
of the random numbers; ``GeneMask`` then draws how many genes to change (an exact
binomial count by inverse CDF) and which ones (positions), so the cost follows the
number of changes, not the genome length.
"""

from __future__ import annotations

import functools
import math

import tensorflow as tf

from course_lib.evo import packed, rng
from course_lib.evo.fusion import materialize
from course_lib.evo.graph import GenomeSpec, check_fits
from course_lib.evo.ops.base import Op, check_rate
from course_lib.evo.rng import Rows

# Draw positions instead of a word per gene while at most this many picks are expected.
SPARSE_MEAN = 8.0


class GeneMask:
    """The genes a per-gene ``rate`` picks in each genome of ``size`` genes.

    Sparse form: a count k ~ Binomial(size, rate) per genome, exact up to 2**-32 (a
    uint32 word against the CDF's thresholds), then k distinct positions, a uniform
    k-subset by Floyd's algorithm, so each gene is picked with probability ``rate``
    exactly (drawing with replacement would merge repeats and pick fewer). Dense form:
    one word per gene against ``rate * 2**32``. Both forms give the same picks as bools
    or packed words.
    """

    def __init__(self, rate: float, size: int):
        self.rate, self.size = rate, size
        self.thresholds = self._cdf_thresholds() if 0 < rate < 1 and rate * size <= SPARSE_MEAN else []
        self.sparse = 0 < len(self.thresholds) <= size // 4

    def _cdf_thresholds(self) -> list[int]:
        """P(count <= k) * 2**32, rounded, for k = 0, 1, ... while below 2**32."""
        n, p = self.size, self.rate
        pmf = math.exp(n * math.log1p(-p))
        cdf, out = 0.0, []
        for k in range(n):
            cdf += pmf
            t = round(cdf * 2**32)
            if t >= 2**32:
                break
            out.append(t)
            pmf *= (n - k) / (k + 1) * p / (1 - p)
        return out

    def _positions(self, key: tf.Tensor, rows: Rows) -> tuple[tf.Tensor, tf.Tensor]:
        """Distinct positions (B, K) int32 and whether each is used (B, K).

        Floyd's algorithm for a ``count``-subset of range(size): step i draws t in [0, j],
        j = size - count + i, and takes j instead if t was taken before (j never was).
        """
        word = rng.bits(rng.fold_in(key, 1), rows, ())
        count = tf.reduce_sum(tf.cast(word[:, None] >= tf.constant(self.thresholds, tf.uint32), tf.int32), 1)
        k = len(self.thresholds)
        words = tf.cast(rng.bits(rng.fold_in(key, 2), rows, (k,)), tf.uint64)
        picks = []
        for i in range(k):  # K is small (sparse); unrolled
            j = tf.minimum(self.size - count + i, self.size - 1)  # clamped where step i is unused (i >= count)
            t = tf.cast(tf.bitwise.right_shift(words[:, i] * tf.cast(j + 1, tf.uint64), tf.constant(32, tf.uint64)),
                        tf.int32)  # uniform in [0, j] (multiply-high)
            if picks:
                t = tf.where(functools.reduce(tf.logical_or, [p == t for p in picks]), j, t)
            picks.append(t)
        # pinned together, so that XLA runs the steps once per row, not again for each later step
        return tf.stack(materialize(picks, key), 1), tf.range(k)[None, :] < count[:, None]

    def _dense(self, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        threshold = tf.constant(math.floor(self.rate * 2**32), tf.uint32)
        return rng.bits(rng.fold_in(key, 3), rows, (self.size,)) < threshold

    def genes(self, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """bool (B, size): picked genes."""
        if self.rate <= 0 or self.rate >= 1:
            return tf.fill((rows.size, self.size), self.rate >= 1)
        if not self.sparse:
            return self._dense(key, rows)
        pos, used = self._positions(key, rows)
        row = tf.broadcast_to(tf.range(rows.size)[:, None], pos.shape)
        hits = tf.scatter_nd(tf.stack([row, pos], -1), tf.cast(used, tf.int32), (rows.size, self.size))
        return hits > 0

    def words(self, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """uint32 (B, W): the same picks as bits of packed words."""
        if not self.sparse:
            return packed.bits_to_words(self.genes(key, rows))
        pos, used = self._positions(key, rows)
        # pinned, so that XLA does not redo Floyd's steps for every word of the mask
        word_of = materialize(tf.bitwise.right_shift(pos, 5), key)
        bit = tf.bitwise.left_shift(tf.ones([], tf.uint32), tf.cast(pos & 31, tf.uint32))
        bit = materialize(tf.where(used, bit, tf.zeros([], tf.uint32)), key)
        column = tf.range(packed.n_words(self.size))[None, None, :]
        # the picks are distinct bits, so their sum is their or: one (B, K, W) reduction
        return tf.reduce_sum(tf.where(column == word_of[:, :, None], bit[:, :, None], tf.zeros([], tf.uint32)), 1)


def _picked(rate: float, spec: GenomeSpec, key: tf.Tensor, rows: Rows) -> tf.Tensor:
    return tf.reshape(GeneMask(rate, spec.size).genes(key, rows), (rows.size, *spec.shape))


def _spec(x: tf.Tensor) -> GenomeSpec:
    return GenomeSpec(tuple(x.shape[1:]), x.dtype)


class BitFlipMutation(Op):
    """Flip each 0/1 gene with probability ``rate`` (integer genomes of 0s and 1s)."""

    packable = True

    def __init__(self, rate: float, name: str | None = None):
        super().__init__(name)
        self.rate = check_rate(type(self).__name__, rate)

    @classmethod
    def example(cls, length):
        return cls(rate=1 / length)

    def check(self, *specs):
        self.require(specs[0], "integer")
        return specs[0]

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        return tf.where(_picked(self.rate, _spec(x), key, rows), 1 - x, x)

    def apply_packed(self, inputs, key, rows, spec):
        return rows.take(inputs[0]) ^ GeneMask(self.rate, spec.size).words(key, rows)

    def config(self):
        return {"rate": self.rate}


class RandomValueMutation(Op):
    """Replace each gene with probability ``rate`` by a uniform integer in [low, high)."""

    genes = "integer"

    def __init__(self, rate: float, low: int, high: int, name: str | None = None):
        super().__init__(name)
        self.rate = check_rate(type(self).__name__, rate)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)) or low >= high:
            raise ValueError(f"RandomValueMutation needs integers low < high (values in [low, high)), "
                             f"got low={low!r}, high={high!r}")
        if high - low > 2**31:
            raise ValueError(f"RandomValueMutation draws from at most 2**31 values, got [{low}, {high}); "
                             "narrow the range")
        self.low, self.high = low, high

    @classmethod
    def example(cls, length):
        return cls(rate=1 / length, low=0, high=10)

    def check(self, *specs):
        self.require(specs[0], "integer")
        check_fits(type(self).__name__, self.low, self.high, specs[0].dtype)
        return specs[0]

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        spec = _spec(x)
        wide = tf.uint64 if x.dtype == tf.uint64 else tf.int64  # holds low + draw for every gene dtype
        draw = rng.integers(rng.fold_in(key, 4), rows, spec.shape, self.high - self.low)
        values = tf.cast(tf.cast(draw, wide) + tf.constant(self.low, wide), x.dtype)
        return tf.where(_picked(self.rate, spec, key, rows), values, x)

    def config(self):
        return {"rate": self.rate, "low": self.low, "high": self.high}


class GaussianMutation(Op):
    """Add N(0, stddev²) noise to each gene with probability ``rate``; clip to [low, high] if given."""

    genes = "float"

    def __init__(self, stddev: float, rate: float = 1.0, low: float | None = None,
                 high: float | None = None, name: str | None = None):
        super().__init__(name)
        if isinstance(stddev, bool) or not isinstance(stddev, (int, float)) or not stddev > 0:
            raise ValueError(f"GaussianMutation: stddev must be a positive number, got {stddev!r}")
        if low is not None and high is not None and not low < high:
            raise ValueError(f"GaussianMutation needs low < high, got low={low}, high={high}")
        self.stddev, self.low, self.high = float(stddev), low, high
        self.rate = check_rate(type(self).__name__, rate)

    @classmethod
    def example(cls, length):
        return cls(stddev=0.1)

    def check(self, *specs):
        self.require(specs[0], "float")
        return specs[0]

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        spec = _spec(x)
        noise = tf.cast(self.stddev * rng.normal(rng.fold_in(key, 5), rows, spec.shape), x.dtype)
        if self.rate < 1:
            noise = tf.where(_picked(self.rate, spec, key, rows), noise, tf.zeros([], x.dtype))
        y = x + noise
        if self.low is not None:
            y = tf.maximum(y, tf.cast(self.low, x.dtype))
        if self.high is not None:
            y = tf.minimum(y, tf.cast(self.high, x.dtype))
        return y

    def config(self):
        return {"stddev": self.stddev, "rate": self.rate, "low": self.low, "high": self.high}


if __name__ == "__main__":
    from course_lib.evo.op_benchmarks import op_module_main

    raise SystemExit(op_module_main("mutation"))
