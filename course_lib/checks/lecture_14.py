"""Checkers for lecture 14, applications: answers the engine must have produced, its speed, 2-opt's work.

A classical method (nearest neighbour + 2-opt, dynamic programming) can reach the targets alone, so the
checkers ask for the engine's ``Result`` and verify that the answer is its best, consistent with its
fitness history, and that the GA's own best is good before any polishing.
"""

from __future__ import annotations

from unittest import mock

import numpy as np

from course_lib import evo
from course_lib.checks import exercise, method
from course_lib.lessons import applications as app

# The GA's own best tour within 10% of nearest neighbour + 2-opt: an elitist run ends in one of a few local
# optima, which one depending on the seed, so the bar leaves room above the longest of them that the
# solution's settings reach (tests/test_checks_lecture_14.py runs those settings from several seeds).
WITHIN = 1.10


def _result(value, name: str) -> evo.Result:
    assert isinstance(value, evo.Result), f"{name} should be what model.evolve returns, got {type(value).__name__}"
    return value


def _consistent(result: evo.Result, fitness_of_best: float, maximize: bool) -> None:
    assert np.isclose(result.best_fitness, fitness_of_best, rtol=1e-5), \
        f"result.best_fitness ({result.best_fitness:.6g}) is not the fitness of result.best ({fitness_of_best:.6g})"
    best_seen = max(result.history["best"]) if maximize else min(result.history["best"])
    assert np.isclose(best_seen, result.best_fitness, rtol=1e-5), \
        "result.best is not the best of the run's history: pass the Result that evolve returned"


@exercise("14", 1, "a tour close to a classical heuristic's",
          "app.tsp_model builds the GA; model.evolve returns a Result whose best is a tour; app.two_opt polishes it.",
          "If the GA's own best is too long, give it more tours or more generations; the polished tour starts "
          "from result.best, not from another tour.")
def shorter_tour(result, tour, distances, reference):
    result = _result(result, "result")
    d = np.asarray(distances)
    n = d.shape[0]
    assert app.is_tour(result.best, n), f"result.best should be a tour of the {n} cities: evolve with app.tsp_model"
    assert app.is_tour(tour, n), f"tour must visit each of the {n} cities exactly once"
    _consistent(result, app.tour_length(result.best, d), maximize=False)
    assert np.array_equal(tour, result.best) or np.array_equal(tour, app.two_opt(result.best, d)), \
        "tour is not the GA's best (result.best), nor result.best polished with app.two_opt"
    ga = app.tour_length(result.best, d)
    assert ga <= WITHIN * reference, \
        f"the GA's own best is {ga:.4f}, more than {WITHIN - 1:.0%} above nearest neighbour + 2-opt " \
        f"({reference:.4f}): the GA has not searched enough yet"


@exercise("14", 2, "a hard knapsack",
          "app.knapsack_model builds the GA; the answer is the best of the Result that model.evolve returns.",
          "If the GA falls short of the optimum, ask what it lacked: how many packings it weighs at once, or "
          "how long it searches; both are arguments you already pass. The checker compares choice with the "
          "packing the Result reports as best.")
def hard_knapsack(result, choice, instance, optimum):
    result = _result(result, "result")
    n = len(instance["weights"])
    assert np.asarray(choice).shape == (n,), f"choice is one 0/1 gene per item, shape ({n},)"
    assert np.array_equal(choice, result.best), "choice is not the GA's best (result.best)"
    c = app.knapsack_check(result.best, **instance)
    assert c["feasible"], f"the choice weighs {c['weight']:.0f}, over the capacity {instance['capacity']}"
    _consistent(result, c["value"], maximize=True)
    assert c["value"] >= 0.995 * optimum, f"value {c['value']:.0f} is below 99.5% of the optimum {optimum:.0f}"


@exercise("14", 3, "what XLA buys on tours",
          "Two TSP models on the same cities, one compiled with mode='graph' and one with mode='xla'; "
          "bench.compare times functions that call their evolve.",
          "Each variant returns the Result of evolving start for SHORT generations; speedup reads the 'xla' "
          "ratio from the same comparison.")
def xla_on_tours(variants, tours, speedup, generations):
    names = ["graph", "xla"]
    method.variants_named(variants, names)
    for name in names:
        result = _result(method.value_of(variants, name), f"the {name!r} variant's return value")
        assert result.mode == name, f"the {name!r} variant evolves a model compiled with mode={result.mode!r}"
        assert result.generations == generations, \
            f"the {name!r} variant ran {result.generations} generations, not {generations}"
    method.comparison(tours, names, "graph", repeats=3)
    method.close(speedup, tours.speedup("xla"), "speedup (xla over graph, from tours)")


@exercise("14", 4, "predict 2-opt's work per move",
          "Name a reversal by the last position before its segment, i, and the segment's last position, j; turn "
          "the rules of a move into bounds on i, and on j for a given i, then count.",
          "Small tours are easy to list by hand: count the moves of a 5-city tour and check your rule on it. "
          "The dtype of the scores is the one two_opt converts the distances to.")
def two_opt_work(reversals, delta_bytes, tour, distances):
    for name, value in (("reversals", reversals), ("delta_bytes", delta_bytes)):
        assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
            f"{name} should be a whole number, got {type(value).__name__}"
    with mock.patch.object(app.np, "argmin", wraps=np.argmin) as spy:
        app.two_opt(tour, distances, max_moves=1)
    scored = np.asarray(spy.call_args_list[0].args[0])
    assert reversals == scored.size, \
        f"reversals is {reversals}: count the pairs one move scores (a tour of {len(tour)} cities)"
    assert delta_bytes == scored.nbytes, f"delta_bytes is {delta_bytes}: the scores of one move, in bytes"
