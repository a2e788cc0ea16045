"""Lecture 03's checkers: the reference answers pass, plausible wrong answers fail and say why.

The exercises need two logical CPUs, which must be made before TensorFlow starts, so the answers are
checked in a fresh process (``processes.run``) that returns each checker's complaint.
"""

import textwrap

import pytest

from course_lib import processes

CHILD = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf
    from course_lib import bench, checks, devices

    devices.virtual_cpus(2)
    f = lambda k, **a: checks.failure("03", k, **a)
    out = {}
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.device("/CPU:1"):
        product = m @ m
    with tf.device("/CPU:0"):
        on_cpu0 = m @ m
    out["1 ok"] = f(1, product=product, product_device="CPU:1", m=m)
    out["1 wrong device"] = f(1, product=on_cpu0, product_device="CPU:0", m=m)
    out["1 typed name"] = f(1, product=on_cpu0, product_device="CPU:1", m=m)
    out["1 numpy"] = f(1, product=product.numpy(), product_device="CPU:1", m=m)

    error = None
    with devices.soft_placement(False):
        try:
            with tf.device(devices.missing_device("GPU")):
                (m @ m).numpy()
        except tf.errors.InvalidArgumentError as exc:
            error = str(exc)
    out["2 ok"] = f(2, error_message=error)
    out["2 nothing caught"] = f(2, error_message=None)
    out["2 other error"] = f(2, error_message="Invalid argument: shapes do not match")
    tf.config.set_soft_device_placement(False)
    out["2 left off"] = f(2, error_message=error)
    tf.config.set_soft_device_placement(True)

    big = tf.reshape(tf.range(1000 * 8, dtype=tf.float32), [1000, 8])
    parts = []
    for i, rows in enumerate([big[:500], big[500:]]):
        with tf.device(f"/CPU:{i}"):
            parts.append(tf.reduce_sum(rows))
    out["3 ok"] = f(3, partials=parts, total=parts[0] + parts[1], big=big)
    with tf.device("/CPU:0"):
        same = [tf.reduce_sum(big[:500]), tf.reduce_sum(big[500:])]
    out["3 one device"] = f(3, partials=same, total=same[0] + same[1], big=big)
    with tf.device("/CPU:1"):
        wrong_half = tf.reduce_sum(big[400:])
    out["3 wrong halves"] = f(3, partials=[parts[0], wrong_half], total=parts[0] + wrong_half, big=big)

    out["4 ok"] = f(4, predicted_device="CPU:0", m=m)
    out["4 gpu"] = f(4, predicted_device="GPU:0", m=m)
    out["4 second cpu"] = f(4, predicted_device="CPU:1", m=m)

    steps = 4
    with tf.device("/CPU:0"):
        x = tf.ones([1000])

    def stay():
        y = x
        with tf.device("/CPU:0"):
            for _ in range(steps):
                y = y * 0.999
        return y

    def hop():
        y = x
        for i in range(steps):
            with tf.device(f"/CPU:{i % 2}"):
                y = y * 0.999
        return y

    def hop_once():
        y = x
        with tf.device("/CPU:0"):
            y = y * 0.999
        return y

    variants = {"stay": stay, "hop": hop}
    c = bench.compare(variants, baseline="stay", repeats=5, number=2)
    extra = (c["hop"].median_s - c["stay"].median_s) / steps * 1e3
    answer = dict(variants=variants, comparison=c, extra_ms_per_step=extra, x=x, steps=steps)
    out["5 ok"] = f(5, **answer)
    out["5 never hops"] = f(5, **dict(answer, variants={"stay": stay, "hop": stay}))
    out["5 too little work"] = f(5, **dict(answer, variants={"stay": stay, "hop": hop_once}))
    out["5 not per step"] = f(5, **dict(answer, extra_ms_per_step=extra * steps))
    result = out
''')


@pytest.fixture(scope="module")
def results():
    return processes.run(source=CHILD, timeout=300).result


@pytest.mark.parametrize("case, complaint", [
    ("1 ok", None),
    ("1 wrong device", "computed on CPU:0"),
    ("1 typed name", "read it from the result"),
    ("1 numpy", "should be a tensor"),
    ("2 ok", None),
    ("2 nothing caught", "no error was caught"),
    ("2 other error", "not the placement error"),
    ("2 left off", "still off"),
    ("3 ok", None),
    ("3 one device", "expected CPU:0 then CPU:1"),
    ("3 wrong halves", "other values"),
    ("4 ok", None),
    ("4 gpu", "did not run on 'GPU:0'"),
    ("4 second cpu", "did not run on 'CPU:1'"),
    ("5 ok", None),
    ("5 never hops", "last step ran on CPU:0, not CPU:1"),
    ("5 too little work", "other values"),
    ("5 not per step", "extra_ms_per_step"),
])
def test_lecture_03_checkers(results, case, complaint):
    if complaint is None:
        assert results[case] is None
    else:
        assert complaint in (results[case] or "(passed)")
