"""Sort-based reference implementations of two permutation ops, measured beside the engine's.

``SortingShuffleMutation`` and ``SortingOrderCrossover`` make the same children from the same random
numbers as ``ShuffleMutation`` and ``OrderCrossover`` (the tests check it), but build them with
``tf.argsort``: a sort per row, which XLA:CPU compiles into a comparison loop it cannot fuse with the
ops around it. ``course bench ops`` and lecture 11 time them as named variants to show what computing
a permutation by counting instead of sorting buys. They are not registered ops (``register=False``):
a model uses the engine's versions.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import ops, rng
from course_lib.evo.ops import permutation


class SortingShuffleMutation(ops.ShuffleMutation, register=False):
    """``ShuffleMutation`` whose shuffle sorts keys: positions, random within the segment."""

    def index(self, key, rows, length, mutate):
        a, b = permutation.random_segment(rng.fold_in(key, 1), rows, length)
        pos = tf.range(length)[None, :]
        inside = (pos >= a) & (pos < b) & mutate
        jitter = 0.5 * rng.uniform(rng.fold_in(key, 2), rows, (length,))  # < 0.5: stays before a + 1
        keys = tf.where(inside, tf.cast(a, tf.float32) + jitter, tf.cast(pos, tf.float32))
        return tf.argsort(keys, axis=1, stable=True)


class SortingOrderCrossover(ops.OrderCrossover, register=False):
    """``OrderCrossover`` that inverts the parent and orders the kept genes by ``argsort``."""

    def apply(self, inputs, key, rows):
        x = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(ops.partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        length = x.shape[1]
        a, b = permutation.random_segment(rng.fold_in(key, 2), rows, length)
        pos = tf.range(length)[None, :]
        rotated = tf.gather(mate, (pos + b) % length, batch_dims=1)
        at = tf.gather(tf.argsort(x, axis=1, stable=True), rotated, batch_dims=1)
        keep = (at < a) | (at >= b)
        order = tf.argsort(tf.where(keep, pos, pos + length), axis=1)
        kept = tf.gather(rotated, order, batch_dims=1)
        fill = tf.gather(kept, (pos - b) % length, batch_dims=1)
        keep_parent = (pos >= a) & (pos < b)
        crossed = self.crossed(key, rows, ops.genome_spec(inputs[0]))
        if crossed is not None:
            keep_parent |= ~crossed[:, None]
        return tf.cast(tf.where(keep_parent, x, fill), inputs[0].dtype)


# the engine op's name -> its sorting reference
REFERENCES = {"ShuffleMutation": SortingShuffleMutation, "OrderCrossover": SortingOrderCrossover}
SUFFIX = ", sorting"  # what op_variants appends to a mode's name for the reference's variant


def reference(op):
    """The sorting reference of ``op``, configured as ``op`` is."""
    return REFERENCES[type(op).__name__](**op.get_config())
