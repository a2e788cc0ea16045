"""Local search for tours, compiled with the rest of the generation: a memetic GA.

``TwoOpt`` improves each child by 2-opt moves (reverse a segment: two edges out, two
in), ``OrOpt`` by or-opt moves (move one to three consecutive cities elsewhere, kept or
reversed). A move is scored by its length change alone, four (2-opt) or six (or-opt)
gathers from the distance matrix, never by re-measuring the tour, so scoring a batch of
candidate moves per individual costs O(candidates) and applying the chosen ones O(L). Candidates are
random, drawn per individual from the counter-based generator (batched, chunked and
resumed runs stay bit-identical), and by default biased towards promising moves: one
new edge joins a city to one of its nearest neighbours, as 2-opt with neighbour lists
does in classical TSP codes. With ``candidates=None`` every such move is scored, each
round: O(L·neighbours) per tour, and no move near a local optimum is missed by chance.

The distances come from the model's fitness (``evo.fitness.TSP``), handed over by
``Model.compile`` through ``Op.attach``; to call the op directly on tours, attach the
fitness first.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import tensorflow as tf

from course_lib.evo import fusion, rng
from course_lib.evo.ops.permutation import PermutationOp
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import SymbolicTensor
from course_lib.evo.tours import inverse_permutation
from course_lib.evo.validation import whole

# a move is applied when it shortens the tour by more than this share of the longest distance:
# float32 rounding of the four (2-opt) or six (or-opt) distances stays far below it, so no accepted
# move lengthens a tour
TOLERANCE = 1e-6


def two_opt_delta(distances: tf.Tensor, tours: tf.Tensor, p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
    """Length change of reversing positions p+1..q of each tour (p < q, shapes (B, K)).

    The move replaces edges (t[p], t[p+1]) and (t[q], t[q+1]) by (t[p], t[q]) and
    (t[p+1], t[q+1]); ``distances`` is the flat (n * n,) matrix of ``evo.fitness.TSP``.
    """
    n = tours.shape[1]
    a = tf.gather(tours, p, batch_dims=1)
    b = tf.gather(tours, (p + 1) % n, batch_dims=1)
    c = tf.gather(tours, q, batch_dims=1)
    e = tf.gather(tours, (q + 1) % n, batch_dims=1)
    dist = tf.gather(distances, tf.stack([a * n + c, b * n + e, a * n + b, c * n + e]))
    return dist[0] + dist[1] - dist[2] - dist[3]


def reverse_segments(tours: tf.Tensor, p: tf.Tensor, q: tf.Tensor, apply: tf.Tensor) -> tf.Tensor:
    """Reverse positions p+1..q of each tour where ``apply``; (B, M) moves that must not overlap."""
    pos = tf.range(tours.shape[1])[None, :, None]
    p, q = p[:, None, :], q[:, None, :]
    inside = (pos > p) & (pos <= q) & apply[:, None, :]
    # disjoint segments: at most one move covers a position, so the offsets add up
    offset = tf.reduce_sum(tf.where(inside, p + q + 1 - 2 * pos, 0), axis=2)
    return tf.gather(tours, tf.range(tours.shape[1])[None, :] + offset, batch_dims=1)


def best_disjoint(improving: tf.Tensor, overlap: tf.Tensor) -> tf.Tensor:
    """bool (B, K): of K moves per tour, best first, each ``improving`` one unless a better improving one
    ``overlap``s it ((B, K, K), symmetric): the moves kept never overlap, so their length changes add up."""
    k = improving.shape[1]
    better = tf.range(k)[None, :] < tf.range(k)[:, None]  # [m, a]: a before m
    return improving & ~tf.reduce_any(overlap & better[None] & improving[:, None, :], axis=2)


class DistanceOp(PermutationOp, register=False):
    """What the ops that read a tour's distances share: the distances (and, with ``neighbours``, each
    city's nearest cities) taken from the model's fitness (``evo.fitness.TSP``) by ``attach``, and the
    checks that the tours given match them."""

    neighbours: int | None = None

    def __init__(self, name: str | None):
        super().__init__(name)
        self.distances = self.nearest = None
        self.n = 0
        # (the fitness attached, its ``version`` then, the ``neighbours`` its lists were drawn for)
        self.source: tuple[int, int, int | None] | None = None

    def attached(self, fitness) -> bool:
        """Whether the distances and neighbour lists held are ``fitness``'s current ones (not another model's
        fitness, nor cities replaced since by ``TSP.load``) for ``neighbours`` as it is now (a value set after
        ``compile`` draws new lists on the next run)."""
        return self.source == (id(fitness), fitness.version, self.neighbours)

    def attach(self, fitness) -> None:
        """Take the distances from the fitness (``evo.fitness.TSP``), and each city's nearest cities."""
        d = getattr(fitness, "distances", None)
        n = getattr(fitness, "n", None)
        if d is None or n is None:
            raise ValueError(f"{type(self).__name__} needs the distances between cities, from the fitness "
                             f"evo.fitness.TSP(coordinates=...) or TSP(distances=...); got {fitness!r}")
        matrix = np.asarray(d, dtype=np.float64).reshape(n, n)
        if not np.allclose(matrix, matrix.T, rtol=1e-6, atol=0):
            raise ValueError(f"{type(self).__name__} needs symmetric distances (a reversed segment is "
                             "travelled backwards); this TSP's distance matrix is not symmetric")
        self.n = n
        self.distances = tf.constant(matrix.reshape(-1), tf.float32)
        self.tolerance = TOLERANCE * float(matrix.max())
        self.nearest = None
        if self.neighbours is not None:
            k = min(self.neighbours, n - 1)
            order = np.argsort(matrix + np.diag(np.full(n, np.inf)), axis=1, kind="stable")[:, :k]
            self.nearest = tf.constant(order.reshape(-1), tf.int32)
        self.source, self._fitness = (id(fitness), fitness.version, self.neighbours), fitness

    def __call__(self, *inputs, seed: int | None = None):
        """As ``Op.__call__``; concrete tours are checked to be permutations first."""
        for x in inputs:
            if not isinstance(x, SymbolicTensor):
                rows = np.asarray(x)
                if rows.ndim == 2 and not (np.sort(rows, axis=1) == np.arange(rows.shape[1])).all():
                    bad = int(np.argmax((np.sort(rows, axis=1) != np.arange(rows.shape[1])).any(axis=1)))
                    raise ValueError(f"{type(self).__name__} needs each row to be a tour (a permutation of "
                                     f"0..{rows.shape[1] - 1}); row {bad} is not")
        return super().__call__(*inputs, seed=seed)

    def _require_distances(self, length: int) -> None:
        if self.distances is None:
            raise ValueError(f"{type(self).__name__} has no distances: use it in a Model compiled with "
                             "fitness=evo.fitness.TSP(...), or call op.attach(evo.fitness.TSP(...)) "
                             "before calling it on tours")
        if length != self.n:
            raise ValueError(f"{type(self).__name__} has distances for {self.n} cities, but the tours "
                             f"have {length}")
        if not self.attached(self._fitness):
            raise ValueError(f"{type(self).__name__} holds the distances of cities its TSP has replaced since "
                             "(TSP.load), or neighbour lists for another neighbours=; call op.attach(fitness) "
                             "again (evolve does so itself)")


class _LocalSearch(DistanceOp):
    """What both local searches share: distances from the fitness, ``steps`` rounds of ``improve``
    per call, each on ``candidates`` random moves per tour (None: all of them), biased to each
    city's ``neighbours`` nearest cities (None: uniform).

    The rounds are one ``tf.while_loop`` of exactly ``steps`` trips on every target: a round works
    on the tours the round before left, so the loop is essential, and its trip count is static, so
    XLA:GPU runs it on the device without reading a condition back to the host."""

    def __init__(self, steps: int, candidates: int, moves: int, neighbours: int | None, name: str | None):
        super().__init__(name)
        # moves: how many non-overlapping improving moves a round applies
        self.steps, self.candidates, self.moves, self.neighbours = steps, candidates, moves, neighbours

    def validate(self) -> None:
        """Check the parameters as they are now: called at construction and by ``check`` before every run,
        so that a value set in place after ``compile`` is checked too, never silently taken."""
        kind = type(self).__name__
        self.steps = whole("steps", self.steps, 1, kind)
        self.candidates = None if self.candidates is None else whole("candidates", self.candidates, 1, kind)
        self.neighbours = None if self.neighbours is None else whole("neighbours", self.neighbours, 1, kind)
        if self.candidates is None and self.neighbours is None:
            raise ValueError(f"{kind}: candidates=None scores every move near each city, so it needs "
                             "neighbours= (e.g. 8); without neighbour lists give a number of random candidates")
        self.moves = whole("moves", self.moves, 1, kind)
        if self.candidates is not None and self.moves > self.candidates:
            raise ValueError(f"{kind}: moves ({self.moves}) cannot exceed candidates ({self.candidates}); "
                             "it applies the best non-overlapping moves among the candidates")

    def check(self, *specs):
        self.validate()
        return super().check(*specs)

    def _neighbour_count(self) -> int:
        """How many nearest cities each city's list holds (set by attach: candidates=None requires neighbours)."""
        return cast(tf.Tensor, self.nearest).shape[0] // self.n

    def _near(self, tours: tf.Tensor, cities: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
        """(int32 (B, M, K) the K nearest cities of each of ``cities`` (B, M; by default every position's),
        where each sits in the tour): the neighbours every exhaustively scored move joins a city to."""
        k = self._neighbour_count()
        cities = tours if cities is None else cities
        near = tf.gather(self.nearest, cities[:, :, None] * k + tf.range(k)[None, None, :])
        return near, tf.gather(inverse_permutation(tours), near, batch_dims=1)

    def _distance(self, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        """The distances between cities x and y (any matching shapes)."""
        return tf.gather(self.distances, x * self.n + y)

    def _best(self, delta: tf.Tensor, group: int = 1) -> tf.Tensor:
        """int32 (B, moves): the candidates of least length change, best first (ties: the lower index first).

        ``group``: the candidates come in runs of that many from one position (the exhaustive rounds). Then
        only the ``moves`` positions whose best candidate is least are searched, from a top-k over ``moves *
        group`` candidates instead of all of them (48,000 or-opt moves a tour at 1,000 cities). The answer
        is the same: a candidate of the ``moves`` least outside those positions would come before the best
        candidate of one of them, which is no larger than its own position's best, so they would be equal,
        and the tie would go to the lower index, which is that kept position's (a position with an equal
        best is kept before a later one)."""
        b, c = delta.shape
        k = min(self.moves, c)
        if group == 1 or c // group <= k:
            return tf.math.top_k(-delta, k=k, sorted=True).indices
        runs = tf.reshape(delta, (b, c // group, group))
        # the positions kept, in index order so that ties among their candidates break as in the whole row
        # (sorted: top_k then breaks ties among equal minima by the lower position, which the proof needs)
        kept = tf.sort(tf.math.top_k(-tf.reduce_min(runs, axis=2), k=k, sorted=True).indices, axis=1)
        best = tf.math.top_k(-tf.reshape(tf.gather(runs, kept, batch_dims=1), (b, k * group)), k=k,
                             sorted=True).indices
        return tf.gather(kept, best // group, batch_dims=1) * group + best % group

    def improve(self, tours: tf.Tensor, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """One round on int32 tours (B, L): score candidate moves, apply improving ones."""
        raise NotImplementedError

    def _draw(self, key: tf.Tensor, rows: Rows, tours: tf.Tensor, *choices: int) -> tuple[tf.Tensor, ...]:
        """Per candidate: a position i, a position j whose city is near t[i] (uniform without
        neighbours; never i), and one value in [0, c) per further choice c; one draw each.
        Without ``candidates`` (None): every such candidate, the same for each tour."""
        n = tours.shape[1]
        k = n - 1 if self.nearest is None else self.nearest.shape[0] // n
        count = n * k * math.prod(choices)
        if self.candidates is None:
            draw = tf.broadcast_to(tf.range(count)[None, :], (tours.shape[0], count))
            return self._split(draw, tours, k, choices)
        if count > 2**31:
            raise ValueError(f"{type(self).__name__}: {n} cities are too many to draw moves among all pairs; "
                             "give neighbours= (e.g. 8) to draw them among each city's nearest")
        return self._split(rng.integers(key, rows, (self.candidates,), count), tours, k, choices)

    def _split(self, draw: tf.Tensor, tours: tf.Tensor, k: int, choices: tuple[int, ...]) -> tuple[tf.Tensor, ...]:
        n = tours.shape[1]
        values: list = []
        for c in reversed(choices):
            draw, value = draw // c, draw % c
            values.insert(0, value)
        i, rank = draw // k, draw % k
        if self.nearest is None:
            return (i, (i + 1 + rank) % n, *values)
        city = tf.gather(self.nearest, tf.gather(tours, i, batch_dims=1) * k + rank)
        return (i, tf.gather(inverse_permutation(tours), city, batch_dims=1), *values)

    def apply(self, inputs, key, rows):
        tours = tf.cast(rows.take(inputs[0]), tf.int32)
        self._require_distances(tours.shape[1])
        return tf.cast(self.rounds(tours, key, rows), inputs[0].dtype)

    def rounds(self, tours: tf.Tensor, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """``steps`` rounds of ``improve`` on int32 tours, each keyed by its number."""
        def body(s, t):
            return s + 1, self.improve(t, rng.fold_in(key, s), rows)

        _, tours = tf.while_loop(lambda s, _: s < self.steps, body, (tf.constant(0), tours))
        return tours

    def config(self):
        return {"steps": self.steps, "candidates": self.candidates, "neighbours": self.neighbours}


class TwoOpt(_LocalSearch):
    """``steps`` rounds per call: score ``candidates`` random 2-opt moves per tour (None: every
    move that joins a city to one of its nearest), and apply up to ``moves`` of the best improving
    ones, each unless a better improving one overlaps it. No move lengthens a tour.

    ``neighbours``: each candidate joins a city to one of its ``neighbours`` nearest cities
    (None: any two edges, uniformly).

    ``focus`` (with ``candidates=None``): the rounds after the first score only the moves from up to
    ``focus`` watched cities: those whose tour edges a round changed, those whose best scored move improves
    (applied or not), and those watched but not yet scored: don't-look bits in fixed shapes. A move from
    any other city was scored already and found no gain, and nothing next to it has changed since, so it is
    skipped: a tour that is a local optimum but for a few new edges (a child of two local optima, after a
    kick) costs one full round, then rounds ``n / focus`` times cheaper. None: every round scores every
    move.
    """

    def __init__(self, steps: int = 8, candidates: int = 32, moves: int = 4, neighbours: int | None = 8,
                 focus: int | None = None, name: str | None = None):
        super().__init__(steps, candidates, moves, neighbours, name)
        self.focus = focus
        self.validate()

    def validate(self) -> None:
        super().validate()
        self.focus = None if self.focus is None else whole("focus", self.focus, 1, "TwoOpt")
        if self.focus is not None and self.candidates is not None:
            raise ValueError("TwoOpt: focus= narrows the rounds that score every move near each city; it needs "
                             "candidates=None (random candidates are drawn afresh every round)")

    def rounds(self, tours, key, rows):
        """With ``focus``: the first round on every city, then the others on the cities each round watches."""
        if self.focus is None:
            return super().rounds(tours, key, rows)
        tours, watched = self.improve_watched(tours, key, rows)

        def body(s, t, w):
            return (s + 1, *self.improve_watched(t, rng.fold_in(key, s), rows, w))

        _, tours, _ = tf.while_loop(lambda s, *_: s < self.steps, body, (tf.constant(1), tours, watched))
        return tours

    def improve(self, tours, key, rows):
        return self.improve_watched(tours, key, rows)[0]

    def improve_watched(self, tours: tf.Tensor, key: tf.Tensor, rows: Rows,
                        watched: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor | None]:
        """``improve``, and with ``focus`` bool (B, n) by city: the cities the next round watches (``_watch``;
        None without ``focus``). With ``watched`` (and ``focus``), this round scores only the moves from up to
        ``focus`` watched cities."""
        b, n = tours.shape

        def positions(i, j, side):  # side 0: new edge (t[i], t[j]) and the one after both; side 1: before both
            u, v = (i - side) % n, (j - side) % n
            return tf.minimum(u, v), tf.maximum(u, v)

        at: tf.Tensor | None = None  # the positions scored (None: every position)
        every: tf.Tensor | None = None  # the length change of every move scored (exhaustive rounds)
        if self.candidates is None:
            if watched is not None:  # the positions of (up to) ``focus`` watched cities
                on = tf.cast(tf.gather(watched, tours, batch_dims=1), tf.float32)
                at = tf.math.top_k(on, k=min(self.focus, n), sorted=False).indices
            every = self._every_change(tours, at)
            k = self._neighbour_count()
            best = self._best(every, group=2 * k)
            # the position each chosen move was scored from
            origin = best // (2 * k) if at is None else tf.gather(at, best // (2 * k), batch_dims=1)
            p, q = positions(*self._split((origin * k + best // 2 % k) * 2 + best % 2, tours, k, (2,)))
            delta = tf.gather(every, best, batch_dims=1)
        else:
            p, q = positions(*self._draw(key, rows, tours, 2))
            delta = two_opt_delta(self.distances, tours, p, q)
            best = self._best(delta)
            p, q, delta = (tf.gather(x, best, batch_dims=1) for x in (p, q, delta))
        # a move overlaps another when they share an edge or a position
        improving = delta < -self.tolerance
        chosen = best_disjoint(improving, (p[:, :, None] <= q[:, None, :]) & (p[:, None, :] <= q[:, :, None]))
        following = None
        if self.focus is not None:
            following = self._watch(tours, cast(tf.Tensor, every), at, p, q, chosen, watched)
        # computed once, not inside every gather of the reversal (see ``fusion.materialize``)
        p, q, chosen = tf.unstack(fusion.materialize(tf.stack([p, q, tf.cast(chosen, tf.int32)]), key))
        return reverse_segments(tours, p, q, chosen > 0), following

    def _watch(self, tours: tf.Tensor, every: tf.Tensor, at: tf.Tensor | None, p: tf.Tensor, q: tf.Tensor,
               chosen: tf.Tensor, watched: tf.Tensor | None) -> tf.Tensor:
        """bool (B, n) by city: what the next round watches. The four cities at the ends of each applied move
        (their edges changed), every city scored this round whose best move improves (applied or not: a
        better move elsewhere may have taken its place), and the cities watched before that this round did
        not score (beyond ``focus``). A city left out was scored and has no improving move, and no edge next
        to it changed."""
        b, n = tours.shape
        scored = tf.broadcast_to(tf.range(n)[None, :], (b, n)) if at is None else at  # positions (B, M)
        gains = tf.reduce_min(tf.reshape(every, (b, scored.shape[1], -1)), axis=2) < -self.tolerance
        ends = tf.reshape(tf.stack([p, p + 1, q, q + 1], -1) % n, (b, -1))
        positions = tf.concat([ends, scored], 1)
        flags = tf.concat([tf.reshape(tf.tile(chosen[:, :, None], [1, 1, 4]), (b, -1)), gains], 1)
        offset = n * tf.range(b)[:, None]

        def by_city(values, at_positions):  # max of int32 ``values`` per city of the tour positions given
            cities = tf.gather(tours, at_positions, batch_dims=1) + offset
            return tf.reshape(tf.math.unsorted_segment_max(tf.reshape(values, (-1,)), tf.reshape(cities, (-1,)),
                                                           b * n), (b, n)) > 0

        following = by_city(tf.cast(flags, tf.int32), positions)
        if watched is not None:  # carried over: watched, and not scored this round
            following |= watched & ~by_city(tf.ones_like(scored), scored)
        return following

    def _every_change(self, tours: tf.Tensor, at: tf.Tensor | None = None) -> tf.Tensor:
        """float32 (B, C): the length change of every move joining the city at each of positions ``at``
        (B, M; None: every position) to one of its nearest, in ``_draw``'s order (position, neighbour, side).
        As ``two_opt_delta`` but from shared parts: the tour's edges are measured once per position and a
        move's new edges come from the city, its near city and their tour neighbours, so about half the
        gathers."""
        b, n = tours.shape
        dist = self._distance
        edge = dist(tours, tf.roll(tours, -1, axis=1))  # (B, n): the edge from position i to i + 1
        at = tf.broadcast_to(tf.range(n)[None, :], (b, n)) if at is None else at

        def near_at(offset):  # t[at + offset]
            return tf.gather(tours, (at + offset) % n, batch_dims=1)

        city, after, before = near_at(0), near_at(1), near_at(-1)
        near, j = self._near(tours, city)  # (B, M, K): t[j] and j
        joined = dist(city[:, :, None], near)  # the new edge (t[i], t[j]) of either side
        # side 0: edges (t[i], t[i+1]) and (t[j], t[j+1]) out; side 1: (t[i-1], t[i]) and (t[j-1], t[j])
        out = tf.gather(edge, tf.stack([j, (j - 1) % n], -1), batch_dims=1)
        ends = tf.gather(tours, tf.stack([(j + 1) % n, (j - 1) % n], -1), batch_dims=1)
        other = dist(tf.stack([after, before], -1)[:, :, None, :], ends)
        own = tf.gather(edge, tf.stack([at, (at - 1) % n], -1), batch_dims=1)  # (B, M, side)
        delta = joined[..., None] + other - own[:, :, None, :] - out
        return tf.reshape(delta, (b, -1))

    def config(self):
        return {**super().config(), "moves": self.moves, **({"focus": self.focus} if self.focus else {})}


def or_opt_delta(distances: tf.Tensor, tours: tf.Tensor, i: tf.Tensor, length: tf.Tensor, j: tf.Tensor,
                 flip: tf.Tensor) -> tf.Tensor:
    """Length change of moving the ``length`` cities from position i between t[j] and t[j+1]
    (reversed where ``flip``); j must lie outside i-1 .. i+length-1. Six gathers per move."""
    n = tours.shape[1]

    def at(x):
        return tf.gather(tours, x % n, batch_dims=1)

    first, last, before, after = at(i), at(i + length - 1), at(i - 1), at(i + length)
    a, b = at(j), at(j + 1)
    x, y = tf.where(flip > 0, last, first), tf.where(flip > 0, first, last)
    dist = tf.gather(distances, tf.stack([a * n + x, y * n + b, before * n + after,
                                          a * n + b, before * n + first, last * n + after]))
    return dist[0] + dist[1] + dist[2] - dist[3] - dist[4] - dist[5]


def move_segment(tours: tf.Tensor, i: tf.Tensor, length: tf.Tensor, j: tf.Tensor, flip: tf.Tensor,
                 apply: tf.Tensor) -> tf.Tensor:
    """Move the segment (one per tour, shapes (B,)) where ``apply``: counting from i, the cities
    up to t[j] move back by ``length`` and the segment follows them."""
    n = tours.shape[1]
    i, length, j, flip, apply = (x[:, None] for x in (i, length, j, flip, apply))
    r = (tf.range(n)[None, :] - i) % n  # positions counted from the segment's start
    end = (j - i) % n  # where t[j] is, counted the same way
    k = r - (end - length + 1)  # place within the moved segment
    source = tf.where(r <= end - length, r + length, tf.where(flip > 0, length - 1 - k, k))
    index = tf.where(apply & (r <= end), (source + i) % n, tf.range(n)[None, :])
    return tf.gather(tours, index, batch_dims=1)


def swap_blocks(tours: tf.Tensor, lo: tf.Tensor, a: tf.Tensor, b: tf.Tensor, flip_x: tf.Tensor, flip_y: tf.Tensor,
                apply: tf.Tensor) -> tf.Tensor:
    """Where ``apply``, the cities at positions lo .. lo+a+b-1 (counted around the tour), block X (a
    cities) then block Y (b), become Y then X, each reversed where its flip is set; (B, K) moves that must
    not overlap. One gather: at most one move covers a position, so the offsets add up."""
    n = tours.shape[1]
    pos = tf.range(n)[None, :, None]
    lo, a, b, flip_x, flip_y, apply = (x[:, None, :] for x in (lo, a, b, flip_x, flip_y, apply))
    r = (pos - lo) % n  # place within the moved positions
    k = r - b  # place within X, once Y is laid down
    source = tf.where(r < b, a + tf.where(flip_y, b - 1 - r, r), tf.where(flip_x, a - 1 - k, k))
    offset = tf.reduce_sum(tf.where(apply & (r < a + b), (lo + source) % n - pos, 0), axis=2)
    return tf.gather(tours, tf.range(n)[None, :] + offset, batch_dims=1)


class OrOpt(_LocalSearch):
    """``steps`` rounds per call: score ``candidates`` random or-opt moves per tour (move 1 to
    ``segment`` consecutive cities next to a near city; None: every such move) and apply up to ``moves``
    of the best improving ones, each unless a better improving one overlaps it. The segment is kept or
    reversed so that the city drawn at its end becomes the near city's neighbour: the new edge the
    neighbour list points to, as in classical neighbour-list or-opt. The other orientation makes an edge
    the lists do not hold, so scoring it would double the work for moves that rarely help (a move that
    joins the segment's other end to its own near city is scored from that end).

    A move is written the shorter of two ways, both the same tour: the segment forward past the cities
    up to its new neighbour, or those cities back past the segment. Either swaps two adjacent blocks, so
    moves whose blocks (and the edges at their ends) do not overlap are applied at once."""

    def __init__(self, steps: int = 8, candidates: int = 32, segment: int = 3, neighbours: int | None = 8,
                 moves: int = 1, name: str | None = None):
        super().__init__(steps, candidates, moves, neighbours, name)
        self.segment = segment
        self.validate()

    def validate(self) -> None:
        super().validate()
        self.segment = whole("segment", self.segment, 1, type(self).__name__)

    def improve(self, tours, key, rows):
        n = tours.shape[1]
        if n < self.segment + 3:
            return tours
        if self.candidates is None:
            delta = self._every_change(tours)
            best = self._best(delta, group=self._neighbour_count() * self.segment * 4)
            i, j, length, end, side = self._split(best, tours, self._neighbour_count(), (self.segment, 2, 2))
            i, length, j, flip = (i - end * length) % n, length + 1, (j - side) % n, end ^ side
        else:
            # segment i .. i+length-1, or ending at i (end 1); placed after t[j] (side 0) or before it, turned
            # so that t[i] and t[j] become neighbours
            i, j, length, end, side = self._draw(key, rows, tours, self.segment, 2, 2)
            length, flip = length + 1, end ^ side
            i = (i - end * (length - 1)) % n
            j = (j - side) % n
            delta = or_opt_delta(self.distances, tours, i, length, j, flip)
            place = (j - i) % n
            delta = tf.where((place >= length) & (place <= n - 2), delta, np.inf)  # not touching the segment
            best = self._best(delta)
            i, length, j, flip = (tf.gather(x, best, batch_dims=1) for x in (i, length, j, flip))
        delta, place = tf.gather(delta, best, batch_dims=1), (j - i) % n
        # blocks X then Y from position lo become Y then X: X the segment (forward) or the cities between
        # t[j] and the segment (back), whichever moves fewer positions
        forward = place + 1 <= n - place - 1 + length
        lo = tf.where(forward, i, (i + place + 1) % n)
        a = tf.where(forward, length, n - place - 1)
        b = tf.where(forward, place - length + 1, length)
        # a move's span: its blocks and the cities before and after them, whose edges change
        start, span = (lo - 1) % n, a + b + 2
        gap = (start[:, None, :] - start[:, :, None]) % n  # [m, a]: from move m's start to move a's
        overlap = (gap < span[:, :, None]) | ((n - gap) % n < span[:, None, :])
        chosen = best_disjoint(delta < -self.tolerance, overlap)
        flipped = flip > 0
        move = fusion.materialize(tf.stack([lo, a, b, tf.cast(flipped & forward, tf.int32),
                                            tf.cast(flipped & ~forward, tf.int32), tf.cast(chosen, tf.int32)]), key)
        lo, a, b, flip_x, flip_y, apply = tf.unstack(move)
        return swap_blocks(tours, lo, a, b, flip_x > 0, flip_y > 0, apply > 0)

    def _every_change(self, tours: tf.Tensor) -> tf.Tensor:
        """float32 (B, C): the length change of every move near each city, in ``_draw``'s order (position,
        neighbour, length, end, side), +inf where the place touches the segment. As ``or_opt_delta``
        but from parts that many moves share: the segment's removal depends on its position, length and
        end alone, the edge it goes into on the neighbour and side, so they are gathered once each, not
        once per move (about a quarter of the gathers)."""
        b, n = tours.shape
        s, dist = self.segment, self._distance
        lengths = tf.range(1, s + 1)[None, :, None]

        def at(positions):  # the cities at positions (B, n, x, y), or (n, x, y) the same in every tour
            positions = tf.broadcast_to(positions % n, (b, *positions.shape[-3:]))
            return tf.gather(tours, positions, batch_dims=1)

        start = (tf.range(n)[:, None, None] - tf.range(2)[None, None, :] * (lengths - 1)) % n  # (n, S, end)
        first, last, before, after = at(start), at(start + lengths - 1), at(start - 1), at(start + lengths)
        removal = dist(before, after) - dist(before, first) - dist(last, after)  # (B, n, S, end)
        near, j = self._near(tours)  # (B, n, K)
        where = (j[..., None] - tf.range(2)) % n  # the edge's start: j or j - 1 (B, n, K, side)
        a, c = at(where), at(where + 1)  # the edge (a, c) it goes into: (B, n, K, side)
        ac = dist(a, c)[:, :, :, None, None, :]
        a, c = a[:, :, :, None, None, :], c[:, :, :, None, None, :]
        first, last = first[:, :, None, :, :, None], last[:, :, None, :, :, None]  # (B, n, 1, S, end, 1)
        # t[i] (the segment's first city, or its last with end 1) joins its near city t[j] in every move: after
        # t[j] (side 0, the edge (t[j], t[i])) or before it (side 1, (t[i], t[j])), so that distance is gathered
        # once per neighbour; only the segment's other end, joined to the edge's other city, varies with the move
        city = tours[:, :, None]
        joined = tf.stack([dist(near, city), dist(city, near)], -1)[:, :, :, None, None, :]  # (B, n, K, 1, 1, side)
        other_end = tf.where(tf.equal(tf.range(2), 0)[:, None], last, first)  # by end: the end that is not t[i]
        after_near = tf.equal(tf.range(2), 0)[None, :]  # by side
        other = dist(tf.where(after_near, other_end, a), tf.where(after_near, c, other_end))
        # summed in the order of the edges' places (a, x) + (y, c), as or_opt_delta sums them
        delta = tf.where(after_near, joined + other, other + joined) + removal[:, :, None, :, :, None] - ac
        place = (where[:, :, :, None, None, :] - start[None, :, None, :, :, None]) % n
        ok = (place >= tf.reshape(lengths, (1, 1, 1, s, 1, 1))) & (place <= n - 2)
        return tf.reshape(tf.where(ok, delta, np.inf), (b, -1))

    def config(self):
        return {**super().config(), "segment": self.segment, "moves": self.moves}
