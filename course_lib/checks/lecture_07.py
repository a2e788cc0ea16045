"""Checkers of lecture 07's exercises: fuse a GELU, stop the recompiles, auto-clustering with the study's
flag, predict the compilations, measure XLA against the graph."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib import xla
from course_lib.checks import answers, exercise, method

BUCKETS = (256, 512, 1024)


@exercise("07", 1, "fuse a GELU",
          "Look at lecture 07's section on HLO: how to get a function's HLO before and after XLA's passes, "
          "and how the course counts its instructions and fusions.",
          "n_before counts every instruction of the entry computation of the HLO as traced; n_fusions counts "
          "the fusions of the optimised HLO; both for gelu on x.")
def fuse_gelu(gelu, n_before, n_fusions, x):
    got = answers.run("gelu(x)", gelu, x)
    method.same(got, tf.nn.gelu(x, approximate=True), "gelu (the tanh approximation)")
    answers.number(n_before, "n_before", integer=True)
    answers.number(n_fusions, "n_fusions", integer=True)
    assert n_before == sum(xla.hlo_ops(xla.hlo(gelu, x)).values()), \
        f"n_before is {n_before}, not the number of instructions of the unoptimised entry computation"
    assert n_fusions == xla.count_fusions(xla.hlo(gelu, x, stage="optimized_hlo")), \
        f"n_fusions is {n_fusions}, not the number of fusions of the optimised HLO"


@exercise("07", 2, "stop the recompiles",
          "Look at lecture 07's section on recompilation: what makes XLA compile again, and how do buckets "
          "bound it?",
          "Pad each vector up to the smallest bucket that holds it (the course has a helper that also returns "
          "the true length), and call compiled on what it returns.")
def stop_recompiles(call_padded, compiled, stream):
    assert callable(call_padded), "call_padded should be a function of one vector"
    assert method.calls(call_padded, compiled), "call_padded does not call compiled, so XLA does not run it"
    compilations = answers.run("call_padded over the stream", xla.count_compilations, call_padded,
                               [(v,) for v in stream])
    lengths = {int(v.shape[0]) for v in stream}
    buckets = {xla.bucket(n, BUCKETS) for n in lengths}
    assert compilations <= len(buckets), \
        f"{compilations} compilations for {len(lengths)} lengths that fit in {len(buckets)} buckets"
    for v in stream:
        want = xla.masked_chain_mean(v, tf.constant(int(v.shape[0])))
        got = answers.run(f"call_padded on a vector of {v.shape[0]}", call_padded, v)
        assert np.isclose(np.asarray(got), np.asarray(want), rtol=1e-5), \
            f"wrong mean for a vector of {v.shape[0]}: the padding must not count"
    assert compiled.experimental_get_tracing_count() >= 1, "compiled was never called"


@exercise("07", 3, "auto-clustering with the study's flag",
          "Look at lecture 07's section on auto-clustering: how the course starts a fresh process with "
          "TF_XLA_FLAGS, and what the worker reports.",
          "Auto-clustering follows the flags the fresh process starts with: which of the two did the study "
          "use, and which does run_with_flags pass when you give none?")
def study_flag(study_flag_compilations, report):
    assert isinstance(report, dict) and {"timing", "compilations"} <= set(report), \
        "report should be what xla.run_with_flags returned for the auto-clustering worker"
    timing = report["timing"]
    assert timing.get("name") == "elementwise chain", \
        f"the worker ran {timing.get('name')!r}, not the elementwise chain"
    assert len(timing.get("times_s", [])) == 1, f"the worker ran {len(timing.get('times_s', []))} repeats, not 1"
    answers.number(study_flag_compilations, "study_flag_compilations", integer=True)
    assert study_flag_compilations == report["compilations"], \
        "study_flag_compilations is not the number of compilations the worker reported"
    if tf.config.list_physical_devices("GPU"):
        assert study_flag_compilations >= 1, "no compilation on a GPU machine: was --tf_xla_auto_jit=2 passed?"
    else:
        assert study_flag_compilations == 0, \
            f"{study_flag_compilations} compilations: the flags switched on CPU auto-clustering too; " \
            "use the study's flag only"


@exercise("07", 4, "predict the compilations",
          "Look at lecture 07's recompilation table: what does XLA compile once per?",
          "A jit-compiled function compiles once per input shape it meets; padding maps each length to its bucket.")
def predict_compilations(predicted_unpadded, predicted_padded, stream):
    answers.number(predicted_unpadded, "predicted_unpadded", integer=True)
    answers.number(predicted_padded, "predicted_padded", integer=True)
    plain = xla.jit(xla.masked_chain_mean)
    unpadded = xla.count_compilations(lambda v: plain(v, tf.constant(int(v.shape[0]))), [(v,) for v in stream])
    bucketed = xla.jit(xla.masked_chain_mean)
    padded = xla.count_compilations(lambda v: bucketed(*xla.pad_to_bucket(v, BUCKETS)), [(v,) for v in stream])
    assert predicted_unpadded == unpadded, "your prediction without padding is wrong"
    assert predicted_padded == padded, "your prediction with padding is wrong"


@exercise("07", 5, "measure XLA against the graph",
          "Look at how lecture 07 compares a graph with its XLA-compiled version on one workload.",
          "The two variants should differ in one thing only, how the same chain is compiled; and a ratio "
          "means something only when both sides are timed in the same run, against a named baseline.")
def measure_xla(variants, comparison, xla_speedup, x):
    method.variants_named(variants, ["graph", "xla"])
    graph_fns, xla_fns = method.tf_functions_in(variants["graph"]), method.tf_functions_in(variants["xla"])
    assert graph_fns and not any(method.is_xla(f) for f in graph_fns), \
        "the 'graph' variant should call a tf.function without jit_compile"
    assert any(method.is_xla(f) for f in xla_fns), "the 'xla' variant does not call a tf.function with jit_compile=True"
    expected = xla.elementwise_chain(x)
    for name in variants:
        method.same(method.value_of(variants, name), expected, f"the {name!r} variant", rtol=1e-4)
    method.comparison(comparison, ["graph", "xla"], "graph", repeats=5)
    answers.number(xla_speedup, "xla_speedup")
    method.close(xla_speedup, comparison.speedup("xla"), "xla_speedup (the xla variant's speedup over graph)")
