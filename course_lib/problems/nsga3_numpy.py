"""NSGA-III's survivor selection in NumPy, the way Deb and Jain (2014) describe it: the reference
the compiled ``evo.selection.NSGA3`` is tested and timed against.

The normalization is Blank, Deb and Roy's (2019): ideal point, worst point and extreme points
carried from one generation to the next in a state (``evo.nsga3.initial_state``; ``survivors``
takes it and returns the next one in ``Selected.state``).

Vectorised NumPy for the fronts, the normalization and the association; the niching is the
paper's loop, one pick at a time (at most ``n``): the least crowded direction that still has a
candidate, its closest candidate when no kept row is associated with it, otherwise a random one.
The random choices read given random words per row (``words`` (P, 2)): a direction's candidates
queue in the order of word 0 (after the closest one, when no kept row is associated with it), and
of the directions equally crowded the one whose next candidate has the least word 1 goes first.
With the engine's words, this loop and the engine's single sort pick the same rows, which is what
the tests check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course_lib.evo import nsga3
from course_lib.problems.dtlz import Dtlz
from course_lib.problems.multiobjective import numpy_pm, numpy_ranks, numpy_sbx

ASF_EPSILON, INTERCEPT_FLOOR, EXTREME_SNAP, ZERO_RANGE, TIE = (nsga3.ASF_EPSILON, nsga3.INTERCEPT_FLOOR,
                                                             nsga3.EXTREME_SNAP, nsga3.ZERO_RANGE, nsga3.TIE)


@dataclass
class Selected:
    """The survivors and what led to them: ideal point, scale (nadir point - ideal point), each row's
    nearest direction and distance, the niche counts of the kept fronts, the rank of the cut front, and
    the normalization's next state."""

    rows: np.ndarray
    ideal: np.ndarray
    intercepts: np.ndarray
    nearest: np.ndarray
    distance: np.ndarray
    niche: np.ndarray
    last: int
    state: nsga3.Normalization


def normalize(f: np.ndarray, rows: np.ndarray, first: np.ndarray, state: nsga3.Normalization | None = None):
    """(translated and scaled f, ideal point, scale, next state) as in ``evo.nsga3.normalize`` (Blank, Deb
    and Roy 2019): ideal and worst points over the run, the extreme points chosen from the previous ones and
    this first front, the nadir point from their hyperplane, else the front's worst, else the pool's."""
    m = f.shape[1]
    state = nsga3.initial_state(m) if state is None else state
    state = nsga3.Normalization(*(np.asarray(part, np.float64) for part in state))
    ideal = np.minimum(state.ideal, f[rows].min(axis=0))
    worst_pool = f[rows].max(axis=0)
    worst = np.maximum(state.worst, worst_pool)
    candidates = np.concatenate([state.extremes, f[first]])  # the previous extreme points first: they win ties
    t = candidates - ideal
    t[t < EXTREME_SNAP] = 0.0
    weights = np.full((m, m), ASF_EPSILON) + np.eye(m) * (1 - ASF_EPSILON)
    extreme = candidates[np.argmin(np.max(t[:, None, :] / weights[None], axis=2), axis=0)]
    e = extreme - ideal
    nadir = None
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.linalg.solve(e, np.ones(m))
            intercepts = 1.0 / a
        if np.allclose(e @ a, 1.0, atol=1e-6, rtol=0) and np.all(np.isfinite(intercepts)) and \
                np.all(intercepts > INTERCEPT_FLOOR):
            nadir = np.minimum(ideal + intercepts, worst)
    except np.linalg.LinAlgError:
        pass
    if nadir is None:  # a degenerate hyperplane: the first front's worst
        nadir = f[first].max(axis=0)
    nadir = np.where(nadir - ideal <= INTERCEPT_FLOOR, worst_pool, nadir)
    scale = (nadir - ideal).astype(np.float32).astype(np.float64)  # as the engine's float32 scale
    scale = np.where(scale == 0, ZERO_RANGE, scale)
    return (f - ideal) / scale, ideal, scale, nsga3.Normalization(ideal, worst, extreme)


def associate(f: np.ndarray, directions: np.ndarray):
    """(nearest direction (P,), perpendicular distance (P,)) of normalized points f to the directions: the
    largest projection f·u, those within ``TIE`` x |f| of it going to the first direction."""
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    along = f @ unit.T
    nearest = np.argmax(along >= along.max(axis=1, keepdims=True) - TIE * np.linalg.norm(f, axis=1, keepdims=True),
                        axis=1)
    u = unit[nearest]
    return nearest, np.linalg.norm(f - np.sum(f * u, axis=1, keepdims=True) * u, axis=1)


def survivors(f: np.ndarray, violation: np.ndarray, n: int, directions: np.ndarray, words: np.ndarray,
              state: nsga3.Normalization | None = None, eliminate_duplicates: bool = False) -> Selected:
    """The ``n`` rows NSGA-III keeps of minimised objectives ``f`` (P, M) under ``violation`` (P,)
    (0: feasible; NaN or a non-finite objective: infeasible at +inf), tie-broken by ``words`` (P, 2), with
    the normalization's ``state`` (``evo.nsga3.initial_state`` when None); ``eliminate_duplicates``: a row
    equal to an earlier one (objectives and violation) is infeasible at +inf."""
    f = np.asarray(f, np.float64)
    violation = np.asarray(violation, np.float64)
    bad = ~np.all(np.isfinite(f), axis=1) | np.isnan(violation)
    violation = np.where(bad, np.inf, np.maximum(violation, 0.0))
    f = np.where(bad[:, None], 0.0, f)
    p = len(f)
    if eliminate_duplicates:
        _, firsts = np.unique(np.c_[f, violation] + 0.0, axis=0, return_index=True)  # + 0.0: -0.0 is 0.0
        violation = np.where(np.isin(np.arange(p), firsts), violation, np.inf)
    rank = numpy_ranks(f, violation, n)
    sizes = np.bincount(rank, minlength=p + 1)
    last = int(np.argmax(np.cumsum(sizes) >= n))
    kept, cut = rank < last, rank == last
    usable = violation == 0
    if not usable.any():
        usable = np.isfinite(violation)
    if not usable.any():
        usable = np.ones(p, bool)
    first = usable & (rank == rank[usable].min())
    fn, ideal, intercepts, state = normalize(f, usable, first, state)
    nearest, distance = associate(fn, directions)
    niche = np.bincount(nearest[kept], minlength=len(directions))
    chosen = list(np.flatnonzero(kept)[np.argsort(rank[kept], kind="stable")])
    # each direction's queue of candidates: the closest first when its niche is empty, then by word 0
    cand = np.flatnonzero(cut)
    by_distance = cand[np.lexsort((words[cand, 0], distance[cand], nearest[cand]))]
    head = np.zeros(p, bool)
    head[by_distance[np.r_[True, nearest[by_distance][1:] != nearest[by_distance][:-1]]]] = True
    head &= niche[nearest] == 0
    queue = cand[np.lexsort((words[cand, 0], ~head[cand], nearest[cand]))]
    lengths = np.bincount(nearest[cand], minlength=len(directions))
    ends = np.cumsum(lengths)
    next_up = ends - lengths
    counts = niche.copy()
    for _ in range(n - len(chosen)):  # the paper's loop: one pick per step
        crowd = np.where(next_up < ends, counts, np.iinfo(np.int64).max)
        tied = np.flatnonzero(crowd == crowd.min())  # the least crowded directions that have a candidate
        heads = queue[next_up[tied]]
        i = int(np.argmin(words[heads, 1]))
        chosen.append(heads[i])
        next_up[tied[i]] += 1
        counts[tied[i]] += 1
    return Selected(np.asarray(chosen), ideal, intercepts, nearest, distance, niche, last, state)


def numpy_nsga3(problem: Dtlz, size: int, generations: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """NSGA-III on ``problem`` in NumPy from a uniform random start; returns (population, objectives)."""
    r = np.random.default_rng(seed)
    directions = nsga3.reference_directions(problem.objectives, nsga3.default_partitions(problem.objectives, size))
    x = r.random((size, problem.variables))
    f = problem.numpy(x)
    state = nsga3.initial_state(problem.objectives)
    for _ in range(generations):
        mates = x[(np.arange(size) + r.integers(1, size, size)) % size]
        children = numpy_pm(numpy_sbx(x, mates, r, eta=30.0, probability=1.0), r)
        pool_x, pool_f = np.concatenate([x, children]), np.concatenate([f, problem.numpy(children)])
        words = r.integers(0, 2 ** 32, (2 * size, 2))
        chosen = survivors(pool_f, np.zeros(2 * size), size, directions, words, state)
        x, f, state = pool_x[chosen.rows], pool_f[chosen.rows], chosen.state
    return x, f
