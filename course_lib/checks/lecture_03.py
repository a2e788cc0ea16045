"""Checkers of lecture 03's exercises: place and prove, an impossible placement made loud, split the
work by hand, predict soft placement, measure what hopping between devices costs."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib import devices
from course_lib.checks import answers, exercise, method


def _where(tensor, what: str) -> str:
    assert tf.is_tensor(tensor), f"{what} should be a tensor (the result itself), got {type(tensor).__name__}"
    return devices.where(tensor)


@exercise("03", 1, "place a computation and prove where it ran",
          "Look at how lecture 03 pins an operation to a device and reads where a result lives.",
          "Compute inside a device scope for the second logical CPU, then ask the result itself where it is.")
def place_and_prove(product, product_device, m):
    method.same(product, np.asarray(m) @ np.asarray(m), "product")
    where = _where(product, "product")
    assert product_device == where, \
        f"product_device is {product_device!r} but the result says {where!r}: read it from the result"
    assert where == "CPU:1", f"product was computed on {where}, not on the second logical CPU"


@exercise("03", 2, "an impossible placement, made loud",
          "Look at lecture 03's section on soft placement: what happens to an op pinned to a missing device?",
          "A missing device is an error only where TensorFlow may not fall back to another one; lecture 03 "
          "shows how to forbid that for a while, and the error surfaces when the op runs.")
def impossible_placement(error_message):
    assert error_message, "no error was caught: is soft placement off inside the block?"
    assert isinstance(error_message, str), f"store str(exc), got {type(error_message).__name__}"
    assert "Could not satisfy device specification" in error_message, \
        f"this is not the placement error: {error_message[:200]}"
    assert devices.missing_device("GPU").lstrip("/") in error_message, "the error should name the missing GPU"
    assert tf.config.get_soft_device_placement(), "soft placement is still off: turn it on again after the block"


@exercise("03", 3, "split the work across devices",
          "Look at how lecture 03 places each of several computations on its own device.",
          "Loop over the two halves and the two device names together; each reduce_sum runs inside its "
          "own device scope.")
def split_work(partials, total, big):
    assert isinstance(partials, (list, tuple)) and len(partials) == 2, "partials should be a list of 2 partial sums"
    where = [_where(p, "each partial sum") for p in partials]
    assert where == ["CPU:0", "CPU:1"], f"the partial sums ran on {where}, expected CPU:0 then CPU:1"
    b = np.asarray(big)
    method.same([float(p) for p in partials], [b[:500].sum(), b[500:].sum()], "partials")
    method.same(float(total), b.sum(), "total")


@exercise("03", 4, "predict soft placement",
          "Look at lecture 03's section on soft placement: where does an op go when its device is missing?",
          "With soft placement on, TensorFlow picks a device that exists and has a kernel for the op; "
          "name it the way devices.where does.")
def predict_soft_placement(predicted_device, m):
    assert isinstance(predicted_device, str), \
        f"predicted_device should be a short device name like 'CPU:1', got {type(predicted_device).__name__}"
    assert tf.config.get_soft_device_placement(), "soft placement is off: turn it on again first"
    with tf.device(devices.missing_device("GPU")):
        actual = devices.where(m @ m)
    assert predicted_device == actual, f"the product did not run on {predicted_device!r}"


@exercise("03", 5, "measure what hopping between devices costs",
          "Look at lecture 03's section on the cost of moving data between devices.",
          "Let the two functions differ only in where each step runs, so that the gap between their times "
          "is what the moves cost; that gap is spread over every step.")
def hop_cost(variants, comparison, extra_ms_per_step, x, steps):
    method.variants_named(variants, ["stay", "hop"])
    expected = np.asarray(x) * 0.999 ** steps  # the notebook's update scales by 0.999
    for name, device in [("stay", "CPU:0"), ("hop", "CPU:1" if steps % 2 == 0 else "CPU:0")]:
        result = answers.run(f"the {name!r} variant", variants[name])
        method.same(result, expected, f"the {name!r} variant", rtol=1e-4)
        where = _where(result, f"the {name!r} variant's result")
        assert where == device, f"the {name!r} variant's last step ran on {where}, not {device}"
    method.comparison(comparison, ["stay", "hop"], "stay", repeats=5)
    answers.number(extra_ms_per_step, "extra_ms_per_step")
    method.close(extra_ms_per_step,
                 (comparison["hop"].median_s - comparison["stay"].median_s) / steps * 1e3,
                 "extra_ms_per_step (hop median minus stay median, per step, in milliseconds)")
