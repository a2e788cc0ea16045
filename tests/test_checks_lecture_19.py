"""Lecture 19's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks, fitting


def fail(k, **answer):
    return checks.failure("19", k, **answer)


def test_count_executions():
    assert fail(1, ends=3, steps=40, spe=16) is None
    assert "runs once per execution" in fail(1, ends=40, steps=40, spe=16)  # once per step
    assert "a short last one included" in fail(1, ends=2, steps=40, spe=16)  # the partial execution left out
    assert "whole number" in fail(1, ends=2.5, steps=40, spe=16)


def _trained(epochs=1, optimizer=None, **compile_kw):
    """A model compiled as asked and trained for ``epochs`` (0 for the answers the checker refuses before it
    reads the steps trained: no XLA compile spent on them)."""
    model = fitting.mlp(8)
    x, y = fitting.data(32 * 4)
    model.compile(optimizer=optimizer or keras.optimizers.SGD(0.01), loss="mse", **compile_kw)
    if epochs:
        model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, shuffle=False)
    return model


def test_compile_for_speed():
    ask = dict(rows=32 * 4, batch=32, spe=2)
    assert fail(2, model=_trained(steps_per_execution=2, jit_compile=True), **ask) is None
    assert "runs 1 steps per execution" in fail(2, model=_trained(0, jit_compile=True), **ask)
    assert "jit_compile is False" in fail(2, model=_trained(0, steps_per_execution=2), **ask)
    assert "ran 8 steps" in fail(2, model=_trained(2, steps_per_execution=2, jit_compile=True), **ask)
    assert "use SGD(0.01)" in fail(2, model=_trained(0, optimizer="adam", steps_per_execution=2, jit_compile=True),
                                   **ask)
    assert "not compiled" in fail(2, model=fitting.mlp(8), **ask)
    untrained = fitting.mlp(8)
    untrained.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse", steps_per_execution=2, jit_compile=True)
    assert "ran 0 steps" in fail(2, model=untrained, **ask)


@pytest.fixture(scope="module")
def served():
    net = fitting.mlp(8)
    row = np.ones((1, fitting.FEATURES), np.float32)
    serve = tf.function(net, input_signature=[tf.TensorSpec([None, fitting.FEATURES], tf.float32)])
    variants = {"predict": lambda: net.predict(row, verbose=0), "serve": lambda: serve(row)}
    latency = bench.compare(variants, baseline="predict", repeats=5, number=1)
    saved = (latency["predict"].median_s - latency["serve"].median_s) * 1e6
    return dict(serve=serve, variants=variants, latency=latency, saved_us=saved, net=net, row=row)


def test_serve_one_row(served):
    net, row = served["net"], served["row"]
    assert fail(3, **served) is None
    plain = tf.function(net)
    assert "traced 2 times" in fail(3, **dict(served, serve=plain,
                                              variants={"predict": served["variants"]["predict"],
                                                        "serve": lambda: plain(row)}))
    inside = {"predict": served["variants"]["predict"], "serve": lambda: tf.function(net)(row)}
    assert "should call serve" in fail(3, **dict(served, variants=inside))
    eager = {"predict": lambda: net(row), "serve": served["variants"]["serve"]}
    assert "should call net.predict" in fail(3, **dict(served, variants=eager))
    assert "saved_us" in fail(3, **dict(served, saved_us=served["saved_us"] / 1e6))
    assert "should be a tf.function" in fail(3, **dict(served, serve=net))
    swapped = {"serve": served["variants"]["serve"], "predict": served["variants"]["predict"]}
    assert "in this order" in fail(3, **dict(served, variants=swapped))
    fixed = tf.function(net, input_signature=[tf.TensorSpec([1, fitting.FEATURES], tf.float32)])
    assert "refused a batch of 3 rows" in fail(3, **dict(served, serve=fixed,
                                                         variants={"predict": served["variants"]["predict"],
                                                                   "serve": lambda: fixed(row)}))
