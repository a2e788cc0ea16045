"""Lecture 02's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import itertools

import tensorflow as tf

from course_lib import bench, checks, graphs

SPEC = tf.TensorSpec([None], tf.float32)


def failure(k, **answer):
    return checks.failure("02", k, **answer)


def momentum(v, g, rate):
    return rate * v + (1.0 - rate) * g


def test_stop_retracing():
    reference = tf.function(momentum, input_signature=[SPEC, SPEC, tf.TensorSpec([], tf.float32)])
    assert failure(1, momentum_update_fixed=reference, momentum_update=tf.function(momentum)) is None
    assert "traced 4 times" in failure(1, momentum_update_fixed=tf.function(momentum),
                                       momentum_update=tf.function(momentum))
    fixed_length = tf.function(momentum, input_signature=[tf.TensorSpec([4], tf.float32)] * 2
                               + [tf.TensorSpec([], tf.float32)])
    assert "length 8 raised" in failure(1, momentum_update_fixed=fixed_length, momentum_update=tf.function(momentum))
    wrong_formula = tf.function(lambda v, g, rate: rate * g + (1.0 - rate) * v,
                                input_signature=[SPEC, SPEC, tf.TensorSpec([], tf.float32)])
    assert "other values" in failure(1, momentum_update_fixed=wrong_formula, momentum_update=tf.function(momentum))


def running_total(decorate=True, lazy=True):
    def add(self, x):
        if self.total is None or not lazy:
            self.total = tf.Variable(tf.zeros_like(x))
        self.total.assign_add(x)
        return self.total.read_value()

    def init(self):
        tf.Module.__init__(self)
        self.total = None

    return type("RunningTotal", (tf.Module,), {"__init__": init, "add": tf.function(add) if decorate else add})


def test_running_total():
    assert failure(2, RunningTotal=running_total()) is None
    assert "should be a tf.function method" in failure(2, RunningTotal=running_total(decorate=False))
    assert "raised ValueError" in failure(2, RunningTotal=running_total(lazy=False))

    class FixedShape(tf.Module):
        def __init__(self):
            super().__init__()
            self.total = tf.Variable(tf.zeros([2]))

        @tf.function
        def add(self, x):
            self.total.assign_add(x)
            return self.total.read_value()

    assert "vector of 3 raised" in failure(2, RunningTotal=FixedShape)


def test_doublings():
    @tf.function
    def doublings(x, limit):
        count = tf.constant(0)
        while x < limit:
            x = x * 2.0
            count += 1
        return count

    assert failure(3, doublings=doublings) is None

    @tf.function
    def floats(x, limit):
        count = tf.constant(0.0)
        while x < limit:
            x, count = x * 2.0, count + 1.0
        return count

    assert "int32" in failure(3, doublings=floats)

    @tf.function
    def unrolled(x, limit):
        count = tf.constant(0)
        for _ in range(10):
            below = x < limit
            count += tf.cast(below, tf.int32)
            x = tf.where(below, x * 2.0, x)
        return count

    assert "no While op" in failure(3, doublings=unrolled)
    off_by_one = tf.function(lambda x, limit: doublings(x, limit) + 1)
    assert "doublings(1.0, 1.0) returned 1" in failure(3, doublings=off_by_one)


def test_predict_prints():
    calls = [1, 2, 2, tf.constant(1), tf.constant(2)]
    assert failure(4, python_prints=3, tf_prints=5, calls=calls) is None
    assert "Python print" in failure(4, python_prints=5, tf_prints=5, calls=calls)
    assert "tf.print" in failure(4, python_prints=3, tf_prints=3, calls=calls)
    assert "whole number" in failure(4, python_prints="3", tf_prints=5, calls=calls)


def test_retrace_cost():
    update = tf.function(momentum)
    v, g = tf.ones([4]), tf.zeros([4])
    step = itertools.count(1)
    variants = {"tensor": lambda: update(v, g, tf.constant(0.9)),
                "python float": lambda: update(v, g, 1.0 / (next(step) + 1))}
    with graphs.captured_tf_warnings():
        comparison = bench.compare(variants, baseline="tensor", repeats=3, number=1)
        retrace_ms = (comparison["python float"].median_s - comparison["tensor"].median_s) * 1e3
        answer = dict(variants=variants, comparison=comparison, retrace_ms=retrace_ms, momentum_update=update)
        assert failure(5, **answer) is None
        same_float = {**variants, "python float": lambda: update(v, g, 0.5)}
        assert "pass a new Python float" in failure(5, **dict(answer, variants=same_float))
        float_as_tensor = {**variants, "tensor": lambda: update(v, g, 1.0 / (next(step) + 1))}
        assert "'tensor' variant traced 2 times" in failure(5, **dict(answer, variants=float_as_tensor))
        other = tf.function(momentum)
        assert "does not call momentum_update" in failure(
            5, **dict(answer, variants={**variants, "tensor": lambda: other(v, g, tf.constant(0.9))}))
        assert "retrace_ms" in failure(5, **dict(answer, retrace_ms=-retrace_ms))
