"""Ops for permutation genomes (each genome a permutation of 0..L-1, e.g. a TSP tour).

Each mutation builds, per individual, an index vector and gathers the genome with it,
so the result is a permutation by construction. ``rate`` is the probability that an
individual is mutated at all.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.evo import bitpack, fusion, knobs, rng
from course_lib.evo.ops.base import Knob, Mating, Op, check_rate, genome_spec, partner_rows
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import check_fits
from course_lib.evo.tours import inverse_permutation, place


class PermutationOp(Op, register=False):
    """Base class of the ops on permutation genomes (a tour: each of 0..L-1 once): it checks that the
    genome is a 1-D integer permutation whose values fit the dtype, and marks the op as needing one."""

    permutation = True
    genes = "permutation"

    def check(self, *specs):
        spec = super().check(*specs)
        if not spec.dtype.is_integer:
            raise TypeError(f"{type(self).__name__} needs integer permutation genomes, got dtype "
                            f"{spec.dtype.name}; a permutation op cannot take float genes")
        if len(spec.shape) != 1 or spec.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs 1-D permutation genomes of length >= 2, "
                             f"got genome shape {spec.shape}")
        check_fits(type(self).__name__, 0, spec.shape[0], spec.dtype)
        return spec


def random_segment(key: tf.Tensor, rows: Rows, length: int) -> tuple[tf.Tensor, tf.Tensor]:
    """[a, b) per individual, 0 <= a <= b <= length."""
    cuts = rng.integers(key, rows, (2,), length + 1)
    return tf.reduce_min(cuts, 1)[:, None], tf.reduce_max(cuts, 1)[:, None]


class RatedPermutationOp(PermutationOp, register=False):
    """A permutation op that changes a share ``rate`` of the tours, a knob (the others pass unchanged)."""

    rate = Knob(check_rate)

    def __init__(self, rate: float = 1.0, name: str | None = None):
        super().__init__(name)
        self.rate = rate

    def knobs(self, spec):
        return knobs.merged((), rate=np.float32(self.rate))

    def changed(self, inputs, key: tf.Tensor, rows: Rows, shape: tuple[int, ...] = ()) -> tf.Tensor:
        """bool ``(B,) + shape``: the tours this call changes, drawn from ``key`` folded with 1."""
        return rng.uniform(rng.fold_in(key, 1), rows, shape) < self.knob_values(genome_spec(inputs[0]))["rate"]

    def config(self):
        return {"rate": self.rate}


class _Mutation(RatedPermutationOp):
    def index(self, key: tf.Tensor, rows: Rows, length: int, mutate: tf.Tensor) -> tf.Tensor:
        """int32 (B, L): where each gene of the child comes from; identity where not ``mutate``."""
        raise NotImplementedError

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        idx = self.index(rng.fold_in(key, 2), rows, x.shape[1], self.changed(inputs, key, rows, (1,)))
        return tf.gather(x, idx, batch_dims=1)


class SwapMutation(_Mutation):
    """Swap two genes at random positions."""

    def index(self, key, rows, length, mutate):
        ij = rng.integers(key, rows, (2,), length)
        i, j = ij[:, :1], tf.where(mutate, ij[:, 1:], ij[:, :1])
        pos = tf.range(length)[None, :]
        return tf.where(pos == i, j, tf.where(pos == j, i, pos))


class InversionMutation(_Mutation):
    """Reverse a random segment."""

    def index(self, key, rows, length, mutate):
        a, b = random_segment(key, rows, length)
        pos = tf.range(length)[None, :]
        inside = (pos >= a) & (pos < b) & mutate
        return tf.where(inside, a + b - 1 - pos, pos)


class ShuffleMutation(_Mutation):
    """Shuffle the genes of a random segment, uniformly (Fisher-Yates, see ``fisher_yates``)."""

    def index(self, key, rows, length, mutate):
        a, b = random_segment(rng.fold_in(key, 1), rows, length)
        pos = tf.range(length)[None, :]
        # step i swaps position i with one drawn uniformly in [i, b), for i in [a, b)
        span = tf.cast(tf.maximum(b - pos, 1), tf.uint64)
        words = tf.cast(rng.bits(rng.fold_in(key, 2), rows, (length,)), tf.uint64)
        drawn = pos + tf.cast(tf.bitwise.right_shift(words * span, tf.constant(32, tf.uint64)), tf.int32)
        inside = (pos >= a) & (pos < b) & mutate
        return fisher_yates(tf.where(inside, drawn, pos), tf.reduce_min(a), tf.reduce_max(b),
                            every_position=fusion.target() == "gpu")


@tf.function(jit_compile=True, autograph=False)
def fisher_yates(targets: tf.Tensor, start: tf.Tensor, stop: tf.Tensor, every_position: bool = False) -> tf.Tensor:
    """int32 (B, L): the identity of each row after swapping positions i and ``targets[:, i]`` for
    i = start .. stop - 1 in turn (a Fisher-Yates shuffle where the targets are uniform in [i, b)).

    Sequential in i, vectorised over rows: per step a row read, a gather and a scatter of 2B genes,
    no sort (XLA's CPU sort is a slow generic comparison sort). Always compiled, also when called
    eagerly or from a graph: a loop of L small steps is what XLA runs well and what dispatching
    each step from Python or the graph executor makes slow.

    ``every_position`` (the GPU target): the loop runs over every position 0 .. L - 1, a static trip count,
    instead of ``start`` .. ``stop`` - 1, whose count depends on the draws: XLA:GPU runs a loop of known
    trip count on the device, but reads a data-dependent condition back to the host on every trip.
    Positions outside [start, stop) target themselves, so their swaps change nothing: the same result.
    """
    b, n = targets.shape
    column = tf.range(b)
    targets_t = tf.transpose(targets)  # (L, B): step i reads contiguous rows

    def swap(i, t):
        there = tf.stack([targets_t[i], column], 1)
        here = tf.stack([tf.fill([b], i), column], 1)
        # one scatter, so that XLA updates t in place; where a target is i itself, both writes
        # put the same gene in the same place
        return i + 1, tf.tensor_scatter_nd_update(t, tf.concat([here, there], 0),
                                                  tf.concat([tf.gather_nd(t, there), t[i]], 0))

    identity = tf.tile(tf.range(n)[:, None], [1, b])
    if every_position:
        return tf.transpose(tf.while_loop(lambda i, _: i < n, swap, (tf.constant(0), identity))[1])
    return tf.transpose(tf.while_loop(lambda i, _: i < stop, swap, (start, identity))[1])


def exclusive_count(flags: tf.Tensor) -> tf.Tensor:
    """int32 (B, L): how many of ``flags[:, :i]`` are true, for each i.

    A prefix sum by bit counting: 32 flags packed per word, a popcount per word, a prefix sum over
    the L/32 words, and within a word the popcount of the bits below. (A cumsum along the row is a
    reduce-window under XLA, which does work proportional to L per element instead of per word.)
    """
    b, n = flags.shape
    words = bitpack.bits_to_words(flags)  # (B, W)
    per_word = tf.cast(tf.raw_ops.PopulationCount(x=words), tf.int32)
    before_word = tf.math.cumsum(per_word, axis=1, exclusive=True)
    below = tf.bitwise.left_shift(tf.ones([bitpack.WORD_BITS], tf.uint32),
                                  tf.cast(tf.range(bitpack.WORD_BITS), tf.uint32)) - 1  # bits under bit k
    within = tf.cast(tf.raw_ops.PopulationCount(x=words[:, :, None] & below), tf.int32)
    return tf.reshape(within + before_word[:, :, None], (b, -1))[:, :n]


class OrderCrossover(PermutationOp, Mating):
    """Order crossover (OX): a segment from the parent, the other genes in the mate's order.

    The child keeps parent[a:b] in place; the remaining positions, from b onwards
    (wrapping), get the mate's genes that are not in that segment, in the mate's order
    starting at b. The result is always a permutation. With ``probability`` below 1 a
    child is crossed with that probability, otherwise a copy of its parent.

    No sort: each of the mate's genes gets its place in the child by counting
    (``exclusive_count``) and is moved there by ``place``.
    """

    def apply(self, inputs, key, rows):
        # genes serve as indices: int32 whatever the gene dtype (gather takes no int8, uint*)
        x = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        length = x.shape[1]
        a, b = random_segment(rng.fold_in(key, 2), rows, length)
        pos = tf.range(length)[None, :]
        at = tf.gather(inverse_permutation(x), mate, batch_dims=1)  # each mate gene's place in the parent
        keep = (at < a) | (at >= b)  # genes not already in the parent's segment
        # rank of each mate gene when the mate is read from position b on, wrapping; and how many
        # kept genes precede it in that reading
        start = b % length
        rank = (pos - start) % length
        count = exclusive_count(keep)
        at_start = tf.gather(count, start, batch_dims=1)
        kept_before = tf.where(pos >= start, count - at_start, count + (length - (b - a)) - at_start)
        # kept genes fill b, b + 1, ... (wrapping) in order; the others go to the segment, which the
        # parent overwrites: every position gets one gene
        to = tf.where(keep, (b + kept_before) % length, a + rank - kept_before)
        fill = place(mate, to)
        keep_parent = (pos >= a) & (pos < b)
        crossed = self.crossed(key, rows, genome_spec(inputs[0]))
        if crossed is not None:
            keep_parent |= ~crossed[:, None]
        return tf.cast(tf.where(keep_parent, x, fill), inputs[0].dtype)
