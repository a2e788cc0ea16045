"""Lecture 15's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks
from course_lib.evo import neuro
from course_lib.lessons.neuroevolution import digits


def fail(k, **answer):
    return checks.failure("15", k, **answer)


def kernels_of(population, layout, k):
    s = layout.slots[k]
    return tf.reshape(population[:, s.offset:s.offset + s.inputs * s.units], (-1, s.inputs, s.units))


def kernels_transposed(population, layout, k):  # the units first: Keras' shape read the other way round
    s = layout.slots[k]
    return tf.reshape(population[:, s.offset:s.offset + s.inputs * s.units], (-1, s.units, s.inputs))


def kernels_column_major(population, layout, k):  # right shape, weights in the wrong places
    return tf.transpose(kernels_transposed(population, layout, k), (0, 2, 1))


def kernels_without_biases(population, layout, k):  # offsets that forget the biases between kernels
    start = sum(s.inputs * s.units for s in layout.slots[:k])
    s = layout.slots[k]
    return tf.reshape(population[:, start:start + s.inputs * s.units], (-1, s.inputs, s.units))


def test_kernels():
    assert fail(1, kernels_of=kernels_of) is None
    assert "(3, 5, 4)" in fail(1, kernels_of=kernels_transposed)
    assert "wrong places" in fail(1, kernels_of=kernels_column_major)
    assert "where does the next layer start" in fail(1, kernels_of=kernels_without_biases)
    assert "should be a function" in fail(1, kernels_of=None)


@pytest.fixture(scope="module")
def measured():
    model = neuro.mlp(64, [16], 10)
    layout = neuro.Layout(model)
    genomes = tf.constant(neuro.initial_population(model, 64))
    x = tf.constant(digits()[0][:32])
    forward = tf.function(layout.forward, jit_compile=True)
    timing = bench.measure(lambda: forward(genomes, x), repeats=3)
    return forward, timing, layout


def test_networks_per_second(measured):
    forward, timing, layout = measured
    ok = dict(forward=forward, timing=timing, population=64)
    assert fail(2, rate=64 / timing.median_s, **ok) is None
    assert "first call" in fail(2, rate=64 / timing.first_call_s, **ok)
    assert "calls per second" in fail(2, rate=1 / timing.median_s, **ok)
    # the fastest repeat, from repeats set apart: measured ones can tie with the median to 1e-6
    spread = bench.Timing(timing.name, timing.first_call_s, [timing.median_s * f for f in (0.5, 1.0, 1.5)],
                          timing.number)
    assert "should be" in fail(2, **dict(ok, timing=spread), rate=64 / min(spread.times_s))
    assert "jit_compile=True" in fail(2, **dict(ok, forward=tf.function(layout.forward)), rate=64 / timing.median_s)
    assert "bench.measure" in fail(2, **dict(ok, timing=timing.median_s), rate=64 / timing.median_s)


def test_loop_work():
    returns = np.array([[10.0, 12.0], [30.0, 8.0], [9.0, 11.0]])  # the longest episode: 30 steps
    ok = dict(returns=returns, steps=500)
    right = dict(iterations=30, simulated=180, useful_share=80 / 180)
    assert fail(3, **right, **ok) is None
    assert "always run" in fail(3, **dict(right, iterations=500, simulated=3000, useful_share=80 / 3000), **ok)
    assert "average" in fail(3, **dict(right, iterations=13, simulated=78, useful_share=80 / 78), **ok)
    assert "already failed" in fail(3, **dict(right, simulated=80, useful_share=1.0), **ok)
    assert "useful_share" in fail(3, **dict(right, useful_share=80 / 3000), **ok)
    assert "whole number" in fail(3, **dict(right, iterations=30.0), **ok)
