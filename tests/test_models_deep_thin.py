"""The deep thin MLP: three ways to write it compute one function; shapes; training."""

import sys

import numpy as np
import pytest
import tensorflow as tf

from course_lib.models import deep_thin as dt


@pytest.fixture(scope="module")
def models():
    return dt.same_function(depth=40, seed=3)


@pytest.mark.slow
def test_three_kinds_compute_the_same_function(models):
    x = tf.random.stateless_normal([8, 4], seed=[1, 2])
    reference = models["sequential"](x).numpy()
    assert reference.std() > 1e-3, "the signal must survive the depth, or equality proves nothing"
    for kind, model in models.items():
        np.testing.assert_allclose(model(x).numpy(), reference, rtol=1e-6, atol=1e-7, err_msg=kind)
    np.testing.assert_allclose(dt.generated_forward(models["functional"])(x).numpy(), reference,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dt.graph_forward(models["functional"])(x).numpy(), reference,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dt.graph_forward(models["functional"], jit_compile=True)(x).numpy(), reference,
                               rtol=1e-4, atol=1e-6)


def test_different_weights_give_a_different_function():
    a, b = dt.build("sequential", 10, seed=0), dt.build("subclassed", 10, seed=1)
    x = tf.ones([2, 4])
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    dt.copy_weights(a, b)
    np.testing.assert_allclose(a(x).numpy(), b(x).numpy(), rtol=1e-6)


def test_shapes_and_layer_order(models):
    for kind, model in models.items():
        assert model(tf.zeros([5, 4])).shape == (5, 4), kind
        layers = dt.dense_layers(model)
        assert [layer.name for layer in layers[:3]] == ["dense_0000", "dense_0001", "dense_0002"], kind
        assert len(layers) == 40 and len(model.trainable_variables) == 80, kind
    wide = dt.build("functional", depth=3, width=6)
    assert wide(tf.zeros([2, 6])).shape == (2, 6)


def test_generated_source_has_one_line_per_layer():
    source = dt.forward_source(dt.functional(depth=3))
    assert source.splitlines() == [
        "def forward(x, w):",
        "    x = tf.tanh(tf.nn.bias_add(tf.matmul(x, w[0]), w[1]))",
        "    x = tf.tanh(tf.nn.bias_add(tf.matmul(x, w[2]), w[3]))",
        "    x = tf.tanh(tf.nn.bias_add(tf.matmul(x, w[4]), w[5]))",
        "    return x",
    ]
    assert "tf.nn.relu" in dt.forward_source(dt.functional(depth=2, activation="relu"))
    assert "tanh" not in dt.forward_source(dt.functional(depth=2, activation="linear"))


@pytest.mark.parametrize("kind", dt.KINDS)
def test_a_few_steps_lower_the_loss(kind):
    x, y = dt.toy_data(n=128)
    losses = dt.train(dt.build(kind, depth=8), x, y, steps=8)
    assert len(losses) == 8 and losses[-1] < losses[0]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="unknown kind"):
        dt.build("recurrent")
    with pytest.raises(ValueError, match="depth must be"):
        dt.sequential(depth=0)
    with pytest.raises(ValueError, match="unknown activation"):
        dt.functional(depth=2, activation="swish")
    with pytest.raises(ValueError, match="same depth"):
        dt.copy_weights(dt.sequential(3), dt.functional(4))
    with pytest.raises(ValueError, match="same width"):
        dt.copy_weights(dt.sequential(3, width=4), dt.functional(3, width=5))


def test_every_variant_builds_a_callable_of_the_right_shape():
    builders = dt.variants()
    assert list(builders) == ["Sequential, eager", "Functional, eager", "subclassed, eager",
                              "generated ops, eager", "tf.function", "tf.function + XLA"]
    outputs = [builder(depth=6, batch=3)().numpy() for builder in builders.values()]
    for out in outputs:
        assert out.shape == (3, 4)
    for out in outputs[1:]:
        np.testing.assert_allclose(out, outputs[1], rtol=1e-4, atol=1e-6)


def test_deeper_than_the_recursion_limit_builds_and_restores_it():
    # Keras maps a Functional graph with one Python frame per layer; lower the limit so that
    # a cheap model stands in for a 1000-layer one
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        model = dt.functional(depth=300)
        assert sys.getrecursionlimit() == 300
    finally:
        sys.setrecursionlimit(old)
    assert len(dt.dense_layers(model)) == 300


def test_call_counts_see_the_same_ops_and_the_python_keras_adds(models):
    """Every eager variant enters the runtime as often per layer; Keras adds Python calls, not ops."""
    x = tf.ones([1, 4])
    counts = {kind: dt.call_counts(lambda m=m: m(x), calls=2) for kind, m in models.items()}
    generated = dt.generated_forward(models["functional"])
    lean = dt.call_counts(lambda: generated(x), calls=2)
    assert {c["runtime entries"] for c in counts.values()} == {lean["runtime entries"]}
    # two variable reads, a matmul, a bias add and a tanh per layer, and bias_add's fast path gives up once
    assert lean["runtime entries"] == 6 * 40
    assert all(c["Python function calls"] > 2 * lean["Python function calls"] for c in counts.values())
    with pytest.raises(ValueError, match="calls must be"):
        dt.call_counts(lambda: None, calls=0)
