"""Lecture 00's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks

x = tf.random.stateless_normal([1000], seed=[1, 2])
x_np = x.numpy()


def fresh_norm():
    @tf.function
    def norm(v):
        return tf.sqrt(tf.reduce_sum(v * v))
    return norm


def failure(k, **answer):
    return checks.failure("00", k, **answer)


@pytest.fixture(scope="module")
def timed():
    norm = fresh_norm()
    variant = lambda: norm(x)  # noqa: E731
    timing = bench.measure(variant, name="norm", repeats=5)
    return dict(timing=timing, variant=variant, tracing_ms=(timing.first_call_s - timing.median_s) * 1e3,
                norm=norm, x=x)


def test_time_a_tf_function(timed):
    assert failure(1, **timed) is None
    assert "does not call norm" in failure(1, **dict(timed, variant=lambda: 0))
    assert "does not call norm" in failure(1, **dict(timed, variant=lambda: tf.norm(x)))
    assert "tracing_ms" in failure(1, **dict(timed, tracing_ms=timed["tracing_ms"] / 1e3))  # seconds
    short = bench.Timing("norm", timed["timing"].first_call_s, timed["timing"].times_s[:3], 1)
    assert "only 3 timed repeats" in failure(1, **dict(timed, timing=short))
    warm = bench.Timing("norm", 1e-4, [2e-4] * 5, 1)  # measured after the function had traced
    assert "already traced" in failure(1, **dict(timed, timing=warm, tracing_ms=-0.1))


@pytest.fixture(scope="module")
def compared():
    norm = fresh_norm()
    variants = {"numpy": lambda: np.sqrt(np.sum(x_np * x_np)), "tf.function": lambda: norm(x)}
    comparison = bench.compare(variants, baseline="numpy", repeats=5, number=2)
    return dict(variants=variants, comparison=comparison, speedup=comparison.speedup("tf.function"), norm=norm, x=x)


def test_compare_in_one_run(compared):
    assert failure(2, **compared) is None
    v = compared["variants"]
    assert "'numpy' variant returns other values" in failure(2, **dict(compared, variants={**v, "numpy": lambda: 0}))
    norm = compared["norm"]
    assert "'numpy' variant calls a tf.function" in failure(
        2, **dict(compared, variants={**v, "numpy": lambda: norm(x).numpy()}))
    assert "does not call norm" in failure(2, **dict(compared, variants={**v, "tf.function": lambda: tf.norm(x)}))
    assert "speedup" in failure(2, **dict(compared, speedup=1 / compared["speedup"]))
    other = bench.compare(v, baseline="tf.function", repeats=5, number=2)
    assert "baseline should be 'numpy'" in failure(2, **dict(compared, comparison=other))
    assert "variants should be ['numpy', 'tf.function']" in failure(
        2, **dict(compared, variants={"tf.function": v["tf.function"], "numpy": v["numpy"]}))


def test_predict_the_traces():
    @tf.function
    def total(v):
        return tf.reduce_sum(v)

    calls = [tf.ones([3]), tf.ones([3]) * 2, tf.ones([4]), tf.ones([4], tf.float64), 3.0, 3.0]
    assert failure(3, traced=[True, False, True, True, True, False], total=total, calls=calls) is None
    assert "call(s) [3]" in failure(3, traced=[True, False, False, True, True, False], total=total, calls=calls)
    assert "call(s) [6]" in failure(3, traced=[True, False, True, True, True, True], total=total, calls=calls)
    assert "6 calls" in failure(3, traced=[True, False], total=total, calls=calls)
    assert "list of True/False" in failure(3, traced=3, total=total, calls=calls)
