"""course_lib.evo.fitness: loadable instances (TSP and Knapsack) swap their data under a compiled model
without compiling again, and run exactly as a model built for the new instance."""

import numpy as np
import pytest

from course_lib import evo


def tsp_model(xy, loadable):
    inputs = evo.Input(shape=(len(xy),), dtype="int32")
    model = evo.Model(inputs, evo.ops.InversionMutation(rate=0.5)(evo.ops.OrderCrossover()(inputs)))
    model.compile(fitness=evo.fitness.TSP(coordinates=xy, loadable=loadable), selection=evo.selection.Elitist(),
                  mode="xla", seed=0)
    return model


@pytest.mark.slow
def test_a_loadable_tsp_takes_new_cities_without_a_retrace():
    sets = [np.random.default_rng(seed).uniform(0, 1, (12, 2)) for seed in range(3)]
    start = evo.population.permutations(24, 12, seed=0)
    model = tsp_model(sets[0], loadable=True)
    counts = []
    for xy in sets:
        model.fitness.load(coordinates=xy)
        result = model.evolve(start, generations=10)
        counts.append(model.trace_count)
        alone = tsp_model(xy, loadable=False).evolve(start, generations=10)
        np.testing.assert_array_equal(result.best, alone.best)
        assert result.best_fitness == pytest.approx(alone.best_fitness, rel=1e-6)
    assert counts[0] > 0 and counts == [counts[0]] * 3  # traced by the first evolve only
    with pytest.raises(ValueError, match="compiled for instances of size 12, got one of size 13"):
        model.fitness.load(coordinates=np.zeros((13, 2)) + np.arange(13)[:, None])


def test_a_constant_tsp_refuses_to_load_and_says_how():
    fit = evo.fitness.TSP(coordinates=np.random.default_rng(0).uniform(0, 1, (5, 2)))
    with pytest.raises(ValueError, match="build it with loadable=True"):
        fit.load(coordinates=np.zeros((5, 2)))


def test_a_loadable_knapsack_takes_a_new_instance_without_a_retrace():
    rng = np.random.default_rng(1)
    instances = [dict(weights=rng.integers(1, 20, 10), values=rng.integers(1, 30, 10), capacity=40 + 10 * k)
                 for k in range(2)]
    genes = rng.integers(0, 2, (32, 10)).astype("int32")

    def model_for(instance, loadable):
        inputs = evo.Input(shape=(10,), dtype="int32")
        model = evo.Model(inputs, evo.ops.BitFlipMutation(rate=0.1)(evo.ops.TwoPointCrossover()(inputs)))
        model.compile(fitness=evo.fitness.Knapsack(**instance, loadable=loadable), selection=evo.selection.Elitist(),
                      mode="graph", seed=0)
        return model

    model = model_for(instances[0], loadable=True)
    counts = []
    for instance in instances:
        model.fitness.load(**instance)
        result = model.evolve(genes, generations=8)
        counts.append(model.trace_count)
        alone = model_for(instance, loadable=False).evolve(genes, generations=8)
        np.testing.assert_array_equal(result.best, alone.best)
        assert result.best_fitness == alone.best_fitness
    assert counts == [counts[0]] * 2
    assert model.fitness.config() == {"items": 10}  # a checkpoint pins the size, not one instance
