"""Checkers of lecture 02's exercises: stop a retrace, a variable created lazily, a loop AutoGraph
converts, predict what runs at trace time, measure what a retrace costs."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib import graphs
from course_lib.checks import answers, exercise, method


@exercise("02", 1, "stop the retracing",
          "Look at lecture 02's section on what makes a tf.function retrace, and how to fix its signature.",
          "Describe the arguments once, before any call: vectors whose length may vary, and a rate that "
          "becomes a scalar tensor instead of a Python value.")
def stop_retracing(momentum_update_fixed, momentum_update):
    assert method.is_tf_function(momentum_update_fixed), \
        f"momentum_update_fixed should be a tf.function, got {type(momentum_update_fixed).__name__}"
    rng = np.random.default_rng(0)
    for n, rate in [(4, 0.9), (4, 0.8), (8, 0.99), (8, 0.5)]:
        v, g = (tf.constant(rng.standard_normal(n), tf.float32) for _ in range(2))
        got = answers.run(f"momentum_update_fixed on vectors of length {n}", momentum_update_fixed, v, g, rate)
        method.same(got, momentum_update(v, g, rate), "momentum_update_fixed")
    traces = momentum_update_fixed.experimental_get_tracing_count()
    assert traces == 1, f"it traced {traces} times for four calls; it should trace once"


@exercise("02", 2, "a variable created in a tf.function",
          "Look at lecture 02's section on variables in tf.function: when may a function create one?",
          "Create the variable only on the first trace (keep a placeholder for it from __init__ and test it), "
          "and keep add a tf.function.")
def running_total(RunningTotal):
    acc = answers.run("RunningTotal()", RunningTotal)
    assert isinstance(acc, tf.Module), "RunningTotal should be a tf.Module"
    assert method.is_tf_function(getattr(acc, "add", None)), \
        "add should be a tf.function method: the point is a variable created inside a graph"
    first = answers.run("add", acc.add, tf.constant([1.0, 2.0]))
    second = answers.run("a second add", acc.add, tf.constant([10.0, 20.0]))
    method.same(first, np.array([1.0, 2.0]), "the first add")
    method.same(second, np.array([11.0, 22.0]), "the second add (the running total)")
    assert len(acc.variables) == 1, f"expected one variable in the module, found {len(acc.variables)}"
    other = answers.run("RunningTotal()", RunningTotal)
    got = answers.run("add on a new RunningTotal with a vector of 3", other.add, tf.constant([5.0, 5.0, 5.0]))
    method.same(got, np.array([5.0, 5.0, 5.0]), "add on a new RunningTotal (shaped like its first x)")


@exercise("02", 3, "a loop AutoGraph must convert",
          "Look at lecture 02's section on AutoGraph: which Python statements on tensors become graph ops?",
          "A Python while whose condition is a tensor becomes a loop op; keep the counter a tensor too.")
def doublings(doublings):
    assert method.is_tf_function(doublings), f"doublings should be a tf.function, got {type(doublings).__name__}"
    for x, limit, expected in [(1.0, 1.0, 0), (1.0, 8.0, 3), (3.0, 100.0, 6), (0.5, 0.7, 1)]:
        got = answers.run(f"doublings({x}, {limit})", doublings, tf.constant(x), tf.constant(limit))
        assert tf.is_tensor(got) and got.dtype == tf.int32, \
            f"return an int32 tensor, got {getattr(got, 'dtype', type(got).__name__)}"
        assert int(got) == expected, f"doublings({x}, {limit}) returned {int(got)}"
    types = answers.run("tracing doublings for float32 scalars", graphs.op_types, doublings,
                        tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.float32))
    assert any("While" in t for t in types), f"no While op in the graph ({sorted(types)}): loop on tensors"


@exercise("02", 4, "predict what runs at trace time",
          "Look at lecture 02's section on Python side effects: which code runs when a function traces, "
          "and which runs each time it executes?",
          "A Python print is Python: it runs once per trace. tf.print is an op in the graph: it runs per "
          "call. Work out which of the calls trace.")
def predict_prints(python_prints, tf_prints, calls):
    answers.number(python_prints, "python_prints", integer=True)
    answers.number(tf_prints, "tf_prints", integer=True)
    # the traces depend on the arguments only, so a silent function with shout's signature counts them
    rows = graphs.traces_per_call(tf.function(tf.identity), [(c,) for c in calls])
    assert tf_prints == len(calls), "your count of tf.print lines is wrong"
    assert python_prints == rows[-1]["traces so far"], "your count of Python print lines is wrong"


@exercise("02", 5, "measure what a retrace costs",
          "Look at lecture 02's retracing measurement: what makes a call trace again?",
          "Both variants call momentum_update on v and g. One passes a new Python float at every call, the "
          "other the same kind of value as a tensor; bench.compare times them in one run.")
def retrace_cost(variants, comparison, retrace_ms, momentum_update):
    method.variants_named(variants, ["tensor", "python float"])
    for name, fn in variants.items():
        assert method.calls(fn, momentum_update), f"the {name!r} variant does not call momentum_update"
        assert method.value_of(variants, name) is not None, f"the {name!r} variant returns nothing"
    for name, want in [("tensor", 0), ("python float", 2)]:
        before = momentum_update.experimental_get_tracing_count()
        with graphs.captured_tf_warnings():  # the retracing warning is the point, not news here
            method.value_of(variants, name)
            method.value_of(variants, name)
        traced = momentum_update.experimental_get_tracing_count() - before
        if want:
            assert traced == want, (f"the 'python float' variant traced {traced} times in two calls: pass a "
                                    "new Python float at every call, so each call retraces")
        else:
            assert traced == 0, f"the 'tensor' variant traced {traced} times in two calls: pass the rate as a tensor"
    method.comparison(comparison, ["tensor", "python float"], "tensor", repeats=3)
    answers.number(retrace_ms, "retrace_ms")
    method.close(retrace_ms, (comparison["python float"].median_s - comparison["tensor"].median_s) * 1e3,
                 "retrace_ms (python float median minus tensor median, in milliseconds)")
