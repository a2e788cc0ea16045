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
