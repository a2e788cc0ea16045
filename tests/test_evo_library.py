"""course_lib.evo as a library: no silent wrong answer, a light import, ask/tell."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import rng

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


@pytest.mark.slow
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


def modules_loaded_by(*steps: str) -> list[set[str]]:
    """The modules one fresh interpreter has loaded after each step, run in turn (one TensorFlow import)."""
    listing = "print(' '.join(sorted(sys.modules)))"
    code = "import sys\n" + "".join(f"{step}\n{listing}\n" for step in steps)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    return [set(line.split()) for line in out.stdout.splitlines()[-len(steps):]]


@pytest.mark.slow
def test_importing_the_engine_imports_no_keras_and_one_op_module_per_name():
    # TensorFlow's own import may load Keras (its tf.keras alias): the engine adds none of it
    tensorflow, engine, with_neuro = modules_loaded_by(
        "import tensorflow", "from course_lib import evo\nevo.ops.BitFlipMutation", "evo.neuro.mlp")
    loaded = engine - tensorflow
    assert not any(m == "keras" or m.startswith("keras.") for m in loaded)
    assert "course_lib.evo.neuro" not in loaded
    ops = {m for m in loaded if m.startswith("course_lib.evo.ops.")}
    assert ops == {"course_lib.evo.ops.base", "course_lib.evo.ops.mutation"}
    assert {m for m in loaded if m.startswith("course_lib.")} <= {m for m in loaded if m.startswith("course_lib.evo")}
    assert "course_lib.evo.neuro" in with_neuro - engine


# -- ask/tell ------------------------------------------------------------------------------------------------


def onemax_model(pack="auto"):
    x = evo.Input(shape=(24,), dtype="int32")
    y = evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate=1 / 24)(x))
    model = evo.Model(x, y)
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph", seed=5,
                  pack=pack)
    return model


def run_ask_tell(search, score, generations):
    while search.generation < generations:
        search.tell(score(search.ask()))
    return search.result()


def assert_same(a, b):
    np.testing.assert_array_equal(a.population, b.population)
    np.testing.assert_array_equal(a.fitness, b.fitness)
    np.testing.assert_array_equal(a.best, b.best)
    assert a.best_fitness == b.best_fitness
    assert a.history == b.history


@pytest.mark.parametrize("pack", ["auto", False])
def test_ask_tell_reproduces_evolve_with_a_numpy_fitness(pack):
    pop = evo.population.random_integers((16, 24), 0, 2, seed=1)
    expected = onemax_model(pack).evolve(pop, generations=6)
    got = run_ask_tell(onemax_model(pack).ask_tell(pop), lambda g: g.sum(axis=1).astype(np.float32), 6)
    assert_same(got, expected)


class NumpyObjective(evo.fitness.Fitness):
    """A float objective computed in NumPy: the engine calls it through tf.numpy_function."""

    maximize = False

    @staticmethod
    def values(genomes):
        return (np.abs(genomes - 0.3).sum(axis=1) + np.sin(genomes[:, 0])).astype(np.float32)

    def evaluate(self, population):
        out = tf.numpy_function(self.values, [population], tf.float32)
        out.set_shape(population.shape[:1])
        return out


def float_model(fitness, selection):
    x = evo.Input(shape=(6,), dtype="float32")
    y = evo.ops.GaussianMutation(stddev=0.2, rate=0.5)(evo.ops.UniformCrossover()(x))
    model = evo.Model(x, y)
    model.compile(fitness=fitness, selection=selection, mode="graph", seed=2)
    return model


def test_ask_tell_reproduces_evolve_with_a_float_objective_and_elitism():
    pop = evo.population.uniform((12, 6), -1, 1, seed=3)
    expected = float_model(NumpyObjective(), evo.selection.Tournament(size=3, elitism=2)).evolve(pop, generations=5)
    model = float_model(evo.fitness.External(maximize=False), evo.selection.Tournament(size=3, elitism=2))
    assert_same(run_ask_tell(model.ask_tell(pop), NumpyObjective.values, 5), expected)


class Constrained(evo.fitness.MultiObjective):
    def evaluate(self, population):
        f1 = population[:, 0]
        f2 = tf.reduce_sum(tf.square(population - 1.0), axis=1)
        return tf.stack([f1, f2], 1), tf.nn.relu(population[:, 1] - 0.5)


def test_ask_tell_multi_objective_and_constrained_with_tensors():
    pop = evo.population.uniform((12, 6), -1, 1, seed=4)
    fitness = Constrained(("min", "min"), reference=(2.0, 20.0))
    expected = float_model(fitness, evo.selection.NSGA2()).evolve(pop, generations=4)
    search = float_model(evo.fitness.MultiObjective(("min", "min"), reference=(2.0, 20.0)),
                         evo.selection.NSGA2()).ask_tell(pop)
    got = run_ask_tell(search, fitness, 4)  # the fitness called eagerly: a (N, 3) tensor
    assert_same(got, expected)
    assert got.front is not None and got.front.objectives.shape[1] == 2
    with pytest.raises(ValueError, match=r"\(rows, 2\) objectives or \(rows, 3\)"):
        search.ask()
        search.tell(np.zeros((search.n * 1, 4)))


def test_ask_tell_save_and_resume_equals_an_uninterrupted_search(tmp_path):
    pop = evo.population.random_integers((16, 24), 0, 2, seed=1)
    score = lambda g: g.sum(axis=1).astype(np.float32)  # noqa: E731
    whole = run_ask_tell(onemax_model().ask_tell(pop), score, 5)
    first = onemax_model().ask_tell(pop)
    run_ask_tell(first, score, 2)
    first.ask()  # asked, not told: the saved state does not depend on it
    first.save(tmp_path / "search.npz")
    resumed = onemax_model().ask_tell(resume_from=tmp_path / "search.npz")
    assert resumed.generation == 2
    assert_same(run_ask_tell(resumed, score, 5), whole)
    other = onemax_model()
    other.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=3), mode="graph", seed=5)
    with pytest.raises(ValueError, match="different model"):
        other.ask_tell(resume_from=tmp_path / "search.npz")


def test_ask_tell_misuse_is_a_clear_error():
    search = onemax_model().ask_tell(evo.population.random_integers((8, 24), 0, 2))
    with pytest.raises(RuntimeError, match="call ask\\(\\) first"):
        search.tell(np.zeros(8))
    with pytest.raises(ValueError, match="one value per asked genome, shape \\(8,\\)"):
        search.ask()
        search.tell(np.zeros(7))
    with pytest.raises(TypeError, match="computed outside"):
        evo.fitness.External()(np.zeros((2, 3)))


# -- save and load -------------------------------------------------------------------------------------------


class Negate(evo.ops.Op):
    """A custom op (registered by being defined): flips every gene of 0/1 genomes."""

    def __init__(self, every: int = 1, name=None):
        super().__init__(name)
        self.every = every

    def apply(self, inputs, key, rows):
        return 1 - rows.take(inputs[0])


def test_a_saved_model_loads_and_evolves_bit_identically(tmp_path):
    x = evo.Input(shape=(24,), dtype="int32")
    a = evo.ops.BitFlipMutation(rate=0.0123456789)(x)
    b = evo.ops.TwoPointCrossover(probability=0.7)(Negate(every=2)(x), a)  # two inputs
    model = evo.Model([x], [a, b], name="two outputs")
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Rank(pressure=1.7, elitism=1),
                  mode="graph", seed=11, pack=False, target="cpu")
    model.save(tmp_path / "model.npz")
    loaded = evo.load_model(tmp_path / "model.npz")
    assert loaded.signature(16) == model.signature(16) and loaded.name == "two outputs"
    assert (loaded.mode, loaded.seed, loaded.pack, loaded.target) == ("graph", 11, False, "cpu")
    pop = evo.population.random_integers((16, 24), 0, 2, seed=2)
    assert_same(loaded.evolve(pop, generations=4), model.evolve(pop, generations=4))


@pytest.mark.slow
def test_a_fitness_holding_data_saves_its_arrays(tmp_path):
    fitness = evo.fitness.TSP(coordinates=cities(0), loadable=True)
    model, _ = tsp_model(fitness)
    fitness.load(coordinates=cities(2))  # the loaded cities are what is saved
    evo.save_model(model, tmp_path / "tsp.npz")
    loaded = evo.load_model(tmp_path / "tsp.npz")
    np.testing.assert_array_equal(np.asarray(loaded.fitness.distances), np.asarray(fitness.distances))
    assert loaded.fitness.loadable
    pop = evo.population.permutations(16, N_CITIES, seed=1)
    assert_same(loaded.evolve(pop, generations=2), model.evolve(pop, generations=2))
    knapsack = evo.fitness.Knapsack(weights=[1.0, 2.5], values=[3.0, 1.0], capacity=2.0)
    again = evo.fitness.Knapsack.from_config(knapsack.get_config())
    assert again.get_config()["penalty"] == knapsack.penalty
    np.testing.assert_array_equal(again.get_config()["weights"], [1.0, 2.5])


def test_loading_what_is_not_a_model_or_names_an_unknown_op_is_a_clear_error(tmp_path):
    np.savez(tmp_path / "other.npz", population=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="not a model saved by evo.save_model"):
        evo.load_model(tmp_path / "other.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="not a model saved by evo.save_model"):
        evo.load_model(tmp_path / "text.npz")
    x = evo.Input(shape=(4,), dtype="int32")
    model = evo.Model(x, Negate()(x))
    evo.save_model(model, tmp_path / "custom.npz")
    from course_lib.evo.ops.base import REGISTRY

    del REGISTRY["Negate"]  # as in a process that never defined it
    try:
        with pytest.raises(ValueError, match="uses the op 'Negate', which is not registered"):
            evo.load_model(tmp_path / "custom.npz")
    finally:
        REGISTRY["Negate"] = Negate
    model.compile(fitness=evo.fitness.Function(lambda p: tf.reduce_sum(p, 1), maximize=True),
                  selection=evo.selection.Tournament(size=2))
    with pytest.raises(TypeError, match="Function cannot be saved.*subclass"):
        evo.save_model(model, tmp_path / "function.npz")
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2),
                  metrics={"ones": lambda population, fitness: tf.reduce_mean(fitness)})
    with pytest.raises(TypeError, match="metrics \\(ones\\) are Python functions and cannot be saved"):
        model.save(tmp_path / "metrics.npz")
    assert not (tmp_path / "metrics.npz").exists()


# -- no false alarm --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ten_models_in_a_loop_print_no_retracing_warning():
    records = []

    class Keep(__import__("logging").Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = tf.get_logger()
    handler = Keep()
    logger.addHandler(handler)
    try:
        for seed in range(10):
            model = onemax_model()
            model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph",
                          seed=seed)
            model.evolve(evo.population.random_integers((8 + 2 * seed, 24), 0, 2, seed=seed), generations=2)
    finally:
        logger.removeHandler(handler)
    assert not [r for r in records if "retracing" in r], records


# -- docs/engine.md: the examples of these sections run ------------------------------------------------------

DOC_SECTIONS = ("## Ask/tell: a fitness computed outside TensorFlow", "## Saving and loading a model",
                "## Runtime parameters", "## Editing a compiled model", "## Metrics, results, budgets and TensorBoard")


def doc_examples():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "engine.md").read_text()
    blocks = []
    for heading in DOC_SECTIONS:
        assert heading in text, f"docs/engine.md lost its section {heading!r}"
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        blocks += [(heading, b.split("```", 1)[0]) for b in section.split("```python\n")[1:]]
    return blocks


@pytest.mark.parametrize("heading, code", doc_examples(), ids=lambda v: v[3:30] if v.startswith("##") else "code")
def test_docs_example_runs(heading, code):
    exec(compile(code, f"docs/engine.md {heading}", "exec"), {})


# -- results, budgets, TensorBoard -----------------------------------------------------------------------------


def test_result_counts_evaluations_generations_and_times_and_a_budget_stops_the_run(tmp_path):
    model = onemax_model()  # one output: 16 children per generation
    pop = evo.population.random_integers((16, 24), 0, 2, seed=1)
    result = model.evolve(pop, generations=5)
    assert (result.generations_run, result.evaluations) == (5, 16 + 5 * 16)
    assert result.wall_time_s >= result.compile_time_s > 0
    again = model.evolve(pop, generations=5)
    assert again.compile_time_s == 0  # the same program: nothing traced
    budget = evo.callbacks.EarlyStopping(max_evaluations=16 + 3 * 16 + 10)
    cut = model.evolve(pop, generations=50, callbacks=[budget])
    assert (cut.generations, cut.evaluations, cut.stopped_early) == (3, 64, True)
    assert budget.stopped_generation == 3
    assert cut.history == {k: v[:3] for k, v in result.history.items()}
    with pytest.raises(ValueError, match="less than the 16 evaluations of the first population"):
        model.evolve(pop, generations=5, callbacks=[evo.callbacks.EarlyStopping(max_evaluations=10)])


def test_tensorboard_writes_the_history_as_scalars(tmp_path):
    model = onemax_model()
    board = evo.callbacks.TensorBoard(tmp_path / "logs")
    result = model.evolve(evo.population.random_integers((16, 24), 0, 2, seed=1), generations=6, chunk=4,
                          callbacks=[board])
    written = {}
    for event_file in (tmp_path / "logs").iterdir():
        for record in tf.data.TFRecordDataset(str(event_file)):
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                written[(value.tag, event.step)] = float(tf.make_ndarray(value.tensor))
    for name, values in result.history.items():
        assert [written[(name, g + 1)] for g in range(6)] == pytest.approx(values, rel=1e-6)


# -- runtime parameters ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["graph", "xla"])
def test_another_seed_does_not_retrace(mode):
    pop = evo.population.random_integers((16, 24), 0, 2, seed=1)
    fitness, selection = evo.fitness.OneMax(), evo.selection.Tournament(size=2)
    model = onemax_model()
    results = {}
    for seed in (0, 1, 2, 1):
        model.compile(fitness=fitness, selection=selection, mode=mode, seed=seed)
        results.setdefault(seed, []).append(model.evolve(pop, generations=4))
        if seed == 0:
            traces = model.trace_count
    assert model.trace_count == traces  # one trace per program, across seeds
    assert not np.array_equal(results[0][0].population, results[2][0].population)
    assert_same(results[1][0], results[1][1])
    fresh = onemax_model()
    fresh.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode=mode, seed=2)
    assert_same(fresh.evolve(pop, generations=4), results[2][0])


def evolved(model, pop, seed, mode, fitness, selection, generations=4):
    model.compile(fitness=fitness, selection=selection, mode=mode, seed=seed)
    return model.evolve(pop, generations=generations)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["graph", "xla"])
def test_changed_rates_and_probabilities_run_the_same_program_as_a_fresh_model(mode):
    pop = evo.population.random_integers((16, 24), 0, 2, seed=1)
    fitness, selection = evo.fitness.OneMax(), evo.selection.Tournament(size=2)
    x = evo.Input(shape=(24,), dtype="int32")
    mutation, crossover = evo.ops.BitFlipMutation(rate=1 / 24), evo.ops.UniformCrossover(probability=0.9)
    model = evo.Model(x, crossover(mutation(x)))
    evolved(model, pop, 0, mode, fitness, selection)
    traces = model.trace_count
    runs = {}
    for seed, rate, probability in [(0, 0.5 / 24, 0.6), (1, 3 / 24, 0.3)]:
        mutation.rate, crossover.probability = rate, probability
        runs[seed, rate, probability] = evolved(model, pop, seed, mode, fitness, selection)
    assert model.trace_count == traces  # one trace: the seeds, rates and probabilities are inputs
    for (seed, rate, probability), result in runs.items():
        y = evo.Input(shape=(24,), dtype="int32")
        fresh = evo.Model(y, evo.ops.UniformCrossover(probability=probability)(
            evo.ops.BitFlipMutation(rate=rate)(y)))
        assert_same(evolved(fresh, pop, seed, mode, evo.fitness.OneMax(), evo.selection.Tournament(size=2)),
                    result)



def real_coded_model(dtype, eta, probability, gene_rate, mutation_eta, rate, stddev):
    x = evo.Input(shape=(6,), dtype=dtype)
    ops = (evo.ops.SimulatedBinaryCrossover(-5.0, 5.0, eta=eta, probability=probability, gene_rate=gene_rate),
           evo.ops.PolynomialMutation(-5.0, 5.0, eta=mutation_eta, rate=rate),
           evo.ops.GaussianMutation(stddev=stddev, rate=0.5, low=-5.0, high=5.0))
    return evo.Model(x, ops[2](ops[1](ops[0](x)))), ops


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_coded_knobs_are_inputs_held_in_the_genes_dtype(dtype):
    pop = evo.population.uniform((16, 6), -5.0, 5.0, seed=2, dtype=dtype)
    fitness, selection = evo.fitness.Sphere(), evo.selection.Tournament(size=2)
    model, (sbx, polynomial, gaussian) = real_coded_model(dtype, 15.0, 0.9, 0.5, 20.0, None, 0.1)
    first = evolved(model, pop, 3, "graph", fitness, selection)
    traces = model.trace_count
    knobs = (7.0, 0.7, 0.3, 5.0, 0.25, 0.35)
    sbx.eta, sbx.probability, sbx.gene_rate, polynomial.eta, polynomial.rate, gaussian.stddev = knobs
    changed = evolved(model, pop, 3, "graph", fitness, selection)
    assert model.trace_count == traces
    fresh, _ = real_coded_model(dtype, *knobs)
    assert_same(evolved(fresh, pop, 3, "graph", evo.fitness.Sphere(), evo.selection.Tournament(size=2)), changed)
    assert not np.array_equal(first.population, changed.population)


@pytest.mark.slow
def test_permutation_rates_are_inputs():
    tsp = evo.fitness.TSP(np.random.default_rng(0).random((12, 2)))
    pop = evo.population.permutations(16, 12, seed=0)
    x = evo.Input(shape=(12,), dtype="int32")
    swap, bridge = evo.ops.SwapMutation(rate=0.5), evo.ops.DoubleBridge(rate=0.2, segment=3)
    model = evo.Model(x, bridge(swap(evo.ops.OrderCrossover(probability=0.8)(x))))
    selection = evo.selection.Tournament(size=2)
    evolved(model, pop, 1, "graph", tsp, selection)
    traces = model.trace_count
    swap.rate, bridge.rate = 0.9, 0.6
    changed = evolved(model, pop, 1, "graph", tsp, selection)
    assert model.trace_count == traces
    y = evo.Input(shape=(12,), dtype="int32")
    fresh = evo.Model(y, evo.ops.DoubleBridge(rate=0.6, segment=3)(evo.ops.SwapMutation(rate=0.9)(
        evo.ops.OrderCrossover(probability=0.8)(y))))
    assert_same(evolved(fresh, pop, 1, "graph", tsp, evo.selection.Tournament(size=2)), changed)


@pytest.mark.slow
def test_a_mask_rate_that_changes_its_form_compiles_again_and_stays_right():
    pop = evo.population.random_integers((8, 256), 0, 2, seed=4)
    x = evo.Input(shape=(256,), dtype="int32")
    mutation = evo.ops.BitFlipMutation(rate=0.25 / 256)  # one word per block of 32 genes
    model = evo.Model(x, evo.ops.UniformCrossover()(mutation(x)))
    fitness, selection = evo.fitness.OneMax(), evo.selection.Tournament(size=2)
    evolved(model, pop, 0, "graph", fitness, selection)
    traces = model.trace_count
    mutation.rate = 1 / 256  # positions drawn per genome: another form, another program
    changed = evolved(model, pop, 0, "graph", fitness, selection)
    assert model.trace_count > traces
    y = evo.Input(shape=(256,), dtype="int32")
    fresh = evo.Model(y, evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate=1 / 256)(y)))
    assert_same(evolved(fresh, pop, 0, "graph", evo.fitness.OneMax(), evo.selection.Tournament(size=2)), changed)
    traces = model.trace_count
    mutation.rate = 0.25 / 256  # back: the first program, kept
    evolved(model, pop, 0, "graph", fitness, selection)
    assert model.trace_count == traces


class NegateSome(evo.ops.Op, register=False):
    """A custom op whose rate is a plain attribute, not a Knob: a constant of its program."""

    genes = "float"

    def __init__(self, rate, name=None):
        super().__init__(name)
        self.rate = rate

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        return tf.where(rng.uniform(rng.fold_in(key, 1), rows, tuple(x.shape[1:])) < self.rate, -x, x)


def test_a_changed_op_setting_that_is_not_a_knob_builds_another_program():
    pop = evo.population.uniform((16, 6), -1.0, 1.0, seed=2)
    fitness, selection = evo.fitness.Sphere(), evo.selection.Tournament(size=2)
    x = evo.Input(shape=(6,), dtype="float32")
    negate = NegateSome(0.1)
    model = evo.Model(x, negate(x))
    evolved(model, pop, 0, "graph", fitness, selection)
    traces = model.trace_count
    negate.rate = 0.9  # read as a constant by its program: the old program would run the old rate
    changed = evolved(model, pop, 0, "graph", fitness, selection)
    assert model.trace_count > traces
    y = evo.Input(shape=(6,), dtype="float32")
    assert_same(evolved(evo.Model(y, NegateSome(0.9)(y)), pop, 0, "graph", evo.fitness.Sphere(),
                        evo.selection.Tournament(size=2)), changed)


def test_a_knob_is_checked_when_set_and_a_bad_value_keeps_the_old_one():
    mutation, crossover = evo.ops.BitFlipMutation(rate=0.1), evo.ops.UniformCrossover(probability=0.5)
    with pytest.raises(ValueError, match=r"BitFlipMutation: rate must be in \[0, 1\]"):
        mutation.rate = 2
    with pytest.raises(TypeError, match="UniformCrossover: probability must be a number"):
        crossover.probability = "high"
    with pytest.raises(ValueError, match="GaussianMutation: stddev must be a positive number"):
        evo.ops.GaussianMutation(stddev=1.0).stddev = -1.0
    assert (mutation.rate, crossover.probability) == (0.1, 0.5)


def test_ask_tell_reads_the_rate_set_before_it_asks():
    pop = evo.population.random_integers((16, 24), 0, 2, seed=1)
    model = onemax_model()
    loop = model.ask_tell(pop)
    model.nodes[0].op.rate = 3 / 24
    got = run_ask_tell(loop, lambda g: g.sum(axis=1).astype(np.float32), 4)
    y = evo.Input(shape=(24,), dtype="int32")
    fresh = evo.Model(y, evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate=3 / 24)(y)))
    fresh.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph", seed=5)
    assert_same(got, fresh.evolve(pop, generations=4))


# -- metrics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pack", ["auto", False])
def test_metrics_are_compiled_into_the_loop_and_recorded(pack, tmp_path):
    metrics = {"ones": lambda pop, fit: tf.reduce_sum(tf.cast(pop, tf.float32)),
               "worst": lambda pop, fit: tf.reduce_min(fit)}
    model = onemax_model(pack)
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph", seed=5,
                  pack=pack, metrics=metrics)
    pop = evo.population.random_integers((16, 24), 0, 2, seed=1)
    result = model.evolve(pop, generations=5, chunk=2)
    assert list(result.history) == ["best", "mean", "std", "ones", "worst"]
    assert result.history["ones"][-1] == result.population.sum()
    assert result.history["worst"][-1] == result.fitness.min()
    plain = onemax_model(pack).evolve(pop, generations=5)
    assert {k: result.history[k] for k in ("best", "mean", "std")} == plain.history
    search = run_ask_tell(model.ask_tell(pop), lambda g: g.sum(axis=1).astype(np.float32), 5)
    assert search.history == result.history
    with pytest.raises(ValueError, match="metrics maps new names"):
        model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), metrics={"best": len})
