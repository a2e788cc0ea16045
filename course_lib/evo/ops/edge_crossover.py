"""Shared-edge crossover: the child keeps every edge its two parents share, and joins the rest greedily.

What two good tours agree on is most likely right: in local optima of one instance most edges are
shared, and an optimal tour holds nearly all of them. The shared edges form paths (fragments) of the
parent; the child walks them whole, and from each fragment's end jumps to the nearest end of a fragment
not yet visited (a single city with no shared edge is a fragment too). So the child holds every shared
edge, and its other edges are short ones chosen by distance, which a local search then polishes: Freisleben
and Merz's distance-preserving crossover, without its rule against the parents' other edges.

The walk goes fragment by fragment: one ``tf.while_loop`` trip per fragment (entered at one end, left at
the other), vectorised over the tours, each reading the exit city's row of distances; the child is then
laid out in one scatter. Parents that share most edges (local optima of one instance) form few fragments,
so the walk makes far fewer trips than there are cities. Fixed shapes throughout, so XLA compiles it on
every target; the GPU target runs L trips (a static count, see ``fusion``), the extra ones change nothing.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.evo import fastmath, fusion, rng
from course_lib.evo.ops.base import Mating, genome_spec, partner_rows
from course_lib.evo.ops.local_search import DistanceOp
from course_lib.evo.tours import inverse_permutation, place


def shared_edges(tours: tf.Tensor, mates: tf.Tensor) -> tf.Tensor:
    """bool (B, L) by position: whether the edge (t[i], t[i+1]) of each tour is also in its mate (either direction)."""
    n = tours.shape[1]
    in_mate = tf.gather(inverse_permutation(mates), tours, batch_dims=1)  # where t[i] sits in the mate
    following = tf.roll(tours, -1, axis=1)
    return ((tf.gather(mates, (in_mate + 1) % n, batch_dims=1) == following)
            | (tf.gather(mates, (in_mate - 1) % n, batch_dims=1) == following))


def fragments(tours: tf.Tensor, mates: tf.Tensor) -> tuple[tf.Tensor, ...]:
    """The paths the edges shared with the mate cut each tour into, numbered in the tour's order from the
    first one's head. By city (B, L): its fragment and its place along it from the head; by fragment
    (B, L, past the count unused): head city, tail city, length; and (B,) how many fragments. A tour that
    shares every edge is one fragment from its first city."""
    b, n = tours.shape
    head = ~tf.roll(shared_edges(tours, mates), 1, axis=1)  # the edge into t[i] is not shared
    head = head | ((tf.range(n)[None, :] == 0) & ~tf.reduce_any(head, axis=1, keepdims=True))
    from_first = (fastmath.first_index(head, 1)[:, None] + tf.range(n)[None, :]) % n  # positions from the first head
    rotated = tf.gather(tours, from_first, batch_dims=1)
    fragment = tf.cumsum(tf.cast(tf.gather(head, from_first, batch_dims=1), tf.int32), axis=1) - 1
    segments = tf.reshape(fragment + n * tf.range(b)[:, None], (-1,))
    length = tf.reshape(tf.math.unsorted_segment_sum(tf.ones([b * n], tf.int32), segments, b * n), (b, n))
    start = tf.cumsum(length, axis=1, exclusive=True)
    along = tf.range(n)[None, :] - tf.gather(start, fragment, batch_dims=1)
    ends = tf.gather(rotated, tf.minimum(tf.stack([start, start + length - 1], -1), n - 1), batch_dims=1)
    return (place(fragment, rotated), place(along, rotated), ends[..., 0], ends[..., 1], length,
            fragment[:, -1] + 1)


class SharedEdgeCrossover(Mating, DistanceOp):
    """The child: every edge its parent shares with its mate, the fragments they form joined nearest end
    to nearest end, starting at a random fragment's end. With ``probability`` below 1, a child that is not
    crossed is a copy of its parent. Reads the distances of ``evo.fitness.TSP`` (as ``TwoOpt`` does)."""

    def apply(self, inputs, key, rows):
        x = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        b, n = x.shape
        self._require_distances(n)
        fragment, along, head, tail, length, count = fragments(x, mate)
        end = (along == 0) | (along == tf.gather(length, fragment, batch_dims=1) - 1)  # by city
        # the start: the first fragment end at or after a random position of the parent (x[0] when the
        # parents share every edge: then the walk follows the whole tour)
        offset = rng.integers(rng.fold_in(key, 2), rows, (), n)[:, None]
        ahead = tf.where(tf.gather(end & (count[:, None] > 1), x, batch_dims=1), (tf.range(n)[None, :] - offset) % n, n)
        first = tf.gather(x, fastmath.argmin(ahead, 1), batch_dims=1)
        fragment, along, head, tail, end, first = fusion.materialize((fragment, along, head, tail, end, first), key)
        cities = tf.range(n)[None, :]

        def walk(step, city, visited, order, forward):
            piece = tf.gather(fragment, city, batch_dims=1)
            ahead_ = tf.gather(along, city, batch_dims=1) == 0  # entered at its head
            out = tf.where(ahead_, tf.gather(tail, piece, batch_dims=1), tf.gather(head, piece, batch_dims=1))
            visited = visited | (fragment == piece[:, None])
            order = tf.tensor_scatter_nd_update(order, [[step]], piece[None, :])
            forward = tf.tensor_scatter_nd_update(forward, [[step]], ahead_[None, :])
            row = tf.gather(self.distances, out[:, None] * n + cities)
            return step + 1, fastmath.argmin(tf.where(end & ~visited, row, np.inf), 1), visited, order, forward

        # one trip per fragment: as many as the most cut tour holds, or L where a loop's trip count must be
        # static (the GPU target, see ``fusion``)
        trips = n if fusion.target() == "gpu" else tf.reduce_max(count)
        start = (tf.constant(0), first, tf.zeros((b, n), tf.bool), tf.zeros((n, b), tf.int32),
                 tf.zeros((n, b), tf.bool))
        _, _, _, order, forward = tf.while_loop(lambda step, *_: step < trips, walk, start)
        child = self.lay_out(tf.transpose(order), tf.transpose(forward), fragment, along, length, count)
        crossed = self.crossed(key, rows, genome_spec(inputs[0]))
        if crossed is not None:  # the others are copies of their parent
            child = tf.where(crossed[:, None], child, x)
        return tf.cast(child, inputs[0].dtype)

    @staticmethod
    def lay_out(order, forward, fragment, along, length, count):
        """The child tour: fragments in walk ``order`` (B, L; the first ``count`` entries of each row), each
        from its head where ``forward``, else from its tail."""
        b, n = order.shape
        walked = tf.range(n)[None, :] < count[:, None]
        # by fragment (a slot past the last for the entries no walk made): where it starts, which way
        slot = tf.reshape(tf.where(walked, order, n) + (n + 1) * tf.range(b)[:, None], (-1,))

        def by_fragment(values):
            return tf.reshape(tf.math.unsorted_segment_sum(tf.reshape(values, (-1,)), slot, b * (n + 1)), (b, n + 1))

        begins = by_fragment(tf.cumsum(tf.where(walked, tf.gather(length, order, batch_dims=1), 0), axis=1,
                                       exclusive=True))
        ahead = by_fragment(tf.cast(forward & walked, tf.int32))
        begin, ahead = (tf.gather(x, fragment, batch_dims=1) for x in (begins, ahead))
        position = begin + tf.where(ahead > 0, along, tf.gather(length, fragment, batch_dims=1) - 1 - along)
        return place(tf.broadcast_to(tf.range(n), (b, n)), position)
