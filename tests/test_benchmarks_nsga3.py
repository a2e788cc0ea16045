"""course_lib.benchmarks.nsga3: the NumPy NSGA-III approaches DTLZ2's front, the command is registered, its
cases and seeds are parsed with clear errors, the engine/pymoo ratio has an interval over seeds and a verdict
only outside it, and float64 genes are evaluated in float64 and ranked in float32."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import benchmarks, evo
from course_lib.benchmarks import nsga3
from course_lib.lessons import nsga3_race
from course_lib.problems import dtlz


def test_the_numpy_nsga3_approaches_the_true_front():
    problem = dtlz.dtlz(2, 3)
    start = problem.igd(problem.numpy(np.random.default_rng(0).random((92, problem.variables))))
    _, f = nsga3_race.numpy_nsga3(problem, 92, 40)
    assert f.shape == (92, 3)
    assert problem.igd(f) < 0.5 * start


def test_the_command_is_registered():
    assert "nsga3" in benchmarks.commands()


def test_igd_is_pymoos_formula_on_the_non_dominated_rows():
    f = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    np.testing.assert_array_equal(nsga3_race.non_dominated(f), [[0.0, 1.0], [1.0, 0.0]])
    front = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    assert nsga3_race.igd(nsga3_race.non_dominated(f), front) == pytest.approx(np.sqrt(0.5) / 3)


def test_cases_follow_deb_and_jain_and_bad_ones_are_named():
    assert nsga3._cases("all") == list(nsga3.GENERATIONS)
    assert nsga3._cases("1:3,4:5") == [(1, 3), (4, 5)]
    with pytest.raises(ValueError, match="unknown case '3:8'.*NUMBER:OBJECTIVES"):
        nsga3._cases("3:8")
    for m, (partitions, size) in nsga3_race.SIZES.items():
        assert size >= evo.nsga3.count(m, partitions)


def test_a_short_comparison_reports_the_engine_and_pymoo_when_installed():
    rows = nsga3_race.accuracy([(2, 3)], [0], generations_scale=0.01)
    assert len(rows) == 1 and rows[0]["generations"] == 2 and rows[0]["population"] == 92
    assert 0 < rows[0]["engine IGD"] < 1
    assert ("pymoo IGD" in rows[0]) == nsga3_race.has_pymoo()
    alone = nsga3_race.accuracy([(2, 3)], [0], generations_scale=0.01, with_pymoo=False)
    assert "pymoo IGD" not in alone[0] and alone[0]["engine IGD"] == rows[0]["engine IGD"]


def test_seeds_are_lists_and_ranges_and_bad_ones_are_named():
    assert nsga3._seeds("0-3,7") == [0, 1, 2, 3, 7]
    for bad in ("3-1", "a", "1,,2", "-2"):
        with pytest.raises(ValueError, match="give seeds"):
            nsga3._seeds(bad)


@pytest.mark.skipif(not nsga3_race.has_pymoo(), reason="pymoo is an optional benchmark extra")
def test_the_ratio_of_medians_comes_with_an_interval_over_seeds_and_a_verdict_only_outside_it():
    few = nsga3_race.accuracy([(2, 3)], [0, 1], generations_scale=0.01)[0]
    assert few["95% interval"] == "" and few["verdict"].startswith("too few seeds")
    row = nsga3_race.accuracy([(2, 3)], list(range(5)), generations_scale=0.01)[0]
    lo, hi = map(float, row["95% interval"].split("–"))
    assert lo <= row["IGD engine / pymoo"] <= hi
    assert row["verdict"] == ("engine lower" if hi < 1 else "pymoo lower" if lo > 1 else
                              "not told apart by 5 seeds")


def test_float64_genes_are_evaluated_in_float64_and_ranked_in_float32():
    problem = dtlz.dtlz(3, 3)
    x = np.random.default_rng(1).random((50, problem.variables))
    exact = problem.numpy(x)
    f64 = problem.fitness.fn(tf.constant(x, tf.float64))
    f32 = problem.fitness.fn(tf.constant(x, tf.float32))
    assert f64.dtype == f32.dtype == tf.float32
    np.testing.assert_array_equal(f64.numpy(), exact.astype(np.float32))  # computed exactly, rounded once
    model = dtlz.model(problem, evo.selection.NSGA3(), mode="graph", dtype="float64")
    result = model.evolve(dtlz.start(problem, 92, dtype="float64"), generations=2)
    assert result.population.dtype == np.float64
