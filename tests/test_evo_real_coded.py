"""Simulated binary crossover and polynomial mutation against their defining distributions.

Many children of fixed parents: the crossover's spread factor follows Deb and Agrawal's density
(far from the bounds), the mutation's step Deb's bounded polynomial distribution, by a
Kolmogorov-Smirnov distance below the 1% critical value; every child stays within the bounds,
in every mode.
"""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import fusion, rng
from course_lib.evo.ops import base as ops_base
from course_lib.evo.rng import Rows

N = 20_000
KS_1_PERCENT = 1.63 / np.sqrt(N)


def ks_distance(samples, cdf) -> float:
    x = np.sort(samples)
    f = cdf(x)
    i = np.arange(1, len(x) + 1)
    return float(max(np.max(i / len(x) - f), np.max(f - (i - 1) / len(x))))


@pytest.mark.parametrize("eta", [2.0, 15.0])
def test_sbx_spread_factor_follows_its_density(eta):
    op = evo.ops.SimulatedBinaryCrossover(-1e4, 1e4, eta=eta, probability=1.0, gene_rate=1.0)
    parents, mates = tf.fill((N, 1), 0.4), tf.fill((N, 1), 0.6)
    child = op.apply([parents, mates], rng.key(1), Rows.all(N)).numpy()[:, 0].astype(np.float64)
    beta = np.abs(2 * child - 1.0) / 0.2
    e = eta + 1

    def cdf(b):
        return np.where(b <= 1, 0.5 * b ** e, 1 - 0.5 * np.maximum(b, 1) ** -e)

    assert ks_distance(beta, cdf) < KS_1_PERCENT
    assert np.mean(child < 0.5) == pytest.approx(0.5, abs=0.02)  # either child of the pair, alike


@pytest.mark.parametrize("x0", [0.3, 0.95])
def test_polynomial_mutation_step_follows_the_bounded_distribution(x0):
    eta = 20.0
    op = evo.ops.PolynomialMutation(0.0, 1.0, eta=eta, rate=1.0)
    y = op.apply([tf.fill((N, 1), x0)], rng.key(2), Rows.all(N)).numpy()[:, 0].astype(np.float64)
    t, p = y - x0, eta + 1
    a, b = (1 - x0) ** p, x0 ** p  # (1 - delta1)^p and (1 - delta2)^p with delta1 = x0, delta2 = 1 - x0

    def cdf(t):
        below = ((1 + np.minimum(t, 0)) ** p - a) / (2 * (1 - a))
        above = 1 - ((1 - np.maximum(t, 0)) ** p - b) / (2 * (1 - b))
        return np.clip(np.where(t <= 0, below, above), 0, 1)

    assert ks_distance(t, cdf) < KS_1_PERCENT
    assert y.min() >= 0 and y.max() <= 1


def test_children_stay_within_per_gene_bounds_in_every_mode():
    low, high = np.array([0.0, -1.0, 2.0]), np.array([1.0, 0.0, 2.5])
    x = low + (high - low) * np.random.default_rng(0).random((64, 3)).astype(np.float32)
    x[:8] = low  # on the bounds
    x = tf.constant(x, tf.float32)
    for op in (evo.ops.SimulatedBinaryCrossover(low, high, eta=1.0), evo.ops.PolynomialMutation(low, high, eta=1.0,
                                                                                                 rate=1.0)):
        eager = op.apply([x], rng.key(3), Rows.all(64)).numpy()
        xla = fusion.xla_function(lambda x, op=op: op.apply([x], rng.key(3), Rows.all(64)))(x).numpy()
        np.testing.assert_allclose(xla, eager, atol=1e-6)
        assert np.all(eager >= low) and np.all(eager <= high)


@pytest.mark.parametrize("n", [10, 11])
def test_mates_are_random_pairs_the_same_in_every_batch(n):
    population = tf.range(n, dtype=tf.int32)[:, None]
    mate, draws, second = ops_base.paired_mates(population, rng.key(4), Rows.all(n))
    mate, pair, second = mate.numpy().ravel(), draws.index().numpy(), second.numpy()
    # every row a parent once; two rows per pair, each the other's mate, one of them second
    for p in range(n // 2):
        a, b = np.flatnonzero(pair == p)
        assert mate[a] == b and mate[b] == a and second[a] != second[b]
    if n % 2:  # the last of the shuffle has its pair to itself and mates with another row
        alone = int(np.flatnonzero(pair == n // 2)[0])
        assert not second[alone] and mate[alone] != alone
    assert sorted(np.bincount(pair).tolist()) == sorted([2] * (n // 2) + [1] * (n % 2))
    assert not np.array_equal(mate, ops_base.paired_mates(population, rng.key(5), Rows.all(n))[0].numpy().ravel())
    for start, size in ((0, 4), (4, n - 4)):  # a batch of rows gets the whole population's pairs
        batch = ops_base.paired_mates(population, rng.key(4), Rows(start, size, n))
        assert np.array_equal(batch[0].numpy().ravel(), mate[start:start + size])
        assert np.array_equal(batch[1].index().numpy(), pair[start:start + size])


def test_a_pairs_two_children_share_their_draws_and_sit_symmetrically_about_the_parents():
    x = tf.constant(np.random.default_rng(1).uniform(0.3, 0.7, (64, 5)), tf.float64)
    op = evo.ops.SimulatedBinaryCrossover(-1e3, 1e3, eta=15.0)  # bounds far away: nothing clipped
    child = op.apply([x], rng.key(6), Rows.all(64)).numpy()
    # the op's mates: the pairs of its key folded with 1
    mate = ops_base.paired_mates(tf.range(64)[:, None], rng.fold_in(rng.key(6), 1), Rows.all(64))[0].numpy().ravel()
    x = x.numpy()
    crossed = child != x
    assert 0.3 < crossed.mean() < 0.7  # about half the genes (gene_rate 1/2)
    for a in range(64):
        b = mate[a]
        assert np.array_equal(crossed[a], crossed[b])  # the same genes crossed in both
        np.testing.assert_allclose(child[a] + child[b], x[a] + x[b], rtol=1e-12)  # c1 + c2 = y1 + y2


def test_bad_bounds_and_eta_raise_clear_errors():
    with pytest.raises(ValueError, match="low < high"):
        evo.ops.PolynomialMutation(1.0, 0.0)
    with pytest.raises(ValueError, match="eta"):
        evo.ops.SimulatedBinaryCrossover(0.0, 1.0, eta=-1)
    inputs = evo.Input(shape=(4,), dtype="float32")
    with pytest.raises(ValueError, match="one number or one per gene"):
        evo.ops.PolynomialMutation([0.0, 0.0], [1.0, 1.0])(inputs)
    with pytest.raises(TypeError, match="float genomes"):
        evo.ops.PolynomialMutation(0.0, 1.0)(evo.Input(shape=(4,), dtype="int32"))
