"""Edge assembly crossover (EAX, Nagata and Kobayashi, "A powerful genetic algorithm using edge assembly
crossover for the traveling salesman problem", INFORMS Journal on Computing 25(2), 2013), one AB-cycle per
child: the child is its parent with one region of its mate's edges swapped in.

Take the edges each tour holds and the other does not. At every city as many of them come from the
parent as from the mate, so they fall into AB-cycles: closed walks that take a parent edge, then a mate
edge, in turn. Taking a cycle's parent edges out of the parent and putting its mate edges in leaves every
city with two edges again: the parent, changed only where the cycle runs, in the mate's way there. That
may close off subtours; each is joined to its neighbour by the cheapest exchange of one edge of each for
two edges between them (a 2-opt move across two cycles), among links to each city's ``neighbours``
nearest, the smallest subtour first. Two local optima of one instance differ in a few regions; a child
takes one of them whole, keeping the rest of its parent, which is what lets a GA combine deep optima that
a shared-edge child, joined by short new edges everywhere the parents differ, loses.

Vectorised over the tours in fixed shapes, as ``SharedEdgeCrossover``: edges by city (each city's two
neighbours in each tour), the cycle found by one walk from a random city (one ``tf.while_loop`` trip per
two edges, a random choice where two edges are free), the parent cut into paths where its edges leave,
and the paths walked end to end (one trip per path) to number the subtours and, after the joins (one
trip per join), to lay out the child. The loops' trip counts depend on the tours: on the GPU target
each carries its bound (``fusion.while_loop``).
"""

from __future__ import annotations

from typing import cast

import numpy as np
import tensorflow as tf

from course_lib.evo import fastmath, fusion, rng
from course_lib.evo.ops.base import Mating, genome_spec, partner_rows
from course_lib.evo.ops.edge_crossover import lay_out, paths
from course_lib.evo.ops.local_search import DistanceOp
from course_lib.evo.tours import place


def neighbours_by_city(tours: tf.Tensor) -> tf.Tensor:
    """int32 (B, L, 2): each city's successor and predecessor in each tour."""
    return tf.stack([place(tf.roll(tours, -1, axis=1), tours), place(tf.roll(tours, 1, axis=1), tours)], axis=2)


def _at(table: tf.Tensor, city: tf.Tensor, slot: tf.Tensor | int) -> tf.Tensor:
    """``table[r, city[r], slot[r]]`` for each row r of a (B, L, 2) table."""
    b = table.shape[0]
    return tf.gather_nd(table, tf.stack([tf.range(b), city, tf.broadcast_to(slot, [b])], axis=1))


def ab_cycle(parent: tf.Tensor, mate: tf.Tensor, key: tf.Tensor, rows) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """One AB-cycle per pair of tours given as ``neighbours_by_city``: a walk from a random city along
    edges one tour holds and the other does not, the parent's and the mate's in turn, each edge taken once,
    until it comes back to a city it left by the same kind of edge. Returns the walk (int32 (2L + 2, B):
    cities) and (B,) ``start`` and ``stop``: the cycle is walk[start] .. walk[stop] (the same city), its
    edges (walk[i], walk[i + 1]) the parent's for even i and the mate's for odd i. start = stop where the
    two are one tour."""
    b, n, _ = parent.shape
    tours = (parent, mate)
    free = [tf.reduce_all(own[..., :, None] != other[..., None, :], axis=-1) for own, other in ((parent, mate),
                                                                                                (mate, parent))]
    has = tf.reduce_any(free[0], axis=2)
    offset = rng.integers(rng.fold_in(key, 1), rows, (), n)[:, None]
    first = fastmath.argmin(tf.where(has, (tf.range(n)[None, :] - offset) % n, n), 1)
    steps = 2 * n + 2
    coins = rng.bits(rng.fold_in(key, 2), rows, ((steps + 31) // 32,))  # where two edges are free: which
    never = -tf.ones((b, n), tf.int32)

    def half(t, p, cur, free, seen, walk, done, start, stop):
        """Step t at city ``cur``: leave by a free edge of tour p (0: parent, 1: mate), unless ``cur`` was
        left by one before: then the walk from there is the cycle."""
        closes = ~done & (tf.gather(seen[p], cur, batch_dims=1) >= 0)
        start = tf.where(closes, tf.gather(seen[p], cur, batch_dims=1), start)
        stop, done = tf.where(closes, t, stop), done | closes
        walk = tf.tensor_scatter_nd_update(walk, [[t]], cur[None, :])
        go = ~done
        here = tf.stack([tf.range(b), cur], 1)
        seen = list(seen)
        seen[p] = tf.tensor_scatter_nd_update(seen[p], here, tf.where(go, t, tf.gather_nd(seen[p], here)))
        open_ = tf.gather(free[p], cur, batch_dims=1)  # (B, 2)
        coin = tf.cast(tf.bitwise.right_shift(coins[:, t // 32], tf.cast(t % 32, tf.uint32)) & 1, tf.int32)
        slot = tf.where(open_[:, 0] & open_[:, 1], coin, tf.where(open_[:, 0], 0, 1))
        nxt = _at(tours[p], cur, slot)
        # the edge leaves both its ends' free lists: cur's ``slot``, nxt's other (succ of one is pred of the other)
        ends = tf.stack([tf.stack([tf.range(b), cur, slot], 1), tf.stack([tf.range(b), nxt, 1 - slot], 1)], 0)
        ends = tf.reshape(ends, (2 * b, 3))
        free = list(free)
        free[p] = tf.tensor_scatter_nd_update(free[p], ends, tf.tile(~go, [2]) & tf.gather_nd(free[p], ends))
        return seen, free, walk, done, start, stop, tf.where(go, nxt, cur)

    def trip(t, cur, free0, free1, seen0, seen1, walk, done, start, stop):
        seen, free = (seen0, seen1), (free0, free1)
        for p in (0, 1):
            seen, free, walk, done, start, stop, cur = half(t + p, p, cur, free, seen, walk, done, start, stop)
        return t + 2, cur, *free, *seen, walk, done, start, stop

    begin = (tf.constant(0), first, free[0], free[1], never, never, tf.zeros((steps, b), tf.int32),
             ~tf.reduce_any(has, axis=1), tf.zeros([b], tf.int32), tf.zeros([b], tf.int32))
    out = fusion.while_loop(lambda t, cur, *rest: tf.reduce_any(~rest[5]) & (t < steps - 1), trip, begin,
                            bound=n + 1)
    return out[6], out[8], out[9]


def swap_in(parent: tf.Tensor, mate: tf.Tensor, walk: tf.Tensor, start: tf.Tensor, stop: tf.Tensor) -> tf.Tensor:
    """int32 (B, L, 2): each city's two neighbours once the cycle's parent edges are taken out of the parent
    and its mate edges put in (tours by city, the cycle as ``ab_cycle`` returns it). Every city of the
    cycle loses as many parent edges as it gains mate edges, so each keeps two."""
    b = parent.shape[0]
    step = tf.range(walk.shape[0] - 1)[:, None]
    inside = (step >= start[None, :]) & (step < stop[None, :])  # (T - 1, B)
    u, w = tf.reshape(walk[:-1], [-1]), tf.reshape(walk[1:], [-1])
    row = tf.reshape(tf.broadcast_to(tf.range(b)[None, :], inside.shape), [-1])
    touched = []
    for p, tour in enumerate((parent, mate)):
        mine = tf.reshape(tf.cast(inside & (step % 2 == p), tf.int32), [-1])
        slot = tf.where(tf.gather_nd(tour, tf.stack([row, u, tf.zeros_like(u)], 1)) == w, 0, 1)
        ends = tf.concat([tf.stack([row, u, slot], 1), tf.stack([row, w, 1 - slot], 1)], 0)
        touched.append(tf.tensor_scatter_nd_max(tf.zeros(tour.shape, tf.int32), ends, tf.tile(mine, [2])) > 0)
    # of the four candidates (the parent's two, the mate's two) exactly two are the city's now
    candidates = tf.concat([parent, mate], axis=2)
    holds = tf.concat([~touched[0], touched[1]], axis=2)
    first = fastmath.first_index(holds, 2)
    last = 3 - fastmath.first_index(tf.reverse(holds, [2]), 2)
    return tf.stack([tf.gather(candidates, first, batch_dims=2), tf.gather(candidates, last, batch_dims=2)], 2)


def walk_paths(joined: tf.Tensor, parent: tf.Tensor, tours: tf.Tensor) -> tuple[tf.Tensor, ...]:
    """The parent ``tours`` cut where ``joined`` (neighbours by city, each city's two) drops the parent's
    edges (``parent``, by city), and the paths walked end to end along ``joined``'s other edges, a subtour
    after another. Returns ``paths``' by-city and by-path tensors and count, the walk's order (B, L) and
    whether each path was entered at its head, and each path's subtour (B, L, by path) and how many (B,)."""
    b, n = tours.shape
    kept = tf.reduce_any(joined == parent[..., :1], axis=2)  # by city: its edge to its parent successor stays
    head = ~tf.roll(tf.gather(kept, tours, batch_dims=1), 1, axis=1)
    fragment, along, head_city, tail_city, length, count = paths(tours, head)
    ids = tf.range(n)[None, :]

    def trip(i, seg, enter, came, visited, subtour, label, order, forward):
        live = i < count
        ahead = enter == tf.gather(head_city, seg, batch_dims=1)
        out = tf.where(ahead, tf.gather(tail_city, seg, batch_dims=1), tf.gather(head_city, seg, batch_dims=1))
        # the way on from ``out``: its edge not inside the path (a one-city path: the edge not come by)
        inward = _at(parent, out, tf.where(ahead, 1, 0))
        barred = tf.where(tf.gather(length, seg, batch_dims=1) > 1, inward, came)
        first_ = _at(joined, out, 0)
        nxt = tf.where(first_ != barred, first_, _at(joined, out, 1))
        this = (ids == seg[:, None]) & live[:, None]
        visited, label = visited | this, tf.where(this, subtour[:, None], label)
        order = tf.tensor_scatter_nd_update(order, [[i]], seg[None, :])
        forward = tf.tensor_scatter_nd_update(forward, [[i]], ahead[None, :])
        closes = tf.gather(visited, tf.gather(fragment, nxt, batch_dims=1), batch_dims=1)
        fresh = tf.minimum(fastmath.first_index(~visited & (ids < count[:, None]), 1), n - 1)
        seg = tf.where(closes, fresh, tf.gather(fragment, nxt, batch_dims=1))
        enter = tf.where(closes, tf.gather(head_city, fresh, batch_dims=1), nxt)
        return (i + 1, seg, enter, tf.where(closes, -1, out), visited, subtour + tf.cast(closes & live, tf.int32),
                label, order, forward)

    begin = (tf.constant(0), tf.zeros([b], tf.int32), head_city[:, 0], -tf.ones([b], tf.int32),
             tf.zeros((b, n), tf.bool), tf.zeros([b], tf.int32), tf.zeros((b, n), tf.int32),
             tf.zeros((n, b), tf.int32), tf.zeros((n, b), tf.bool))
    out = fusion.while_loop(lambda i, *_: i < tf.reduce_max(count), trip, begin, bound=n)
    return (fragment, along, length, count, tf.transpose(out[7]), tf.transpose(out[8]), out[6], out[5])


class EdgeAssemblyCrossover(Mating, DistanceOp):
    """The child: its parent with one AB-cycle (a closed walk along edges the parent holds and its mate
    does not, and the mate's, in turn) swapped to the mate's edges, and the subtours that leaves joined by
    the cheapest two-edge exchanges among links to each city's ``neighbours`` (8) nearest. With
    ``probability`` below 1, a child that is not crossed is a copy of its parent. Reads the distances of
    ``evo.fitness.TSP`` (as ``TwoOpt`` does)."""

    neighbours = 8

    def apply(self, inputs, key, rows):
        x = tf.cast(rows.take(inputs[0]), tf.int32)
        mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
        self._require_distances(x.shape[1])
        parent, other = neighbours_by_city(x), neighbours_by_city(mate)
        walk, start, stop = ab_cycle(parent, other, rng.fold_in(key, 2), rows)
        joined = self.join(swap_in(parent, other, walk, start, stop), parent, x)
        fragment, along, length, count, order, forward, _, _ = walk_paths(joined, parent, x)
        child = lay_out(order, forward, fragment, along, length, count)
        crossed = self.crossed(key, rows, genome_spec(inputs[0]))
        if crossed is not None:  # the others are copies of their parent
            child = tf.where(crossed[:, None], child, x)
        return tf.cast(child, inputs[0].dtype)

    def join(self, joined: tf.Tensor, parent: tf.Tensor, tours: tf.Tensor) -> tf.Tensor:
        """Neighbours by city of one tour: the subtours of ``joined`` merged, the smallest first, each into
        another by the exchange of an edge (c, c') of it and (d, d') of the other for (c, d) and (c', d')
        that adds least, d among c's nearest (and, in case none of those lies outside it, the city nearest
        to the subtour's first city outside it)."""
        b, n, _ = joined.shape
        fragment, *_, by_path, subtours = walk_paths(joined, parent, tours)
        nearest = cast(tf.Tensor, self.nearest)
        k = nearest.shape[0] // n
        near = tf.reshape(nearest, (n, k))
        cities, batch = tf.range(n), tf.range(b)
        spread = tf.broadcast_to(near[None], (b, n, k))

        def dist(x, y):
            return tf.gather(self.distances, x * n + y)

        def trip(joined, subtour, left):
            size = tf.math.unsorted_segment_sum(tf.ones([b * n], tf.int32),
                                                tf.reshape(subtour + n * batch[:, None], [-1]), b * n)
            smallest = fastmath.argmin(tf.where(tf.reshape(size, (b, n)) > 0, tf.reshape(size, (b, n)), n + 1), 1)
            inside = subtour == smallest[:, None]
            # every link c -> d from a city of the smallest subtour to a near city outside it: (B, n, k, 2, 2)
            # over c's neighbour c' and d's neighbour d'
            near_next = tf.gather(joined, spread, batch_dims=1)
            cost = (dist(cities[:, None], near)[None, :, :, None, None]
                    + dist(joined[:, :, None, :, None], near_next[:, :, :, None, :])
                    - dist(cities[None, :, None], joined)[:, :, None, :, None]
                    - dist(near[None, :, :, None], near_next)[:, :, :, None, :])
            links = inside[:, :, None] & ~tf.gather(inside, spread, batch_dims=1)
            cost = tf.reshape(tf.where(links[..., None, None], cost, np.inf), (b, n * k * 4))
            # the fallback link: the subtour's first city to the nearest city outside
            c0 = fastmath.first_index(inside, 1)
            d0 = fastmath.argmin(tf.where(inside, np.inf, dist(c0[:, None], cities[None, :])), 1)
            c0_next, d0_next = tf.gather(joined, c0, batch_dims=1), tf.gather(joined, d0, batch_dims=1)
            cost0 = (dist(c0, d0)[:, None, None] + dist(c0_next[:, :, None], d0_next[:, None, :])
                     - dist(c0[:, None], c0_next)[:, :, None] - dist(d0[:, None], d0_next)[:, None, :])
            best = fastmath.argmin(tf.concat([cost, tf.reshape(cost0, (b, 4))], 1), 1)
            listed, tail = best < n * k * 4, best - n * k * 4
            c = tf.where(listed, best // (4 * k), c0)
            d = tf.where(listed, tf.gather(nearest, tf.minimum(best, n * k * 4 - 1) // 4), d0)
            s, s2 = tf.where(listed, best // 2 % 2, tail // 2), tf.where(listed, best % 2, tail % 2)
            c_next, d_next = _at(joined, c, s), _at(joined, d, s2)
            ends = tf.concat([tf.stack([batch, x, slot], 1) for x, slot in
                              ((c, s), (c_next, tf.where(_at(joined, c_next, 0) == c, 0, 1)),
                               (d, s2), (d_next, tf.where(_at(joined, d_next, 0) == d, 0, 1)))], 0)
            active = left > 1
            values = tf.where(tf.tile(active, [4]), tf.concat([d, d_next, c, c_next], 0), tf.gather_nd(joined, ends))
            joined = tf.tensor_scatter_nd_update(joined, ends, values)
            subtour = tf.where(active[:, None] & inside, tf.gather(subtour, d, batch_dims=1)[:, None], subtour)
            return joined, subtour, left - tf.cast(active, tf.int32)

        start = (joined, tf.gather(by_path, fragment, batch_dims=1), subtours)
        return fusion.while_loop(lambda *v: tf.reduce_any(v[2] > 1), trip, start, bound=n)[0]
