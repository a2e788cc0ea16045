"""evo.ops.EdgeAssemblyCrossover: one AB-cycle of the mate's edges swapped into the parent, the subtours
joined by the cheapest exchanges; children stay tours."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo.ops.edge_assembly import ab_cycle, neighbours_by_city, swap_in
from course_lib.evo.rng import Rows
from course_lib.lessons import applications as app

N = 24


def edges(tour) -> set:
    return {frozenset((int(a), int(b))) for a, b in zip(tour, np.roll(tour, -1))}


def edges_by_city(neighbours) -> list:
    """The edges of a (L, 2) neighbours-by-city table, each once per end (a multiset as a sorted list)."""
    return sorted(tuple(sorted((c, int(x)))) for c, row in enumerate(neighbours) for x in row)


def one_cycle(tours) -> np.ndarray:
    """The (L, 2) neighbours-by-city table of one tour."""
    return neighbours_by_city(tf.constant(tours[None], tf.int32)).numpy()[0]


@pytest.fixture(scope="module")
def problem():
    xy = app.cities("random", N, seed=7)
    d = app.distance_matrix(xy)
    # local optima from different starts: they share many edges, not all
    tours = np.stack([app.local_search(app.nearest_neighbour_tour(d, start), d) for start in range(6)])
    op = evo.ops.EdgeAssemblyCrossover()
    op.attach(evo.fitness.TSP(coordinates=xy))
    return xy, d, tours.astype(np.int32), op


def pairs(tours):
    rng = np.random.default_rng(0)
    return [tours[[0, 1]], tours[[2, 5]], np.stack([tours[3], rng.permutation(N)]).astype(np.int32),
            np.stack([rng.permutation(N), rng.permutation(N)]).astype(np.int32)]


def test_children_are_tours_of_the_parents_shape_and_dtype(problem):
    _, _, tours, op = problem
    random = np.stack([np.random.default_rng(s).permutation(N) for s in range(6)])
    for rows, dtype in itertools.product((tours, random), (np.int32, np.int64)):
        for seed in range(3):
            children = op(rows.astype(dtype), seed=seed).numpy()
            assert children.shape == rows.shape and children.dtype == dtype
            assert all(app.is_tour(c, N) for c in children)


def test_the_cycle_alternates_parent_and_mate_edges_the_other_lacks_each_taken_once(problem):
    _, _, tours, _ = problem
    for pair in pairs(tours):
        a, b = (neighbours_by_city(tf.constant(t)) for t in (pair, pair[::-1]))
        for seed in range(4):
            walk, start, stop = (x.numpy() for x in ab_cycle(a, b, evo.rng.key(seed), Rows.all(2)))
            for row in range(2):
                mine, theirs = edges(pair[row]), edges(pair[1 - row])
                cycle = walk[start[row]:stop[row] + 1, row]
                assert cycle[0] == cycle[-1] and len(cycle) - 1 >= 4 and (len(cycle) - 1) % 2 == 0
                taken = [frozenset(map(int, e)) for e in zip(cycle[:-1], cycle[1:])]
                assert len(set(taken)) == len(taken)
                for i, edge in enumerate(taken):
                    own, other = (mine, theirs) if (start[row] + i) % 2 == 0 else (theirs, mine)
                    assert edge in own and edge not in other


def test_swapping_the_cycle_in_leaves_two_edges_at_every_city_the_parents_less_the_cycles_plus_the_mates(problem):
    _, _, tours, _ = problem
    for pair in pairs(tours):
        a, b = (neighbours_by_city(tf.constant(t)) for t in (pair, pair[::-1]))
        walk, start, stop = ab_cycle(a, b, evo.rng.key(5), Rows.all(2))
        joined = swap_in(a, b, walk, start, stop).numpy()
        walk, start, stop = walk.numpy(), start.numpy(), stop.numpy()
        for row in range(2):
            cycle = walk[start[row]:stop[row] + 1, row]
            taken = [frozenset(map(int, e)) for e in zip(cycle[:-1], cycle[1:])]
            out = [e for i, e in enumerate(taken) if (start[row] + i) % 2 == 0]  # the parent's edges
            into = [e for i, e in enumerate(taken) if (start[row] + i) % 2 == 1]
            expected = sorted(tuple(sorted(e)) for e in (edges(pair[row]) - set(out)) | set(into))
            assert edges_by_city(joined[row]) == sorted(expected + expected)
            assert (joined[row][:, 0] != joined[row][:, 1]).all()


def test_two_subtours_are_joined_by_the_cheapest_exchange_to_a_near_city(problem):
    _, _, tours, op = problem
    d = np.asarray(op.distances).reshape(N, N)
    near = np.asarray(op.nearest).reshape(N, -1)
    tour = tours[0]
    for cut in (5, 9, 16):
        small, large = (tour[:cut], tour[cut:]) if cut < N / 2 else (tour[cut:], tour[:cut])
        split = np.zeros((N, 2), np.int32)
        for part in (small, large):
            split[part, 0], split[part, 1] = np.roll(part, -1), np.roll(part, 1)
        joined = op.join(tf.constant(split[None]), tf.constant(one_cycle(tour)[None]), tf.constant(tour[None]))
        joined = joined.numpy()[0]
        added = set(map(tuple, edges_by_city(joined))) - set(map(tuple, edges_by_city(split)))
        got = sum(d[a, b] for a, b in added) - sum(d[a, b] for a, b in set(map(tuple, edges_by_city(split)))
                                                   - set(map(tuple, edges_by_city(joined))))
        best = min(d[c, x] + d[c2, x2] - d[c, c2] - d[x, x2]
                   for c in small for x in near[c] if x not in small
                   for c2 in split[c] for x2 in split[x])
        assert got == pytest.approx(best, abs=1e-5)
        assert len(added) == 2 and app.is_tour(walk_cycle(joined), N)


def walk_cycle(neighbours) -> np.ndarray:
    """The cities of a neighbours-by-city table in the order one walk from city 0 meets them."""
    order, came = [0], -1
    while len(order) <= len(neighbours):
        here = order[-1]
        step = int(neighbours[here][0]) if int(neighbours[here][0]) != came else int(neighbours[here][1])
        if step == 0:
            break
        order.append(step)
        came = here
    return np.array(order)


def test_a_mate_one_two_opt_move_away_is_the_child(problem):
    """Two tours a 2-opt move apart differ in one AB-cycle of four edges, which makes the mate."""
    _, _, tours, op = problem
    for i, j in ((3, 9), (0, 17), (10, 22)):
        moved = tours[0].copy()
        moved[i:j] = moved[i:j][::-1]
        for seed in range(3):
            children = op(np.stack([tours[0], moved]), seed=seed).numpy()
            assert edges(children[0]) == edges(moved) and edges(children[1]) == edges(tours[0])


def test_identical_parents_give_the_same_tour_back(problem):
    _, _, tours, op = problem
    pair = np.stack([tours[0], np.roll(tours[0][::-1], 5)])  # one tour, reversed and rotated
    for child in op(pair, seed=0).numpy():
        assert edges(child) == edges(tours[0])


def test_the_same_seed_gives_the_same_children_and_another_seed_may_not(problem):
    _, _, tours, op = problem
    first = op(tours, seed=11).numpy()
    assert np.array_equal(first, op(tours, seed=11).numpy())
    assert any(not np.array_equal(first, op(tours, seed=s).numpy()) for s in range(12, 16))


def test_uncrossed_children_are_copies_of_their_parent(problem):
    xy, _, tours, _ = problem
    op = evo.ops.EdgeAssemblyCrossover(probability=0.0)
    op.attach(evo.fitness.TSP(coordinates=xy))
    assert np.array_equal(op(tours, seed=1).numpy(), tours)


def test_in_a_compiled_model_the_memetic_ga_keeps_tours_and_never_loses_its_best(problem):
    xy, d, tours, _ = problem
    model = app.memetic_model(xy, crossover="edge assembly", seed=2, steps=2)
    result = model.evolve(tours, generations=4)
    assert all(app.is_tour(t, N) for t in np.asarray(result.population))
    assert result.best_fitness <= app.tour_length(tours, d).min() + 1e-5
    assert result.best_fitness == pytest.approx(app.tour_length(np.asarray(result.best), d), rel=1e-5)


def test_without_distances_a_clear_error(problem):
    _, _, tours, _ = problem
    with pytest.raises(ValueError, match="has no distances"):
        evo.ops.EdgeAssemblyCrossover()(tours, seed=0)
