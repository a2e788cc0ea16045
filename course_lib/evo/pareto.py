"""Many objectives as tensor programs: constrained dominance, non-dominated ranks, crowding, hypervolume, IGD.

A multi-objective fitness (``evo.fitness.MultiObjective``) hands the engine float32 (P, M + 1):
M objectives in the problem's units, then a constraint violation (0: feasible). Here every
function first turns that into *minimise space*, ``g = -direction * objective`` (lower is
better for every column), with a row whose objectives or violation are NaN or infinite made
infeasible with violation +inf, so that it ranks after every other row.

Deb's rules compare two rows: a feasible row beats an infeasible one, of two infeasible rows
the one with less violation wins, and of two feasible rows one wins when it is no worse in
every objective and better in one (Pareto dominance).

Cost: Pareto dominance is a (P, P) boolean matrix from P² M comparisons; for three or more
objectives ``ranks`` peels one front per ``tf.while_loop`` step, each a pass over that matrix
bit-packed, so a population with F fronts costs O(M P² + F P²) work and P²/8 bytes. The violations
need no pair-wise work: feasible rows come first, infeasible ones follow by violation. Two objectives need no
matrix: after one lexicographic sort, a row is beaten exactly by the rows before it (its
duplicates aside) whose second objective is no larger, so a front is one running minimum
over the sorted rows, O(P log P) sorting plus O(F P log P) for F fronts, and the same ranks.
All of it is batched tensor code that runs alike eagerly, in a graph and under XLA. NSGA-II
needs fronts only until the survivors are filled (``until``), which late in a run is one or
two fronts. Crowding distances sort the pool once per objective (O(M P log P)); the exact
hypervolume sorts once in 2-D (O(P log P)) and once per slice in 3-D (O(P² log P)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from course_lib.evo import bitpack, fastmath, fusion


def minimise_space(values: tf.Tensor, signs) -> tuple[tf.Tensor, tf.Tensor]:
    """(g (P, M) lower-is-better objectives, violation (P,) >= 0) from engine values (P, M + 1).

    ``signs``: +1 for a maximised objective, -1 for a minimised one. Rows with a non-finite
    objective or a NaN violation get violation +inf and objectives 0: they rank last.
    """
    values = tf.cast(values, tf.float32)
    g = -tf.constant(signs, tf.float32)[None, :] * values[:, :-1]
    v = values[:, -1]
    bad = ~tf.reduce_all(tf.math.is_finite(g), axis=1) | tf.math.is_nan(v)
    v = tf.where(bad, tf.constant(np.inf, tf.float32), tf.maximum(v, 0.0))
    return tf.where(bad[:, None], tf.zeros_like(g), g), v


def _dominates(ga: tf.Tensor, gb: tf.Tensor) -> tf.Tensor:
    """Whether a Pareto-dominates b (objectives alone), broadcast: g (..., M) sliced per objective."""
    no_worse, better = ga[..., 0] <= gb[..., 0], ga[..., 0] < gb[..., 0]
    for k in range(1, ga.shape[-1]):  # one comparison per objective: no (P, P, M) intermediate
        a, b = ga[..., k], gb[..., k]
        no_worse, better = no_worse & (a <= b), better | (a < b)
    return no_worse & better


def dominance(g: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
    """bool (P, P): entry [i, j] is True when row i beats row j by Deb's rules."""
    fi, fj = tf.equal(v, 0.0)[:, None], tf.equal(v, 0.0)[None, :]
    return (fi & fj & _dominates(g[:, None, :], g[None, :, :])) | (fi & ~fj) | \
        (~fi & ~fj & (v[:, None] < v[None, :]))


def dominated_by(g: tf.Tensor) -> tf.Tensor:
    """uint32 (P, W): row j's bits say which rows Pareto-dominate it (bit i % 32 of word i // 32), objectives
    alone, bit-packed so that a pass over it reads P²/8 bytes. The violations enter per row, not per pair
    (``ranks``): P² comparisons of M objectives are the cost, and each term per pair counts."""
    return bitpack.bits_to_words(_dominates(g[None, :, :], g[:, None, :]))  # [j, i]


def ranks(g: tf.Tensor, v: tf.Tensor, until: int | None = None) -> tf.Tensor:
    """int32 (P,): each row's non-dominated front (0 = beaten by no row), g (P, M) and v (P,) as
    ``minimise_space`` gives them.

    With ``until``, fronts are assigned in order only while fewer than that many rows have one;
    the rest get P. By Deb's rules an infeasible row is beaten by every feasible one, so the feasible
    rows' fronts come first and the infeasible rows follow, one front per distinct violation (lower
    first). Two objectives find the feasible fronts on a sorted path (``_feasible_ranks_2d``); more objectives
    peel one front per step: the remaining feasible rows that no remaining feasible row dominates, an
    and of the packed ``dominated_by`` words with the remaining rows' words.

    The loop over fronts is the one loop inside a GPU-shaped generation whose trip count depends on
    the data: essential, since a front is defined by the fronts before it. It is bounded by P trips
    (``fusion.while_loop``), and with ``until`` it runs only the fronts the survivors need (late in a
    run one or two): a few host reads of its condition per generation on XLA:GPU.
    """
    p = g.shape[0]
    until = p if until is None else until
    feasible = tf.equal(v, 0.0)
    if g.shape[1] == 2:
        fronts, rank = _feasible_ranks_2d(g, feasible, until)
    else:
        words = dominated_by(g)

        def front(remaining):  # the remaining rows no remaining row dominates
            beaten = tf.not_equal(words & bitpack.bits_to_words(remaining[None, :]), 0)
            return remaining & ~tf.reduce_any(beaten, axis=1)

        fronts, rank = _peel(front, feasible, until)
    key = tf.where(feasible, -np.inf, v)  # the feasible rows share the lowest violation level
    by_v = tf.argsort(key, stable=True)
    w = tf.gather(key, by_v)
    level = tf.cumsum(tf.cast(tf.concat([[False], tf.not_equal(w[1:], w[:-1])], 0), tf.int32))
    level = _scatter(by_v, level) - tf.cast(tf.reduce_any(feasible), tf.int32)
    rank = tf.where(feasible, rank, fronts + level)
    ahead = tf.cumsum(tf.math.unsorted_segment_sum(tf.ones([p], tf.int32), rank, p + 1), exclusive=True)
    return tf.where(tf.gather(ahead, rank) < until, rank, p)


def _sorted_2d(g: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Two objectives sorted lexicographically: (order (P,), the second objective's dense integer
    rank in that order, the sorted position just before each row's first duplicate, -1 at the start).

    In this order every row that beats a feasible row comes before it, and of the rows before it
    (its duplicates left out) exactly those whose second objective is no larger beat it.
    """
    p = g.shape[0]
    g = tf.where(tf.equal(g, 0.0), tf.zeros_like(g), g)  # -0.0 sorts and compares as 0.0
    by_y = tf.argsort(g[:, 1], stable=True)
    y = tf.gather(g[:, 1], by_y)
    y_rank = tf.cumsum(tf.cast(tf.concat([[False], tf.not_equal(y[1:], y[:-1])], 0), tf.int32))
    then_x = tf.argsort(tf.gather(g[:, 0], by_y), stable=True)
    o = tf.gather(by_y, then_x)
    x, y_rank = tf.gather(g[:, 0], o), tf.gather(y_rank, then_x)
    new = tf.concat([[True], tf.not_equal(x[1:], x[:-1]) | tf.not_equal(y_rank[1:], y_rank[:-1])], 0)
    group = tf.cumsum(tf.cast(new, tf.int32)) - 1
    first = tf.gather(tf.math.unsorted_segment_min(tf.range(p), group, p), group)
    return o, y_rank, first - 1


def _front_2d(remaining: tf.Tensor, y_rank: tf.Tensor, before: tf.Tensor) -> tf.Tensor:
    """bool (P,) in sorted order: the ``remaining`` rows that no remaining row before them beats
    (a running minimum of the remaining rows' second objective, P elsewhere)."""
    p = y_rank.shape[0]
    lowest = _cummin(tf.where(remaining, y_rank, p))
    lowest_before = tf.where(before >= 0, tf.gather(lowest, tf.maximum(before, 0)), p)
    return remaining & (lowest_before > y_rank)


def _feasible_ranks_2d(g: tf.Tensor, feasible: tf.Tensor, until) -> tuple[tf.Tensor, tf.Tensor]:
    """(fronts found, int32 (P,) the feasible rows' fronts, P elsewhere) for two objectives without the
    (P, P) matrix: one running minimum per front over the lexicographic order, until every feasible row
    has a front or ``until`` rows have one."""
    o, y_rank, before = _sorted_2d(g)
    fronts, rank_o = _peel(lambda remaining: _front_2d(remaining, y_rank, before), tf.gather(feasible, o), until)
    return fronts, _scatter(o, rank_o)


def _peel(front, feasible: tf.Tensor, until) -> tuple[tf.Tensor, tf.Tensor]:
    """(fronts found, int32 (P,) the feasible rows' fronts, P elsewhere): ``front(remaining)`` (the bool
    rows of the next front among the ``remaining`` ones) applied in turn, one front per trip, until every
    feasible row has a front or ``until`` rows have one."""
    p = feasible.shape[0]

    def body(r, rank):
        return r + 1, tf.where(front(feasible & (rank >= p)), r, rank)

    def more(r, rank):
        return tf.reduce_any(feasible & (rank >= p)) & (tf.reduce_sum(tf.cast(rank < p, tf.int32)) < until)

    return fusion.while_loop(more, body, (tf.constant(0), tf.fill([p], p)), bound=p)


def non_dominated(g: tf.Tensor, v: tf.Tensor) -> tf.Tensor:
    """bool (P,): the feasible rows that no row beats."""
    if g.shape[1] == 2:
        o, y_rank, before = _sorted_2d(g)
        top = _front_2d(tf.gather(tf.equal(v, 0.0), o), y_rank, before)
        return tf.cast(_scatter(o, tf.cast(top, tf.int32)), tf.bool)
    feasible = tf.equal(v, 0.0)
    return feasible & ~tf.reduce_any(_dominates(g[None, :, :], g[:, None, :]) & feasible[None, :], axis=1)


def _stable_order(key: tf.Tensor, within: tf.Tensor) -> tf.Tensor:
    """The permutation that sorts rows by ``within`` (ascending) and then, stably, by ``key``."""
    first = tf.argsort(within, stable=True)
    return tf.gather(first, tf.argsort(tf.gather(key, first), stable=True))


def _scatter(order: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
    """``values`` given in ``order``, put back at the rows ``order`` names."""
    return tf.scatter_nd(order[:, None], values, tf.shape(values))


def crowding(g: tf.Tensor, rank: tf.Tensor) -> tf.Tensor:
    """float32 (P,): each row's crowding distance within its front.

    Per objective, the front's rows are sorted by it (ties by row index); the first and last
    get +inf, the others the gap between their neighbours over the front's range (0 where
    the range is 0), summed over objectives. A front of one or two rows is all +inf.
    """
    p, m = g.shape
    total = tf.zeros([p], tf.float32)
    for k in range(m):
        order = _stable_order(rank, g[:, k])
        r, x = tf.gather(rank, order), tf.gather(g[:, k], order)
        first = tf.concat([[True], r[1:] != r[:-1]], 0)
        last = tf.concat([r[1:] != r[:-1], [True]], 0)
        lo = tf.math.unsorted_segment_min(g[:, k], rank, p + 1)
        hi = tf.math.unsorted_segment_max(g[:, k], rank, p + 1)
        span = tf.gather(hi - lo, r)
        # row i: x[i + 1] - x[i - 1] (the ends are +inf anyway)
        gap = tf.concat([[0.0], x[2:] - x[:-2], [0.0]], 0) if p > 2 else tf.zeros([p])
        d = tf.where(first | last, np.inf, tf.where(span > 0, gap / tf.where(span > 0, span, 1.0), 0.0))
        total += _scatter(order, d)
    return total


def order(values: tf.Tensor, signs, until: int | None = None) -> tf.Tensor:
    """int32 (P,): rows best first by NSGA-II's order: front, then crowding distance (larger first),
    then row index. With ``until`` only the first ``until`` places are exact."""
    g, v = minimise_space(values, signs)
    if g.shape[1] == 1:  # one objective: Deb's rules are a total order, two sorts
        return _stable_order(v, g[:, 0])
    rank = ranks(g, v, until)
    return _stable_order(rank, -crowding(g, rank))


def quality(values: tf.Tensor, signs) -> tf.Tensor:
    """float32 (P,), higher is better: minus each row's place in ``order`` (a score that ordinary
    selections, tournaments and migration can compare)."""
    o = order(values, signs)
    return _scatter(o, -tf.cast(tf.range(o.shape[0]), tf.float32))


# -- hypervolume ----------------------------------------------------------------------------------


def _hv2(q: tf.Tensor, ref: tf.Tensor) -> tf.Tensor:
    """Exact 2-D hypervolume of points q (..., P, 2) already clipped to ``ref`` (minimise space)."""
    o = tf.argsort(q[..., 0], axis=-1, stable=True)
    x = tf.gather(q[..., 0], o, batch_dims=len(q.shape) - 2)
    y = tf.gather(q[..., 1], o, batch_dims=len(q.shape) - 2)
    nxt = tf.concat([x[..., 1:], tf.broadcast_to(ref[0], tf.shape(x[..., :1]))], -1)
    return tf.reduce_sum((nxt - x) * (ref[1] - _cummin(y)), axis=-1)


def _cummin(y: tf.Tensor) -> tf.Tensor:
    """Running minimum along the last axis, by doubling (log2 P steps of elementwise minima)."""
    n, shift = y.shape[-1], 1
    top = np.inf if y.dtype.is_floating else y.dtype.max
    while shift < n:
        pad = tf.fill(tf.concat([tf.shape(y)[:-1], [shift]], 0), tf.constant(top, y.dtype))
        y = tf.minimum(y, tf.concat([pad, y[..., :-shift]], -1))
        shift *= 2
    return y


def hypervolume_min(g: tf.Tensor, reference, mask: tf.Tensor | None = None) -> tf.Tensor:
    """Exact hypervolume, in minimise space, of points g (..., P, M) for M = 2 or 3 against ``reference``
    (M,); rows where ``mask`` is False, and the parts of points beyond the reference, count nothing.

    2-D: sort by the first objective and sum rectangles under the running minimum of the second.
    3-D: sort by the third objective; slice k (up to the next point's value, or the reference) is
    the 2-D hypervolume of the first k points, all slices at once (O(P² log P)).
    """
    g = tf.cast(g, tf.float32)
    ref = tf.constant(np.asarray(reference, np.float32)) if not isinstance(reference, tf.Tensor) else reference
    m = g.shape[-1]
    q = tf.minimum(g, ref)
    if mask is not None:
        q = tf.where(mask[..., None], q, ref)
    if m == 2:
        return _hv2(q, ref)
    if m != 3:
        raise ValueError(f"hypervolume is exact for 2 or 3 objectives, got {m}")
    batch = len(q.shape) - 2
    o = tf.argsort(q[..., 2], axis=-1, stable=True)
    q = tf.gather(q, o, batch_dims=batch)
    z = q[..., 2]
    nxt = tf.concat([z[..., 1:], tf.broadcast_to(ref[2], tf.shape(z[..., :1]))], -1)
    p = q.shape[-2]
    upto = tf.range(p)[None, :] <= tf.range(p)[:, None]  # slice k holds points 0..k
    xy = tf.where(upto[..., None], q[..., None, :, :2], ref[:2])  # (..., P slices, P, 2)
    return tf.reduce_sum((nxt - z) * _hv2(xy, ref[:2]), axis=-1)


# -- distance to a known front (IGD, IGD+) ---------------------------------------------------------------


@dataclass(frozen=True)
class ReferenceFront:
    """A known Pareto front, points (K, M) in the problem's units, that a run is measured against by
    IGD (``plus=False``) or IGD+ (``plus=True``): lower is better, 0 when every point is matched."""

    points: tuple
    plus: bool = False

    @property
    def name(self) -> str:
        return "IGD+" if self.plus else "IGD"

    def __repr__(self) -> str:
        return f"ReferenceFront({len(self.points)} points, {len(self.points[0])} objectives, {self.name})"


def igd_min(g: tf.Tensor, front: tf.Tensor, mask: tf.Tensor | None = None, plus: bool = False) -> tf.Tensor:
    """Inverted generational distance, in minimise space, of points g (P, M) to a known front (K, M): the
    mean over the front's points of the distance to the nearest row (rows where ``mask`` is False count
    nothing; +inf without any row).

    IGD+ (Ishibuchi et al. 2015) measures only how far a row is worse than the front's point
    (max(g - z, 0) per objective), so a row that dominates the point is at distance 0: unlike IGD it
    never rewards a dominated row. Summed one objective at a time: (K, P) memory, O(K P M) work.
    """
    g = tf.cast(g, tf.float32)
    d2 = None
    for k in range(g.shape[1]):
        gap = g[None, :, k] - front[:, None, k]
        part = tf.square(tf.nn.relu(gap) if plus else gap)
        d2 = part if d2 is None else d2 + part
    if mask is not None:
        d2 = tf.where(mask[None, :], d2, tf.constant(np.inf, tf.float32))
    return tf.reduce_mean(tf.sqrt(tf.reduce_min(d2, axis=1)))


def igd(objectives, front: ReferenceFront, signs) -> float:
    """IGD (or IGD+, as ``front`` says) of points (P, M) in the problem's units against ``front``; rows
    with a non-finite objective count nothing."""
    x = np.asarray(objectives, np.float32)
    s = np.asarray(signs, np.float32)
    z = np.asarray(front.points, np.float32)
    if x.ndim != 2 or x.shape[1] != s.shape[0] or z.shape[1] != s.shape[0]:
        raise ValueError(f"IGD needs points (P, M) and a front (K, M) with M = {s.shape[0]}; got {x.shape} and "
                         f"{z.shape}")
    g = -s * x
    ok = np.all(np.isfinite(g), axis=1)
    return float(igd_min(tf.constant(np.where(ok[:, None], g, 0.0)), tf.constant(-s * z), tf.constant(ok),
                         front.plus))


# -- what a run reports --------------------------------------------------------------------------------


def summary(values: tf.Tensor, signs, reference) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(a front row's index, the tracked quality, (quality, share, its std)): what the engine tracks per
    generation for many objectives. The quality is the hypervolume of the feasible rows when
    ``reference`` is a point (M,) in the problem's units, or their IGD / IGD+ when it is a
    ``ReferenceFront``. ``share`` is the fraction of rows that are feasible and non-dominated. For one
    objective under constraints: (the best row by Deb's rules, its objective if it is feasible
    and NaN otherwise, (that, the mean and std of the objective))."""
    g, v = minimise_space(values, signs)
    if g.shape[1] == 1:  # one objective under constraints: the best feasible value (NaN while none is)
        j = tf.argmax(quality(values, signs), output_type=tf.int32)
        x = tf.cast(values[:, 0], tf.float32)
        best = tf.where(tf.equal(tf.gather(v, j), 0.0), tf.gather(x, j), np.nan)
        return j, best, tf.stack([best, *fastmath.mean_and_std(x)])
    top = non_dominated(g, v)
    if isinstance(reference, ReferenceFront):
        z = -tf.constant(signs, tf.float32) * tf.constant(reference.points, tf.float32)
        hv = igd_min(g, z, top, reference.plus)
    else:
        ref = -tf.constant(signs, tf.float32) * tf.constant(reference, tf.float32)
        hv = hypervolume_min(g, ref, tf.equal(v, 0.0))
    share = tf.reduce_mean(tf.cast(top, tf.float32))
    j = tf.argmax(tf.cast(top, tf.int32), output_type=tf.int32)
    return j, hv, tf.stack([hv, share, tf.sqrt(share * (1.0 - share))])


@dataclass
class Front:
    """The non-dominated feasible individuals of a population: genomes, objectives in the problem's
    units (sorted by the first objective), their hypervolume (NaN without a reference point, or for
    more than three objectives) and their IGD or IGD+ against a known front (NaN without one)."""

    genomes: np.ndarray
    objectives: np.ndarray
    hypervolume: float
    igd: float = float("nan")

    def __len__(self) -> int:
        return len(self.objectives)

    def __repr__(self) -> str:
        quality = f"igd={self.igd:.6g}" if np.isfinite(self.igd) else f"hypervolume={self.hypervolume:.6g}"
        return f"Front({len(self)} individuals, {self.objectives.shape[1]} objectives, {quality})"


# compiled: eagerly, the (P, P) comparisons of a large population cost more than generations of the run
_front_rows = fusion.xla_function(lambda values, signs: non_dominated(*minimise_space(values, signs)))


def front(population: np.ndarray, values: np.ndarray, signs, reference=None) -> Front:
    """The ``Front`` of a population and its engine values (P, M + 1), duplicates kept once; ``reference``
    a hypervolume point (M,) or a ``ReferenceFront``."""
    top = _front_rows(tf.constant(values, tf.float32), tuple(signs)).numpy()
    objectives = np.asarray(values, np.float64)[top, :-1]
    genomes = np.asarray(population)[top]
    _, first = np.unique(objectives, axis=0, return_index=True)
    first = np.sort(first)
    objectives, genomes = objectives[first], genomes[first]
    o = np.argsort(objectives[:, 0], kind="stable")
    hv = distance = float("nan")
    if isinstance(reference, ReferenceFront):
        distance = igd(objectives, reference, signs) if len(objectives) else float("inf")
    elif reference is not None and objectives.shape[1] in (2, 3):
        hv = float(hypervolume(objectives, reference, signs))
    return Front(genomes[o], objectives[o], hv, distance)


def hypervolume(objectives, reference, signs) -> np.ndarray:
    """Exact hypervolume of points (..., P, M), M = 2 or 3, in the problem's units (batched over leading
    axes), dominated by them and bounded by ``reference``; ``signs`` +1 per maximised objective, -1 per
    minimised one."""
    x = np.asarray(objectives, np.float32)
    s = np.asarray(signs, np.float32)
    if x.ndim < 2 or x.shape[-1] != s.shape[0] or np.shape(reference) != s.shape:
        raise ValueError(f"hypervolume needs points (..., P, M) with M = {s.shape[0]} directions and a reference "
                         f"of {s.shape[0]} values; got points of shape {x.shape} and reference {reference!r}")
    g = -s * x
    ok = np.all(np.isfinite(g), axis=-1)
    g = np.where(ok[..., None], g, 0.0)
    return hypervolume_min(tf.constant(g), -s * np.asarray(reference, np.float32), tf.constant(ok)).numpy()
