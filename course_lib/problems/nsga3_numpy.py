"""NSGA-III's survivor selection in NumPy, the way Deb and Jain (2014) describe it: the reference
the compiled ``evo.selection.NSGA3`` is tested and timed against.

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

ASF_EPSILON = 1e-6
INTERCEPT_FLOOR = 1e-6
TIE = 1e-5


@dataclass
class Selected:
    """The survivors and what led to them: ideal point, intercepts, each row's nearest direction and
    distance, the niche counts of the kept fronts, and the rank of the cut front."""

    rows: np.ndarray
    ideal: np.ndarray
    intercepts: np.ndarray
    nearest: np.ndarray
    distance: np.ndarray
    niche: np.ndarray
    last: int


def normalize(f: np.ndarray, rows: np.ndarray, first: np.ndarray):
    """(translated and scaled f, ideal point, intercepts) as in ``evo.nsga3.normalize``."""
    m = f.shape[1]
    ideal = f[rows].min(axis=0)
    t = f - ideal
    weights = np.full((m, m), ASF_EPSILON) + np.eye(m) * (1 - ASF_EPSILON)
    asf = np.max(t[:, None, :] / weights[None], axis=2)
    asf[~rows] = np.inf
    e = t[np.argmin(asf, axis=0)]
    intercepts = None
    try:
        a = np.linalg.solve(e, np.ones(m))
        with np.errstate(divide="ignore"):
            b = 1.0 / a
        if np.allclose(e @ a, 1.0, atol=1e-6, rtol=0) and np.all(np.isfinite(b)) and np.all(b > INTERCEPT_FLOOR):
            intercepts = b
    except np.linalg.LinAlgError:
        pass
    if intercepts is None:
        worst_front = np.max(np.where(first[:, None], t, 0.0), axis=0)
        worst = np.max(np.where(rows[:, None], t, 0.0), axis=0)
        intercepts = np.where(worst_front > INTERCEPT_FLOOR, worst_front, worst)
    intercepts = np.where(intercepts > 0, intercepts, 1e-10)
    return t / intercepts, ideal, intercepts


def associate(f: np.ndarray, directions: np.ndarray):
    """(nearest direction (P,), perpendicular distance (P,)) of normalized points f to the directions; squared
    distances within a relative ``TIE`` of the least go to the first direction."""
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    along = f @ unit.T
    d2 = np.sum(np.square(f[:, None, :] - along[:, :, None] * unit[None]), axis=2)
    nearest = np.argmax(d2 <= d2.min(axis=1, keepdims=True) * (1 + TIE) + TIE ** 2, axis=1)
    return nearest, np.sqrt(d2[np.arange(len(f)), nearest])


def survivors(f: np.ndarray, violation: np.ndarray, n: int, directions: np.ndarray,
              words: np.ndarray) -> Selected:
    """The ``n`` rows NSGA-III keeps of minimised objectives ``f`` (P, M) under ``violation`` (P,)
    (0: feasible; NaN or a non-finite objective: infeasible at +inf), tie-broken by ``words`` (P, 2)."""
    f = np.asarray(f, np.float64)
    violation = np.asarray(violation, np.float64)
    bad = ~np.all(np.isfinite(f), axis=1) | np.isnan(violation)
    violation = np.where(bad, np.inf, np.maximum(violation, 0.0))
    f = np.where(bad[:, None], 0.0, f)
    p = len(f)
    rank = numpy_ranks(f, violation, n)
    sizes = np.bincount(rank, minlength=p + 1)
    last = int(np.argmax(np.cumsum(sizes) >= n))
    kept, cut, pool = rank < last, rank == last, rank <= last
    usable = pool & (violation == 0)
    if not usable.any():
        usable = pool & np.isfinite(violation)
    if not usable.any():
        usable = pool
    first = usable & (rank == rank[usable].min())
    fn, ideal, intercepts = normalize(f, usable, first)
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
    return Selected(np.asarray(chosen), ideal, intercepts, nearest, distance, niche, last)


def numpy_nsga3(problem: Dtlz, size: int, generations: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """NSGA-III on ``problem`` in NumPy from a uniform random start; returns (population, objectives)."""
    r = np.random.default_rng(seed)
    directions = nsga3.reference_directions(problem.objectives,
                                                nsga3.default_partitions(problem.objectives, size))
    x = r.random((size, problem.variables))
    f = problem.numpy(x)
    for _ in range(generations):
        mates = x[(np.arange(size) + r.integers(1, size, size)) % size]
        children = numpy_pm(numpy_sbx(x, mates, r, eta=30.0, probability=1.0), r)
        pool_x, pool_f = np.concatenate([x, children]), np.concatenate([f, problem.numpy(children)])
        words = r.integers(0, 2 ** 32, (2 * size, 2))
        keep = survivors(pool_f, np.zeros(2 * size), size, directions, words).rows
        x, f = pool_x[keep], pool_f[keep]
    return x, f
