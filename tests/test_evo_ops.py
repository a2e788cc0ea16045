"""course_lib.evo ops, random numbers and packing: valid output, per-individual randomness,
XLA compilation, batch invariance, packed == unpacked, the op registry, exact configurations,
and clear errors."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.benchmarks import ops as op_benchmarks
from course_lib.evo import bitpack, fusion, rng
from course_lib.evo.ops import base
from course_lib.evo.ops.mutation import BlockPicks, GeneMask
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import GenomeSpec

N = 24


def binary(n=N, length=40, seed=0):
    return evo.population.random_integers((n, length), 0, 2, seed=seed)


def labelled(n=N, shape=(40,)):
    """Row i is all i: a child's genes then name the parents they came from."""
    return tf.constant(np.broadcast_to(np.arange(n).reshape((n,) + (1,) * len(shape)), (n, *shape)).copy(), tf.int32)


# -- random numbers ---------------------------------------------------------------------------


def test_threefry_matches_the_reference_test_vectors():
    u32 = tf.uint32
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, ctr, expected in cases:
        a, b = rng.threefry2x32(tf.constant(key, u32), tf.constant(ctr[0], u32), tf.constant(ctr[1], u32))
        assert (int(a), int(b)) == expected


def test_draws_depend_only_on_key_row_and_column():
    key = rng.key(3)
    full = rng.bits(key, Rows.all(10), (7,)).numpy()
    part = rng.bits(key, Rows(4, 3, 10), (7,)).numpy()
    np.testing.assert_array_equal(part, full[4:7])
    assert not np.array_equal(full, rng.bits(rng.fold_in(key, 1), Rows.all(10), (7,)).numpy())


def test_uniform_integers_and_normal_ranges():
    rows = Rows.all(200)
    u = rng.uniform(rng.key(0), rows, (50,)).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    i = rng.integers(rng.key(1), rows, (50,), 7).numpy()
    assert i.min() == 0 and i.max() == 6
    words = rng.bits(rng.key(1), rows, (50,)).numpy().astype(np.uint64)
    for n in (1, 8, 1000, 2**31):  # multiply-high, or its shortcut for powers of two
        expected = (words * np.uint64(n)) >> np.uint64(32)
        np.testing.assert_array_equal(rng.integers(rng.key(1), rows, (50,), n).numpy(), expected)
    z = rng.normal(rng.key(2), rows, (50,)).numpy()
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03


def test_seed_must_be_a_non_negative_int():
    with pytest.raises(ValueError, match="seed must be a whole number"):
        rng.key(-1)


@pytest.mark.parametrize("fitness", [evo.fitness.Rastrigin(), evo.fitness.Ackley()])
def test_fitness_computed_per_element_under_xla_equals_graph_execution(fitness):
    # fusion.per_element: the genes as one flat vector, pinned without a key; rows of 7 are not whole vectors
    x = tf.constant(np.random.default_rng(0).uniform(-5, 5, (33, 7)).astype(np.float32))
    xla = fusion.xla_function(fitness)(x).numpy()
    assert xla.shape == (33,)
    np.testing.assert_allclose(xla, tf.function(fitness)(x).numpy(), rtol=1e-6, atol=1e-5)


def test_per_element_returns_every_result_in_the_inputs_shape():
    a, b = tf.reshape(tf.range(12.0), (3, 4)), tf.ones((3, 4))
    for run in (lambda a, b: fusion.per_element(lambda x, y: [x + y, x * 2], a, b),
                fusion.xla_function(lambda a, b: fusion.per_element(lambda x, y: [x + y, x * 2], a, b))):
        total, double = run(a, b)
        np.testing.assert_array_equal(total.numpy(), a.numpy() + 1)
        np.testing.assert_array_equal(double.numpy(), a.numpy() * 2)


def test_cos_2pi_is_accurate():
    from course_lib.evo.fastmath import cos_2pi

    x = np.linspace(-6, 6, 10001).astype(np.float32)
    np.testing.assert_allclose(cos_2pi(tf.constant(x)).numpy(), np.cos(2 * np.pi * x.astype(np.float64)), atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1])
def test_argmin_gives_the_first_least_index_as_numpy_with_nan_counted_least(axis):
    from course_lib.evo.fastmath import argmin

    r = np.random.default_rng(axis)
    x = r.integers(0, 4, (37, 300)).astype(np.float32)  # many ties: the first one wins
    x[5, 7] = x[30, 200] = -np.inf
    with_nan = x.copy()
    with_nan[3, 100] = with_nan[4, 2] = np.nan
    for data in (x, with_nan, x.astype(np.int32)):
        want = np.argmin(data, axis=axis)  # NumPy, like argmin here, takes the first NaN
        compiled = tf.function(lambda t: argmin(t, axis), jit_compile=True)
        for run in (lambda t: argmin(t, axis), compiled):
            np.testing.assert_array_equal(run(tf.constant(data)).numpy(), want)


# -- mutation ---------------------------------------------------------------------------------


def flipped_columns(before, after):
    return [tuple(np.flatnonzero(r)) for r in (np.asarray(before) != np.asarray(after)).reshape(len(before), -1)]


@pytest.mark.parametrize("rate", [1 / 40, 0.5])  # sparse (sampled positions) and dense
def test_bit_flip_flips_different_genes_in_each_individual(rate):
    x = binary()
    y = evo.ops.BitFlipMutation(rate)(x, seed=1).numpy()
    assert set(np.unique(y)) <= {0, 1}
    cols = flipped_columns(x, y)
    assert len(set(c for c in cols if c)) > 3  # not the same columns for everyone (EvoFlow's bug)
    share = np.mean(np.asarray(x) != y)
    assert abs(share - rate) < 0.1 + 2 * rate


def test_gene_mask_count_is_binomial():
    mask = GeneMask(2 / 100, 100)
    assert mask.sparse
    picked = mask.genes(rng.key(5), Rows.all(4000)).numpy().sum(1)
    assert abs(picked.mean() - 2.0) < 0.1  # repeats are rare at this rate
    assert GeneMask(0.0, 100).genes(rng.key(5), Rows.all(3)).numpy().sum() == 0
    assert GeneMask(1.0, 100).genes(rng.key(5), Rows.all(3)).numpy().all()


def test_random_value_mutation_keeps_bounds_and_differs_per_individual():
    x = evo.population.random_integers((N, 30), 3, 6, seed=1)
    y = evo.ops.RandomValueMutation(rate=0.2, low=3, high=6)(x, seed=1).numpy()
    assert y.min() >= 3 and y.max() <= 5
    assert len(set(flipped_columns(x, y))) > 3


def test_gaussian_mutation_clips_and_differs_per_individual():
    x = evo.population.uniform((N, 30), -1, 1, seed=1)
    y = evo.ops.GaussianMutation(stddev=0.5, rate=0.5, low=-1.0, high=1.0)(x, seed=1).numpy()
    assert y.min() >= -1 and y.max() <= 1
    cols = flipped_columns(x, y)
    assert len(set(cols)) == N and 5 < np.mean([len(c) for c in cols]) < 25


def test_mutations_work_on_2d_and_3d_genomes():
    x = evo.population.random_integers((N, 4, 5, 3), 0, 2)
    y = evo.ops.BitFlipMutation(0.1)(x, seed=1)
    assert y.shape == x.shape and len(set(flipped_columns(x, y))) > 3
    f = evo.population.uniform((N, 8, 8), 0, 1)
    assert evo.ops.GaussianMutation(0.1)(f, seed=1).shape == f.shape


# -- crossover --------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [evo.ops.UniformCrossover(), evo.ops.SinglePointCrossover(),
                                evo.ops.TwoPointCrossover()], ids=lambda o: type(o).__name__)
def test_crossover_children_take_each_gene_from_parent_or_one_mate(op):
    x = labelled()
    child = op(x, seed=4).numpy()
    mates = []
    for i, row in enumerate(child):
        others = set(np.unique(row)) - {i}
        assert len(others) <= 1  # genes from the parent i and from one mate, in place
        mates.append(others.pop() if others else None)
    assert len(set(m for m in mates if m is not None)) > 5  # mates chosen per individual


def test_two_input_crossover_masks_differ_per_individual():
    zeros, ones = tf.zeros((N, 64), tf.int32), tf.ones((N, 64), tf.int32)
    uniform = evo.ops.UniformCrossover()(zeros, ones, seed=1).numpy()
    assert len({tuple(r) for r in uniform}) == N and 0.35 < uniform.mean() < 0.65
    single = evo.ops.SinglePointCrossover()(zeros, ones, seed=1).numpy()
    for row in single:  # the parent's genes, then from the cut on the mate's
        cut = np.argmax(row)
        assert 1 <= cut < 64 and row[:cut].sum() == 0 and row[cut:].all()
    assert len({tuple(r) for r in single}) > 5
    two = evo.ops.TwoPointCrossover()(zeros, ones, seed=1).numpy()
    for row in two:  # one contiguous segment from the mate
        assert np.count_nonzero(np.diff(np.concatenate([[0], row, [0]]))) in (0, 2)


def test_point_crossovers_cut_along_the_first_genome_axis():
    zeros, ones = tf.zeros((N, 6, 5), tf.int32), tf.ones((N, 6, 5), tf.int32)
    for op in (evo.ops.SinglePointCrossover(), evo.ops.TwoPointCrossover()):
        child = op(zeros, ones, seed=1).numpy()
        assert (child == child[:, :, :1]).all()  # whole rows of the 6x5 genome
    uniform = evo.ops.UniformCrossover()(zeros, ones, seed=1).numpy()
    assert not (uniform == uniform[:, :, :1]).all()


# -- permutations -------------------------------------------------------------------------------

PERMUTATION_OPS = [evo.ops.SwapMutation(), evo.ops.InversionMutation(), evo.ops.ShuffleMutation(),
                   evo.ops.OrderCrossover()]


@pytest.mark.parametrize("op", PERMUTATION_OPS, ids=lambda o: type(o).__name__)
def test_permutation_ops_keep_permutations_and_differ_per_individual(op):
    x = evo.population.permutations(N, 30, seed=2)
    y = op(x, seed=1).numpy()
    np.testing.assert_array_equal(np.sort(y, axis=1), np.tile(np.arange(30), (N, 1)))
    changed = flipped_columns(x, y)
    assert len(set(c for c in changed if c)) > N // 2


def test_inversion_reverses_one_segment():
    x = evo.population.permutations(N, 20, seed=3).numpy()
    y = evo.ops.InversionMutation()(x, seed=1).numpy()
    for a, b in zip(x, y):
        diff = np.flatnonzero(a != b)
        if diff.size:
            lo, hi = diff[0], diff[-1] + 1
            np.testing.assert_array_equal(b[lo:hi], a[lo:hi][::-1])


def order_crossover_reference(parent, mate, a, b):
    """OX by the textbook: parent[a:b] in place, the rest in the mate's order from b on."""
    n = len(parent)
    child = np.full(n, -1)
    child[a:b] = parent[a:b]
    rest = [g for g in np.roll(mate, -b) if g not in set(parent[a:b])]
    for k, g in enumerate(rest):
        child[(b + k) % n] = g
    return child


def test_order_crossover_is_textbook_ox_with_a_segment_per_individual():
    n = 10
    parents = evo.population.permutations(N, n, seed=5).numpy()
    mate = np.random.default_rng(0).permutation(n)
    child = evo.ops.OrderCrossover()(parents, np.tile(mate, (N, 1)).astype(np.int32), seed=1).numpy()
    segments = []
    for p, c in zip(parents, child):
        found = [(a, b) for a in range(n + 1) for b in range(a, n + 1)
                 if np.array_equal(order_crossover_reference(p, mate, a, b), c)]
        assert found, f"{c} is not an OX child of {p} and {mate}"
        segments.append(found[0])
    assert len(set(segments)) > 5


def test_shuffle_only_moves_genes_inside_a_segment():
    x = evo.population.permutations(N, 20, seed=7).numpy()
    y = evo.ops.ShuffleMutation()(x, seed=1).numpy()
    for a, b in zip(x, y):
        diff = np.flatnonzero(a != b)
        if diff.size:
            lo, hi = diff[0], diff[-1] + 1
            assert set(a[lo:hi]) == set(b[lo:hi])


# -- every registered op compiles with XLA, agrees across modes, and gives the same rows in batches ----

# the package's registered ops: a new op is tested without editing this file (an op class that another
# test file defines registers too, but is that file's to test)
REGISTERED = [name for name, cls in evo.ops.registry().items() if cls.__module__.startswith("course_lib.")]
EXTRA = [evo.ops.BitFlipMutation(0.4), evo.ops.GaussianMutation(0.1, rate=0.3, low=-1.0, high=1.0)]  # dense, clipped


def op_case(op_or_name, n=16, length=32):
    """(op, population): a registered op's example on its kind of population, or an op given as is."""
    if isinstance(op_or_name, str):
        cls = evo.ops.registry()[op_or_name]
        return op_benchmarks.example_op(cls, length), op_benchmarks.example_population(cls.genes, n, length)
    return op_or_name, op_benchmarks.example_population(type(op_or_name).genes, n, length)


@pytest.mark.parametrize("case", REGISTERED + EXTRA, ids=str)
def test_every_op_compiles_with_xla_and_matches_eager(case):
    op, x = op_case(case)
    key = rng.key(4)

    def run(x, key):
        return op.apply([x], key, Rows.all(16))

    eager = run(x, key).numpy()
    xla = fusion.xla_function(run)(x, key).numpy()  # as the engine compiles it
    if x.dtype.is_floating:
        np.testing.assert_allclose(xla, eager, atol=1e-5)
    else:
        np.testing.assert_array_equal(xla, eager)  # integer random numbers: bit-identical
    if op.permutation:
        np.testing.assert_array_equal(np.sort(eager, axis=1), np.tile(np.arange(32), (16, 1)))


@pytest.mark.parametrize("case", REGISTERED + EXTRA, ids=str)
def test_every_op_gives_the_same_rows_in_batches(case):
    op, x = op_case(case)
    key = rng.key(9)
    full = op.apply([x], key, Rows.all(16)).numpy()
    part = op.apply([x], key, Rows(5, 6, 16)).numpy()
    np.testing.assert_array_equal(part, full[5:11])


# -- the registry and exact configurations ------------------------------------------------------------


def test_the_registry_lists_every_op_and_evo_ops_reads_it():
    registry = evo.ops.registry()
    assert {"BitFlipMutation", "RandomValueMutation", "GaussianMutation", "UniformCrossover",
            "SinglePointCrossover", "TwoPointCrossover", "SwapMutation", "InversionMutation", "ShuffleMutation",
            "OrderCrossover", "TwoOpt", "OrOpt"} <= set(registry)
    assert not {"Op", "Mating", "Crossover"} & set(registry)  # base classes are not ops
    assert all(name == cls.__name__ and issubclass(cls, base.Op) for name, cls in registry.items())
    assert all(getattr(evo.ops, name) is cls for name, cls in registry.items())
    assert set(registry) <= set(evo.ops.__all__) and set(registry) <= set(dir(evo.ops))
    listed = {label for cases in op_benchmarks.op_cases().values() for label, _, _ in cases}
    assert listed == set(registry)  # the benchmark table reads the same registry
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchOp'"):
        evo.ops.NoSuchOp


def test_a_new_op_class_registers_itself(monkeypatch):
    monkeypatch.setattr(base, "REGISTRY", dict(base.REGISTRY))  # the class stays out of the other tests

    class ReverseGenome(base.Op):
        """Reverse each genome (a test op)."""

        def apply(self, inputs, key, rows):
            return tf.reverse(rows.take(inputs[0]), axis=[1])

    class _Helper(base.Op):  # private: not an op of its own
        pass

    assert evo.ops.registry()["ReverseGenome"] is ReverseGenome and evo.ops.ReverseGenome is ReverseGenome
    assert "_Helper" not in evo.ops.registry()
    cases = op_benchmarks.op_cases()["test_evo_ops"]
    assert [label for label, _, _ in cases] == ["ReverseGenome"]
    _, x, fns = op_benchmarks.op_variants("ReverseGenome", 4, 6)
    np.testing.assert_array_equal(fns["xla"](x, rng.key(0)).numpy(), x.numpy()[:, ::-1])
    with pytest.raises(TypeError, match="op name 'SwapMutation' is taken by course_lib.evo.ops.permutation"):
        class SwapMutation(base.Op):
            pass


@pytest.mark.parametrize("name", REGISTERED)
def test_get_config_rebuilds_the_same_op(name):
    op, x = op_case(name)
    config = op.get_config()
    clone = type(op)(**config)
    assert clone.get_config() == config and repr(clone) == repr(op)
    assert "name" not in config


def test_get_config_is_exact_where_repr_rounds():
    op = evo.ops.GaussianMutation(stddev=0.1, rate=1 / 3, low=-1.0, high=None)
    assert op.get_config() == {"stddev": 0.1, "rate": 1 / 3, "low": -1.0, "high": None}
    assert evo.ops.BitFlipMutation(0.00012345678).get_config()["rate"] == 0.00012345678
    assert evo.ops.BitFlipMutation(0.00012345678).get_config() != evo.ops.BitFlipMutation(0.0001234567).get_config()
    assert repr(evo.ops.BitFlipMutation(0.00012345678)) == repr(evo.ops.BitFlipMutation(0.0001234567))
    assert evo.ops.OrderCrossover(probability=0.25).get_config() == {"probability": 0.25}


def test_get_config_names_a_parameter_it_cannot_read():
    class Scaled(base.Op, register=False):
        def __init__(self, factor: float, name=None):
            super().__init__(name)
            self._factor = factor

    with pytest.raises(TypeError, match="Scaled.get_config: the constructor parameter 'factor' is not stored"):
        Scaled(2.0).get_config()


# -- packing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(64,), (70,), (6, 7)])
def test_pack_unpack_round_trip(shape):
    x = evo.population.random_integers((5, *shape), 0, 2)
    words = bitpack.pack(x)
    assert words.dtype == tf.uint32 and words.shape == (5, bitpack.n_words(int(np.prod(shape))))
    np.testing.assert_array_equal(bitpack.unpack(words, shape, tf.int32).numpy(), x.numpy())
    np.testing.assert_array_equal(bitpack.popcount(words).numpy(), x.numpy().reshape(5, -1).sum(1))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
def test_all_binary_sees_every_gene_other_than_0_and_1(dtype):
    genes = np.zeros((3, 40), dtype)
    genes[1, ::3] = 1
    assert bool(bitpack.all_binary(tf.constant(genes)))
    bad = [2, np.iinfo(dtype).max] + ([-1, np.iinfo(dtype).min] if np.iinfo(dtype).min < 0 else [])
    for value in bad:
        for row, col in [(0, 0), (2, 39)]:
            wrong = genes.copy()
            wrong[row, col] = value
            assert not bool(bitpack.all_binary(tf.constant(wrong))), (value, row, col)


PACKABLE = [evo.ops.BitFlipMutation(1 / 70), evo.ops.BitFlipMutation(0.3), evo.ops.UniformCrossover(),
            evo.ops.SinglePointCrossover(), evo.ops.TwoPointCrossover()]


@pytest.mark.parametrize("shape", [(70,), (6, 7)])
@pytest.mark.parametrize("op", PACKABLE, ids=repr)
def test_packed_ops_equal_unpacked_ops(op, shape):
    x = evo.population.random_integers((N, *shape), 0, 2, seed=8)
    spec = GenomeSpec(shape, tf.int32)
    key, rows = rng.key(11), Rows.all(N)
    plain = op.apply([x], key, rows).numpy()
    words = op.apply_packed([bitpack.pack(x)], key, rows, spec)
    np.testing.assert_array_equal(bitpack.unpack(words, shape, tf.int32).numpy(), plain)


def test_interval_words_set_exactly_the_interval():
    lo, hi = tf.constant([0, 5, 31, 40, 10]), tf.constant([70, 5, 33, 64, 70])
    bits = bitpack.words_to_bits(bitpack.interval_words(lo, hi, 3), 70).numpy()
    pos = np.arange(70)
    expected = (pos >= lo.numpy()[:, None]) & (pos < hi.numpy()[:, None])
    np.testing.assert_array_equal(bits, expected)


# -- bad input ------------------------------------------------------------------------------------------


def test_op_dtype_errors_name_the_problem():
    floats = evo.Input((8,), "float32")
    ints = evo.Input((8,), "int32")
    with pytest.raises(TypeError, match="BitFlipMutation needs integer genomes, got dtype float32"):
        evo.ops.BitFlipMutation(0.1)(floats)
    with pytest.raises(TypeError, match="GaussianMutation needs float genomes, got dtype int32"):
        evo.ops.GaussianMutation(0.1)(ints)
    with pytest.raises(TypeError, match="InversionMutation needs integer permutation genomes.*float"):
        evo.ops.InversionMutation()(floats)
    with pytest.raises(TypeError, match="OrderCrossover needs integer permutation genomes"):
        evo.ops.OrderCrossover()(tf.zeros((4, 8)))
    with pytest.raises(ValueError, match="needs 1-D permutation genomes"):
        evo.ops.SwapMutation()(evo.Input((4, 4), "int32"))


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_rates_must_be_probabilities(rate):
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\]"):
        evo.ops.BitFlipMutation(rate)
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\]"):
        evo.ops.SwapMutation(rate)


def test_other_op_argument_errors():
    with pytest.raises(TypeError, match="rate must be a number"):
        evo.ops.BitFlipMutation("high")
    with pytest.raises(ValueError, match="low < high"):
        evo.ops.RandomValueMutation(0.1, low=5, high=5)
    with pytest.raises(ValueError, match="stddev must be a positive number"):
        evo.ops.GaussianMutation(0)
    with pytest.raises(ValueError, match="needs length >= 2"):
        evo.ops.SinglePointCrossover()(evo.Input((1, 4), "int32"))
    with pytest.raises(ValueError, match="must have the same genome"):
        evo.ops.UniformCrossover()(evo.Input((8,), "int32"), evo.Input((9,), "int32"))
    with pytest.raises(TypeError, match="takes 1 or 2 population"):
        evo.ops.UniformCrossover()(*[evo.Input((8,))] * 3)
    with pytest.raises(ValueError, match="a population needs shape"):
        evo.ops.BitFlipMutation(0.1)(tf.zeros((8,), tf.int32))
    with pytest.raises(TypeError, match="mix symbolic genomes"):
        evo.ops.UniformCrossover()(evo.Input((8,)), tf.zeros((2, 8), tf.int32))


@pytest.mark.slow
@pytest.mark.parametrize("form", ["words", "genes"])
def test_floyds_later_steps_on_gathered_rows_pick_what_every_row_stepping_picks(form):
    # mean 4 picks in 256 genes: under XLA about 40% of 512 rows need steps past the head, gathered
    # TAIL_ROWS at a time, so the rounds repeat; eager runs every step on every row
    from course_lib.evo.ops import mutation

    mask = GeneMask(4 / 256, 256)
    assert mask.sparse and len(mask.thresholds) > mutation.HEAD_STEPS
    key, everyone = rng.key(7), Rows.all(512)
    eager = getattr(mask, form)(key, everyone).numpy()
    counts = (np.unpackbits(eager.view(np.uint8), axis=1) if form == "words" else eager).sum(1)
    assert (counts > mutation.HEAD_STEPS).sum() > 3 * mutation.TAIL_ROWS and counts.max() > 8
    np.testing.assert_array_equal(fusion.xla_function(lambda k: getattr(mask, form)(k, everyone))(key).numpy(), eager)
    batch = Rows(96, 64, 512)  # a batch's rows draw what they draw in the whole population
    np.testing.assert_array_equal(fusion.xla_function(lambda k: getattr(mask, form)(k, batch))(key).numpy(),
                                  eager[96:160])


def test_sparse_mutation_picks_the_same_genes_eager_and_under_xla():
    # mean 1 pick in 100 genes: a count and Floyd's positions, whose steps XLA computes pinned together
    mask = GeneMask(1 / 100, 100)
    assert mask.sparse and not mask.blocks
    key, rows = rng.key(3), Rows.all(256)
    eager = mask.words(key, rows).numpy()
    np.testing.assert_array_equal(fusion.xla_function(lambda k: mask.words(k, rows))(key).numpy(), eager)
    picks = np.unpackbits(eager.view(np.uint8), axis=1).sum(1)
    assert 150 < picks.sum() < 370 and picks.max() >= 3  # Binomial(100, 1/100) per genome: mean 1


@pytest.mark.slow
@pytest.mark.parametrize("rate,size", [(0.1, 70), (1 / 1024, 1024)])
def test_block_picks_are_the_same_in_every_mode_batch_and_form(rate, size):
    # at rate 0.1 most rows have a block that escapes (3 picks or more), redone a row per loop trip: one
    # Python trip each when eager, so eager execution runs on one batch of the rows and the graph on all
    blocks, key, everyone, batch = BlockPicks(rate), rng.key(11), Rows.all(300), Rows(96, 64, 300)

    def on_all(k):
        return blocks.words(k, everyone, size)

    def on_batch(k):
        return blocks.words(k, batch, size)

    graph = tf.function(on_all)(key).numpy()
    if size % 32:
        assert (graph[:, -1] >> (size % 32) == 0).all()  # no picks past the genome
    np.testing.assert_array_equal(fusion.xla_function(on_all)(key).numpy(), graph)
    for run in (on_batch, fusion.xla_function(on_batch)):
        np.testing.assert_array_equal(run(key).numpy(), graph[96:160])
    onto = np.random.default_rng(1).integers(0, 2**32, graph.shape, dtype=np.uint32)
    flipped = fusion.xla_function(lambda k, x: blocks.words(k, everyone, size, onto=x))(key, tf.constant(onto))
    np.testing.assert_array_equal(flipped.numpy(), onto ^ graph)
    if rate == 0.1:
        assert (np.asarray(tf.raw_ops.PopulationCount(x=graph)) >= 3).any(axis=1).mean() > 0.5
    else:  # GeneMask takes this form at 1/L for L = 1024, the same picks as bools
        mask = GeneMask(rate, size)
        assert mask.blocks and not mask.sparse
        bools = mask.genes(key, everyone).numpy()
        np.testing.assert_array_equal(np.packbits(bools, axis=1, bitorder="little").view(np.uint32), graph)


def test_block_picks_at_a_rate_below_32_bits_pick_nothing_in_every_mode():
    # every interval ends at 2**32, past what a uint32 comparison holds: the block form must still build
    mask = GeneMask(1e-300, 100)
    assert mask.blocks and mask.blocks.t2 == 2**32
    rows = Rows.all(8)
    assert mask.words(rng.key(1), rows).numpy().sum() == 0
    assert fusion.xla_function(lambda k: mask.words(k, rows))(rng.key(1)).numpy().sum() == 0
