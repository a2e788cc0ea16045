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
from course_lib.evo.ops.base import Mating, partner_rows
from course_lib.evo.ops.local_search import positions
from course_lib.evo.ops.permutation import _PermutationOp


class SubtourCrossover(_PermutationOp, Mating):
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
        in_run = tf.gather((positions(mate) - start) % n, x, batch_dims=1)
        inside = in_run < length
        # sort keys over the parent's positions: counted from the city before the run in the mate,
        # which keeps key 0; the run's cities go between it (0) and the next city (1), in the mate's order
        before = tf.gather(mate, (start[:, 0] - 1) % n, batch_dims=1)[:, None]
        anchor = tf.gather(positions(x), before, batch_dims=1)
        rest = tf.cast((tf.range(n)[None, :] - anchor) % n, tf.float32)
        run = 0.25 + 0.5 * tf.cast(in_run, tf.float32) / tf.cast(length, tf.float32)
        child = tf.gather(x, tf.argsort(tf.where(inside, run, rest), axis=1, stable=True), batch_dims=1)
        crossed = self.crossed(key, rows)
        if crossed is not None:  # the others are copies of their parent
            child = tf.where(crossed[:, None], child, x)
        return tf.cast(child, inputs[0].dtype)

    def config(self):
        return {**super().config(), "segment": self.segment}


if __name__ == "__main__":
    from course_lib.evo.op_benchmarks import op_module_main

    raise SystemExit(op_module_main("subtour_crossover"))
