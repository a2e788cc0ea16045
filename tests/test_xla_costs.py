"""course_lib.xla_costs: the fused chain against a one-operation loop, and XLA's expansion of the generator."""

import re

import numpy as np
import pytest

from course_lib import bench, xla, xla_costs


def test_the_loops_compare_two_compiled_functions_the_graph_kernel_and_the_copy_of_the_same_vector():
    loops = xla_costs.arithmetic_or_memory(1000, repeats=3)
    assert loops.names == [xla_costs.ONE_OP, xla_costs.CHAIN, xla_costs.GRAPH_ONE_OP, xla_costs.COPY]
    assert loops.baseline == xla_costs.ONE_OP and loops.params == {"n": 1000}


def _rounds(ms, seed):
    return list(ms / 1e3 * (1 + 0.01 * np.random.default_rng(seed).standard_normal(30)))


def _loops(one_ms, chain_ms, graph_ms, copy_ms=3.0, n=16_000_000):
    """A constructed ``arithmetic_or_memory`` result: 30 rounds around each median, 1% noise."""
    timings = [bench.Timing(name, ms / 1e3, _rounds(ms, seed), 1) for seed, (name, ms) in
               enumerate([(xla_costs.ONE_OP, one_ms), (xla_costs.CHAIN, chain_ms), (xla_costs.GRAPH_ONE_OP, graph_ms),
                          (xla_costs.COPY, copy_ms)])]
    return bench.Comparison(timings, baseline=xla_costs.ONE_OP, twin=bench.Timing("A/A", one_ms / 1e3,
                                                                                   _rounds(one_ms, 9), 1),
                            params={"n": n})


def test_a_slow_xla_loop_with_free_arithmetic_names_neither_memory_nor_arithmetic_as_the_bound():
    text = xla_costs.loop_text(_loops(56.0, 56.0, 9.0), kernels=20)
    assert "the 19 extra operations per element add no measurable time" in text
    assert "XLA's loop moved 2.3 GB/s, the graph's kernel 14.2 GB/s" in text
    assert "memory bandwidth is not what limits it; this run does not show what does" in text
    assert "bound by" not in text and "one pass over memory" not in text


def test_a_loop_as_fast_as_the_graph_kernel_with_free_arithmetic_costs_one_pass_over_memory():
    text = xla_costs.loop_text(_loops(12.0, 12.0, 12.0), kernels=20)
    assert "as fast as TensorFlow's kernel, to within what this run can call" in text
    assert "the fused loop costs about one pass over memory, 10.7 GB/s here" in text


def test_a_loop_faster_than_the_graph_kernel_says_faster_not_at_least_as_fast():
    text = xla_costs.loop_text(_loops(12.0, 12.0, 20.0), kernels=20)
    assert "XLA's loop moved the same bytes faster than TensorFlow's kernel." in text
    assert "at least" not in text and "one pass over memory" in text


def test_a_chain_slower_than_one_operation_is_charged_to_its_arithmetic():
    text = xla_costs.loop_text(_loops(12.0, 30.0, 12.0), kernels=20)
    assert "the chain's arithmetic costs time beyond reading and writing the vector once: 18.0 ms per call" in text
    assert "one pass over memory" not in text
    assert "XLA's loop moved the same bytes as fast as TensorFlow's kernel" in text


def test_an_unsettled_comparison_says_what_this_run_cannot_tell_and_draws_no_conclusion():
    text = xla_costs.loop_text(_loops(12.0, 12.6, 12.6), kernels=20)
    assert "This run cannot tell whether the extra operations add time." in text
    memory = re.search(r"Between XLA's loop and the graph's kernel this run shows ([^,]+), so it does not", text)
    assert memory and memory.group(1) in ("too close to call either way", "a measured difference too close to the "
                                          "noise floor to call", "a measured difference too small to call")
    assert "one pass over memory" not in text and "as fast as TensorFlow's kernel" not in text


def test_an_unsettled_arithmetic_call_draws_no_conclusion_from_a_called_memory_one():
    text = xla_costs.loop_text(_loops(12.0, 12.6, 20.0), kernels=20)
    assert "This run cannot tell whether the extra operations add time." in text
    assert "faster than TensorFlow's kernel" in text and "one pass over memory" not in text


def test_the_copy_to_numpy_is_read_as_a_share_of_the_one_operation_call():
    text = xla_costs.loop_text(_loops(12.0, 12.0, 12.0, copy_ms=6.0), kernels=20)
    assert "that copy of one vector took 6.0 ms, 50% of the one-operation loop's call" in text


def test_the_loop_text_refuses_a_comparison_without_its_length_or_a_chain_of_one():
    loops = _loops(12.0, 12.0, 12.0)
    with pytest.raises(ValueError, match="kernels must be"):
        xla_costs.loop_text(loops, kernels=1)
    loops.params = {}
    with pytest.raises(ValueError, match="arithmetic_or_memory"):
        xla_costs.loop_text(loops, kernels=20)
    without_copy = _loops(12.0, 12.0, 12.0)
    without_copy.timings = without_copy.timings[:3]
    with pytest.raises(ValueError, match="copy to NumPy"):
        xla_costs.loop_text(without_copy, kernels=20)


def test_the_generator_is_one_philox_instruction_expanded_into_a_per_word_loop():
    expansion = xla_costs.generator_expansion(64)
    assert expansion["generators"] == 1 and expansion["algorithms"] == ["rng_philox"]
    per_word = expansion["per_word"]
    assert per_word["multiply"] > 0 and per_word["xor"] > 0  # Philox's rounds: products and xors
    assert "constant" not in per_word and "parameter" not in per_word
    assert dict(xla_costs.graph_generator_ops(64)) == {"StatelessRandomGetKeyCounter": 1,
                                                        "StatelessRandomUniformFullIntV2": 1}


def test_a_module_that_does_not_return_a_fusion_is_refused():
    text = xla.hlo(lambda x: x, xla.workload_input(4), stage="optimized_hlo")
    with pytest.raises(ValueError, match="return a fusion"):
        xla_costs._root_fusion(text)


def _pair(graph_ms, xla_ms, params=None):
    """A constructed graph-against-jit_compile comparison: 30 rounds around each median, 1% noise."""
    timings = [bench.Timing(name, ms / 1e3, _rounds(ms, seed), 1)
               for seed, (name, ms) in enumerate([(xla.GRAPH, graph_ms), (xla.JIT, xla_ms)])]
    twin = bench.Timing("A/A", graph_ms / 1e3, _rounds(graph_ms, 9), 1)
    return bench.Comparison(timings, baseline=xla.GRAPH, twin=twin, params=params or {})


def test_the_passes_text_reads_both_rates_and_calls_a_gain_below_the_number_of_passes():
    text = xla_costs.passes_text(_pair(64.0, 16.0), 16_000_000, kernels=20)
    assert "the graph's 20 kernels moved 40 GB/s between them and XLA's one loop 8.0 GB/s" in text
    assert "less than the 20x it would give if every pass cost the same" in text


def test_the_passes_text_draws_nothing_from_a_gain_it_cannot_call():
    text = xla_costs.passes_text(_pair(16.0, 16.1), 16_000_000, kernels=20)
    assert text.endswith("which this run does not call faster.") and "less than" not in text
    full = xla_costs.passes_text(_pair(64.0, 3.0), 16_000_000, kernels=20)
    assert full.endswith("as much as the 20x it would give if every pass cost the same.")
    with pytest.raises(ValueError, match="kernels must be a whole number >= 2"):
        xla_costs.passes_text(_pair(64.0, 16.0), 1000, kernels=1)


def _turns(one_graph_ms, one_jit_ms):
    c = _pair(1.8, 0.6, params={"calls a turn": 10})
    c.params["one call a turn"] = {"median (s)": {xla.GRAPH: one_graph_ms / 1e3, xla.JIT: one_jit_ms / 1e3},
                                   "jit_compile": "2.4x faster (95% interval 2.3–2.9x)"}
    return c


def test_the_turn_text_explains_a_slower_call_after_a_wait_only_where_every_variant_shows_it():
    text = xla.turn_text(_turns(3.4, 1.4))
    assert "graph (tf.function) 3.40 ms a call against 1.80 ms" in text
    assert "reads 2.4x faster (95% interval 2.3–2.9x), against 3" in text
    assert "one call a turn times a cold call" in text
    same = xla.turn_text(_turns(1.81, 1.4))
    assert "does not show that waiting costs a call anything" in same and "cold call" not in same
    with pytest.raises(ValueError, match="jit_vs_auto"):
        xla.turn_text(_pair(1.8, 0.6))
