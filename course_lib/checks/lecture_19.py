"""Checkers for lecture 19, Keras ``fit`` and ``predict`` at speed."""

from __future__ import annotations

import numpy as np

from course_lib import fitting
from course_lib.checks import exercise, method


def _whole(name, value):
    assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
        f"{name} should be a whole number, got {type(value).__name__}"


@exercise("19", 1, "count the executions",
          "fit's Python loop runs once per execution, and an execution runs steps_per_execution steps.",
          "Split the epoch's steps into executions of SPE steps: is the last one full, and does it still count?")
def count_executions(ends, steps, spe):
    _whole("ends", ends)
    counted = fitting.count_callbacks(spe, steps=steps, batch=4)
    assert ends == counted["end calls"], \
        f"ends is {ends}: the callback runs once per execution of up to {spe} steps, a short last one included"


@exercise("19", 2, "compile for speed",
          "model.compile takes steps_per_execution= and jit_compile= beside optimizer= and loss=.",
          "steps_per_execution is a whole number of steps; jit_compile=True asks for XLA. Then model.fit with "
          "batch_size=, epochs=1, verbose=0 and shuffle=False.")
def compile_for_speed(model, rows, batch, spe):
    assert getattr(model, "compiled", False), "model is not compiled: call model.compile(...) first"
    assert model.steps_per_execution == spe, \
        f"model runs {model.steps_per_execution!r} steps per execution, expected {spe}"
    assert model.jit_compile is True, \
        f"model.jit_compile is {model.jit_compile!r}: ask for XLA in compile (on a CPU \"auto\" leaves it off)"
    assert model.run_eagerly is False, "model runs eagerly: run_eagerly=True is for debugging, not for speed"
    lr = float(np.asarray(model.optimizer.learning_rate))
    assert type(model.optimizer).__name__ == "SGD" and np.isclose(lr, 0.01), \
        f"the optimizer is {type(model.optimizer).__name__} with learning rate {lr:g}; use SGD(0.01)"
    steps = int(model.optimizer.iterations.numpy())
    want = -(-rows // batch)
    assert steps == want, (f"the optimizer ran {steps} steps; one epoch of {rows} rows in batches of {batch} is "
                           f"{want} steps (train once, after compiling)")


@exercise("19", 3, "serve one row",
          "tf.function takes an input_signature: a list with one tf.TensorSpec whose first dimension is None.",
          "Build serve once, outside the lambdas; the comparison keeps each variant's Timing, and .median_s is in "
          "seconds.")
def serve_one_row(serve, variants, latency, saved_us, net, row):
    assert method.is_tf_function(serve), f"serve should be a tf.function, got {type(serve).__name__}"
    names = ["predict", "serve"]
    method.variants_named(variants, names)
    assert method.calls(variants["serve"], serve), \
        "the 'serve' variant should call serve, the tf.function built once outside the lambda"
    code = getattr(variants["predict"], "__code__", None)
    assert code is not None and "predict" in code.co_names and method.calls(variants["predict"], net) \
        and not method.tf_functions_in(variants["predict"]), "the 'predict' variant should call net.predict on the row"
    expected = net(row)
    method.same(method.value_of(variants, "predict"), expected, "the 'predict' variant (net.predict on row)")
    method.same(method.value_of(variants, "serve"), expected, "the 'serve' variant (serve on row)")
    for rows in (1, 3):
        try:
            serve(np.zeros((rows, row.shape[1]), np.float32))
        except (TypeError, ValueError) as exc:
            raise AssertionError(f"serve refused a batch of {rows} rows: leave the batch dimension open ({exc})") \
                from None
    traces = serve.experimental_get_tracing_count()
    assert traces == 1, f"serve traced {traces} times; one signature with an open batch dimension traces once"
    method.comparison(latency, names, "predict", repeats=5)
    method.close(saved_us, (latency["predict"].median_s - latency["serve"].median_s) * 1e6,
                 "saved_us (predict's median minus serve's, in microseconds)")
