"""course_lib.evo engine held to the peers' standard: NaN and wrong-sign infinities never win in
any mode (single device and distributed), selection pressure against its expected values,
elitism never loses the best, a best found in generation 0 is kept, resume's generations
count, and the textbook GA (order crossover with a probability, inversion, tournament of 3)
reaching the optimum tour of a circle under XLA.
"""

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from course_lib import devices, evo, processes
from course_lib.evo import fusion, rng
from course_lib.evo.selection import Pool

LENGTH = 16


def nan_where_first_two_genes_are_one(value=math.nan):
    """OneMax, but ``value`` where genes 0 and 1 are both 1 (the issue's minimal case)."""

    def fitness(p):
        ones = tf.reduce_sum(tf.cast(p, tf.float32), axis=1)
        return tf.where((p[:, 0] == 1) & (p[:, 1] == 1), tf.constant(value, tf.float32), ones)

    return fitness


def onemax_model(fitness, mode, selection=None, rate=1 / LENGTH, maximize=True, length=LENGTH):
    inputs = evo.Input((length,), "int32")
    x = evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate)(inputs))
    model = evo.Model(inputs, x)
    model.compile(evo.fitness.Function(fitness, maximize=maximize), selection or evo.selection.Tournament(size=2),
                  mode=mode, seed=0)
    return model


def bits(n=64, length=LENGTH, seed=0):
    return evo.population.random_integers((n, length), 0, 2, seed=seed)


# -- NaN and infinity ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["eager", "graph", "xla", "auto"])
def test_nan_fitness_never_wins_in_any_mode(mode):
    result = onemax_model(nan_where_first_two_genes_are_one(), mode).evolve(bits(), generations=30)
    assert result.best_fitness == LENGTH - 1  # the optimum among genomes that score a number
    assert not (result.best[0] == 1 and result.best[1] == 1)
    assert not np.isnan(result.history["best"]).any()
    assert np.isnan(result.fitness).mean() < 0.5  # NaN children appear each generation, and lose


@pytest.mark.slow
@pytest.mark.parametrize("value,maximize", [(-math.inf, True), (math.inf, False)])
def test_an_infinity_of_the_wrong_sign_never_wins(value, maximize):
    def fitness(p):  # minimised: the number of zeros
        score = nan_where_first_two_genes_are_one(value)(p)
        return score if maximize else tf.where(tf.math.is_inf(score), score, LENGTH - score)

    result = onemax_model(fitness, "xla", maximize=maximize).evolve(bits(), generations=30)
    assert result.best_fitness == (LENGTH - 1 if maximize else 1)
    assert np.isfinite(result.history["best"]).all()


@pytest.mark.parametrize("mode", ["graph", "xla"])
def test_a_float_population_holding_nan_finds_the_finite_optimum(mode):
    inputs = evo.Input((6,), "float32")
    x = evo.ops.UniformCrossover()(evo.ops.GaussianMutation(0.2, rate=0.5)(inputs))
    model = evo.Model(inputs, x)
    model.compile(evo.fitness.Sphere(), evo.selection.Tournament(size=2), mode=mode, seed=0)
    start = evo.population.uniform((64, 6), -3, 3, seed=1).numpy()
    start[::3, 2] = np.nan  # a third of the individuals hold a NaN gene
    result = model.evolve(start, generations=60)
    assert np.isfinite(result.best).all() and np.isfinite(result.history["best"]).all()
    assert result.best_fitness < 0.2 * np.nanmin((start ** 2).sum(1))


@pytest.mark.parametrize("selection", [evo.selection.Tournament(size=8), evo.selection.Rank(pressure=1.5),
                                       evo.selection.Elitist(), evo.selection.Tournament(size=2, elitism=3)],
                         ids=repr)
def test_selections_treat_nan_as_minus_infinity_also_under_xla(selection):
    scores = [np.nan, 3, 1, np.nan, 2, 0, 5, np.nan, 4, 6]
    parents = np.arange(10) < 5 if selection.pool == "both" else None

    def choose(fit, key):  # Elitist's top_k leaves its order to the kernel: compare it as a set
        picks = selection.survivors(Pool(fit, 1.0, key, parents), 7, ())[0]
        return tf.sort(picks) if isinstance(selection, evo.selection.Elitist) else picks

    with_nan = tf.constant(scores, tf.float32)
    reference = choose(tf.constant(np.nan_to_num(scores, nan=-np.inf), tf.float32), rng.key(1)).numpy()
    np.testing.assert_array_equal(choose(with_nan, rng.key(1)).numpy(), reference)
    np.testing.assert_array_equal(fusion.xla_function(choose)(with_nan, rng.key(1)).numpy(), reference)
    if not isinstance(selection, evo.selection.Rank):  # rank selection may draw the worst, by design
        assert not np.isnan(np.asarray(scores)[reference]).any()


# -- selection pressure -------------------------------------------------------------------------------


def pick_counts(selection, m=10, n=20000):
    """How often each rank (0 = worst) is picked from a pool of ``m`` distinct scores."""
    score = tf.constant(np.random.default_rng(0).permutation(m), tf.float32)  # rank of each pool row
    idx, _ = selection.survivors(Pool(score, 1.0, rng.key(3)), n, ())
    return np.bincount(score.numpy()[idx.numpy()].astype(int), minlength=m), n


def assert_frequencies(counts, n, expected):
    for rank, (c, p) in enumerate(zip(counts, expected)):
        assert abs(c - n * p) <= 5 * math.sqrt(n * p * (1 - p)) + 1, f"rank {rank}: {c}, expected {n * p:.0f}"


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_tournament_pressure_matches_its_expected_values(size):
    counts, n = pick_counts(evo.selection.Tournament(size=size))
    m = len(counts)
    assert_frequencies(counts, n, [((r + 1) ** size - r ** size) / m ** size for r in range(m)])


@pytest.mark.parametrize("pressure", [1.0, 1.5, 2.0])
def test_rank_pressure_matches_its_expected_values(pressure):
    counts, n = pick_counts(evo.selection.Rank(pressure=pressure))
    m = len(counts)
    weight = np.array([(2 - pressure) + 2 * (pressure - 1) * r / (m - 1) for r in range(m)])
    assert_frequencies(counts, n, weight / weight.sum())


def test_elitism_puts_the_best_parents_first():
    fit = tf.constant([5, 9, 1, 7, 0, 8, 2, 3], tf.float32)  # 4 parents, then 4 children
    parents = np.arange(8) < 4
    picks, _ = evo.selection.Tournament(size=2, elitism=2).survivors(Pool(fit, 1.0, rng.key(0), parents), 4, ())
    assert sorted(picks.numpy()[:2].tolist()) == [1, 3] and (picks.numpy()[2:] >= 4).all()
    minimised, _ = evo.selection.Rank(elitism=1).survivors(Pool(fit, -1.0, rng.key(0), parents), 4, ())
    assert minimised.numpy()[0] == 2 and (minimised.numpy()[1:] >= 4).all()


class Truncation(evo.selection.Selection):
    """A user's selection as docs/engine.md teaches it: ``select`` only, each slot a child drawn from the best
    half of the candidates."""

    def select(self, score, key, n):
        best = tf.math.top_k(score, k=max(1, score.shape[0] // 2)).indices
        return tf.gather(best, rng.integers(key, rng.Rows.all(n), (), best.shape[0]))


@pytest.mark.parametrize("mode", ["graph", "xla"])
def test_a_selection_that_defines_only_select_gets_elitism_from_the_base(mode):
    fit = tf.constant([5, 9, 1, 7, 0, 8, 2, 3], tf.float32)  # 4 parents, then 4 children
    picks, state = Truncation(elitism=2).survivors(Pool(fit, 1.0, rng.key(0), np.arange(8) < 4), 4, ())
    assert sorted(picks.numpy()[:2].tolist()) == [1, 3] and set(picks.numpy()[2:].tolist()) <= {5, 7}
    assert state == () and Truncation().initial_state(1) == ()

    def ones(p):
        return tf.reduce_sum(tf.cast(p, tf.float32), axis=1)

    model = onemax_model(ones, mode, Truncation(elitism=2), rate=0.25, length=32)
    result = model.evolve(bits(32, 32), generations=30)
    assert never_decreases(result.history["best"])  # the 2 best parents are kept every generation
    assert "the 2 best parents" in str(model.plan())


def never_decreases(history):
    return all(b >= a for a, b in zip(history, history[1:]))


@pytest.mark.parametrize("selection", [evo.selection.Tournament(size=2, elitism=1), evo.selection.Rank(elitism=2),
                                       evo.selection.Elitist()], ids=repr)
def test_an_elitist_run_never_loses_its_best(selection):
    def ones(p):
        return tf.reduce_sum(tf.cast(p, tf.float32), axis=1)

    result = onemax_model(ones, "graph", selection, rate=0.25, length=32).evolve(bits(32, 32), generations=40)
    assert never_decreases(result.history["best"])  # the generation's best, not only the best so far
    control = onemax_model(ones, "graph", evo.selection.Tournament(size=2), rate=0.25, length=32)
    assert not never_decreases(control.evolve(bits(32, 32), generations=40).history["best"])  # the test can fail


@pytest.mark.slow
def test_a_best_found_in_generation_zero_is_kept():
    start = np.zeros((32, 24), np.int32)
    start[7] = 1  # the optimum, present only at the start
    model = onemax_model(lambda p: tf.reduce_sum(tf.cast(p, tf.float32), 1), "xla", rate=0.5, length=24)
    result = model.evolve(start, generations=10)
    assert result.best_fitness == 24 and (result.best == 1).all()
    assert result.fitness.max() < 24  # heavy mutation destroyed it in the population


def test_elitism_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="Tournament elitism must be a whole number >= 0, got -1"):
        evo.selection.Tournament(elitism=-1)
    with pytest.raises(TypeError, match="Rank elitism must be a whole number >= 0"):
        evo.selection.Rank(elitism=1.5)
    model = onemax_model(lambda p: tf.reduce_sum(tf.cast(p, tf.float32), 1), "graph",
                         evo.selection.Tournament(size=2, elitism=8))
    with pytest.raises(ValueError, match=r"Tournament\(size=2, elitism=8\) keeps 8 parents, which leaves no slot"):
        model.evolve(bits(8), generations=1)
    assert "the 8 best parents, the other slots from the children" in str(model.plan())


# -- resume ---------------------------------------------------------------------------------------------


def test_generations_count_from_the_original_start_when_resuming(tmp_path):
    path = tmp_path / "run.npz"
    model = onemax_model(lambda p: tf.reduce_sum(tf.cast(p, tf.float32), 1), "graph", rate=0.1, length=24)
    saved = model.evolve(bits(32, 24), generations=20, callbacks=[evo.callbacks.Checkpoint(path, every=10)])
    with pytest.raises(ValueError, match="the checkpoint is at generation 20, past generations=5.*"
                                         "pass generations=25 for 5 more"):
        model.evolve(generations=5, resume_from=path)
    same = model.evolve(generations=20, resume_from=path)
    assert same.generations == 20 and same.history == saved.history
    np.testing.assert_array_equal(same.population, saved.population)
    more = model.evolve(generations=25, resume_from=path)
    assert more.generations == 25
    assert more.history == model.evolve(bits(32, 24), generations=25).history


# -- the textbook GA on a permutation problem -----------------------------------------------------------


def circle_tsp(cities, seed=0):
    angle = np.random.default_rng(seed).permutation(cities) * 2 * np.pi / cities
    return (evo.fitness.TSP(coordinates=np.stack([np.cos(angle), np.sin(angle)], 1)),
            cities * 2 * math.sin(math.pi / cities))


@pytest.mark.slow
def test_textbook_ga_reaches_the_optimal_tour_of_a_circle_under_xla():
    """Order crossover with probability 0.7, inversion at rate 0.2, tournament of 3 keeping the best
    parent (DEAP's eaSimple settings plus elitism 1): the optimum, not a local tangle."""
    tsp, optimum = circle_tsp(20)
    inputs = evo.Input((20,), "int32")
    x = evo.ops.InversionMutation(rate=0.2)(evo.ops.OrderCrossover(probability=0.7)(inputs))
    model = evo.Model(inputs, x)
    model.compile(tsp, evo.selection.Tournament(size=3, elitism=1), mode="xla", seed=0)
    result = model.evolve(evo.population.permutations(100, 20, seed=0), generations=300,
                          callbacks=[evo.callbacks.EarlyStopping(target=optimum * (1 + 1e-5))])
    assert result.best_fitness == pytest.approx(optimum, rel=1e-5)
    assert result.stopped_early


# -- distributed: the same rules per replica --------------------------------------------------------------


def distributed_report() -> dict:
    """In a fresh process: NaN fitness with elitism on 2 virtual CPUs, global and islands."""
    from course_lib import distribute

    strategy = distribute.make_strategy("mirrored", devices.virtual_cpus(2))
    model = onemax_model(nan_where_first_two_genes_are_one(), "graph", evo.selection.Tournament(size=2, elitism=1))
    out = {}
    for how in ("global", "islands"):
        result = model.evolve(bits(), generations=40, strategy=strategy, distribution=how, migration_interval=5)
        out[how] = {"best_fitness": result.best_fitness, "best": result.best.tolist(),
                    "history": result.history["best"]}
    return out


@pytest.mark.slow
def test_distributed_runs_rank_nan_last_and_keep_their_elite():
    source = f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        import test_evo_strict_engine as t
        result = t.distributed_report()
    """
    report = processes.run(source=textwrap.dedent(source), env={"TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=200).result
    for how, run in report.items():
        assert run["best_fitness"] == LENGTH - 1, how
        assert not (run["best"][0] == 1 and run["best"][1] == 1), how
        assert not np.isnan(run["history"]).any() and never_decreases(run["history"]), how
