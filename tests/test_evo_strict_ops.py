"""course_lib.evo ops held to the peers' standard: genes conserved by position, per-individual
cut points and masks with no position bias, mutation rates and distributions against their
probabilities, permutation ops at short and odd lengths, order crossover against a textbook
definition, every gene dtype, fresh randomness for direct calls, and clear errors.

Statistical checks compare counts with their expectation within 5 standard deviations (plus
one count): with fixed seeds they never flake, yet a wrong operator misses by far more.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import fusion, rng
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import FLOAT_DTYPES, INTEGER_DTYPES


def assert_count(observed, n, p, what=""):
    """``observed`` successes of ``n`` trials of probability ``p``, within 5 standard deviations."""
    slack = 5 * math.sqrt(n * p * (1 - p)) + 1
    assert abs(observed - n * p) <= slack, f"{what}: {observed} of {n}, expected {n * p:.1f} +- {slack:.1f}"


def assert_counts(observed, probabilities, what=""):
    observed = np.asarray(observed)
    n = observed.sum()
    for k, (o, p) in enumerate(zip(observed, probabilities)):
        assert_count(o, n, p, f"{what} cell {k}")


def distinct_rows(n, length):
    """Gene j of row i is i * length + j: a child's gene names its source row and position."""
    return np.arange(n * length, dtype=np.int32).reshape(n, length)


CROSSOVERS = [evo.ops.UniformCrossover, evo.ops.SinglePointCrossover, evo.ops.TwoPointCrossover]


# -- crossover: conservation by position, cut points, masks, probability --------------------------


@pytest.mark.parametrize("probability", [1.0, 0.5])
@pytest.mark.parametrize("cls", CROSSOVERS, ids=lambda c: c.__name__)
def test_crossover_child_genes_come_from_parent_or_one_mate_at_the_same_position(cls, probability):
    n, length = 64, 37
    x = distinct_rows(n, length)
    child = cls(probability=probability)(x, seed=3).numpy()
    assert (child % length == np.arange(length)).all(), "a gene moved to another position"
    source = child // length
    mates = set()
    for i, row in enumerate(source):
        others = set(row.tolist()) - {i}
        assert len(others) <= 1, f"child {i} mixes genes of rows {sorted(others)}"
        mates |= others
    assert len(mates) > n // 3  # mates chosen per individual, never the parent itself


def test_crossover_on_2d_genomes_keeps_positions():
    x = np.arange(32 * 6 * 5, dtype=np.int32).reshape(32, 6, 5)
    for cls in CROSSOVERS:
        child = cls()(x, seed=1).numpy()
        assert (child % 30 == np.arange(30).reshape(6, 5)).all()


def two_parent_children(op, n, length, seed=2):
    zeros, ones = np.zeros((n, length), np.int32), np.ones((n, length), np.int32)
    return op(zeros, ones, seed=seed).numpy()


def test_single_point_cuts_are_uniform_over_every_cut():
    n, length = 4000, 9
    child = two_parent_children(evo.ops.SinglePointCrossover(), n, length)
    cut = np.argmax(child, axis=1)
    assert all((row[:c] == 0).all() and (row[c:] == 1).all() for row, c in zip(child, cut))
    assert_counts(np.bincount(cut, minlength=length)[1:], [1 / (length - 1)] * (length - 1), "cut")


def test_two_point_segments_reach_every_pair_without_position_bias():
    n, length = 6000, 9
    child = two_parent_children(evo.ops.TwoPointCrossover(), n, length)
    segments = []
    for row in child:
        ones = np.flatnonzero(row)
        if ones.size:
            assert ones[-1] - ones[0] + 1 == ones.size, "the mate's genes form one segment"
            segments.append((ones[0], ones[-1] + 1))
    assert set(segments) == {(a, b) for a in range(length) for b in range(a + 1, length + 1)}
    # two cuts uniform in [0, L]: gene j is inside [min, max) with probability 2 (j + 1)(L - j) / (L + 1)^2
    for j in range(length):
        assert_count(child[:, j].sum(), n, 2 * (j + 1) * (length - j) / (length + 1) ** 2, f"gene {j}")


def test_uniform_masks_have_no_position_bias_and_binomial_row_counts():
    n, length = 4000, 37  # odd, and past one 32-bit word
    child = two_parent_children(evo.ops.UniformCrossover(), n, length)
    for j in range(length):
        assert_count(child[:, j].sum(), n, 0.5, f"gene {j}")
    counts = np.bincount(child.sum(1), minlength=length + 1)
    pmf = [math.comb(length, k) / 2 ** length for k in range(length + 1)]
    assert_counts(counts, pmf, "genes from the mate per child")
    assert len({tuple(r) for r in child}) == n


@pytest.mark.parametrize("cls", CROSSOVERS + [evo.ops.OrderCrossover], ids=lambda c: c.__name__)
def test_crossover_probability_is_the_share_of_crossed_children(cls):
    n, length = 3000, 12
    x = evo.population.permutations(n, length, seed=4).numpy()
    assert (cls(probability=0.0)(x, seed=1).numpy() == x).all()
    child = cls(probability=0.3)(x, seed=1).numpy()
    crossed = (child != x).any(1)
    # a crossed child can equal its parent: a two-point or order segment can be empty or the whole tour
    full = cls(probability=1.0)(x, seed=1).numpy()
    p_changes = (full != x).any(1).mean()
    assert p_changes > 0.8
    assert_count(crossed.sum(), n, 0.3 * p_changes, "crossed children")
    assert repr(cls(probability=0.3)) == f"{cls.__name__}(probability=0.3)" and repr(cls()) == f"{cls.__name__}()"


# -- mutation rates, Gaussian spread and tails, RandomValue uniformity ------------------------------------


@pytest.mark.parametrize("rate,length", [(0.001, 1001), (1 / 77, 77), (0.06, 117), (0.1, 33), (0.5, 77), (0.9, 33)])
def test_bit_flip_rate_is_a_per_gene_probability(rate, length):
    n = 3000
    x = evo.population.random_integers((n, length), 0, 2, seed=1).numpy()
    flips = evo.ops.BitFlipMutation(rate)(x, seed=2).numpy() != x
    assert_count(flips.sum(), flips.size, rate, "flipped genes")
    for j in range(0, length, max(1, length // 40)):
        assert_count(flips[:, j].sum(), n, rate, f"gene {j}")
    per_row = flips.sum(1)
    var = length * rate * (1 - rate)
    assert abs(per_row.var() / var - 1) < 0.2, f"row counts vary {per_row.var():.3f}, binomial {var:.3f}"


@pytest.mark.parametrize("rate", [0.05, 0.1])
def test_block_picks_count_and_positions_per_block_are_binomial_and_uniform(rate):
    # a block of 32 genes decides 0, 1 or 2 picks from one word and redraws the rest (escapes): at these
    # rates every branch is common, so a wrong interval, position or redraw shows in the counts
    from course_lib.evo.ops.mutation import BlockPicks

    n = 4000
    words = fusion.xla_function(lambda k: BlockPicks(rate).words(k, Rows.all(n), 64))(rng.key(21)).numpy()
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little").reshape(n, 2, 32).astype(bool)
    counts = bits.sum(2)
    cells = 9
    binomial = [math.comb(32, k) * rate**k * (1 - rate) ** (32 - k) for k in range(cells)]
    seen = [(counts == k).sum() for k in range(cells - 1)] + [(counts >= cells - 1).sum()]
    assert_counts(seen, binomial[:-1] + [1 - sum(binomial[:-1])], "picks per block")
    for j in range(32):
        assert_count(bits[:, :, j].sum(), 2 * n, rate, f"gene {j} of a block")
    pairs = bits[counts == 2]  # two picks: every distance between them as often as a uniform pair makes it
    where = np.argwhere(pairs)[:, 1].reshape(-1, 2)
    distance = where[:, 1] - where[:, 0]
    assert_counts(np.bincount(distance, minlength=32)[1:], [(32 - d) / 496 for d in range(1, 32)], "pair distance")
    assert abs(np.corrcoef(counts[:, 0], counts[:, 1])[0, 1]) < 5 / math.sqrt(n)  # neighbouring blocks independent


def test_rate_zero_and_one_are_exact():
    x = evo.population.random_integers((50, 33), 0, 2, seed=1).numpy()
    assert (evo.ops.BitFlipMutation(0.0)(x).numpy() == x).all()
    assert (evo.ops.BitFlipMutation(1.0)(x).numpy() == 1 - x).all()


def test_gaussian_spread_and_tails():
    n, length, sd = 2000, 51, 0.3
    x = evo.population.uniform((n, length), -1, 1, seed=1).numpy()
    z = (evo.ops.GaussianMutation(sd)(x, seed=3).numpy().astype(np.float64) - x) / sd
    assert abs(z.mean()) < 5 / math.sqrt(z.size)
    assert abs(z.std() - 1) < 0.01
    for k in (1, 2, 3):
        assert_count((np.abs(z) > k).sum(), z.size, math.erfc(k / math.sqrt(2)), f"|z| > {k}")
    assert_count((z > 0).sum(), z.size, 0.5, "positive")


def test_gaussian_rate_and_clipping():
    n, length = 2000, 31
    x = evo.population.uniform((n, length), -1, 1, seed=1).numpy()
    y = evo.ops.GaussianMutation(0.5, rate=0.2, low=-1.0, high=1.0)(x, seed=4).numpy()
    assert_count((y != x).sum(), x.size, 0.2, "moved genes")
    assert y.min() >= -1 and y.max() <= 1 and (y == 1).any() and (y == -1).any()


def test_random_value_is_uniform_over_the_range():
    x = np.zeros((3000, 21), np.int32)
    y = evo.ops.RandomValueMutation(1.0, low=-3, high=4)(x, seed=5).numpy()
    values, counts = np.unique(y, return_counts=True)
    assert values.tolist() == list(range(-3, 4))
    assert_counts(counts, [1 / 7] * 7, "value")
    z = evo.ops.RandomValueMutation(0.25, low=5, high=9)(x, seed=6).numpy()
    assert_count((z != 0).sum(), z.size, 0.25, "replaced genes")
    assert set(np.unique(z)) == {0, 5, 6, 7, 8}


# -- permutations --------------------------------------------------------------------------------------

PERMUTATION_OPS = [evo.ops.SwapMutation(), evo.ops.InversionMutation(), evo.ops.ShuffleMutation(),
                   evo.ops.OrderCrossover(), evo.ops.OrderCrossover(probability=0.5)]


@pytest.mark.parametrize("length", [2, 3, 7, 31])
@pytest.mark.parametrize("op", PERMUTATION_OPS, ids=repr)
def test_permutation_ops_give_permutations_at_short_and_odd_lengths(op, length):
    n = 400
    x = evo.population.permutations(n, length, seed=length).numpy()
    y = op(x, seed=1).numpy()
    np.testing.assert_array_equal(np.sort(y, axis=1), np.tile(np.arange(length), (n, 1)))
    if length > 2:  # at length 2, OX keeps the parent unless its segment is empty
        assert (y != x).any(1).mean() > 0.1
    if length == 3:  # every permutation of 3 is reached
        assert len({tuple(r) for r in y}) == 6


def test_swap_rate_is_the_share_of_mutated_individuals():
    n, length = 4000, 31
    x = evo.population.permutations(n, length, seed=1).numpy()
    y = evo.ops.SwapMutation(rate=0.2)(x, seed=2).numpy()
    changed = (y != x).sum(1)
    assert set(changed.tolist()) <= {0, 2}
    assert_count((changed == 2).sum(), n, 0.2 * (1 - 1 / length), "swapped")  # i == j swaps nothing


def order_crossover_textbook(parent, mate, a, b):
    """OX (Davis 1985): parent[a:b] stays in place; starting right after the segment, the free
    positions are filled, wrapping around, with the mate's genes not in the segment, in the order
    they appear in the mate when it is read from position b, wrapping around."""
    n = len(parent)
    segment = set(parent[a:b].tolist())
    child = [None] * n
    child[a:b] = parent[a:b].tolist()
    mate_from_b = [mate[(b + k) % n] for k in range(n)]
    fill = iter(g for g in mate_from_b if g not in segment)
    for k in range(n):
        pos = (b + k) % n
        if child[pos] is None:
            child[pos] = next(fill)
    return child


@pytest.mark.parametrize("length", [2, 3, 7, 12])
def test_order_crossover_equals_the_textbook_definition(length):
    n = 300
    parents = evo.population.permutations(n, length, seed=5).numpy()
    m = evo.population.permutations(1, length, seed=6).numpy()[0]  # every mate the same: two inputs pair at random
    children = evo.ops.OrderCrossover()(parents, np.tile(m, (n, 1)), seed=7).numpy()
    segments = set()
    for p, c in zip(parents, children):
        found = [(a, b) for a in range(length + 1) for b in range(a, length + 1)
                 if order_crossover_textbook(p, m, a, b) == c.tolist()]
        assert found, f"{c} is not an OX child of {p} and {m}"
        segments.add(found[0])
    assert len(segments) >= (15 if length > 5 else 2)  # short tours: several segments give the same child


# -- every gene dtype ------------------------------------------------------------------------------------

INTEGER_OPS = [evo.ops.BitFlipMutation(0.3), evo.ops.BitFlipMutation(0.01), evo.ops.RandomValueMutation(0.5, 0, 2),
               evo.ops.UniformCrossover(probability=0.7), evo.ops.SinglePointCrossover(), evo.ops.TwoPointCrossover()]
FLOAT_OPS = [evo.ops.GaussianMutation(0.2, rate=0.5, low=-1.0, high=1.0), evo.ops.UniformCrossover(),
             evo.ops.SinglePointCrossover(), evo.ops.TwoPointCrossover(probability=0.5)]
PERMUTATION_ALL = [evo.ops.SwapMutation(), evo.ops.InversionMutation(0.5), evo.ops.ShuffleMutation(),
                   evo.ops.OrderCrossover(probability=0.7)]


def dtype_cases():
    """(op, input population) for every op and every dtype it accepts."""
    bits = evo.population.random_integers((16, 45), 0, 2, seed=1)
    tours = evo.population.permutations(16, 45, seed=2)
    reals = evo.population.uniform((16, 45), -1, 1, seed=3)
    for dtype in INTEGER_DTYPES:
        yield from ((op, tf.cast(bits, dtype)) for op in INTEGER_OPS)
        yield from ((op, tf.cast(tours, dtype)) for op in PERMUTATION_ALL)
    for dtype in FLOAT_DTYPES:
        yield from ((op, tf.cast(reals, dtype)) for op in FLOAT_OPS)


def check_output(op, x, y):
    what = f"{op!r} on {x.dtype.name}"
    assert y.dtype == x.dtype, what
    y64, x64 = y.numpy().astype(np.float64), x.numpy().astype(np.float64)
    assert (y64 != x64).any(), what
    if x.dtype.is_floating:
        assert np.abs(y64).max() <= 1, what
    elif op.permutation:
        np.testing.assert_array_equal(np.sort(y64, 1), np.tile(np.arange(45), (16, 1)), err_msg=what)
    else:
        assert set(np.unique(y64)) <= {0, 1}, what


def test_every_op_runs_on_every_dtype_it_accepts():
    for op, x in dtype_cases():
        check_output(op, x, op(x, seed=4))


@pytest.mark.slow
def test_dtype_sensitive_ops_compile_with_xla_on_the_narrowest_and_widest_dtypes():
    """XLA kernels differ by dtype: gathers by gene value, 1 - x, wide adds, half-precision noise.
    One compilation for the few cases that exercise them (each op costs seconds to compile)."""
    sensitive = {tf.int8: (evo.ops.RandomValueMutation, evo.ops.InversionMutation, evo.ops.OrderCrossover),
                 tf.uint64: (evo.ops.RandomValueMutation, evo.ops.BitFlipMutation),
                 tf.float16: (evo.ops.GaussianMutation,)}
    cases = [(op, x) for op, x in dtype_cases() if isinstance(op, sensitive.get(x.dtype, ()))]
    key = rng.key(4)

    def run_all(populations, key):
        return [op.apply([x], key, Rows.all(16)) for (op, _), x in zip(cases, populations)]

    populations = [x for _, x in cases]
    for (op, x), eager, xla in zip(cases, run_all(populations, key), fusion.xla_function(run_all)(populations, key)):
        check_output(op, x, xla)
        if x.dtype.is_floating:
            np.testing.assert_allclose(xla.numpy().astype(np.float64), eager.numpy().astype(np.float64), atol=1e-2)
        else:
            np.testing.assert_array_equal(xla.numpy(), eager.numpy())


def test_models_evolve_narrow_integer_genomes():
    angles = np.arange(12) * 2 * np.pi / 12
    tsp = evo.fitness.TSP(coordinates=np.stack([np.cos(angles), np.sin(angles)], 1))
    results = {}
    for dtype in ("int8", "int32"):
        inputs = evo.Input((12,), dtype)
        x = evo.ops.InversionMutation(0.5)(evo.ops.OrderCrossover(probability=0.7)(inputs))
        model = evo.Model(inputs, x)
        model.compile(tsp, evo.selection.Tournament(3, elitism=1), mode="graph", seed=0)
        results[dtype] = model.evolve(tf.cast(evo.population.permutations(32, 12, seed=0), dtype), generations=20)
        assert results[dtype].population.dtype == dtype
    np.testing.assert_array_equal(results["int8"].population, results["int32"].population)  # same random numbers
    assert results["int8"].history == results["int32"].history


def test_dtypes_and_values_that_do_not_fit_are_errors():
    x8 = np.zeros((4, 8), np.int8)
    with pytest.raises(ValueError, match=r"values in \[0, 200\) do not fit dtype int8 \(-128..127\)"):
        evo.ops.RandomValueMutation(1.0, low=0, high=200)(x8)
    with pytest.raises(ValueError, match=r"do not fit dtype uint8"):
        evo.ops.RandomValueMutation(1.0, low=-1, high=2)(evo.Input((8,), "uint8"))
    assert evo.ops.RandomValueMutation(1.0, low=-128, high=128)(x8, seed=1).numpy().min() < -100
    with pytest.raises(ValueError, match=r"values in \[0, 300\) do not fit dtype int8"):
        evo.ops.InversionMutation()(evo.Input((300,), "int8"))
    with pytest.raises(ValueError, match="do not fit dtype uint8"):
        evo.population.random_integers((4, 8), 0, 300, dtype="uint8")
    with pytest.raises(ValueError, match="at most 2\\*\\*31 values"):
        evo.ops.RandomValueMutation(0.1, low=0, high=2**40)
    for bad in (np.zeros((4, 8), bool), np.zeros((4, 8), np.complex64), np.array([["a"] * 8] * 4)):
        with pytest.raises(TypeError, match="needs integer or float genes"):
            evo.ops.UniformCrossover()(bad)
    with pytest.raises(TypeError, match="Input needs integer or float genes"):
        evo.Input((8,), "bool")


# -- direct calls and edge inputs ---------------------------------------------------------------------------


def test_direct_calls_draw_fresh_randomness_unless_seeded():
    x = evo.population.random_integers((32, 64), 0, 2, seed=1)
    twice = evo.ops.BitFlipMutation(0.1)(evo.ops.BitFlipMutation(0.1)(x)).numpy()
    assert (twice != x.numpy()).mean() > 0.1  # two different masks; the same mask would cancel
    op = evo.ops.UniformCrossover()
    assert not np.array_equal(op(x).numpy(), op(x).numpy())
    np.testing.assert_array_equal(op(x, seed=5).numpy(), op(x, seed=5).numpy())
    assert not np.array_equal(op(x, seed=5).numpy(), op(x, seed=6).numpy())


@pytest.mark.parametrize("op", [evo.ops.UniformCrossover(), evo.ops.OrderCrossover(), evo.ops.BitFlipMutation(0.1)],
                         ids=repr)
def test_an_empty_population_is_a_clear_error(op):
    with pytest.raises(ValueError, match=r"the population is empty \(shape \(0, 8\)\)"):
        op(np.zeros((0, 8), np.int32))


def test_probability_must_be_a_probability():
    with pytest.raises(ValueError, match=r"OrderCrossover: probability must be in \[0, 1\]"):
        evo.ops.OrderCrossover(probability=1.5)
    with pytest.raises(TypeError, match="UniformCrossover: probability must be a number"):
        evo.ops.UniformCrossover(probability="often")


def test_pairs_of_draws_are_independent():
    """Two ops in one graph get different keys (fold_in per node): their masks must not coincide."""
    key = rng.key(0)
    a = evo.ops.BitFlipMutation(0.5).apply([tf.zeros((64, 40), tf.int32)], rng.fold_in(key, 1), Rows.all(64))
    b = evo.ops.BitFlipMutation(0.5).apply([tf.zeros((64, 40), tf.int32)], rng.fold_in(key, 2), Rows.all(64))
    agree = (a.numpy() == b.numpy()).sum()
    assert_count(agree, a.numpy().size, 0.5, "agreeing genes")


# -- sort-free permutation kernels ------------------------------------------------------------------------


def test_shuffle_is_uniform_over_each_segment():
    """Length 3: two cuts uniform in [0, 3] give the segment, then every order of it is equally likely;
    the chance of each child follows by enumeration."""
    import itertools

    n, length = 12000, 3
    x = np.tile(np.arange(length, dtype=np.int32), (n, 1))
    y = evo.ops.ShuffleMutation()(x, seed=3).numpy()
    perms = list(itertools.permutations(range(length)))
    expected = dict.fromkeys(perms, 0.0)
    for c1, c2 in itertools.product(range(length + 1), repeat=2):
        a, b = min(c1, c2), max(c1, c2)
        for order in itertools.permutations(range(a, b)):
            expected[tuple(range(a)) + order + tuple(range(b, length))] += 1 / (length + 1) ** 2 / math.factorial(b - a)
    seen = [sum(tuple(r) == p for r in y.tolist()) for p in perms]
    assert_counts(seen, [expected[p] for p in perms], "child")


def fisher_yates_textbook(targets, start, stop):
    """Swap positions i and targets[:, i] for i = start .. stop - 1, in turn, in every row."""
    n, length = targets.shape
    out, rows = np.tile(np.arange(length), (n, 1)), np.arange(n)
    for i in range(start, stop):
        out[rows, i], out[rows, targets[:, i]] = out[rows, targets[:, i]], out[rows, i].copy()
    return out


def test_fisher_yates_swaps_in_order_and_is_uniform():
    from course_lib.evo.ops.permutation import fisher_yates

    n, length = 24000, 4
    draws = np.random.default_rng(0)
    targets = np.stack([draws.integers(i, length, n) for i in range(length)], 1).astype(np.int32)
    got = fisher_yates(tf.constant(targets), tf.constant(0), tf.constant(length)).numpy()
    np.testing.assert_array_equal(got, fisher_yates_textbook(targets, 0, length))
    _, counts = np.unique(got, axis=0, return_counts=True)
    assert len(counts) == 24
    assert_counts(counts, [1 / 24] * 24, "permutation")
    partial = fisher_yates(tf.constant(targets), tf.constant(1), tf.constant(3)).numpy()  # steps 1 and 2 only
    np.testing.assert_array_equal(partial, fisher_yates_textbook(targets, 1, 3))
    assert (partial[:, 0] == 0).all() and not np.array_equal(partial, got)


@pytest.mark.parametrize("length", [5, 32, 37, 70])
def test_inverse_permutation_place_and_exclusive_count_in_every_mode(length):
    from course_lib.evo.ops.permutation import exclusive_count
    from course_lib.evo.tours import inverse_permutation, place

    x = evo.population.permutations(9, length, seed=length)
    flags = evo.population.random_integers((9, length), 0, 2, seed=1) > 0
    values = evo.population.random_integers((9, length), 0, 100, seed=2)

    def kernels(x, flags, values):
        return inverse_permutation(x), place(values, x), exclusive_count(flags)

    expected_inverse = np.argsort(x.numpy(), axis=1)
    expected_place = np.zeros((9, length), np.int32)
    np.put_along_axis(expected_place, x.numpy(), values.numpy(), axis=1)
    expected_count = np.cumsum(flags.numpy(), axis=1) - flags.numpy()
    for run in (kernels, tf.function(kernels), fusion.xla_function(kernels)):
        inverse, placed, count = run(x, flags, values)
        np.testing.assert_array_equal(inverse.numpy(), expected_inverse)
        np.testing.assert_array_equal(placed.numpy(), expected_place)
        np.testing.assert_array_equal(count.numpy(), expected_count)
