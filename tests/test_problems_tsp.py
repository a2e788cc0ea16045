"""course_lib.problems.tsp: city sets with known optima, valid baseline tours, 2-opt and or-opt never
worse than their input and ending where no move helps."""

import numpy as np
import pytest

from course_lib.problems import tsp


def angle_tour(xy):
    return np.argsort(np.arctan2(xy[:, 1], xy[:, 0]))


def snake_tour(xy, k):
    """For an even k x k grid: up column 0, then snake through columns 1..k-1 over rows 1..k-1, back on row 0."""
    index = {(int(x), int(y)): i for i, (x, y) in enumerate(xy)}
    path = [(0, y) for y in range(k)]
    for y in range(k - 1, 0, -1):
        xs = range(1, k) if (k - 1 - y) % 2 == 0 else range(k - 1, 0, -1)
        path += [(x, y) for x in xs]
    path += [(x, 0) for x in range(k - 1, 0, -1)]
    return np.array([index[p] for p in path])


def test_structured_city_sets_have_the_stated_optima():
    circle = tsp.cities("circle", 20, seed=3)
    d = tsp.distance_matrix(circle)
    assert tsp.tour_length(angle_tour(circle), d) == pytest.approx(tsp.optimal_length("circle", 20))
    grid = tsp.cities("grid", 36, seed=3)
    tour = snake_tour(grid, 6)
    assert tsp.is_tour(tour, 36)
    assert tsp.tour_length(tour, tsp.distance_matrix(grid)) == pytest.approx(tsp.optimal_length("grid", 36)) == 36
    assert tsp.optimal_length("grid", 49) == pytest.approx(48 + np.sqrt(2))
    assert tsp.optimal_length("random", 20) is None
    assert not np.array_equal(tsp.cities("circle", 20, seed=3), tsp.cities("circle", 20, seed=4))  # order hidden


@pytest.mark.parametrize("kind,n", [("random", 40), ("circle", 25), ("grid", 25)])
def test_baselines_are_valid_tours_and_two_opt_never_makes_one_longer(kind, n):
    xy = tsp.cities(kind, n, seed=1)
    d = tsp.distance_matrix(xy)
    nn = tsp.nearest_neighbour_tour(d, start=5)
    assert tsp.is_tour(nn, n) and nn[0] == 5
    starts = [nn] + list(np.random.default_rng(0).permuted(np.tile(np.arange(n), (5, 1)), axis=1))
    for tour in starts:
        better = tsp.two_opt(tour, d)
        assert tsp.is_tour(better, n)
        assert tsp.tour_length(better, d) <= tsp.tour_length(tour, d) + 1e-12
        assert tsp.tour_length(tsp.two_opt(better, d, max_moves=1), d) == pytest.approx(tsp.tour_length(better, d))
    optimum = tsp.optimal_length(kind, n)
    if kind == "circle":  # points in convex position: a tour without crossings is optimal
        assert tsp.tour_length(tsp.two_opt(starts[1], d), d) == pytest.approx(optimum)
    if optimum is not None:
        assert tsp.tour_length(nn, d) >= optimum - 1e-9


def test_tour_lengths_of_many_tours_at_once():
    xy = tsp.cities("random", 12, seed=2)
    d = tsp.distance_matrix(xy)
    tours = tsp.tour_population(6, 12, seed=0, include=[tsp.nearest_neighbour_tour(d)])
    assert tours.shape == (6, 12) and all(tsp.is_tour(t, 12) for t in tours)
    np.testing.assert_array_equal(tours[0], tsp.nearest_neighbour_tour(d))
    np.testing.assert_allclose(tsp.tour_length(tours, d), [tsp.tour_length(t, d) for t in tours])


def brute_force_or_opt_best(t, d):
    """The best or-opt change over every segment (1-3 cities), place and orientation, by re-measuring."""
    n, best = len(t), 0.0
    for i in range(n):
        for length in (1, 2, 3):
            rest = np.roll(t, -i)
            segment, others = rest[:length], rest[length:]
            for cut in range(1, len(others)):
                for seg in (segment, segment[::-1]):
                    moved = np.concatenate([others[:cut], seg, others[cut:]])
                    best = min(best, tsp.tour_length(moved, d) - tsp.tour_length(t, d))
    return best


def test_local_search_ends_where_no_two_opt_or_or_opt_move_helps():
    xy = tsp.cities("random", 14, seed=5)
    d = tsp.distance_matrix(xy)
    start = np.random.default_rng(0).permutation(14)
    tour = tsp.local_search(start, d)
    assert tsp.is_tour(tour, 14)
    assert tsp.tour_length(tour, d) < tsp.tour_length(tsp.two_opt(start, d), d) + 1e-9
    np.testing.assert_array_equal(tsp.two_opt(tour, d), tour)
    assert brute_force_or_opt_best(tour, d) > -1e-9  # with 13 neighbours every place is a candidate
    assert brute_force_or_opt_best(tsp.two_opt(start, d), d) < -1e-9  # or-opt had work to do here
    with pytest.raises(ValueError, match="or_opt needs a tour"):
        tsp.or_opt(np.zeros(14, int), d)


def test_neighbour_list_two_opt_and_or_opt_never_lengthen_and_end_at_their_optimum():
    xy = tsp.cities("random", 60, seed=3)
    d = tsp.distance_matrix(xy)
    nearest = tsp.nearest_cities(d, 6)
    assert nearest.shape == (60, 6) and (nearest != np.arange(60)[:, None]).all()
    np.testing.assert_array_equal(d[np.arange(60)[:, None], nearest], np.sort(d + np.diag([np.inf] * 60), 1)[:, :6])
    for start in np.random.default_rng(1).permuted(np.tile(np.arange(60), (3, 1)), axis=1):
        quick = tsp.two_opt(start, d, nearest=nearest)
        assert tsp.is_tour(quick, 60) and tsp.tour_length(quick, d) < tsp.tour_length(start, d)
        np.testing.assert_array_equal(tsp.two_opt(quick, d, nearest=nearest), quick)  # nothing left to apply
        moved = tsp.or_opt(quick, d, nearest=nearest)
        assert tsp.is_tour(moved, 60) and tsp.tour_length(moved, d) <= tsp.tour_length(quick, d) + 1e-12
        np.testing.assert_array_equal(tsp.or_opt(moved, d, nearest=nearest), moved)
        assert len(tsp.two_opt(start, d, nearest=nearest, max_moves=3)) == 60


def test_lkh_tour_is_a_tour_no_longer_than_a_local_optimum():
    pytest.importorskip("elkai")
    xy = tsp.cities("random", 40, seed=1001)
    d = tsp.distance_matrix(xy)
    tour = tsp.lkh_tour(xy)
    assert tsp.is_tour(tour, 40)
    assert tsp.tour_length(tour, d) <= tsp.tour_length(tsp.local_search(tsp.nearest_neighbour_tour(d), d), d) + 1e-9
    with pytest.raises(ValueError, match="coordinates"):
        tsp.lkh_tour(np.zeros((5, 3)))
