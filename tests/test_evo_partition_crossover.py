"""evo.ops.PartitionCrossover: the child takes each shorter interchangeable stretch of its mate, never a
longer one, and stays a tour."""

import numpy as np
import pytest

from course_lib import evo
from course_lib.lessons import applications as app

N = 40


def edges(tour) -> set:
    return {frozenset((int(a), int(b))) for a, b in zip(tour, np.roll(tour, -1))}


def expected_child(tour, mate, d) -> set:
    """The child's edges in plain Python: both tours from a city the parent enters by a shared edge, the
    mate turned to run the same way; a block ends where both hold the same city and have visited the same
    set; each block is gone through the mate's way where that is shorter by more than the op's tolerance."""
    n, shared = len(tour), edges(tour) & edges(mate)
    if not shared:
        return edges(tour)
    begin = next(i for i in range(n) if frozenset((int(tour[i - 1]), int(tour[i]))) in shared)
    x = [int(tour[(begin + i) % n]) for i in range(n)]
    at = list(mate).index(x[0])
    way = 1 if int(mate[(at - 1) % n]) == x[-1] else -1
    m = [int(mate[(at + way * i) % n]) for i in range(n)]
    child, seen_x, seen_m, first = [x[0]], {x[0]}, {m[0]}, 1
    for k in range(1, n):
        seen_x.add(x[k])
        seen_m.add(m[k])
        if x[k] == m[k] and seen_x == seen_m:  # a block ends: first .. k
            mine = sum(d[x[i - 1], x[i]] for i in range(first, k + 1))
            theirs = sum(d[m[i - 1], m[i]] for i in range(first, k + 1))
            child += (m if mine - theirs > 1e-6 * d.max() else x)[first:k + 1]
            first = k + 1
    return edges(child)


@pytest.fixture(scope="module")
def problem():
    xy = app.cities("random", N, seed=5)
    d = app.distance_matrix(xy)
    # local optima from different starts (which differ in a few stretches), and kicked copies of one
    optima = [app.local_search(app.nearest_neighbour_tour(d, s), d) for s in range(6)]
    kicked = []
    for i, order in ((3, [2, 0, 3, 1]), (17, [1, 3, 0, 2]), (30, [3, 2, 1, 0]), (9, [2, 3, 0, 1])):
        t = optima[0].copy()
        t[i:i + 4] = t[i:i + 4][order]  # 4 cities of one stretch in another order
        kicked.append(t)
    op = evo.ops.PartitionCrossover()
    op.attach(evo.fitness.TSP(coordinates=xy))
    return xy, np.asarray(op.distances, np.float64).reshape(N, N), np.stack(optima + kicked).astype(np.int32), op


def test_each_child_is_its_parent_with_every_shorter_interchangeable_stretch_of_its_mate(problem):
    _, d, tours, op = problem
    swapped = 0
    for a, b in [(0, 1), (2, 5), (3, 4), (6, 0), (0, 7), (8, 9), (1, 8)]:
        pair = tours[[a, b]]  # two rows: each one's mate is the other
        for row, child in enumerate(op(pair, seed=0).numpy()):
            assert app.is_tour(child, N)
            want = expected_child(pair[row], pair[1 - row], d)
            assert edges(child) == want and want <= edges(pair[0]) | edges(pair[1])
            swapped += want != edges(pair[row])
            assert app.tour_length(child, d) <= app.tour_length(pair[row], d) + 1e-9
    assert swapped >= 4  # the pairs exercise the swap, not only the parent passed through


def test_a_scrambled_stretch_is_repaired_from_the_mate(problem):
    _, d, tours, op = problem
    parent, mate = tours[6], tours[0]
    assert app.tour_length(parent, d) > app.tour_length(mate, d)
    child = op(np.stack([parent, mate]), seed=0).numpy()[0]
    assert edges(child) == edges(mate)


def test_parents_that_share_no_edge_or_every_edge_give_the_parent_back(problem):
    _, _, tours, op = problem
    ring = np.arange(N, dtype=np.int32)
    stride = (np.arange(N) * 3 % N).astype(np.int32)  # shares no edge with the ring (3 and N are coprime)
    assert not edges(ring) & edges(stride)
    assert edges(op(np.stack([ring, stride]), seed=0).numpy()[0]) == edges(ring)
    pair = np.stack([tours[0], np.roll(tours[0][::-1], 3)])
    assert all(edges(c) == edges(tours[0]) for c in op(pair, seed=0).numpy())


def test_uncrossed_children_are_copies_of_their_parent(problem):
    xy, _, tours, _ = problem
    op = evo.ops.PartitionCrossover(probability=0.0)
    op.attach(evo.fitness.TSP(coordinates=xy))
    assert np.array_equal(op(tours, seed=1).numpy(), tours)


def test_without_distances_it_says_what_to_attach():
    with pytest.raises(ValueError, match="evo.fitness.TSP"):
        evo.ops.PartitionCrossover()(np.stack([np.arange(6), np.arange(6)[::-1]]).astype(np.int32), seed=0)


def test_in_a_compiled_memetic_ga_it_keeps_tours_and_never_loses_the_best(problem):
    xy, d, tours, _ = problem
    model = app.memetic_model(xy, crossover="partition", seed=2, steps=2)
    result = model.evolve(tours, generations=4)
    assert all(app.is_tour(t, N) for t in np.asarray(result.population))
    assert result.best_fitness <= app.tour_length(tours, d).min() + 1e-5
