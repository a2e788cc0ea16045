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


def _box_points(problem, rng):
    """Random points of the unit box, every corner of the position variables with the distance variables
    at 0, 1/2 or 1, and single variables at a bound."""
    n, m = problem.variables, problem.objectives
    corners = np.array(np.meshgrid(*[[0.0, 1.0]] * (m - 1), indexing="ij")).reshape(m - 1, -1).T
    rows = [rng.random((200, n))]
    for z in (0.0, 0.5, 1.0):
        rows.append(np.concatenate([corners, np.full((len(corners), n - m + 1), z)], 1))
    for bound in (0.0, 1.0):
        single = np.tile(rng.random(n), (n, 1))
        single[np.arange(n), np.arange(n)] = bound
        rows.append(single)
        rows.append(np.full((1, n), bound))
    return np.concatenate(rows)


@pytest.mark.parametrize("number", dtlz.NUMBERS)
@pytest.mark.parametrize("m", [2, 3, 5, 8, 10])
def test_no_objective_is_negative_anywhere_in_the_box_bounds_included(number, m):
    """float32 cos(pi/2) is below 0: unclamped, a point at x_i = 1 would have objectives just below 0."""
    problem = dtlz.dtlz(number, m)
    x = _box_points(problem, np.random.default_rng(number * 100 + m))
    engine = problem.fitness(tf.constant(x, tf.float32)).numpy()
    assert engine.shape == (len(x), m + 1)
    assert np.all(engine[:, :m] >= 0.0)
    assert np.all(problem.numpy(x) >= 0.0)


def test_a_point_at_the_upper_bound_is_dominated_by_its_projection_on_the_front():
    problem = dtlz.dtlz(2, 3)
    x = np.full((2, problem.variables), 0.5)
    x[:, 0] = 1.0
    x[1, 2:] = 1.0
    f = problem.fitness(tf.constant(x, tf.float32)).numpy()[:, :3]
    np.testing.assert_array_equal(f[:, :2], 0.0)
    g, v = evo.pareto.minimise_space(tf.constant(np.c_[f, np.zeros(2)], tf.float32), (-1.0,) * 3)
    np.testing.assert_array_equal(evo.pareto.ranks(g, v).numpy(), [0, 1])


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


@pytest.mark.parametrize("number", [1, 3])
def test_the_multimodal_distance_is_accurate_in_float32_near_the_front(number):
    """g = 100 sum(d² + 2 sin²(10 pi d)) has no cancellation: near the front the float32 objectives match
    float64 to a few 1e-6, where k + sum(d² - cos(20 pi d)) would round g to steps of about 1e-4."""
    problem = dtlz.dtlz(number, 3)
    r = np.random.default_rng(number)
    x = r.random((200, problem.variables)).astype(np.float32)
    x[:, 2:] = (0.5 + r.normal(0, 1e-4, (200, problem.variables - 2))).astype(np.float32)
    engine = problem.fitness(tf.constant(x)).numpy()[:, :3]
    np.testing.assert_allclose(engine, problem.numpy(x.astype(np.float64)), rtol=0, atol=5e-6)
