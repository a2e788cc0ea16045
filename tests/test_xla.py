"""XLA demos of lecture 07: HLO and fusion, recompilation counts, numerics, auto-clustering."""

import math
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, xla
from course_lib.benchmarks import xla as bench_xla


@pytest.fixture(scope="module")
def x():
    return xla.workload_input(1000)


@pytest.fixture(scope="module")
def hlo_texts(x):
    return xla.hlo(xla.elementwise_chain, x), xla.hlo(xla.elementwise_chain, x, stage="optimized_hlo")


def test_optimised_hlo_fuses_the_chain_into_one_loop(hlo_texts):
    before, after = hlo_texts
    assert xla.count_fusions(before) == 0
    assert xla.count_fusions(after) == 1
    ops_before, ops_after = xla.hlo_ops(before), xla.hlo_ops(after)
    assert ops_before["multiply"] == 18 and ops_before["maximum"] == 6
    assert ops_after["multiply"] == 0 and sum(ops_after.values()) < sum(ops_before.values())
    assert "fusion" in after and "kind=kLoop" in after


def test_describe_lists_what_a_fusion_fused(hlo_texts):
    text = xla.describe(hlo_texts[1])
    fusion_line = [line for line in text.splitlines() if "= fusion(" in line][0]
    assert "kLoop" in fusion_line and "maximum x6" in fusion_line and "multiply" in fusion_line


def test_hlo_accepts_a_jit_tf_function_and_a_tensor_spec():
    f = tf.function(lambda v: v * 2.0 + 1.0, jit_compile=True)
    text = xla.hlo(f, tf.TensorSpec([4], tf.float32), stage="optimized_hlo")
    assert xla.count_fusions(text) == 1


def test_bad_stage_and_non_hlo_text_are_refused(x):
    with pytest.raises(ValueError, match="unknown stage 'llvm'"):
        xla.hlo(xla.elementwise_chain, x, stage="llvm")
    with pytest.raises(ValueError, match="not HLO text"):
        xla.hlo_ops("hello")


def test_xla_and_graph_agree_numerically(x):
    eager = xla.elementwise_chain(x).numpy()
    graph = tf.function(xla.elementwise_chain)(x).numpy()
    compiled = xla.jit(xla.elementwise_chain)(x).numpy()
    np.testing.assert_allclose(graph, eager, rtol=1e-6)
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)


def test_padding_does_not_change_the_masked_mean(x):
    n = tf.constant(1000, tf.int32)
    plain = xla.masked_chain_mean(x, n).numpy()
    padded = xla.jit(xla.masked_chain_mean)(*xla.pad_to_bucket(x, (512, 1024))).numpy()
    assert padded == pytest.approx(plain, rel=1e-5)
    assert plain == pytest.approx(float(np.mean(xla.elementwise_chain(x).numpy())), rel=1e-5)


def test_buckets():
    assert xla.bucket(300, (256, 512)) == 512
    assert xla.bucket(256, (512, 256)) == 256
    with pytest.raises(ValueError, match="larger than the largest bucket 512"):
        xla.bucket(600, (256, 512))
    padded, n = xla.pad_to_bucket(tf.ones([300]), (256, 512))
    assert padded.shape == (512,) and int(n) == 300


LENGTHS = [300, 301, 302, 700, 300]


def test_new_shapes_recompile_every_time():
    r = xla.recompilations(LENGTHS, "a new shape per call")
    assert (r["distinct lengths"], r["traces"], r["XLA compilations"]) == (4, 4, 4)


def test_input_signature_traces_once_but_xla_still_compiles_per_shape():
    r = xla.recompilations(LENGTHS, "input_signature with None")
    assert (r["traces"], r["XLA compilations"]) == (1, 4)


def test_padded_shapes_do_not_recompile():
    r = xla.recompilations(LENGTHS, "pad to buckets", buckets=(512, 1024))
    assert r["XLA compilations"] == 2  # one per bucket used: 512 and 1024
    r = xla.recompilations([300, 301, 302, 310, 300], "pad to buckets", buckets=(512, 1024))
    assert r["XLA compilations"] == 1


def test_recompilation_table_and_unknown_strategy():
    rows = xla.recompilation_table([10, 11], buckets=(16,))
    assert [r["strategy"] for r in rows] == list(xla.STRATEGIES)
    with pytest.raises(ValueError, match="unknown strategy"):
        xla.recompilations([10], "hope")


def test_count_compilations_counts_one_per_shape():
    f = xla.jit(lambda v: v + 1.0)
    calls = [(tf.ones([3]),), (tf.ones([3]),), (tf.ones([5]),)]
    assert xla.count_compilations(f, calls) == 2
    assert xla.count_compilations(f, calls) == 0  # all cached now
    assert xla.count_compilations(tf.function(lambda v: v + 1.0), calls) == 0  # no XLA at all


def test_widget_variants_build_and_compare():
    w = xla.speedup_widget(n_choices=(16, 1000), repeats=1)
    result = w.run(workload="random numbers", n=16)
    assert result.names == ["graph (tf.function)", "XLA (jit_compile=True)"]
    with pytest.raises(ValueError, match="unknown workload 'sorting'"):
        xla.workload_variants()["graph (tf.function)"](workload="sorting", n=4)


def test_each_widget_run_compiles_afresh():
    def two_runs():
        for _ in range(2):
            bench.force(xla.workload_variants()[xla.JIT]("elementwise chain", 100)())

    assert xla.compilations_in(two_runs) == (None, 2)


def test_graph_kernels_counts_what_grappler_left():
    kernels = xla.graph_kernels(xla.elementwise_chain, xla.workload_input(1000))
    # written: 6 rounds of 3 multiplies, an add and a maximum; the repeated 0.1 * x * x is computed once
    assert sorted(kernels.values()) == [6, 6, 8]  # adds, maxima, multiplies (names may vary with oneDNN)
    assert xla.fused_ops(xla.hlo(xla.elementwise_chain, xla.workload_input(1000), stage="optimized_hlo"))[
        "multiply"] == 8


def test_busy_threads_counts_the_threads_that_worked():
    import time

    def spin():
        end = time.process_time() + 0.05
        while time.process_time() < end:
            pass
    linux = Path("/proc/self/task").is_dir()  # where the per-thread counters are read
    assert xla.busy_threads(spin, calls=3) == (1 if linux else None)  # only this thread ran
    with pytest.raises(ValueError, match="calls must be"):
        xla.busy_threads(spin, calls=0)
    threads = xla.variant_threads("elementwise chain", 1000, calls=2)
    assert set(threads) == {xla.GRAPH, xla.JIT}
    assert all(t is None or t >= 1 for t in threads.values())  # None: too short to register a tick


def test_random_halves_are_workloads_of_their_own():
    bits = xla.random_bits(*xla.workload_args("random bits", 8))
    assert bits.dtype == tf.uint32 and bits.shape == [8]
    normal = xla.box_muller(*xla.workload_args("Box-Muller", 8))
    assert normal.shape == [8] and np.all(np.isfinite(normal))
    u = tf.constant([np.exp(-0.5)], tf.float32)  # radius 1; angles 0 and a quarter turn
    np.testing.assert_allclose(xla.box_muller(u, tf.constant([0.25])), [0.0, 1.0], atol=1e-6)


def test_workload_input_refuses_bad_sizes():
    with pytest.raises(ValueError, match="n must be a whole number"):
        xla.workload_input(0)


def _timing(name, first, median):
    return bench.Timing(name=name, first_call_s=first, times_s=[median], number=1)


def test_break_even_calls():
    c = bench.Comparison([_timing("graph", 0.02, 0.010), _timing("xla", 0.12, 0.005), _timing("slow", 0.1, 0.02),
                          _timing("cheap", 0.01, 0.02)], baseline="graph")
    assert xla.break_even_calls(c, "xla") == pytest.approx(20)
    assert math.isinf(xla.break_even_calls(c, "slow"))
    assert xla.break_even_calls(c, "cheap") == 0.0


def test_auto_clustering_needs_the_cpu_flag_on_a_cpu():
    gpu_only = xla.run_with_flags("course_lib.xla.auto_clustering:auto_clustered_worker", "--tf_xla_auto_jit=2",
                                  workload="elementwise chain", n=100, repeats=1)
    assert gpu_only["compilations"] == 0 or tf.config.list_physical_devices("GPU")


@pytest.mark.slow
def test_jit_vs_auto_times_live_processes_in_turns_and_counts_compilations():
    c = xla.jit_vs_auto(n=1000, repeats=2)
    assert c.names == [xla.GRAPH, xla.JIT, xla.AUTO]
    assert c.rounds in range(2, 2 * bench.MOST_ROUNDS + 1, 2)
    assert all(len(c[name].times_s) == c.rounds for name in c.names)
    assert c.twin is not None and len(c.twin.times_s) == c.rounds  # the plain graph's A/A twin sets the noise floor
    assert c.params["compilations"] == {xla.GRAPH: 0, xla.JIT: 1, xla.AUTO: c.params["compilations"][xla.AUTO]}
    assert c.params["compilations"][xla.AUTO] >= 1
    assert c.params["TF_XLA_FLAGS"] == {xla.GRAPH: "", xla.JIT: "", xla.AUTO: xla.AUTO_JIT_FLAGS}
    assert set(c.params["start-up (s)"]) == set(c.names) and min(c.params["start-up (s)"].values()) > 0
    assert c.params["calls a turn"] == 10 and all(c[name].number == 10 for name in c.names)
    one = c.params["one call a turn"]
    assert set(one["median (s)"]) == set(c.names) and min(one["median (s)"].values()) > 0
    assert "interval" in one["jit_compile"]


def test_each_variant_is_built_by_its_own_function_in_processes_started_as_it_needs():
    assert xla.BUILDERS == {xla.GRAPH: xla.plain_graph, xla.JIT: xla.jit_compiled, xla.AUTO: xla.auto_clustered}
    assert xla.is_jit(xla.jit_compiled(xla.elementwise_chain))
    assert not xla.is_jit(xla.plain_graph(xla.elementwise_chain)) and not xla.is_jit(xla.auto_clustered(abs))
    variants = xla.variant_processes("--flags")
    assert {name: env for name, (env, _) in variants.items()} == {xla.GRAPH: {}, xla.JIT: {},
                                                                   xla.AUTO: {"TF_XLA_FLAGS": "--flags"}}
    assert {name: kw["variant"] for name, (_, kw) in variants.items()} == {name: name for name in variants}
    assert list(xla.variant_processes(auto=False)) == [xla.GRAPH, xla.JIT]
    with pytest.raises(ValueError, match="unknown variant 'eager'"):
        xla.workload_worker("elementwise chain", 16, "eager")
    with pytest.raises(ValueError, match="calls must be a whole number >= 1"):
        xla.jit_vs_auto(n=16, calls=0)


def test_counted_call_counts_the_compilations_of_its_first_call_only():
    fn = tf.function(lambda x: x * 2 + 1, jit_compile=True)
    call = xla.CountedCall(lambda: fn(tf.ones(7)), start_up_s=0.5)
    assert call.info() == {"compilations": None, "start_up_s": 0.5}  # not called yet
    assert np.asarray(call()).tolist() == [3.0] * 7
    assert call.info()["compilations"] == 1
    call()
    assert call.info() == {"compilations": 1, "start_up_s": 0.5}


def test_compile_error_returns_the_error_without_the_native_log(capfd):
    @tf.function(jit_compile=True)
    def label(v):
        return tf.strings.as_string(v)

    capfd.readouterr()
    error = xla.compile_error(label, tf.constant([1.5]))
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert xla.unsupported_ops(error) == ["AsString"]
    assert "AsString" not in capfd.readouterr().err  # TensorFlow's log of it was held back
    assert xla.compile_error(xla.jit(xla.elementwise_chain), xla.workload_input(8)) is None


def test_native_log_held_keeps_what_was_written_to_descriptor_two(capfd):
    import os

    with xla.native_log_held() as held:
        os.write(2, b"native line\n")
    assert held == ["native line\n"] and "native line" not in capfd.readouterr().err


def test_fusion_rows_say_where_the_data_was():
    c = bench.Comparison([_timing(xla.GRAPH, 0.1, 0.030), _timing(xla.JIT, 0.2, 0.010)], baseline=xla.GRAPH)
    (row,) = xla.fusion_rows({1_000_000: c}, kernels=20)
    assert row["XLA speedup"] == "3x"
    assert row["graph's kernels moved (GB/s)"] == pytest.approx(20 * 8 * 1e6 / 0.030 / 1e9)
    assert row["XLA's loop moved (GB/s)"] == pytest.approx(8 * 1e6 / 0.010 / 1e9)
    with pytest.raises(ValueError, match="kernels must be a whole number"):
        xla.fusion_rows({1_000_000: c}, kernels=0)
    cache = xla.cache_bytes()
    assert row["fits in the largest cache"] == ("unknown" if cache is None else ("yes" if 4e6 <= cache else "no"))


def _chain(graph_s: list[float]) -> bench.Comparison:
    """A graph-against-XLA run whose graph took ``graph_s`` a round and whose A/A twin matched it."""
    return bench.Comparison([bench.Timing(xla.GRAPH, 0.1, graph_s, 1), bench.Timing(xla.JIT, 0.1, graph_s, 1)],
                            baseline=xla.GRAPH, twin=bench.Timing(xla.GRAPH, 0.1, graph_s, 1))


@pytest.mark.parametrize("out_of_cache_s, says", [
    # 16 times the data: the same rate takes 16x the time; 32x the time is half the rate
    ([0.32, 0.33, 0.31, 0.32, 0.32], "the graph's data rate fell 2x (95% interval"),
    ([0.08, 0.082, 0.079, 0.08, 0.081], "the graph's data rate rose 2x (95% interval"),
    ([0.16, 0.161, 0.159, 0.16, 0.1605], "no measurable difference against a noise floor of"),
])
def test_the_rate_outside_the_cache_is_called_only_beyond_the_noise(out_of_cache_s, says):
    in_cache = _chain([0.010, 0.0102, 0.0099, 0.010, 0.0101])
    text = xla.rate_change_text(in_cache, _chain(out_of_cache_s), 1_000_000, 16_000_000)
    assert says in text, text
    # a noisy run widens the interval until nothing is called
    noisy = xla.rate_change_text(_chain([0.005, 0.02, 0.01, 0.03, 0.008]), _chain(out_of_cache_s), 1_000_000,
                                 16_000_000)
    assert "too close to call" in noisy, noisy


def test_cache_bytes_reads_the_largest_cache(tmp_path):
    for index, size in (("index0", "32K"), ("index2", "1M"), ("index3", "16384K"), ("index9", "unknown")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "size").write_text(size + "\n")
    assert xla.cache_bytes(tmp_path) == 16384 * 1024
    assert xla.cache_bytes(tmp_path / "missing") is None


def test_run_with_flags_reports_failures():
    with pytest.raises(ValueError, match="module:function"):
        xla.run_with_flags("no_colon")
    with pytest.raises(RuntimeError, match=r"course_lib.xla:no_such_function with TF_XLA_FLAGS='--tf_xla_auto_jit=2 "
                                           r"--tf_xla_cpu_global_jit' exited with code 1[\s\S]*AttributeError"):
        xla.run_with_flags("course_lib.xla:no_such_function")


@pytest.mark.slow
def test_course_bench_xla_writes_json(tmp_path, capsys):
    import json

    out = tmp_path / "xla.json"
    assert bench_xla.bench_xla(["--n", "1000", "--sizes", "16", "--repeats", "1", "--no-auto-jit",
                          "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [c["title"] for c in data["comparisons"]] == [
        "graph, jit_compile and auto-clustering: elementwise chain, n=1,000, each in two live processes of its own, "
        "in turns, 10 calls a turn",
        "elementwise chain, n=16", "random numbers, n=16", "random bits, n=16", "Box-Muller, n=16"]
    assert "wrote" in capsys.readouterr().out


@pytest.mark.slow
def test_compiled_code_reads_what_xla_generated_for_each_function():
    code = xla.compiled_code(["sin(x)", "exp(x)"])
    assert any(i.startswith("llvm.sin.") for i in code["sin(x)"].intrinsics)  # left to LLVM to implement
    assert code["exp(x)"].intrinsics == [] and code["exp(x)"].library_calls == []  # XLA's own polynomial
    with pytest.raises(ValueError, match="unknown function"):
        xla.compiled_code(["tan(x)"])


def test_random_workload_takes_its_seed_as_an_argument():
    x, seed = xla.workload_args("random numbers", 8)
    graph = tf.function(xla.random_numbers)
    assert not np.array_equal(graph(x, seed), graph(x, seed + 1))  # the seed is an input, not a constant
    assert len(xla.workload_args("elementwise chain", 8)) == 1


def test_code_reading_names_what_each_function_became():
    code = {"sin(x)": xla.CompiledCode("sin(x)", ["llvm.sin.v8f32"], ["sinf"]),
            "sqrt(x²+1)": xla.CompiledCode("sqrt(x²+1)", ["llvm.sqrt.v8f32"], []),
            "tanh(x)": xla.CompiledCode("tanh(x)", [], ["tanhf"]),
            "exp(x)": xla.CompiledCode("exp(x)", [], [])}
    assert xla.code_reading(code) == (
        "On this machine: `sin(x)` asks LLVM for `llvm.sin.v8f32` (a vector of floats at once), and LLVM "
        "implemented it with calls to the C library's `sinf`, which computes one number per call; `sqrt(x²+1)` "
        "asks LLVM for `llvm.sqrt.v8f32` and calls no library function: LLVM emitted it inline; `tanh(x)` calls "
        "the C library's `tanhf`; `exp(x)` is code XLA emitted itself (no intrinsic, no library call).")
