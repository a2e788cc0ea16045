"""Duplicate children: found in one sort (``evo.distinct``), drawn again before they are scored
(``NSGA3(eliminate_duplicates=True)``), and polynomial mutation's per-child probability (pymoo's 0.9).

``distinct.repeated`` marks exactly NumPy's repeats (``np.unique``'s later occurrences) on integers,
floats (-0.0 as 0.0, NaN as NaN), bit-packed words and genomes of several axes, eagerly and under
XLA. With duplicates eliminated, a generation's children copy neither a parent nor each other where,
without, half of them do; a run's final population holds no genome twice; the redraws keep runs the
same in batches. ``PolynomialMutation(probability=p)`` leaves a fraction 1 - p of the children
untouched, keeps its config, and refuses a probability outside [0, 1]. ``Elitist(eliminate_duplicates=True)``
keeps one row per fitness value while distinct values last.
"""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import distinct, rng
from course_lib.evo.rng import Rows
from course_lib.evo.selection import Pool
from course_lib.problems import dtlz

pytestmark = pytest.mark.timeout(300)


def numpy_repeats(x: np.ndarray) -> np.ndarray:
    flat = np.reshape(x, (len(x), -1))
    _, first = np.unique(flat, axis=0, return_index=True)
    return ~np.isin(np.arange(len(x)), first)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "float32", "float64", "bool"])
def test_repeated_rows_are_numpys_later_occurrences(dtype):
    r = np.random.default_rng(3)
    x = r.integers(0, 2, (300, 4)).astype(dtype)  # 16 distinct rows among 300: many repeats
    got = distinct.repeated(tf.constant(x)).numpy()
    np.testing.assert_array_equal(got, numpy_repeats(x))
    np.testing.assert_array_equal(tf.function(distinct.repeated, jit_compile=True)(tf.constant(x)).numpy(), got)


def test_floats_compare_as_values_and_genomes_of_several_axes_as_wholes():
    x = tf.constant([[0.0, 1.0], [-0.0, 1.0], [np.nan, 2.0], [np.nan, 2.0], [1.0, 0.0], [0.0, 1.0 + 1e-7]])
    np.testing.assert_array_equal(distinct.repeated(x).numpy(), [False, True, False, True, False, False])
    grids = np.random.default_rng(4).integers(0, 2, (50, 2, 3, 2))
    np.testing.assert_array_equal(distinct.repeated(tf.constant(grids)).numpy(), numpy_repeats(grids))
    assert distinct.repeated(tf.zeros((1, 3))).numpy().tolist() == [False]


PROBLEM = dtlz.dtlz(2, 3, distance_variables=3)


def lazy_model(eliminate_duplicates: bool, mode: str = "graph") -> evo.Model:
    """Half the children crossed, none mutated: without elimination about half are copies of a parent."""
    inputs = evo.Input(shape=(PROBLEM.variables,), dtype="float32")
    x = evo.ops.SimulatedBinaryCrossover(0.0, 1.0, eta=30.0, probability=0.5)(inputs)
    x = evo.ops.PolynomialMutation(0.0, 1.0, probability=0.0)(x)
    model = evo.Model(inputs, x)
    model.compile(fitness=PROBLEM.fitness, selection=evo.selection.NSGA3(partitions=4,
                                                                          eliminate_duplicates=eliminate_duplicates),
                  mode=mode, seed=5)
    return model


def copies_among_children(model: evo.Model) -> int:
    search = model.ask_tell(dtlz.start(PROBLEM, 40, seed=2))
    parents = search.ask()
    search.tell(PROBLEM.numpy(parents))
    children = search.ask()
    return int(numpy_repeats(np.concatenate([parents, children]))[len(parents):].sum())


@pytest.mark.parametrize("mode", ["graph", "xla"])
def test_children_that_copy_a_pool_row_are_drawn_again_before_they_are_scored(mode):
    assert copies_among_children(lazy_model(False, mode)) >= 10
    assert copies_among_children(lazy_model(True, mode)) == 0


def test_a_run_that_eliminates_duplicates_ends_with_distinct_genomes_the_same_in_batches():
    model = lazy_model(True)
    start = dtlz.start(PROBLEM, 40, seed=2)
    whole = model.evolve(start, generations=12)
    assert not numpy_repeats(whole.population).any()
    batched = model.evolve(start, generations=12, batch_size=16)
    np.testing.assert_array_equal(batched.population, whole.population)
    assert numpy_repeats(lazy_model(False).evolve(start, generations=12).population).any()


def test_polynomial_mutation_leaves_one_child_in_ten_untouched_at_probability_0_9():
    n = 4000
    x = tf.fill((n, 5), 0.5)
    op = evo.ops.PolynomialMutation(0.0, 1.0, rate=1.0, probability=0.9)
    y = op.apply([x], rng.key(7), Rows.all(n)).numpy()
    untouched = np.all(y == 0.5, axis=1).mean()
    assert untouched == pytest.approx(0.1, abs=0.02)
    never = evo.ops.PolynomialMutation(0.0, 1.0, rate=1.0, probability=0.0)
    np.testing.assert_array_equal(never.apply([x], rng.key(7), Rows.all(n)).numpy(), x.numpy())
    always = evo.ops.PolynomialMutation(0.0, 1.0, rate=1.0)
    assert not np.all(always.apply([x], rng.key(7), Rows.all(n)).numpy() == 0.5, axis=1).any()


def test_the_mutation_probability_is_checked_and_kept_in_the_config():
    op = evo.ops.PolynomialMutation(0.0, 1.0, probability=0.9)
    assert op.config()["probability"] == 0.9
    assert "probability" not in evo.ops.PolynomialMutation(0.0, 1.0).config()  # the default: the config as before
    with pytest.raises(ValueError, match="probability"):
        evo.ops.PolynomialMutation(0.0, 1.0, probability=1.5)


def test_elitist_selection_keeps_one_copy_of_each_fitness_while_distinct_ones_last():
    fitness = tf.constant([5.0, 5.0, 5.0, 4.0, 3.0, 3.0, 2.0, 1.0])  # minimised tour lengths, copies of 5 and 3
    keep = evo.selection.Elitist(eliminate_duplicates=True)
    pool = Pool(fitness, -1.0, rng.key(0))
    rows = keep.survivors(pool, 4, ())[0].numpy()
    assert sorted(fitness.numpy()[rows].tolist()) == [1.0, 2.0, 3.0, 4.0]  # the 4 best distinct values
    rows = keep.survivors(pool, 7, ())[0].numpy()  # 5 distinct values: two copies fill the rest
    assert len(set(rows.tolist())) == 7 and set(fitness.numpy()[rows].tolist()) == {1.0, 2.0, 3.0, 4.0, 5.0}
    plain = evo.selection.Elitist().survivors(pool, 4, ())[0].numpy()
    assert sorted(fitness.numpy()[plain].tolist()) == [1.0, 2.0, 3.0, 3.0]
    assert keep.config() == {"eliminate_duplicates": True} and evo.selection.Elitist().config() == {}
    assert type(keep)(**keep.config()).eliminate_duplicates
    with pytest.raises(ValueError, match="Elitist eliminate_duplicates must be True or False"):
        evo.selection.Elitist(eliminate_duplicates="yes")
