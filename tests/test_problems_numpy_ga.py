"""course_lib.problems.numpy_ga: the NumPy GAs the engine is judged against evolve."""

import numpy as np

from course_lib import evo
from course_lib.lessons.evolution import RASTRIGIN
from course_lib.problems import numpy_ga


def test_numpy_onemax_improves_and_keeps_binary_genes():
    pop = evo.population.random_integers((64, 32), 0, 2, seed=0).numpy()
    final, fit = numpy_ga.numpy_onemax(pop, 30, rate=1 / 32, seed=0)
    assert final.dtype == np.int32 and set(np.unique(final)) <= {0, 1}
    np.testing.assert_array_equal(fit, final.sum(1))
    assert fit.mean() > pop.sum(1).mean() + 5


def test_numpy_rastrigin_improves_within_bounds():
    pop = evo.population.uniform((64, 5), -5.12, 5.12, seed=0).numpy()
    final, fit = numpy_ga.numpy_rastrigin(pop, 30, **RASTRIGIN)
    assert np.abs(final).max() <= 5.12
    np.testing.assert_allclose(fit, evo.fitness.Rastrigin()(final).numpy(), rtol=1e-4)
    assert fit.mean() < evo.fitness.Rastrigin()(pop).numpy().mean()
