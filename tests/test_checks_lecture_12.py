"""Lecture 12's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np
import pytest

from course_lib import bench, checks, evo
from course_lib.lessons import evolution as benchmarks

POPULATION = evo.population.random_integers((32, 16), low=0, high=2, seed=0)


def fail(k, **answer):
    return checks.failure("12", k, **answer)


@pytest.fixture(scope="module")
def model():
    return benchmarks.onemax_model(16, "graph", seed=0)


class Reports(evo.callbacks.Callback):
    def __init__(self):
        self.generations = []

    def on_chunk_end(self, run):
        self.generations.append(run.generation)


class Fixed(evo.callbacks.Callback):
    """Reports the schedule without recording anything."""

    def __init__(self):
        self.generations = [50, 100, 150, 200]


def test_pick_chunk(model):
    reports = Reports()
    model.evolve(POPULATION, generations=200, chunk=50, callbacks=[reports])
    assert fail(1, reports=reports, CHUNK=50) is None
    default = Reports()
    default.generations = [64, 128, 192, 200]  # what evolve's default chunk of 64 reports
    assert "[64, 128, 192, 200]" in fail(1, reports=default, CHUNK=64)
    assert "append run.generation" in fail(1, reports=Fixed(), CHUNK=50)
    assert "subclass" in fail(1, reports=[50, 100, 150, 200], CHUNK=50)


def test_resume(model, tmp_path):
    path = str(tmp_path / "run.npz")
    model.evolve(POPULATION, generations=20, callbacks=[evo.callbacks.Checkpoint(path, every=10)])
    ok = dict(model=model, population=POPULATION, generations=30)
    assert fail(2, resumed=model.evolve(generations=30, resume_from=path), **ok) is None
    assert "not 30" in fail(2, resumed=model.evolve(generations=25, resume_from=path), **ok)
    restarted = model.evolve(evo.population.random_integers((32, 16), low=0, high=2, seed=9), generations=30)
    assert "differs from the uninterrupted one" in fail(2, resumed=restarted, **ok)


def test_lost_work():
    ok = dict(saved_generation=60, crashed_at=90)
    assert fail(3, last_checkpoint=60, recomputed=30, **ok) is None
    assert "last_checkpoint is 90" in fail(3, last_checkpoint=90, recomputed=0, **ok)
    assert "recomputed is 60" in fail(3, last_checkpoint=60, recomputed=60, **ok)
    assert "whole number" in fail(3, last_checkpoint=60.0, recomputed=30, **ok)


def test_chunk_cost(model):
    variants = {"chunk=1": lambda: model.evolve(POPULATION, generations=4, chunk=1),
                "chunk=4": lambda: model.evolve(POPULATION, generations=4, chunk=4)}
    chunking = bench.compare(variants, baseline="chunk=1", repeats=5, number=1)
    ok = dict(variants=variants, chunking=chunking, speedup=chunking.speedup("chunk=4"), model=model,
              population=POPULATION, generations=4)
    assert fail(4, **ok) is None
    same_chunk = dict(variants, **{"chunk=1": variants["chunk=4"]})
    assert "'chunk=1' variant calls model.evolve with chunk=4" in fail(4, **dict(ok, variants=same_chunk))
    default = dict(variants, **{"chunk=4": lambda: model.evolve(POPULATION, generations=4)})
    assert "chunk=64" in fail(4, **dict(ok, variants=default))
    fewer = dict(variants, **{"chunk=4": lambda: model.evolve(POPULATION, generations=2, chunk=4)})
    assert "Result of 4 generations" in fail(4, **dict(ok, variants=fewer))
    assert "speedup" in fail(4, **dict(ok, speedup=1 / ok["speedup"]))
    assert np.isfinite(ok["speedup"])
