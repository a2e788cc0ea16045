"""Lecture 07's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import pytest
import tensorflow as tf

from course_lib import bench, checks, xla


def failure(k, **answer):
    return checks.failure("07", k, **answer)


def gelu(x):
    return 0.5 * x * (1.0 + tf.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def test_fuse_gelu():
    x = xla.workload_input(64)
    n_before = sum(xla.hlo_ops(xla.hlo(gelu, x)).values())
    n_fusions = xla.count_fusions(xla.hlo(gelu, x, stage="optimized_hlo"))
    assert failure(1, gelu=gelu, n_before=n_before, n_fusions=n_fusions, x=x) is None
    assert "tanh approximation" in failure(1, gelu=tf.nn.gelu, n_before=n_before, n_fusions=n_fusions, x=x)
    assert "not the number of fusions" in failure(1, gelu=gelu, n_before=n_before, n_fusions=n_fusions + 1, x=x)
    optimised = sum(xla.hlo_ops(xla.hlo(gelu, x, stage="optimized_hlo")).values())
    assert "not the number of instructions" in failure(1, gelu=gelu, n_before=optimised, n_fusions=n_fusions, x=x)


@pytest.fixture(scope="module")
def stream():
    return [xla.workload_input(n, seed=i) for i, n in enumerate([130, 250, 260, 131])]  # 4 lengths in 2 buckets


def test_stop_recompiles(stream):
    compiled = xla.jit(xla.masked_chain_mean)
    assert failure(2, call_padded=lambda v: compiled(*xla.pad_to_bucket(v, (256, 512, 1024))), compiled=compiled,
                   stream=stream) is None
    unpadded = xla.jit(xla.masked_chain_mean)
    assert "4 compilations for 4 lengths that fit in 2 buckets" in failure(
        2, call_padded=lambda v: unpadded(v, tf.constant(int(v.shape[0]))), compiled=unpadded, stream=stream)
    eager = xla.jit(xla.masked_chain_mean)
    assert "does not call compiled" in failure(
        2, call_padded=lambda v: xla.masked_chain_mean(v, tf.constant(int(v.shape[0]))), compiled=eager, stream=stream)
    no_length = xla.jit(xla.masked_chain_mean)
    assert "padding must not count" in failure(
        2, call_padded=lambda v: no_length(xla.pad_to_bucket(v, (256, 512, 1024))[0], tf.constant(1024)),
        compiled=no_length, stream=stream)


def test_study_flag():
    report = xla.auto_clustered_worker("elementwise chain", 1000, repeats=1)  # what run_with_flags returns
    assert report["compilations"] == 0  # this process has no auto-clustering flags
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("on a GPU the study's flag compiles, so a flagless run is the wrong answer there")
    assert failure(3, study_flag_compilations=0, report=report) is None
    assert "report should be what xla.run_with_flags returned" in failure(3, study_flag_compilations=0, report=None)
    assert "not the number of compilations" in failure(
        3, study_flag_compilations=0, report=dict(report, compilations=2))
    assert "use the study's flag only" in failure(3, study_flag_compilations=2, report=dict(report, compilations=2))
    five = dict(report, timing=dict(report["timing"], times_s=[0.1] * 5))
    assert "5 repeats, not 1" in failure(3, study_flag_compilations=0, report=five)
    other = dict(report, timing=dict(report["timing"], name="random numbers"))
    assert "not the elementwise chain" in failure(3, study_flag_compilations=0, report=other)


@pytest.mark.slow
def test_predict_compilations(stream):
    assert failure(4, predicted_unpadded=4, predicted_padded=2, stream=stream) is None
    assert "without padding is wrong" in failure(4, predicted_unpadded=1, predicted_padded=2, stream=stream)
    assert "with padding is wrong" in failure(4, predicted_unpadded=4, predicted_padded=4, stream=stream)


def test_measure_xla():
    big = xla.workload_input(1000)
    graph_chain = tf.function(xla.elementwise_chain)
    xla_chain = tf.function(xla.elementwise_chain, jit_compile=True)
    variants = {"graph": lambda: graph_chain(big), "xla": lambda: xla_chain(big)}
    comparison = bench.compare(variants, baseline="graph", repeats=5, number=2)
    answer = dict(variants=variants, comparison=comparison, xla_speedup=comparison.speedup("xla"), x=big)
    assert failure(5, **answer) is None
    not_compiled = {**variants, "xla": lambda: graph_chain(big)}
    assert "does not call a tf.function with jit_compile=True" in failure(5, **dict(answer, variants=not_compiled))
    both_compiled = {**variants, "graph": lambda: xla_chain(big)}
    assert "without jit_compile" in failure(5, **dict(answer, variants=both_compiled))
    other_input = {**variants, "xla": lambda: xla_chain(big * 2)}
    assert "other values" in failure(5, **dict(answer, variants=other_input))
    assert "xla_speedup" in failure(5, **dict(answer, xla_speedup=1 / answer["xla_speedup"]))
