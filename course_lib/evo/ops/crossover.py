"""Crossover ops: uniform, single-point and two-point.

Every child takes each gene from its parent or from its mate at the same position;
the mate and the mask (or cut points) are drawn per individual. With ``probability``
below 1, a child is crossed with that probability and is otherwise its parent's copy. Each op only says
which genes come from the mate (as bools, or as packed words for 0/1 genomes); the
blending is shared.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import bitpack, rng
from course_lib.evo.fusion import materialize
from course_lib.evo.ops.base import Mating, partner_rows
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import GenomeSpec


class Crossover(Mating, register=False):
    """Children from a parent population and mates (from the same population or a second one)."""

    packable = True

    def mate_genes(self, key: tf.Tensor, rows: Rows, spec: GenomeSpec) -> tf.Tensor:
        """bool (B, *genome): which genes come from the mate."""
        raise NotImplementedError

    def mate_words(self, key: tf.Tensor, rows: Rows, spec: GenomeSpec) -> tf.Tensor:
        """uint32 (B, W): the same choice as bits of packed words."""
        raise NotImplementedError

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        mate = partner_rows(inputs, rng.fold_in(key, 1), rows)
        spec = GenomeSpec(tuple(x.shape[1:]), x.dtype)
        take = self.mate_genes(rng.fold_in(key, 2), rows, spec)
        crossed = self.crossed(key, rows, spec)
        if crossed is not None:
            take &= tf.reshape(crossed, (rows.size,) + (1,) * len(spec.shape))
        return tf.where(take, mate, x)

    def apply_packed(self, inputs, key, rows, spec):
        x = rows.take(inputs[0])
        mate = partner_rows(inputs, rng.fold_in(key, 1), rows)
        m = self.mate_words(rng.fold_in(key, 2), rows, spec)
        crossed = self.crossed(key, rows, spec)
        if crossed is not None:
            m = tf.where(crossed[:, None], m, tf.zeros([], tf.uint32))
        return (x & ~m) | (mate & m)


class UniformCrossover(Crossover):
    """Each gene from the parent or the mate with probability 1/2: one random word per 32 genes."""

    def _words(self, key, rows, spec):
        return rng.bits(key, rows, (bitpack.n_words(spec.size),))

    def mate_genes(self, key, rows, spec):
        # the words pinned as uint32: XLA would otherwise split each 64-bit stream word again for every gene
        bits = bitpack.words_to_bits(materialize(self._words(key, rows, spec), key), spec.size)
        return tf.reshape(bits, (rows.size, *spec.shape))

    def mate_words(self, key, rows, spec):
        return self._words(key, rows, spec)


class _PointCrossover(Crossover):
    """Crossover at cut points along the genome's first axis (rows of a 2-D genome)."""

    def check(self, *specs):
        spec = super().check(*specs)
        if spec.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} cuts along the genome's first axis, which "
                             f"needs length >= 2; got genome shape {spec.shape}")
        return spec

    def segment(self, key: tf.Tensor, rows: Rows, length: int) -> tuple[tf.Tensor, tf.Tensor]:
        """[lo, hi) along the first axis, int32 (B,) each: the part taken from the mate."""
        raise NotImplementedError

    def mate_genes(self, key, rows, spec):
        lo, hi = self.segment(key, rows, spec.shape[0])
        i = tf.range(spec.shape[0])[None, :]
        take = (i >= lo[:, None]) & (i < hi[:, None])
        return tf.reshape(take, (rows.size, spec.shape[0]) + (1,) * (len(spec.shape) - 1)) & tf.ones(
            (1, *spec.shape), tf.bool)

    def mate_words(self, key, rows, spec):
        lo, hi = self.segment(key, rows, spec.shape[0])
        inner = spec.size // spec.shape[0]
        return bitpack.interval_words(lo * inner, hi * inner, bitpack.n_words(spec.size))


class SinglePointCrossover(_PointCrossover):
    """Genes before a cut in [1, L) from the parent, from the cut on from the mate."""

    def segment(self, key, rows, length):
        cut = rng.integers(key, rows, (), length - 1) + 1
        return cut, tf.fill((rows.size,), length)


class TwoPointCrossover(_PointCrossover):
    """Genes between two cuts drawn in [0, L] from the mate, the rest from the parent."""

    def segment(self, key, rows, length):
        cuts = rng.integers(key, rows, (2,), length + 1)
        return tf.reduce_min(cuts, 1), tf.reduce_max(cuts, 1)
