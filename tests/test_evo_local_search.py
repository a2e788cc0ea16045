"""evo.ops.TwoOpt and evo.ops.OrOpt: the compiled local searches of the memetic GA."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import rng
from course_lib.evo.ops.local_search import move_segment, or_opt_delta, reverse_segments, swap_blocks, two_opt_delta
from course_lib.evo.rng import Rows
from course_lib.lessons import applications as app

N = 30


@pytest.fixture(scope="module")
def problem():
    xy = app.cities("random", N, seed=4)
    return xy, app.distance_matrix(xy), evo.fitness.TSP(coordinates=xy)


def attached(fitness, kind="TwoOpt", **options):
    op = getattr(evo.ops, kind)(**options)
    op.attach(fitness)
    return op


@pytest.mark.parametrize("kind, options", [("TwoOpt", {"moves": 3}), ("OrOpt", {"segment": 3})])
@pytest.mark.parametrize("neighbours", [5, None])
def test_never_lengthens_and_keeps_tours(problem, kind, options, neighbours):
    xy, d, fitness = problem
    tours = evo.population.permutations(16, N, seed=1).numpy()
    out = attached(fitness, kind, steps=6, candidates=16, neighbours=neighbours, **options)(tours, seed=2).numpy()
    assert all(app.is_tour(t, N) for t in out)
    before, after = app.tour_length(tours, d), app.tour_length(out, d)
    assert (after <= before + 1e-9).all()
    assert (after < before - 1e-3).all()  # random tours of 30 cities always have an improving move found


def test_computed_change_equals_change_of_full_length(problem):
    xy, d, fitness = problem
    tours = evo.population.permutations(8, N, seed=3).numpy()
    draw = np.random.default_rng(0)
    u = draw.integers(0, N, (8, 12))
    v = (u + 1 + draw.integers(0, N - 1, (8, 12))) % N
    p, q = np.minimum(u, v).astype(np.int32), np.maximum(u, v).astype(np.int32)
    delta = two_opt_delta(fitness.distances, tf.constant(tours, tf.int32), tf.constant(p), tf.constant(q)).numpy()
    for b in range(8):
        for k in range(12):
            moved = reverse_segments(tf.constant(tours[b:b + 1], tf.int32), tf.constant(p[b:b + 1, k:k + 1]),
                                     tf.constant(q[b:b + 1, k:k + 1]), tf.constant([[True]])).numpy()[0]
            assert app.is_tour(moved, N)
            change = app.tour_length(moved, d) - app.tour_length(tours[b], d)
            assert delta[b, k] == pytest.approx(change, abs=1e-5)


@pytest.mark.slow
def test_memetic_model_batched_equals_unbatched_bit_for_bit(problem):
    xy, d, _ = problem
    start = app.tour_population(12, N, seed=13, include=app.nearest_neighbour_tours(d, 6, seed=1))
    model = app.memetic_model(xy, mode="graph", seed=6, steps=2)
    results = [model.evolve(start, generations=3, batch_size=batch) for batch in (None, 5)]
    np.testing.assert_array_equal(results[0].population, results[1].population)
    assert results[0].best_fitness == results[1].best_fitness
    assert results[0].best_fitness < app.tour_length(start, d).min() - 1e-3


@pytest.mark.parametrize("kind", ["TwoOpt", "OrOpt"])
def test_rows_of_a_batch_equal_the_same_rows_of_the_whole(problem, kind):
    _, _, fitness = problem
    op = attached(fitness, kind, steps=4, candidates=8)
    tours = tf.constant(evo.population.permutations(12, N, seed=6).numpy())
    key = rng.key(9)
    whole = op.apply([tours], key, Rows.all(12)).numpy()
    part = op.apply([tours], key, Rows(5, 4, 12)).numpy()
    np.testing.assert_array_equal(part, whole[5:9])
    assert not np.array_equal(whole, tours.numpy())


def test_or_opt_change_equals_change_of_full_length(problem):
    xy, d, fitness = problem
    tours = evo.population.permutations(40, N, seed=8).numpy()
    draw = np.random.default_rng(1)
    length = draw.integers(1, 4, 40)
    i = draw.integers(0, N, 40)
    j = (i + length + draw.integers(0, N - 1 - length)) % N  # places that do not touch the segment
    flip = draw.integers(0, 2, 40)
    args = [tf.constant(v, tf.int32) for v in (i, length, j, flip)]
    delta = or_opt_delta(fitness.distances, tf.constant(tours, tf.int32), *[a[:, None] for a in args]).numpy()[:, 0]
    moved = move_segment(tf.constant(tours, tf.int32), *args, tf.ones(40, tf.bool)).numpy()
    assert all(app.is_tour(t, N) for t in moved)
    np.testing.assert_allclose(delta, app.tour_length(moved, d) - app.tour_length(tours, d), atol=1e-5)
    assert (moved[flip == 0] != tours[flip == 0]).any(axis=1).all()  # every move changed its tour


def cycle(tour):
    """A tour as the set of its undirected edges: the same cycle whatever its start and direction."""
    return {frozenset(e) for e in zip(tour, np.roll(tour, -1))}


def test_swapping_blocks_moves_a_segment_as_move_segment_does_written_either_way(problem):
    _, _, fitness = problem
    tours = evo.population.permutations(40, N, seed=8).numpy()
    draw = np.random.default_rng(2)
    length, i, flip = draw.integers(1, 4, 40), draw.integers(0, N, 40), draw.integers(0, 2, 40)
    place = length + draw.integers(0, N - 1 - length, 40)
    j = (i + place) % N
    want = move_segment(*[tf.constant(v, tf.int32) for v in (tours, i, length, j, flip)], tf.ones(40, tf.bool)).numpy()
    as_ints = [tf.constant(v[:, None], tf.int32) for v in (i, length, place - length + 1)]
    forward = swap_blocks(tf.constant(tours), *as_ints, tf.constant(flip[:, None] > 0),
                          tf.zeros((40, 1), tf.bool), tf.ones((40, 1), tf.bool)).numpy()
    np.testing.assert_array_equal(forward, want)  # the segment forward: the same positions move
    back = [tf.constant(v[:, None], tf.int32) for v in ((j + 1) % N, N - place - 1, length)]
    backward = swap_blocks(tf.constant(tours), *back, tf.zeros((40, 1), tf.bool), tf.constant(flip[:, None] > 0),
                           tf.ones((40, 1), tf.bool)).numpy()
    assert [cycle(t) for t in backward] == [cycle(t) for t in want]  # the cities between moved back: same tour
    # two moves at once on disjoint positions: each as if alone
    both = swap_blocks(tf.constant(tours[:1]), tf.constant([[2, 15]]), tf.constant([[3, 2]]), tf.constant([[4, 5]]),
                       tf.constant([[True, False]]), tf.constant([[False, True]]), tf.constant([[True, True]])).numpy()
    t = tours[0]
    assert both[0].tolist() == [*t[:2], *t[5:9], *t[2:5][::-1], *t[9:15], *t[17:22][::-1], *t[15:17], *t[22:]]


def test_every_or_opt_change_equals_the_change_of_each_move_scored_alone(problem):
    _, _, fitness = problem
    op = attached(fitness, "OrOpt", steps=1, candidates=None, neighbours=5, segment=3)
    tours = tf.constant(evo.population.permutations(6, N, seed=9).numpy(), tf.int32)
    every = op._every_change(tours).numpy()
    i, j, length, end, side = op._draw(None, Rows.all(6), tours, 3, 2, 2)
    length, j, flip = length + 1, (j - side) % N, end ^ side
    i = (i - end * (length - 1)) % N
    alone = or_opt_delta(fitness.distances, tours, i, length, j, flip).numpy()
    place = ((j - i) % N).numpy()
    valid = (place >= length.numpy()) & (place <= N - 2)
    assert every.shape == alone.shape == (6, N * 5 * 3 * 4)
    np.testing.assert_array_equal(np.isinf(every), ~valid)
    np.testing.assert_allclose(every[valid], alone[valid], atol=1e-5)


@pytest.mark.parametrize("moves", [1, 4, 32])
def test_the_best_moves_searched_in_the_least_positions_are_those_of_every_move(problem, moves):
    _, _, fitness = problem
    op = attached(fitness, "OrOpt", steps=1, candidates=None, neighbours=5, segment=3, moves=moves)
    # rounded to a few values, so that ties (broken by the lower index) are many; +inf where a move is invalid
    delta = np.round(np.random.default_rng(3).normal(size=(6, N * 60)), 1).astype(np.float32)
    delta[:, ::7] = np.inf
    whole = tf.math.top_k(-tf.constant(delta), k=moves, sorted=True).indices.numpy()
    np.testing.assert_array_equal(op._best(tf.constant(delta), group=60).numpy(), whole)
    np.testing.assert_array_equal(op._best(tf.constant(delta)).numpy(), whole)


def test_two_opt_scored_from_some_positions_equals_those_rows_of_every_move(problem):
    _, _, fitness = problem
    op = attached(fitness, "TwoOpt", steps=1, candidates=None, neighbours=5, moves=4)
    tours = tf.constant(evo.population.permutations(6, N, seed=10).numpy(), tf.int32)
    every = op._every_change(tours).numpy().reshape(6, N, 10)
    at = np.stack([np.random.default_rng(b).choice(N, 7, replace=False) for b in range(6)]).astype(np.int32)
    some = op._every_change(tours, tf.constant(at)).numpy().reshape(6, 7, 10)
    np.testing.assert_allclose(some, np.take_along_axis(every, at[:, :, None], axis=1), atol=1e-6)


def test_focused_two_opt_watches_every_city_whose_edges_changed_and_focused_on_all_is_unfocused(problem):
    xy, d, fitness = problem
    tours = evo.population.permutations(8, N, seed=11).numpy()
    op = attached(fitness, "TwoOpt", steps=1, candidates=None, neighbours=5, moves=6, focus=12)
    out, watched = (x.numpy() for x in op.improve_watched(tf.constant(tours, tf.int32), rng.key(0), Rows.all(8)))
    for before, after, w in zip(tours, out, watched):
        assert app.is_tour(after, N)
        changed = {c for e in edges(before) ^ edges(after) for c in e}
        assert changed and changed <= set(np.flatnonzero(w))  # don't-look bits reset where edges changed
    start = evo.population.permutations(8, N, seed=12).numpy()
    everywhere = attached(fitness, "TwoOpt", steps=6, candidates=None, neighbours=5, moves=6, focus=N)(start, seed=1)
    unfocused = attached(fitness, "TwoOpt", steps=6, candidates=None, neighbours=5, moves=6)(start, seed=1)
    np.testing.assert_array_equal(everywhere.numpy(), unfocused.numpy())
    narrow = attached(fitness, "TwoOpt", steps=6, candidates=None, neighbours=5, moves=6, focus=8)(start, seed=1)
    narrow = narrow.numpy()
    assert all(app.is_tour(t, N) for t in narrow)
    assert (app.tour_length(narrow, d) < app.tour_length(start, d) - 1e-3).all()
    assert op.config()["focus"] == 12
    with pytest.raises(ValueError, match="focus= .* needs candidates=None"):
        evo.ops.TwoOpt(candidates=16, focus=8)


def test_every_two_opt_change_equals_the_change_of_each_move_scored_alone(problem):
    _, _, fitness = problem
    op = attached(fitness, "TwoOpt", steps=1, candidates=None, neighbours=5, moves=4)
    tours = tf.constant(evo.population.permutations(6, N, seed=10).numpy(), tf.int32)
    every = op._every_change(tours).numpy()
    i, j, side = op._draw(None, Rows.all(6), tours, 2)
    u, v = (i - side) % N, (j - side) % N
    alone = two_opt_delta(fitness.distances, tours, tf.minimum(u, v), tf.maximum(u, v)).numpy()
    assert every.shape == alone.shape == (6, N * 5 * 2)
    np.testing.assert_allclose(every, alone, atol=1e-5)


@pytest.mark.parametrize("moves", [1, 6])
def test_or_opt_moves_never_lengthen_and_several_at_once_go_further(problem, moves):
    xy, d, fitness = problem
    tours = evo.population.permutations(16, N, seed=5).numpy()
    op = attached(fitness, "OrOpt", steps=1, candidates=None, neighbours=5, moves=moves)
    out = op(tours, seed=3).numpy()
    assert all(app.is_tour(t, N) for t in out)
    before, after = app.tour_length(tours, d), app.tour_length(out, d)
    assert (after < before - 1e-3).all()
    if moves > 1:  # one round applying several moves gains more than one applying the best alone
        one = attached(fitness, "OrOpt", steps=1, candidates=None, neighbours=5, moves=1)(tours, seed=3).numpy()
        assert (after <= app.tour_length(one, d) + 1e-5).all() and (after < app.tour_length(one, d) - 1e-3).any()
    assert op.config()["moves"] == moves
    with pytest.raises(ValueError, match="moves"):
        evo.ops.OrOpt(candidates=4, moves=5)


def test_a_locally_optimal_tour_is_returned_unchanged(problem):
    xy, d, fitness = problem
    optimal = np.stack([app.local_search(t, d) for t in evo.population.permutations(4, N, seed=7).numpy()])
    for neighbours in (5, None):
        for kind in ("TwoOpt", "OrOpt"):
            out = attached(fitness, kind, steps=5, candidates=64, neighbours=neighbours)(optimal).numpy()
            np.testing.assert_array_equal(out, optimal)


def test_memetic_ga_reaches_a_circle_optimum():
    xy = app.cities("circle", 24, seed=1)
    model = app.memetic_model(xy, mode="graph", or_opt=True)
    result = model.evolve(app.tour_population(16, 24, seed=0), generations=10)
    assert result.best_fitness == pytest.approx(app.optimal_length("circle", 24), rel=1e-5)


def test_clear_errors(problem):
    xy, _, fitness = problem
    tours = evo.population.permutations(4, N, seed=1).numpy()
    with pytest.raises(ValueError, match="no distances.*attach"):
        evo.ops.TwoOpt()(tours)
    broken = tours.copy()
    broken[2, 0] = broken[2, 1]
    with pytest.raises(ValueError, match="row 2 is not"):
        attached(fitness)(broken)
    with pytest.raises(ValueError, match="needs the distances"):
        evo.ops.TwoOpt().attach(evo.fitness.OneMax())
    with pytest.raises(ValueError, match="distances for 30 cities"):
        attached(fitness)(evo.population.permutations(4, 12, seed=0))
    asymmetric = np.random.default_rng(0).uniform(1, 2, (6, 6))
    with pytest.raises(ValueError, match="symmetric"):
        evo.ops.TwoOpt().attach(evo.fitness.TSP(distances=asymmetric))
    with pytest.raises(ValueError, match="moves .* cannot exceed candidates"):
        evo.ops.TwoOpt(candidates=2, moves=3)
    with pytest.raises(ValueError, match="candidates=None .* needs neighbours="):
        evo.ops.TwoOpt(candidates=None, neighbours=None)
    with pytest.raises(ValueError, match="steps must be a whole number"):
        evo.ops.TwoOpt(steps=0)
    inputs = evo.Input(shape=(N,), dtype="int32")
    model = evo.Model(inputs, evo.ops.TwoOpt()(inputs))
    with pytest.raises(ValueError, match="needs the distances"):
        model.compile(fitness=evo.fitness.Function(lambda x: tf.reduce_sum(tf.cast(x, tf.float32), 1), maximize=False),
                      selection=evo.selection.Elitist())


def edges(tour):
    return {frozenset(e) for e in zip(tour, np.roll(tour, -1))}


def test_every_neighbour_move_scanned_reaches_a_neighbour_list_optimum(problem):
    xy, d, fitness = problem
    tours = evo.population.permutations(8, N, seed=11).numpy()
    op = attached(fitness, steps=60, candidates=None, moves=8, neighbours=5)
    out = op(tours, seed=0).numpy()
    assert all(app.is_tour(t, N) for t in out)
    assert (app.tour_length(out, d) < app.tour_length(tours, d) - 1e-3).all()
    nearest = app.nearest_cities(d, 5)
    for t in out:  # no reversal that joins a city to one of its 5 nearest shortens it: NumPy agrees
        np.testing.assert_array_equal(app.two_opt(t, d, nearest=nearest), t)
    np.testing.assert_array_equal(op(out, seed=1).numpy(), out)  # and the op leaves it as it is
    assert "candidates=None" in repr(op)


def test_double_bridge_swaps_two_adjacent_segments():
    tours = evo.population.permutations(64, N, seed=12).numpy()
    out = evo.ops.DoubleBridge(segment=5)(tours, seed=3).numpy()
    assert all(app.is_tour(t, N) for t in out)
    for before, after in zip(tours, out):
        # three edges out and three in (two when a one-city segment meets a one-city rest)
        assert 2 <= len(edges(before) - edges(after)) == len(edges(after) - edges(before)) <= 3
    np.testing.assert_array_equal(evo.ops.DoubleBridge(rate=0.0)(tours, seed=3).numpy(), tours)
    with pytest.raises(ValueError, match="segment must be a whole number"):
        evo.ops.DoubleBridge(segment=0)
    with pytest.raises(TypeError, match="integer permutation genomes"):
        evo.ops.DoubleBridge()(np.zeros((2, 5), np.float32))


def subtour_child(parent, mate, start, length):
    """The textbook child: ``parent`` with the mate's run mate[start : start + length] (wrapping) moved
    in as a block after the city before the run in the mate, from that city on."""
    run = mate[(start + np.arange(length)) % N]
    before = mate[(start - 1) % N]
    rest = np.roll(parent, -list(parent).index(before))
    return np.concatenate([[before], run, rest[1:][~np.isin(rest[1:], run)]])


def is_subtour_child(parent, mate, child, longest):
    return any(np.array_equal(np.roll(child, -list(child).index(mate[(start - 1) % N])),
                              subtour_child(parent, mate, start, length))
               for start in range(N) for length in range(1, longest + 1))


def test_subtour_crossover_moves_a_run_of_the_mate_into_the_parent():
    tours = evo.population.permutations(17, N, seed=14).numpy()
    tours, mate, other = tours[:15], tours[15], tours[16]
    mates = np.tile(mate, (15, 1))  # a second population: each child's mate is one of its rows
    for longest in (N // 2, 3):
        out = evo.ops.SubtourCrossover(segment=None if longest == N // 2 else longest)(tours, mates, seed=5).numpy()
        assert all(is_subtour_child(parent, mate, child, longest) for parent, child in zip(tours, out))
        assert sum(edges(parent) != edges(child) for parent, child in zip(tours, out)) >= 12  # runs moved
    assert not is_subtour_child(tours[0], other, out[0], longest)  # the checker tells mates apart
    same = evo.ops.SubtourCrossover()(mates, mates, seed=5).numpy()
    assert all(edges(child) == edges(mate) for child in same)  # a tour crossed with itself: the same cycle
    np.testing.assert_array_equal(evo.ops.SubtourCrossover(probability=0.0)(tours, mates, seed=5).numpy(), tours)
    with pytest.raises(ValueError, match="segment must be a whole number >= 1 or None"):
        evo.ops.SubtourCrossover(segment=0)


@pytest.mark.parametrize("kind, edit, match", [
    ("TwoOpt", {"steps": 0}, "steps"),
    ("TwoOpt", {"moves": 64}, "moves .* cannot exceed candidates"),
    ("TwoOpt", {"focus": 8}, "focus= .* needs candidates=None"),
    ("OrOpt", {"segment": 0}, "segment"),
    ("OrOpt", {"candidates": None, "neighbours": None}, "needs neighbours="),
])
def test_a_parameter_set_after_compile_is_checked_before_the_run(problem, kind, edit, match):
    xy, _, fitness = problem
    op = getattr(evo.ops, kind)(steps=2, candidates=16)
    genome = evo.Input(shape=(N,), dtype="int32")
    model = evo.Model(genome, op(genome))
    model.compile(fitness=fitness, selection=evo.selection.Tournament(size=2), mode="graph", seed=0)
    model.evolve(evo.population.permutations(8, N, seed=1), generations=1)
    for name, value in edit.items():
        setattr(op, name, value)
    with pytest.raises(ValueError, match=match):
        model.evolve(evo.population.permutations(8, N, seed=1), generations=1)


@pytest.mark.parametrize("kind, start, edit", [
    ("TwoOpt", {"candidates": 16, "neighbours": 8}, {"neighbours": 3}),
    ("TwoOpt", {"candidates": 16, "neighbours": 8}, {"neighbours": None}),
    ("TwoOpt", {"candidates": 16}, {"steps": 3, "candidates": 8, "moves": 2}),
    ("TwoOpt", {"candidates": None, "neighbours": 5}, {"focus": 6}),
    ("OrOpt", {"candidates": 16, "segment": 3}, {"segment": 1, "neighbours": 4}),
])
def test_a_parameter_set_after_compile_takes_effect_on_the_next_run(problem, kind, start, edit):
    """Edit, evolve, and get what a model built with the new values gives: never the old program or data."""
    _, _, fitness = problem

    def model_of(options):
        op = getattr(evo.ops, kind)(**{"steps": 2, **options})
        genome = evo.Input(shape=(N,), dtype="int32")
        model = evo.Model(genome, op(genome))
        model.compile(fitness=fitness, selection=evo.selection.Tournament(size=2), mode="graph", seed=0)
        return model, op

    def run(model):
        return model.evolve(evo.population.permutations(8, N, seed=1), generations=2).population

    edited, op = model_of(start)
    before = run(edited)
    for name, value in edit.items():
        setattr(op, name, value)
    fresh, _ = model_of({**start, **edit})
    after = run(edited)
    np.testing.assert_array_equal(after, run(fresh))
    assert not np.array_equal(after, before)


def test_double_bridge_segment_set_after_compile_is_checked_before_the_run(problem):
    _, _, fitness = problem
    kick = evo.ops.DoubleBridge(segment=4)
    genome = evo.Input(shape=(N,), dtype="int32")
    model = evo.Model(genome, kick(genome))
    model.compile(fitness=fitness, selection=evo.selection.Tournament(size=2), mode="graph", seed=0)
    model.evolve(evo.population.permutations(8, N, seed=1), generations=1)
    kick.segment = 0
    with pytest.raises(ValueError, match="segment"):
        model.evolve(evo.population.permutations(8, N, seed=1), generations=1)


def test_focused_rounds_leave_no_improving_move_that_an_unfocused_round_finds():
    """More far-apart improving moves than ``moves`` per round: the focus keeps watching each city whose best
    move improves until it is applied, so after the focused rounds a full round finds nothing to improve."""
    xy = app.cities("random", 120, seed=7)
    fitness = evo.fitness.TSP(coordinates=xy)
    full = attached(fitness, "TwoOpt", steps=40, candidates=None, neighbours=6, moves=16)
    tour = evo.population.permutations(1, 120, seed=3)
    for _ in range(10):
        tour, before = full(tour, seed=0), tour
        if np.array_equal(np.asarray(tour), np.asarray(before)):
            break
    assert full._every_change(tf.constant(tour, tf.int32)).numpy().min() >= -full.tolerance  # a local optimum
    kicked = np.asarray(tour).copy()
    for s in range(8):  # eight short reversals, far apart: each undone by one improving 2-opt move
        kicked[0, 15 * s + 3:15 * s + 7] = kicked[0, 15 * s + 3:15 * s + 7][::-1]
    assert full._every_change(tf.constant(kicked)).numpy().min() < -full.tolerance
    focused = attached(fitness, "TwoOpt", steps=24, candidates=None, neighbours=6, moves=2, focus=24)(kicked, seed=0)
    assert full._every_change(tf.constant(focused, tf.int32)).numpy().min() >= -full.tolerance
