"""course_lib.benchmarks.ops: every benchmarked op runs and keeps its genes valid, and the per-op table is produced."""

import json

import numpy as np
import pytest
import tensorflow as tf

from course_lib.benchmarks import ops as op_benchmarks


def test_every_benchmarked_op_runs_on_its_population():
    from course_lib import evo

    package = {name for name, cls in evo.ops.registry().items() if cls.__module__.startswith("course_lib.")}
    for module, cases in op_benchmarks.op_cases().items():
        for label, make, kind in cases:
            if label not in package:  # an op another test file defines is that file's to test
                continue
            x = op_benchmarks.example_population(kind, 8, 16)
            y = make(16)(x)
            assert y.shape == (8, 16) and y.dtype == x.dtype, label
            y = y.numpy()
            if kind == "binary":
                assert set(np.unique(y)) <= {0, 1}, label
            elif kind == "integer":
                assert y.min() >= 0 and y.max() < 10, label
            elif kind == "float":
                assert np.isfinite(y).all(), label
            else:  # each row stays a permutation of 0..15
                np.testing.assert_array_equal(np.sort(y, axis=1), np.tile(np.arange(16), (8, 1)), err_msg=label)


@pytest.mark.slow
def test_op_table_for_one_module(tmp_path, capsys):
    path = tmp_path / "ops.json"
    assert op_benchmarks.bench_ops(["--module", "crossover", "--shapes", "16x8", "--quick", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "UniformCrossover on population 16 x 8" in out and "xla/autograph" in out
    data = json.loads(path.read_text())
    assert len(data["comparisons"]) == 3 and data["machine"]["cores"]
    assert {v["name"] for v in data["comparisons"][0]["variants"]} == {"eager", "autograph", "xla"}


def test_op_variants_agree_across_modes_and_reject_unknown_ops():
    from course_lib.evo import rng

    op, x, fns = op_benchmarks.op_variants("SwapMutation", 16, 8)
    key = rng.key(3)
    eager = fns["eager"](x, key).numpy()
    assert eager.shape == (16, 8)
    np.testing.assert_array_equal(fns["autograph"](x, key).numpy(), eager)
    np.testing.assert_array_equal(fns["xla"](x, key).numpy(), eager)
    with pytest.raises(ValueError, match="unknown op 'Nope'; ops are: .*SwapMutation"):
        op_benchmarks.op_variants("Nope", 4, 4)


def test_sorting_references_run_beside_the_ops():
    from course_lib.evo import rng

    key = rng.key(5)
    _, x, fns = op_benchmarks.op_variants("OrderCrossover", 32, 20, reference=True)
    assert set(fns) == {"eager", "autograph", "xla", "eager, sorting", "autograph, sorting", "xla, sorting"}
    new = fns["xla"](x, key).numpy()
    np.testing.assert_array_equal(fns["eager, sorting"](x, key).numpy(), new)  # same draws, same OX children
    np.testing.assert_array_equal(fns["xla, sorting"](x, key).numpy(), new)
    _, x, fns = op_benchmarks.op_variants("ShuffleMutation", 32, 20, reference=True)
    new, old = fns["eager"](x, key).numpy(), fns["eager, sorting"](x, key).numpy()
    for a, b, c in zip(x.numpy(), new, old):  # the same segment, shuffled two ways
        moved = np.flatnonzero((a != b) | (a != c))
        if moved.size:
            lo, hi = moved[0], moved[-1] + 1
            assert set(a[lo:hi]) == set(b[lo:hi]) == set(c[lo:hi])
    assert set(op_benchmarks.op_variants("SwapMutation", 4, 4, reference=True)[2]) == {"eager", "autograph", "xla"}


@pytest.mark.slow
def test_op_table_compares_with_the_sorting_reference(tmp_path, capsys):
    path = tmp_path / "ops.json"
    assert op_benchmarks.bench_ops(["--op", "OrderCrossover", "--shapes", "16x8", "--quick", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sorting references, same run" in out and "xla, sorting" in out
    assert len(json.loads(path.read_text())["comparisons"]) == 1
    with pytest.raises(SystemExit):
        op_benchmarks.bench_ops(["--op", "Nope"])


def test_sorting_references_are_not_registered_ops():
    from course_lib import evo
    from course_lib.lessons import sorting_ops

    for name, cls in sorting_ops.REFERENCES.items():
        assert cls.__name__ not in evo.ops.registry() and issubclass(cls, evo.ops.registry()[name])
        op = sorting_ops.reference(evo.ops.registry()[name].example(8))
        assert type(op) is cls


def test_related_tours_are_permutations_that_share_most_edges():
    from course_lib.evo.ops.edge_crossover import shared_edges

    tours = op_benchmarks.related_tours(64, 256, seed=3)
    assert tours.shape == (64, 256) and tours.dtype == tf.int32
    np.testing.assert_array_equal(np.sort(tours.numpy(), axis=1), np.tile(np.arange(256), (64, 1)))
    # 9 reversals each: two tours differ by at most 18, each breaking at most two of the 256 edges
    shared = shared_edges(tours, tf.roll(tours, 1, axis=0)).numpy().sum(axis=1)
    assert shared.min() >= 256 - 2 * 18 and len({tuple(t) for t in tours.numpy()}) == 64
    assert np.array_equal(tours, op_benchmarks.related_tours(64, 256, seed=3))
