"""Lecture 13's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks, evo
from course_lib.lessons import evolution as benchmarks

GENERATIONS, LENGTH = 30, 16
POPULATION = evo.population.random_integers((32, LENGTH), low=0, high=2, seed=0)


def fail(k, **answer):
    return checks.failure("13", k, **answer)


@pytest.fixture(scope="module")
def setting():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])  # one replica: the checker looks at the method
    return benchmarks.onemax_model(LENGTH, "graph", seed=0), strategy


def answer(model, strategy, candidates):
    def run(k):
        return model.evolve(POPULATION, generations=GENERATIONS, strategy=strategy, distribution="islands",
                            migration_interval=k, migrants=2)

    timings, measurements = {}, {}
    for k in candidates:
        result = run(k)
        timings[k] = bench.measure(lambda: run(k), repeats=1, warmup=0)
        reached = next(g + 1 for g, best in enumerate(result.history["best"]) if best >= LENGTH)
        measurements[k] = {"generations": reached, "seconds_per_generation": timings[k].median_s / GENERATIONS}
    best = min(candidates, key=lambda k: measurements[k]["generations"] * measurements[k]["seconds_per_generation"])
    return dict(run=run, timings=timings, measurements=measurements, BEST_INTERVAL=best, model=model,
                strategy=strategy, candidates=candidates, generations=GENERATIONS, optimum=LENGTH)


def test_migration_interval(setting):
    model, strategy = setting
    ok = answer(model, strategy, [1, 5])
    assert fail(1, **ok) is None
    with_compilation = {k: dict(m, seconds_per_generation=ok["timings"][k].first_call_s / GENERATIONS)
                        for k, m in ok["measurements"].items()}
    assert "first call apart" in fail(1, **dict(ok, measurements=with_compilation))
    other = [k for k in ok["candidates"] if k != ok["BEST_INTERVAL"]][0]
    assert "not the fastest" in fail(1, **dict(ok, BEST_INTERVAL=other))

    def global_run(k):
        return model.evolve(POPULATION, generations=GENERATIONS, strategy=strategy, migration_interval=k, migrants=2)

    assert "distribution='islands'" not in fail(1, **dict(ok, run=global_run))
    assert "should evolve islands" in fail(1, **dict(ok, run=global_run))
    fixed = dict(ok, run=lambda k: ok["run"](1))
    assert "migration_interval=1" in fail(1, **fixed)
    shifted = {k: dict(m, generations=m["generations"] - 1) for k, m in ok["measurements"].items()}
    assert "first reached at generation" in fail(1, **dict(ok, measurements=shifted))


def shardable(population, fitness, replicas):
    extra = len(population) % replicas
    if extra == 0:
        return population
    return np.delete(population, np.argsort(fitness, kind="stable")[:extra], axis=0)


def test_shardable_population(setting):
    model, strategy = setting
    odd = evo.population.random_integers((101, LENGTH), low=0, high=2, seed=1).numpy()
    fit = odd.sum(axis=1)
    result = model.evolve(shardable(odd, fit, 2), generations=2, strategy=strategy)
    ok = dict(odd=odd, odd_fitness=fit, sharded_result=result)
    assert fail(2, shardable=shardable, **ok) is None
    drop_first = lambda p, f, r: p[len(p) % r:]  # noqa: E731
    assert "not the worst" in fail(2, shardable=drop_first, **ok)
    drop_best = lambda p, f, r: np.delete(p, np.argsort(-f, kind="stable")[:len(p) % r], axis=0)  # noqa: E731
    assert "not the worst" in fail(2, shardable=drop_best, **ok)
    sorted_keep = lambda p, f, r: p[np.sort(np.argsort(f, kind="stable")[len(p) % r:])][::-1]  # noqa: E731
    assert "in order" in fail(2, shardable=sorted_keep, **ok)
    assert "largest multiple" in fail(2, shardable=lambda p, f, r: p[:len(p) // r * r - r], **ok)


def test_predict_migrations():
    ok = dict(generations=80, migrants=2)
    assert fail(3, arrivals={1: 160, 4: 40, 16: 10, 30: 4}, **ok) is None
    assert "arrivals[30] is 6" in fail(3, arrivals={1: 160, 30: 6}, **ok)
    assert "arrivals[4] is 20" in fail(3, arrivals={4: 20}, **ok)
    assert "whole number" in fail(3, arrivals={30: 80 / 30 * 2}, **ok)
