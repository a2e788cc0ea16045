"""course_lib.evo as a library: no silent wrong answer, a light import, ask/tell."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo

N_CITIES = 12


def cities(seed):
    return np.random.default_rng(seed).uniform(0, 1, (N_CITIES, 2))


def tsp_model(fitness, kind="TwoOpt"):
    x = evo.Input(shape=(N_CITIES,), dtype="int32")
    op = getattr(evo.ops, kind)(steps=2, candidates=8, neighbours=4)
    model = evo.Model(x, op(evo.ops.SwapMutation(rate=0.2)(x)))
    model.compile(fitness=fitness, selection=evo.selection.Tournament(size=2), mode="graph", seed=3)
    return model, op


# -- no silent wrong answer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["TwoOpt", "OrOpt"])
def test_local_search_uses_the_cities_a_loadable_tsp_loaded(kind):
    fitness = evo.fitness.TSP(coordinates=cities(0), loadable=True)
    model, op = tsp_model(fitness, kind)
    pop = evo.population.permutations(16, N_CITIES, seed=1)
    model.evolve(pop, generations=2)
    fitness.load(coordinates=cities(1))
    with pytest.raises(ValueError, match="replaced since"):
        op(pop, seed=0)  # called directly, it says its distances are stale
    loaded = model.evolve(pop, generations=3)
    fresh, _ = tsp_model(evo.fitness.TSP(coordinates=cities(1), loadable=True), kind)
    expected = fresh.evolve(pop, generations=3)
    np.testing.assert_array_equal(loaded.population, expected.population)
    assert loaded.best_fitness == expected.best_fitness


def test_an_op_shared_by_two_models_uses_each_models_fitness():
    first, op = tsp_model(evo.fitness.TSP(coordinates=cities(0)))
    x = evo.Input(shape=(N_CITIES,), dtype="int32")
    second = evo.Model(x, op(evo.ops.SwapMutation(rate=0.2)(x)))
    second.compile(fitness=evo.fitness.TSP(coordinates=cities(1)), selection=evo.selection.Tournament(size=2),
                   mode="graph", seed=3)  # re-attaches the shared op to the second TSP
    pop = evo.population.permutations(16, N_CITIES, seed=1)
    got = first.evolve(pop, generations=3)
    alone, _ = tsp_model(evo.fitness.TSP(coordinates=cities(0)))
    np.testing.assert_array_equal(got.population, alone.evolve(pop, generations=3).population)


def test_bit_flip_refuses_genes_other_than_0_and_1():
    pop = np.array([[0, 1, 2, 1], [1, 0, 0, 1]], np.int32)
    with pytest.raises(ValueError, match="0 or 1, got values \\[2\\]"):
        evo.ops.BitFlipMutation(rate=0.5)(pop, seed=0)
    x = evo.Input(shape=(4,), dtype="uint8")
    model = evo.Model(x, evo.ops.BitFlipMutation(rate=0.5)(x))
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="eager")
    with pytest.raises(ValueError, match="bit_flip_mutation.* needs genes that are 0 or 1"):
        model.evolve(pop.astype(np.uint8), generations=1)


def test_knapsack_refuses_genes_other_than_0_and_1():
    fitness = evo.fitness.Knapsack(weights=[1.0, 2.0, 3.0], values=[3.0, 2.0, 1.0], capacity=10.0)
    with pytest.raises(ValueError, match="Knapsack.*0 or 1"):
        fitness(np.array([[2, 0, 0]], np.int32))  # item 0 twice
    x = evo.Input(shape=(3,), dtype="int32")
    model = evo.Model(x, evo.ops.RandomValueMutation(rate=0.5, low=0, high=3)(x))
    model.compile(fitness=fitness, selection=evo.selection.Tournament(size=2), mode="eager")
    with pytest.raises(ValueError, match="Knapsack.*0 or 1"):
        model.evolve(np.array([[2, 0, 0], [0, 1, 1]], np.int32), generations=1)


def test_fitness_refuses_float64_rather_than_rounding():
    class Precise(evo.fitness.Fitness):
        def evaluate(self, population):
            return tf.reduce_sum(tf.cast(population, tf.float64), axis=1) + 1e-9

    with pytest.raises(TypeError, match="float64.*round it quietly"):
        Precise()(np.ones((2, 3), np.int32))


def test_random_search_minimised_and_nan():
    keras = pytest.importorskip("keras")
    net = evo.neuro.mlp(2, [3], 1)

    class Scores(evo.neuro.Networks):
        maximize = False

        def evaluate(self, population):
            first = population[:, 0]
            return tf.where(first > 0, tf.constant(np.nan, tf.float32), tf.abs(first))

    out = evo.neuro.random_search(Scores(net), net, samples=32, batch=16, seed=0)
    assert out["best_genome"] is not None
    assert not np.isnan(out["best"][-1])
    assert out["best"][-1] == pytest.approx(abs(out["best_genome"][0]))
    assert isinstance(net, keras.Model)


class ThreeObjectives(evo.fitness.MultiObjective):
    def evaluate(self, population):
        return population[:, :3]


def test_traffic_counts_every_value_of_a_multi_objective_fitness():
    x = evo.Input(shape=(4,), dtype="float32")
    model = evo.Model(x, evo.ops.GaussianMutation(rate=0.5, stddev=0.1)(x))
    model.compile(fitness=ThreeObjectives(("min", "min", "min"), reference=(2.0, 2.0, 2.0)),
                  selection=evo.selection.NSGA2(), mode="eager")
    row = evo.sharding.traffic(model, 8, 2)["bytes per row"]
    assert row == 4 * 4 + 4 * (3 + 1)


def test_early_stopping_generation_is_its_own_stop_only():
    x = evo.Input(shape=(16,), dtype="int32")
    model = evo.Model(x, evo.ops.BitFlipMutation(rate=0.05)(x))
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph")
    stop = evo.callbacks.EarlyStopping(target=1000)  # never reached
    clock = iter(range(100))
    watch = evo.callbacks.Stopwatch(budget_s=2, clock=lambda: next(clock), start=0)
    result = model.evolve(evo.population.random_integers((8, 16), 0, 2), generations=50, chunk=5,
                          callbacks=[stop, watch])
    assert result.generations < 50 and not result.stopped_early
    assert stop.stopped_generation is None
    reached = evo.callbacks.EarlyStopping(target=0)  # reached by the first population
    model.evolve(evo.population.random_integers((8, 16), 0, 2), generations=50, chunk=5, callbacks=[reached])
    assert reached.stopped_generation == 0


# -- the engine imports only the engine ----------------------------------------------------------------------


def loaded_after(code: str) -> set[str]:
    listing = "import sys; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", f"{code}\n{listing}"], capture_output=True, text=True, check=True,
                         timeout=300)
    return set(out.stdout.split())


def test_importing_the_engine_imports_no_keras_and_one_op_module_per_name():
    # TensorFlow's own import may load Keras (its tf.keras alias): the engine adds none of it
    tensorflow = loaded_after("import tensorflow")
    loaded = loaded_after("from course_lib import evo\nevo.ops.BitFlipMutation") - tensorflow
    assert not any(m == "keras" or m.startswith("keras.") for m in loaded)
    assert "course_lib.evo.neuro" not in loaded
    ops = {m for m in loaded if m.startswith("course_lib.evo.ops.")}
    assert ops == {"course_lib.evo.ops.base", "course_lib.evo.ops.mutation"}
    assert {m for m in loaded if m.startswith("course_lib.")} <= {m for m in loaded if m.startswith("course_lib.evo")}
    with_neuro = loaded_after("from course_lib import evo\nevo.neuro.mlp") - tensorflow
    assert "course_lib.evo.neuro" in with_neuro
