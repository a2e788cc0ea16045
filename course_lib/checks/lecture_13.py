"""Checkers for lecture 13, evolution on many devices: migration intervals, shardable populations."""

from __future__ import annotations

from unittest import mock

import numpy as np

from course_lib import bench, evo
from course_lib.checks import exercise, method


def _first_reach(history, optimum) -> int | None:
    return next((g + 1 for g, best in enumerate(history) if best >= optimum), None)


@exercise("13", 1, "pick a migration interval",
          "Write run(k), the islands run for one interval, and time it with bench.measure, which keeps the "
          "first call (compilation) apart.",
          "The time to the optimum depends on how many generations it takes and on how long each one lasts; "
          "a Timing's median covers a whole run of `generations` generations.")
def migration_interval(run, timings, measurements, BEST_INTERVAL, model, strategy, candidates, generations, optimum):
    assert isinstance(measurements, dict) and sorted(measurements) == sorted(candidates), \
        f"measurements should have one entry per candidate: {candidates}"
    assert isinstance(timings, dict) and sorted(timings) == sorted(candidates), \
        f"timings should hold the bench.measure Timing of run(k) for every candidate: {candidates}"
    for k in candidates:
        with mock.patch.object(model, "evolve", wraps=model.evolve) as spy:
            result = method.value_of({f"run({k})": lambda: run(k)}, f"run({k})")
        assert spy.call_count == 1, f"run({k}) should call model.evolve once, it called it {spy.call_count} times"
        kwargs = spy.call_args.kwargs
        assert (kwargs.get("strategy") is strategy and kwargs.get("distribution") == "islands"
                and kwargs.get("migration_interval") == k), \
            f"run({k}) should evolve islands on strategy with migration_interval={k}, got " \
            f"distribution={kwargs.get('distribution')!r}, migration_interval={kwargs.get('migration_interval')!r}"
        assert isinstance(result, evo.Result) and result.generations == generations, \
            f"run({k}) should return the Result of {generations} generations"
        m = measurements[k]
        assert m.get("generations") == _first_reach(result.history["best"], optimum), \
            f"interval {k}: the optimum is first reached at generation {_first_reach(result.history['best'], optimum)}"
        t = timings[k]
        assert isinstance(t, bench.Timing), f"timings[{k}] should be what bench.measure returns"
        per_generation = t.median_s / generations
        method.close(m.get("seconds_per_generation"), per_generation,
                     f"interval {k}: seconds_per_generation (the timed median over {generations} generations, "
                     "first call apart)")
    cost = {k: m["generations"] * m["seconds_per_generation"] for k, m in measurements.items()}
    assert BEST_INTERVAL == min(cost, key=cost.get), "BEST_INTERVAL is not the fastest to the optimum"


@exercise("13", 2, "make a population shardable",
          "The remainder of the population size divided by the replicas says how many must go; the fitness "
          "says which.",
          "Order the individuals by fitness to find the worst, then remove those rows by index, which leaves "
          "the others in their order.")
def shardable_population(shardable, odd, odd_fitness, sharded_result):
    where = {row.tobytes(): i for i, row in enumerate(odd)}
    for replicas in (2, 3, 4, 7):
        try:
            cut = np.asarray(shardable(odd, odd_fitness, replicas))
        except Exception as exc:
            raise AssertionError(
                f"shardable(odd, odd_fitness, {replicas}) raised {type(exc).__name__}: {exc}") from None
        assert len(cut) % replicas == 0 and len(cut) > len(odd) - replicas, \
            f"{replicas} replicas: {len(cut)} individuals is not the largest multiple that fits"
        index = [where.get(row.tobytes(), -1) for row in cut]
        assert min(index) >= 0 and index == sorted(index), f"{replicas} replicas: keep the others, in order"
        dropped = np.sort(np.delete(odd_fitness, index))
        assert np.array_equal(dropped, np.sort(odd_fitness)[:len(dropped)]), \
            f"{replicas} replicas: the dropped individuals are not the worst"
    assert isinstance(sharded_result, evo.Result) and sharded_result.population.shape[0] == len(odd) // 2 * 2, \
        "evolve the cut population on `strategy`"


@exercise("13", 3, "predict the migrations",
          "Lecture 13: islands run migration_interval generations, then exchange migrants, and repeat.",
          "Walk through a run on paper: at which generations does a migration happen, and does a run that "
          "stops before an interval is complete end with one?")
def predict_migrations(arrivals, generations, migrants):
    assert isinstance(arrivals, dict) and all(isinstance(k, int) for k in arrivals), \
        "arrivals should map each interval k (an int) to a number of individuals"
    for k, value in arrivals.items():
        assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
            f"arrivals[{k}] should be a whole number, got {type(value).__name__}"
        want = generations // k * migrants
        assert value == want, f"arrivals[{k}] is {value}, not what an island receives in {generations} " \
                              f"generations at interval {k}: which generations end with a migration?"
