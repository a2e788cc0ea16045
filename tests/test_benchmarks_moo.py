"""course bench moo's NumPy NSGA-II: the same selection as the engine's, and it converges.

The baseline is only a fair comparison if it runs the same algorithm: its survivors equal
``pareto.order``'s first n on random and tied objectives, its operators keep children in bounds,
and a short run on ZDT1 improves the hypervolume.
"""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import benchmarks
from course_lib.benchmarks import moo
from course_lib.evo import pareto
from course_lib.problems import multiobjective as mo


@pytest.mark.parametrize("seed, ties", [(0, False), (1, True)])
def test_numpy_survivors_equal_the_engines_nsga2_order(seed, ties):
    r = np.random.default_rng(seed)
    f = r.integers(0, 5, (64, 2)).astype(np.float64) if ties else r.random((64, 2))
    values = tf.constant(np.concatenate([f, np.zeros((64, 1))], 1), tf.float32)
    want = pareto.order(values, (-1.0, -1.0), until=32).numpy()[:32]
    np.testing.assert_array_equal(moo.numpy_survivors(f.astype(np.float32), 32), want)


def test_numpy_nsga2_improves_zdt1_and_stays_in_bounds():
    problem = mo.zdt(1)
    seen = []
    x, _ = moo.numpy_nsga2(40, 60, on_generation=lambda g, f: seen.append(problem.hypervolume(f)))
    assert x.min() >= 0 and x.max() <= 1
    assert seen[-1] > seen[0] and seen[-1] > 0.2


def test_the_command_is_registered():
    assert benchmarks.commands()["moo"] is moo.bench_moo
    assert moo.bench_moo.bench_command == "moo"
