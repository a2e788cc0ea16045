"""Checkers of lecture 06's exercises: noise that changes inside a graph, measure the reload mistake
after compiling, predict what NumPy noise becomes in a graph."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.checks import answers, exercise, method
from course_lib.models import gan


@exercise("06", 1, "noise that changes inside a graph",
          "Look at lecture 06's section on random numbers in a tf.function: what is baked into the graph, "
          "and what runs at every call?",
          "Draw the noise with a TensorFlow random op whose state lives outside the function (a generator "
          "created once, before the function), not with NumPy.")
def noise_in_graph(noise, latent_dim):
    assert method.is_tf_function(noise), f"noise should be a tf.function, got {type(noise).__name__}"
    a, b, c = (np.asarray(answers.run("noise()", noise)) for _ in range(3))
    assert a.shape == (4, latent_dim), f"the noise has shape {a.shape}, expected (4, {latent_dim})"
    assert np.all(np.abs(np.stack([a, b, c])) <= 1.0), "the noise has values outside [-1, 1]"
    assert not np.array_equal(a, b) and not np.array_equal(b, c), "the noise did not change between calls"
    traces = noise.experimental_get_tracing_count()
    assert traces == 1, f"noise traced {traces} times; it should trace once"


@exercise("06", 2, "the mistake after compiling",
          "Look at lecture 06's journey: which step reloads the data set, and how is a step timed?",
          "Both steps call the same compiled update with the same kind of arrays; they differ only in where "
          "the real batch comes from. One bench.compare times both; the share comes from its medians.")
def mistake_after_compiling(compiled_update, mistake, fixed, comparison, reload_share):
    assert method.is_tf_function(compiled_update), \
        f"compiled_update should be a tf.function, got {type(compiled_update).__name__}"
    for name, step in [("mistake", mistake), ("fixed", fixed)]:
        assert method.calls(step, compiled_update), f"{name}() does not call compiled_update"
    with answers.counting(gan, "fetch_real_batch_reloading") as reloads, \
            answers.counting(gan, "fetch_real_batch") as fetches:
        out = answers.run("mistake()", mistake)
        assert reloads.call_count >= 1, "mistake() does not reload the data set (gan.fetch_real_batch_reloading)"
        assert out is not None, "mistake() returns nothing: return the update's result, so that bench forces it"
        reloads.reset_mock()
        out = answers.run("fixed()", fixed)
        assert reloads.call_count == 0, "fixed() reloads the data set: draw from the images in memory"
        assert fetches.call_count >= 1, "fixed() does not draw its batch with gan.fetch_real_batch"
        assert out is not None, "fixed() returns nothing: return the update's result, so that bench forces it"
    method.comparison(comparison, ["fixed", "mistake"], "fixed", repeats=5)
    answers.number(reload_share, "reload_share")
    method.close(reload_share, 1 - comparison["fixed"].median_s / comparison["mistake"].median_s,
                 "reload_share (1 - fixed median / mistake median)")
    traces = compiled_update.experimental_get_tracing_count()
    assert traces == 1, f"compiled_update traced {traces} times: pass arrays of the same shape and dtype every call"


@exercise("06", 3, "predict what NumPy noise becomes in a graph",
          "Look at what lecture 06 says happens to a NumPy call inside a tf.function.",
          "NumPy runs while the function traces; its result becomes a constant of the graph. How many "
          "times do these calls trace?")
def predict_numpy_noise(distinct_batches, traces, numpy_noise, calls):
    answers.number(distinct_batches, "distinct_batches", integer=True)
    answers.number(traces, "traces", integer=True)
    fresh = tf.function(numpy_noise.python_function)
    results = {np.asarray(fresh()).tobytes() for _ in range(calls)}
    assert traces == fresh.experimental_get_tracing_count(), "your count of traces is wrong"
    assert distinct_batches == len(results), "your count of different batches is wrong"
