"""Applications of ``course_lib.evo``: the travelling salesman, 0/1 knapsack and continuous
optimisation, each with instances whose answer is known and a classical baseline to beat.

A GA result means little alone: a TSP tour is read against a nearest-neighbour tour and
2-opt (and against the optimum on structured city sets, where it is known), a knapsack
against dynamic programming (exact for integer weights), a continuous optimum against
the function's known minimum at the origin. Baselines are vectorised NumPy.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from course_lib import evo
from course_lib.evo.ops.base import check_rate

# -- TSP ----------------------------------------------------------------------------------------

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


# -- one compiled model for many instances of a size --------------------------------------------

class _Loadable:
    """A fitness whose instance data are variables, which the compiled program reads instead of having
    them baked in as constants: ``load`` switches a compiled model to another instance of the same
    size, and the next ``evolve`` runs it without compiling again."""

    def _hold(self, *names: str) -> None:
        self._held = names
        for name in names:
            setattr(self, name, tf.Variable(tf.cast(getattr(self, name), tf.float32), trainable=False))

    def _take(self, other) -> None:
        if other.n != self.n:
            raise ValueError(f"this model was compiled for instances of size {self.n}, got one of size {other.n}: "
                             "build and compile another model for it")
        for name in self._held:
            getattr(self, name).assign(tf.cast(getattr(other, name), tf.float32))


class LoadableTSP(_Loadable, evo.fitness.TSP):
    """``evo.fitness.TSP`` whose distances are a variable: ``load(coordinates)`` puts another city set
    of as many cities in their place (``tsp_model(..., loadable=True)``)."""

    def __init__(self, coordinates):
        super().__init__(coordinates=coordinates)
        self._hold("distances")

    def load(self, coordinates) -> None:
        self._take(evo.fitness.TSP(coordinates=coordinates))


class LoadableKnapsack(_Loadable, evo.fitness.Knapsack):
    """``evo.fitness.Knapsack`` whose weights, values, capacity and penalty are variables: ``load``
    puts another instance of as many items in their place (``knapsack_model(..., loadable=True)``)."""

    def __init__(self, weights, values, capacity):
        super().__init__(weights=weights, values=values, capacity=capacity)
        self._hold("weights", "values", "capacity", "penalty")

    def load(self, weights, values, capacity) -> None:
        self._take(evo.fitness.Knapsack(weights=weights, values=values, capacity=capacity))

    def config(self):
        return {"items": self.n}


# -- TSP models -----------------------------------------------------------------------------------

CROSSOVERS = {"order": "OrderCrossover", "subtour": "SubtourCrossover"}
MUTATIONS = {"inversion": "InversionMutation", "double bridge": "DoubleBridge"}


def tsp_model(coordinates, *, mode: str = "xla", seed: int = 0, mutation_rate: float = 0.5,
              selection=None, local_search=(), crossover_probability: float = 1.0, crossover: str = "order",
              mutation: str = "inversion", loadable: bool = False) -> evo.Model:
    """A GA on tours: order crossover (OX), then inversion (reverse a segment: a random 2-opt
    move) of a share ``mutation_rate`` of the children, tour length to minimise, elitist
    selection by default. Children left unmutated pass on their parents' good stretches intact;
    with ``crossover_probability`` below 1 the others are copies of their parent before mutation.

    ``crossover``: "order" (``evo.ops.OrderCrossover``) or "subtour" (``evo.ops.SubtourCrossover``,
    which keeps edges); ``mutation``: "inversion" or "double bridge" (``evo.ops.DoubleBridge``).
    ``local_search``: ops (e.g. ``memetic_ops()``: ``evo.ops.TwoOpt``, ``evo.ops.OrOpt``) that
    improve every child after mutation, inside the same compiled generation: a memetic GA.
    ``loadable``: the fitness is a ``LoadableTSP``, so ``model.fitness.load(other_coordinates)`` reuses
    the compiled model for another city set of as many cities."""
    for name, value, known in (("crossover", crossover, CROSSOVERS), ("mutation", mutation, MUTATIONS)):
        if value not in known:
            raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(map(repr, known))}")
    xy = np.asarray(coordinates)
    inputs = evo.Input(shape=(xy.shape[0],), dtype="int32")
    make_crossover = getattr(evo.ops, CROSSOVERS[crossover])
    x = (make_crossover() if crossover_probability == 1.0 else make_crossover(probability=crossover_probability))(inputs)
    x = getattr(evo.ops, MUTATIONS[mutation])(rate=mutation_rate)(x)
    local_search = (local_search,) if isinstance(local_search, evo.ops.Op) else tuple(local_search)
    if loadable and local_search:
        raise ValueError("loadable=True cannot be combined with local_search: the local-search ops copy the "
                         "distances when the model is compiled, so a loaded city set would not reach them")
    for op in local_search:
        x = op(x)
    model = evo.Model(inputs, x, name="memetic_tsp" if local_search else "tsp")
    fitness = LoadableTSP(xy) if loadable else evo.fitness.TSP(coordinates=xy)
    model.compile(fitness=fitness, selection=selection or evo.selection.Elitist(), mode=mode, seed=seed)
    return model


def memetic_model(coordinates, *, mode: str = "xla", seed: int = 0, selection=None, **local_search) -> evo.Model:
    """The memetic GA of this course: subtour crossover (edges from both parents), a double bridge
    on every child (a kick that the local search does not simply undo: iterated local search
    inside a GA), then ``memetic_ops`` (options ``local_search``), elitist selection by default."""
    return tsp_model(coordinates, mode=mode, seed=seed, selection=selection, crossover="subtour",
                     mutation="double bridge", mutation_rate=1.0, local_search=memetic_ops(**local_search))


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


def tour_table(coordinates, tours: dict, optimum: float | None = None) -> list[dict]:
    """One row per named tour: its length and how far above the optimum (or, when that is
    unknown, above the shortest tour listed) it is. Checks that each is a tour."""
    d = distance_matrix(coordinates)
    lengths = {}
    for name, tour in tours.items():
        if not is_tour(tour, d.shape[0]):
            raise ValueError(f"{name!r} is not a tour of {d.shape[0]} cities")
        lengths[name] = tour_length(tour, d)
    reference = optimum if optimum is not None else min(lengths.values())
    above = "% above optimum" if optimum is not None else "% above shortest"
    return [{"tour": name, "length": length, above: round(100 * (length / reference - 1), 3)}
            for name, length in lengths.items()]


def plot_tour(coordinates, tour, ax=None, title: str | None = None):
    """The cities and the closed tour through them."""
    import matplotlib.pyplot as plt

    xy = np.asarray(coordinates)
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4))
    closed = np.append(np.asarray(tour), tour[0])
    ax.plot(xy[closed, 0], xy[closed, 1], "-", lw=1.2, color="tab:blue")
    ax.plot(xy[:, 0], xy[:, 1], "o", ms=3, color="tab:red")
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    return ax


# -- time to quality ------------------------------------------------------------------------------

# "wall": time on the clock, what a user waits; "cpu": processor time of this process (all its
# threads), what the method costs whatever else runs on the machine
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _clock(name: str):
    if name not in CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {name!r}")
    return CLOCKS[name]


@dataclass
class Trace:
    """The best tour length a method had found against time: ``seconds`` since it started
    (building and compiling included) on ``clock`` ("wall" or "cpu"), ``lengths`` the best so far
    at each point; ``cpu_s`` the processor time it used in all; ``model`` a GA's compiled model (None
    for the local search), which ``tsp_variants`` can reuse."""

    method: str
    seconds: list
    lengths: list
    tour: np.ndarray
    work: str
    cpu_s: float
    clock: str = "wall"
    model: evo.Model | None = None

    def length_at(self, seconds: float) -> float:
        """The best length found by ``seconds`` (inf before the first)."""
        found = [length for t, length in zip(self.seconds, self.lengths) if t <= seconds]
        return min(found, default=math.inf)

    def time_to(self, length: float) -> float:
        """When the best length first reached ``length`` (inf if never)."""
        return next((t for t, found in zip(self.seconds, self.lengths) if found <= length), math.inf)


def multi_start(distances, budget_s: float, *, starts: int | None = None, seed: int = 0,
                start: str = "nearest", clock: str = "wall") -> Trace:
    """2-opt + or-opt descents (``local_search``) from new starting tours while time is left
    (or ``starts`` of them): nearest-neighbour tours from random start cities, or random tours
    (``start="random"``). A descent counts once it has finished within the budget; the first
    always runs to its end, recorded when it ended."""
    if start not in ("nearest", "random"):
        raise ValueError(f"start must be 'nearest' or 'random', got {start!r}")
    d = np.asarray(distances, dtype=np.float64)
    n = d.shape[0]
    rng = np.random.default_rng(seed)
    cities_ = rng.permutation(n)  # as nearest_neighbour_tours
    now = _clock(clock)
    t0, cpu0 = now(), time.process_time()
    seconds, lengths, best, descents = [], [], None, 0
    nearest = nearest_cities(d, 10)  # once per instance, inside the budget
    while (starts is None or descents < starts) and (now() - t0 < budget_s or not descents):
        first = (nearest_neighbour_tour(d, start=int(cities_[descents % n])) if start == "nearest"
                 else rng.permutation(n))
        tour = local_search(first, d, nearest)
        elapsed = now() - t0
        descents += 1
        if elapsed > budget_s and starts is None and descents > 1:
            break
        if best is None or tour_length(tour, d) < tour_length(best, d):
            best = tour
        seconds.append(elapsed)
        lengths.append(tour_length(best, d))
    return Trace(f"{'nearest neighbour' if start == 'nearest' else 'random'} + 2-opt + or-opt (NumPy)",
                 seconds, lengths, best, f"{len(seconds)} descents", time.process_time() - cpu0, clock)


class _Clock(evo.callbacks.Callback):
    """Records (seconds, best length) after each chunk; stops the run when the budget is spent."""

    def __init__(self, now, t0: float, budget_s: float):
        self.now, self.t0, self.budget_s, self.seconds, self.lengths = now, t0, budget_s, [], []

    def on_evolve_begin(self, run):
        self.seconds.append(self.now() - self.t0)
        self.lengths.append(run.best_fitness)

    def on_chunk_end(self, run):
        self.on_evolve_begin(run)
        run.stop = run.stop or self.seconds[-1] >= self.budget_s


def ga_trace(method: str, make_model, population, budget_s: float, chunk: int = 10,
             compiled: bool = False, clock: str = "wall") -> Trace:
    """Run ``make_model()`` on ``population`` until the budget is spent (checked every ``chunk``
    generations, at least one chunk). ``population`` may be a function that makes it: it is
    called after the clock starts, so making it (e.g. nearest-neighbour tours) counts. The clock
    starts before the model is built, so compiling counts, unless ``compiled``: then one
    generation compiles it before the clock starts."""
    if compiled:
        model = make_model()
        model.evolve(population() if callable(population) else population, generations=1, chunk=chunk)
    now = _clock(clock)
    t0, cpu0 = now(), time.process_time()
    if callable(population):
        population = population()
    if not compiled:
        model = make_model()
    timer = _Clock(now, t0, budget_s)
    result = model.evolve(population, generations=10**7, chunk=chunk, callbacks=[timer])
    return Trace(method, timer.seconds, timer.lengths, result.best,
                 f"{result.generations} generations of {np.asarray(population).shape[0]}",
                 time.process_time() - cpu0, clock, model)


def memetic_ops(or_opt: bool = False, **two_opt) -> tuple:
    """The local search of the memetic GA with this course's settings: ``evo.ops.TwoOpt``
    (options ``two_opt``; by default every move that joins a city to one of its 8 nearest is
    scored, and up to 32 that do not overlap are applied at once, 8 times per generation), then
    ``evo.ops.OrOpt`` (64 random moves, 4 times) if ``or_opt``: off by default, since it adds
    about a third to the compile time and, measured on 1,000 random cities (README), did not pay."""
    ops = (evo.ops.TwoOpt(**{"steps": 8, "candidates": None, "moves": 32, "neighbours": 8, **two_opt}),)
    return ops + ((evo.ops.OrOpt(steps=4, candidates=64),) if or_opt else ())


# generations per compiled call: the time-to-quality clock is read between calls, and a memetic
# generation costs tens of plain ones (a tenth of a second and more on 1,000 cities)
GA_CHUNK, MEMETIC_CHUNK = 10, 2


def time_to_quality(coordinates, budget_s: float, *, ga_population: int = 512, memetic_population: int = 32,
                    seeded: float = 0.5, seed: int = 0, chunk: int = GA_CHUNK, memetic_chunk: int = MEMETIC_CHUNK,
                    clock: str = "wall") -> dict:
    """Tour length against wall time for three methods, one after the other, each for ``budget_s``:
    multi-start nearest neighbour + 2-opt + or-opt in NumPy, the plain GA (``tsp_model``) from
    random tours, and the memetic GA (``memetic_model``) from a population whose share ``seeded``
    is nearest-neighbour tours (the local search's first starts, made inside its budget) and the
    rest random; both XLA. ``clock="cpu"`` measures processor time instead: on a busy machine,
    what each would take alone."""
    xy = np.asarray(coordinates)
    n = xy.shape[0]
    d = distance_matrix(xy)
    seeded_tours = round(check_rate("seeded", seeded) * memetic_population)

    def memetic_start():
        return tour_population(memetic_population, n, seed,
                               include=nearest_neighbour_tours(d, seeded_tours, seed) if seeded_tours else ())

    traces = [multi_start(d, budget_s, seed=seed, clock=clock)]
    traces.append(ga_trace("GA", lambda: tsp_model(xy, seed=seed), tour_population(ga_population, n, seed),
                           budget_s, chunk, clock=clock))
    traces.append(ga_trace("memetic GA", lambda: memetic_model(xy, seed=seed), memetic_start, budget_s,
                           memetic_chunk, clock=clock))
    return {t.method: t for t in traces}


def quality_table(traces: dict, budget_s: float) -> list[dict]:
    """One row per method: its best length at the budget (inf: none yet), how far above the
    shortest of all, when it first came within 1% of that, when it ended and the CPU time it used."""
    at = {name: t.length_at(budget_s) for name, t in traces.items()}
    shortest = min(at.values())
    return [{"method": name, "work": t.work, "length": round(at[name], 4),
             "% above shortest": round(100 * (at[name] / shortest - 1), 2),
             "s to within 1%": round(t.time_to(1.01 * shortest), 2),
             "ended at s": round(t.seconds[-1], 2), "CPU s": round(t.cpu_s, 2)}
            for name, t in traces.items()]


def plot_time_to_quality(runs: dict, ax=None):
    """Best tour length against wall time, one panel per instance (``runs``: title -> traces)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.4), squeeze=False)
        ax = ax[0]
    for panel, (title, traces) in zip(np.atleast_1d(ax), runs.items()):
        for t in traces.values():
            panel.step(t.seconds, t.lengths, where="post", marker=".", ms=3, label=t.method)
        panel.set_xscale("log")
        clock = next(iter(traces.values())).clock
        panel.set_xlabel(f"{'wall' if clock == 'wall' else 'CPU'} time, s")
        panel.set_ylabel("best tour length")
        panel.set_title(title, fontsize=9)
        panel.legend(fontsize=8)
    return ax


def time_to_quality_reading(title: str, traces: dict, budget_s: float) -> str:
    """What the measurement says, in words: each method's best length at the budget against the
    multi-start local search's, and when the memetic GA first matched it."""
    names = list(traces)
    base = names[0]
    reference = traces[base].length_at(budget_s)
    if math.isinf(reference):
        return (f"{title}: {base} had not finished one descent within {budget_s:g} s (its first ended after "
                f"{traces[base].seconds[0]:.1f} s); give the methods a larger budget to compare them.")
    parts = []
    for name in names[1:]:
        length = traces[name].length_at(budget_s)
        change = 100 * (length / reference - 1)
        parts.append(f"the {name} had no tour yet (still compiling)" if math.isinf(length) else
                     f"the {name}'s best tour was {abs(change):.1f}% {'longer' if change > 0 else 'shorter'} "
                     f"({length:.3f})")
    matched = traces[names[-1]].time_to(reference)
    when = (f"; the {names[-1]} first matched the local search after {matched:.1f} s, compile included"
            if matched <= budget_s else f"; the {names[-1]} did not match the local search within {budget_s:g} s")
    return (f"{title}: after {budget_s:g} s, against {traces[base].work} of {base} (best {reference:.3f}), "
            + " and ".join(parts) + when + ".")


def knob_effects(traces: dict, budget_s: float) -> list[str]:
    """One sentence per GA setting against the first (the reference setting): how much shorter or
    longer its best tour was at the budget, and how many generations it ran."""
    names = list(traces)
    base = traces[names[0]].length_at(budget_s)
    lines = []
    for name in names[1:]:
        length = traces[name].length_at(budget_s)
        if math.isinf(length) or math.isinf(base):
            lines.append(f"{name}: no comparison, a run had no tour within {budget_s:g} s (still compiling)")
            continue
        change = 100 * (length / base - 1)
        verdict = (f"{abs(change):.1f}% {'longer' if change > 0 else 'shorter'}" if abs(change) >= 0.5
                   else "within 0.5% of it")
        lines.append(f"{name}: best {length:.3f} after {budget_s:g} s, {verdict} ({traces[name].work})")
    return [f"{names[0]} (what the others are read against): best {base:.3f} after {budget_s:g} s "
            f"({traces[names[0]].work})"] + lines


KNOB_REFERENCE = {"population": 256, "mutation_rate": 0.5, "tournament": 2, "elitism": 1, "crossover": 1.0}


def knob_traces(coordinates, budget_s: float, settings: dict, seed: int = 0, chunk: int = 10) -> dict:
    """Time to quality of the plain GA with tournament selection, once per setting: ``settings``
    maps a name to changes of ``KNOB_REFERENCE`` (population, mutation_rate, tournament size,
    elitism: the best parents kept, crossover: its probability); each runs for ``budget_s``, the
    clock started after compiling, so that the settings are compared on their search alone."""
    xy = np.asarray(coordinates)
    traces = {}
    for name, changes in settings.items():
        unknown = set(changes) - set(KNOB_REFERENCE)
        if unknown:
            raise ValueError(f"unknown GA knob(s) {sorted(unknown)}; knobs are {', '.join(KNOB_REFERENCE)}")
        k = {**KNOB_REFERENCE, **changes}
        selection = (evo.selection.Tournament(size=k["tournament"], elitism=k["elitism"]) if k["elitism"]
                     else evo.selection.Tournament(size=k["tournament"]))

        def make(k=k, selection=selection):
            return tsp_model(xy, seed=seed, mutation_rate=k["mutation_rate"], selection=selection,
                             crossover_probability=k["crossover"])

        traces[name] = ga_trace(name, make, tour_population(k["population"], xy.shape[0], seed), budget_s,
                                chunk, compiled=True)
    return traces


def tsp_variants(max_generations: int, seed: int = 0, *, ga_population: int = 256, memetic_population: int = 32,
                 compiled=()) -> tuple[dict, dict]:
    """``SpeedupWidget`` builders (knob: ``cities``) that each reach the same tour quality, and a dict
    that each timed call fills with what it found.

    The quality is that of one nearest neighbour + 2-opt descent from city 0 in NumPy (the
    baseline, whose time is one descent). The plain GA and the memetic GA evolve until their
    best tour is at least as short (``evo.callbacks.EarlyStopping(target=...)``, checked inside
    the compiled loop) or ``max_generations`` have run, so every time in the comparison is a time
    to the same quality, not to an unrelated number of generations. ``found[name]`` holds the
    best length, the generations run and whether the target was reached.

    ``compiled``: models to reuse, e.g. the ``model`` of each ``time_to_quality`` trace: a builder
    takes one whose definition (ops, fitness, selection, seed), mode and distances are those of the
    model it would build, so that size runs the program already compiled instead of compiling another."""
    found, city_set = {}, cities  # the builders' knob is also called cities
    compiled = [m for m in compiled if m is not None]

    def target(n: int) -> float:
        d = distance_matrix(city_set("random", n, seed))
        return tour_length(two_opt(nearest_neighbour_tour(d), d), d)

    def descent(cities: int):
        d = distance_matrix(city_set("random", cities, seed))

        def run():
            length = tour_length(two_opt(nearest_neighbour_tour(d), d), d)
            found["NN + 2-opt (NumPy)"] = {"best": length, "generations": None, "reached": True}
        return run

    def ga(name, population, make_model, chunk):
        def build(cities: int):
            xy = city_set("random", cities, seed)
            model = make_model(xy, seed=seed)  # building is cheap; compiling happens at the first evolve
            model = next((m for m in compiled if _same_model(m, model, population)), model)
            start, goal = tour_population(population, cities, seed), target(cities)

            def run():
                result = model.evolve(start, generations=max_generations, chunk=chunk,
                                      callbacks=[evo.callbacks.EarlyStopping(target=goal)])
                found[name] = {"best": result.best_fitness, "generations": result.generations,
                               "reached": result.best_fitness <= goal}
            return run
        return build

    return ({"NN + 2-opt (NumPy)": descent, "GA": ga("GA", ga_population, tsp_model, GA_CHUNK),
             "memetic GA": ga("memetic GA", memetic_population, memetic_model, MEMETIC_CHUNK)}, found)


def _same_model(a: evo.Model, b: evo.Model, population: int) -> bool:
    """Whether two TSP models evolve alike: the same definition, mode and distances."""
    return (a.signature(population) == b.signature(population) and a.mode == b.mode
            and np.array_equal(np.asarray(a.fitness.distances), np.asarray(b.fitness.distances)))


# -- 0/1 knapsack ----------------------------------------------------------------------------------

def knapsack_instance(n: int = 30, seed: int = 0, correlated: bool = False, max_weight: int = 100) -> dict:
    """Integer weights in [1, max_weight], values, and capacity half the total weight.

    ``correlated``: value = weight + 10 (harder: every item has nearly the same value per
    unit weight, so greedy choices are poor guides).
    """
    if n < 1 or max_weight < 1:
        raise ValueError(f"knapsack_instance needs n >= 1 and max_weight >= 1, got n={n}, max_weight={max_weight}")
    rng = np.random.default_rng(seed)
    weights = rng.integers(1, max_weight + 1, n)
    values = weights + 10 if correlated else rng.integers(1, max_weight + 1, n)
    return {"weights": weights, "values": values, "capacity": int(weights.sum() // 2)}


def _items(weights, values, capacity) -> tuple[np.ndarray, np.ndarray, int]:
    w, v = np.asarray(weights), np.asarray(values)
    if w.shape != v.shape or w.ndim != 1:
        raise ValueError(f"weights and values must be 1-D and of the same length, got {w.shape} and {v.shape}")
    if not np.issubdtype(w.dtype, np.integer) or (w < 1).any():
        raise ValueError("knapsack_dp needs positive integer weights (it tables every capacity 0..C)")
    if int(capacity) != capacity or capacity < 0:
        raise ValueError(f"capacity must be a whole number >= 0, got {capacity!r}")
    return w.astype(np.int64), v.astype(np.float64), int(capacity)


def knapsack_dp(weights, values, capacity) -> tuple[float, np.ndarray]:
    """The exact optimum (value, 0/1 choice) by dynamic programming over capacities: O(n·C).

    Row i of the table holds the best value for every capacity using the first i items;
    the whole row is updated at once with NumPy.
    """
    w, v, c = _items(weights, values, capacity)
    best = np.zeros(c + 1)
    took = np.zeros((w.shape[0], c + 1), bool)
    for i, (wi, vi) in enumerate(zip(w, v)):
        if wi > c:
            continue
        with_item = best[:-wi] + vi
        took[i, wi:] = with_item > best[wi:]
        best[wi:] = np.maximum(best[wi:], with_item)
    choice = np.zeros(w.shape[0], np.int32)
    room = c
    for i in range(w.shape[0] - 1, -1, -1):
        if took[i, room]:
            choice[i], room = 1, room - w[i]
    return float(best[c]), choice


def knapsack_brute_force(weights, values, capacity) -> tuple[float, np.ndarray]:
    """The optimum by trying all 2ⁿ choices (n <= 20): the check on ``knapsack_dp``."""
    w, v, c = np.asarray(weights), np.asarray(values, dtype=np.float64), capacity
    if w.shape[0] > 20:
        raise ValueError(f"brute force tries 2**n choices; n={w.shape[0]} is too many (at most 20)")
    choices = np.array(list(itertools.product([0, 1], repeat=w.shape[0])), np.int32)
    value = np.where(choices @ w <= c, choices @ v, -np.inf)
    k = int(np.argmax(value))
    return float(value[k]), choices[k]


def knapsack_greedy(weights, values, capacity) -> tuple[float, np.ndarray]:
    """Baseline: take items by value per unit weight while they fit."""
    w, v = np.asarray(weights, dtype=np.float64), np.asarray(values, dtype=np.float64)
    choice = np.zeros(w.shape[0], np.int32)
    room = float(capacity)
    for i in np.argsort(-v / w, kind="stable"):
        if w[i] <= room:
            choice[i], room = 1, room - w[i]
    return float(choice @ v), choice


def knapsack_check(choice, weights, values, capacity) -> dict:
    """Value, weight and feasibility of a 0/1 choice."""
    x = np.asarray(choice)
    weight = float(x @ np.asarray(weights))
    return {"value": float(x @ np.asarray(values)), "weight": weight, "feasible": weight <= capacity}


def knapsack_table(instance: dict, choices: dict) -> list[dict]:
    """One row per named 0/1 choice: value, weight, whether it fits, and its share of the
    optimum (found by ``knapsack_dp``)."""
    optimum, _ = knapsack_dp(**instance)
    rows = []
    for name, choice in choices.items():
        c = knapsack_check(choice, **instance)
        rows.append({"solution": name, "value": c["value"], "weight": c["weight"],
                     "capacity": instance["capacity"], "fits": c["feasible"],
                     "% of optimum": 100 * c["value"] / optimum})
    return rows


def knapsack_model(instance: dict, *, mode: str = "xla", seed: int = 0, selection=None,
                   loadable: bool = False) -> evo.Model:
    """A GA on 0/1 choices: bit flips (about one per genome), two-point crossover, the
    engine's Knapsack fitness (value minus a penalty per unit of overweight). ``loadable``: the
    fitness is a ``LoadableKnapsack``, so ``model.fitness.load(**other_instance)`` reuses the
    compiled model for another instance of as many items."""
    n = len(instance["weights"])
    inputs = evo.Input(shape=(n,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=1 / n)(inputs)
    x = evo.ops.TwoPointCrossover()(x)
    model = evo.Model(inputs, x, name="knapsack")
    make = LoadableKnapsack if loadable else evo.fitness.Knapsack
    fitness = make(weights=instance["weights"], values=instance["values"], capacity=instance["capacity"])
    model.compile(fitness=fitness, selection=selection or evo.selection.Elitist(), mode=mode, seed=seed)
    return model


# -- continuous optimisation ------------------------------------------------------------------------

FUNCTIONS = {"rastrigin": (evo.fitness.Rastrigin, 5.12), "ackley": (evo.fitness.Ackley, 32.768)}


def continuous_model(function: str = "rastrigin", dims: int = 30, *, stddev: float | None = None,
                     rate: float | None = None, mode: str = "xla", seed: int = 0, selection=None) -> evo.Model:
    """A GA on float vectors in the function's usual box [-b, b]^d: Gaussian mutation (clipped
    to the box), uniform crossover, elitist selection.

    ``stddev`` defaults to 2% of the box's width; ``rate`` (the share of genes mutated) to
    about two genes per genome.
    """
    if function not in FUNCTIONS:
        raise ValueError(f"unknown function {function!r}; choose one of {', '.join(FUNCTIONS)}")
    fitness, bound = FUNCTIONS[function]
    inputs = evo.Input(shape=(dims,), dtype="float32")
    x = evo.ops.GaussianMutation(stddev=stddev or 0.04 * bound, rate=rate or min(1.0, 2 / dims),
                                 low=-bound, high=bound)(inputs)
    x = evo.ops.UniformCrossover()(x)
    model = evo.Model(inputs, x, name=function)
    model.compile(fitness=fitness(), selection=selection or evo.selection.Elitist(), mode=mode, seed=seed)
    return model


def continuous_population(function: str, n: int, dims: int, seed: int = 0):
    """``n`` points uniform in the function's box."""
    bound = FUNCTIONS[function][1]
    return evo.population.uniform((n, dims), -bound, bound, seed=seed)


def plot_landscape(function: str = "rastrigin", ax=None, points: int = 201):
    """The function over a 2-D slice of its box: the many local minima a GA has to cross."""
    import matplotlib.pyplot as plt

    fitness, bound = FUNCTIONS[function]
    grid = np.linspace(-bound, bound, points, dtype=np.float32)
    xx, yy = np.meshgrid(grid, grid)
    z = fitness()(np.stack([xx.ravel(), yy.ravel()], 1)).numpy().reshape(xx.shape)
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3.4))
    image = ax.contourf(xx, yy, z, levels=30, cmap="viridis")
    ax.figure.colorbar(image, ax=ax)
    ax.set_title(f"{function} in 2-D (minimum 0 at the origin)", fontsize=9)
    ax.set_aspect("equal")
    return ax
