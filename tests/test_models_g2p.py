"""The g2p model: data, shapes, training, and inference paths that agree on the same weights."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench
from course_lib.models import g2p


@pytest.fixture(scope="module")
def lexicon():
    return g2p.load_lexicon(300, seed=1)


@pytest.fixture(scope="module")
def trained(lexicon, tmp_path_factory):
    """A small model trained briefly, its weights file, and words it did not see."""
    train, held = lexicon.split(40)
    result = g2p.trained(train, steps=40, batch_size=32, embed_dim=16, units=32,
                         cache_dir=tmp_path_factory.mktemp("g2p"))
    return result, held


def test_lexicon_is_reproducible_and_plain(lexicon):
    again = g2p.load_lexicon(300, seed=1)
    assert again.words == lexicon.words and again.phonemes == lexicon.phonemes
    assert len(lexicon) == 300
    assert all(w.isalpha() and w.islower() and 2 <= len(w) <= 10 for w in lexicon.words)
    symbols = set(g2p.phoneme_symbols())
    assert all(p in symbols for phones in lexicon.phonemes for p in phones)
    assert g2p.load_lexicon(300, seed=2).words != lexicon.words


def test_lexicon_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_words must be between"):
        g2p.load_lexicon(0)
    with pytest.raises(ValueError, match="max_letters"):
        g2p.load_lexicon(10, max_letters=40)


def test_encoding_pads_and_ends_words():
    x = g2p.encode_words(["ab", "cat"])
    assert x.shape == (2, 4) and x.dtype == np.int32
    end = g2p.GRAPHEMES.index(g2p.END)
    assert list(x[0]) == [g2p.GRAPHEMES.index("a"), g2p.GRAPHEMES.index("b"), end, 0]
    y = g2p.encode_phonemes([["K", "AE1", "T"]])
    assert y[0, 0] == g2p.START_ID and y[0, -1] == g2p.END_ID and y.shape == (1, 5)
    assert g2p.to_phonemes(y[:, 1:]) == [["K", "AE1", "T"]]
    with pytest.raises(TypeError, match="list of words"):
        g2p.encode_words("cat")
    with pytest.raises(ValueError, match="1 to 12 letters"):
        g2p.encode_words(["x" * 13])


def test_shapes():
    model = g2p.build(embed_dim=8, units=16)
    x = tf.constant(g2p.encode_words(["hello", "to"]))
    annotations, mask, state = model.encode(x)
    assert annotations.shape == (2, 6, 16) and mask.shape == (2, 6) and state.shape == (2, 16)
    logits = model((x, tf.fill([2, 3], g2p.START_ID)))
    assert logits.shape == (2, 3, len(g2p.phoneme_symbols()))
    step_logits, new_state = model.step(tf.fill([2], g2p.START_ID), state, annotations, mask)
    assert step_logits.shape == (2, len(g2p.phoneme_symbols())) and new_state.shape == (2, 16)
    with pytest.raises(ValueError, match="units must be even"):
        g2p.G2P(units=15)


@pytest.mark.slow
def test_a_few_training_steps_lower_the_loss(lexicon):
    model = g2p.build(embed_dim=16, units=32)
    losses = g2p.train(model, lexicon, steps=15, batch_size=32)
    assert len(losses) == 15
    assert np.mean(losses[-3:]) < losses[0]


@pytest.mark.slow
def test_all_inference_paths_give_identical_phonemes(trained, tmp_path):
    result, held = trained
    saved = g2p.export_saved_model(result.model, tmp_path / "g2p")
    fns = g2p.paths(result.model, saved_model=saved)
    assert list(fns) == ["naive, eager", "naive, tf.function", "one graph", "SavedModel, reloaded"]
    outputs = {name: g2p.predict(fn, held.words) for name, fn in fns.items()}
    reference = outputs["one graph"]
    for name, phones in outputs.items():
        assert phones == reference, name
    assert all(len(p) <= g2p.MAX_PHONES for p in reference)
    one_at_a_time = [g2p.predict(fns["one graph"], [w])[0] for w in held.words[:10]]
    assert one_at_a_time == reference[:10]


@pytest.mark.slow
def test_saved_model_reload_gives_the_same_ids(trained, tmp_path):
    result, held = trained
    x = tf.constant(g2p.encode_words(held.words[:5]))
    saved = g2p.export_saved_model(result.model, tmp_path / "g2p")
    reloaded = g2p.load_saved_model(saved)
    np.testing.assert_array_equal(reloaded(x).numpy(), g2p.greedy_decoder(result.model)(x).numpy())
    with pytest.raises(FileNotFoundError, match="no SavedModel"):
        g2p.load_saved_model(tmp_path / "missing")


def test_weights_round_trip_and_cache(trained, lexicon):
    result, held = trained
    assert not result.cached and result.weights.exists()
    again = g2p.trained(lexicon.split(40)[0], steps=40, batch_size=32, embed_dim=16, units=32,
                        cache_dir=result.weights.parent)
    assert again.cached and again.losses == result.losses
    assert g2p.predict(g2p.greedy_decoder(again.model), held.words) == \
        g2p.predict(g2p.greedy_decoder(result.model), held.words)
    with pytest.raises(FileNotFoundError, match="no g2p weights"):
        g2p.load_weights(result.weights.parent / "nothing.npz")


def test_a_latency_table_has_a_row_per_path_and_a_column_per_batch_size(trained):
    result, held = trained
    widget = g2p.inference_widget({"one graph": g2p.greedy_decoder(result.model)}, held.words, (1, 3), repeats=1)
    table = g2p.LatencyTable({k: widget.run(words_per_call=k) for k in (1, 3)})
    assert list(table.comparisons) == [1, 3]
    (row,) = table.rows()
    assert row["path"] == "one graph" and row["1 word (ms)"] > 0 and row["speedup"] == "1.0x / 1.0x"
    assert "<table>" in table._repr_html_()
    with pytest.raises(ValueError, match="need at least 50 words"):
        g2p.inference_widget({"one graph": None}, held.words[:5], (1, 50))
    with pytest.raises(ValueError, match="at least one path"):
        g2p.inference_widget({}, held.words, (1,))


def test_inference_widget_runs_every_path_at_the_chosen_batch(trained):
    result, held = trained
    fns = {"one graph": g2p.greedy_decoder(result.model), "naive": g2p.paths(result.model)["naive, tf.function"]}
    widget = g2p.inference_widget(fns, held.words, (1, 3), repeats=2)
    comparison = widget.run(words_per_call=3)
    assert comparison.names == ["one graph", "naive"] and comparison.params == {"words_per_call": 3}
    assert comparison.rounds in range(2, 2 * bench.MOST_ROUNDS + 1, 2)  # the same rounds for every path:
    assert all(len(t.times_s) == comparison.rounds for t in comparison.timings)
    with pytest.raises(ValueError, match="need at least 50 words"):
        g2p.inference_widget(fns, held.words[:5], (1, 50))


def _comparison(k, noise=0.01, **medians):
    """A constructed comparison at ``k`` words per call: 31 rounds spread evenly by ``noise`` around each median
    (in an order of their own per variant), and an A/A."""
    def rounds(m, seed):
        return list(m * (1 + noise * np.random.default_rng(seed).permutation(np.linspace(-1, 1, 31))))
    timings = [bench.Timing(name, first_call_s=m, times_s=rounds(m, i), number=1)
               for i, (name, m) in enumerate(medians.items())]
    first = next(iter(medians.values()))
    return bench.Comparison(timings, baseline=timings[0].name, params={"words": k},
                            twin=bench.Timing("A/A", first, rounds(first, 99), 1))


def test_gains_credit_the_largest_called_step_from_one_run():
    table = g2p.LatencyTable({1: _comparison(1, eager=0.4, graph=0.02, loop=0.004),
                              20: _comparison(20, eager=0.5, graph=0.025, loop=0.008)})
    gains = {step: (ratio, call) for step, ratio, call in table.gains()}
    assert gains["eager -> graph (20 words per call)"] == (pytest.approx(20), "faster")
    assert gains["graph -> loop (20 words per call)"] == (pytest.approx(3.125), "faster")
    assert len(gains) == 2, "batching is measured in separate runs here, so it is not divided"
    assert str(table.largest_gain()).endswith("the largest single gain here: eager -> graph (20 words per call), 20x")
    restructured = g2p.LatencyTable({20: _comparison(20, eager=0.5, graph=0.4, loop=0.004)})
    assert "the largest single gain here: graph -> loop" in str(restructured.largest_gain())


def test_the_table_reads_speedups_over_the_first_path_whatever_the_runs_were_judged_against():
    judged = _comparison(20, eager=0.5, graph=0.025, loop=0.005)
    judged.baseline = "graph"  # the quick path timed twice a round, as lecture 08 runs it
    table = g2p.LatencyTable({20: judged})
    assert table.reference == "eager"
    assert [r["speedup"] for r in table.rows()] == ["1.0x", "20.0x", "100.0x"]
    assert "speedup over eager" in repr(table)


def test_a_change_too_close_to_call_is_never_listed_as_a_gain():
    table = g2p.LatencyTable({20: _comparison(20, noise=0.3, eager=0.5, graph=0.025, saved=0.02)})
    text = str(table.largest_gain())
    assert "graph -> saved (20 words per call): too close to call (1.25x), not counted as a gain" in text
    assert text.endswith("the largest single gain here: eager -> graph (20 words per call), 20x")
    alike = g2p.LatencyTable({20: _comparison(20, graph=0.025, saved=0.025)})
    assert str(alike.largest_gain()).splitlines() == [
        "- graph -> saved (20 words per call): no measurable difference (1x), not a gain",
        "- no change here is a gain this run can call"]
    slower = str(g2p.LatencyTable({20: _comparison(20, graph=0.025, saved=0.05)}).largest_gain())
    assert "graph -> saved (20 words per call): 2x slower, a loss" in slower


def test_batching_is_read_from_its_own_comparison():
    batched = _comparison(20, **{"20 calls of 1 word": 0.1, "1 call of 20 words": 0.008})
    table = g2p.LatencyTable({20: _comparison(20, graph=0.025, loop=0.008)})
    text = str(table.largest_gain(batched))
    assert "- 1 call of 20 words instead of 20 calls of 1 word, per word: 12.5x" in text
    assert text.endswith("the largest single gain here: 1 call of 20 words instead of 20 calls of 1 word, per word, "
                         "12.5x")


def test_loss_curve_draws_each_step_and_a_moving_mean():
    ax = g2p.loss_curve(np.linspace(4, 1, 50))
    assert len(ax.lines) == 2 and len(ax.lines[1].get_xdata()) == 31


def test_a_thread_setting_becomes_environment_variables_and_pool_sizes():
    assert g2p.thread_setting({}) == ({}, {"intra": 0, "inter": 0})
    assert g2p.thread_setting({"intra": 1, "inter": 2, "omp": 1, "onednn": False}) == (
        {"OMP_NUM_THREADS": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}, {"intra": 1, "inter": 2})


@pytest.mark.slow
def test_thread_settings_run_in_a_fresh_process(trained):
    result, held = trained
    with pytest.raises(ValueError, match="unknown keys"):
        g2p.thread_comparison(result.weights, held.words, settings={"bad": {"threads": 1}})
    table = g2p.thread_comparison(result.weights, held.words, (1, 2), repeats=1,
                                  settings={"1 thread": {"intra": 1, "inter": 1, "omp": 1}})
    assert [r["path"] for r in table.rows()] == ["1 thread"]
    assert table.ms("1 thread", 2) > 0


def test_published_figures_are_labelled_as_the_studys():
    rows = g2p.study_rows()
    assert [r["speedup, as published"] for r in rows] == ["1.18x", "0.19x (slower)", "5.9x", "no change",
                                                          "6.05x", "6.19x"]
    assert "not measured here" in g2p.STUDY_SOURCE
    assert {r["what"] for r in g2p.wheel_report()} >= {"CPU features the processor has",
                                                       "oneDNN (formerly MKL-DNN) kernels"}


def test_batching_decodes_the_same_words_one_per_call_and_all_at_once():
    seen = []

    def fn(x):
        seen.append(int(x.shape[0]))
        return x

    batched = g2p.batching(fn, ["cat", "dog", "bird"], 3, repeats=bench.MIN_ROUNDS)
    assert batched.names[:2] == ["3 calls of 1 word", "1 call of 3 words"] and batched.params == {"words": 3}
    assert set(seen) == {1, 3}
    with pytest.raises(ValueError, match="words_per_call must be 2 or more"):
        g2p.batching(fn, ["cat"], 1)
    with pytest.raises(ValueError, match="need at least 5 words"):
        g2p.batching(fn, ["cat"], 5)


def test_the_onednn_type_line_is_explained_only_where_this_run_wrote_it():
    line = ("E0000 util.cc:131] oneDNN supports DT_BOOL only on platforms with AVX-512. Falling back to the "
            "default Eigen-based implementation if present.\n")
    seen = g2p.onednn_log_text("I0000 start-up\n" + line + line.replace("DT_BOOL", "DT_INT32"))
    assert seen.startswith("This run's kernel log holds \"oneDNN supports DT_BOOL only on platforms with AVX-512\"")
    assert "(types named: `DT_BOOL`, `DT_INT32`)" in seen and "IsDataTypeSupportedByOneDNNOnThisCPU" in seen
    unseen = g2p.onednn_log_text("I0000 start-up\n")
    assert unseen.endswith("this run's log holds none.") and "IsDataTypeSupported" not in unseen
