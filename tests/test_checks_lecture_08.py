"""Lecture 08's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import pytest
import tensorflow as tf

from course_lib import bench, checks
from course_lib.models import g2p

WORDS = ["cat", "banana", "io", "strength", "a", "zebra", "queue"]


@tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
def fake_decoder(x):
    """Stands in for g2p.greedy_decoder: one phoneme per letter, then </s>; the batch runs to its longest word."""
    letters = tf.reduce_sum(tf.cast(x > 2, tf.int32), axis=1)
    steps = tf.minimum(tf.reduce_max(letters) + 1, g2p.MAX_PHONES)
    t = tf.range(steps)[None, :]
    ids = 4 + (t + x[:, :1]) % 40
    return tf.where(t < letters[:, None], ids, g2p.END_ID)


def fail(k, **answer):
    return checks.failure("08", k, **answer)


def test_one_call_for_seven_words():
    one_by_one = [g2p.predict(fake_decoder, [w])[0] for w in WORDS]
    batched = g2p.predict(fake_decoder, WORDS)
    ok = dict(one_by_one=one_by_one, batched=batched, words=WORDS, decoder=fake_decoder)
    assert fail(1, **ok) is None
    nested = [g2p.predict(fake_decoder, [w]) for w in WORDS]
    assert "list of phoneme strings" in fail(1, **dict(ok, one_by_one=nested))
    assert "batched differs" in fail(1, **dict(ok, batched=batched[::-1]))
    assert "list of 7" in fail(1, **dict(ok, batched=batched[:1]))


@pytest.fixture(scope="module")
def batching_inputs():
    singles = [tf.constant(g2p.encode_words([w])) for w in WORDS]
    together = tf.constant(g2p.encode_words(WORDS))
    variants = {"one word per call": lambda: [fake_decoder(x) for x in singles],
                "7 words per call": lambda: fake_decoder(together)}
    batching = bench.compare(variants, baseline="one word per call", repeats=3, number=2)
    return dict(variants=variants, batching=batching, decoder=fake_decoder, singles=singles, together=together,
                ms_per_word=batching["7 words per call"].median_s * 1e3 / 7)


def test_what_batching_buys(batching_inputs):
    ok = batching_inputs
    singles = ok["singles"]
    assert fail(2, **ok) is None
    def loop_without_return():
        for x in singles:
            fake_decoder(x)

    returns_nothing = dict(ok["variants"], **{"one word per call": loop_without_return})
    assert "should return 7 results" in fail(2, **dict(ok, variants=returns_nothing))
    one_call = dict(ok["variants"], **{"one word per call": lambda: fake_decoder(singles[0])})
    assert "one decoder call per word" in fail(2, **dict(ok, variants=one_call))
    other_decoder = g2p.predict
    calls_other = dict(ok["variants"], **{"7 words per call": lambda: other_decoder(fake_decoder, ["cat"])})
    assert "'7 words per call'" in fail(2, **dict(ok, variants=calls_other))
    not_per_word = ok["batching"]["7 words per call"].median_s * 1e3
    assert "ms_per_word" in fail(2, **dict(ok, ms_per_word=not_per_word))
    other_run = bench.compare(ok["variants"], baseline="one word per call", repeats=3, number=2)
    assert "ms_per_word" in fail(2, **dict(ok, ms_per_word=other_run["7 words per call"].median_s * 1e3 / 7))
    one_repeat = bench.compare(ok["variants"], baseline="one word per call", repeats=1, number=1)
    assert "repeats=3" in fail(2, **dict(ok, batching=one_repeat,
                                         ms_per_word=one_repeat["7 words per call"].median_s * 1e3 / 7))
    swapped = {"one word per call": ok["variants"]["7 words per call"],
               "7 words per call": ok["variants"]["one word per call"]}
    assert "one decoder call per word" in fail(2, **dict(ok, variants=swapped))


def test_ship_it(tmp_path):
    decoder, words = fake_decoder, WORDS[:3]
    path = tmp_path / "served"
    module = tf.Module()
    module.phonemes = fake_decoder  # what g2p.export_saved_model writes: one endpoint, phonemes
    tf.saved_model.save(module, str(path))
    served = g2p.load_saved_model(path)
    ok = dict(path=str(path), served=served, served_phonemes=g2p.predict(served, words), decoder=decoder, words=words)
    assert fail(3, **ok) is None
    assert "reload it" in fail(3, **dict(ok, served=decoder))
    assert "no SavedModel" in fail(3, **dict(ok, path=str(tmp_path / "elsewhere")))
    assert "not what served predicts" in fail(3, **dict(ok, served_phonemes=ok["served_phonemes"][::-1]))


def test_predict_steps(batching_inputs):
    batched = g2p.predict(fake_decoder, WORDS)
    steps = [min(len(p) + 1, g2p.MAX_PHONES) for p in batched]
    ok = dict(steps_one_by_one=sum(steps), steps_batched=max(steps), decoder=fake_decoder,
              singles=batching_inputs["singles"], together=batching_inputs["together"])
    assert fail(4, **ok) is None
    assert "until the last one ends" in fail(4, **dict(ok, steps_batched=sum(steps)))
    assert "</s> included" in fail(4, **dict(ok, steps_one_by_one=sum(len(p) for p in batched)))
    assert "until the last one ends" in fail(4, **dict(ok, steps_batched=7 * max(steps)))
    assert "whole number" in fail(4, **dict(ok, steps_batched=float(max(steps))))
