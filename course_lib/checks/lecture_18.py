"""Checkers for lecture 18, reduced precision."""

from __future__ import annotations

import inspect

import numpy as np
import tensorflow as tf

from course_lib import precision
from course_lib.checks import exercise, method


def _tensors_in(fn) -> list:
    return [o for o in method.referenced(fn) if isinstance(o, (tf.Tensor, tf.Variable))]


@exercise("18", 1, "the bfloat16 ratio, measured the right way",
          "Cast the inputs to bfloat16 once, before bench.compare; each variant then calls a tf.function built "
          "once on inputs of its own dtype.",
          "A cast inside the lambda is timed with the product. The speedup of bfloat16 over float32 is "
          "result.speedup('bfloat16'), the float32 median over the bfloat16 one.")
def bfloat16_ratio(variants, result, ratio, a, b):
    names = ["float32", "bfloat16"]
    method.variants_named(variants, names)
    expected = tf.matmul(tf.cast(a, tf.float32), tf.cast(b, tf.float32)).numpy()
    for name in names:
        assert method.tf_functions_in(variants[name]), \
            f"the {name!r} variant should call a tf.function built once outside the lambda"
        value = method.value_of(variants, name)
        assert value is not None, f"the {name!r} variant returns nothing: return the product, so that bench forces it"
        assert value.dtype == tf.as_dtype(name), \
            f"the {name!r} variant computes in {value.dtype.name}; its product should be {name}"
        got = tf.cast(value, tf.float32).numpy()
        close = np.allclose(got, expected, rtol=5e-2, atol=5e-2 * np.abs(expected).max())
        assert got.shape == expected.shape and close, \
            f"the {name!r} variant computes something other than a @ b"
    narrow = [t for t in _tensors_in(variants["bfloat16"]) if t.dtype == tf.bfloat16]
    assert narrow, ("the 'bfloat16' variant casts its inputs inside the timed call: cast a and b to bfloat16 once, "
                    "before bench.compare, and pass those tensors")
    for fn in method.tf_functions_in(variants["bfloat16"]):
        before = fn.experimental_get_tracing_count()
        method.value_of(variants, "bfloat16")
        assert fn.experimental_get_tracing_count() == before, \
            "the 'bfloat16' variant traces again at every call: build the tf.function once, outside the lambda"
    method.comparison(result, names, "float32", repeats=3)
    method.close(ratio, result.speedup("bfloat16"), "ratio (the speedup of bfloat16 over float32 from result)")


@exercise("18", 2, "predict the dynamic loss scale",
          "A dynamic LossScaleOptimizer halves its scale at a step whose gradients are not finite and skips "
          "that update; after dynamic_growth_steps finite steps in a row it doubles the scale.",
          "Count the finite steps since the start or since the last change of the scale: the count starts "
          "again at zero after the overflow and after each doubling.")
def predict_scales(scales, gradients, initial_scale, growth_steps):
    assert isinstance(scales, (list, tuple)), f"scales should be a list of numbers, got {type(scales).__name__}"
    assert len(scales) == len(gradients), f"scales has {len(scales)} entries; give one per step ({len(gradients)})"
    run = precision.loss_scale_run(gradients, initial_scale=initial_scale, growth_steps=growth_steps)
    want = [r["scale after"] for r in run]
    for step, (got, expected) in enumerate(zip(scales, want), start=1):
        assert isinstance(got, (int, float, np.number)) and not isinstance(got, bool), \
            f"the scale after step {step} should be a number, got {type(got).__name__}"
        assert float(got) == expected, (f"the scale after step {step} is not {float(got):g}: look at whether that "
                                        "step's gradient was finite and how many finite steps came before it")


@exercise("18", 3, "a representative dataset for full-integer quantization",
          "The converter calls representative() and reads what it yields: each item a list with one float32 array "
          "shaped like one input, (1, 64).",
          "Yield real inputs, rows of x_train with a batch axis added (row[None, :]), not random numbers: the "
          "converter picks each int8 range from what these rows make the model compute.")
def representative_dataset(representative, model, x_train, x_test):
    assert callable(representative), \
        f"representative should be a function (a generator), got {type(representative).__name__}"
    assert inspect.isgeneratorfunction(representative), \
        "representative should yield its samples (a generator function), not return them"
    items = list(representative())
    assert len(items) >= 50, f"representative yields {len(items)} samples; give the converter at least 50 rows"
    rows = set(map(bytes, np.asarray(x_train, np.float32)))
    for i, item in enumerate(items):
        assert isinstance(item, (list, tuple)) and len(item) == 1, \
            f"sample {i} should be a list holding one array (one per model input), got {type(item).__name__}"
        arr = np.asarray(item[0])
        assert arr.shape == (1, 64), f"sample {i} has shape {arr.shape}; one input row is (1, 64)"
        assert arr.dtype == np.float32, f"sample {i} is {arr.dtype}; the model takes float32"
        assert bytes(arr[0]) in rows, \
            f"sample {i} is not a row of x_train: calibrate on real inputs, the ranges the model will see"
    lite = precision.Lite.of("full integer int8", precision.convert(model, "full integer int8",
                                                                     representative=representative))
    reference = model(x_test[:60]).numpy()
    got = np.concatenate([lite(x_test[i:i + 1]) for i in range(min(60, len(x_test)))])
    gap = float(np.max(np.abs(got - reference)))
    assert gap <= precision.AGREEMENT_BOUND, \
        f"the quantized model's outputs differ from float32's by up to {gap:.3g}, past the bound"
