"""course_lib.problems.multiobjective: NSGA-II finds the known fronts, also on many devices.

Quicker budgets than the benchmark's (population 100 and 250 generations, ``course bench moo``):
ZDT1 with 150 generations lands near its true front; the two-value knapsack's front is found
exactly (12 items); the true fronts' hypervolumes are the exact ones; under MirroredStrategy on
2 virtual CPUs global selection and islands both give feasible fronts and repeat exactly. The NumPy
NSGA-II keeps the engine's survivors and improves ZDT1.
"""

import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo, processes
from course_lib.evo import pareto
from course_lib.problems import multiobjective as mo

pytestmark = pytest.mark.timeout(400)


def test_true_fronts_have_their_exact_hypervolumes():
    assert mo.zdt(1).true_hypervolume == pytest.approx(1.21 - 1 / 3, abs=1e-4)  # the box less the area above
    assert mo.zdt(2).true_hypervolume == pytest.approx(1.21 - 2 / 3, abs=1e-4)
    assert mo.dtlz2().true_hypervolume == pytest.approx(1.331 - np.pi / 6)
    front = mo.zdt(3).front(1000)
    assert np.all(np.diff(front[:, 0]) > 0) and np.all(np.diff(front[:, 1]) < 0)  # non-dominated, 5 pieces
    with pytest.raises(ValueError, match="choose 1, 2 or 3"):
        mo.zdt(4)


@pytest.mark.slow
def test_nsga2_lands_near_the_zdt1_front():
    problem = mo.zdt(1)
    result = mo.real_coded_model(problem, mode="xla", seed=0).evolve(mo.start(problem, 100), generations=150)
    front = result.front.objectives
    assert result.front.hypervolume > 0.97 * problem.true_hypervolume
    assert np.abs(front[:, 1] - (1 - np.sqrt(front[:, 0]))).mean() < 0.02  # distance to f2 = 1 - sqrt(f1)
    assert front[:, 0].max() - front[:, 0].min() > 0.9  # spread along the whole front


@pytest.mark.slow
def test_the_two_value_knapsack_front_is_found_exactly():
    fitness, data = mo.knapsack(12, seed=0)
    inputs = evo.Input(shape=(12,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=1 / 12)(evo.ops.UniformCrossover()(inputs))
    model = evo.Model(inputs, x)
    model.compile(fitness=fitness, selection=evo.selection.NSGA2(), mode="xla", seed=0)
    result = model.evolve(evo.population.random_integers((64, 12), 0, 2, seed=0), generations=60)
    np.testing.assert_array_equal(result.front.objectives, mo.knapsack_front(data))
    assert np.all(result.front.genomes @ data["weights"] <= data["capacity"])


def distributed_report() -> dict:
    """In a fresh process on 2 virtual CPUs: knapsack fronts under global selection and islands, twice."""
    from course_lib import devices, distribute

    cpus = devices.virtual_cpus(2)
    strategy = distribute.make_strategy("mirrored", cpus)
    fitness, data = mo.knapsack(12, seed=0)
    inputs = evo.Input(shape=(12,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=1 / 12)(evo.ops.UniformCrossover()(inputs))
    model = evo.Model(inputs, x)
    model.compile(fitness=fitness, selection=evo.selection.NSGA2(), mode="graph", seed=0)
    pop = evo.population.random_integers((64, 12), 0, 2, seed=0)
    out = {"exact": mo.knapsack_front(data).tolist(), "capacity": data["capacity"], "weights": data["weights"]}
    for how in ("global", "islands"):
        runs = [model.evolve(pop, generations=60, strategy=strategy, distribution=how, migration_interval=5,
                             migrants=4) for _ in range(2)]
        out[how] = {"front": runs[0].front.objectives.tolist(), "genomes": runs[0].front.genomes.tolist(),
                    "repeat": runs[0].front.objectives.tolist() == runs[1].front.objectives.tolist()
                    and runs[0].history == runs[1].history, "hypervolume": runs[0].history["best"]}
    return out


@pytest.mark.slow
def test_fronts_on_two_replicas_global_and_islands():
    source = f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        import test_problems_multiobjective as t
        result = t.distributed_report()
    """
    out = processes.run(source=textwrap.dedent(source), env={"TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=300).result
    for how in ("global", "islands"):
        assert out[how]["repeat"]
        assert np.all(np.asarray(out[how]["genomes"]) @ out["weights"] <= out["capacity"])
        assert len(out[how]["front"]) >= len(out["exact"]) - 1  # at most one point short of the exact front
    assert out["global"]["front"] == out["exact"]


# -- the NumPy NSGA-II baseline is only a fair comparison if it runs the same algorithm --

@pytest.mark.parametrize("seed, ties", [(0, False), (1, True)])
def test_numpy_survivors_equal_the_engines_nsga2_order(seed, ties):
    r = np.random.default_rng(seed)
    f = r.integers(0, 5, (64, 2)).astype(np.float64) if ties else r.random((64, 2))
    values = tf.constant(np.concatenate([f, np.zeros((64, 1))], 1), tf.float32)
    want = pareto.order(values, (-1.0, -1.0), until=32).numpy()[:32]
    np.testing.assert_array_equal(mo.numpy_survivors(f.astype(np.float32), 32), want)


def test_numpy_nsga2_improves_zdt1_and_stays_in_bounds():
    problem = mo.zdt(1)
    seen = []
    x, _ = mo.numpy_nsga2(problem, 40, 60, on_generation=lambda g, f: seen.append(problem.hypervolume(f)))
    assert x.min() >= 0 and x.max() <= 1
    assert seen[-1] > seen[0] and seen[-1] > 0.2
