"""Checkers of lecture 00's exercises: time a tf.function, compare in one run, predict the traces."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib import bench, graphs
from course_lib.checks import answers, exercise, method


def _norm_of(x) -> float:
    v = np.asarray(x, dtype=np.float64)
    return float(np.sqrt(np.sum(v * v)))


@exercise("00", 1, "time a tf.function",
          "Look at how lecture 00 times a function with bench.measure and what the Timing it returns holds.",
          "Time a zero-argument function that calls norm(x); the first call is reported apart from the "
          "repeats, and both are in seconds.")
def time_a_tf_function(timing, variant, tracing_ms, norm, x):
    assert isinstance(timing, bench.Timing), f"timing should be what bench.measure returns, got {type(timing).__name__}"
    assert callable(variant), "variant should be the zero-argument function you gave bench.measure"
    assert method.calls(variant, norm), "the function you timed does not call norm"
    method.same(method.value_of({"timed function": variant}, "timed function"), _norm_of(x),
                "the timed function")
    assert len(timing.times_s) >= 5, f"only {len(timing.times_s)} timed repeats; ask for at least 5"
    answers.number(tracing_ms, "tracing_ms")
    method.close(tracing_ms, (timing.first_call_s - timing.median_s) * 1e3,
                 "tracing_ms (first call minus median, in milliseconds)")
    assert tracing_ms > 0, ("the first call was no slower than the median: norm was already traced before "
                            "you measured it. Run the cell that defines norm again, then measure.")


@exercise("00", 2, "compare in one run",
          "Look at how lecture 00 compares variants with bench.compare and reads a speedup from the result.",
          "Give bench.compare a dict of two zero-argument functions, NumPy first; each must compute the same "
          "norm. The speedup is read from that one comparison, not from two separate measurements.")
def compare_in_one_run(variants, comparison, speedup, norm, x):
    method.variants_named(variants, ["numpy", "tf.function"])
    expected = _norm_of(x)
    assert not method.tf_functions_in(variants["numpy"]), "the 'numpy' variant calls a tf.function; use NumPy only"
    value = method.value_of(variants, "numpy")
    assert not tf.is_tensor(value), "the 'numpy' variant returns a TensorFlow tensor; compute it with NumPy"
    method.same(value, expected, "the 'numpy' variant")
    assert method.calls(variants["tf.function"], norm), "the 'tf.function' variant does not call norm"
    method.same(method.value_of(variants, "tf.function"), expected, "the 'tf.function' variant")
    method.comparison(comparison, ["numpy", "tf.function"], "numpy", repeats=5)
    answers.number(speedup, "speedup")
    method.close(speedup, comparison.speedup("tf.function"),
                 "speedup (the numpy median divided by the tf.function median, from comparison)")


@exercise("00", 3, "predict the traces",
          "Look at why lecture 00 times the first call apart: what does a tf.function do on a call it has not "
          "seen before?",
          "A call traces when its signature is new: for a tensor its dtype and shape, for a Python number "
          "its value.")
def predict_the_traces(traced, total, calls):
    assert isinstance(traced, (list, tuple)) and all(isinstance(t, bool) for t in traced), \
        "traced should be a list of True/False, one per call"
    assert len(traced) == len(calls), f"{len(traced)} predictions for {len(calls)} calls"
    fresh = tf.function(total.python_function)
    truth = [row["traced"] == "yes" for row in graphs.traces_per_call(fresh, [(c,) for c in calls])]
    wrong = [i + 1 for i, (t, want) in enumerate(zip(traced, truth)) if t != want]
    assert not wrong, f"your prediction for call(s) {wrong} is wrong"
