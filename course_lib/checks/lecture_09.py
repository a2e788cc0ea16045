"""Checkers for lecture 09, functional models and per-call overhead."""

from __future__ import annotations

import contextlib

import numpy as np
import tensorflow as tf

from course_lib.checks import exercise, method
from course_lib.models import deep_thin


class _LayerCalled(Exception):
    pass


@contextlib.contextmanager
def _layers_forbidden(model):
    """Make every Dense layer of ``model`` raise when called, so a hand-written pass cannot use them."""
    layers = deep_thin.dense_layers(model)

    def refuse(*args, **kwargs):
        raise _LayerCalled

    for layer in layers:
        object.__setattr__(layer, "call", refuse)
    try:
        yield
    finally:
        for layer in layers:
            object.__delattr__(layer, "call")


@exercise("09", 1, "the hand-written forward pass",
          "deep_thin.dense_layers(model) lists the layers in order; each keeps its weights as .kernel and .bias.",
          "A Dense layer is an affine map of its input followed by its activation; what one layer returns is "
          "what the next one reads.")
def hand_written_pass(hand_written, model, x):
    expected = model(x).numpy()
    try:
        with _layers_forbidden(model):
            out = hand_written(x)
    except _LayerCalled:
        raise AssertionError("hand_written calls a Keras layer (or the model): use each layer's kernel and bias "
                             "with plain TensorFlow operations") from None
    out = np.asarray(out)
    assert out.shape == expected.shape, f"output shape {out.shape}, expected {expected.shape}"
    assert np.allclose(out, expected, rtol=1e-5, atol=1e-6), "hand_written does not compute what model computes"


@exercise("09", 2, "one graph for every batch size",
          "tf.function takes an input_signature: a list with one tf.TensorSpec per argument.",
          "Compare the shapes of the batches: which dimension changes from one to the next, and which never "
          "does? Lecture 02 shows how a TensorSpec leaves a dimension open.")
def one_graph(served, model, batches):
    assert method.is_tf_function(served), f"served should be a tf.function, got {type(served).__name__}"
    for batch in batches:
        try:
            out = served(batch)
        except (TypeError, ValueError) as exc:
            raise AssertionError(f"served refused a batch of {batch.shape[0]} rows: {exc}") from None
        assert np.allclose(out.numpy(), model(batch).numpy(), rtol=1e-5, atol=1e-6), \
            "served computes something other than model"
    traces = served.experimental_get_tracing_count()
    assert traces == 1, f"served traced {traces} times for {len(batches)} batch sizes; one trace should serve all"


@exercise("09", 3, "the cost of one eager layer call",
          "bench.compare takes a dict of zero-argument functions; build the tf.function once, before it.",
          "A tf.function made inside the timed lambda would trace at every call, and you would time tracing. "
          "The comparison keeps each variant's Timing; one eager call pays its overhead once per layer.")
def eager_layer_cost(variants, graph_model, overhead, us_per_layer, model, x, depth):
    names = ["eager", "tf.function"]
    method.variants_named(variants, names)
    assert method.is_tf_function(graph_model), \
        f"graph_model should be tf.function(model), got {type(graph_model).__name__}"
    assert method.calls(variants["eager"], model) and not method.tf_functions_in(variants["eager"]), \
        "the 'eager' variant should call model itself, no tf.function"
    assert method.calls(variants["tf.function"], graph_model), \
        "the 'tf.function' variant should call graph_model, the tf.function built once outside the lambda " \
        "(one built inside it traces again at every call)"
    expected = model(x)
    for name in names:
        method.same(method.value_of(variants, name), expected, f"the {name!r} variant (model on x)")
    before = graph_model.experimental_get_tracing_count()
    method.value_of(variants, "tf.function")
    assert graph_model.experimental_get_tracing_count() == before, \
        "the 'tf.function' variant traces again at every call: call graph_model on the same x"
    method.comparison(overhead, names, "eager", repeats=3)
    method.close(us_per_layer, overhead["eager"].median_s * 1e6 / depth,
                 "us_per_layer (the eager median in microseconds over DEPTH)")


@exercise("09", 4, "predict the trace count",
          "A tf.function keeps one graph per input signature it has seen: look at what differs between calls.",
          "Walk through the calls in order and mark each one that brings something the function has not seen. "
          "Lecture 02 shows what counts as new for a tensor and for a Python number.")
def predict_traces(plain_traces, factor_traces, model, sizes, factors):
    for name, value in (("plain_traces", plain_traces), ("factor_traces", factor_traces)):
        assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
            f"{name} should be a whole number, got {type(value).__name__}"
    width = deep_thin.dense_layers(model)[0].kernel.shape[0]
    plain = tf.function(model)
    for n in sizes:
        plain(tf.zeros([n, width]))
    scaled = tf.function(lambda x, factor: model(x) * factor)
    for factor in factors:
        scaled(tf.zeros([8, width]), factor)
    want_plain, want_factor = plain.experimental_get_tracing_count(), scaled.experimental_get_tracing_count()
    assert plain_traces == want_plain, \
        f"plain_traces is {plain_traces}: a call traces only for a shape it has not seen before"
    assert factor_traces == want_factor, \
        f"factor_traces is {factor_traces}: the batch is the same each time; what about the Python floats?"
