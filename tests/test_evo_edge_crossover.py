"""evo.ops.SharedEdgeCrossover: children keep every edge their parents share, and stay tours."""

import numpy as np
import pytest

from course_lib import evo
from course_lib.evo.ops.edge_crossover import fragments, shared_edges
from course_lib.lessons import applications as app

N = 24


def edges(tour) -> set:
    return {frozenset((int(a), int(b))) for a, b in zip(tour, np.roll(tour, -1))}


@pytest.fixture(scope="module")
def problem():
    xy = app.cities("random", N, seed=7)
    d = app.distance_matrix(xy)
    # local optima from different starts: they share many edges, not all
    tours = np.stack([app.local_search(app.nearest_neighbour_tour(d, start), d) for start in range(6)])
    op = evo.ops.SharedEdgeCrossover()
    op.attach(evo.fitness.TSP(coordinates=xy))
    return xy, d, tours.astype(np.int32), op


def test_children_are_tours_of_the_parents_shape_and_dtype(problem):
    _, _, tours, op = problem
    for dtype in (np.int32, np.int64):
        children = op(tours.astype(dtype), seed=3).numpy()
        assert children.shape == tours.shape and children.dtype == dtype
        assert all(app.is_tour(c, N) for c in children)


def test_children_keep_every_edge_their_two_parents_share(problem):
    _, _, tours, op = problem
    for a, b in [(0, 1), (2, 5), (3, 4)]:
        pair = tours[[a, b]]  # two rows: each one's mate is the other
        shared = edges(pair[0]) & edges(pair[1])
        assert 0 < len(shared) < N
        for seed in range(4):
            for child in op(pair, seed=seed).numpy():
                assert shared <= edges(child)


def test_identical_parents_give_the_same_tour_back(problem):
    _, _, tours, op = problem
    pair = np.stack([tours[0], np.roll(tours[0][::-1], 5)])  # one tour, reversed and rotated
    for child in op(pair, seed=0).numpy():
        assert edges(child) == edges(tours[0])


def test_shared_edges_and_the_fragments_they_form():
    tour = np.array([[0, 1, 2, 3, 4, 5]], np.int32)
    mate = np.array([[2, 1, 0, 5, 3, 4]], np.int32)  # shares 0-1, 1-2, 0-5, 3-4
    assert shared_edges(tour, mate).numpy()[0].tolist() == [True, True, False, True, False, True]
    # paths 5-0-1-2 and 3-4, numbered from the first head in the tour's order (3 at position 3)
    fragment, along, head, tail, length, count = (x.numpy()[0] for x in fragments(tour, mate))
    assert count == 2 and fragment.tolist() == [1, 1, 1, 0, 0, 1] and along.tolist() == [1, 2, 3, 0, 1, 0]
    assert head[:2].tolist() == [3, 5] and tail[:2].tolist() == [4, 2] and length[:2].tolist() == [2, 4]
    same = fragments(tour, tour[:, ::-1])  # every edge shared: one fragment from the first city
    assert same[5].numpy()[0] == 1 and same[0].numpy()[0].tolist() == [0] * 6
    assert same[1].numpy()[0].tolist() == list(range(6))


def greedy_join(tour, mate, d, first) -> list:
    """The child in plain Python: from ``first`` follow shared edges (the parent's next city first), at a
    fragment's end jump to the nearest end of a fragment not yet visited (the lowest city of equal distances)."""
    shared, n = edges(tour) & edges(mate), len(tour)
    at = {int(c): i for i, c in enumerate(tour)}
    links = {c: [int(tour[(at[c] + s) % n]) for s in (1, -1) if frozenset((c, int(tour[(at[c] + s) % n]))) in shared]
             for c in range(n)}
    ends = {c for c in links if len(links[c]) < 2}
    child, city = [], int(first)
    while True:
        child.append(city)
        ahead = [c for c in links[city] if c not in child]
        if ahead:
            city = ahead[0]
            continue
        left = sorted(c for c in ends if c not in child)
        if not left:
            return child
        city = min(left, key=lambda c: d[child[-1], c])


def test_each_child_is_the_greedy_join_of_its_parent_and_mate(problem):
    xy, _, tours, op = problem
    d = np.asarray(op.distances).reshape(N, N)  # the float32 distances the op compares
    rng = np.random.default_rng(0)
    for pair in (tours[[0, 1]], tours[[2, 5]], np.stack([tours[2], rng.permutation(N)]).astype(np.int32)):
        assert len(edges(pair[0]) & edges(pair[1])) < N - 1  # several fragments to join
        for seed in range(3):
            for row, child in enumerate(op(pair, seed=seed).numpy()):
                assert child.tolist() == greedy_join(pair[row], pair[1 - row], d, child[0])


def test_the_same_seed_gives_the_same_children_and_another_seed_may_not(problem):
    _, _, tours, op = problem
    first = op(tours, seed=11).numpy()
    assert np.array_equal(first, op(tours, seed=11).numpy())
    assert any(not np.array_equal(first, op(tours, seed=s).numpy()) for s in range(12, 16))


def test_uncrossed_children_are_copies_of_their_parent(problem):
    xy, _, tours, _ = problem
    op = evo.ops.SharedEdgeCrossover(probability=0.0)
    op.attach(evo.fitness.TSP(coordinates=xy))
    assert np.array_equal(op(tours, seed=1).numpy(), tours)


def test_in_a_compiled_model_the_memetic_ga_keeps_tours_and_never_loses_its_best(problem):
    xy, d, tours, _ = problem
    model = app.tsp_model(xy, crossover="shared edges", mutation="double bridge", mutation_rate=1.0,
                          local_search=app.memetic_ops(steps=2), mode="xla", seed=2)
    result = model.evolve(tours, generations=4)
    assert all(app.is_tour(t, N) for t in np.asarray(result.population))
    assert result.best_fitness <= app.tour_length(tours, d).min() + 1e-5
    assert result.best_fitness == pytest.approx(app.tour_length(np.asarray(result.best), d), rel=1e-5)


def test_without_distances_a_clear_error(problem):
    _, _, tours, _ = problem
    with pytest.raises(ValueError, match="has no distances"):
        evo.ops.SharedEdgeCrossover()(tours, seed=0)
    with pytest.raises(ValueError, match="needs each row to be a tour"):
        evo.ops.SharedEdgeCrossover()(np.zeros((2, N), np.int32), seed=0)
