"""Lecture 10's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks, evo

NUMBERS = np.array([3, 5, 8, 13, 21, 34, 55, 89])
TARGET = 63


def fail(k, **answer):
    return checks.failure("10", k, **answer)


def subset_sum(population):
    chosen = tf.cast(population, tf.float32)
    return tf.abs(tf.linalg.matvec(chosen, tf.constant(NUMBERS, tf.float32)) - TARGET)


def model_of(fitness, mode, maximize=False):
    inputs = evo.Input(shape=(8,), dtype="int32")
    x = evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate=1 / 8)(inputs))
    model = evo.Model(inputs, x)
    model.compile(fitness=fitness, maximize=maximize, selection=evo.selection.Tournament(size=3), mode=mode, seed=0)
    return model


START = evo.population.random_integers((32, 8), low=0, high=2, seed=0)


def test_subset_sum_fitness():
    ok = dict(numbers=NUMBERS, target=TARGET)
    assert fail(1, subset_sum=subset_sum, **ok) is None
    signed = lambda p: tf.linalg.matvec(tf.cast(p, tf.float32), tf.constant(NUMBERS, tf.float32)) - TARGET  # noqa: E731
    assert "never negative" in fail(1, subset_sum=signed, **ok)
    in_numpy = lambda p: np.abs(np.asarray(p) @ NUMBERS - TARGET).astype(np.float32)  # noqa: E731
    assert "float32" in fail(1, subset_sum=lambda p: tf.constant(in_numpy(p).astype(np.float64)), **ok)
    assert "compiled function" in fail(1, subset_sum=lambda p: tf.constant(in_numpy(p)), **ok)


def test_evolve_exact_subset():
    stop = [evo.callbacks.EarlyStopping(target=0.0)]
    result = model_of(subset_sum, "eager").evolve(START, generations=30, callbacks=stop)
    ok = dict(numbers=NUMBERS, target=TARGET, generations=30)
    assert fail(2, result=result, **ok) is None
    maximised = model_of(subset_sum, "eager", maximize=True).evolve(START, generations=3)
    assert "did the model minimise" in fail(2, result=maximised, **ok)
    no_stop = model_of(subset_sum, "eager").evolve(START, generations=30)
    assert "should stop as soon as fitness 0" in fail(2, result=no_stop, **ok)
    assert "what model.evolve returns" in fail(2, result=result.best, **ok)


@pytest.fixture(scope="module")
def compiling():
    eager, graph = model_of(subset_sum, "eager"), model_of(subset_sum, "graph")
    variants = {"eager": lambda: eager.evolve(START, generations=2),
                "graph": lambda: graph.evolve(START, generations=2)}
    compiled = bench.compare(variants, baseline="eager", repeats=5, number=1)
    return dict(variants=variants, compiled=compiled, speedup=compiled.speedup("graph"), generations=2), graph


def test_what_compiling_buys(compiling):
    ok, graph = compiling
    assert fail(3, **ok) is None
    both_graph = dict(ok["variants"], eager=ok["variants"]["graph"])
    assert "'eager' variant evolves a model compiled with mode='graph'" in fail(3, **dict(ok, variants=both_graph))
    no_result = dict(ok["variants"], graph=lambda: graph.evolve(START, generations=2).best_fitness)
    assert "should be what model.evolve returns" in fail(3, **dict(ok, variants=no_result))
    shorter = dict(ok["variants"], graph=lambda: graph.evolve(START, generations=1))
    assert "ran 1 generations" in fail(3, **dict(ok, variants=shorter))
    assert "speedup" in fail(3, **dict(ok, speedup=1 / ok["speedup"]))
    again = bench.compare(ok["variants"], baseline="eager", repeats=5, number=1)
    assert "speedup" in fail(3, **dict(ok, speedup=again["graph"].median_s / ok["compiled"]["eager"].median_s))


def test_untouched_children():
    assert fail(4, untouched_share=(1 - 1 / 32) ** 32, rate=1 / 32, genes=32) is None
    assert fail(4, untouched_share=float(np.exp(-1)), rate=1 / 32, genes=32) is None  # the limit is close enough
    assert "you predict 0.000" in fail(4, untouched_share=0.0, rate=1 / 32, genes=32)
    assert "you predict 0.969" in fail(4, untouched_share=1 - 1 / 32, rate=1 / 32, genes=32)
    assert "between 0 and 1" in fail(4, untouched_share=36.2, rate=1 / 32, genes=32)
