"""Multi-objective problems with known Pareto fronts: ZDT1-3, DTLZ2 and a two-value knapsack.

Each ``Problem`` bundles a fitness (``evo.fitness.Objectives``), its variables' bounds, the
hypervolume reference point and its true front, so a run can be measured against the best
possible: the ZDT problems (Zitzler, Deb and Thiele) minimise two objectives of 30 variables
in [0, 1]; DTLZ2 (Deb, Thiele, Laumanns and Zitzler) three objectives whose front is the unit
sphere's positive octant; the knapsack maximises two values under one capacity, its front
found exactly by enumeration for small sizes. ``numpy_nsga2`` is the classical baseline: the same
NSGA-II as ``real_coded_model``, in vectorised NumPy.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from course_lib import evo


@dataclass
class Problem:
    """A fitness with its bounds, its true front (``front(points)`` -> (K, M) samples) and that front's
    hypervolume at the fitness's reference point (``true_hypervolume``)."""

    name: str
    fitness: evo.fitness.MultiObjective
    variables: int
    low: float
    high: float
    front: Callable[[int], np.ndarray]
    true_hypervolume: float

    @property
    def reference(self) -> tuple:
        return self.fitness.reference

    def hypervolume(self, objectives) -> float:
        """The hypervolume of points (K, M) at the reference point."""
        return float(evo.pareto.hypervolume(objectives, self.reference, self.fitness.signs))


def _zdt_g(x: tf.Tensor) -> tf.Tensor:
    return 1.0 + 9.0 * tf.reduce_mean(x[:, 1:], axis=1)


def _zdt1(x):
    f1, g = x[:, 0], _zdt_g(x)
    return tf.stack([f1, g * (1.0 - tf.sqrt(f1 / g))], 1)


def _zdt2(x):
    f1, g = x[:, 0], _zdt_g(x)
    return tf.stack([f1, g * (1.0 - tf.square(f1 / g))], 1)


def _zdt3(x):
    f1, g = x[:, 0], _zdt_g(x)
    return tf.stack([f1, g * (1.0 - tf.sqrt(f1 / g) - f1 / g * tf.sin(10.0 * np.pi * f1))], 1)


def _front_of(points: np.ndarray) -> np.ndarray:
    """The non-dominated rows (minimised) of ``points``, sorted by the first column."""
    p = points[np.lexsort(points.T[::-1])]
    keep = np.ones(len(p), bool)
    best = np.inf
    for i, (_, y) in enumerate(p):  # 2 objectives: sorted by f1, a row counts if f2 drops
        keep[i] = y < best
        best = min(best, y)
    return p[keep]


_ZDT = {1: (_zdt1, lambda f: 1.0 - np.sqrt(f)), 2: (_zdt2, lambda f: 1.0 - f ** 2),
        3: (_zdt3, lambda f: 1.0 - np.sqrt(f) - f * np.sin(10.0 * np.pi * f))}


def zdt(number: int, variables: int = 30) -> Problem:
    """ZDT1 (convex front), ZDT2 (concave) or ZDT3 (five disconnected pieces); reference (1.1, 1.1)."""
    if number not in _ZDT:
        raise ValueError(f"ZDT{number} is not defined here; choose 1, 2 or 3")
    fn, curve = _ZDT[number]
    fn.__name__ = f"zdt{number}"

    def front(points):
        f1 = np.linspace(0.0, 1.0, points)
        return _front_of(np.stack([f1, curve(f1)], 1))

    fitness = evo.fitness.Objectives(fn, ("min", "min"), reference=(1.1, 1.1), name=f"zdt{number}")
    exact = float(evo.pareto.hypervolume(front(200_001), fitness.reference, fitness.signs))  # dense: exact to 1e-5
    return Problem(f"ZDT{number}", fitness, variables, 0.0, 1.0, front, exact)


def _dtlz2(x):
    g = tf.reduce_sum(tf.square(x[:, 2:] - 0.5), axis=1)
    a, b = x[:, 0] * (np.pi / 2), x[:, 1] * (np.pi / 2)
    r = 1.0 + g
    return tf.stack([r * tf.cos(a) * tf.cos(b), r * tf.cos(a) * tf.sin(b), r * tf.sin(a)], 1)


def dtlz2(variables: int = 12) -> Problem:
    """DTLZ2 with three objectives (minimise); its front is the unit sphere in the positive octant;
    reference (1.1, 1.1, 1.1); ``front(points)`` samples a grid of about ``points``."""
    def front(points):
        side = max(2, int(np.sqrt(points)))
        a, b = np.meshgrid(np.linspace(0, np.pi / 2, side), np.linspace(0, np.pi / 2, side))
        a, b = a.ravel(), b.ravel()
        return np.stack([np.cos(a) * np.cos(b), np.cos(a) * np.sin(b), np.sin(a)], 1)

    fitness = evo.fitness.Objectives(_dtlz2, ("min", "min", "min"), reference=(1.1, 1.1, 1.1), name="dtlz2")
    # the box up to the reference less the unit sphere's octant
    return Problem("DTLZ2", fitness, variables, 0.0, 1.0, front, 1.1 ** 3 - np.pi / 6)


def knapsack(items: int = 12, seed: int = 0) -> tuple[evo.fitness.Objectives, dict]:
    """A 0/1 knapsack with two value vectors and one capacity (half the total weight), maximised;
    returns (fitness, data) with data's 'weights', 'values' (2, items) and 'capacity'."""
    r = np.random.default_rng(seed)
    weights = r.integers(1, 20, items).astype(np.float64)
    values = r.integers(1, 20, (2, items)).astype(np.float64)
    capacity = float(weights.sum() / 2)
    v = tf.constant(values.T, tf.float32)

    def knapsack_values(x):
        x = tf.cast(x, tf.float32)
        return tf.matmul(x, v), evo.fitness.capacity_violation(x, weights, capacity)

    fitness = evo.fitness.Objectives(knapsack_values, ("max", "max"), reference=(0.0, 0.0), name="knapsack")
    return fitness, {"weights": weights, "values": values, "capacity": capacity}


def knapsack_front(data: dict) -> np.ndarray:
    """The exact front (K, 2) of a small two-value knapsack, by enumerating every subset (2**items)."""
    items = len(data["weights"])
    if items > 22:
        raise ValueError(f"enumerating 2**{items} subsets is too many; use at most 22 items")
    subsets = np.array(list(itertools.product((0, 1), repeat=items)), np.float64)
    ok = subsets @ data["weights"] <= data["capacity"]
    return -_front_of(-(subsets[ok] @ data["values"].T))[::-1]


# -- the NumPy NSGA-II the engine's is judged against ------------------------------------------------


def numpy_sbx(x, mates, r, low=0.0, high=1.0, eta=15.0, probability=0.9):
    """One child per row, as ``evo.ops.SimulatedBinaryCrossover`` (Deb's bounded form)."""
    y1, y2 = np.minimum(x, mates), np.maximum(x, mates)
    gap = y2 - y1
    safe = np.where(gap > 1e-14, gap, 1.0)
    u, swap, pick = r.random(x.shape), r.random(x.shape), r.random(x.shape)
    e = 1.0 / (eta + 1.0)

    def spread(beta):
        alpha = 2.0 - beta ** -(eta + 1.0)
        ua = u * alpha
        return np.where(u <= 1.0 / alpha, np.maximum(ua, 0) ** e, np.maximum(1.0 / (2.0 - ua), 0) ** e)

    c1 = 0.5 * (y1 + y2 - spread(1.0 + 2.0 * (y1 - low) / safe) * gap)
    c2 = 0.5 * (y1 + y2 + spread(1.0 + 2.0 * (high - y2) / safe) * gap)
    child = np.clip(np.where(swap < 0.5, c1, c2), low, high)
    take = (pick < 0.5) & (gap > 1e-14) & (r.random((len(x), 1)) < probability)
    return np.where(take, child, x)


def numpy_pm(x, r, low=0.0, high=1.0, eta=20.0):
    """Polynomial mutation at rate 1/genes, as ``evo.ops.PolynomialMutation``."""
    width, p = high - low, eta + 1.0
    d1, d2 = (x - low) / width, (high - x) / width
    u = r.random(x.shape)
    below = np.maximum(2 * u + (1 - 2 * u) * (1 - d1) ** p, 0) ** (1 / p) - 1
    above = 1 - np.maximum(2 * (1 - u) + 2 * (u - 0.5) * (1 - d2) ** p, 0) ** (1 / p)
    y = np.clip(x + np.where(u < 0.5, below, above) * width, low, high)
    return np.where(r.random(x.shape) < 1.0 / x.shape[1], y, x)


def numpy_ranks(f: np.ndarray, violation: np.ndarray, until: int) -> np.ndarray:
    """int (P,): non-dominated fronts by Deb's rules (feasible first, then less violation, then Pareto
    dominance) of minimised ``f`` (P, M), assigned until at least ``until`` rows have one (the rest P)."""
    p = len(f)
    feasible = violation == 0
    pareto = np.all(f[:, None] <= f[None], axis=2) & np.any(f[:, None] < f[None], axis=2)
    beats = (feasible[:, None] & feasible[None] & pareto) | (feasible[:, None] & ~feasible[None]) | \
        (~feasible[:, None] & ~feasible[None] & (violation[:, None] < violation[None]))
    count = beats.sum(axis=0)
    rank = np.full(p, p)
    r = 0
    while (rank < p).sum() < until:
        front = (count == 0) & (rank == p)
        rank[front] = r
        count = count - beats[front].sum(axis=0)
        r += 1
    return rank


def numpy_survivors(f: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` best rows of minimised objectives ``f`` by front, then crowding distance."""
    p, m = f.shape
    rank = numpy_ranks(f, np.zeros(p), n)
    dist = np.zeros(p)
    for k in range(m):
        o = np.lexsort((f[:, k], rank))
        rr, x = rank[o], f[o, k]
        first = np.r_[True, rr[1:] != rr[:-1]]
        last = np.r_[rr[1:] != rr[:-1], True]
        lo = np.full(p + 1, np.inf)
        hi = np.full(p + 1, -np.inf)
        np.minimum.at(lo, rank, f[:, k])
        np.maximum.at(hi, rank, f[:, k])
        span = (hi - lo)[rr]
        gap = np.r_[0.0, x[2:] - x[:-2], 0.0] if p > 2 else np.zeros(p)
        d = np.where(first | last, np.inf, np.where(span > 0, gap / np.where(span > 0, span, 1), 0))
        dist[o] += d
    return np.lexsort((-dist, rank))[:n]


def numpy_nsga2(problem: Problem, size: int, generations: int, seed: int = 0,
                on_generation: Callable[[int, np.ndarray], object] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """NSGA-II in vectorised NumPy on a minimised ``problem`` (ZDT1-3, DTLZ2): random mates, simulated binary
    crossover, polynomial mutation, mu + lambda by front and crowding distance, as ``real_coded_model``.

    Args:
        problem: whose objectives (``problem.fitness.fn``, called on float64 arrays) and bounds it uses.
        size: the population.
        generations: how many to run.
        seed: of the NumPy generator.
        on_generation: called as ``on_generation(generation, objectives)`` after each generation.

    Returns:
        (population, objectives), float64 arrays of shape (size, variables) and (size, objectives).
    """
    def objectives(x: np.ndarray) -> np.ndarray:
        return np.asarray(problem.fitness.fn(x), np.float64)

    r = np.random.default_rng(seed)
    low, high = problem.low, problem.high
    x = low + (high - low) * r.random((size, problem.variables))
    f = objectives(x)
    for g in range(generations):
        mates = x[(np.arange(size) + r.integers(1, size, size)) % size]
        children = numpy_pm(numpy_sbx(x, mates, r, low, high), r, low, high)
        pool_x, pool_f = np.concatenate([x, children]), np.concatenate([f, objectives(children)])
        keep = numpy_survivors(pool_f, size)
        x, f = pool_x[keep], pool_f[keep]
        if on_generation is not None:
            on_generation(g + 1, f)
    return x, f


def real_coded_model(problem: Problem, mode: str = "xla", seed: int = 0, eta_c: float = 15.0,
                     eta_m: float = 20.0) -> evo.Model:
    """NSGA-II with simulated binary crossover and polynomial mutation (rate 1/variables) on ``problem``."""
    inputs = evo.Input(shape=(problem.variables,), dtype="float32")
    x = evo.ops.SimulatedBinaryCrossover(problem.low, problem.high, eta=eta_c, probability=0.9)(inputs)
    x = evo.ops.PolynomialMutation(problem.low, problem.high, eta=eta_m)(x)
    model = evo.Model(inputs, x, name=problem.name)
    model.compile(fitness=problem.fitness, selection=evo.selection.NSGA2(), mode=mode, seed=seed)
    return model


def start(problem: Problem, size: int, seed: int = 0) -> tf.Tensor:
    """A uniform random population of ``size`` inside the problem's bounds."""
    return evo.population.uniform((size, problem.variables), problem.low, problem.high, seed=seed)
