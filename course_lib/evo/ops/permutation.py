"""Ops for permutation genomes (each genome a permutation of 0..L-1, e.g. a TSP tour).

Each mutation builds, per individual, an index vector and gathers the genome with it,
so the result is a permutation by construction. ``rate`` is the probability that an
individual is mutated at all.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import rng
from course_lib.evo.graph import check_fits
from course_lib.evo.ops.base import Mating, Op, check_rate, partner_rows
from course_lib.evo.rng import Rows


class _PermutationOp(Op):
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


def _segment(key: tf.Tensor, rows: Rows, length: int) -> tuple[tf.Tensor, tf.Tensor]:
    """[a, b) per individual, 0 <= a <= b <= length."""
    cuts = rng.integers(key, rows, (2,), length + 1)
    return tf.reduce_min(cuts, 1)[:, None], tf.reduce_max(cuts, 1)[:, None]


class _Mutation(_PermutationOp):
    def __init__(self, rate: float = 1.0, name: str | None = None):
        super().__init__(name)
        self.rate = check_rate(type(self).__name__, rate)

    def index(self, key: tf.Tensor, rows: Rows, length: int, mutate: tf.Tensor) -> tf.Tensor:
        """int32 (B, L): where each gene of the child comes from; identity where not ``mutate``."""
        raise NotImplementedError

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        mutate = rng.uniform(rng.fold_in(key, 1), rows, (1,)) < self.rate
        idx = self.index(rng.fold_in(key, 2), rows, x.shape[1], mutate)
        return tf.gather(x, idx, batch_dims=1)

    def config(self):
        return {"rate": self.rate}


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
        a, b = _segment(key, rows, length)
        pos = tf.range(length)[None, :]
        inside = (pos >= a) & (pos < b) & mutate
        return tf.where(inside, a + b - 1 - pos, pos)


class ShuffleMutation(_Mutation):
    """Shuffle the genes of a random segment: sort keys are positions, random within the segment."""

    def index(self, key, rows, length, mutate):
        a, b = _segment(rng.fold_in(key, 1), rows, length)
        pos = tf.range(length)[None, :]
        inside = (pos >= a) & (pos < b) & mutate
        jitter = 0.5 * rng.uniform(rng.fold_in(key, 2), rows, (length,))  # < 0.5: stays before a + 1
        keys = tf.where(inside, tf.cast(a, tf.float32) + jitter, tf.cast(pos, tf.float32))
        return tf.argsort(keys, axis=1, stable=True)


def inverse_permutation(x: tf.Tensor) -> tf.Tensor:
    """For rows that are permutations: where each value sits."""
    return tf.argsort(x, axis=1, stable=True)


class OrderCrossover(_PermutationOp, Mating):
    """Order crossover (OX): a segment from the parent, the other genes in the mate's order.

    The child keeps parent[a:b] in place; the remaining positions, from b onwards
    (wrapping), get the mate's genes that are not in that segment, in the mate's order
    starting at b. The result is always a permutation. With ``probability`` below 1 a
    child is crossed with that probability, otherwise a copy of its parent.
    """

    def apply(self, inputs, key, rows):
        # genes serve as indices: int32 whatever the gene dtype (gather, argsort take no int8, uint*)
        x = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        length = x.shape[1]
        a, b = _segment(rng.fold_in(key, 2), rows, length)
        pos = tf.range(length)[None, :]
        where_in_x = inverse_permutation(x)
        # the mate read from position b onwards, wrapping
        rotated = tf.gather(mate, (pos + b) % length, batch_dims=1)
        at = tf.gather(where_in_x, rotated, batch_dims=1)
        keep = (at < a) | (at >= b)  # genes not already in the parent's segment
        order = tf.argsort(tf.where(keep, pos, pos + length), axis=1)  # kept ones first, in order
        kept = tf.gather(rotated, order, batch_dims=1)
        fill = tf.gather(kept, (pos - b) % length, batch_dims=1)
        keep_parent = (pos >= a) & (pos < b)
        crossed = self.crossed(key, rows)
        if crossed is not None:
            keep_parent |= ~crossed[:, None]
        return tf.cast(tf.where(keep_parent, x, fill), inputs[0].dtype)


if __name__ == "__main__":
    from course_lib.evo.op_benchmarks import op_module_main

    raise SystemExit(op_module_main("permutation"))
