"""Subtour crossover: recombine tours edge by edge, not position by position.

A tour's quality lives in its edges (which city follows which), not in the positions
its cities hold. Order crossover keeps a parent's segment at its positions and refills
the rest in the mate's order, so on a long tour most of the mate's cities land next to
strangers. Here the child is its parent with one run of consecutive cities of the mate
(a subtour) moved in as a block, right after the city that precedes it in the mate: the
subtour's edges are the mate's, the rest are the parent's, and only the few places
where the subtour's cities were taken out of the parent, and its far end, join cities
that were not joined in either parent. Inserted into a good tour, a good stretch of
another good tour keeps what both got right, and a local search repairs the seams.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import rng
from course_lib.evo.ops.base import Mating, genome_spec, partner_rows
from course_lib.evo.ops.permutation import PermutationOp, exclusive_count
from course_lib.evo.tours import inverse_permutation, place


class SubtourCrossover(PermutationOp, Mating):
    """The child: its parent with a run of 1 to ``segment`` consecutive cities of its mate moved
    in as a block after the city that precedes the run in the mate (None: runs up to half the
    tour). With ``probability`` below 1, a child that is not crossed is a copy of its parent."""

    def __init__(self, probability: float = 1.0, segment: int | None = None, name: str | None = None):
        super().__init__(probability, name)
        if segment is not None and (isinstance(segment, bool) or not isinstance(segment, int) or segment < 1):
            raise ValueError(f"SubtourCrossover: segment must be a whole number >= 1 or None, got {segment!r}")
        self.segment = segment

    def apply(self, inputs, key, rows):
        x = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        n = x.shape[1]
        longest = max(1, min(self.segment or n // 2, n - 1))
        start = rng.integers(rng.fold_in(key, 2), rows, (), n)[:, None]
        length = rng.integers(rng.fold_in(key, 4), rows, (), longest)[:, None] + 1
        # each of the parent's cities: its place in the mate's run (0 .. length-1), or not in it
        in_run = tf.gather((inverse_permutation(mate) - start) % n, x, batch_dims=1)
        inside = in_run < length
        # the child starts at the city before the run in the mate (the anchor, never in the run), then
        # the run in the mate's order, then the parent's other cities in its order from the anchor on:
        # each parent position's place in the child by counting, no sort
        before = tf.gather(mate, (start[:, 0] - 1) % n, batch_dims=1)[:, None]
        anchor = tf.gather(inverse_permutation(x), before, batch_dims=1)
        pos = tf.range(n)[None, :]
        count = exclusive_count(inside)  # run cities at positions before each position
        at_anchor = tf.gather(count, anchor, batch_dims=1)
        runs_between = tf.where(pos >= anchor, count - at_anchor, count + length - at_anchor)  # from the anchor on
        to = tf.where(inside, 1 + in_run, length + (pos - anchor) % n - runs_between)
        child = place(x, tf.where(pos == anchor, 0, to))
        crossed = self.crossed(key, rows, genome_spec(inputs[0]))
        if crossed is not None:  # the others are copies of their parent
            child = tf.where(crossed[:, None], child, x)
        return tf.cast(child, inputs[0].dtype)

    def config(self):
        return {**super().config(), "segment": self.segment}
