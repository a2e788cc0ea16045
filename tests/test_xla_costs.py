"""course_lib.xla_costs: the fused chain against a one-operation loop, and XLA's expansion of the generator."""

import numpy as np
import pytest

from course_lib import bench, xla, xla_costs


def test_the_loops_compare_two_compiled_functions_and_the_graph_kernel_of_the_same_vector():
    loops = xla_costs.arithmetic_or_memory(1000, repeats=3)
    assert loops.names[:3] == [xla_costs.ONE_OP, xla_costs.CHAIN, xla_costs.GRAPH_ONE_OP]
    assert loops.baseline == xla_costs.ONE_OP and loops.params == {"n": 1000}


def _loops(one_ms, chain_ms, graph_ms, n=16_000_000):
    """A constructed ``arithmetic_or_memory`` result: 30 rounds around each median, 1% noise."""
    def rounds(ms, seed):
        return list(ms / 1e3 * (1 + 0.01 * np.random.default_rng(seed).standard_normal(30)))
    timings = [bench.Timing(name, ms / 1e3, rounds(ms, seed), 1) for seed, (name, ms) in
               enumerate([(xla_costs.ONE_OP, one_ms), (xla_costs.CHAIN, chain_ms), (xla_costs.GRAPH_ONE_OP, graph_ms)])]
    return bench.Comparison(timings, baseline=xla_costs.ONE_OP, twin=bench.Timing("A/A", one_ms / 1e3,
                                                                                   rounds(one_ms, 9), 1),
                            params={"n": n})


def test_a_slow_xla_loop_with_free_arithmetic_names_neither_memory_nor_arithmetic_as_the_bound():
    text = xla_costs.loop_text(_loops(56.0, 56.0, 9.0), kernels=20)
    assert "the 19 extra operations per element add no measurable time" in text
    assert "XLA's loop moved 2.3 GB/s, the graph's kernel 14.2 GB/s" in text
    assert "memory bandwidth is not what limits it; this run does not show what does" in text
    assert "bound by" not in text and "one pass over memory" not in text


def test_a_loop_as_fast_as_the_graph_kernel_with_free_arithmetic_costs_one_pass_over_memory():
    text = xla_costs.loop_text(_loops(12.0, 12.0, 12.0), kernels=20)
    assert "the fused loop costs about one pass over memory, 10.7 GB/s here" in text


def test_a_chain_slower_than_one_operation_is_charged_to_its_arithmetic():
    text = xla_costs.loop_text(_loops(12.0, 30.0, 12.0), kernels=20)
    assert "the chain's arithmetic costs time beyond reading and writing the vector once: 18.0 ms per call" in text
    assert "one pass over memory" not in text
    assert text.endswith("XLA's loop reads and writes memory at least as fast as TensorFlow's kernel.")


def test_an_unsettled_comparison_says_what_this_run_cannot_tell():
    text = xla_costs.loop_text(_loops(12.0, 12.6, 12.6), kernels=20)
    assert "This run cannot tell whether the extra operations add time." in text
    assert "This run cannot tell whether XLA's loop moves data more slowly" in text


def test_the_loop_text_refuses_a_comparison_without_its_length_or_a_chain_of_one():
    loops = _loops(12.0, 12.0, 12.0)
    with pytest.raises(ValueError, match="kernels must be"):
        xla_costs.loop_text(loops, kernels=1)
    loops.params = {}
    with pytest.raises(ValueError, match="arithmetic_or_memory"):
        xla_costs.loop_text(loops, kernels=20)


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
