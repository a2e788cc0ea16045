"""course_lib.evo models: reaching optima, reproducibility, resume, batching, packing,
no retracing, the Keras-like graph API, callbacks and clear errors. Small populations."""

import io
import itertools

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import engine


def onemax(length=32, mode="xla", seed=0, rate=None, pack="auto", selection=None):
    inputs = evo.Input(shape=(length,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=rate or 1 / length)(inputs)
    x = evo.ops.UniformCrossover()(x)
    model = evo.Model(inputs, x, name="onemax")
    model.compile(fitness=evo.fitness.OneMax(), selection=selection or evo.selection.Tournament(size=2),
                  mode=mode, seed=seed, pack=pack)
    return model


def rastrigin(dims=5, mode="graph", seed=0, selection=None):
    inputs = evo.Input(shape=(dims,), dtype="float32")
    x = evo.ops.GaussianMutation(stddev=0.3, rate=0.3, low=-5.12, high=5.12)(inputs)
    x = evo.ops.UniformCrossover()(x)
    model = evo.Model(inputs, x)
    model.compile(fitness=evo.fitness.Rastrigin(), selection=selection or evo.selection.Elitist(),
                  mode=mode, seed=seed)
    return model


def bits(n=32, length=32, seed=0):
    return evo.population.random_integers((n, length), 0, 2, seed=seed)


@pytest.fixture(scope="module")
def xla_onemax():
    """One XLA-compiled model shared by several tests: each compile costs seconds on 2 cores."""
    return onemax(24, mode="xla")


def assert_same(a, b):
    np.testing.assert_array_equal(a.population, b.population)
    np.testing.assert_array_equal(a.fitness, b.fitness)
    np.testing.assert_array_equal(a.best, b.best)
    assert a.history == b.history and a.best_fitness == b.best_fitness and a.generations == b.generations


# -- reaching optima --------------------------------------------------------------------------------


def test_design_example_reaches_the_onemax_optimum_and_stops_early():
    model = onemax(32)
    stop = evo.callbacks.EarlyStopping(target=32)
    result = model.evolve(bits(64), generations=200, callbacks=[stop])
    assert result.best_fitness == 32 and result.best.sum() == 32
    assert result.packed and result.stopped_early and result.generations < 200
    assert stop.stopped_generation == result.generations == len(result.history["best"])
    assert result.history["best"][-1] == 32
    assert result.population.dtype == np.int32 and set(np.unique(result.population)) <= {0, 1}


def test_rastrigin_gets_near_its_optimum():
    result = rastrigin(dims=3).evolve(evo.population.uniform((100, 3), -5.12, 5.12, seed=1), generations=100)
    assert result.history["best"][0] > 1  # far from the optimum after the first generation
    assert result.best_fitness < 0.01  # optimum 0 at the origin; local minima near integer points
    assert np.abs(result.best).max() < 0.01


def test_knapsack_finds_the_brute_force_optimum():
    gen = np.random.default_rng(1)
    weights, values = gen.uniform(1, 10, 12), gen.uniform(1, 10, 12)
    capacity = weights.sum() / 2
    choices = np.array(list(itertools.product([0, 1], repeat=12)))
    fits = choices @ weights <= capacity
    optimum = (choices[fits] @ values).max()
    inputs = evo.Input((12,), "int32")
    x = evo.ops.TwoPointCrossover()(evo.ops.BitFlipMutation(1 / 12)(inputs))
    model = evo.Model(inputs, x)
    model.compile(fitness=evo.fitness.Knapsack(weights=weights, values=values, capacity=capacity),
                  selection=evo.selection.Rank(pressure=1.8), mode="graph", seed=0)
    result = model.evolve(bits(64, 12), generations=60)
    assert result.best_fitness >= 0.97 * optimum
    assert result.best @ weights <= capacity


def test_tsp_on_a_circle_finds_the_circle_tour():
    n = 10
    angles = np.random.default_rng(0).permutation(n) * 2 * np.pi / n
    coordinates = np.stack([np.cos(angles), np.sin(angles)], 1)
    optimum = n * 2 * np.sin(np.pi / n)
    inputs = evo.Input((n,), "int32")
    mutated = evo.ops.InversionMutation()(inputs)
    crossed = evo.ops.SwapMutation(rate=0.3)(evo.ops.OrderCrossover()(inputs))
    model = evo.Model(inputs, [mutated, crossed])  # two branches, both become children
    model.compile(fitness=evo.fitness.TSP(coordinates=coordinates), selection=evo.selection.Elitist(),
                  mode="graph", seed=0)
    result = model.evolve(evo.population.permutations(32, n, seed=0), generations=60)
    assert result.best_fitness <= 1.02 * optimum
    assert sorted(result.best) == list(range(n))


# -- reproducibility ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_same_seed_same_result_in_each_mode(mode, xla_onemax):
    pop = bits(16, 24)
    model = xla_onemax if mode == "xla" else onemax(24, mode=mode)
    a = model.evolve(pop, generations=3)
    assert_same(a, model.evolve(pop, generations=3))
    assert_same(a, (onemax(24, mode=mode) if mode == "eager" else model).evolve(pop, generations=3))


def test_another_seed_another_result():
    pop = bits(16, 24)
    a = onemax(24, mode="graph", seed=7).evolve(pop, generations=3)
    b = onemax(24, mode="graph", seed=8).evolve(pop, generations=3)
    assert not np.array_equal(a.population, b.population)


def test_integer_problems_agree_across_modes(xla_onemax):
    """Random numbers are integer math, so eager, graph and XLA give identical binary runs."""
    pop = bits(16, 24)
    runs = [onemax(24, mode=m).evolve(pop, generations=3) for m in ("eager", "graph")]
    assert_same(runs[0], runs[1])
    assert_same(runs[1], xla_onemax.evolve(pop, generations=3))


def test_packed_equals_unpacked():
    pop = bits(32, 70)  # 70 genes: the last word is partly padding
    fast = onemax(70, mode="graph").evolve(pop, generations=15)
    plain = onemax(70, mode="graph", pack=False).evolve(pop, generations=15)
    assert fast.packed and not plain.packed
    assert_same(fast, plain)
    inputs = evo.Input(shape=(70,), dtype="int32")
    crossing = evo.Model(inputs, evo.ops.UniformCrossover()(inputs))  # packable, and takes any integers
    crossing.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph")
    counts = crossing.evolve(evo.population.random_integers((8, 70), 0, 3), generations=2)
    assert not counts.packed  # genes other than 0/1: the same model runs unpacked
    with pytest.raises(ValueError, match="bit_flip_mutation.* needs genes that are 0 or 1"):
        onemax(70, mode="graph").evolve(evo.population.random_integers((8, 70), 0, 3), generations=2)


def test_chunks_do_not_change_the_result():
    pop = bits(16, 24)
    model = onemax(24, mode="graph")
    assert_same(model.evolve(pop, generations=10), model.evolve(pop, generations=10, chunk=3))


# -- resume, batching, retracing -------------------------------------------------------------------------


@pytest.mark.parametrize("problem", ["packed-onemax", "rastrigin"])
def test_resume_equals_uninterrupted(tmp_path, problem, xla_onemax):
    if problem == "packed-onemax":
        model, make, pop = xla_onemax, lambda: onemax(24, mode="xla"), bits(16, 24)
    else:
        model, make, pop = rastrigin(3), lambda: rastrigin(3), evo.population.uniform((16, 3), -5, 5)
    path = tmp_path / "run.npz"
    whole = model.evolve(pop, generations=12)
    first = model.evolve(pop, generations=7, callbacks=[evo.callbacks.Checkpoint(path, every=5)])
    assert first.generations == 7
    assert_same(whole, model.evolve(generations=12, resume_from=path))
    if problem == "rastrigin":  # a fresh model, as after a restart (cheap to build in graph mode)
        assert_same(whole, make().evolve(generations=12, resume_from=path))


def test_a_checkpoint_names_exact_op_parameters(tmp_path):
    path = tmp_path / "run.npz"
    onemax(24, mode="graph", rate=0.01).evolve(bits(16, 24), generations=2,
                                              callbacks=[evo.callbacks.Checkpoint(path, every=2)])
    with pytest.raises(ValueError, match=r"different model(.|\n)*rate=0\.01\b(.|\n)*this model:(.|\n)*rate=0\.010001"):
        onemax(24, mode="graph", rate=0.010001).evolve(generations=4, resume_from=path)


def test_checkpoint_every_n_generations(tmp_path):
    model, path = onemax(24, mode="graph"), tmp_path / "ck.npz"

    class Saved(evo.callbacks.Callback):
        seen = []

        def on_chunk_end(self, run):
            self.seen.append(int(np.load(path)["generation"]) if path.exists() else None)

    model.evolve(bits(16, 24), generations=9, chunk=64,
                 callbacks=[evo.callbacks.Checkpoint(path, every=4), Saved()])
    assert Saved.seen == [4, 8, 8]  # chunks end at the checkpoints; the final state saved at the end
    assert int(np.load(path)["generation"]) == 9


def test_batched_equals_unbatched(xla_onemax):
    pop = bits(16, 24)
    whole = xla_onemax.evolve(pop, generations=6)
    assert_same(whole, xla_onemax.evolve(pop, generations=6, batch_size=7))  # 16 = 7 + 7 + 2 (last batch overlaps)
    floats = evo.population.uniform((20, 3), -5, 5)
    f = rastrigin(3)
    assert_same(f.evolve(floats, generations=6), f.evolve(floats, generations=6, batch_size=6))


def test_memory_budget_sets_the_batch():
    model = onemax(24, mode="graph")
    pop = bits(20, 24)
    per_row = 24 * engine.BYTES_PER_GENE_IN_FLIGHT
    assert engine.batch_rows(model, None, 5 * per_row, 20) == 5
    assert engine.batch_rows(model, None, 10**9, 20) is None
    # the public door reads the same rule, with the whole population where one batch holds it
    assert (evo.inspect.batch_rows(model, 5 * per_row, 20), evo.inspect.batch_rows(model, 10**9, 20)) == (5, 20)
    assert_same(model.evolve(pop, generations=4), model.evolve(pop, generations=4, memory_budget=5 * per_row))
    with pytest.raises(ValueError, match="less than one individual needs"):
        model.evolve(pop, generations=1, memory_budget=10)
    with pytest.raises(ValueError, match="not both"):
        model.evolve(pop, generations=1, memory_budget=10**6, batch_size=4)


def test_no_retrace_when_the_number_of_generations_changes(xla_onemax):
    pop = bits(16, 24)
    xla_onemax.evolve(pop, generations=3)
    traces = xla_onemax.trace_count
    for generations in (1, 7, 70, 0):  # 70 > chunk: two chunks
        xla_onemax.evolve(pop, generations=generations, callbacks=[evo.callbacks.EarlyStopping(patience=50)])
    assert xla_onemax.trace_count == traces
    fresh = onemax(24, mode="graph")
    fresh.evolve(pop, generations=2)
    assert fresh.trace_count == 3  # start, run, finish: traced once each


# -- auto mode --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_auto_mode_times_the_modes_and_keeps_the_fastest(capsys):
    class Told(evo.callbacks.Callback):
        def on_mode_chosen(self, mode, timings):
            self.told = (mode, timings)

    pop = bits(16, 24)
    model = onemax(24, mode="auto")
    told = Told()
    result = model.evolve(pop, generations=4, callbacks=[told])
    assert model.chosen_mode in ("eager", "graph", "xla") and result.mode == model.chosen_mode
    assert set(model.mode_timings) == {"eager", "graph", "xla"}
    assert told.told == (model.chosen_mode, model.mode_timings) and min(model.mode_timings.values()) > 0
    assert capsys.readouterr().out == ""  # the engine prints nothing
    assert_same(result, onemax(24, mode=model.chosen_mode).evolve(pop, generations=4))


def test_auto_times_the_modes_in_turn_so_a_burst_of_load_lands_on_each(monkeypatch):
    """The probe calls the modes round by round (a, b, c, a, b, c, ...): a burst of other work during one
    call is an outlier among that mode's rounds, which the median drops, not the whole of its timing."""
    ticks = iter(range(10_000))
    monkeypatch.setattr(engine.time, "perf_counter", lambda: next(ticks))
    calls = []

    def mode(name):
        def run():
            calls.append(name)
            if len(calls) == 5:  # b's first timed call: a burst of 50 ticks
                for _ in range(50):
                    next(ticks)
        return run

    medians = engine.seconds_per_call_in_rounds({name: mode(name) for name in "abc"}, rounds=3, warmup=1)
    assert calls == list("abc") * 4
    assert medians == {"a": 1, "b": 1, "c": 1}


@pytest.mark.slow
@pytest.mark.parametrize("chosen", ["eager", "graph", "xla"])
def test_auto_gives_every_modes_result_bit_for_bit_on_integer_fitness(chosen):
    """Whichever mode auto picks from its timings, an integer fitness's run is the same: population and
    history (whose mean and std a float32 sum would round differently under XLA than under TensorFlow)."""
    pop = bits(1024, 256)
    reference = onemax(256, mode="xla").evolve(pop, generations=16)
    auto = onemax(256, mode="auto")
    auto.chosen_mode = chosen  # as if the probe had picked it
    result = auto.evolve(pop, generations=16)
    assert result.mode == chosen
    assert_same(result, reference)


# -- graph API, description, callbacks ----------------------------------------------------------------------


def test_branches_merged_by_a_two_input_crossover():
    inputs = evo.Input((16,), "int32")
    left = evo.ops.BitFlipMutation(0.1, name="left")(inputs)
    right = evo.ops.SinglePointCrossover(name="right")(inputs)
    child = evo.ops.UniformCrossover(name="merge")(left, right)
    model = evo.Model(inputs, child)
    assert [n.op.name for n in model.nodes] == ["left", "right", "merge"]
    count = evo.fitness.Function(lambda p: tf.reduce_sum(tf.cast(p, tf.float32), 1), maximize=True)
    model.compile(fitness=count, selection=evo.selection.Tournament(3), mode="graph", seed=0)
    plan = str(model.plan())
    assert plan.index("left:") < plan.index("right:") < plan.index("merge: UniformCrossover() <- left, right")
    pop = bits(16, 16)
    result = model.evolve(pop, generations=3)
    assert result.packed and result.population.shape == (16, 16)
    model.compile(fitness=count, selection=evo.selection.Tournament(3), mode="graph", seed=0, pack=False)
    assert_same(result, model.evolve(pop, generations=3))


def test_summary_lists_ops_and_parameters(capsys):
    model = onemax(16)
    model.summary()
    out = capsys.readouterr().out
    assert "BitFlipMutation(rate=0.0625)" in out and "UniformCrossover()" in out
    assert "OneMax() (maximise)" in out and "Tournament(size=2)" in out
    assert "bit-packed" in str(model.plan())


def test_callbacks_see_history_and_progress():
    history = evo.callbacks.History()
    bar = evo.callbacks.ProgressBar(file=io.StringIO())
    model = onemax(24, mode="graph")
    result = model.evolve(bits(16, 24), generations=5, callbacks=[history, bar])
    assert history.history == result.history == model.history
    assert len(result.history["best"]) == 5 and set(result.history) == {"best", "mean", "std"}
    assert bar.bar.n == 5


def test_patience_stops_a_stalled_run():
    inputs = evo.Input((8,), "int32")
    model = evo.Model(inputs, evo.ops.BitFlipMutation(0.0)(inputs))  # nothing changes
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Elitist(), mode="graph")
    result = model.evolve(bits(8, 8), generations=50, callbacks=[evo.callbacks.EarlyStopping(patience=4)])
    assert result.stopped_early and result.generations == 4


def test_fitness_functions_in_their_own_units():
    origin = tf.zeros((2, 3))
    for f in (evo.fitness.Sphere(), evo.fitness.Rastrigin(), evo.fitness.Ackley()):
        np.testing.assert_allclose(f(origin).numpy(), 0.0, atol=1e-5)
        assert not f.maximize
    target = np.array([1.0, 2.0, 3.0])
    cos = evo.fitness.CosineSimilarity(target=target)
    np.testing.assert_allclose(cos(np.stack([target, -target])).numpy(), [1.0, -1.0], atol=1e-6)
    square = evo.fitness.TSP(distances=np.array([[0, 1, 2, 1], [1, 0, 1, 2], [2, 1, 0, 1], [1, 2, 1, 0]]))
    np.testing.assert_allclose(square(np.array([[0, 1, 2, 3], [0, 2, 1, 3]])).numpy(), [4.0, 6.0])
    knap = evo.fitness.Knapsack(weights=[2, 3], values=[4, 9], capacity=3)
    np.testing.assert_allclose(knap(np.array([[0, 1], [1, 1]])).numpy(), [9.0, 13 - 3 * 2])


# -- bad input ----------------------------------------------------------------------------------------------


@pytest.fixture
def compiled():
    return onemax(16, mode="graph")


def test_population_errors(compiled):
    with pytest.raises(ValueError, match=r"genomes have shape \(10,\), but the model's Input expects \(16,\)"):
        compiled.evolve(bits(8, 10), generations=1)
    with pytest.raises(ValueError, match="at least 2-D"):
        compiled.evolve(np.zeros(16, np.int32), generations=1)
    with pytest.raises(TypeError, match="population dtype float32 does not match the Input's int32"):
        compiled.evolve(np.zeros((8, 16), np.float32), generations=1)
    with pytest.raises(ValueError, match="at least 2 individuals"):
        compiled.evolve(np.zeros((1, 16), np.int32), generations=1)
    with pytest.raises(ValueError, match="needs a population"):
        compiled.evolve(generations=1)
    with pytest.raises(ValueError, match="generations must be a whole number"):
        compiled.evolve(bits(8, 16), generations=-1)


def test_permutation_population_is_checked():
    inputs = evo.Input((6,), "int32")
    model = evo.Model(inputs, evo.ops.InversionMutation()(inputs))
    model.compile(fitness=evo.fitness.TSP(distances=np.ones((6, 6))), selection=evo.selection.Elitist(), mode="graph")
    with pytest.raises(ValueError, match="permutation of 0..5"):
        model.evolve(np.zeros((4, 6), np.int32), generations=1)
    with pytest.raises(ValueError, match=r"TSP with 5 cities needs integer genomes of shape \(5,\)"):
        model.compile(fitness=evo.fitness.TSP(distances=np.ones((5, 5))), selection=evo.selection.Elitist())


def test_compile_errors():
    inputs = evo.Input((8,), "int32")
    model = evo.Model(inputs, evo.ops.BitFlipMutation(0.1)(inputs))
    with pytest.raises(RuntimeError, match="compile the model first"):
        model.evolve(bits(4, 8), generations=1)
    with pytest.raises(ValueError, match="unknown mode 'fast'; choose one of eager, graph, xla, auto"):
        model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), mode="fast")
    with pytest.raises(ValueError, match="does not say whether to maximise"):
        model.compile(fitness=lambda p: tf.reduce_sum(p, 1), selection=evo.selection.Tournament())
    with pytest.raises(TypeError, match="selection must be an evo.selection.Selection"):
        model.compile(fitness=evo.fitness.OneMax(), selection="tournament")
    with pytest.raises(ValueError, match="contradicts"):
        model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), maximize=False)
    crossing = evo.Model(inputs, evo.ops.UniformCrossover()(inputs))  # packable, and takes any integers
    with pytest.raises(ValueError, match="pack=True, but the population has genes other than 0 and 1"):
        crossing.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), mode="graph", pack=True)
        crossing.evolve(evo.population.random_integers((4, 8), 0, 3), generations=1)


def test_selection_errors(compiled):
    for size, error in ((0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="Tournament size must be a whole number >= 1"):
            evo.selection.Tournament(size)
    with pytest.raises(ValueError, match="Tournament size 9 is larger than the pool of 8"):
        onemax(16, mode="graph", selection=evo.selection.Tournament(9)).evolve(bits(8, 16), generations=1)
    with pytest.raises(ValueError, match=r"Rank pressure must be in \[1, 2\]"):
        evo.selection.Rank(3)


def test_graph_and_input_errors():
    with pytest.raises(ValueError, match="non-empty tuple of positive ints"):
        evo.Input((0,))
    with pytest.raises(TypeError, match="integer or float"):
        evo.Input((4,), "string")
    a, b = evo.Input((8,), "int32"), evo.Input((8,), "int32")
    with pytest.raises(ValueError, match="not the model's Input"):
        evo.Model(a, evo.ops.UniformCrossover()(a, b))
    with pytest.raises(ValueError, match="children must have the Input's genomes"):
        evo.Model(evo.Input((8,), "float32"), a)


def test_run_options_errors(compiled, tmp_path):
    pop = bits(8, 16)
    with pytest.raises(ValueError, match="not both"):
        compiled.evolve(pop, generations=1, resume_from=tmp_path / "x.npz")
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        compiled.evolve(generations=1, resume_from=tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="at most one EarlyStopping"):
        compiled.evolve(pop, generations=1, callbacks=[evo.callbacks.EarlyStopping(1), evo.callbacks.EarlyStopping(2)])
    with pytest.raises(ValueError, match="needs target= .* patience= .* and/or max_evaluations="):
        evo.callbacks.EarlyStopping()
    with pytest.raises(ValueError, match="every must be a whole number"):
        evo.callbacks.Checkpoint(tmp_path / "c.npz", every=0)
    with pytest.raises(TypeError, match="callbacks must be evo.callbacks.Callback"):
        compiled.evolve(pop, generations=1, callbacks=[print])


def test_resume_checks_the_model(tmp_path):
    path = tmp_path / "run.npz"
    onemax(16, mode="graph").evolve(bits(8, 16), generations=2, callbacks=[evo.callbacks.Checkpoint(path, every=1)])
    with pytest.raises(ValueError, match="written by a different model"):
        onemax(16, mode="graph", seed=1).evolve(generations=4, resume_from=path)
    with pytest.raises(ValueError, match="written in mode 'graph'.*compile with mode='graph'"):
        onemax(16, mode="eager").evolve(generations=4, resume_from=path)


def test_population_helpers_validate_and_are_seeded():
    np.testing.assert_array_equal(evo.population.uniform((3, 2), 0, 1, seed=4),
                                  evo.population.uniform((3, 2), 0, 1, seed=4))
    assert evo.population.random_integers((3, 5), 2, 4).numpy().min() >= 2
    with pytest.raises(ValueError, match=r"\(individuals, \*genome\)"):
        evo.population.random_integers((10,), 0, 2)
    with pytest.raises(ValueError, match="low < high"):
        evo.population.uniform((2, 2), 1, 1)


def test_compile_attaches_the_fitness_to_every_op():
    seen = []

    class Spy(evo.ops.BitFlipMutation):
        def attach(self, fitness):
            seen.append((self.name, fitness))

    inputs = evo.Input((8,), "int32")
    a, b = Spy(0.1, name="a"), Spy(0.1, name="b")
    model = evo.Model(inputs, b(a(inputs)))
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), mode="eager")
    assert [(name, type(f).__name__) for name, f in seen] == [("a", "OneMax"), ("b", "OneMax")]
    assert seen[0][1] is model.fitness


def test_a_stopwatch_records_the_best_against_time_and_stops_at_its_budget():
    ticks = iter(range(100))
    watch = evo.callbacks.Stopwatch(budget_s=3, clock=lambda: float(next(ticks)))  # reads 0 when made
    result = onemax(24, mode="graph").evolve(bits(16, 24), generations=50, chunk=5, callbacks=[watch])
    assert watch.seconds == [1.0, 2.0, 3.0] and result.generations == 10  # begin, then two chunks: 3 s spent
    assert watch.best == sorted(watch.best) and watch.best[-1] == result.best_fitness
    with pytest.raises(ValueError, match="budget_s must be a positive number of seconds or None"):
        evo.callbacks.Stopwatch(budget_s=0)
