"""Checkers for lecture 11, per-op speedups: an op of one's own, measured as evolve runs it."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib import bench, evo
from course_lib.checks import exercise, method
from course_lib.evo import rng


def _run(what: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except AssertionError:
        raise
    except Exception as exc:
        line = (str(exc).strip().splitlines() or [""])[0]
        raise AssertionError(f"{what} raised {type(exc).__name__}: {line}") from None


@exercise("11", 1, "creep mutation",
          "Lecture 11's ops (and course_lib/evo/ops) show the three rules: rows.take, draws from rng, tensor ops.",
          "Each gene takes two independent random decisions, whether it moves and which way, each from its own "
          "key derived from the one you are given; a gene that stays keeps its value, and one that steps past "
          "an end is brought back into range.")
def creep_mutation(CreepMutation, population):
    op = _run("CreepMutation(rate=0.1, low=0, high=10)", CreepMutation, rate=0.1, low=0, high=10)
    x = np.asarray(population)
    eager = np.asarray(_run("your op on the population", op, population, seed=3))
    assert eager.shape == x.shape and eager.dtype == x.dtype, "children must have the population's shape and dtype"
    moved = eager != x
    assert eager.min() >= 0 and eager.max() <= 9, "genes must stay in [low, high): clip them"
    assert np.all(np.abs(eager - x)[moved] == 1), "a mutated gene moves by exactly one step"
    assert 0.03 < moved.mean() < 0.12, f"{moved.mean():.3f} of the genes moved; expected about rate (0.1)"
    assert len({tuple(np.flatnonzero(row)) for row in moved[:50]}) > 45, \
        "individuals should move different genes (draw per individual, per gene)"
    up = (eager > x)[moved & (x > 0) & (x < 9)]  # after the check above: a shared mask has too few coins to judge
    assert 0.3 < up.mean() < 0.7, f"{up.mean():.2f} of the moves go up; a fair coin sends half of them up"
    assert not np.array_equal(eager, np.asarray(op(population, seed=4))), "another seed should give other moves"
    xla = np.asarray(_run("your op under XLA", tf.function(op, jit_compile=True), population, seed=3))
    assert np.array_equal(eager, xla), "under XLA the op must give the same children (draw from rng only)"
    try:
        CreepMutation(0.1, 0, 10)(evo.Input(shape=(8,), dtype="float32"))
    except TypeError:
        pass
    else:
        raise AssertionError("a float genome should be refused: require an integer genome in check")


@exercise("11", 2, "measure it as evolve runs it",
          "Lecture 11's pitfall: a key captured by the timed function is a constant the compiler folds away.",
          "Compile children itself (not a function of x alone), so the key stays an argument; each variant "
          "passes population and KEY; n_ops comes from autograph's concrete function for those arguments.")
def measure_as_evolve(children, autograph, xla, variants, creep, n_ops, population, key):
    other = rng.fold_in(key, 7)
    expected = _run("children(population, KEY)", children, population, key)
    assert not np.array_equal(expected, _run("children(population, another key)", children, population, other)), \
        "children(x, key) should use the key it is given: another key, other children"
    assert method.is_tf_function(autograph) and not method.is_xla(autograph), \
        "autograph should be tf.function(children), without jit_compile"
    assert method.is_xla(xla), "xla should be compiled with XLA: tf.function(children, jit_compile=True)"
    for name, fn in (("autograph", autograph), ("xla", xla)):
        try:
            fn.get_concrete_function(population, key)
        except (TypeError, ValueError):
            raise AssertionError(f"{name} does not take the key as an argument: call it as {name}(x, key), so "
                                 "the key is a run-time tensor as in evolve, not a constant") from None
        method.same(_run(f"{name}(population, another key)", fn, population, other), children(population, other),
                    f"{name} called with another key")
    names = ["eager", "autograph", "xla"]
    method.variants_named(variants, names)
    assert method.calls(variants["eager"], children) and not method.tf_functions_in(variants["eager"]), \
        "the 'eager' variant should call children itself, no tf.function"
    for name, fn in (("autograph", autograph), ("xla", xla)):
        assert method.calls(variants[name], fn), \
            f"the {name!r} variant should call {name}, with the population and the key as arguments"
    for name in names:
        method.same(method.value_of(variants, name), expected, f"the {name!r} variant (children of population, KEY)")
    method.comparison(creep, names, "eager", repeats=bench.MIN_ROUNDS)
    want = len(autograph.get_concrete_function(population, key).graph.get_operations())
    assert isinstance(n_ops, (int, np.integer)) and n_ops == want, \
        f"n_ops is {n_ops!r}; the traced graph of autograph for (population, KEY) has another number of operations"
    assert n_ops > 100, "your op should draw from rng (counter-based random numbers: hundreds of operations)"


@exercise("11", 3, "predict the traces of a generation loop",
          "A tf.function picks its graph from its arguments: tensors by shape and dtype, Python values by value.",
          "For each loop, write down what its tf.function receives at generation 0, 1, 2, ...: which of those "
          "arguments differ in what picks a graph?")
def predict_loop_traces(seed_traces, key_traces, children, population, generations):
    for name, value in (("seed_traces", seed_traces), ("key_traces", key_traces)):
        assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
            f"{name} should be a whole number, got {type(value).__name__}"
    by_seed = tf.function(lambda x, seed: children(x, rng.key(seed)))
    by_key = tf.function(children)
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")  # the retracing warning is what this exercise is about; keep it out of the output
    try:
        for generation in range(generations):
            by_seed(population, generation)
            by_key(population, rng.fold_in(rng.key(0), generation))
    finally:
        logger.setLevel(level)
    assert seed_traces == by_seed.experimental_get_tracing_count(), \
        f"seed_traces is {seed_traces}: what does a tf.function do with a Python int it has not seen?"
    assert key_traces == by_key.experimental_get_tracing_count(), \
        f"key_traces is {key_traces}: does a key tensor of the same shape and dtype need a new graph?"
