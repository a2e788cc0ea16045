"""course_lib.evo.benchmarks: the NumPy references evolve, and the per-op table is produced."""

import json

import numpy as np
import pytest

from course_lib import evo
from course_lib.evo import benchmarks


def test_numpy_onemax_improves_and_keeps_binary_genes():
    pop = evo.population.random_integers((64, 32), 0, 2, seed=0).numpy()
    final, fit = benchmarks.numpy_onemax(pop, 30, rate=1 / 32, seed=0)
    assert final.dtype == np.int32 and set(np.unique(final)) <= {0, 1}
    np.testing.assert_array_equal(fit, final.sum(1))
    assert fit.mean() > pop.sum(1).mean() + 5


def test_numpy_rastrigin_improves_within_bounds():
    pop = evo.population.uniform((64, 5), -5.12, 5.12, seed=0).numpy()
    final, fit = benchmarks.numpy_rastrigin(pop, 30, **benchmarks.RASTRIGIN)
    assert np.abs(final).max() <= 5.12
    np.testing.assert_allclose(fit, evo.fitness.Rastrigin()(final).numpy(), rtol=1e-4)
    assert fit.mean() < evo.fitness.Rastrigin()(pop).numpy().mean()


def test_every_benchmarked_op_runs_on_its_population():
    for module, cases in benchmarks.op_cases().items():
        for label, make, kind in cases:
            x = benchmarks._population(kind, 8, 16)
            assert make(16)(x).shape == (8, 16), label


def test_op_table_for_one_module(tmp_path, capsys):
    path = tmp_path / "ops.json"
    assert benchmarks.op_module_main("crossover", ["--shapes", "16x8", "--quick", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "UniformCrossover on population 16 x 8" in out and "xla/autograph" in out
    data = json.loads(path.read_text())
    assert len(data["comparisons"]) == 3 and data["machine"]["cores"]
    assert {v["name"] for v in data["comparisons"][0]["variants"]} == {"eager", "autograph", "xla"}


def test_op_variants_agree_across_modes_and_reject_unknown_ops():
    from course_lib.evo import rng

    op, x, fns = benchmarks.op_variants("SwapMutation", 16, 8)
    key = rng.key(3)
    eager = fns["eager"](x, key).numpy()
    assert eager.shape == (16, 8)
    np.testing.assert_array_equal(fns["autograph"](x, key).numpy(), eager)
    np.testing.assert_array_equal(fns["xla"](x, key).numpy(), eager)
    with pytest.raises(ValueError, match="unknown op 'Nope'; ops are: BitFlipMutation"):
        benchmarks.op_variants("Nope", 4, 4)
