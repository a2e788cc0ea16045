"""DTLZ1-DTLZ4 (Deb, Thiele, Laumanns and Zitzler 2005) for any number of objectives, with their true fronts.

Each problem minimises M objectives of n = M + k - 1 variables in [0, 1]: the first M - 1
variables place a point on the front, the last k (a "distance" function g of them, 0 on the
front) push it away. DTLZ1's front is the simplex sum f = 1/2 and its g is multimodal (11^k - 1
local fronts); DTLZ2's front is the unit sphere's positive orthant; DTLZ3 is DTLZ2 with DTLZ1's
multimodal g; DTLZ4 is DTLZ2 with the position variables raised to the 100th power, which crowds
the solutions towards the axes. k = 5 for DTLZ1 and 10 for the others, as Deb and Jain (2014) use.

The objectives are written once over an array namespace, so the same code gives the engine's
fitness (TensorFlow, float32) and the NumPy version (float64). The true fronts are computed:
Das-Dennis points on the simplex scaled to sum 1/2 (DTLZ1) or projected onto the unit sphere
(DTLZ2-4), the points where NSGA-III's reference directions meet the front, which is where
Deb and Jain measure IGD.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from course_lib import evo

NUMBERS = (1, 2, 3, 4)
DISTANCE_VARIABLES = {1: 5, 2: 10, 3: 10, 4: 10}  # k, as Deb and Jain (2014)
DTLZ4_ALPHA = 100.0
# Deb and Jain's reference directions per number of objectives (one layer p, or (boundary, inside))
PAPER_PARTITIONS = {3: 12, 5: 6, 8: (3, 2), 10: (3, 2), 15: (2, 1)}


class _NumPy:
    cos, sin, sum, stack, pi = np.cos, np.sin, staticmethod(lambda x: np.sum(x, axis=1)), \
        staticmethod(lambda xs: np.stack(xs, 1)), np.pi
    maximum = np.maximum


class _TF:
    cos, sin, sum, stack, pi = tf.cos, tf.sin, staticmethod(lambda x: tf.reduce_sum(x, axis=1)), \
        staticmethod(lambda xs: tf.stack(xs, 1)), np.pi
    maximum = tf.maximum


def _g_multimodal(xp, z):
    """DTLZ1's and DTLZ3's g: 100 (k + sum((z - 1/2)² - cos(20 pi (z - 1/2)))), computed as
    100 sum((z - 1/2)² + 2 sin²(10 pi (z - 1/2))) (1 - cos 2a = 2 sin² a): the same value without
    adding k terms near -1 to k, which in float32 rounds g to steps of about 1e-4 near the front."""
    d = z - 0.5
    s = xp.sin(10.0 * xp.pi * d)
    return 100.0 * xp.sum(d * d + 2.0 * s * s)


def _g_sphere(xp, z):
    d = z - 0.5
    return xp.sum(d * d)


def evaluate(xp, x, number: int, m: int):
    """DTLZ``number``'s M objectives (N, M) of x (N, n) in namespace ``xp`` (``_NumPy`` or ``_TF``)."""
    pos, z = x[:, :m - 1], x[:, m - 1:]
    if number == 1:
        r = 0.5 * (1.0 + _g_multimodal(xp, z))
        out = []
        for i in range(m):  # f_i = r * x_1 ... x_{M-1-i} * (1 - x_{M-i})
            f = r
            for j in range(m - 1 - i):
                f = f * pos[:, j]
            out.append(f if i == 0 else f * (1.0 - pos[:, m - 1 - i]))
        return xp.stack(out)
    if number == 4:
        pos = pos ** DTLZ4_ALPHA
    r = 1.0 + (_g_multimodal(xp, z) if number == 3 else _g_sphere(xp, z))
    angle = pos * (xp.pi / 2)
    # in float32 cos(pi/2) is -4.4e-8: at x_i = 1 (a bound SBX and mutation clip to) an objective would
    # be just below 0, a point no other point dominates, which would hold the extreme points and the
    # intercepts away from the front. The angle is in [0, pi/2], so its cosine is clamped to 0.
    cos, sin = xp.maximum(xp.cos(angle), 0.0), xp.sin(angle)
    out = []
    for i in range(m):  # f_i = r * cos(a_1) ... cos(a_{M-1-i}) * sin(a_{M-i})
        f = r
        for j in range(m - 1 - i):
            f = f * cos[:, j]
        out.append(f if i == 0 else f * sin[:, m - 1 - i])
    return xp.stack(out)


def true_front(number: int, m: int, partitions=None) -> np.ndarray:
    """float64 (K, M): points of DTLZ``number``'s front where the reference directions
    ``evo.nsga3.reference_directions(m, partitions)`` meet it (Deb and Jain's by default)."""
    w = evo.nsga3.reference_directions(m, partitions or default_partitions(m))
    if number == 1:
        return 0.5 * w / w.sum(axis=1, keepdims=True)
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def default_partitions(m: int):
    """Deb and Jain's directions for ``m`` objectives, or about 200 directions for other ``m``."""
    return PAPER_PARTITIONS.get(m) or evo.nsga3.default_partitions(m, 200)


@dataclass
class Dtlz:
    """One DTLZ instance: the engine's fitness (tracking IGD against ``front``), the NumPy objectives,
    the variables' count and bounds, and its true front (the IGD reference)."""

    name: str
    number: int
    objectives: int
    variables: int
    fitness: evo.fitness.Objectives
    numpy: Callable[[np.ndarray], np.ndarray]
    front: np.ndarray
    low: float = 0.0
    high: float = 1.0

    def igd(self, points) -> float:
        """IGD of points (P, M) (objective values) against the true front."""
        return evo.pareto.igd(points, evo.pareto.ReferenceFront(tuple(map(tuple, self.front))), self.fitness.signs)


def dtlz(number: int, objectives: int, distance_variables: int | None = None, partitions=None,
         quality: str = "igd") -> Dtlz:
    """DTLZ``number`` with ``objectives`` objectives and k = ``distance_variables`` (Deb and Jain's by
    default); its fitness tracks ``quality`` ("igd" or "igd+") against the true front sampled at
    ``partitions`` (Deb and Jain's reference directions by default)."""
    if number not in NUMBERS:
        raise ValueError(f"DTLZ{number} is not defined here; choose one of {NUMBERS}")
    if isinstance(objectives, bool) or not isinstance(objectives, int) or objectives < 2:
        raise ValueError(f"DTLZ needs 2 or more objectives, got {objectives!r}")
    k = DISTANCE_VARIABLES[number] if distance_variables is None else distance_variables
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"distance_variables must be an int >= 1, got {k!r}")
    m = objectives
    front = true_front(number, m, partitions)

    def fn(x):
        # float64 genes are evaluated in float64; the engine ranks float32 objectives, so they are rounded once
        exact = x.dtype == tf.float64
        return tf.cast(evaluate(_TF, x if exact else tf.cast(x, tf.float32), number, m), tf.float32)

    fn.__name__ = f"dtlz{number}"
    fitness = evo.fitness.Objectives(fn, ("min",) * m, name=f"dtlz{number}_{m}", reference_front=front,
                                     quality=quality)
    return Dtlz(f"DTLZ{number} ({m} objectives)", number, m, m + k - 1, fitness,
                lambda x: evaluate(_NumPy, np.asarray(x, np.float64), number, m), front)


def model(problem: Dtlz, selection, mode: str = "xla", seed: int = 0, eta_c: float = 30.0,
          eta_m: float = 20.0, mutation_probability: float = 1.0, dtype: str = "float32") -> evo.Model:
    """A real-coded GA on ``problem`` with ``selection``: simulated binary crossover (probability 1) and
    polynomial mutation (rate 1 / variables) of each child with ``mutation_probability``, Deb and Jain's
    variation for NSGA-III (pymoo's NSGA-III mutates a child with probability 0.9), on genes of ``dtype``
    ("float64": pymoo's precision, see ``start``)."""
    inputs = evo.Input(shape=(problem.variables,), dtype=dtype)
    x = evo.ops.SimulatedBinaryCrossover(problem.low, problem.high, eta=eta_c, probability=1.0)(inputs)
    x = evo.ops.PolynomialMutation(problem.low, problem.high, eta=eta_m, probability=mutation_probability)(x)
    out = evo.Model(inputs, x, name=f"dtlz{problem.number}_{problem.objectives}")
    out.compile(fitness=problem.fitness, selection=selection, mode=mode, seed=seed)
    return out


def start(problem: Dtlz, size: int, seed: int = 0, dtype: str = "float32") -> tf.Tensor:
    """A uniform random population of ``size`` in the unit box, genes of ``dtype``.

    Why float64 can pay: near the front, float32 distance variables of many individuals round to the same
    value, and simulated binary crossover cannot move a gene both parents share (it spreads children by the
    parents' gap), so only mutation moves them on; in float64 they stay apart, as in pymoo.
    """
    return evo.population.uniform((size, problem.variables), problem.low, problem.high, seed=seed, dtype=dtype)
