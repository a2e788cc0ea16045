"""NSGA-III's survivors as one tensor program: reference directions, normalization, niching.

Deb and Jain (2014) keep NSGA-II's non-dominated fronts but replace crowding distance, which
stops discriminating once almost every solution is non-dominated (four objectives and more),
by a set of reference directions spread over the unit simplex. Of a pool of P rows, ``n``
survive:

1. fronts by Deb's rules (``pareto.ranks`` with ``until=n``): fronts 0..l-1 are kept whole and
   front l, the one that overflows ``n``, is cut;
2. normalization after Blank, Deb and Roy (2019), with a state carried from one generation to
   the next (``initial_state``, ``normalize``): over the pool's feasible rows (all rows when none
   is), the ideal point (the least value per objective so far) is subtracted; the extreme point
   per axis (least achievement scalarizing function) is chosen from the previous extreme points and
   the first front; the intercepts of their hyperplane, capped by the worst values so far, scale
   each objective; when the hyperplane is degenerate (extreme points that do not span it,
   intercepts not above ``INTERCEPT_FLOOR`` or not finite) the first front's worst values do
   instead, and the pool's worst where a range is still that small;
3. association: each row goes to the direction at the least perpendicular distance from it;
4. niching: a direction's niche count is how many kept rows are associated with it. The cut
   front's rows are taken direction by direction, least crowded first: a direction with no
   kept row takes its closest candidate first, any other candidate in random order.

Deb and Jain describe step 4 as a loop of at most ``n`` picks. Here it is one sort: candidate k
(0-based) in a direction's queue (the closest first when the niche is empty, then random) gets
the level ``niche count + k``; the loop takes every candidate of level L, in random order across
directions, before any of level L + 1, so sorting the candidates by (level, a random key) and
taking the first ones gives the same picks with the same random keys, in O(P log P) and no
loop. The random keys are counter-based words of the engine's key for each pool row, so a run
is the same batched, resumed or replicated.

Optionally (``survivors_and_state(eliminate_duplicates=True)``) a row equal to an earlier one
counts as infeasible at +inf before the fronts, so copies survive only when needed to fill ``n``
(``NSGA3(eliminate_duplicates=True)`` also draws a child that copies a genome again before it is scored).

Cost: the dominance fronts as in NSGA-II (O(M P²)), the (P, H) distances to H directions
(O(M P H)), a few sorts of P rows; (P + M) x M work for the extreme points, M x M for the
hyperplane; duplicates, when eliminated, one more sort of P rows (``distinct.repeated``).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from course_lib.evo import distinct, fastmath, pareto, rng
from course_lib.evo.rng import Rows

# the achievement scalarizing function's weight off its axis (Deb and Jain's 1e-6)
ASF_EPSILON = 1e-6
# intercepts this small or smaller (in translated units) count as a degenerate hyperplane, ranges as too small
INTERCEPT_FLOOR = 1e-6
# extreme-point candidates this close to the ideal point on an axis count as on it (Blank, Deb and Roy's 1e-3)
EXTREME_SNAP = 1e-3
# the scale of an objective whose range is 0 (every row has the same value)
ZERO_RANGE = 1e-12
# projections onto directions this close (relative to the point's norm) count as a tie, won by the first direction
TIE = 1e-6


def das_dennis(objectives: int, partitions: int) -> np.ndarray:
    """float64 (C(partitions + M - 1, M - 1), M): every point of the unit simplex whose coordinates are
    multiples of 1 / ``partitions`` (Das and Dennis 1998), in lexicographic order."""
    if objectives < 1 or partitions < 0:
        raise ValueError(f"Das-Dennis points need objectives >= 1 and partitions >= 0, got {objectives}, {partitions}")
    if objectives == 1:
        return np.ones((1, 1))
    rows = []
    # stars and bars: M - 1 bars among partitions + M - 1 places
    for bars in itertools.combinations(range(partitions + objectives - 1), objectives - 1):
        edges = (-1, *bars, partitions + objectives - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(objectives)])
    return np.asarray(rows, np.float64)[::-1] / partitions


def reference_directions(objectives: int, partitions) -> np.ndarray:
    """float64 (H, M) reference directions on the unit simplex.

    ``partitions``: an int p for one layer of Das-Dennis points (H = C(p + M - 1, M - 1)), or a pair
    (p1, p2) for two layers: the boundary layer from p1 and an inside layer from p2 shrunk halfway to
    the centre (w / 2 + 1 / (2 M)), as Deb and Jain use for many objectives, where a single layer
    small enough to afford has no interior points (p < M).
    """
    layers = tuple(partitions) if isinstance(partitions, (tuple, list)) else (partitions,)
    if not 1 <= len(layers) <= 2 or any(isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1
                                        for p in layers):
        raise ValueError(f"partitions must be an int >= 1 or a pair (boundary, inside) of ints >= 1, got "
                         f"{partitions!r}")
    if isinstance(objectives, bool) or not isinstance(objectives, (int, np.integer)) or objectives < 2:
        raise ValueError(f"reference directions need 2 or more objectives, got {objectives!r}")
    out = das_dennis(objectives, layers[0])
    if len(layers) == 2:
        out = np.concatenate([out, das_dennis(objectives, layers[1]) / 2 + 1 / (2 * objectives)])
    return out


def count(objectives: int, partitions) -> int:
    """How many directions ``reference_directions(objectives, partitions)`` gives."""
    layers = tuple(partitions) if isinstance(partitions, (tuple, list)) else (partitions,)
    return sum(math.comb(p + objectives - 1, objectives - 1) for p in layers)


def default_partitions(objectives: int, n: int):
    """Deb and Jain's choice for ``n`` survivors: the largest single layer with at most ``n``
    directions when it has interior points (p >= M); otherwise two layers (p, q), q <= p, with the
    most directions that fit (M = 8: (3, 2), 156 directions; M = 10: (3, 2), 275)."""
    p = 1
    while count(objectives, p + 1) <= n:
        p += 1
    if p >= objectives:
        return p
    q = max((q for q in range(1, p + 1) if count(objectives, (p, q)) <= n), default=0)
    return (p, q) if q else p


def _solve(a: tf.Tensor, b: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """(x, singular): a x = b for a small float64 (M, M) by Gauss-Jordan elimination with partial
    pivoting, one step per column (M is static); ``singular`` when a pivot vanishes. Unlike
    ``tf.linalg.solve`` it never raises on a singular matrix, which is a normal case here."""
    m = a.shape[0]
    work = tf.concat([a, b[:, None]], 1)
    scale = tf.reduce_max(tf.abs(a))
    singular = tf.constant(False)
    rows = tf.range(m)
    for c in range(m):
        piv = c + tf.argmax(tf.abs(work[c:, c]), output_type=tf.int32)
        swap = tf.where(tf.equal(rows, c), piv, tf.where(tf.equal(rows, piv), c, rows))
        work = tf.gather(work, swap)
        pivot = work[c, c]
        tiny = tf.abs(pivot) <= 1e-12 * scale
        singular |= tiny
        factor = work[:, c] / tf.where(tiny, tf.ones_like(pivot), pivot)
        factor = tf.where(tf.equal(rows, c), tf.zeros_like(factor), factor)
        work = work - factor[:, None] * work[c][None, :]
    diag = tf.linalg.diag_part(work[:, :m])
    return work[:, m] / tf.where(tf.equal(diag, 0.0), tf.ones_like(diag), diag), singular


class Normalization(NamedTuple):
    """The normalization's state, carried from one generation to the next (``NSGA3``'s selection state):
    float32, by name, so that a checkpoint holds each part under its own name and checks its shape."""

    ideal: Any  # (M,): the least value of each objective so far
    worst: Any  # (M,): the largest value of each objective so far
    extremes: Any  # (M, M): the extreme point of each axis, one row per axis


def initial_state(objectives: int) -> Normalization:
    """The normalization's state before any generation: the ideal point +inf, the worst point -inf and the
    extreme points +inf (none yet, so the first pool's rows are the only candidates); float32 NumPy."""
    m = objectives
    return Normalization(np.full(m, np.inf, np.float32), np.full(m, -np.inf, np.float32),
                         np.full((m, m), np.inf, np.float32))


def normalize(g: tf.Tensor, rows: tf.Tensor, first: tf.Tensor, state: Normalization | None = None
              ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, Normalization]:
    """(normalized objectives (P, M), ideal point (M,), scale (M,), next ``Normalization``) of minimise-space
    ``g`` (P, M), after Blank, Deb and Roy (2019).

    ``rows`` (bool (P,)) are the pool's rows that count (the feasible ones), ``first`` (bool (P,)) those of
    its first front. ``state`` (``initial_state`` when None) carries the run's history: the ideal point is
    the least value of every pool so far, and the extreme point of each axis (least achievement scalarizing
    function, values within ``EXTREME_SNAP`` of the ideal point counted as on it) is chosen from the previous
    extreme points and this first front, so a generation that loses the points at the ends of the front
    does not lose its span. The nadir point is where the hyperplane through the extreme points meets the
    axes, capped by the worst values seen; when that plane is degenerate (extreme points that do not span
    it, intercepts not above ``INTERCEPT_FLOOR`` or not finite), the first front's worst values; and where
    a range is still ``INTERCEPT_FLOOR`` or less, the pool's worst. Each objective is scaled by its range.
    """
    m = g.shape[1]
    state = initial_state(m) if state is None else state
    inf = tf.constant(np.inf, tf.float32)
    ideal = tf.minimum(state.ideal, tf.reduce_min(tf.where(rows[:, None], g, inf), axis=0))
    worst_pool = tf.reduce_max(tf.where(rows[:, None], g, -inf), axis=0)
    worst = tf.maximum(state.worst, worst_pool)
    # candidates: the previous extreme points first (they win ties), then the first front's rows
    candidates = tf.concat([state.extremes, g], 0)
    allowed = tf.concat([tf.ones([m], tf.bool), first], 0)
    t = candidates - ideal
    t = tf.where(t < EXTREME_SNAP, tf.zeros_like(t), t)
    weights = np.full((m, m), ASF_EPSILON, np.float32) + np.eye(m, dtype=np.float32) * (1 - ASF_EPSILON)
    asf = tf.reduce_max(t[:, None, :] / tf.constant(weights)[None], axis=2)  # (M + P, M): candidate, axis
    extreme = tf.gather(candidates, tf.argmin(tf.where(allowed[:, None], asf, inf), axis=0, output_type=tf.int32))
    e = tf.cast(extreme - ideal, tf.float64)
    a, singular = _solve(e, tf.ones([m], tf.float64))
    intercepts = 1.0 / a
    residual = tf.reduce_max(tf.abs(tf.linalg.matvec(e, a) - 1.0))
    degenerate = singular | (residual > 1e-6) | ~tf.reduce_all(tf.math.is_finite(intercepts)) | \
        tf.reduce_any(intercepts <= INTERCEPT_FLOOR)
    nadir = tf.minimum(tf.cast(ideal, tf.float64) + intercepts, tf.cast(worst, tf.float64))
    worst_front = tf.reduce_max(tf.where(first[:, None], g, -inf), axis=0)
    nadir = tf.where(degenerate, tf.cast(worst_front, tf.float64), nadir)
    nadir = tf.where(nadir - tf.cast(ideal, tf.float64) <= INTERCEPT_FLOOR, tf.cast(worst_pool, tf.float64), nadir)
    scale = tf.cast(nadir - tf.cast(ideal, tf.float64), tf.float32)
    scale = tf.where(tf.equal(scale, 0.0), ZERO_RANGE, scale)
    return (g - ideal) / scale, ideal, scale, Normalization(ideal, worst, extreme)


def associate(f: tf.Tensor, directions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """(nearest direction int32 (P,), its perpendicular distance float32 (P,)) of normalized points
    f (P, M) to the lines through the origin along ``directions`` (H, M).

    A point's squared distance to the line along unit u is |f|² - (f·u)², so for a point with f >= 0 (every
    row that sets the normalization: the ideal point is their least value) the nearest line is the one of
    largest projection f·u: one matrix product and a maximum, the (P, H) work no more than that
    (computing each distance would read and write (P, H) several times). A row with a negative
    coordinate (an infeasible one) goes to the direction it points most along. Projections within
    ``TIE`` x |f| of the largest count as equal and go to the first direction: a point exactly between
    two directions (common on fronts with symmetric points) then goes to the same one whatever the
    rounding of another program or machine. The distance to the chosen line is computed directly
    (|f - (f·u) u|), not from the difference of squares, which would lose a near point's distance to
    cancellation."""
    unit = directions / tf.norm(directions, axis=1, keepdims=True)
    along = tf.matmul(f, unit, transpose_b=True)  # (P, H)
    near = along >= tf.reduce_max(along, axis=1, keepdims=True) - TIE * tf.norm(f, axis=1, keepdims=True)
    nearest = fastmath.first_index(near, 1)  # an argmax here would cost XLA:CPU more than the product
    u = tf.gather(unit, nearest)
    return nearest, tf.norm(f - tf.reduce_sum(f * u, axis=1, keepdims=True) * u, axis=1)


def _lex_order(*keys: tuple[tf.Tensor, int]) -> tf.Tensor:
    """The permutation that sorts rows by ``keys`` (most significant first), each a pair (non-negative
    integer tensor, its width in bits). Adjacent keys are packed into one int64 word while they fit in 63
    bits, and the words sorted by stable sorts, least significant first: XLA:CPU's sort is a large share
    of the selection's time, and keys of 13, 31 and 32 bits then take two sorts, not three."""
    words: list[tuple[tf.Tensor, int]] = []
    for key, width in keys:
        key = tf.cast(key, tf.int64)
        if words and words[-1][1] + width <= 63:
            words[-1] = (tf.bitwise.left_shift(words[-1][0], tf.constant(width, tf.int64)) | key,
                         words[-1][1] + width)
        else:
            words.append((key, width))
    o = tf.argsort(words[-1][0], stable=True)
    for word, _ in words[-2::-1]:
        o = tf.gather(o, tf.argsort(tf.gather(word, o), stable=True))
    return o


def _scatter(o: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
    return tf.scatter_nd(o[:, None], values, tf.shape(values))


def duplicates(g: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
    """bool (P,): the rows whose objectives and violation equal those of an earlier row (-0.0 as 0.0)."""
    return distinct.repeated(tf.concat([g, v[:, None]], 1))


def survivors(values: tf.Tensor, signs, key: tf.Tensor, n: int, directions: np.ndarray) -> tf.Tensor:
    """int32 (n,): the pool rows NSGA-III keeps of engine values (P, M + 1) in one generation with no
    history (``initial_state``); see ``survivors_and_state``."""
    return survivors_and_state(values, signs, key, n, directions, initial_state(len(signs)))[0]


def survivors_and_state(values: tf.Tensor, signs, key: tf.Tensor, n: int, directions: np.ndarray,
                        state: Normalization, eliminate_duplicates: bool = False) -> tuple[tf.Tensor, Normalization]:
    """(int32 (n,) the pool rows NSGA-III keeps of engine values (P, M + 1), the normalization's next state)
    (see the module's docstring): the whole fronts first (by front), then the picks of the cut front in
    pick order. ``state`` is the normalization's (``initial_state``, then what the previous generation
    returned). With ``eliminate_duplicates``, a row whose values equal an earlier row's counts as
    infeasible with infinite violation: it is kept only when the distinct rows are fewer than ``n``."""
    g, v = pareto.minimise_space(values, signs)
    p, m = g.shape
    h = directions.shape[0]
    if eliminate_duplicates:
        v = tf.where(duplicates(g, v), tf.constant(np.inf, tf.float32), v)
    rank = pareto.ranks(g, v, until=n)
    sizes = tf.math.unsorted_segment_sum(tf.ones([p], tf.int32), rank, p + 1)
    last = tf.argmax(tf.cumsum(sizes) >= n, output_type=tf.int32)  # the front that overflows n
    kept, cut = rank < last, tf.equal(rank, last)
    # the rows that set the normalization: the feasible ones, else those of finite violation, else all
    usable = tf.equal(v, 0.0)
    usable = tf.where(tf.reduce_any(usable), usable, tf.math.is_finite(v))
    usable = tf.where(tf.reduce_any(usable), usable, tf.ones([p], tf.bool))
    first = usable & tf.equal(rank, tf.reduce_min(tf.where(usable, rank, p + 1)))
    f, _, _, state = normalize(g, usable, first, state)
    nearest, distance = associate(f, tf.constant(directions, tf.float32))
    niche = tf.math.unsorted_segment_sum(tf.cast(kept, tf.int32), nearest, h)

    words = tf.cast(rng.bits(key, Rows.all(p), (2,)), tf.int64)
    index = tf.range(p)
    where_to = (tf.where(cut, nearest, h), h.bit_length())  # rows outside the cut front sort after every direction
    # a non-negative float32's bits sort as its value does (abs: -0.0 as 0.0, a NaN after +inf)
    distance_bits = (tf.bitcast(tf.abs(distance), tf.int32), 31)
    # the closest candidate of each direction (ties by the first random word)
    o = _lex_order(where_to, distance_bits, (words[:, 0], 32))
    d = tf.gather(where_to[0], o)
    starts = tf.concat([[True], tf.not_equal(d[1:], d[:-1])], 0)
    closest = _scatter(o, tf.cast(starts, tf.int32)) > 0
    empty = tf.equal(tf.gather(niche, tf.minimum(nearest, h - 1)), 0)
    later = tf.where(closest & empty, 0, 1)
    o = _lex_order(where_to, (later, 1), (words[:, 0], 32))
    d = tf.gather(where_to[0], o)
    starts = tf.concat([[True], tf.not_equal(d[1:], d[:-1])], 0)
    segment_start = tf.cumsum(tf.cast(starts, tf.int32)) - 1
    first_at = tf.math.unsorted_segment_min(index, segment_start, p)
    place = _scatter(o, index - tf.gather(first_at, segment_start))
    level = tf.gather(niche, tf.minimum(nearest, h - 1)) + place
    big = tf.constant(3 * p + 1, tf.int64)
    primary = tf.where(kept, tf.cast(rank, tf.int64), tf.where(cut, tf.cast(p + level, tf.int64), big))
    secondary = tf.where(cut, words[:, 1], tf.cast(index, tf.int64))
    return _lex_order((primary, (3 * p + 1).bit_length()), (secondary, 32))[:n], state
