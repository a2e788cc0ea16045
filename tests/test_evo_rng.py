"""course_lib.evo.rng: the statistical quality a GA needs from its words, for both generators.

The SplitMix64 streams (the default) and Threefry-2x32-20 (``rng.drawing("threefry")``, the
other named generator) are held to the same tests: every bit of a word fair, the words uniform
(a chi-square over byte values), no correlation between neighbouring counters (adjacent
columns, adjacent rows) nor between streams of keys one ``fold_in`` apart, and the same
words for a row whether it is drawn in a batch, in any mode. The bounds are about six
standard deviations of each statistic for independent uniform words, so a fair generator
fails them with a probability far below 1e-6 (and the draws are seeded: a pass repeats).
"""

import numpy as np
import pytest
import tensorflow as tf

from course_lib.evo import fusion, rng
from course_lib.evo.rng import Rows

ROWS, WORDS = 2048, 64  # 131,072 words per draw

GENERATORS = {name: lambda name=name: rng.drawing(name) for name in rng.GENERATORS}


def draw(generator, key=rng.key(11), rows=Rows.all(ROWS), shape=(WORDS,)) -> np.ndarray:
    with GENERATORS[generator]():
        return rng.bits(key, rows, shape).numpy()


def bit_planes(words: np.ndarray) -> np.ndarray:
    """(..., 32) array of the words' bits, as 0/1 floats."""
    return ((words[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.float64)


@pytest.fixture(params=list(GENERATORS))
def generator(request):
    return request.param


def test_every_bit_is_fair(generator):
    planes = bit_planes(draw(generator)).reshape(-1, 32)
    sd = 0.5 / np.sqrt(planes.shape[0])
    assert np.abs(planes.mean(0) - 0.5).max() < 6 * sd


def test_byte_values_are_uniform(generator):
    counts = np.bincount(draw(generator).view(np.uint8).ravel(), minlength=256)
    expected = counts.sum() / 256
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 255 + 6 * np.sqrt(2 * 255)  # chi-square, 255 degrees of freedom: mean 255, sd 22.6


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """The largest |correlation| between any bit of ``a`` and the same bit of ``b`` (paired words)."""
    x, y = bit_planes(a).reshape(-1, 32), bit_planes(b).reshape(-1, 32)
    x, y = x - x.mean(0), y - y.mean(0)
    return float(np.abs((x * y).mean(0) / (x.std(0) * y.std(0))).max())


def test_neighbouring_counters_are_uncorrelated(generator):
    words = draw(generator)
    bound = 6 / np.sqrt(words.size // 2)
    assert correlation(words[:, :-1], words[:, 1:]) < bound  # next column: the other half of one SplitMix64 word
    assert correlation(words[:, :-2], words[:, 2:]) < bound  # next word of the stream
    assert correlation(words[:-1], words[1:]) < bound  # next row: another stream


def test_streams_of_neighbouring_keys_are_uncorrelated(generator):
    key = rng.key(11)
    a, b = draw(generator, rng.fold_in(key, 1)), draw(generator, rng.fold_in(key, 2))
    generations = [draw(generator, rng.fold_in(key, tf.constant(g))) for g in (5, 6)]
    bound = 6 / np.sqrt(a.size)
    assert correlation(a, b) < bound  # two nodes of one generation
    assert correlation(*generations) < bound  # one node in consecutive generations


def test_a_row_draws_the_same_words_in_any_batch_and_mode(generator):
    whole = draw(generator, shape=(7,))  # odd: the last SplitMix64 word gives one half
    assert np.array_equal(draw(generator, rows=Rows(100, 30, ROWS), shape=(7,)), whole[100:130])
    with GENERATORS[generator]():
        compiled = fusion.xla_function(lambda k: rng.bits(k, Rows.all(ROWS), (7,)))(rng.key(11)).numpy()
    assert np.array_equal(compiled, whole)


def test_the_two_generators_draw_different_words():
    assert not np.array_equal(draw("splitmix64"), draw("threefry"))


def test_counting_counts_the_words_drawn(generator):
    with GENERATORS[generator](), rng.counting() as words:
        rng.bits(rng.key(1), Rows.all(10), (3, 5))
        rng.normal(rng.key(1), Rows.all(10), (7,))  # 4 pairs of words per row
    assert words[0] == 10 * 15 + 10 * 8


def test_normals_repeat_bit_for_bit_in_a_batch_and_agree_across_modes_to_rounding():
    key, shape = rng.key(5), (9,)
    whole = fusion.xla_function(lambda k: rng.normal(k, Rows.all(ROWS), shape))(key).numpy()
    batch = fusion.xla_function(lambda k, start: rng.normal(k, Rows(start, 30, ROWS), shape))
    np.testing.assert_array_equal(batch(key, tf.constant(100)).numpy(), whole[100:130])
    eager = rng.normal(key, Rows.all(ROWS), shape).numpy()
    np.testing.assert_allclose(whole, eager, rtol=0, atol=1e-6)  # the last bit may differ (fastmath)


@pytest.mark.slow
@pytest.mark.parametrize("generator", rng.GENERATORS)
def test_a_model_compiled_with_either_generator_repeats_its_run(generator):
    from course_lib import evo

    population = evo.population.random_integers((16, 32), 0, 2, seed=0)

    def run(mode):
        inputs = evo.Input(shape=(32,), dtype="int32")
        model = evo.Model(inputs, evo.ops.BitFlipMutation(rate=1 / 32)(evo.ops.UniformCrossover()(inputs)))
        model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode=mode, seed=4,
                      generator=generator)
        return model.evolve(population, generations=5).population

    first = run("xla")
    np.testing.assert_array_equal(run("xla"), first)
    np.testing.assert_array_equal(run("eager"), first)
    other = [g for g in rng.GENERATORS if g != generator][0]
    with rng.drawing(other):  # what the program draws is the model's choice, not the caller's context
        np.testing.assert_array_equal(run("graph"), first)


def test_an_unknown_generator_is_a_clear_error():
    from course_lib import evo

    inputs = evo.Input(shape=(8,), dtype="int32")
    model = evo.Model(inputs, evo.ops.BitFlipMutation(rate=0.1)(inputs))
    with pytest.raises(ValueError, match="unknown random-word generator 'mt19937'; choose one of splitmix64, threefry"):
        model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), generator="mt19937")
