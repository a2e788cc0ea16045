"""course_lib.lessons.evolution: the benchmark models, the one-call reference and the breakdown."""

import numpy as np
import pytest

from course_lib import evo
from course_lib.lessons import evolution as benchmarks


@pytest.mark.slow
def test_single_call_reference_equals_evolve_bit_for_bit():
    pop = evo.population.random_integers((64, 40), 0, 2, seed=1)
    model = benchmarks.onemax_model(40, "xla")
    reference = benchmarks.single_call(benchmarks.onemax_model(40, "xla"), pop, 7)()
    np.testing.assert_array_equal(reference, model.evolve(pop, generations=7).population)
    floats = evo.population.uniform((32, 5), -5.12, 5.12, seed=1)
    reference = benchmarks.single_call(benchmarks.rastrigin_model(5, "xla"), floats, 6)()
    np.testing.assert_array_equal(reference, benchmarks.rastrigin_model(5, "xla").evolve(floats, 6).population)


@pytest.mark.slow
def test_generation_breakdown_counts_the_words_one_generation_draws():
    from course_lib.evo.ops.mutation import GeneMask

    n, length = 64, 256
    b = benchmarks.generation_breakdown(benchmarks.onemax_model(length, "xla"),
                                        evo.population.random_integers((n, length), 0, 2, seed=0), generations=2,
                                        repeats=1)
    k = len(GeneMask(1 / length, length).thresholds)
    # per row: mutation count + k positions, mate offset, 8 crossover words, 2 entrants; + the generation key's 2
    assert b["words"] == n * (1 + k + 1 + length // 32 + 2) + 2
    assert b["packed"] and b["population_bytes"] == n * length // 8
    rows = benchmarks.breakdown_table(b)
    names = [row["part"] for row in rows]
    assert names[:2] == ["whole generation", "random words alone"] and "fitness" in names
    assert all(s > 0 for s in b["seconds"].values())
    # removal is timed for each op and selection; the whole generation, the words and fitness cannot be removed
    assert set(b["saved"]) == {"BitFlipMutation", "UniformCrossover", "selection (tournament + gather)"}
    assert [row["part"] for row in rows if row["µs saved without it"] == ""] == ["whole generation",
                                                                                 "random words alone", "fitness"]
    assert f"It draws {b['words']:,} random 32-bit words" in str(benchmarks.breakdown_sentences(b))
    assert b["arrays"] == ["the population", "BitFlipMutation's children", "UniformCrossover's children",
                           "UniformCrossover's mates", "selection's new population"]
    b["cache_bytes"] = {"L1": 32 * 1024, "L2": 1024 * 1024}
    b["population_bytes"] = 128 * 1024
    text = str(benchmarks.breakdown_sentences(b))
    assert "up to 5 arrays" in text and "640 KiB in all, which fits in L2 (1,024 KiB)." in text
    b["population_bytes"] = 512 * 1024
    assert "2,560 KiB in all, more than the largest cache, L2 (1,024 KiB)." in str(benchmarks.breakdown_sentences(b))
    b["cache_bytes"] = {}
    assert "cache sizes this machine does not report" in str(benchmarks.breakdown_sentences(b))


def test_replica_variants_build_a_fresh_model_per_variant():
    import tensorflow as tf

    built = []

    def make_model():
        built.append(benchmarks.onemax_model(32, "graph"))
        return built[-1]

    pop = evo.population.random_integers((16, 32), 0, 2, seed=0)
    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    builders = benchmarks.replica_variants(make_model, pop, 3, strategy_for=lambda replicas: one)
    runs = {name: build(replicas=1, interval=2) for name, build in builders.items()}
    assert len(built) == 3 and len({id(m) for m in built}) == 3  # so each first call compiles its own programs
    results = {name: run() for name, run in runs.items()}
    assert all(r.shape == (16, 32) for r in results.values())
    np.testing.assert_array_equal(results["global"], results["one device"])  # one replica is the plain run


def _comparison(medians: dict, baseline: str, rounds: int = 9, jitter: float = 0.02, **params):
    """A Comparison of made-up times: each variant ``rounds`` times around its median (±``jitter``)."""
    from course_lib import bench

    spread = np.linspace(1 - jitter, 1 + jitter, rounds)
    timings = [bench.Timing(name, m, list(m * np.roll(spread, i)), 1) for i, (name, m) in enumerate(medians.items())]
    return bench.Comparison(timings, baseline, params=params)


def _removal(without: dict, jitter: float = 0.02) -> dict:
    medians = {"whole generation": 1.0, **{f"without {k}": v for k, v in without.items()}}
    cmp = _comparison(medians, "whole generation", jitter=jitter)
    return {"comparison": cmp, "seconds": {"whole generation": 1.0}, "saved": {k: 1.0 - v for k, v in without.items()}}


def test_the_part_that_saves_the_most_is_named_only_when_its_interval_clears_the_others():
    clear = benchmarks.removal_sentence(_removal({"BitFlipMutation": 0.6, "UniformCrossover": 0.9}))
    assert clear.startswith("Removed from the whole generation, BitFlipMutation 400,000 µs (40% of the generation")
    assert "saves the most, measurably more than UniformCrossover" in clear
    close = benchmarks.removal_sentence(_removal({"BitFlipMutation": 0.6, "UniformCrossover": 0.61}, jitter=0.1))
    assert "is not called the largest saving" in close and "measurably more than" not in close
    assert "too close to call" in close or "too small to call" in close or "no measurable difference" in close
    assert "BitFlipMutation" in close and "UniformCrossover" in close
    none = benchmarks.removal_sentence(_removal({"BitFlipMutation": 1.0, "UniformCrossover": 0.995}))
    assert none.startswith("Removing any one part did not measurably shorten the whole generation")


def test_the_most_expensive_part_is_named_alone_only_when_it_took_measurably_longer_than_each_other():
    def breakdown(medians, jitter=0.02, rounds=9):
        cmp = _comparison({"whole generation": 2.0, **medians}, "whole generation", rounds=rounds, jitter=jitter)
        return {"comparison": cmp, "seconds": {"whole generation": 2.0, "random words alone": 0.1, **medians}}

    clear = benchmarks.most_expensive_sentence(breakdown({"UniformCrossover": 1.0, "BitFlipMutation": 0.5}))
    assert clear.startswith("The most expensive part measured apart is UniformCrossover 1,000,000 µs (50%), "
                            "measurably more than every other part")
    close = benchmarks.most_expensive_sentence(breakdown({"BitFlipMutation": 0.61, "UniformCrossover": 0.6,
                                                          "fitness": 0.1}, jitter=0.1))
    assert close.startswith("The most expensive parts measured apart are BitFlipMutation 610,000 µs (30%), "
                            "UniformCrossover 600,000 µs (30%), which this run cannot tell apart")
    assert "fitness" not in close
    few = benchmarks.most_expensive_sentence(breakdown({"UniformCrossover": 1.0, "BitFlipMutation": 0.5}, rounds=3))
    assert "cannot tell apart (3 rounds are too few to judge)" in few


def test_the_packing_sentence_rules_out_main_memory_only_where_the_unpacked_arrays_fit():
    model = benchmarks.onemax_model(256, "xla")
    assert len(benchmarks.population_arrays(model)) == 5
    cmp = _comparison({"NumPy": 3.0, "engine": 1.0, "engine, unpacked": 2.5}, "NumPy", population=1024, genes=256)
    fits = benchmarks.packing_sentence(cmp, model, "engine", "engine, unpacked", {"L2": 1 << 20, "L3": 32 << 20})
    assert "5 population-sized arrays of int32 genes, 5,120 KiB in all, which fits in L3 (32,768 KiB)" in fits
    assert "does not come from main memory" in fits and "does not separate the two" in fits
    spills = benchmarks.packing_sentence(cmp, model, "engine", "engine, unpacked", {"L2": 1 << 20})
    assert "more than the largest cache, L2" in spills and "reaches main memory" in spills
    unknown = benchmarks.packing_sentence(cmp, model, "engine", "engine, unpacked", {})
    assert "does not report" in unknown and "main memory" not in unknown
    tied = _comparison({"NumPy": 3.0, "engine": 1.0, "engine, unpacked": 1.0}, "NumPy", population=1024, genes=256)
    assert "no difference this run could call" in benchmarks.packing_sentence(tied, model, "engine", "engine, unpacked",
                                                                              {"L3": 32 << 20})


def test_operation_count_flags_graphs_that_nest_a_loop():
    import tensorflow as tf

    flat = tf.function(lambda x: tf.reduce_sum(x * 2.0 + 1.0))
    count, nested = benchmarks.operation_count(flat, tf.ones([3]))
    assert count >= 4 and not nested
    looped = tf.function(lambda x: tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2.0), (0, x))[1])
    assert benchmarks.operation_count(looped, tf.ones([3]))[1]


def test_dispatch_sentence_prices_an_operation_only_from_measurable_differences():
    per_op = {"A": (_comparison({"eager": 0.010, "autograph": 0.002}, "eager"), 400),   # 20 µs per operation
              "B": (_comparison({"eager": 0.004, "autograph": 0.001}, "eager"), 200),   # 15 µs
              "C": (_comparison({"eager": 0.001, "autograph": 0.001}, "eager"), 100)}   # no difference: left out
    text = benchmarks.dispatch_sentence(per_op)
    assert text.startswith("Across the 2 ops") and "15.0 to 20.0 µs more per operation" in text
    assert "(median 17.5 µs)" in text
    assert "no op's autograph variant was measurably faster" in benchmarks.dispatch_sentence({"C": per_op["C"]})


def test_too_few_rounds_judge_no_part():
    from course_lib import bench

    few = _removal({"BitFlipMutation": 0.6, "UniformCrossover": 0.9})
    few["comparison"] = _comparison({"whole generation": 1.0, "without BitFlipMutation": 0.6,
                                     "without UniformCrossover": 0.9}, "whole generation", rounds=bench.MIN_ROUNDS - 1)
    text = benchmarks.removal_sentence(few)
    assert "too few to judge" in text and "interval" not in text and "measurably" not in text


@pytest.mark.parametrize("budgeted_s, says", [
    (1.0, "whatever the extra iterations cost, this run does not call it."),
    (1.5, "Here the budget cost 1,667 µs per extra batch"),
    (0.5, "Here the batched run was faster: a batch's working set (1,024 bytes against 4,096 for a whole "
          "generation)"),
])
def test_the_budget_sentence_explains_only_a_called_difference(budgeted_s, says):
    per_row = 8 * evo.inspect.BYTES_PER_GENE_IN_FLIGHT
    cmp = _comparison({"engine": 1.0, "engine, memory budget": budgeted_s}, "engine",
                      population=4096 // per_row, genes=8)
    inputs = evo.Input(shape=(8,), dtype="int32")
    model = evo.Model(inputs, evo.ops.BitFlipMutation(0.1)(inputs))
    text = benchmarks.budget_sentence(cmp, "engine, memory budget", "engine", model, memory_budget=1024,
                                      generations=100)
    assert text.startswith(f"With the budget, each generation runs its ops and fitness over 4 batches of "
                           f"{1024 // per_row} rows in an inner `tf.while_loop`: 400 loop iterations per call "
                           "instead of 100")
    assert says in text
