"""Checkers of lecture 01's exercises: wrap and measure, a training step as a graph, debug a graph
eagerly, predict what tracing does to a Python loop."""

from __future__ import annotations

import tensorflow as tf

from course_lib import graphs
from course_lib.checks import answers, exercise, method


@exercise("01", 1, "wrap it and measure it",
          "Look at how lecture 01 makes a graph of a Python function and compares it with the eager one.",
          "Each variant is a zero-argument function: the eager one calls horner, the other calls your "
          "tf.function; both go into one bench.compare with the eager variant as the baseline.")
def wrap_and_measure(horner_graph, variants, comparison, horner, x):
    assert method.is_tf_function(horner_graph), \
        f"horner_graph should be a tf.function of horner, got {type(horner_graph).__name__}"
    expected = answers.run("horner(x)", horner, x)
    method.same(answers.run("horner_graph(x)", horner_graph, x), expected, "horner_graph")
    method.variants_named(variants, ["eager", "tf.function"])
    assert not method.tf_functions_in(variants["eager"]), "the 'eager' variant calls a tf.function"
    assert method.calls(variants["eager"], horner), "the 'eager' variant does not call horner"
    assert method.calls(variants["tf.function"], horner_graph), \
        "the 'tf.function' variant does not call horner_graph, so it measures something else"
    for name in variants:
        method.same(method.value_of(variants, name), expected, f"the {name!r} variant")
    method.comparison(comparison, ["eager", "tf.function"], "eager", repeats=3)


@exercise("01", 2, "a training step as one graph",
          "Look at how lecture 01 turns a Keras training step into a graph and how often it traces.",
          "Wrap the step once, outside the loop, and call that same function three times; float() turns a "
          "scalar tensor into a Python float.")
def train_step_as_graph(train_step_graph, losses):
    assert method.is_tf_function(train_step_graph), \
        f"train_step_graph should be a tf.function, got {type(train_step_graph).__name__}"
    assert isinstance(losses, (list, tuple)) and len(losses) == 3, "losses should be a list of the three losses"
    assert all(isinstance(v, float) for v in losses), \
        f"losses should be Python floats, got {[type(v).__name__ for v in losses]}"
    traces = train_step_graph.experimental_get_tracing_count()
    assert traces == 1, f"train_step_graph traced {traces} times; the same shapes every call need one trace"
    assert losses[0] > losses[1] > losses[2], f"the loss should fall on a repeated batch: {losses}"


@exercise("01", 3, "look inside a graph while it runs",
          "Look at lecture 01's section on debugging: what runs a tf.function's Python body on every call?",
          "Use the course's context manager that runs functions eagerly only inside a with block, and call "
          "standardise(data) inside it.")
def look_inside(spread, seen_spreads):
    assert seen_spreads, "seen_spreads is empty: standardise has not run yet"
    values = [float(s) for s in seen_spreads if hasattr(s, "numpy")]
    assert values, ("only symbolic tensors were collected (a graph's Python runs only while tracing): "
                    "run the function eagerly")
    answers.number(spread, "spread")
    assert spread == values[-1], "spread should be the last value standardise collected in seen_spreads, as a float"
    assert abs(spread - 2.0) < 1e-6, f"the spread collected is {spread}; the spread of data is 2.0"
    assert not tf.config.functions_run_eagerly(), \
        "functions still run eagerly everywhere: switch it back on afterwards (a with block does that)"


@exercise("01", 4, "predict the graph of a Python loop",
          "Look at what lecture 01 says happens to Python code while a tf.function traces.",
          "A Python for-loop over a Python list runs while tracing: "
          "count what each of its iterations adds to the graph.")
def predict_graph(predicted_muls, has_while, horner, x):
    answers.number(predicted_muls, "predicted_muls", integer=True)
    assert isinstance(has_while, bool), f"has_while should be True or False, got {type(has_while).__name__}"
    ops = graphs.op_types(tf.function(horner), tf.TensorSpec(x.shape, x.dtype))
    assert has_while == any("While" in op for op in ops), "your prediction of a While op is wrong"
    assert predicted_muls == ops.get("Mul", 0), f"the graph does not hold {predicted_muls} Mul ops"
