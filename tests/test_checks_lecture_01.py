"""Lecture 01's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks, graphs

COEFFS = [((-1) ** k) / (k + 1) for k in range(9)]
x = tf.linspace(-0.5, 0.5, 8)


def horner(x):
    result = tf.zeros_like(x)
    for c in COEFFS:
        result = result * x + c
    return result


def failure(k, **answer):
    return checks.failure("01", k, **answer)


@pytest.fixture(scope="module")
def measured():
    horner_graph = tf.function(horner)
    variants = {"eager": lambda: horner(x), "tf.function": lambda: horner_graph(x)}
    comparison = bench.compare(variants, baseline="eager", repeats=3, number=2)
    return dict(horner_graph=horner_graph, variants=variants, comparison=comparison, horner=horner, x=x)


def test_wrap_and_measure(measured):
    assert failure(1, **measured) is None
    v = measured["variants"]
    assert "does not call horner_graph" in failure(
        1, **dict(measured, variants={**v, "tf.function": lambda: horner(x)}))
    assert "'eager' variant calls a tf.function" in failure(
        1, **dict(measured, variants={**v, "eager": v["tf.function"]}))
    assert "should be a tf.function" in failure(1, **dict(measured, horner_graph=horner))
    few = bench.compare(v, baseline="eager", repeats=2, number=2)
    assert "ask for repeats=3" in failure(1, **dict(measured, comparison=few))
    graph = measured["horner_graph"]

    def forgets_to_return():
        graph(x)

    assert "returns nothing" in failure(1, **dict(measured, variants={**v, "tf.function": forgets_to_return}))


@pytest.fixture(scope="module")
def training():
    model = graphs.conv_model(image_size=8, classes=2)
    optimizer = keras.optimizers.SGD(0.05)
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(0)
    images = tf.constant(rng.random((4, 8, 8, 1), dtype=np.float32))
    labels = tf.constant(rng.integers(0, 2, size=4).astype(np.int32))
    return model, optimizer, loss_fn, images, labels


def test_train_step_as_graph(training):
    model, optimizer, loss_fn, images, labels = training
    python_step = graphs.make_train_step(model, optimizer, loss_fn)
    step = tf.function(python_step)
    losses = [float(step(images, labels)) for _ in range(3)]
    assert failure(2, train_step_graph=step, losses=losses) is None
    assert "should be a tf.function" in failure(2, train_step_graph=python_step, losses=losses)
    assert "Python floats" in failure(2, train_step_graph=step, losses=[tf.constant(v) for v in losses])
    assert "should fall" in failure(2, train_step_graph=step, losses=losses[::-1])
    retraced = tf.function(python_step)
    for batch in (2, 3):
        retraced(images[:batch], labels[:batch])
    assert "traced 2 times" in failure(2, train_step_graph=retraced, losses=losses)


def test_look_inside():
    seen = []

    @tf.function
    def standardise(v):
        spread = tf.math.reduce_std(v)
        seen.append(spread)
        return (v - tf.reduce_mean(v)) / spread

    data = tf.constant([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert "empty" in failure(3, spread=2.0, seen_spreads=seen)
    standardise(data)
    assert "only symbolic tensors" in failure(3, spread=2.0, seen_spreads=seen)
    with graphs.eagerly():
        standardise(data)
    assert failure(3, spread=float(seen[-1]), seen_spreads=seen) is None
    assert "as a float" in failure(3, spread=2.5, seen_spreads=seen)
    assert "should be a number" in failure(3, spread=seen[-1], seen_spreads=seen)
    tf.config.run_functions_eagerly(True)
    try:
        assert "still run eagerly" in failure(3, spread=float(seen[-1]), seen_spreads=seen)
    finally:
        tf.config.run_functions_eagerly(False)


def test_predict_graph():
    n = len(COEFFS)
    assert failure(4, predicted_muls=n, has_while=False, horner=horner, x=x) is None
    assert "While" in failure(4, predicted_muls=n, has_while=True, horner=horner, x=x)
    assert "does not hold 1 Mul" in failure(4, predicted_muls=1, has_while=False, horner=horner, x=x)
    assert "whole number" in failure(4, predicted_muls=float(n), has_while=False, horner=horner, x=x)
