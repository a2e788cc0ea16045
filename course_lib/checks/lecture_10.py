"""Checkers for lecture 10, genetic algorithms with the engine: a fitness, a run, its speed, its mutation."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib import bench, evo
from course_lib.checks import exercise, method


def _result(value, name: str) -> evo.Result:
    assert isinstance(value, evo.Result), f"{name} should be what model.evolve returns, got {type(value).__name__}"
    return value


@exercise("10", 1, "subset-sum fitness",
          "A genome's 0/1 genes weigh NUMBERS: its chosen sum is a weighted sum, and a whole population of "
          "weighted sums is one linear-algebra operation.",
          "TensorFlow does not mix integer genes with float numbers in one op, and a distance is never negative.")
def subset_sum_fitness(subset_sum, numbers, target):
    numbers = np.asarray(numbers)
    pop = evo.population.random_integers((64, numbers.shape[0]), low=0, high=2, seed=5)
    want = np.abs(pop.numpy() @ numbers - target).astype(np.float32)
    got = subset_sum(pop)
    assert tuple(got.shape) == (64,), f"expected one value per genome, shape (64,), got {tuple(got.shape)}"
    assert got.dtype == tf.float32, f"return float32, got {got.dtype.name}"
    assert np.allclose(got, want), "wrong distance from TARGET for some genomes (it is never negative)"
    try:
        xla = tf.function(subset_sum, jit_compile=True)(pop)
    except Exception as exc:
        raise AssertionError(f"subset_sum fails inside a compiled function (use TensorFlow ops only): "
                             f"{type(exc).__name__}") from None
    assert np.allclose(xla, want), "subset_sum gives other values under XLA"
    assert float(subset_sum(np.zeros((1, numbers.shape[0]), np.int32))[0]) == target, "choosing nothing is TARGET away"


@exercise("10", 2, "evolve an exact subset",
          "model.compile says what to optimise and in which direction; model.evolve takes callbacks.",
          "subset_sum is a distance, so the model must minimise it; evo.callbacks.EarlyStopping can stop "
          "at a target fitness.")
def evolve_exact_subset(result, numbers, target, generations):
    result = _result(result, "result")
    numbers = np.asarray(numbers)
    assert result.best.shape == numbers.shape, \
        f"the best genome should have {numbers.shape[0]} genes, got shape {result.best.shape}"
    chosen = int(result.best @ numbers)
    assert result.best_fitness == 0 and chosen == target, \
        f"the best subset sums to {chosen}, not {target}: did the model minimise subset_sum?"
    assert result.stopped_early and result.generations < generations, \
        "the run should stop as soon as fitness 0 is reached, not run all its generations"


@exercise("10", 3, "what compiling buys",
          "Compile two copies of the model with different mode= values; bench.compare times functions that "
          "call their evolve.",
          "Let each variant return what evolve returns, so the checker can see its mode; a comparison already "
          "knows each variant's ratio to its baseline, so speedup needs no second timing.")
def what_compiling_buys(variants, compiled, speedup, generations):
    names = ["eager", "graph"]
    method.variants_named(variants, names)
    results = {}
    for name in names:
        results[name] = _result(method.value_of(variants, name), f"the {name!r} variant's return value")
        assert results[name].mode == name, \
            f"the {name!r} variant evolves a model compiled with mode={results[name].mode!r}"
        assert results[name].generations == generations, \
            f"the {name!r} variant ran {results[name].generations} generations, not {generations}"
    assert np.array_equal(results["eager"].population, results["graph"].population), \
        "the two variants should evolve the same population with the same model and seed, in another mode"
    method.comparison(compiled, names, "eager", repeats=bench.MIN_ROUNDS)
    method.close(speedup, compiled.speedup("graph"), "speedup (graph over eager, from compiled)")


@exercise("10", 4, "predict the untouched children",
          "BitFlipMutation decides for every gene of every genome on its own, with probability rate.",
          "A genome is untouched only when every one of its genes escapes the flip, and the genes decide "
          "independently of each other.")
def untouched_children(untouched_share, rate, genes):
    assert isinstance(untouched_share, (float, np.floating)) and 0 <= untouched_share <= 1, \
        f"untouched_share should be a share between 0 and 1, got {untouched_share!r}"
    pop = tf.zeros((8192, genes), tf.int32)
    children = evo.ops.BitFlipMutation(rate=rate)(pop, seed=7).numpy()
    observed = float(np.mean(~children.any(axis=1)))
    assert abs(untouched_share - observed) < 0.02, \
        f"you predict {untouched_share:.3f} of the children untouched; in 8192 children {observed:.3f} were"
