"""course_lib.evo.pareto and NSGA2: many objectives and constraints in the engine.

Ranks and crowding distances match a plain Python reference on random and tied inputs
(duplicates, all-equal objectives, a single individual, constraints, NaN); two objectives, ranked
without the dominance matrix, give the matrix's ranks to the row at every size; the NSGA-II order is
the same eagerly, in a graph and under XLA; the hypervolume matches inclusion-exclusion in 2-D
and 3-D; Deb's rules hold in tournaments and NSGA-II; runs with several objectives are
bit-identical after checkpoint and resume and across batch sizes, stop on a hypervolume target,
and bad input raises clear errors. Small populations and few generations.
"""

import itertools
import math

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import fusion, pareto

pytestmark = pytest.mark.timeout(300)


# -- a plain Python reference ------------------------------------------------------------------------------


def ref_beats(a, va, b, vb) -> bool:
    if va == 0 and vb == 0:
        return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))
    if va == 0 or vb == 0:
        return va == 0
    return va < vb


def ref_clean(values, signs):
    """Minimise-space objectives and violations, non-finite rows made infeasible with +inf."""
    g, v = [], []
    for row in values:
        obj = [-s * x for s, x in zip(signs, row[:-1])]
        bad = not all(math.isfinite(x) for x in obj) or math.isnan(row[-1])
        g.append([0.0] * len(obj) if bad else obj)
        v.append(math.inf if bad else max(row[-1], 0.0))
    return g, v


def ref_ranks(g, v) -> list[int]:
    p, rank, r = len(g), [None] * len(g), 0
    while None in rank:
        left = [i for i in range(p) if rank[i] is None]
        front = [j for j in left if not any(ref_beats(g[i], v[i], g[j], v[j]) for i in left)]
        for j in front:
            rank[j] = r
        r += 1
    return rank


def ref_crowding(g, rank) -> list[float]:
    p, m = len(g), len(g[0])
    dist = [0.0] * p
    for r in set(rank):
        members = [i for i in range(p) if rank[i] == r]
        for k in range(m):
            s = sorted(members, key=lambda i: (g[i][k], i))
            span = g[s[-1]][k] - g[s[0]][k]
            for pos, i in enumerate(s):
                if pos in (0, len(s) - 1):
                    dist[i] = math.inf
                elif span > 0:
                    dist[i] += (g[s[pos + 1]][k] - g[s[pos - 1]][k]) / span
    return dist


def with_violation(objectives, violation=None):
    objectives = np.asarray(objectives, np.float32)
    v = np.zeros(len(objectives), np.float32) if violation is None else np.asarray(violation, np.float32)
    return np.concatenate([objectives, v[:, None]], 1)


rand = np.random.default_rng(0)
CASES = {
    "random": with_violation(rand.random((40, 2))),
    "random, 3 objectives": with_violation(rand.random((30, 3))),
    "grid ties": with_violation(rand.integers(0, 4, (50, 2))),
    "duplicates": with_violation(np.repeat(rand.random((6, 2)), 4, axis=0)),
    "all equal": with_violation(np.ones((7, 2))),
    "single": with_violation([[0.3, 0.7]]),
    "two": with_violation([[0.3, 0.7], [0.2, 0.9]]),
    "constraints": with_violation(rand.random((40, 2)), np.where(rand.random(40) < 0.4, rand.integers(0, 3, 40), 0)),
    "nan": with_violation(np.where(rand.random((20, 2)) < 0.1, np.nan, rand.random((20, 2))),
                          np.where(rand.random(20) < 0.1, np.nan, 0.0)),
    "grid ties, 3 objectives": with_violation(rand.integers(0, 3, (50, 3))),
    "constraints, 3 objectives": with_violation(rand.random((40, 3)),
                                                np.where(rand.random(40) < 0.4, rand.integers(0, 3, 40), 0)),
    "nan, 3 objectives": with_violation(np.where(rand.random((30, 3)) < 0.1, np.nan, rand.random((30, 3))),
                                        np.where(rand.random(30) < 0.1, np.nan, 0.0)),
}
SIGNS = {2: (-1.0, 1.0), 3: (-1.0, -1.0, 1.0)}


@pytest.mark.parametrize("case", CASES)
def test_ranks_and_crowding_match_a_plain_python_reference(case):
    values = CASES[case]
    signs = SIGNS[values.shape[1] - 1]
    g, v = ref_clean(values.tolist(), signs)
    want_rank = ref_ranks(g, v)
    tg, tv = pareto.minimise_space(tf.constant(values), signs)
    rank = pareto.ranks(tg, tv).numpy()
    assert rank.tolist() == want_rank
    np.testing.assert_allclose(pareto.crowding(tg, tf.constant(rank)).numpy(), ref_crowding(g, want_rank),
                               rtol=1e-5)
    # the order: front, then larger crowding distance, then row
    dist = ref_crowding(g, want_rank)
    want = sorted(range(len(g)), key=lambda i: (want_rank[i], -dist[i], i))
    assert pareto.order(tf.constant(values), signs).numpy().tolist() == want
    # Deb's rules pair by pair, the first front, and fronts only until enough rows have one
    beats = [[ref_beats(g[i], v[i], g[j], v[j]) for j in range(len(g))] for i in range(len(g))]
    assert pareto.dominance(tg, tv).numpy().tolist() == beats
    assert pareto.non_dominated(tg, tv).numpy().tolist() == [r == 0 and v[i] == 0 for i, r in enumerate(want_rank)]
    for until in (1, len(g) // 3, len(g) // 2):
        ahead = [sum(r < want_rank[i] for r in want_rank) for i in range(len(g))]
        assert pareto.ranks(tg, tv, until).numpy().tolist() == [
            r if ahead[i] < until else len(g) for i, r in enumerate(want_rank)]


def test_nan_objectives_and_violations_rank_last():
    values = CASES["nan"]
    bad = np.isnan(values).any(axis=1)
    rank = pareto.ranks(*pareto.minimise_space(tf.constant(values), SIGNS[2])).numpy()
    assert rank[bad].min() > rank[~bad].max()
    assert set(pareto.order(tf.constant(values), SIGNS[2]).numpy()[-bad.sum():]) == set(np.flatnonzero(bad))


def test_the_order_is_the_same_eager_in_a_graph_and_under_xla():
    values = tf.constant(CASES["constraints"])

    def run(v):
        return pareto.order(v, SIGNS[2], until=20)[:20]

    eager = run(values).numpy()
    np.testing.assert_array_equal(tf.function(run, autograph=False)(values).numpy(), eager)
    np.testing.assert_array_equal(fusion.xla_function(run)(values).numpy(), eager)


def two_d(p, seed, ties=None, duplicates=1, infeasible=0.0, nan=0.0):
    """Engine values (P, 3) for two objectives: uniform, or drawn from ``ties`` integer values, each row
    repeated ``duplicates`` times, a share ``infeasible`` of violations from {1, 2}, a share ``nan`` of NaN
    objectives."""
    r = np.random.default_rng(seed)
    n = -(-p // duplicates)
    obj = r.random((n, 2)) if ties is None else r.integers(0, ties, (n, 2)).astype(np.float64)
    obj = np.repeat(obj, duplicates, axis=0)[:p]
    obj = np.where(r.random((p, 2)) < nan, np.nan, obj)
    return with_violation(obj, np.where(r.random(p) < infeasible, r.integers(1, 3, p), 0))


TWO_D = {
    "random 50": two_d(50, 1),
    "random 300": two_d(300, 2),
    "random 2000": two_d(2000, 3),
    "ties 200": two_d(200, 4, ties=4),
    "ties 2000": two_d(2000, 5, ties=6),
    "duplicates": two_d(120, 6, ties=5, duplicates=3),
    "all equal": with_violation(np.full((9, 2), 0.5)),
    "single": with_violation([[0.3, 0.7]]),
    "equal first objective": with_violation([[1, 3], [1, 2], [1, 2], [0, 5], [2, 1], [1, 1]]),
    "signed zeros": with_violation([[0.0, 1.0], [-0.0, 0.5], [0.0, 0.5], [-0.0, 1.0]]),
    "constraints": two_d(400, 7, ties=5, infeasible=0.4),
    "all infeasible": two_d(60, 8, infeasible=1.0),
    "nan": two_d(300, 9, ties=8, infeasible=0.2, nan=0.05),
}


def matrix_ranks(g, v, until=None):
    """The dominance-matrix ranks of two objectives: a third, constant objective changes no comparison."""
    return pareto.ranks(tf.concat([g, tf.zeros_like(g[:, :1])], 1), v, until)


@pytest.mark.parametrize("case", TWO_D)
def test_two_objective_ranks_match_the_matrix_and_the_plain_python_reference(case):
    values = TWO_D[case]
    g, v = pareto.minimise_space(tf.constant(values), SIGNS[2])
    p = len(values)
    if p <= 300:
        assert pareto.ranks(g, v).numpy().tolist() == ref_ranks(*ref_clean(values.tolist(), SIGNS[2]))
    for until in (None, 0, 1, p // 3, p // 2):
        np.testing.assert_array_equal(pareto.ranks(g, v, until).numpy(), matrix_ranks(g, v, until).numpy())
    top = pareto.non_dominated(g, v).numpy()
    np.testing.assert_array_equal(top, pareto.non_dominated(tf.concat([g, tf.zeros_like(g[:, :1])], 1), v).numpy())
    assert np.array_equal(top, (pareto.ranks(g, v).numpy() == 0) & (v.numpy() == 0))


@pytest.mark.slow
@pytest.mark.parametrize("case", ["random 300", "ties 2000", "duplicates", "single", "constraints", "nan"])
def test_two_objective_ranks_are_the_same_eager_in_a_graph_and_under_xla(case):
    values = tf.constant(TWO_D[case])
    until = max(len(TWO_D[case]) // 2, 1)

    def run(x):
        g, v = pareto.minimise_space(x, SIGNS[2])
        return pareto.ranks(g, v, until), pareto.non_dominated(g, v), pareto.order(x, SIGNS[2], until)[:until]

    g, v = pareto.minimise_space(values, SIGNS[2])
    want = matrix_ranks(g, v, until).numpy()
    modes = (run, tf.function(run, autograph=False), fusion.xla_function(run))
    runs = [[t.numpy() for t in fn(values)] for fn in modes]
    for rank, top, order in runs:
        np.testing.assert_array_equal(rank, want)
        np.testing.assert_array_equal(top, (want == 0) & (v.numpy() == 0))
        np.testing.assert_array_equal(order, runs[0][2])  # the eager order


def ref_hypervolume(points, ref) -> float:
    """Inclusion-exclusion over the boxes each point dominates (minimised)."""
    total = 0.0
    for k in range(1, len(points) + 1):
        for subset in itertools.combinations(points, k):
            corner = np.max(subset, axis=0)
            total += (-1) ** (k + 1) * np.prod(np.maximum(np.asarray(ref) - corner, 0))
    return total


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_matches_inclusion_exclusion_and_is_batched(m):
    r = np.random.default_rng(m)
    points = r.random((4, 7, m))
    points[0, 3] = points[0, 2]  # a duplicate
    points[1, 0] = 1.5  # beyond the reference
    ref = (1.1,) * m
    got = pareto.hypervolume(points, ref, (-1.0,) * m)
    np.testing.assert_allclose(got, [ref_hypervolume(p, ref) for p in points], rtol=1e-5)
    # maximised objectives mirror minimised ones
    np.testing.assert_allclose(pareto.hypervolume(-points[0], [-x for x in ref], (1.0,) * m), got[0], rtol=1e-5)
    with pytest.raises(ValueError, match="directions and a reference"):
        pareto.hypervolume(points, ref, (-1.0, -1.0, -1.0, -1.0)[:5 - m])


# -- the engine with several objectives ---------------------------------------------------------------


def two_bar(x):
    """Two objectives of a float genome: f1 = sum |x|, f2 = sum |x - 1|, both minimised (every genome
    in [0, 1]^L is on the front). Additions of columns only: XLA:CPU may contract a multiply and an
    add into one rounding (or add a row in another order) differently for another number of rows,
    and batched runs are compared bit for bit.
    """
    cols = range(x.shape[1])
    return tf.stack([tf.add_n([tf.abs(x[:, i]) for i in cols]), tf.add_n([tf.abs(x[:, i] - 1.0) for i in cols])], 1)


def moo_model(mode="xla", fitness=None, selection=None, seed=0, length=6):
    inputs = evo.Input(shape=(length,), dtype="float32")
    x = evo.ops.SimulatedBinaryCrossover(-1.0, 2.0)(inputs)
    x = evo.ops.PolynomialMutation(-1.0, 2.0)(x)
    model = evo.Model(inputs, x)
    fitness = fitness or evo.fitness.Objectives(two_bar, ("min", "min"), reference=(12.0, 12.0))
    model.compile(fitness=fitness, selection=selection or evo.selection.NSGA2(), mode=mode, seed=seed)
    return model


POP = evo.population.uniform((32, 6), -1.0, 2.0, seed=3)


def same(a, b):
    return (np.array_equal(a.population, b.population) and np.array_equal(a.fitness, b.fitness)
            and a.history == b.history and np.array_equal(a.front.objectives, b.front.objectives))


def test_a_run_with_two_objectives_tracks_hypervolume_and_returns_its_front():
    model = moo_model("graph")
    result = model.evolve(POP, generations=30)
    assert result.fitness.shape == (32, 3)
    front = result.front
    assert len(front) >= 2 and front.objectives.shape[1] == 2
    assert np.all(np.diff(front.objectives[:, 0]) > 0) and np.all(np.diff(front.objectives[:, 1]) < 0)
    assert front.hypervolume == pytest.approx(result.history["best"][-1], rel=1e-5)
    assert result.best_fitness == pytest.approx(max(result.history["best"]))
    # the genes of the front's members are between 0 and 1, where the two bars trade off
    assert front.genomes.mean() > -0.05 and front.genomes.mean() < 1.05
    assert 0 < result.history["mean"][-1] <= 1  # the share of the population on the front


@pytest.mark.slow
def test_runs_are_the_same_in_every_mode_after_resume_and_in_batches(tmp_path):
    xla = moo_model("xla").evolve(POP, generations=12)
    graph = moo_model("graph").evolve(POP, generations=12)
    np.testing.assert_allclose(graph.fitness, xla.fitness, rtol=1e-5)
    model = moo_model("xla")
    path = tmp_path / "run.npz"
    model.evolve(POP, generations=5, callbacks=[evo.callbacks.Checkpoint(path, every=5)])
    assert same(model.evolve(generations=12, resume_from=path), xla)
    assert same(model.evolve(POP, generations=12, batch_size=10), xla)
    assert same(model.evolve(POP, generations=12, chunk=5), xla)


@pytest.mark.slow
def test_early_stopping_on_a_hypervolume_target_stops_at_the_generation():
    model = moo_model("xla")
    whole = model.evolve(POP, generations=20)
    target = float(np.maximum.accumulate(whole.history["best"])[7])
    stopped = model.evolve(POP, generations=20, callbacks=[evo.callbacks.EarlyStopping(target=target)])
    assert stopped.stopped_early
    assert stopped.generations == int(np.argmax(np.maximum.accumulate(whole.history["best"]) >= target)) + 1


@pytest.mark.slow
def test_constraints_keep_the_front_feasible_gene_order_bound():
    """Objectives with gene 0 <= gene 1 as a constraint: every front member satisfies it."""
    def bounded(x):
        return two_bar(x), evo.fitness.order_violation(x, [(1, 0)])  # gene 1 <= gene 0

    model = moo_model("xla", fitness=evo.fitness.Objectives(bounded, ("min", "min"), reference=(12.0, 12.0)))
    front = model.evolve(POP, generations=25).front
    assert np.all(front.genomes[:, 1] <= front.genomes[:, 0])


@pytest.mark.slow
def test_tournament_compares_feasibility_first_then_violation_then_the_objective():
    """One objective under a capacity: the best individual is feasible, though heavier ones score more."""
    weights, values = np.arange(1, 17, dtype=np.float32), np.arange(1, 17, dtype=np.float32) ** 1.5

    def packed_value(x):
        x = tf.cast(x, tf.float32)
        return tf.linalg.matvec(x, values), evo.fitness.capacity_violation(x, weights, 20.0)

    inputs = evo.Input(shape=(16,), dtype="int32")
    x = evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate=1 / 16)(inputs))
    for selection in (evo.selection.Tournament(size=2), evo.selection.NSGA2()):
        model = evo.Model(inputs, x)
        model.compile(fitness=evo.fitness.Objectives(packed_value, "max"), selection=selection, mode="xla", seed=1)
        result = model.evolve(evo.population.random_integers((64, 16), 0, 2, seed=2), generations=40)
        assert result.best @ weights <= 20.0
        assert result.best_fitness == pytest.approx(result.best @ values)
        assert result.best_fitness >= 0.9 * max(v for v in values)  # at least the most valuable item that fits


def test_other_selections_refuse_several_objectives_naming_nsga2():
    fitness = evo.fitness.Objectives(two_bar, ("min", "min"), reference=(12.0, 12.0))
    with pytest.raises(ValueError, match="NSGA2"):
        moo_model(fitness=fitness, selection=evo.selection.Tournament(size=2))


@pytest.mark.parametrize("fn, directions, match", [
    (two_bar, ("min", "min", "min"), "3 direction"),
    (lambda x: two_bar(x)[:, 0], ("min", "min"), r"shape \(N, 2\)"),
    (lambda x: (two_bar(x), tf.zeros((x.shape[0], 2))), ("min", "min"), "one value per individual"),
])
def test_wrong_objectives_or_constraint_shapes_raise_clear_errors(fn, directions, match):
    fitness = evo.fitness.Objectives(fn, directions, reference=(12.0,) * len(directions))
    with pytest.raises(ValueError, match=match):
        moo_model("eager", fitness=fitness).evolve(POP, generations=1)


def test_bad_directions_and_missing_reference_raise_clear_errors():
    with pytest.raises(ValueError, match="'min' or 'max'"):
        evo.fitness.Objectives(two_bar, ("min", "down"), reference=(1, 1))
    with pytest.raises(ValueError, match="needs reference="):
        evo.fitness.Objectives(two_bar, ("min", "min"))
    with pytest.raises(ValueError, match="3 values for 2 objectives"):
        evo.fitness.Objectives(two_bar, ("min", "min"), reference=(1, 1, 1))


@pytest.mark.slow
def test_nan_objectives_never_reach_the_front():
    def sometimes_nan(x):
        f = two_bar(x)
        return tf.where(x[:, :1] > 1.5, np.nan, f)

    model = moo_model("xla", fitness=evo.fitness.Objectives(sometimes_nan, ("min", "min"), reference=(12.0, 12.0)))
    result = model.evolve(POP, generations=10)
    assert np.all(np.isfinite(result.front.objectives))
    assert np.all(result.front.genomes[:, 0] <= 1.5)
