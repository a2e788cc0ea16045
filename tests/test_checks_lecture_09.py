"""Lecture 09's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import pytest
import tensorflow as tf

from course_lib import bench, checks
from course_lib.models import deep_thin

DEPTH = 6


@pytest.fixture(scope="module")
def model():
    model = deep_thin.sequential(depth=DEPTH, width=4, seed=0)
    for i, layer in enumerate(deep_thin.dense_layers(model)):  # biases start at zero: make leaving them out show
        layer.bias.assign(tf.random.stateless_normal(layer.bias.shape, seed=[i, 9]))
    return model


@pytest.fixture(scope="module")
def x():
    return tf.random.stateless_normal([8, 4], seed=[1, 2])


def fail(k, **answer):
    return checks.failure("09", k, **answer)


def test_hand_written_pass(model, x):
    def reference(x):
        for layer in deep_thin.dense_layers(model):
            x = tf.tanh(tf.nn.bias_add(tf.matmul(x, layer.kernel), layer.bias))
        return x

    def no_bias(x):
        for layer in deep_thin.dense_layers(model):
            x = tf.tanh(tf.matmul(x, layer.kernel))
        return x

    def no_tanh(x):
        for layer in deep_thin.dense_layers(model):
            x = tf.nn.bias_add(tf.matmul(x, layer.kernel), layer.bias)
        return x

    def by_layers(x):
        for layer in deep_thin.dense_layers(model):
            x = layer(x)
        return x

    assert fail(1, hand_written=reference, model=model, x=x) is None
    assert "does not compute what model computes" in fail(1, hand_written=no_bias, model=model, x=x)
    assert "does not compute what model computes" in fail(1, hand_written=no_tanh, model=model, x=x)
    assert "calls a Keras layer" in fail(1, hand_written=by_layers, model=model, x=x)
    assert "calls a Keras layer" in fail(1, hand_written=lambda x: model(x), model=model, x=x)
    assert fail(1, hand_written=reference, model=model, x=x) is None  # the layers work again afterwards


def test_one_graph(model):
    batches = [tf.random.stateless_normal([n, 4], seed=[n, 0]) for n in (1, 8, 64)]
    ok = tf.function(model, input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    assert fail(2, served=ok, model=model, batches=batches) is None
    assert "traced 3 times" in fail(2, served=tf.function(model), model=model, batches=batches)
    fixed = tf.function(model, input_signature=[tf.TensorSpec([8, 4], tf.float32)])
    assert "refused a batch of 1 rows" in fail(2, served=fixed, model=model, batches=batches)
    assert "should be a tf.function" in fail(2, served=model, model=model, batches=batches)


def test_eager_layer_cost(model, x):
    graph_model = tf.function(model)
    variants = {"eager": lambda: model(x), "tf.function": lambda: graph_model(x)}
    overhead = bench.compare(variants, baseline="eager", repeats=3, number=2)
    us = overhead["eager"].median_s * 1e6 / DEPTH
    ok = dict(variants=variants, graph_model=graph_model, overhead=overhead, us_per_layer=us, model=model, x=x,
              depth=DEPTH)
    assert fail(3, **ok) is None
    built_inside = dict(variants, **{"tf.function": lambda: tf.function(model)(x)})
    assert "built once outside the lambda" in fail(3, **dict(ok, variants=built_inside))
    both_eager = dict(variants, **{"tf.function": lambda: model(x)})
    assert "should call graph_model" in fail(3, **dict(ok, variants=both_eager))
    both_graph = dict(variants, **{"eager": lambda: graph_model(x)})
    assert "'eager' variant should call model itself" in fail(3, **dict(ok, variants=both_graph))
    other_input = dict(variants, **{"tf.function": lambda: graph_model(tf.ones([8, 4]))})
    assert "other values" in fail(3, **dict(ok, variants=other_input))
    graph_median = overhead["tf.function"].median_s * 1e6 / DEPTH
    assert "us_per_layer" in fail(3, **dict(ok, us_per_layer=graph_median))
    assert "us_per_layer" in fail(3, **dict(ok, us_per_layer=us / 1e3))


def test_predict_traces(model):
    ok = dict(plain_traces=3, factor_traces=2, model=model, sizes=[8, 1, 8, 64, 1, 8], factors=[0.5, 2.0, 0.5])
    assert fail(4, **ok) is None
    assert "plain_traces is 6" in fail(4, **dict(ok, plain_traces=6))
    assert "factor_traces is 1" in fail(4, **dict(ok, factor_traces=1))
