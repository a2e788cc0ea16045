"""Partition crossover: where the two parents differ in a stretch of the same cities between the same
two cities, the child takes the shorter one.

Two local optima of one instance agree on most edges and differ in small regions. Laid side by side from
one city they share, in the same direction, the parent and its mate cut into blocks: a block ends at a
position where both tours hold the same city and have visited the same cities so far. Within a block they
go from the same city to the same city through the same cities, so either way through it can be put in
the tour without touching the rest. The child takes the shorter way through every block, so it is never
longer than its parent and holds every better stretch its mate has: the best of 2^k children where k
blocks differ. This is Whitley, Hains and Howe's partition crossover (GPX, "Tunneling between optima",
GECCO 2009) for the regions each parent enters once and leaves once in this alignment; regions the two
tours pass through in several pieces merge into a larger block, or into the rest of the tour.

Everything is by position and vectorised over the tours, O(L log L) per child at most: a block ends where
the running maximum of the mate's positions equals the position (a doubling scan), and each block's two
lengths are segment sums of edge lengths, never long prefix sums that would round.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import fastmath, rng
from course_lib.evo.ops.base import Mating, genome_spec, partner_rows
from course_lib.evo.ops.edge_crossover import shared_edges
from course_lib.evo.ops.local_search import DistanceOp
from course_lib.evo.tours import inverse_permutation


def running_max(x: tf.Tensor) -> tf.Tensor:
    """(B, L) int32: the maximum of each row up to and including each position, in log2(L) doubling steps."""
    n, step = x.shape[1], 1
    while step < n:
        x = tf.maximum(x, tf.pad(x[:, :-step], [[0, 0], [step, 0]], constant_values=-1))
        step *= 2
    return x


class PartitionCrossover(Mating, DistanceOp):
    """The child: its parent with each block where it differs from its mate (the same cities between the
    same two cities, in both) gone through the mate's way where that is shorter. With ``probability``
    below 1, a child that is not crossed is a copy of its parent. Reads the distances of
    ``evo.fitness.TSP`` (as ``TwoOpt`` does)."""

    def apply(self, inputs, key, rows):
        parent = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        b, n = parent.shape
        self._require_distances(n)
        shared = shared_edges(parent, mate)
        # both tours laid out from a city whose edge from the city before is shared (parents that share
        # no edge have no such city, and no block to swap: the child is the parent)
        positions = tf.range(n)[None, :]
        start = fastmath.first_index(tf.roll(shared, 1, axis=1), 1)[:, None] % n
        x = tf.gather(parent, (start + positions) % n, batch_dims=1)
        in_mate = inverse_permutation(mate)
        origin = tf.gather(in_mate, x[:, :1], batch_dims=1)
        way = tf.where((origin - tf.gather(in_mate, x[:, -1:], batch_dims=1)) % n == 1, 1, -1)
        m = tf.gather(mate, (origin + way * positions) % n, batch_dims=1)  # m[0] = x[0], m[-1] = x[-1]
        seen_alike = running_max((way * (tf.gather(in_mate, x, batch_dims=1) - origin)) % n) == positions
        ends = seen_alike & (x == m)
        block = tf.cumsum(tf.cast(ends, tf.int32), axis=1, exclusive=True)
        # each block's way in from the city before it: its length in the parent less in the mate
        saved = tf.concat([tf.zeros((b, 1)), self._steps(x) - self._steps(m)], axis=1)
        segments = tf.reshape(block + n * tf.range(b)[:, None], (-1,))
        by_block = tf.reshape(tf.math.unsorted_segment_sum(tf.reshape(saved, (-1,)), segments, b * n), (b, n))
        shorter = (tf.gather(by_block, block, batch_dims=1) > self.tolerance) & tf.reduce_any(shared, 1,
                                                                                              keepdims=True)
        child = tf.gather(tf.where(shorter, m, x), (positions - start) % n, batch_dims=1)  # the parent's start
        crossed = self.crossed(key, rows, genome_spec(inputs[0]))
        if crossed is not None:  # the others are copies of their parent
            child = tf.where(crossed[:, None], child, parent)
        return tf.cast(child, inputs[0].dtype)

    def _steps(self, tours: tf.Tensor) -> tf.Tensor:
        """(B, L - 1): the length of the edge (t[i - 1], t[i]) of each tour, for i = 1 .. L - 1."""
        return tf.gather(self.distances, tours[:, :-1] * self.n + tours[:, 1:])
