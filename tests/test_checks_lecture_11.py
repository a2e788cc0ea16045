"""Lecture 11's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import pytest
import tensorflow as tf

from course_lib import bench, checks, evo
from course_lib.evo import rng
from course_lib.evo.rng import Rows

POPULATION = evo.population.random_integers((128, 64), low=0, high=10, seed=0)
KEY = rng.fold_in(rng.key(0), 1)


def fail(k, **answer):
    return checks.failure("11", k, **answer)


class Creep(evo.ops.Op, register=False):  # test doubles stay out of the op registry
    def __init__(self, rate, low, high, name=None):
        super().__init__(name)
        self.rate, self.low, self.high = rate, low, high

    def check(self, *specs):
        self.require(specs[0], "integer")
        return specs[0]

    def steps(self, x, key, rows):
        shape = tuple(x.shape[1:])
        move = rng.uniform(rng.fold_in(key, 1), rows, shape) < self.rate
        return move, tf.cast(2 * rng.integers(rng.fold_in(key, 2), rows, shape, 2) - 1, x.dtype)

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        move, step = self.steps(x, key, rows)
        return tf.clip_by_value(tf.where(move, x + step, x), self.low, self.high - 1)


class Unclipped(Creep, register=False):
    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        move, step = self.steps(x, key, rows)
        return tf.where(move, x + step, x)


class OnlyUp(Creep, register=False):
    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        move, _ = self.steps(x, key, rows)
        return tf.clip_by_value(tf.where(move, x + 1, x), self.low, self.high - 1)


class OneMask(Creep, register=False):
    """The EvoFlow mistake: one mask of positions shared by every individual."""

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        one = Rows.all(1)
        move = rng.uniform(rng.fold_in(key, 1), one, tuple(x.shape[1:])) < self.rate
        step = tf.cast(2 * rng.integers(rng.fold_in(key, 2), one, tuple(x.shape[1:]), 2) - 1, x.dtype)
        return tf.clip_by_value(tf.where(move, x + step, x), self.low, self.high - 1)


class AnyGenome(Creep, register=False):
    def check(self, *specs):
        return specs[0]


def test_creep_mutation():
    assert fail(1, CreepMutation=Creep, population=POPULATION) is None
    assert "stay in [low, high)" in fail(1, CreepMutation=Unclipped, population=POPULATION)
    assert "fair coin" in fail(1, CreepMutation=OnlyUp, population=POPULATION)
    assert "different genes" in fail(1, CreepMutation=OneMask, population=POPULATION)
    assert "float genome should be refused" in fail(1, CreepMutation=AnyGenome, population=POPULATION)


@pytest.fixture(scope="module")
def measured():
    op = Creep(rate=1 / 64, low=0, high=10)

    def children(x, key):
        return op.apply([x], key, Rows.all(x.shape[0]))

    autograph, xla = tf.function(children), tf.function(children, jit_compile=True)
    variants = {"eager": lambda: children(POPULATION, KEY), "autograph": lambda: autograph(POPULATION, KEY),
                "xla": lambda: xla(POPULATION, KEY)}
    creep = bench.compare(variants, baseline="eager", repeats=5, number=1)
    n_ops = len(autograph.get_concrete_function(POPULATION, KEY).graph.get_operations())
    return dict(children=children, autograph=autograph, xla=xla, variants=variants, creep=creep, n_ops=n_ops,
                population=POPULATION, key=KEY)


def test_measure_as_evolve(measured):
    ok = measured
    children = ok["children"]
    assert fail(2, **ok) is None
    captured = tf.function(lambda x: children(x, KEY), jit_compile=True)  # the lecture's pitfall
    pitfall = dict(ok["variants"], xla=lambda: captured(POPULATION))
    assert "does not take the key as an argument" in fail(2, **dict(ok, xla=captured, variants=pitfall))
    assert "should call xla" in fail(2, **dict(ok, variants=pitfall))
    not_compiled = tf.function(children)
    assert "compiled with XLA" in fail(2, **dict(
        ok, xla=not_compiled, variants=dict(ok["variants"], xla=lambda: not_compiled(POPULATION, KEY))))
    assert "without jit_compile" in fail(2, **dict(ok, autograph=ok["xla"]))
    other_key = dict(ok["variants"], autograph=lambda: ok["autograph"](POPULATION, rng.key(5)))
    assert "'autograph' variant" in fail(2, **dict(ok, variants=other_key))
    fixed = ok["children"](POPULATION, KEY)
    assert "use the key it is given" in fail(2, **dict(ok, children=lambda x, key: fixed))
    assert "n_ops is 0" in fail(2, **dict(ok, n_ops=0))


def test_predict_loop_traces():
    def children(x, key):  # cheap to trace; the checker only counts traces
        return x + tf.cast(key[0] % 2, x.dtype)

    ok = dict(seed_traces=5, key_traces=1, children=children, population=POPULATION[:8], generations=5)
    assert fail(3, **ok) is None
    assert "seed_traces is 1" in fail(3, **dict(ok, seed_traces=1))
    assert "key_traces is 5" in fail(3, **dict(ok, key_traces=5))
    assert "whole number" in fail(3, **dict(ok, key_traces="1"))
