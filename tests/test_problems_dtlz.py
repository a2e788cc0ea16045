"""course_lib.problems.dtlz and nsga3_numpy: DTLZ1-4 for any number of objectives and their fronts.

The true fronts are computed (simplex sum 1/2, unit sphere) at the reference directions; a point whose
distance variables are 1/2 lies on the front for every problem; the TensorFlow and NumPy objectives
agree; the front's IGD to itself is 0; the NumPy NSGA-III's fronts are the engine's; bad input raises.
"""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.problems import dtlz, nsga3_numpy

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("number", dtlz.NUMBERS)
@pytest.mark.parametrize("m", [2, 3, 5, 8, 10])
def test_points_with_centred_distance_variables_lie_on_the_front(number, m):
    problem = dtlz.dtlz(number, m)
    assert problem.variables == m + dtlz.DISTANCE_VARIABLES[number] - 1
    x = np.random.default_rng(m).random((20, problem.variables))
    x[:, m - 1:] = 0.5
    f = problem.numpy(x)
    assert f.shape == (20, m) and np.all(f >= -1e-12)
    if number == 1:
        np.testing.assert_allclose(f.sum(axis=1), 0.5)
    else:
        np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0)
    np.testing.assert_allclose(problem.fitness(tf.constant(x, tf.float32)).numpy()[:, :m], f, rtol=1e-4, atol=1e-5)
    x[:, m - 1:] = 0.9  # away from the front
    g = problem.numpy(x)
    assert np.all(g.sum(axis=1) > 0.5) if number == 1 else np.all(np.linalg.norm(g, axis=1) > 1.0)


@pytest.mark.parametrize("number, m, count", [(1, 5, 210), (2, 8, 156), (3, 3, 91), (4, 10, 275)])
def test_true_fronts_are_computed_at_deb_and_jains_directions(number, m, count):
    front = dtlz.dtlz(number, m).front
    assert front.shape == (count, m) and np.all(front >= 0)
    if number == 1:
        np.testing.assert_allclose(front.sum(axis=1), 0.5)
    else:
        np.testing.assert_allclose(np.linalg.norm(front, axis=1), 1.0)
    problem = dtlz.dtlz(number, m)
    assert problem.igd(front) == pytest.approx(0.0, abs=1e-6)
    assert problem.igd(front * 1.2) > 0.05


def test_the_fitness_tracks_igd_or_igd_plus_as_asked():
    assert dtlz.dtlz(2, 5).fitness.quality == "igd"
    plus = dtlz.dtlz(2, 5, quality="igd+").fitness
    assert plus.quality == "igd+" and plus.tracked.plus and not plus.maximize


def test_the_numpy_fronts_are_the_engines():
    r = np.random.default_rng(0)
    f = np.round(r.random((50, 4)) * 3) / 3
    v = np.where(r.random(50) < 0.2, r.random(50), 0.0)
    rank = nsga3_numpy.numpy_ranks(f, v, 50)
    g, vv = evo.pareto.minimise_space(tf.constant(np.c_[f, v], tf.float32), (-1.0,) * 4)
    np.testing.assert_array_equal(rank, evo.pareto.ranks(g, vv).numpy())


@pytest.mark.parametrize("args, match", [((5, 3), "DTLZ5"), ((2, 1), "2 or more objectives"),
                                         ((2, 3, 0), "distance_variables")])
def test_bad_problems_raise_clear_errors(args, match):
    with pytest.raises(ValueError, match=match):
        dtlz.dtlz(*args)
