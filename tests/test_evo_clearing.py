"""evo.selection.Clearing: mu + lambda on tours where a near copy of a better tour gives way, and
evo.selection.tour_distances, the edge distance it clears by."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import rng
from course_lib.evo.selection import Clearing, Pool
from course_lib.evo.tours import tour_distances
from course_lib.lessons import applications as app


def edge_set(tour):
    return {frozenset(e) for e in zip(tour, np.roll(tour, -1))}


def test_tour_distances_count_the_edges_one_tour_lacks():
    tour = np.arange(12)
    two_opt = np.concatenate([tour[:3], tour[3:8][::-1], tour[8:]])  # two edges out, two in
    or_opt = np.concatenate([tour[:2], tour[4:9], tour[2:4], tour[9:]])  # three out, three in
    same = np.roll(tour[::-1], 5)  # another start, the other way round
    rows = np.stack([tour, two_opt, or_opt, same])
    d = tour_distances(tf.constant(rows)).numpy()
    assert d[0].tolist() == [0, 2, 3, 0]
    random_tours = evo.population.permutations(6, 12, seed=2).numpy()
    d = tour_distances(tf.constant(random_tours)).numpy()
    expected = [[len(edge_set(a) - edge_set(b)) for b in random_tours] for a in random_tours]
    np.testing.assert_array_equal(d, expected)
    np.testing.assert_array_equal(d, d.T)


def survivors(selection, tours, lengths, n):
    pool = Pool(tf.constant(lengths, tf.float32), -1.0, rng.key(0), genomes=tf.constant(tours))
    return selection.survivors(pool, n, ())[0].numpy()


def choose(selection, tours, lengths, n):
    return sorted(survivors(selection, tours, lengths, n).tolist())


def test_a_near_copy_of_a_better_tour_gives_way_to_a_far_worse_one():
    best = np.arange(12)
    near = np.concatenate([best[:3], best[3:8][::-1], best[8:]])  # 2 edges from the best
    far = evo.population.permutations(1, 12, seed=5).numpy()[0]
    tours, lengths = np.stack([best, near, far]), [1.0, 2.0, 9.0]
    assert choose(Clearing(radius=3), tours, lengths, 2) == [0, 2]  # the near copy is cleared
    assert choose(Clearing(radius=2), tours, lengths, 2) == [0, 1]  # 2 edges apart is not within radius 2
    assert choose(evo.selection.Elitist(), tours, lengths, 2) == [0, 1]
    # too few uncleared tours: near copies fill the rest; of two copies of one tour the earlier one stays
    assert choose(Clearing(radius=3), tours, lengths, 3) == [0, 1, 2]
    assert choose(Clearing(radius=1), np.stack([best, best, far]), [1.0, 1.0, 9.0], 2) == [0, 2]


def test_clearing_needs_tours_and_a_whole_radius():
    with pytest.raises(ValueError, match="radius must be a whole number >= 1"):
        Clearing(radius=0)
    with pytest.raises(ValueError, match=r"pass them as Pool\(genomes=...\)"):
        Clearing().survivors(Pool(tf.zeros(4), -1.0, rng.key(0)), 2, ())


def test_clearing_refuses_genomes_other_than_tours_at_compile():
    inputs = evo.Input(shape=(4,), dtype="float32")
    model = evo.Model(inputs, evo.ops.GaussianMutation(stddev=0.1)(inputs))
    with pytest.raises(ValueError, match=r"integer permutation genomes of one axis, got genomes \(4,\) float32; "
                                         r"for other genomes use Elitist"):
        model.compile(fitness=evo.fitness.Rastrigin(), selection=Clearing(), mode="graph")
    assert model.selection is None  # refused before anything was set
    grid = evo.Input(shape=(4, 4), dtype="int32")
    model = evo.Model(grid, evo.ops.BitFlipMutation(rate=0.1)(grid))
    with pytest.raises(ValueError, match=r"got genomes \(4, 4\) int32"):
        model.compile(fitness=evo.fitness.OneMax(), selection=Clearing(), mode="graph")


def tsp_model(fitness, radius=3):
    inputs = evo.Input(shape=(20,), dtype="int32")
    model = evo.Model(inputs, evo.ops.InversionMutation(rate=1.0)(evo.ops.OrderCrossover()(inputs)))
    model.compile(fitness=fitness, selection=Clearing(radius=radius), mode="xla", seed=4)
    return model


def test_clearing_runs_in_ask_tell_saves_and_loads(tmp_path):
    xy = app.cities("random", 20, seed=2)
    d = app.distance_matrix(xy)
    start = app.tour_population(16, 20, seed=3)
    expected = tsp_model(evo.fitness.TSP(coordinates=xy)).evolve(start, generations=6)
    search = tsp_model(evo.fitness.External(maximize=False)).ask_tell(start)
    while search.generation < 6:
        search.tell(app.tour_length(search.ask(), d).astype(np.float32))
    got = search.result()
    np.testing.assert_array_equal(got.population, expected.population)
    assert got.best_fitness == pytest.approx(expected.best_fitness, rel=1e-6)  # lengths summed in NumPy
    path = tmp_path / "clearing.npz"
    evo.save_model(tsp_model(evo.fitness.TSP(coordinates=xy), radius=5), path)
    loaded = evo.load_model(path)
    assert isinstance(loaded.selection, Clearing) and loaded.selection.radius == 5
    again = tsp_model(evo.fitness.TSP(coordinates=xy), radius=5).evolve(start, generations=6)
    np.testing.assert_array_equal(loaded.evolve(start, generations=6).population, again.population)


def test_the_memetic_ga_keeps_its_tours_apart():
    xy = app.cities("random", 60, seed=8)
    d = app.distance_matrix(xy)
    start = app.tour_population(16, 60, seed=1, include=app.nearest_neighbour_tours(d, 8, seed=1))
    near = {}
    for name, selection in (("clearing", None), ("one per length", evo.selection.Elitist(eliminate_duplicates=True))):
        result = app.memetic_model(xy, mode="xla", seed=1, selection=selection).evolve(start, generations=40)
        assert all(app.is_tour(t, 60) for t in result.population)
        apart = tour_distances(tf.constant(result.population)).numpy()[~np.eye(16, dtype=bool)]
        near[name] = int((apart < 6).sum())  # ordered pairs of survivors fewer than 6 edges apart
    # clearing (the default, radius 6) leaves near copies only where too few tours are far apart
    assert near["clearing"] < 0.1 * 16 * 15 < near["one per length"]


def test_only_a_niche_winner_clears_as_in_petrowski():
    # A < B < C by length; A and B 2 edges apart, B and C 2 edges apart, A and C 4 apart
    a = np.arange(12)
    b = np.concatenate([a[:2], a[2:5][::-1], a[5:]])  # reversals of disjoint segments: 2 edges each
    c = np.concatenate([b[:7], b[7:10][::-1], b[10:]])
    d = tour_distances(tf.constant(np.stack([a, b, c]))).numpy()
    assert (d[0, 1], d[1, 2], d[0, 2]) == (2, 2, 4)
    # A clears B; B, cleared, clears nothing: A and C survive
    assert choose(Clearing(radius=3), np.stack([a, b, c]), [1.0, 2.0, 3.0], 2) == [0, 2]
    assert choose(Clearing(radius=3), np.stack([c, a, b]), [3.0, 1.0, 2.0], 2) == [0, 1]  # whatever the rows' order


def test_the_cleared_refill_by_length_not_by_row():
    best = np.arange(12)
    near_long = np.concatenate([best[:3], best[3:8][::-1], best[8:]])  # 2 edges from the best
    near_short = np.concatenate([best[:5], best[5:10][::-1], best[10:]])
    tours = np.stack([best, near_long, near_short])
    picked = survivors(Clearing(radius=3), tours, [1.0, 5.0, 3.0], 2)
    assert picked.tolist() == [0, 2]  # the winner, then the shorter of the two cleared


def test_a_pool_past_the_memory_budget_is_refused_with_what_to_do():
    clearing = Clearing()
    clearing.max_bytes = 10_000
    with pytest.raises(ValueError, match="pool of 64 tours of 100 cities.* past its budget.*smaller population"):
        clearing.survivors(Pool(tf.zeros(64), -1.0, rng.key(0), genomes=evo.population.permutations(64, 100, seed=0)),
                           32, ())
