"""The travelling salesman: city sets whose shortest tour is known (circle, grid) or not (random), tour
arithmetic, and the classical baselines in vectorised NumPy: nearest neighbour, 2-opt and or-opt
descents (a tour a GA result is read against), and populations of tours to start a GA from."""

from __future__ import annotations

import math

import numpy as np

from course_lib import evo

CITY_SETS = ("random", "circle", "grid")


def cities(kind: str = "random", n: int = 50, seed: int = 0) -> np.ndarray:
    """City coordinates (n, 2), listed in a random order (so no tour is given away).

    * "random": uniform in the unit square (optimum unknown);
    * "circle": evenly spaced on the unit circle (optimum: the polygon);
    * "grid": a k x k lattice with unit spacing, n = k² (optimum known, see ``optimal_length``).
    """
    rng = np.random.default_rng(seed)
    if kind == "random":
        xy = rng.uniform(0.0, 1.0, (n, 2))
    elif kind == "circle":
        angle = 2 * np.pi * np.arange(n) / n
        xy = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    elif kind == "grid":
        k = math.isqrt(n)
        if k * k != n or k < 2:
            raise ValueError(f"a grid of cities needs a square number of cities >= 4 (e.g. 36, 64), got {n}")
        xy = np.stack(np.divmod(np.arange(n), k), axis=1).astype(np.float64)
    else:
        raise ValueError(f"unknown city set {kind!r}; choose one of {', '.join(CITY_SETS)}")
    if n < 3:
        raise ValueError(f"a tour needs at least 3 cities, got {n}")
    return xy[rng.permutation(n)]


def optimal_length(kind: str, n: int) -> float | None:
    """The shortest tour's length where it is known: the circle's polygon, 2n·sin(π/n); a
    k x k grid with unit spacing, n when k is even and n - 1 + √2 when k is odd; None for random."""
    if kind == "circle":
        return 2 * n * math.sin(math.pi / n)
    if kind == "grid":
        return float(n) if math.isqrt(n) % 2 == 0 else n - 1 + math.sqrt(2)
    return None


def distance_matrix(coordinates) -> np.ndarray:
    """Euclidean distances (n, n) between cities."""
    xy = np.asarray(coordinates, dtype=np.float64)
    return np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))


def is_tour(tour, n: int) -> bool:
    """Whether ``tour`` visits each of the n cities exactly once."""
    t = np.asarray(tour)
    return t.shape == (n,) and np.array_equal(np.sort(t), np.arange(n))


def tour_length(tour, distances) -> float | np.ndarray:
    """Length of the closed tour(s): one tour (n,) gives a float, tours (m, n) give (m,)."""
    t = np.asarray(tour)
    d = np.asarray(distances)
    lengths = d[t, np.roll(t, -1, axis=-1)].sum(axis=-1)
    return float(lengths) if t.ndim == 1 else lengths


def nearest_neighbour_tour(distances, start: int = 0) -> np.ndarray:
    """Greedy tour: from ``start``, always go to the closest unvisited city."""
    d = np.asarray(distances, dtype=np.float64)
    n = d.shape[0]
    visited = np.zeros(n, bool)
    tour = np.empty(n, np.int64)
    tour[0], visited[start] = start, True
    for i in range(1, n):
        row = np.where(visited, np.inf, d[tour[i - 1]])
        tour[i] = int(np.argmin(row))
        visited[tour[i]] = True
    return tour


def nearest_cities(distances, k: int) -> np.ndarray:
    """Each city's ``k`` nearest other cities (n, k), nearest first: the neighbour lists of
    classical TSP codes, computed once per instance."""
    d = np.asarray(distances, dtype=np.float64)
    n = d.shape[0]
    return np.argsort(d + np.diag(np.full(n, np.inf)), axis=1, kind="stable")[:, :min(k, n - 1)]


def two_opt(tour, distances, max_moves: int | None = None, nearest: np.ndarray | None = None) -> np.ndarray:
    """Best-improvement 2-opt: reverse the segment whose reversal shortens the tour most,
    until no reversal helps (a local optimum) or after ``max_moves``.

    Every move strictly shortens the tour, so the result is never longer than the input.
    Each move scores all O(n²) reversals at once with NumPy. With ``nearest`` (from
    ``nearest_cities``), neighbour-list 2-opt: a scan scores only the reversals that join a
    city to one of its nearest cities, O(n·k), and applies its improving moves best first, each
    re-checked on the tour as it is by then (the result is a local optimum of those moves only).
    """
    t = np.array(tour, dtype=np.int64)
    d = np.asarray(distances, dtype=np.float64)
    n = t.shape[0]
    if not is_tour(t, d.shape[0]):
        raise ValueError(f"two_opt needs a tour: a permutation of 0..{d.shape[0] - 1}")
    if nearest is None:
        i, j = np.triu_indices(n, k=2)  # reverse t[i+1..j]: edges (i, i+1) and (j, j+1) are replaced
    else:
        at, rank, side = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(nearest.shape[1]), np.arange(2),
                                                         indexing="ij"))
    pos = np.empty(n, np.int64)
    pos[t] = np.arange(n)
    moves = 0
    while max_moves is None or moves < max_moves:
        if nearest is not None:
            # the new edge (t[at], its near city) and the edge after both (side 0) or before both
            u, v = (at - side) % n, (pos[nearest[t[at], rank]] - side) % n
            i, j = np.minimum(u, v), np.maximum(u, v)
        a, b, c, e = t[i], t[(i + 1) % n], t[j], t[(j + 1) % n]
        delta = d[a, c] + d[b, e] - d[a, b] - d[c, e]
        if nearest is None:  # the best move alone
            m = int(np.argmin(delta))
            order = [m] if delta[m] < -1e-12 else []
        else:
            order = _improving(delta)
        if not len(order):
            break
        for m in order:  # a move still applies while its two edges are still in the tour, in that direction
            p, q = pos[a[m]], pos[c[m]]
            if t[(p + 1) % n] != b[m] or t[(q + 1) % n] != e[m] or p > q:
                continue
            t[p + 1:q + 1] = t[p + 1:q + 1][::-1]
            pos[t[p + 1:q + 1]] = np.arange(p + 1, q + 1)
            moves += 1
            if moves == max_moves:
                break
    return t


def or_opt(tour, distances, neighbours: int = 10, max_moves: int | None = None,
           nearest: np.ndarray | None = None) -> np.ndarray:
    """Best-improvement or-opt: move a segment of 1 to 3 consecutive cities, kept or reversed,
    between two other consecutive cities, until no such move helps or after ``max_moves``.

    Candidate places are next to one of the ``neighbours`` nearest cities of either end of
    the segment (where a shorter tour can come from), all scored at once with NumPy;
    ``nearest`` (from ``nearest_cities``) gives those lists instead of computing them. A scan
    applies its improving moves best first, each re-scored on the tour as it is by then.
    """
    t = np.array(tour, dtype=np.int64)
    d = np.asarray(distances, dtype=np.float64)
    n = t.shape[0]
    if not is_tour(t, d.shape[0]):
        raise ValueError(f"or_opt needs a tour: a permutation of 0..{d.shape[0] - 1}")
    if n < 5:
        return t
    nearest = nearest_cities(d, neighbours) if nearest is None else nearest
    # every (segment start i, length L, end e whose neighbour c we go next to, side, orientation)
    i, length, end, c, side, flip = (a.ravel() for a in np.meshgrid(
        np.arange(n), np.arange(1, 4), np.arange(2), np.arange(nearest.shape[1]), np.arange(2), np.arange(2),
        indexing="ij"))
    pos = np.empty(n, np.int64)
    moves = 0
    while max_moves is None or moves < max_moves:
        pos[t] = np.arange(n)
        first, last = t[i], t[(i + length - 1) % n]
        before, after = t[(i - 1) % n], t[(i + length) % n]
        j = (pos[nearest[np.where(end == 0, first, last), c]] - side) % n  # insert between t[j], t[j+1]
        a, b = t[j], t[(j + 1) % n]
        delta = _or_opt_delta(d, first, last, before, after, a, b, flip)
        delta[(j - i + 1) % n <= length] = np.inf  # the place touches the segment
        order = _improving(delta)
        if not len(order):
            break
        for m in order:  # re-scored where the segment and the place are still there
            start, size, place = pos[first[m]], length[m], pos[a[m]]
            if (t[(start + size - 1) % n] != last[m] or t[(place + 1) % n] != b[m]
                    or (place - start + 1) % n <= size):
                continue
            if _or_opt_delta(d, first[m], last[m], t[(start - 1) % n], t[(start + size) % n], a[m], b[m],
                             flip[m]) >= -1e-12:
                continue
            rest = np.roll(t, -int(start))
            segment = rest[:size][::-1] if flip[m] else rest[:size]
            cut = (int(place) - int(start)) % n - size + 1  # after t[place] within the rest
            t = np.concatenate([rest[size:][:cut], segment, rest[size:][cut:]])
            pos[t] = np.arange(n)
            moves += 1
            if moves == max_moves:
                break
    return t


def _improving(delta: np.ndarray) -> np.ndarray:
    """Where ``delta`` shortens the tour, best first."""
    better = np.flatnonzero(delta < -1e-12)
    return better[np.argsort(delta[better], kind="stable")]


def _or_opt_delta(d, first, last, before, after, a, b, flip):
    """Length change of moving the segment first..last from between ``before`` and ``after`` to
    between a and b, reversed where ``flip``."""
    x, y = np.where(flip == 1, last, first), np.where(flip == 1, first, last)
    return (d[a, x] + d[y, b] - d[a, b]) - (d[before, first] + d[last, after] - d[before, after])


def local_search(tour, distances, nearest: np.ndarray | None = None) -> np.ndarray:
    """2-opt and or-opt, in turn until neither shortens the tour: a 2-opt + or-opt local optimum.

    The turns use the neighbour lists (``nearest``, by default each city's 10 nearest: cheap
    scans that find most moves); a full 2-opt scan then confirms the end, so the result is a
    true 2-opt local optimum."""
    d = np.asarray(distances, dtype=np.float64)
    nearest = nearest_cities(d, 10) if nearest is None else nearest
    t = np.array(tour, dtype=np.int64)
    while True:
        better = or_opt(two_opt(t, d, nearest=nearest), d, nearest=nearest)
        if tour_length(better, d) < tour_length(t, d) - 1e-12:
            t = better
            continue
        better = two_opt(t, d)
        if tour_length(better, d) >= tour_length(t, d) - 1e-12:
            return t
        t = better


LKH_SCALE = 1e6  # LKH-3 rounds distances to whole numbers: coordinates this much larger keep 6 digits


def lkh_available() -> bool:
    """Whether elkai (LKH-3, the ``bench`` extra: ``pip install -e .[bench]``) is installed."""
    import importlib.util

    return importlib.util.find_spec("elkai") is not None


def lkh_tour(coordinates, runs: int = 1) -> np.ndarray:
    """LKH-3's tour (n,) through cities in the plane, via elkai (Helsgaun's Lin-Kernighan heuristic, the
    reference a heuristic's tour is read against). Coordinates are scaled by ``LKH_SCALE`` first, since
    LKH-3 rounds each distance to a whole number."""
    if not lkh_available():
        raise ImportError("lkh_tour needs elkai (LKH-3), an optional benchmark dependency: "
                          "pip install -e '.[bench]' (or pip install elkai)")
    import elkai

    xy = np.asarray(coordinates, dtype=np.float64) * LKH_SCALE
    if xy.ndim != 2 or xy.shape[1] != 2 or xy.shape[0] < 3:
        raise ValueError(f"lkh_tour needs city coordinates (n, 2) with n >= 3, got shape {xy.shape}")
    route = elkai.Coordinates2D({i: (float(a), float(b)) for i, (a, b) in enumerate(xy)}).solve_tsp(runs=runs)
    return np.asarray(route[:-1], dtype=np.int64)  # elkai closes the tour by repeating its first city


def nearest_neighbour_tours(distances, count: int, seed: int = 0) -> np.ndarray:
    """``count`` nearest-neighbour tours (count, n) from distinct random start cities, the same
    starts, in the same order, as ``multi_start`` with this seed."""
    d = np.asarray(distances, dtype=np.float64)
    starts = np.random.default_rng(seed).permutation(d.shape[0])
    if not 1 <= count <= d.shape[0]:
        raise ValueError(f"count must be between 1 and the {d.shape[0]} cities (one tour per start city), got {count}")
    return np.stack([nearest_neighbour_tour(d, start=int(city)) for city in starts[:count]])


def tour_population(n: int, length: int, seed: int = 0, include=()) -> np.ndarray:
    """``n`` random tours, the first rows replaced by the tours in ``include`` (e.g. a
    nearest-neighbour tour, to start the GA from a baseline)."""
    pop = evo.population.permutations(n, length, seed=seed).numpy()
    for row, tour in enumerate(include):
        if not is_tour(tour, length):
            raise ValueError(f"include[{row}] is not a tour of {length} cities")
        pop[row] = tour
    return pop
