"""Checkers for lecture 08, CPU inference of a g2p model: batching, measuring it, shipping it."""

from __future__ import annotations

import os

import numpy as np

from course_lib.checks import exercise, method
from course_lib.models import g2p


def _phoneme_lists(value, n: int, name: str) -> None:
    assert isinstance(value, list) and len(value) == n, \
        f"{name} should be a list of {n} phoneme lists, one per word, got {_len(value)}"
    for p in value:
        assert isinstance(p, list) and all(isinstance(s, str) for s in p), \
            f"each entry of {name} should be a list of phoneme strings, got {p!r}"


def _len(value) -> str:
    return f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__


@exercise("08", 1, "one call for seven words",
          "g2p.predict takes a decoder and a list of words and returns one phoneme list per word.",
          "One way calls it once per word (a list of one word, keep its single result); the other "
          "calls it once with the whole list.")
def one_call_for_seven_words(one_by_one, batched, words, decoder):
    words = list(words)
    _phoneme_lists(one_by_one, len(words), "one_by_one")
    _phoneme_lists(batched, len(words), "batched")
    alone = [g2p.predict(decoder, [w])[0] for w in words]
    assert one_by_one == alone, "one_by_one differs from decoding each word alone, in the order of words"
    assert batched == alone, "batched differs from decoding each word alone: padding changed a word, " \
                             "or the order is not the order of words"


@exercise("08", 2, "what batching buys",
          "bench.compare takes a dict of zero-argument functions; the encoded inputs are in singles and together.",
          "Each variant must return what its decoder calls produced, so that bench forces it; ms_per_word "
          "reads the batched variant's median from batching and shares it among the words.")
def what_batching_buys(variants, batching, ms_per_word, decoder, singles, together):
    names = ["one word per call", "7 words per call"]
    method.variants_named(variants, names)
    for name in names:
        assert method.calls(variants[name], decoder), f"variant {name!r} should call decoder"
    method.same(method.value_of(variants, names[0]), [decoder(x) for x in singles],
                "'one word per call' (one decoder call per word, the results in a list)")
    method.same(method.value_of(variants, names[1]), decoder(together),
                "'7 words per call' (one decoder call on together)")
    method.comparison(batching, names, names[0], repeats=3)
    method.close(ms_per_word, batching[names[1]].median_s * 1e3 / len(singles),
                 "ms_per_word (the batched median in ms over the number of words)")


@exercise("08", 3, "ship it",
          "g2p has a function that writes a SavedModel and one that reads it back.",
          "What comes back from the folder is a decoder like the one in memory: anything g2p.predict "
          "accepts, it accepts. The check fails if served is still the decoder in memory.")
def ship_it(path, served, served_phonemes, decoder, words):
    assert os.path.exists(os.path.join(str(path), "saved_model.pb")), f"no SavedModel written to {path}"
    assert callable(served), "served should be the callable g2p.load_saved_model returns"
    assert served is not decoder and not method.calls(served, decoder), \
        "served is the decoder in memory; reload it from path with g2p.load_saved_model"
    expected = g2p.predict(decoder, list(words))
    assert served_phonemes == g2p.predict(served, list(words)), "served_phonemes are not what served predicts"
    assert served_phonemes == expected, "the reloaded model predicts other phonemes than the decoder"


@exercise("08", 4, "predict the decoder's steps",
          "The decoder loops one phoneme per step, and stops when every word in its batch has written </s> "
          "(or after g2p.MAX_PHONES steps).",
          "Count one word decoded alone first: which steps write its phonemes, and which step ends it? Then "
          "ask which word of a batch decides when the batch's loop stops. The phoneme lists of exercise 1 "
          "hold what you need.")
def predict_steps(steps_one_by_one, steps_batched, decoder, singles, together):
    for name, value in (("steps_one_by_one", steps_one_by_one), ("steps_batched", steps_batched)):
        assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
            f"{name} should be a whole number of steps, got {type(value).__name__}"
    alone = [int(decoder(x).shape[1]) for x in singles]
    together_steps = int(decoder(together).shape[1])
    assert steps_one_by_one == sum(alone), \
        f"steps_one_by_one is {steps_one_by_one}: count every word's steps, </s> included, over all the calls"
    assert steps_batched == together_steps, \
        f"steps_batched is {steps_batched}: in one call all words step together, until the last one ends"
