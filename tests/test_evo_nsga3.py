"""course_lib.evo.nsga3, NSGA3 and IGD: many objectives in the engine.

Reference directions are the Das-Dennis simplex lattices (one or two layers, Deb and Jain's counts);
normalization, association, niche counts and the survivors match the paper's loop in NumPy
(problems/nsga3_numpy.py) given the same random words, on hand-made and random pools with ties,
duplicates, constraints and NaN; the degenerate hyperplane falls back to the front's worst; an
empty niche takes its closest candidate first; the survivors are the same eagerly, in a graph and
under XLA; runs are bit-identical across batch sizes, chunks and resumes; IGD and IGD+ match hand
values and drive EarlyStopping as a minimised target; bad input raises clear errors.
"""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import nsga3, rng
from course_lib.evo import state as state_lib
from course_lib.evo.rng import Rows
from course_lib.problems import dtlz, nsga3_numpy

pytestmark = pytest.mark.timeout(300)


# -- reference directions -------------------------------------------------------------------------------


@pytest.mark.parametrize("m, partitions, count", [(3, 12, 91), (5, 6, 210), (8, (3, 2), 156), (10, (3, 2), 275),
                                                  (2, 4, 5)])
def test_reference_directions_are_the_das_dennis_lattices(m, partitions, count):
    w = nsga3.reference_directions(m, partitions)
    assert w.shape == (count, m) == (nsga3.count(m, partitions), m)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert np.all(w >= 0) and len(np.unique(w.round(12), axis=0)) == count
    p = partitions if isinstance(partitions, int) else partitions[0]
    np.testing.assert_allclose(w[:nsga3.count(m, p)] * p, np.round(w[:nsga3.count(m, p)] * p), atol=1e-12)
    if not isinstance(partitions, int):  # the inside layer is strictly inside the simplex
        assert np.all(w[nsga3.count(m, p):] > 0)


def test_default_partitions_follow_deb_and_jain():
    assert [nsga3.default_partitions(m, n) for m, n in [(3, 92), (5, 212), (8, 156), (10, 276)]] == \
        [12, 6, (3, 2), (3, 2)]


@pytest.mark.parametrize("partitions", [0, (3, 2, 1), 2.5, True, (0, 1)])
def test_bad_partitions_raise_clear_errors(partitions):
    with pytest.raises(ValueError, match="partitions"):
        nsga3.reference_directions(3, partitions)


# -- survivors against the NumPy reference --------------------------------------------------------------


def engine_and_reference(f, v, n, directions, seed=0):
    values = tf.constant(np.concatenate([f, v[:, None]], 1), tf.float32)
    key = rng.key(seed)
    got = nsga3.survivors(values, (-1.0,) * f.shape[1], key, n, directions).numpy()
    words = rng.bits(key, Rows.all(len(f)), (2,)).numpy().astype(np.int64)
    return got, nsga3_numpy.survivors(np.asarray(f, np.float32), v, n, directions, words)


@pytest.mark.parametrize("case", range(12))
def test_survivors_match_the_papers_loop_in_numpy(case):
    """Random pools, some rounded to a grid (ties, duplicates), some with constraints or NaN rows."""
    r = np.random.default_rng(case)
    m = (2, 3, 5, 8)[case % 4]
    p = int(r.integers(10, 60))
    f = r.random((p, m)).astype(np.float32)
    if case % 3 == 0:
        f = np.round(f * 4) / 4
    v = np.where(r.random(p) < 0.3, r.random(p), 0.0).astype(np.float32) if case % 5 == 0 else np.zeros(p, np.float32)
    if case % 6 == 1:
        f[:3, 0] = np.nan
    n = p // 2
    d = nsga3.reference_directions(m, nsga3.default_partitions(m, n))
    got, ref = engine_and_reference(f, v, n, d, seed=case)
    np.testing.assert_array_equal(got, ref.rows)
    assert len(set(got.tolist())) == n
    if case % 6 == 1:
        assert not set(got.tolist()) & {0, 1, 2}  # NaN rows rank last


def test_normalization_association_and_niches_match_numpy_on_a_hand_made_pool():
    """Three objectives, a first front on the plane x + y + z = 1 scaled per axis, and a second front."""
    first = np.array([[2.0, 0, 0], [0, 4, 0], [0, 0, 1], [1, 2, 0], [0, 2, 0.5], [1, 0, 0.5]])
    second = first * 1.1 + 0.05
    f = np.concatenate([first, second]).astype(np.float32) + 1.0  # ideal point (1, 1, 1)
    rows = tf.ones([len(f)], tf.bool)
    front = tf.constant(np.arange(len(f)) < len(first))
    normalized, ideal, intercepts, _ = nsga3.normalize(tf.constant(f), rows, front)
    np.testing.assert_allclose(ideal, [1, 1, 1])
    np.testing.assert_allclose(intercepts, [2, 4, 1], rtol=1e-5)  # the plane through the extreme points
    ref_f, ref_ideal, ref_intercepts, _ = nsga3_numpy.normalize(f.astype(np.float64), np.ones(len(f), bool),
                                                             np.arange(len(f)) < len(first))
    np.testing.assert_allclose(intercepts, ref_intercepts, rtol=1e-5)
    np.testing.assert_allclose(normalized, ref_f, rtol=1e-5, atol=1e-6)
    d = nsga3.reference_directions(3, 2)
    nearest, distance = nsga3.associate(normalized, tf.constant(d, tf.float32))
    ref_nearest, ref_distance = nsga3_numpy.associate(ref_f, d)
    np.testing.assert_array_equal(nearest, ref_nearest)
    np.testing.assert_allclose(distance, ref_distance, atol=1e-6)
    # the first front normalized is the directions (1,0,0), (0,1,0), (0,0,1), (.5,.5,0), (0,.5,.5), (.5,0,.5)
    assert nearest.numpy()[:6].tolist() == [0, 3, 5, 1, 4, 2]
    np.testing.assert_allclose(distance.numpy()[:6], 0, atol=1e-6)
    got, ref = engine_and_reference(f, np.zeros(len(f), np.float32), 8, d)
    np.testing.assert_array_equal(got, ref.rows)
    assert set(got[:6].tolist()) == set(range(6))
    np.testing.assert_array_equal(ref.niche, [1, 1, 1, 1, 1, 1])


@pytest.mark.parametrize("m, partitions", [(3, 12), (5, 6), (8, (3, 2))])
def test_each_point_goes_to_its_nearest_line_up_to_the_tie_and_gets_its_distance(m, partitions):
    d = nsga3.reference_directions(m, partitions)
    f = np.random.default_rng(m).random((500, m)) * np.random.default_rng(1).choice([0.01, 1, 100], (500, 1))
    f[:len(d)] = d * 3.0  # points on a direction: distance 0, tied with no other
    f32 = f.astype(np.float32)
    nearest, distance = tf.function(nsga3.associate, jit_compile=True)(tf.constant(f32), tf.constant(d, tf.float32))
    unit = d / np.linalg.norm(d, axis=1, keepdims=True)
    x = f32.astype(np.float64)
    exact = np.linalg.norm(x[:, None, :] - (x @ unit.T)[:, :, None] * unit[None], axis=2)  # (P, H) in float64
    chosen = exact[np.arange(len(x)), nearest.numpy()]
    norm = np.linalg.norm(x, axis=1)
    # the chosen line is the nearest, or one whose squared distance is within the tie band (2 x TIE x |f|²)
    assert np.all(chosen ** 2 <= exact.min(axis=1) ** 2 + 3 * nsga3.TIE * norm ** 2)
    np.testing.assert_allclose(distance.numpy(), chosen, rtol=1e-4, atol=1e-5 * norm.max())
    assert nearest.numpy()[:len(d)].tolist() == list(range(len(d)))
    np.testing.assert_array_equal(nearest.numpy(), nsga3_numpy.associate(x, d)[0])


def test_a_degenerate_hyperplane_falls_back_to_the_worst_of_the_front():
    """Every point on one line: the extreme points repeat, no plane through them; the intercepts are the
    first front's worst values."""
    t = np.linspace(0, 1, 6)
    f = np.stack([t, 1 - t, 0.5 * np.ones_like(t) + t * 0], 1).astype(np.float32)
    f[:, 2] = 2.0  # a constant third objective: zero range
    _, ideal, intercepts, _ = nsga3.normalize(tf.constant(f), tf.ones([6], tf.bool), tf.ones([6], tf.bool))
    np.testing.assert_allclose(ideal, [0, 0, 2])
    np.testing.assert_allclose(intercepts, [1, 1, nsga3.ZERO_RANGE])
    _, _, ref, _ = nsga3_numpy.normalize(f.astype(np.float64), np.ones(6, bool), np.ones(6, bool))
    np.testing.assert_allclose(intercepts, ref)


def test_an_empty_niche_takes_its_closest_candidate_and_crowded_niches_wait():
    """Two objectives, directions (1, 0), (.5, .5), (0, 1). Kept: rows 0-1 (front 0), near the axes.
    The cut front (rows 2-5): two near (.5, .5) (row 3 the closer), two near the axes. One slot: the empty
    middle niche takes row 3, whatever the random words."""
    f = np.array([[0.0, 1.0], [1.0, 0.0],
                  [0.45, 1.1], [0.6, 0.6], [0.7, 0.5], [1.1, 0.1]], np.float32)
    d = nsga3.reference_directions(2, 2)
    for seed in range(5):
        got, ref = engine_and_reference(f, np.zeros(6, np.float32), 3, d, seed=seed)
        assert sorted(got.tolist()) == [0, 1, 3]
        np.testing.assert_array_equal(got, ref.rows)


def test_random_ties_come_from_the_key():
    """Eight copies of one point and two slots: which copies survive depends on the key alone."""
    f = np.concatenate([[[0.0, 1.0], [1.0, 0.0]], np.full((8, 2), 0.5)]).astype(np.float32)
    d = nsga3.reference_directions(2, 2)
    picks = set()
    for seed in range(6):
        got, ref = engine_and_reference(f, np.zeros(10, np.float32), 4, d, seed=seed)
        np.testing.assert_array_equal(got, ref.rows)
        again, _ = engine_and_reference(f, np.zeros(10, np.float32), 4, d, seed=seed)
        np.testing.assert_array_equal(got, again)
        picks.add(tuple(sorted(got[2:].tolist())))
    assert len(picks) > 1


def carried_pair(f, v, n, directions, state, seed=0, eliminate_duplicates=False):
    """The engine's (rows, next state) and the NumPy reference's ``Selected`` on one pool and state."""
    values = tf.constant(np.concatenate([f, v[:, None]], 1), tf.float32)
    key = rng.key(seed)
    rows, after = nsga3.survivors_and_state(values, (-1.0,) * f.shape[1], key, n, directions,
                                            tf.nest.map_structure(tf.constant, state), eliminate_duplicates)
    words = rng.bits(key, Rows.all(len(f)), (2,)).numpy().astype(np.int64)
    ref = nsga3_numpy.survivors(np.asarray(f, np.float32), v, n, directions, words, state, eliminate_duplicates)
    return rows.numpy(), tf.nest.map_structure(lambda t: t.numpy(), after), ref


@pytest.mark.parametrize("case", range(8))
def test_the_reference_and_the_engine_carry_the_same_state_and_choose_the_same_survivors(case):
    """Three generations of random pools drifting towards the origin, each with the state the previous one
    left: the engine's survivors and state are the NumPy reference's at every step."""
    r = np.random.default_rng(100 + case)
    m = (2, 3, 5, 8)[case % 4]
    p = int(r.integers(20, 60))
    n = p // 2
    d = nsga3.reference_directions(m, nsga3.default_partitions(m, n))
    state = nsga3.initial_state(m)
    for step in range(3):
        f = (r.random((p, m)) * (1.5 - 0.4 * step) + r.random((1, m))).astype(np.float32)
        if case % 2:
            f[r.random(p) < 0.2] = f[0]  # duplicates
        v = np.where(r.random(p) < 0.2, r.random(p), 0.0).astype(np.float32) if case % 3 == 0 else \
            np.zeros(p, np.float32)
        rows, after, ref = carried_pair(f, v, n, d, state, seed=case * 10 + step, eliminate_duplicates=case % 2 == 1)
        np.testing.assert_array_equal(rows, ref.rows)
        assert isinstance(after, nsga3.Normalization)
        for name, value in after._asdict().items():
            np.testing.assert_allclose(value, getattr(ref.state, name), rtol=1e-6, err_msg=name)
        ok = v == 0
        np.testing.assert_array_equal(after.ideal, np.minimum(state.ideal, f[ok].min(axis=0)))  # the ideal point so far
        np.testing.assert_array_equal(after.worst, np.maximum(state.worst, f[ok].max(axis=0)))  # the worst so far
        state = after


def test_extreme_points_of_earlier_generations_are_kept():
    """A pool that lost the ends of the front still normalizes by the earlier extreme points: the
    intercepts stay those of the first pool instead of shrinking to the middle of the front."""
    ends = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    middle = np.array([[0.4, 0.3, 0.3], [0.3, 0.4, 0.3], [0.3, 0.3, 0.4], [0.5, 0.5, 0.0]])
    first = np.concatenate([ends, middle]).astype(np.float32)
    rows = tf.ones([len(first)], tf.bool)
    _, _, scale, state = nsga3.normalize(tf.constant(first), rows, rows)
    np.testing.assert_allclose(scale, [1, 1, 1], rtol=1e-6)
    later = tf.constant(middle.astype(np.float32))
    mid_rows = tf.ones([len(middle)], tf.bool)
    _, ideal, scale, after = nsga3.normalize(later, mid_rows, mid_rows, state)
    np.testing.assert_allclose(ideal, [0, 0, 0])
    np.testing.assert_allclose(scale, [1, 1, 1], rtol=1e-6)
    np.testing.assert_array_equal(after.extremes, ends)
    _, fresh_ideal, _, _ = nsga3.normalize(later, mid_rows, mid_rows)
    np.testing.assert_allclose(fresh_ideal, [0.3, 0.3, 0])  # without the state: the middle's ideal point


def test_duplicates_survive_only_when_the_distinct_rows_run_out():
    """Two objectives: a front of 4 distinct points, each twice, and 4 dominated points. With elimination the
    4 survivors beside the front are the dominated points, not the copies."""
    front = np.array([[0.0, 1.0], [0.3, 0.6], [0.6, 0.3], [1.0, 0.0]])
    f = np.concatenate([front, front, front + 0.5]).astype(np.float32)
    d = nsga3.reference_directions(2, 3)
    state = nsga3.initial_state(2)
    rows, _, ref = carried_pair(f, np.zeros(12, np.float32), 8, d, state, eliminate_duplicates=True)
    np.testing.assert_array_equal(rows, ref.rows)
    assert sorted(rows.tolist()) == [0, 1, 2, 3, 8, 9, 10, 11]
    rows, _, ref = carried_pair(f, np.zeros(12, np.float32), 8, d, state)
    np.testing.assert_array_equal(rows, ref.rows)
    assert sorted(rows.tolist()) == list(range(8))  # without it the copies are the first front
    all_same = np.zeros((6, 2), np.float32)
    rows, _, ref = carried_pair(all_same, np.zeros(6, np.float32), 3, d, state, eliminate_duplicates=True)
    np.testing.assert_array_equal(rows, ref.rows)
    assert 0 in rows.tolist() and len(set(rows.tolist())) == 3  # copies fill the places the distinct row cannot
    dup = nsga3.duplicates(tf.constant([[0.0, 1.0], [-0.0, 1.0], [0.0, 1.0]]), tf.constant([0.0, 0.0, 0.5]))
    assert dup.numpy().tolist() == [False, True, False]


@pytest.mark.slow
def test_survivors_are_the_same_eagerly_in_a_graph_and_under_xla():
    r = np.random.default_rng(7)
    values = tf.constant(np.concatenate([r.random((64, 4)), np.zeros((64, 1))], 1), tf.float32)
    d = nsga3.reference_directions(4, 4)
    key = rng.key(3)

    def run(v, k):
        return nsga3.survivors(v, (-1.0,) * 4, k, 32, d)

    eager = run(values, key).numpy()
    np.testing.assert_array_equal(tf.function(run)(values, key), eager)
    np.testing.assert_array_equal(tf.function(run, jit_compile=True)(values, key), eager)


# -- the engine with NSGA3 and IGD ----------------------------------------------------------------------


PROBLEM = dtlz.dtlz(2, 4, distance_variables=3, partitions=4)
POP = dtlz.start(PROBLEM, 40, seed=1)


def nsga3_model(mode="graph", selection=None, fitness=None):
    model = dtlz.model(PROBLEM, selection or evo.selection.NSGA3(), mode=mode)
    if fitness is not None:
        model.compile(fitness=fitness, selection=selection or evo.selection.NSGA3(), mode=mode)
    return model


def same(a, b):
    return (np.array_equal(a.population, b.population) and np.array_equal(a.fitness, b.fitness)
            and a.history == b.history and np.array_equal(a.front.objectives, b.front.objectives))


def test_a_run_tracks_igd_and_improves_it():
    result = nsga3_model().evolve(POP, generations=15)
    best = result.history["best"]
    assert best[-1] < best[0] and result.best_fitness == pytest.approx(min(best))
    assert result.front.igd == pytest.approx(best[-1], rel=1e-5)
    assert result.front.igd == pytest.approx(PROBLEM.igd(result.front.objectives), rel=1e-5)
    assert np.isnan(result.front.hypervolume)


def test_runs_are_the_same_after_resume_in_batches_and_in_chunks(tmp_path):
    model = nsga3_model()
    whole = model.evolve(POP, generations=8)
    path = tmp_path / "run.npz"
    model.evolve(POP, generations=4, callbacks=[evo.callbacks.Checkpoint(path, every=4)])
    assert same(model.evolve(generations=8, resume_from=path), whole)
    assert same(model.evolve(POP, generations=8, batch_size=16), whole)
    assert same(model.evolve(POP, generations=8, chunk=3), whole)


@pytest.mark.parametrize("eliminate_duplicates", [False, True])
def test_the_carried_state_is_the_same_after_resume_and_in_batches(tmp_path, eliminate_duplicates):
    model = nsga3_model(selection=evo.selection.NSGA3(eliminate_duplicates=eliminate_duplicates))

    def state_after(name, **kwargs):
        path = tmp_path / f"{name}.npz"
        model.evolve(generations=8, callbacks=[evo.callbacks.Checkpoint(path, every=4)], **kwargs)
        return dict(np.load(path))

    whole = state_after("whole", population=POP)
    assert {name: whole[name].shape for name in STATE_NAMES} == {"selection_state.ideal": (4,),
                                                                 "selection_state.worst": (4,),
                                                                 "selection_state.extremes": (4, 4)}
    assert all(np.all(np.isfinite(whole[name])) for name in STATE_NAMES)
    half = tmp_path / "half.npz"
    model.evolve(POP, generations=4, callbacks=[evo.callbacks.Checkpoint(half, every=4)])
    assert not np.array_equal(np.load(half)["selection_state.ideal"], whole["selection_state.ideal"])
    resumed = state_after("resumed", resume_from=half)
    batched = state_after("batched", population=POP, batch_size=16)
    for other in (resumed, batched):
        for name in STATE_NAMES:
            np.testing.assert_array_equal(other[name], whole[name])
        np.testing.assert_array_equal(other["population"], whole["population"])


STATE_NAMES = ("selection_state.ideal", "selection_state.worst", "selection_state.extremes")


def test_the_state_is_nested_by_name_and_round_trips_a_checkpoint(tmp_path):
    """NSGA3 carries ``nsga3.Normalization`` (ideal, worst, extremes), a checkpoint holds each part by name,
    and a resumed run reads them back into the same structure: it continues as the whole run does."""
    selection = evo.selection.NSGA3()
    start = selection.initial_state(4)
    assert isinstance(start, nsga3.Normalization) and start.extremes.shape == (4, 4)
    assert {part.dtype for part in start} == {np.dtype(np.float32)}
    model = nsga3_model(selection=selection)
    path = tmp_path / "run.npz"
    model.evolve(POP, generations=3, callbacks=[evo.callbacks.Checkpoint(path, every=3)])
    saved = dict(np.load(path))
    assert "selection_state" not in saved and set(STATE_NAMES) <= set(saved)
    like = state_lib.State(*[None] * 5, tf.nest.map_structure(tf.constant, start))
    back = state_lib.read(saved, like, ("selection",))["selection"]
    assert isinstance(back, nsga3.Normalization)
    for name, value in back._asdict().items():
        np.testing.assert_array_equal(value.numpy(), saved[f"selection_state.{name}"])
    assert same(model.evolve(generations=6, resume_from=path), model.evolve(POP, generations=6))


def test_a_checkpoint_without_a_part_of_the_selection_state_is_refused(tmp_path):
    model = nsga3_model()
    path = tmp_path / "run.npz"
    model.evolve(POP, generations=2, callbacks=[evo.callbacks.Checkpoint(path, every=2)])
    saved = dict(np.load(path))
    del saved["selection_state.worst"]
    np.savez(path, **saved)
    with pytest.raises(ValueError, match="holds no selection_state.worst .*start the run again"):
        model.evolve(generations=4, resume_from=path)


def test_a_checkpoint_of_the_old_packed_state_is_refused_saying_what_to_do(tmp_path):
    """The engine once saved NSGA-III's state as one (M + 2, M) block, ``selection_state``: such a checkpoint
    is refused with what to do, not misread."""
    model = nsga3_model()
    path = tmp_path / "run.npz"
    model.evolve(POP, generations=2, callbacks=[evo.callbacks.Checkpoint(path, every=2)])
    saved = dict(np.load(path))
    parts = [saved.pop(name) for name in STATE_NAMES]
    saved["selection_state"] = np.concatenate([parts[0][None], parts[1][None], parts[2]])  # the old layout
    np.savez(path, **saved)
    with pytest.raises(ValueError, match=r"holds selection_state as one array, as an older version of the engine "
                                         r"saved it; this run reads it by name \(selection_state.ideal, "
                                         r"selection_state.worst, selection_state.extremes\): start the run again"):
        model.evolve(generations=4, resume_from=path)


def test_early_stopping_on_an_igd_target_stops_when_igd_drops_below_it():
    model = nsga3_model()
    whole = model.evolve(POP, generations=12)
    lowest = np.minimum.accumulate(whole.history["best"])
    target = float(lowest[5])
    stopped = model.evolve(POP, generations=12, callbacks=[evo.callbacks.EarlyStopping(target=target)])
    assert stopped.stopped_early
    assert stopped.generations == int(np.argmax(lowest <= target)) + 1


def test_igd_and_igd_plus_match_hand_values():
    front = evo.pareto.ReferenceFront(((0.0, 1.0), (1.0, 0.0)))
    points = np.array([[0.0, 2.0], [0.5, 0.0]])
    # (0, 1): nearest (0, 2) at 1; (1, 0): nearest (0.5, 0) at 0.5
    assert evo.pareto.igd(points, front, (-1.0, -1.0)) == pytest.approx(0.75)
    plus = evo.pareto.ReferenceFront(front.points, plus=True)
    # IGD+: (0.5, 0) dominates (1, 0): 0; (0, 1): min(1, sqrt(0.5² + 0)) = 0.5
    assert evo.pareto.igd(points, plus, (-1.0, -1.0)) == pytest.approx(0.25)
    # maximised objectives are compared in minimise space: the same distances
    assert evo.pareto.igd(-points, evo.pareto.ReferenceFront(((0.0, -1.0), (-1.0, 0.0))), (1.0, 1.0)) == \
        pytest.approx(0.75)


# -- bad input ---------------------------------------------------------------------------------------------


def test_directions_of_the_wrong_width_or_one_objective_raise_clear_errors():
    with pytest.raises(ValueError, match=r"3 columns.*4 objectives.*\(H, 4\)"):
        nsga3_model(selection=evo.selection.NSGA3(directions=nsga3.reference_directions(3, 4)))
    one = evo.fitness.Objectives(lambda x: tf.reduce_sum(x, 1), "min")
    with pytest.raises(ValueError, match="two or more objectives"):
        nsga3_model(selection=evo.selection.NSGA3(), fitness=one)
    with pytest.raises(ValueError, match="non-negative"):
        evo.selection.NSGA3(directions=[[1.0, -1.0], [0.5, 0.5]])
    with pytest.raises(ValueError, match="not both"):
        evo.selection.NSGA3(partitions=4, directions=[[1.0, 0.0]])


def test_quality_choices_are_explicit_and_checked():
    fn = dtlz.dtlz(2, 4).fitness.fn
    with pytest.raises(ValueError, match="exact for 2 or 3"):
        evo.fitness.Objectives(fn, ("min",) * 4, reference=(2.0,) * 4)
    with pytest.raises(ValueError, match="exact for 2 or 3"):
        evo.fitness.Objectives(fn, ("min",) * 4, reference_front=np.eye(4), quality="hypervolume")
    with pytest.raises(ValueError, match="one of hypervolume, igd, igd\\+"):
        evo.fitness.Objectives(fn, ("min",) * 4, reference_front=np.eye(4), quality="gd")
    with pytest.raises(ValueError, match=r"shape \(K, 4\)"):
        evo.fitness.Objectives(fn, ("min",) * 4, reference_front=np.eye(3))
    with pytest.raises(ValueError, match="needs reference_front"):
        evo.fitness.Objectives(fn, ("min",) * 4, quality="igd+")
    igd = evo.fitness.Objectives(fn, ("min",) * 4, reference_front=np.eye(4))
    assert igd.quality == "igd" and not igd.maximize
    three = evo.fitness.Objectives(fn, ("min",) * 3, reference=(2.0,) * 3)
    assert three.quality == "hypervolume" and three.maximize


@pytest.mark.slow
def test_nan_objectives_never_reach_the_front():
    def sometimes_nan(x):
        f = PROBLEM.fitness.fn(x)
        return tf.where(x[:, :1] > 0.8, np.nan, f)

    fitness = evo.fitness.Objectives(sometimes_nan, ("min",) * 4, reference_front=PROBLEM.front)
    result = nsga3_model(fitness=fitness).evolve(POP, generations=6)
    assert np.all(np.isfinite(result.front.objectives)) and np.all(result.front.genomes[:, 0] <= 0.8)


def test_eliminate_duplicates_is_a_checked_flag_kept_in_the_config():
    on = evo.selection.NSGA3(partitions=4, eliminate_duplicates=True)
    assert on.config() == {"partitions": 4, "directions": None, "eliminate_duplicates": True}
    assert "eliminate_duplicates" not in evo.selection.NSGA3().config()  # off: the config as before
    assert type(on)(**on.config()).eliminate_duplicates
    with pytest.raises(ValueError, match="eliminate_duplicates must be True or False"):
        evo.selection.NSGA3(eliminate_duplicates=1)
