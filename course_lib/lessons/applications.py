"""What lecture 14 runs: GA models for the travelling salesman, the 0/1 knapsack and continuous
optimisation, races against time (traces, time to quality, knob sweeps), widget builders, tables,
readings and plots.

A GA result means little alone: a TSP tour is read against a nearest-neighbour tour and
2-opt (and against the optimum on structured city sets, where it is known), a knapsack
against dynamic programming (exact for integer weights), a continuous optimum against
the function's known minimum at the origin. The instances and those baselines live in
``course_lib.problems``; the lecture reads them through this module (``app.cities``, ...).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from course_lib import evo
from course_lib.arguments import share
from course_lib.bench import Verdicts, ratio_text
from course_lib.problems.continuous import FUNCTIONS, continuous_population  # noqa: F401 (lecture 14's names)
from course_lib.problems.knapsack import (  # noqa: F401 (lecture 14's names)
    knapsack_brute_force,
    knapsack_check,
    knapsack_dp,
    knapsack_greedy,
    knapsack_instance,
)
from course_lib.problems.tsp import (  # noqa: F401 (lecture 14's names)
    CITY_SETS,
    cities,
    distance_matrix,
    is_tour,
    local_search,
    nearest_cities,
    nearest_neighbour_tour,
    nearest_neighbour_tours,
    optimal_length,
    or_opt,
    tour_length,
    tour_population,
    two_opt,
)

# -- TSP models -----------------------------------------------------------------------------------

CROSSOVERS = {"order": "OrderCrossover", "subtour": "SubtourCrossover", "shared edges": "SharedEdgeCrossover",
              "partition": "PartitionCrossover"}
MUTATIONS = {"inversion": "InversionMutation", "double bridge": "DoubleBridge"}


def tsp_model(coordinates, *, mode: str = "xla", seed: int = 0, mutation_rate: float = 0.5,
              selection=None, local_search=(), crossover_probability: float = 1.0, crossover: str = "order",
              mutation: str = "inversion", loadable: bool = False) -> evo.Model:
    """A GA on tours: order crossover (OX), then inversion (reverse a segment: a random 2-opt
    move) of a share ``mutation_rate`` of the children, tour length to minimise, elitist
    selection by default. Children left unmutated pass on their parents' good stretches intact;
    with ``crossover_probability`` below 1 the others are copies of their parent before mutation.

    ``crossover``: "order" (``evo.ops.OrderCrossover``), "subtour" (``evo.ops.SubtourCrossover``,
    which keeps edges), "shared edges" (``evo.ops.SharedEdgeCrossover``: every edge both parents hold) or
    "partition" (``evo.ops.PartitionCrossover``: the shorter way through each region the parents differ in);
    ``mutation``: "inversion" or "double bridge" (``evo.ops.DoubleBridge``).
    ``local_search``: ops (e.g. ``memetic_ops()``: ``evo.ops.TwoOpt``, ``evo.ops.OrOpt``) that
    improve every child after mutation, inside the same compiled generation: a memetic GA.
    ``loadable``: the fitness is ``evo.fitness.TSP(..., loadable=True)``, so
    ``model.fitness.load(other_coordinates)`` reuses the compiled model for another city set of as many cities."""
    for name, value, known in (("crossover", crossover, CROSSOVERS), ("mutation", mutation, MUTATIONS)):
        if value not in known:
            raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(map(repr, known))}")
    xy = np.asarray(coordinates)
    inputs = evo.Input(shape=(xy.shape[0],), dtype="int32")
    make_crossover = getattr(evo.ops, CROSSOVERS[crossover])
    x = (make_crossover() if crossover_probability == 1.0
         else make_crossover(probability=crossover_probability))(inputs)
    x = getattr(evo.ops, MUTATIONS[mutation])(rate=mutation_rate)(x)
    local_search = (local_search,) if isinstance(local_search, evo.ops.Op) else tuple(local_search)
    if loadable and local_search:
        raise ValueError("loadable=True cannot be combined with local_search: the local-search ops copy the "
                         "distances when the model is compiled, so a loaded city set would not reach them")
    for op in local_search:
        x = op(x)
    model = evo.Model(inputs, x, name="memetic_tsp" if local_search else "tsp")
    fitness = evo.fitness.TSP(coordinates=xy, loadable=loadable)
    model.compile(fitness=fitness, selection=selection or evo.selection.Elitist(), mode=mode, seed=seed)
    return model


def memetic_model(coordinates, *, mode: str = "xla", seed: int = 0, selection=None, crossover: str = "shared edges",
                  **local_search) -> evo.Model:
    """The memetic GA of this course: shared-edge crossover (every edge both parents hold, the rest
    joined nearest end to nearest end), a double bridge on every child (a kick that the local search
    does not simply undo: iterated local search inside a GA), then ``memetic_ops`` (options
    ``local_search``); by default elitist selection with clearing (``evo.selection.Clearing(radius=6)``):
    a tour that differs from a better one in fewer than 6 edges gives way to the tours that do not, so a
    population of 32, whose children the local search sends to neighbouring local optima, keeps 32
    different tours to recombine instead of filling with near copies of its best. ``crossover``: as in
    ``tsp_model``."""
    return tsp_model(coordinates, mode=mode, seed=seed,
                     selection=selection or evo.selection.Clearing(radius=6),
                     crossover=crossover, mutation="double bridge", mutation_rate=1.0,
                     local_search=memetic_ops(**local_search))


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
    for the local search), which ``tsp_variants`` can reuse; ``compile_s`` what compiling its programs
    cost (``time_to_quality(..., compiled=True)``: the first chunk's end against the same run's with the
    programs already compiled; None when not measured)."""

    method: str
    seconds: list
    lengths: list
    tour: np.ndarray
    work: str
    cpu_s: float
    clock: str = "wall"
    model: evo.Model | None = None
    compile_s: float | None = None

    def length_at(self, seconds: float) -> float:
        """The best length found by ``seconds`` (inf before the first)."""
        found = [length for t, length in zip(self.seconds, self.lengths) if t <= seconds]
        return min(found, default=math.inf)

    def first_generations_s(self) -> float | None:
        """When the first chunk of generations ended (compile included); None for the local search,
        whose points are descents."""
        return self.seconds[1] if self.model is not None and len(self.seconds) > 1 else None

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


def ga_trace(method: str, make_model, population, budget_s: float, chunk: int = 10,
             clock: str = "wall") -> Trace:
    """Run ``make_model()`` on ``population`` until the budget is spent (checked every ``chunk``
    generations, at least one chunk). ``population`` may be a function that makes it: it is
    called after the clock starts, so making it (e.g. nearest-neighbour tours) counts. The clock
    starts before the model is built, so compiling counts."""
    now = _clock(clock)
    t0, cpu0 = now(), time.process_time()
    if callable(population):
        population = population()
    model = make_model()
    timer = evo.callbacks.Stopwatch(budget_s, clock=now, start=t0)
    result = model.evolve(population, generations=10**7, chunk=chunk, callbacks=[timer])
    return Trace(method, timer.seconds, timer.best, result.best,
                 f"{result.generations} generations of {np.asarray(population).shape[0]}",
                 time.process_time() - cpu0, clock, model)


def memetic_ops(or_opt: bool = True, **two_opt) -> tuple:  # noqa: F811 (the flag shadows problems.tsp.or_opt)
    """The local search of the memetic GA with this course's settings: ``evo.ops.TwoOpt``
    (options ``two_opt``; by default every move that joins a city to one of its 8 nearest is
    scored, and up to 32 that do not overlap are applied at once, 8 times per generation, the rounds after
    the first only from the 128 cities the round before touched: ``focus``), then, if
    ``or_opt``, ``evo.ops.OrOpt`` scoring every move of one to three cities next to one of their 4
    nearest once per generation and applying up to 128 that do not overlap: moves 2-opt cannot make,
    which close the last few tenths of a percent (``course bench tsp`` measures both)."""
    ops = (evo.ops.TwoOpt(**{"steps": 8, "candidates": None, "moves": 32, "neighbours": 8, "focus": 128,
                             **two_opt}),)
    return ops + ((evo.ops.OrOpt(steps=1, candidates=None, neighbours=4, moves=128),) if or_opt else ())


# generations per compiled call: the time-to-quality clock is read between calls, and a memetic
# generation costs tens of plain ones (about 30 ms at 1,000 cities on a 2-core EPYC)
GA_CHUNK, MEMETIC_CHUNK = 10, 2


METHODS = ("local search", "GA", "memetic GA")


def time_to_quality(coordinates, budget_s: float, *, ga_population: int = 512, memetic_population: int = 32,
                    seeded: float = 0.5, seed: int = 0, chunk: int = GA_CHUNK, memetic_chunk: int = MEMETIC_CHUNK,
                    clock: str = "wall", methods=METHODS, compiled=False) -> dict:
    """Tour length against wall time for three methods, one after the other, each for ``budget_s``:
    multi-start nearest neighbour + 2-opt + or-opt in NumPy, the plain GA (``tsp_model``) from
    random tours, and the memetic GA (``memetic_model``) from a population whose share ``seeded``
    is nearest-neighbour tours (the local search's first starts, made inside its budget) and the
    rest random; both XLA. ``clock="cpu"`` measures processor time instead: on a busy machine,
    what each would take alone. ``methods``: which of ``METHODS`` to run, in that order.

    ``compiled``: True, or the names of some GAs: after each (True: every GA), run it again for the same
    budget on its model, whose programs are compiled by then (trace "<name>, compiled"), and set the first
    trace's ``compile_s`` from the two: the curve a method would draw once compiling is paid, and what
    compiling cost."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must name some of {', '.join(map(repr, METHODS))}; got {list(methods)!r}")
    xy = np.asarray(coordinates)
    n = xy.shape[0]
    d = distance_matrix(xy)
    seeded_tours = round(share("seeded", seeded) * memetic_population)

    def memetic_start():
        return tour_population(memetic_population, n, seed,
                               include=nearest_neighbour_tours(d, seeded_tours, seed) if seeded_tours else ())

    runs = {"local search": lambda: multi_start(d, budget_s, seed=seed, clock=clock),
            "GA": lambda: ga_trace("GA", lambda: tsp_model(xy, seed=seed), tour_population(ga_population, n, seed),
                                   budget_s, chunk, clock=clock),
            "memetic GA": lambda: ga_trace("memetic GA", lambda: memetic_model(xy, seed=seed), memetic_start,
                                           budget_s, memetic_chunk, clock=clock)}
    rerun = METHODS[1:] if compiled is True else tuple(compiled or ())
    traces = []
    for method in (m for m in METHODS if m in methods):
        traces.append(runs[method]())
        if method in rerun:
            traces.append(_rerun(traces[-1], memetic_start if method == "memetic GA" else
                                 tour_population(ga_population, n, seed), budget_s,
                                 memetic_chunk if method == "memetic GA" else chunk, clock))
    return {t.method: t for t in traces}


def _rerun(cold: Trace, population, budget_s: float, chunk: int, clock: str) -> Trace:
    """``cold``'s GA again, on its model (programs compiled), for the same budget; sets ``cold.compile_s``."""
    warm = ga_trace(f"{cold.method}, compiled", lambda: cold.model, population, budget_s, chunk, clock=clock)
    cold_first, warm_first = cold.first_generations_s(), warm.first_generations_s()
    if cold_first is not None and warm_first is not None:
        cold.compile_s = max(0.0, cold_first - warm_first)
    return warm


def quality_table(traces: dict, budget_s: float) -> list[dict]:
    """One row per method: its best length at the budget (inf: none yet), how far above the
    shortest of all, when it first came within 1% of that ("never" if it did not), when it ended
    and the CPU time it used."""
    at = {name: t.length_at(budget_s) for name, t in traces.items()}
    shortest = min(at.values())

    def within(t):
        seconds = t.time_to(1.01 * shortest)
        return "never" if math.isinf(seconds) else round(seconds, 2)

    return [{"method": name, "work": t.work, "length": round(at[name], 4),
             "% above shortest": round(100 * (at[name] / shortest - 1), 2),
             "s to within 1%": within(t),
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
    multi-start local search's, what each GA's compile cost and whether its first generations ended past
    the budget, when the memetic GA first matched the local search and, on the wall clock, how many cores
    each method kept busy (its CPU time over the wall time it ran)."""
    names = list(traces)
    base = names[0]
    reference = traces[base].length_at(budget_s)
    if math.isinf(reference):
        return (f"{title}: {base} had not finished one descent within {budget_s:g} s (its first ended after "
                f"{traces[base].seconds[0]:.1f} s); give the methods a larger budget to compare them.")
    parts = []
    for name in names[1:]:
        length = traces[name].length_at(budget_s)
        ratio = length / reference
        how = (f"{ratio:.1f}x as long" if ratio >= 2 else
               f"{abs(100 * (ratio - 1)):.1f}% {'longer' if ratio > 1 else 'shorter'}")
        warm = " with its programs already compiled" if name.endswith(", compiled") else ""
        who = f"the {name.removesuffix(', compiled')}'s best tour{warm}"
        parts.append(f"the {name} had no tour yet (still compiling)" if math.isinf(length) else
                     f"{who} was {how} ({length:.3f})")
    memetic = _memetic(traces)
    matched = traces[memetic].time_to(reference)
    when = (f"; the {memetic} first matched the local search after {matched:.1f} s, compile included"
            if matched <= budget_s else f"; the {memetic} did not match the local search within {budget_s:g} s")
    costs = []
    for name, t in traces.items():
        first = t.first_generations_s()
        compiled = "" if t.compile_s is None else f"compiled for {t.compile_s:.1f} s and "
        if first is not None and (t.compile_s is not None or first > budget_s):
            over = (f", {first - budget_s:.1f} s past the budget: no generation counted"
                    if first > budget_s else "")
            costs.append(f"the {name} {compiled}ended its first generations at {first:.1f} s{over}")
    cost = f". Compiling: {'; '.join(costs)}" if costs else ""
    cores = ""
    if traces[base].clock == "wall":
        busy = [f"{name} {t.cpu_s / t.seconds[-1]:.1f}" for name, t in traces.items() if t.seconds[-1] > 0]
        cores = f". Cores kept busy (CPU s per wall s): {', '.join(busy)}"
    return (f"{title}: after {budget_s:g} s, against {traces[base].work} of {base} (best {reference:.3f}), "
            + " and ".join(parts) + when + cost + cores + ".")


def _memetic(traces: dict) -> str:
    """The memetic GA's trace name (the last run that paid its compile), for the readings."""
    cold = [name for name in traces if not name.endswith(", compiled")]
    return "memetic GA" if "memetic GA" in traces else cold[-1]


def time_to_quality_conclusion(runs: dict, budgets) -> str:
    """Which won at each instance's budget, the multi-start local search or the memetic GA, in one
    sentence each (``runs``: title -> ``time_to_quality`` traces; ``budgets``: one per run): the memetic
    GA "went below" the local search only where its best tour at the budget is shorter; where it is not,
    whether with its programs already compiled (``compiled=True``) it would have, and what compiling cost."""
    sentences = []
    for (title, traces), budget in zip(runs.items(), budgets):
        base = traces[next(iter(traces))]
        memetic = traces[_memetic(traces)]
        warm = traces.get(f"{memetic.method}, compiled")
        target = base.length_at(budget)
        busy = (f" (read on the wall clock, the GA keeping {memetic.cpu_s / memetic.seconds[-1]:.1f} cores busy, "
                f"the local search {base.cpu_s / base.seconds[-1]:.1f})"
                if memetic.seconds[-1] > 0 and base.seconds[-1] > 0 else "")
        if memetic.length_at(budget) < target:
            spent = (f", {memetic.compile_s:.1f} s of them compiling" if memetic.compile_s is not None else "")
            sentences.append(f"{title}: the memetic GA went below the local search, after "
                             f"{memetic.time_to(target):.1f} s, compile included{spent}{busy}.")
        elif warm is not None and warm.length_at(budget) < target:
            cost = f" ({memetic.compile_s:.1f} s)" if memetic.compile_s is not None else ""
            sentences.append(f"{title}: the local search won within {budget:g} s; with its programs already "
                             f"compiled the memetic GA went below it after {warm.time_to(target):.1f} s, so "
                             f"compiling{cost} is what it lost by{busy}.")
        else:
            even = ", not even with its programs already compiled" if warm is not None else ""
            sentences.append(f"{title}: the local search won: the memetic GA did not go below its best tour "
                             f"within {budget:g} s{even}{busy}.")
    return " ".join(sentences)


def knob_effects(runs: dict, generations: int) -> list[str]:
    """One sentence per GA setting against the first (the reference): the median best tour over its
    starts, the range of the starts, and whether it is shorter or longer than the reference's median
    beyond both ranges (the ranges do not overlap) or within the run-to-run spread; and the wall
    time of a run (median and range over the starts)."""
    names = list(runs)
    ref = runs[names[0]]

    def took(run):
        return f"{run['seconds']:.2f} s a run ({min(run['times']):.2f}-{max(run['times']):.2f})"

    lines = [f"{names[0]} (what the others are read against): median best {ref['median']:.3f} "
             f"(starts {min(ref['lengths']):.3f}-{max(ref['lengths']):.3f}); {took(ref)}"]
    for name in names[1:]:
        run = runs[name]
        low, high = min(run["lengths"]), max(run["lengths"])
        change = 100 * (run["median"] / ref["median"] - 1)
        apart = high < min(ref["lengths"]) or low > max(ref["lengths"])
        verdict = (f"{abs(change):.1f}% {'longer' if change > 0 else 'shorter'}, its starts' range apart from "
                   "the reference's" if apart else "within the run-to-run spread (the ranges overlap)")
        lines.append(f"{name}: median best {run['median']:.3f} (starts {low:.3f}-{high:.3f}), {verdict}; "
                     f"{took(run)}")
    return [f"{generations} generations per run, {len(ref['lengths'])} starts per setting:"] + lines


KNOB_REFERENCE = {"population": 256, "mutation_rate": 0.5, "tournament": 2, "elitism": 1, "crossover": 1.0}


def knob_model(coordinates, knobs: dict, seed: int = 0) -> evo.Model:
    """The plain GA with every knob of ``KNOB_REFERENCE`` set from ``knobs``, so a setting changes one argument."""
    selection = evo.selection.Tournament(size=knobs["tournament"], elitism=knobs["elitism"])
    return tsp_model(coordinates, seed=seed, mutation_rate=knobs["mutation_rate"], selection=selection,
                     crossover_probability=knobs["crossover"])


def knob_runs(coordinates, generations: int, settings: dict, *, starts: int = 3, seed: int = 0) -> dict:
    """The plain GA with tournament selection, once per setting and start: ``settings`` maps a name to
    changes of ``KNOB_REFERENCE`` (population, mutation_rate, tournament size, elitism: the best
    parents kept, crossover: its probability). Every setting runs the same ``generations`` from
    ``starts`` random populations (seeds ``seed``, ``seed + 1``, ...), so a difference is read against
    the spread between starts, not against how many generations fitted a time budget. Each setting
    compiles once before its runs are timed (one call each).

    Returns name -> {"lengths": best tour of each start, "median": their median, "times": wall time
    of each run, "seconds": their median, "history": best length per generation of the first start,
    "population"}."""
    xy = np.asarray(coordinates)
    runs = {}
    for name, changes in settings.items():
        unknown = set(changes) - set(KNOB_REFERENCE)
        if unknown:
            raise ValueError(f"unknown GA knob(s) {sorted(unknown)}; knobs are {', '.join(KNOB_REFERENCE)}")
        k = {**KNOB_REFERENCE, **changes}
        model = knob_model(xy, k, seed=seed)
        populations = [tour_population(k["population"], xy.shape[0], seed + s) for s in range(starts)]
        model.evolve(populations[0], generations=1)  # compiles; other run lengths reuse the program
        results, seconds = [], []
        for population in populations:
            began = time.perf_counter()
            results.append(model.evolve(population, generations=generations))
            seconds.append(time.perf_counter() - began)
        lengths = [float(r.best_fitness) for r in results]
        runs[name] = {"lengths": lengths, "median": float(np.median(lengths)), "times": seconds,
                      "seconds": float(np.median(seconds)), "history": list(results[0].history["best"]),
                      "population": k["population"]}
    return runs


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
        return nearest_neighbour_descent(distance_matrix(city_set("random", n, seed)))

    def descent(cities: int):
        d = distance_matrix(city_set("random", cities, seed))

        def run():
            length = nearest_neighbour_descent(d)
            found["NN + 2-opt (NumPy)"] = {"best": length, "generations": None, "reached": True}
        return run

    def ga(name, population, make_model, chunk):
        def build(cities: int):
            xy = city_set("random", cities, seed)
            model = make_model(xy, seed=seed)  # building is cheap; compiling happens at the first evolve
            model = next((m for m in compiled if _same_model(m, model, population)), model)
            start, goal = tour_population(population, cities, seed), target(cities)

            def run():
                result = evolve_until(model, start, goal, max_generations, chunk)
                found[name] = {"best": result.best_fitness, "generations": result.generations,
                               "reached": result.best_fitness <= goal}
            return run
        return build

    return ({"NN + 2-opt (NumPy)": descent, "GA": ga("GA", ga_population, tsp_model, GA_CHUNK),
             "memetic GA": ga("memetic GA", memetic_population, memetic_model, MEMETIC_CHUNK)}, found)


def nearest_neighbour_descent(distances) -> float:
    """The widget's bar of quality: one nearest-neighbour tour from city 0 taken down to a 2-opt local optimum."""
    return tour_length(two_opt(nearest_neighbour_tour(distances), distances), distances)


def evolve_until(model: evo.Model, start, length: float, generations: int, chunk: int):
    """Evolve until the best tour is as short as ``length`` (tested inside the compiled loop), or ``generations``."""
    return model.evolve(start, generations=generations, chunk=chunk,
                        callbacks=[evo.callbacks.EarlyStopping(target=length)])


def time_to_quality_verdicts(comparison, found: dict):
    """The widget's verdicts, with a GA that stopped short of the quality read as a lower bound.

    A GA that ran out of generations before matching the baseline's tour would have needed more
    time, so its measured time only says it is *at least* that much slower; a verdict that prints
    the ratio as a measurement would overstate what was measured. ``found`` is the dict that
    ``tsp_variants`` fills."""
    sentences = []
    for name in comparison.names:
        if name == comparison.baseline:
            continue
        run = found.get(name)
        if run is None or run["reached"]:
            sentences.append(comparison.verdict(name))
            continue
        ratio = comparison.speedup(name)
        stop = f"it stopped after {run['generations']} generations without reaching the quality"
        sentences.append(f"{name}: at least {ratio_text(1 / ratio)} slower than {comparison.baseline} ({stop}, "
                         "so its time is a lower bound)" if ratio < 1 else
                         f"{name}: no verdict against {comparison.baseline} ({stop})")
    return Verdicts(sentences)


def _same_model(a: evo.Model, b: evo.Model, population: int) -> bool:
    """Whether two TSP models evolve alike: the same definition, mode and distances."""
    return (a.signature(population) == b.signature(population) and a.mode == b.mode
            and np.array_equal(np.asarray(a.fitness.distances), np.asarray(b.fitness.distances)))


# -- 0/1 knapsack ----------------------------------------------------------------------------------

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
    fitness is ``evo.fitness.Knapsack(..., loadable=True)``, so ``model.fitness.load(**other_instance)`` reuses the
    compiled model for another instance of as many items."""
    n = len(instance["weights"])
    inputs = evo.Input(shape=(n,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=1 / n)(inputs)
    x = evo.ops.TwoPointCrossover()(x)
    model = evo.Model(inputs, x, name="knapsack")
    fitness = evo.fitness.Knapsack(weights=instance["weights"], values=instance["values"],
                                   capacity=instance["capacity"], loadable=loadable)
    model.compile(fitness=fitness, selection=selection or evo.selection.Elitist(), mode=mode, seed=seed)
    return model


# -- continuous optimisation ------------------------------------------------------------------------

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
