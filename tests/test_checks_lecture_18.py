"""Lecture 18's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks, precision


def fail(k, **answer):
    return checks.failure("18", k, **answer)


@pytest.fixture(scope="module")
def inputs():
    return (tf.random.stateless_normal([64, 64], seed=[1, 2]), tf.random.stateless_normal([64, 64], seed=[3, 4]))


def test_bfloat16_ratio(inputs):
    a, b = inputs
    product = tf.function(lambda a, b: tf.matmul(a, b))
    a16, b16 = tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16)
    variants = {"float32": lambda: product(a, b), "bfloat16": lambda: product(a16, b16)}
    result = bench.compare(variants, baseline="float32", repeats=3, number=2)
    ok = dict(variants=variants, result=result, ratio=result.speedup("bfloat16"), a=a, b=b)
    assert fail(1, **ok) is None
    cast_inside = dict(variants, bfloat16=lambda: product(tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16)))
    assert "casts its inputs inside the timed call" in fail(1, **dict(ok, variants=cast_inside))
    both_fp32 = dict(variants, bfloat16=lambda: product(a, b))
    assert "computes in float32" in fail(1, **dict(ok, variants=both_fp32))
    eager = dict(variants, bfloat16=lambda: tf.matmul(a16, b16))
    assert "should call a tf.function" in fail(1, **dict(ok, variants=eager))
    built_inside = dict(variants, bfloat16=lambda: tf.function(lambda a, b: tf.matmul(a, b))(a16, b16))
    assert "built once" in fail(1, **dict(ok, variants=built_inside))
    wrong = dict(variants, bfloat16=lambda: product(a16, a16))
    assert "other than a @ b" in fail(1, **dict(ok, variants=wrong))
    inverted = 1 / result.speedup("bfloat16")
    assert "ratio" in fail(1, **dict(ok, ratio=inverted))
    assert "variants should be" in fail(1, **dict(ok, variants={"bfloat16": variants["bfloat16"],
                                                                "float32": variants["float32"]}))


def test_predict_scales():
    gradients = precision.planted_overflow(steps=6, overflow_at=2)
    ok = dict(gradients=gradients, initial_scale=256.0, growth_steps=2)
    right = [r["scale after"] for r in precision.loss_scale_run(gradients, initial_scale=256.0, growth_steps=2)]
    assert fail(2, scales=right, **ok) is None
    assert fail(2, scales=[int(s) for s in right], **ok) is None
    never_falls = [256.0] * 6
    assert "after step 2" in fail(2, scales=never_falls, **ok)
    grows_each_step = [256.0, 128.0, 256.0, 512.0, 1024.0, 2048.0]
    assert "after step 3" in fail(2, scales=grows_each_step, **ok)
    assert "one per step" in fail(2, scales=right[:3], **ok)
    assert "should be a list" in fail(2, scales=128.0, **ok)


@pytest.fixture(scope="module")
def classifier():
    model, x_test, _ = precision.digits_classifier(width=32, epochs=1)
    x, _ = precision.digits_data()
    return model, x[:1400], x_test


def test_representative_dataset(classifier):
    model, x_train, x_test = classifier
    ok = dict(model=model, x_train=x_train, x_test=x_test)

    def reference():
        for row in x_train[:100]:
            yield [row[None, :]]

    assert fail(3, representative=reference, **ok) is None

    def noise():
        rng = np.random.default_rng(0)
        for _ in range(100):
            yield [rng.random((1, 64), dtype=np.float32)]

    def bare_arrays():
        for row in x_train[:100]:
            yield row[None, :]

    def no_batch_axis():
        for row in x_train[:100]:
            yield [row]

    def float64():
        for row in x_train[:100]:
            yield [row[None, :].astype(np.float64)]

    def too_few():
        for row in x_train[:10]:
            yield [row[None, :]]

    assert "not a row of x_train" in fail(3, representative=noise, **ok)
    assert "list holding one array" in fail(3, representative=bare_arrays, **ok)
    assert "shape (64,)" in fail(3, representative=no_batch_axis, **ok)
    assert "float64" in fail(3, representative=float64, **ok)
    assert "at least 50" in fail(3, representative=too_few, **ok)
    assert "generator function" in fail(3, representative=lambda: [[r[None, :]] for r in x_train[:100]], **ok)
