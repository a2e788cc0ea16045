"""Shared-edge crossover: the child keeps every edge its two parents share, and joins the rest greedily.

What two good tours agree on is most likely right: in local optima of one instance most edges are
shared, and an optimal tour holds nearly all of them. The shared edges form paths (fragments) of the
parent; the child walks them whole, and from each fragment's end jumps to the nearest end of a fragment
not yet visited (a single city with no shared edge is a fragment too). So the child holds every shared
edge, and its other edges are short ones chosen by distance, which a local search then polishes: Freisleben
and Merz's distance-preserving crossover, without its rule against the parents' other edges.

The walk is one ``tf.while_loop`` of exactly L trips, vectorised over the tours: per trip the two
shared neighbours of the current city (precomputed per city) and, for the jump, the current city's row of
distances. Fixed shapes throughout, so XLA compiles it on every target.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.evo import fastmath, fusion, rng
from course_lib.evo.ops.base import Mating, genome_spec, partner_rows
from course_lib.evo.ops.local_search import DistanceOp
from course_lib.evo.ops.permutation import inverse_permutation, place


def shared_neighbours(tours: tf.Tensor, mates: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """int32 (B, L) each, indexed by city: the city after it in the tour (``forward``) and the one
    before it (``backward``) where that edge is also in the mate (either direction), else -1."""
    n = tours.shape[1]
    at = inverse_permutation(mates)
    after_in_mate = tf.gather(mates, (at + 1) % n, batch_dims=1)  # by city
    before_in_mate = tf.gather(mates, (at - 1) % n, batch_dims=1)
    following = tf.roll(tours, -1, axis=1)  # by position: the next city of the tour
    shared = ((tf.gather(after_in_mate, tours, batch_dims=1) == following)
              | (tf.gather(before_in_mate, tours, batch_dims=1) == following))  # edge (t[i], t[i+1])
    forward = tf.where(shared, following, -1)
    backward = tf.where(tf.roll(shared, 1, axis=1), tf.roll(tours, 1, axis=1), -1)
    return place(forward, tours), place(backward, tours)


class SharedEdgeCrossover(Mating, DistanceOp):
    """The child: every edge its parent shares with its mate, the fragments they form joined nearest end
    to nearest end, starting at a random fragment's end. With ``probability`` below 1, a child that is not
    crossed is a copy of its parent. Reads the distances of ``evo.fitness.TSP`` (as ``TwoOpt`` does)."""

    def apply(self, inputs, key, rows):
        x = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        b, n = x.shape
        self._require_distances(n)
        forward, backward = shared_neighbours(x, mate)
        end = (forward < 0) | (backward < 0)  # by city: a fragment's end (or a city on no shared edge)
        # the start: the first fragment end at or after a random position of the parent (x[0] when the
        # parents share every edge: then the walk follows the whole tour)
        offset = rng.integers(rng.fold_in(key, 2), rows, (), n)[:, None]
        ahead = tf.where(tf.gather(end, x, batch_dims=1), (tf.range(n)[None, :] - offset) % n, n)
        first = tf.gather(x, fastmath.argmin(ahead, 1), batch_dims=1)
        forward, backward, end, first = fusion.materialize((forward, backward, end, first), key)
        cities = tf.range(n)[None, :]

        def walk(step, city, visited, child):
            visited = visited | (cities == city[:, None])
            child = tf.tensor_scatter_nd_update(child, [[step]], city[None, :])
            ahead_, back = tf.gather(forward, city, batch_dims=1), tf.gather(backward, city, batch_dims=1)
            ahead_free = (ahead_ >= 0) & ~tf.gather(visited, tf.maximum(ahead_, 0), batch_dims=1)
            back_free = (back >= 0) & ~tf.gather(visited, tf.maximum(back, 0), batch_dims=1)
            row = tf.gather(self.distances, city[:, None] * n + cities)
            jump = fastmath.argmin(tf.where(end & ~visited, row, np.inf), 1)
            return step + 1, tf.where(ahead_free, ahead_, tf.where(back_free, back, jump)), visited, child

        start = (tf.constant(0), first, tf.zeros((b, n), tf.bool), tf.zeros((n, b), tf.int32))
        child = tf.transpose(tf.while_loop(lambda step, *_: step < n, walk, start)[3])
        crossed = self.crossed(key, rows, genome_spec(inputs[0]))
        if crossed is not None:  # the others are copies of their parent
            child = tf.where(crossed[:, None], child, x)
        return tf.cast(child, inputs[0].dtype)
