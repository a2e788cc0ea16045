"""course_lib.benchmarks.nsga3: the NumPy NSGA-III approaches DTLZ2's front, and the command is registered."""

import numpy as np

from course_lib import benchmarks
from course_lib.benchmarks import nsga3
from course_lib.problems import dtlz


def test_the_numpy_nsga3_approaches_the_true_front():
    problem = dtlz.dtlz(2, 3)
    start = problem.igd(problem.numpy(np.random.default_rng(0).random((92, problem.variables))))
    _, f = nsga3.numpy_nsga3(problem, 92, 40)
    assert f.shape == (92, 3)
    assert problem.igd(f) < 0.5 * start


def test_the_command_is_registered():
    assert "nsga3" in benchmarks.commands()
