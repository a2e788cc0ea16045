"""evo.nsga3.normalize against pymoo's own normalization (``HyperplaneNormalization``: its extreme-point and
nadir functions), an oracle that shares none of the engine's code or constants: the same pools, generation
after generation, give the same ideal point, extreme points and nadir point. Skipped without pymoo (the
``bench`` extra)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from course_lib.evo import nsga3

pytest.importorskip("pymoo")
from pymoo.algorithms.moo.nsga3 import HyperplaneNormalization  # noqa: E402
from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting  # noqa: E402


def pools(seed: int, m: int, generations: int, p: int = 40):
    """Pools that move towards a front, as a run's do: random points above a simplex, shrinking, some
    generations with the extreme ends missing."""
    gen = np.random.default_rng(seed)
    for g in range(generations):
        base = gen.dirichlet(np.ones(m), p)
        pool = base * (1 + 2.0 * 0.7 ** g * gen.random((p, 1))) + 0.05 * gen.random((p, m))
        if g % 3 == 2:  # a generation that lost the points at the ends of the front
            pool = pool[np.argsort(pool.max(axis=1))[: p // 2]]
        yield pool.astype(np.float32)


@pytest.mark.parametrize("m, seed", [(2, 0), (3, 1), (3, 2), (5, 3), (8, 4)])
def test_normalize_matches_pymoos_normalization_generation_after_generation(m, seed):
    oracle = HyperplaneNormalization(m)
    state = None
    for g, pool in enumerate(pools(seed, m, generations=8)):
        front = NonDominatedSorting().do(pool.astype(np.float64), only_non_dominated_front=True)
        first = np.zeros(len(pool), bool)
        first[front] = True
        oracle.update(pool.astype(np.float64), nds=front)
        normalized, ideal, scale, state = nsga3.normalize(tf.constant(pool), tf.ones(len(pool), tf.bool),
                                                          tf.constant(first), state)
        np.testing.assert_allclose(ideal.numpy(), oracle.ideal_point, rtol=1e-6, err_msg=f"ideal, generation {g}")
        np.testing.assert_allclose(state.extremes.numpy(), oracle.extreme_points, rtol=1e-6,
                                   err_msg=f"extreme points, generation {g}")
        np.testing.assert_allclose((ideal + scale).numpy(), oracle.nadir_point, rtol=1e-4,
                                   err_msg=f"nadir point, generation {g}")
        np.testing.assert_allclose(normalized.numpy(), (pool - oracle.ideal_point) /
                                   (oracle.nadir_point - oracle.ideal_point), rtol=1e-4, atol=1e-5)
