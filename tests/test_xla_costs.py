"""course_lib.xla_costs: the fused chain against a one-operation loop, and XLA's expansion of the generator."""

import pytest

from course_lib import xla, xla_costs


def test_the_loops_compare_two_compiled_functions_of_the_same_vector():
    loops = xla_costs.arithmetic_or_memory(1000, repeats=3)
    assert loops.names == [xla_costs.ONE_OP, xla_costs.CHAIN] and loops.baseline == xla_costs.ONE_OP
    assert loops.params == {"n": 1000}


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
