"""Mutation ops: bit flips, random integer values, Gaussian noise.

Each picks genes per individual with a per-gene ``rate``. When the expected number of
picks per genome is small (typically 1/L), drawing a word per gene wastes almost all
of the random numbers. ``GeneMask`` then draws one word per block of 32 genes, which
decides the block's picks when it has at most two (``BlockPicks``), or, at rates where
blocks with more are common, how many genes each genome changes (an exact binomial count
by inverse CDF) and which ones (positions), so the cost follows the number of changes.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import tensorflow as tf

from course_lib.evo import bitpack, fusion, knobs, rng
from course_lib.evo.fusion import materialize
from course_lib.evo.ops.base import Knob, Op, check_rate, genome_spec
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import GenomeSpec, check_fits

# Draw positions instead of a word per gene while at most this many picks are expected.
SPARSE_MEAN = 8.0
# One word per block of 32 genes decides its picks while a block needs more words at most this often.
BLOCK_ESCAPE = 2.0**-15
# Under XLA for the CPU target, Floyd's first steps run on every row and the rest only on the rows
# that use them, gathered this many at a time (GeneMask._tail).
HEAD_STEPS, TAIL_ROWS = 4, 32


def _floyd_draw(size, count: tf.Tensor, words: tf.Tensor, i) -> tuple[tf.Tensor, tf.Tensor]:
    """Floyd's step i for a ``count``-subset of range(size): t uniform in [0, j] from a uint64 word
    holding 32 random bits, and j = size - count + i (clamped where the step is unused, i >= count)."""
    j = tf.minimum(size - count + i, size - 1)
    t = tf.bitwise.right_shift(words * tf.cast(j + 1, tf.uint64), tf.constant(32, tf.uint64))  # multiply-high
    return tf.cast(t, tf.int32), j


def _floyd(size, count: tf.Tensor, draws: tf.Tensor, stop: int) -> list:
    """Steps 0 .. stop - 1 of Floyd's algorithm, unrolled (few steps), one pick tensor per step: a step
    takes j instead of t if t was picked before (j never was)."""
    picks: list = []
    for i in range(stop):
        t, j = _floyd_draw(size, count, draws[..., i], i)
        if picks:
            t = tf.where(functools.reduce(tf.logical_or, [p == t for p in picks]), j, t)
        picks.append(t)
    return picks


class _Tables:
    """Thresholds as tensors: an op's knob values once set (``GeneMask.read``), else constants made where
    they are used (never kept: a mask may serve several traced functions), not when only ``knobs()`` is
    asked for, as ``Model.program`` does before every run."""

    _tables: dict[str, tf.Tensor] | None = None

    def knobs(self) -> knobs.Knobs:
        raise NotImplementedError

    @property
    def tables(self) -> dict[str, tf.Tensor]:
        return knobs.constants(self.knobs()) if self._tables is None else self._tables

    @tables.setter
    def tables(self, values: dict[str, tf.Tensor]) -> None:
        self._tables = values


class BlockPicks(_Tables):
    """Picks with probability ``rate`` per gene, decided per block of 32 genes (one packed word) by one
    uint32 word u when the block has at most two picks.

    A block's count is Binomial(32, rate). With a = u mod 32 and b = (u >> 5) mod 32: u in [0, T0)
    picks nothing; [T0, T1) picks gene a; [T1, T2) picks genes a and b (none when a = b, a share of
    1/32 that [0, T0) is shortened by). T0 is a multiple of 32 and T1, T2 of 1024, so a, b are exactly
    uniform and independent within each interval. The rest, [T2, 2**32), escapes: three or more picks,
    plus what the intervals rounded off. An escaped block draws its count again, from the conditional
    distribution of an escape, and its positions by Floyd's algorithm, so every block's picks have
    their exact probabilities up to 2**-32. ``GeneMask`` uses this where escapes are rare. Blocks past
    a genome's end are cut: independent picks per gene stay independent.

    Targets: for the CPU the escaped rows are redone one at a time in a loop (nearly always no trip,
    so the redraw costs nothing); for the GPU every block's escape draw is computed and kept where the
    block escaped, with no loop: a loop whose trip count depends on the draws would read its condition
    back to the host every generation. The same picks either way: a row's draws depend only on its
    global row.
    """

    def __init__(self, rate: float):
        bits, scale = bitpack.WORD_BITS, 2.0**32
        pmf = [math.comb(bits, k) * rate**k * (1 - rate) ** (bits - k) * scale for k in range(bits + 1)]
        # [T1, T2) has 31/32 pairs and 1/32 nothing, which must fit in P(nothing)
        pairs = math.floor(min(pmf[2] * bits / (bits - 1), pmf[0] * bits) / bits**2) * bits**2
        one = math.floor(pmf[1] / bits) * bits
        self.t1 = math.floor((pmf[0] - pairs / bits + one) / bits**2) * bits**2
        one = min(one, self.t1)  # where nothing is rare, the single picks shrink to fit below T1
        self.t0, self.t2 = self.t1 - one, self.t1 + pairs
        self.escape = (2**32 - self.t2) / scale  # the probability that a block escapes
        # an escape's count k: a word w gives k = the number of thresholds <= w
        weights = [pmf[0] - self.t0 - pairs / bits, pmf[1] - one, pmf[2] - pairs * (bits - 1) / bits] + pmf[3:]
        total = math.fsum(weights) or 1.0  # 0: no escape at all (T2 = 2**32)
        cumulative = [math.fsum(weights[:k + 1]) / total for k in range(bits + 1)]
        self.thresholds = [t for t in (round(c * 2**32) for c in cumulative) if t < 2**32]

    def knobs(self) -> knobs.Knobs:
        """The interval ends below 2**32 and the escape's thresholds; which ends reach 2**32 and how many
        thresholds there are shape the program."""
        ends = (self.t0, self.t1, self.t2)
        return knobs.merged((tuple(t < 2**32 for t in ends), len(self.thresholds)),
                            ends=np.array([min(t, 2**32 - 1) for t in ends], np.uint32),
                            escape=np.array(self.thresholds, np.uint32))

    def words(self, key: tf.Tensor, rows: Rows, size: int, onto: tf.Tensor | None = None) -> tf.Tensor:
        """uint32 (B, W): the picks of genomes of ``size`` genes as bits of packed words, xor-ed onto
        the packed genomes ``onto`` if given (then the escaped rows are redone on the result, which is
        kept anyway, instead of on a mask XLA would otherwise have to keep)."""
        n_words = bitpack.n_words(size)
        valid = bitpack.interval_words(tf.zeros([1], tf.int32), tf.fill([1], size), n_words)
        u = rng.bits(rng.fold_in(key, 6), rows, (n_words,))
        bit = tf.ones([], tf.uint32)
        one = tf.bitwise.left_shift(bit, u & 31)
        two = one ^ tf.bitwise.left_shift(bit, tf.bitwise.right_shift(u, 5) & 31)
        nothing = tf.zeros([], tf.uint32)  # also for an escape, redone below

        ends = self.tables["ends"]

        def below(i):  # at rates too small for 32 bits an interval can end at 2**32, past uint32
            return u < ends[i] if (self.t0, self.t1, self.t2)[i] < 2**32 else tf.ones_like(u, tf.bool)

        picks = tf.where(below(0), nothing, tf.where(below(1), one, tf.where(below(2), two, nothing)))
        out = picks & valid if onto is None else onto ^ (picks & valid)
        if self.t2 == 2**32:
            return out
        if fusion.target() == "gpu":
            return out ^ tf.where(u >= ends[2], self._escaped(key, rows, n_words) & valid, nothing)

        def trip(todo, out):
            """One row with escapes: their picks drawn again and xor-ed in."""
            r = tf.argmax(tf.cast(todo, tf.int32), output_type=tf.int32)
            row = Rows(tf.cast(rows.start, tf.int32) + r, 1, rows.total)
            escaped = rng.bits(rng.fold_in(key, 6), row, (n_words,))[0] >= ends[2]  # u of row r, drawn again
            redone = tf.where(escaped, self._escaped(key, row, n_words)[0] & valid[0], nothing)
            return todo & (tf.range(rows.size) != r), tf.tensor_scatter_nd_update(out, [[r]], (out[r] ^ redone)[None])

        todo = tf.reduce_max(u, 1) >= ends[2]
        return tf.while_loop(lambda todo, _: tf.reduce_any(todo), trip, (todo, out))[1]

    def _escaped(self, key: tf.Tensor, rows: Rows, n_words: int) -> tf.Tensor:
        """uint32 (B, W): every block of these rows drawn as an escape: a count, then Floyd's positions."""
        k = len(self.thresholds)
        words = rng.bits(rng.fold_in(key, 7), rows, (n_words, k + 1))
        count = tf.reduce_sum(tf.cast(words[..., :1] >= self.tables["escape"], tf.int32), -1)
        picks = _floyd(bitpack.WORD_BITS, count, tf.cast(words[..., 1:], tf.uint64), k)
        return tf.add_n([tf.where(i < count, tf.bitwise.left_shift(tf.ones([], tf.uint32), tf.cast(t, tf.uint32)),
                                  tf.zeros([], tf.uint32)) for i, t in enumerate(picks)])  # distinct bits: sum = or


class GeneMask(_Tables):
    """The genes a per-gene ``rate`` picks in each genome of ``size`` genes.

    Block form (``BlockPicks``), where a block of 32 genes rarely has three picks or more: one
    word per block. Sparse form, at rates where that is common but a genome expects few picks:
    a count k ~ Binomial(size, rate) per genome, exact up to 2**-32 (a uint32 word against the
    CDF's thresholds), then k distinct positions, a uniform k-subset by Floyd's algorithm, so
    each gene is picked with probability ``rate`` exactly (drawing with replacement would merge
    repeats and pick fewer). Dense form: one word per gene against ``rate * 2**32``. Every form
    gives the same picks as bools or packed words.
    """

    def __init__(self, rate: float, size: int):
        self.rate, self.size = rate, size
        blocks = BlockPicks(rate) if 0 < rate < 1 else None
        self.blocks = blocks if blocks and blocks.escape <= BLOCK_ESCAPE else None
        rare = 0 < rate < 1 and rate * size <= SPARSE_MEAN and not self.blocks
        self.thresholds = self._cdf_thresholds() if rare else []
        self.sparse = 0 < len(self.thresholds) <= size // 4

    def knobs(self) -> knobs.Knobs:
        """What the mask reads at run time: its form's thresholds. The form (none, all, blocks, sparse,
        dense) and the length of its tables shape the program, so a rate that changes them compiles again."""
        if self.rate <= 0 or self.rate >= 1:
            return knobs.Knobs(("all" if self.rate >= 1 else "none",))
        if self.blocks:
            return knobs.merged(("blocks",), blocks=self.blocks.knobs())
        if self.sparse:
            return knobs.merged(("sparse",), counts=np.array(self.thresholds, np.uint32))
        return knobs.merged(("dense",), threshold=np.uint32(math.floor(self.rate * 2**32)))

    def read(self, tables: dict[str, tf.Tensor]) -> "GeneMask":
        """This mask with its tables as tensors (``Op.knob_values`` of ``knobs()``)."""
        self.tables = tables
        if self.blocks:
            self.blocks.tables = {k.removeprefix("blocks/"): v for k, v in tables.items()}
        return self

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

    def _picks(self, key: tf.Tensor, rows: Rows, mark) -> tf.Tensor:
        """The picks of every row as ``mark(positions (n, m), used (n, m), pin)`` makes them, (n, X),
        or-ed over steps (``pin``: ``materialize`` for the whole population's, nothing for a few rows).

        Floyd's algorithm for a ``count``-subset of range(size): step i draws t in [0, j],
        j = size - count + i, and takes j instead if t was taken before (j never was). Under XLA
        every step costs its work on every row, though a row uses step i only when its count
        exceeds i (with ``rate * size`` = 1, one row in 270 uses more than four), so for the CPU
        target the first ``HEAD_STEPS`` run on every row and the rest on the rows that use them
        (``_tail``, a loop). For the GPU target every step runs on every row, unrolled, with no loop:
        the idle steps cost little on a GPU's many cores, a loop's trip read back to the host a lot.
        """
        word = rng.bits(rng.fold_in(key, 1), rows, ())
        count = tf.reduce_sum(tf.cast(word[:, None] >= self.tables["counts"], tf.int32), 1)
        k = len(self.thresholds)
        draws = tf.cast(rng.bits(rng.fold_in(key, 2), rows, (k,)), tf.uint64)
        h = min(k, HEAD_STEPS) if fusion.xla_active() and fusion.target() == "cpu" else k
        # pinned together, so that XLA runs the steps once per row, not again for each later step
        head = tf.stack(materialize(_floyd(self.size, count, draws, h), key), 1)
        marks = mark(head, tf.range(h)[None, :] < count[:, None], lambda x: materialize(x, key))
        return marks if h == k else self._tail(marks, count, draws, head, mark)

    def _tail(self, marks: tf.Tensor, count: tf.Tensor, draws: tf.Tensor, head: tf.Tensor, mark) -> tf.Tensor:
        """``marks`` with the later steps' picks added: the rows whose count exceeds the head's steps
        are gathered ``TAIL_ROWS`` at a time (one round, nearly always), stepped on in a loop over
        the steps (few rows: small code, little work), and or-ed back."""
        n, h, k = count.shape[0], head.shape[1], draws.shape[1]
        chunk = min(n, TAIL_ROWS)
        needs = tf.cumsum(tf.cast(count > h, tf.int32))  # the i-th row that needs a tail: where this first reaches i
        column = tf.range(k)[None, :]

        def round_(r, marks):
            which = tf.searchsorted(needs, r * chunk + tf.range(1, chunk + 1))  # n: past the last such row
            take = tf.minimum(which, n - 1)
            c, words = tf.gather(count, take), tf.gather(draws, take)

            def step(i, picks):
                t, j = _floyd_draw(self.size, c, tf.gather(words, i, axis=1), i)
                t = tf.where(tf.reduce_any((picks == t[:, None]) & (column < i), 1), j, t)
                return i + 1, tf.where(column == i, t[:, None], picks)

            picks = tf.concat([tf.gather(head, take), tf.zeros((chunk, k - h), tf.int32)], 1)
            picks = tf.while_loop(lambda i, p: i < k, step, (tf.constant(h), picks))[1]
            more = mark(picks[:, h:], tf.range(h, k)[None, :] < c[:, None], lambda x: x)  # few rows: no pinning
            return r + 1, tf.tensor_scatter_nd_update(marks, which[:, None], tf.gather(marks, take) | more)

        spare = tf.concat([marks, tf.zeros_like(marks[:1])], 0)  # row n takes the rounds' unused updates
        return tf.while_loop(lambda r, m: r * chunk < needs[-1], round_, (tf.constant(0), spare))[1][:n]

    def _dense(self, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        return rng.bits(rng.fold_in(key, 3), rows, (self.size,)) < self.tables["threshold"]

    def genes(self, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """bool (B, size): picked genes."""
        if self.rate <= 0 or self.rate >= 1:
            return tf.fill((rows.size, self.size), self.rate >= 1)
        if self.blocks:
            return bitpack.words_to_bits(self.blocks.words(key, rows, self.size), self.size)
        if not self.sparse:
            return self._dense(key, rows)

        def mark(pos, used, pin):
            row = tf.broadcast_to(tf.range(pos.shape[0])[:, None], pos.shape)
            return tf.scatter_nd(tf.stack([row, pos], -1), tf.cast(used, tf.int32), (pos.shape[0], self.size)) > 0

        return self._picks(key, rows, mark)

    def words(self, key: tf.Tensor, rows: Rows, onto: tf.Tensor | None = None) -> tf.Tensor:
        """uint32 (B, W): the same picks as bits of packed words, xor-ed onto packed genomes ``onto`` if given."""
        if self.blocks:
            return self.blocks.words(key, rows, self.size, onto)
        if onto is not None:
            return onto ^ self.words(key, rows)
        if not self.sparse:
            return bitpack.bits_to_words(self.genes(key, rows))
        column = tf.range(bitpack.n_words(self.size))[None, None, :]

        def mark(pos, used, pin):
            # pinned, so that XLA does not redo Floyd's steps for every word of the mask
            word_of = pin(tf.bitwise.right_shift(pos, 5))
            bit = tf.bitwise.left_shift(tf.ones([], tf.uint32), tf.cast(pos & 31, tf.uint32))
            bit = pin(tf.where(used, bit, tf.zeros([], tf.uint32)))
            # the picks are distinct bits, so their sum is their or: one (n, m, W) reduction
            return tf.reduce_sum(tf.where(column == word_of[:, :, None], bit[:, :, None], tf.zeros([], tf.uint32)), 1)

        return self._picks(key, rows, mark)


class _GeneMutation(Op):
    """A mutation that changes each gene with probability ``rate`` (a knob: ``GeneMask``'s tables are
    read at run time)."""

    rate = Knob(check_rate)

    def knobs(self, spec):
        return knobs.merged((), mask=GeneMask(self.rate, spec.size).knobs())

    def mask(self, spec: GenomeSpec) -> GeneMask:
        """The genes this op changes in genomes ``spec``, its tables read from the knobs."""
        values = self.knob_values(spec)
        return GeneMask(self.rate, spec.size).read({k.removeprefix("mask/"): v for k, v in values.items()
                                                    if k.startswith("mask/")})

    def picked(self, spec: GenomeSpec, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """bool (B, *genome): the genes changed."""
        return tf.reshape(self.mask(spec).genes(key, rows), (rows.size, *spec.shape))


class BitFlipMutation(_GeneMutation):
    """Flip each 0/1 gene with probability ``rate`` (integer genomes of 0s and 1s; any other value is
    an error, checked on each population it is given)."""

    packable = True
    binary = True

    def __init__(self, rate: float, name: str | None = None):
        super().__init__(name)
        self.rate = rate

    @classmethod
    def example(cls, length):
        return cls(rate=1 / length)

    def check(self, *specs):
        self.require(specs[0], "integer")
        return specs[0]

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        return tf.where(self.picked(genome_spec(x), key, rows), 1 - x, x)

    def apply_packed(self, inputs, key, rows, spec):
        return self.mask(spec).words(key, rows, onto=rows.take(inputs[0]))

    def config(self):
        return {"rate": self.rate}


class RandomValueMutation(_GeneMutation):
    """Replace each gene with probability ``rate`` by a uniform integer in [low, high)."""

    genes = "integer"

    def __init__(self, rate: float, low: int, high: int, name: str | None = None):
        super().__init__(name)
        self.rate = rate
        self.check_range(low, high)
        self.low, self.high = low, high

    @staticmethod
    def check_range(low, high) -> None:
        """A clear error unless [low, high) is a range of integers it can draw from."""
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)) or low >= high:
            raise ValueError(f"RandomValueMutation needs integers low < high (values in [low, high)), "
                             f"got low={low!r}, high={high!r}")
        if high - low > 2**31:
            raise ValueError(f"RandomValueMutation draws from at most 2**31 values, got [{low}, {high}); "
                             "narrow the range")

    @classmethod
    def example(cls, length):
        return cls(rate=1 / length, low=0, high=10)

    def check(self, *specs):
        self.require(specs[0], "integer")
        self.check_range(self.low, self.high)  # again: low and high can be set in place after construction
        check_fits(type(self).__name__, self.low, self.high, specs[0].dtype)
        return specs[0]

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        spec = genome_spec(x)
        wide = tf.uint64 if x.dtype == tf.uint64 else tf.int64  # holds low + draw for every gene dtype
        draw = rng.integers(rng.fold_in(key, 4), rows, spec.shape, self.high - self.low)
        values = tf.cast(tf.cast(draw, wide) + tf.constant(self.low, wide), x.dtype)
        return tf.where(self.picked(spec, key, rows), values, x)

    def config(self):
        return {"rate": self.rate, "low": self.low, "high": self.high}


def _check_stddev(op: str, stddev, name: str = "stddev") -> float:
    if isinstance(stddev, bool) or not isinstance(stddev, (int, float, np.floating, np.integer)) or not stddev > 0:
        raise ValueError(f"{op}: {name} must be a positive number, got {stddev!r}")
    return float(stddev)


class GaussianMutation(_GeneMutation):
    """Add N(0, stddev²) noise to each gene with probability ``rate``; clip to [low, high] if given."""

    genes = "float"
    stddev = Knob(_check_stddev)

    def __init__(self, stddev: float, rate: float = 1.0, low: float | None = None,
                 high: float | None = None, name: str | None = None):
        super().__init__(name)
        self.stddev, self.low, self.high, self.rate = stddev, low, high, rate
        self.check_bounds()

    def check_bounds(self) -> None:
        """A clear error unless low < high where both are given (checked again on each run: they can be
        set in place)."""
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise ValueError(f"GaussianMutation needs low < high, got low={self.low}, high={self.high}")

    def knobs(self, spec):
        # rate 1 changes every gene with no mask: another structure
        mask = super().knobs(spec) if self.rate < 1 else knobs.Knobs()
        stddev = np.asarray(self.stddev, np.float32)
        return knobs.Knobs((self.rate < 1, mask.structure), {**mask.values, "stddev": stddev})

    @classmethod
    def example(cls, length):
        return cls(stddev=0.1)

    def check(self, *specs):
        self.require(specs[0], "float")
        self.check_bounds()
        return specs[0]

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        spec = genome_spec(x)
        stddev = self.knob_values(spec)["stddev"]
        noise = tf.cast(stddev * rng.normal(rng.fold_in(key, 5), rows, spec.shape), x.dtype)
        if self.rate < 1:
            noise = tf.where(self.picked(spec, key, rows), noise, tf.zeros([], x.dtype))
        y = x + noise
        if self.low is not None:
            y = tf.maximum(y, tf.cast(self.low, x.dtype))
        if self.high is not None:
            y = tf.minimum(y, tf.cast(self.high, x.dtype))
        return y

    def config(self):
        return {"stddev": self.stddev, "rate": self.rate, "low": self.low, "high": self.high}
