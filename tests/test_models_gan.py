"""The GAN of lecture 06: data, shapes, learning, and the journey's steps computing the same step."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench
from course_lib.benchmarks import gan as bench_gan
from course_lib.models import gan as G
from course_lib.profile import op_stats


@pytest.fixture(scope="module")
def images():
    return G.load_digits_images()


@pytest.fixture(scope="module")
def model():
    return G.GAN(seed=0)


SMALL_FILE = 300  # images in the dataset file the tests reload (the lecture's has MNIST's 60,000)


@pytest.fixture(scope="module")
def file_images():
    return G.load_dataset(G.dataset_file(8, SMALL_FILE))


def _trainable(gan, network):
    return [v.numpy().copy() for v in getattr(gan, network).trainable_variables]


def _max_diff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def test_digits_are_scaled_to_minus_one_one(images):
    assert images.shape == (1797, 8, 8, 1) and images.dtype == np.float32
    assert images.min() == -1.0 and images.max() == 1.0


def test_upsampled_digits_keep_the_range():
    big = G.load_digits_images(28)
    assert big.shape == (1797, 28, 28, 1)
    assert big.min() >= -1.0 - 1e-6 and big.max() <= 1.0 + 1e-6


def test_dataset_file_has_mnists_shape_and_is_written_once():
    path = G.dataset_file(28, 50)
    stamp = path.stat().st_mtime_ns
    images = G.load_dataset(path)
    assert images.shape == (50, 28, 28, 1) and images.dtype == np.float32
    assert images.min() == -1.0 and images.max() == 1.0
    assert G.dataset_file(28, 50) == path and path.stat().st_mtime_ns == stamp  # reused, not rewritten
    np.testing.assert_array_equal(G.load_dataset(G.dataset_file(28, 50)), images)
    assert not np.array_equal(images[0], images[1])  # drawn and shifted, not one digit repeated


def test_dataset_file_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match="n_images must be a whole number"):
        G.dataset_file(8, 0)
    with pytest.raises(FileNotFoundError, match="dataset_file"):
        G.load_dataset(tmp_path / "none.npz")


def test_reloading_fetches_from_the_file(file_images):
    batch = G.fetch_real_batch_reloading(5, np.random.default_rng(3), 8, SMALL_FILE)
    np.testing.assert_array_equal(batch, G.fetch_real_batch(file_images, 5, np.random.default_rng(3)))


def test_unsupported_size_is_refused():
    with pytest.raises(ValueError, match="image size 12 is not supported"):
        G.load_digits_images(12)
    with pytest.raises(ValueError, match="choose one of"):
        G.GAN(size=10)


@pytest.mark.parametrize("size", G.SIZES)
def test_generator_and_discriminator_shapes(size):
    gan = G.GAN(size=size, latent_dim=16, width=8)
    noise = np.random.default_rng(0).normal(size=(3, 16)).astype(np.float32)
    fake = gan.generator(noise, training=False).numpy()
    assert fake.shape == (3, size, size, 1)
    assert np.abs(fake).max() <= 1.0  # images in [-1, 1], as the real ones are scaled
    assert not np.allclose(fake[0], fake[1])  # the image depends on the noise
    judged = gan.discriminator(fake, training=False).numpy()
    assert judged.shape == (3, 1) and np.isfinite(judged).all() and len(np.unique(judged)) == 3
    assert gan.generate(5).shape == (5, size, size, 1)


def test_generated_images_are_in_range_and_seeded(model):
    a, b = model.generate(4, seed=1), model.generate(4, seed=1)
    np.testing.assert_array_equal(a, b)
    assert np.all(np.abs(a) <= 1.0)


def test_same_seed_same_initial_weights():
    a, b = G.GAN(seed=3), G.GAN(seed=3)
    assert _max_diff(a.weights(), b.weights()) == 0.0
    assert _max_diff(a.weights(), G.GAN(seed=4).weights()) > 0.0


def test_labels_from_numpy_and_tf_agree():
    for a, b in zip(G.numpy_labels(4), G.tf_labels(4)):
        np.testing.assert_array_equal(a, b.numpy())


def _fixed_batch(images, gan, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    real = G.fetch_real_batch(images, batch, rng)
    z = rng.uniform(-1, 1, (batch, gan.latent_dim)).astype(np.float32)
    return real, z, G.tf_labels(batch)


def test_discriminator_steps_lower_its_loss_and_leave_the_generator_alone(images):
    gan = G.GAN(seed=0)
    real, z, labels = _fixed_batch(images, gan)
    g_before = _trainable(gan, "generator")
    step = tf.function(lambda: G.update(gan, real, z, labels, train=("discriminator",)))
    losses = [float(step()["d_loss"]) for _ in range(15)]
    assert losses[-1] < losses[0]
    assert _max_diff(g_before, _trainable(gan, "generator")) == 0.0


def test_generator_steps_lower_its_loss(images):
    gan = G.GAN(seed=0)
    real, z, labels = _fixed_batch(images, gan)
    d_before = _trainable(gan, "discriminator")
    step = tf.function(lambda: G.update(gan, real, z, labels, train=("generator",)))
    losses = [float(step()["g_loss"]) for _ in range(15)]
    assert losses[-1] < losses[0]
    assert _max_diff(d_before, _trainable(gan, "discriminator")) == 0.0


def test_a_full_step_changes_both_networks(images, model):
    gan = model.clone()
    before = {n: _trainable(gan, n) for n in G.NETWORKS}
    G.make_step("tf_ops", gan, batch=8, images=images)()
    for n in G.NETWORKS:
        assert _max_diff(before[n], _trainable(gan, n)) > 0.0


def test_unknown_network_is_refused(images, model):
    real, z, labels = _fixed_batch(images, model, batch=2)
    with pytest.raises(ValueError, match="unknown network"):
        G.update(model, real, z, labels, train=("critic",))


def test_clone_has_the_same_weights(model):
    assert _max_diff(model.weights(), model.clone().weights()) == 0.0


def _run(key, gan, images, seed=5):
    out = G.make_step(key, gan, batch=8, images=images, seed=seed, n_images=SMALL_FILE)()
    return float(out["g_loss"]), float(out["d_loss"]), gan.weights()


def test_reloading_and_in_memory_steps_compute_the_same_step(file_images, model):
    a = _run("reload", model.clone(), file_images)
    b = _run("in_memory", model.clone(), file_images)
    assert a[:2] == b[:2]
    assert _max_diff(a[2], b[2]) == 0.0


def test_eager_tf_ops_and_tf_function_steps_compute_the_same_step(images, model):
    a = _run("tf_ops", model.clone(), images)
    b = _run("tf_function", model.clone(), images)
    np.testing.assert_allclose(a[:2], b[:2], rtol=1e-5)
    assert _max_diff(a[2], b[2]) < 1e-5


def test_eager_graph_and_xla_updates_agree_on_the_same_batch(images, model):
    real, z, _ = _fixed_batch(images, model, batch=8)
    labels = G.numpy_labels(8)
    results = []
    for wrap in (lambda f: f, tf.function, lambda f: tf.function(f, jit_compile=True)):
        gan = model.clone()
        out = wrap(lambda r, n, lab: G.update(gan, r, n, lab))(real, z, labels)
        results.append(([float(out["g_loss"]), float(out["d_loss"])], gan.weights()))
    for losses, weights in results[1:]:
        np.testing.assert_allclose(losses, results[0][0], rtol=1e-4)
        assert _max_diff(weights, results[0][1]) < 1e-4


def test_make_step_refuses_bad_input(model, images):
    with pytest.raises(ValueError, match="unknown step 'fast'"):
        G.make_step("fast", model)
    with pytest.raises(ValueError, match="batch must be a whole number"):
        G.make_step("tf_ops", model, batch=0)
    with pytest.raises(RuntimeError, match="auto_clustering"):
        G.make_step("auto_jit", model)
    with pytest.raises(ValueError, match="load_dataset"):
        G.make_step("in_memory", model, images=G.load_digits_images(16))


def test_train_records_losses(model, images):
    history = G.train(model.clone(), steps=5, batch=8, log_every=2, images=images)
    assert history["step"] == [0, 2, 4]
    assert all(np.isfinite(history["g_loss"])) and all(np.isfinite(history["d_loss"]))


@pytest.mark.slow
def test_throughput_reads_timings_as_images_per_second(images):
    result = G.throughput([("tf_function", 4), ("tf_function", 8)], size=8, images=images, repeats=2)
    assert [r["batch"] for r in result.rows()] == [4, 8]
    assert [t.name for t in result.comparison.timings] == ["tf.function, batch 4", "tf.function, batch 8"]
    t = result.comparison.timings[1]
    assert result.images_per_s(1) == pytest.approx(16 / t.median_s)
    assert result.gain(1, 0) == pytest.approx(result.images_per_s(1) / result.images_per_s(0))
    assert "images per step = 2 x batch" in result._repr_html_()
    assert isinstance(result.native_log, str)


def test_throughput_refuses_an_empty_unknown_or_out_of_process_plan():
    with pytest.raises(ValueError, match="plan is empty"):
        G.throughput([])
    with pytest.raises(ValueError, match="unknown or out-of-process step 'warp'"):
        G.throughput([("warp", 8)])
    with pytest.raises(ValueError, match="auto_clustering"):
        G.throughput([("auto_jit", 8)])
    with pytest.raises(ValueError, match="repeats a"):
        G.throughput([("tf_function", 8), ("tf_function", 8)], size=8)


@pytest.mark.slow
def test_journey_widget_times_the_steps_at_the_chosen_batch(model, images):
    widget = G.journey_widget(model.clone(), images, batches=(4, 8), repeats=1, n_images=SMALL_FILE)
    result = widget.run(variants=[G.STEPS["in_memory"], G.STEPS["tf_function"]], batch=8)
    assert result.names == [G.STEPS["in_memory"], G.STEPS["tf_function"]] and result.params == {"batch": 8}
    with pytest.raises(ValueError, match="cannot run in this process"):
        G.step_variants(model, images, keys=("auto_jit",))


def _timing(name, *times):
    return bench.Timing(name=name, first_call_s=times[0], times_s=list(times), number=1)


def _journey_inputs(auto=True, tf_ops=(0.199, 0.2, 0.201, 0.2, 0.2)):
    S = G.STEPS
    steps = bench.Comparison([_timing(S["reload"], *[1.0] * 5), _timing(S["in_memory"], *[0.2] * 5),
                              _timing(S["tf_ops"], *tf_ops),
                              _timing(S["tf_function"], *[0.02] * 5)],
                             baseline=S["reload"], params={"batch": 64})
    batches = G.Throughput(bench.Comparison([_timing("a", *[0.02] * 5), _timing("b", *[0.05] * 5),
                                             _timing("c", *[0.025] * 5)], baseline="a"),
                           [("tf_function", 64), ("tf_function", 256), ("jit_compile", 256)])
    auto = bench.Comparison([_timing(S["tf_function"], *[0.05] * 5), _timing(S["auto_jit"], *[0.1] * 5)],
                            baseline=S["tf_function"]) if auto else None
    return steps, batches, auto


def test_journey_ratios_read_each_step_over_the_one_before():
    ratios = G.journey_ratios(*_journey_inputs())
    assert ratios.ratio("data loaded once") == pytest.approx(5.0)
    assert ratios.ratio("one tf.function") == pytest.approx(10.0)
    assert ratios.ratio("TF ops and tf.function together") == pytest.approx(10.0)
    assert ratios.ratio("batch 64 -> 256 (the study: 64 -> 2048)") == pytest.approx(1.6)  # images/s, not time
    assert ratios.ratio("XLA jit_compile") == pytest.approx(2.0)
    assert ratios.ratio("XLA auto-clustering") == pytest.approx(0.5)
    study = {r["step"]: r["study"] for r in ratios.rows}
    assert study["data loaded once"] == pytest.approx(2200 / 237) and study["one tf.function"] is None
    text = str(ratios.verdicts())
    assert "TF ops, still eager: 1x on this machine (no measurable difference)" in text
    edge = str(G.journey_ratios(*_journey_inputs(tf_ops=(0.19, 0.2, 0.21, 0.2, 0.2))).verdicts())  # reaches 1/1.05x
    assert "TF ops, still eager: 1x on this machine (too close to call against the noise floor)" in edge
    steps, batches, auto = _journey_inputs()
    few = G.Throughput(bench.Comparison([bench.Timing(t.name, t.first_call_s, t.times_s[:3], 1)
                                         for t in batches.comparison.timings], baseline="a"), batches.plan)
    assert "batch 64 -> 256 (the study: 64 -> 2048): 1.6x on this machine (too few rounds to judge)" in str(
        G.journey_ratios(steps, few, auto).verdicts())
    assert "data loaded once: 5x on this machine; the study: 9.28x" in text
    assert ratios.plot() is not None and "<table>" in ratios._repr_html_()
    assert "XLA auto-clustering" not in [r["step"] for r in G.journey_ratios(*_journey_inputs(auto=False)).rows]
    with pytest.raises(KeyError, match="no step 'warp'"):
        ratios.ratio("warp")


def test_journey_ratios_refuse_runs_that_do_not_match():
    steps, batches, auto = _journey_inputs()
    with pytest.raises(ValueError, match="steps lacks"):
        G.journey_ratios(bench.Comparison(steps.timings[:2], baseline=steps.baseline), batches, auto)
    wrong = G.Throughput(batches.comparison, [("tf_function", 64), ("jit_compile", 256), ("tf_function", 256)])
    with pytest.raises(ValueError, match="batches must measure"):
        G.journey_ratios(steps, wrong, auto)


def test_python_profile_finds_the_data_reload(model, file_images):
    profile = G.python_profile(G.make_step("reload", model.clone(), batch=4, images=file_images,
                                           n_images=SMALL_FILE), calls=2, min_percent=0.0)
    names = [r["function"] for r in profile.rows]
    assert "course_lib.models.gan.fetch_real_batch_reloading" in names
    assert any(n.startswith("numpy.lib") for n in names)
    assert 0.0 < profile.share("load_dataset") < profile.share("step") <= 1.0
    least, most = profile.share_range("fetch_real_batch_reloading")
    assert len(profile.call_shares["course_lib.models.gan.fetch_real_batch_reloading"]) == 2
    assert 0.0 < least <= most < 1.0
    with pytest.raises(KeyError, match="no function 'nothing'"):
        profile.share("nothing")


@pytest.mark.slow
def test_trace_steps_writes_a_profile_and_lists_ops(tmp_path, model, images):
    trace = G.trace_steps(G.make_step("tf_function", model.clone(), batch=4, images=images), steps=1,
                          logdir=tmp_path)
    assert list(tmp_path.glob("plugins/profile/*/*.xplane.pb"))
    ops = [r["op type"] for r in op_stats(trace).rows]
    assert any("Conv2D" in op for op in ops)


@pytest.mark.slow
def test_auto_clustering_runs_both_variants_in_live_processes_in_turns():
    c = G.auto_clustering(size=8, batch=4, repeats=2, n_images=SMALL_FILE)
    assert c.names == [G.STEPS["tf_function"], G.STEPS["auto_jit"]] and c.baseline == G.STEPS["tf_function"]
    assert c.rounds in range(2, 2 * bench.MOST_ROUNDS + 1, 2)
    assert c.rounds == len(c.twin.times_s)  # the A/A pair, in the same rounds
    assert c.params["compilations"][G.STEPS["tf_function"]] == 0
    assert c.params["compilations"][G.STEPS["auto_jit"]] >= 1
    assert set(c.params["start-up (s)"]) == set(c.names) and min(c.params["start-up (s)"].values()) > 0


def test_image_grid_draws_and_refuses_wrong_shapes(images):
    ax = G.image_grid(images[:10], cols=4)
    assert ax.images[0].get_array().shape == (3 * 9 - 1, 4 * 9 - 1)
    with pytest.raises(ValueError, match="expected images of shape"):
        G.image_grid(np.zeros((2, 2)))


@pytest.mark.slow
def test_course_bench_gan_writes_json(tmp_path, capsys):
    import json

    out = tmp_path / "gan.json"
    assert bench_gan.bench_journey(["--size", "8", "--images", str(SMALL_FILE), "--batch", "4", "--big-batch", "8",
                            "--repeats", "1", "--no-auto-jit", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["command"] == "gan" and data["args"]["big_batch"] == 8
    assert [r["batch"] for r in data["batches"]] == [4, 8, 8]
    assert len(data["comparisons"]) == 2, "the steps and the batches; no auto-clustering"
    assert [r["step"] for r in data["ratios"]][0] == "data loaded once"
    assert "the study: 9.28x" in capsys.readouterr().out


def _rounds(seconds, seed, n=30, noise=0.01):
    return list(seconds * (1 + noise * np.random.default_rng(seed).standard_normal(n)))


def _batches(small_s, big_s, small=64, big=256):
    """A constructed ``throughput`` run: tf.function at two batch sizes (30 rounds, 1% noise) and its A/A."""
    timings = [_timing("small", *_rounds(small_s, 1)), _timing("big", *_rounds(big_s, 2)),
               _timing("jit", *_rounds(big_s, 3))]
    return G.Throughput(bench.Comparison(timings, baseline="small", twin=_timing("A/A", *_rounds(small_s, 4))),
                        [("tf_function", small), ("tf_function", big), ("jit_compile", big)])


def test_throughput_judges_images_per_second_across_batch_sizes():
    faster = _batches(0.1, 0.2)  # 4x the images in 2x the time
    per = faster.per_image()
    assert per["big"].median_s == pytest.approx(faster.comparison["big"].median_s / 512)
    assert per.twin.median_s == pytest.approx(faster.comparison.twin.median_s / 128)
    assert faster.call(1, 0) == "faster" and faster.verdict(1, 0).startswith("big: 2x faster than small")
    assert _batches(0.1, 0.5).call(1, 0) == "slower"
    assert _batches(0.1, 0.4).call(1, 0) == "no difference"


@pytest.mark.parametrize("small_s, big_s, ends", [
    (0.1, 0.2, "The step's fixed cost was a measurable part of the smaller batch's step."),
    (0.1, 0.5, "this run times the whole step only, so it does not show which part of it grew."),
    (0.1, 0.4, "At batch 64 the fixed cost was already too small a part of the step to matter."),
    (0.1, 0.42, "This run cannot tell whether the larger batch changed images/s."),
])
def test_the_batch_sentence_explains_only_a_verdict_that_cleared_the_floor(small_s, big_s, ends):
    batches = _batches(small_s, big_s)
    text = G.batch_text(batches)
    assert f"Here, batch 64 -> 256 in images/s: *{batches.verdict(1, 0)}*. " in text and text.endswith(ends)


@pytest.mark.parametrize("share, says", [
    (0.7, "The reload is the larger part of the step"),
    (0.3, "Here the rest of the step is the larger part"),
    (0.501, "too close in one profile to say which is larger"),
    (0.45, "too close in one profile to say which is larger"),
])
def test_the_profile_names_the_larger_part_only_past_its_margin(share, says):
    text = G.reload_share_text(share)
    assert says in text and f"at most **{1 / (1 - share):.1f}x** faster" in text


def test_the_profile_share_must_be_a_fraction():
    with pytest.raises(ValueError, match=r"share must be a fraction of the step in \[0, 1\), got 1.2"):
        G.reload_share_text(1.2)
    with pytest.raises(ValueError, match="share must be a fraction"):
        G.amdahl_text(1.0, (0.5, 0.5), _batches(0.1, 0.2).comparison, "big", "small")


def _steps(reload_s, in_memory_s):
    timings = [_timing("reload", *_rounds(reload_s, 1)), _timing("in memory", *_rounds(in_memory_s, 2))]
    return bench.Comparison(timings, baseline="reload", twin=_timing("A/A", *_rounds(reload_s, 3)))


@pytest.mark.parametrize("share, call_range, gain, says", [
    (0.5, (0.48, 0.52), 2.0, "The single steps' bounds meet the measured interval: the profile's share predicted "
                             "the gain."),
    # the whole profile's bound (1.67x) lies below the gain, but the largest single step's (2.08x) reaches it
    (0.4, (0.35, 0.52), 2.0, "The single steps' bounds meet the measured interval"),
    (0.1, (0.08, 0.12), 2.0, "Even the largest single step's bound lies below the measured interval: the profile "
                             "understated the reload, which the measured gain puts at about 50% of the unprofiled "
                             "step."),
    # the largest single step's bound (1.82x) falls short of the gain by less than a re-run's profile can move
    (0.4, (0.35, 0.45), 2.0, "by less than a factor of 1.5, and one profile's bound moves between runs by about "
                             "that much, so this run cannot tell whether the profile misjudged the reload."),
    (0.8, (0.75, 0.85), 2.0, "Even the least single step's bound lies above the measured interval: the profile "
                             "overstated the reload"),
    (0.5, (0.5, 0.5), 1.02, "This run does not call the gain, so it cannot test the profile's prediction."),
    (0.02, (0.01, 0.03), 1.02, "This run does not call the gain, so it cannot test the profile's prediction."),
    (0.5, (0.4, 0.6), 0.5, "The step got slower without the reload, against the profile's prediction of a gain."),
])
def test_the_amdahl_prediction_is_tested_only_on_a_gain_the_run_calls(share, call_range, gain, says):
    steps = _steps(1.0, 1.0 / gain)
    text = G.amdahl_text(share, call_range, steps, "in memory", "reload")
    low, high = (1 / (1 - s) for s in call_range)
    assert says in text and f"(Amdahl's law): **{1 / (1 - share):.2f}x** here ({low:.2f}x to {high:.2f}x" in text
    assert ("predicted the gain" in text) == (steps.call("in memory", "reload") == "faster" and "meet" in says)


def test_the_amdahl_range_must_hold_the_profile_share():
    with pytest.raises(ValueError, match="call_range must run from the least to the largest"):
        G.amdahl_text(0.5, (0.6, 0.7), _steps(1.0, 0.5), "in memory", "reload")
    with pytest.raises(ValueError, match=r"call_range must hold fractions of the step in \[0, 1\), got \(0.4, 1.0\)"):
        G.amdahl_text(0.5, (0.4, 1.0), _steps(1.0, 0.5), "in memory", "reload")


def test_the_remapper_line_is_explained_only_where_this_run_wrote_it():
    line = ("E0000 meta_optimizer.cc:967] remapper failed: INVALID_ARGUMENT: Mutation::Apply error: fanout "
            "'gradient_tape/discriminator/LeakyReluGrad' exist for missing node 'discriminator/BiasAdd'.\n")
    seen = G.remapper_text("I0000 other line\n" + line)
    assert seen.startswith("**A log line this run wrote.**") and "the leaky ReLU's gradient reads that output" in seen
    unseen = G.remapper_text("I0000 other line\n")
    assert "this run did not" in unseen and "LeakyReluGrad" not in unseen and len(unseen) < len(seen) / 3


def test_the_profile_range_holds_the_whole_profile_share():
    # one step's share equal to the whole profile's up to rounding must not fall outside the range
    whole = 0.1 + 0.2
    profile = G.PythonProfile([{"function": "m.fetch", "calls": 2, "cumulative (s)": 0.3, "% of step": 100 * whole}],
                              total_s=1.0, calls=2, call_shares={"m.fetch": [0.3, 0.3]})
    least, most = profile.share_range("fetch")
    assert least <= profile.share("fetch") <= most and most - least < 1e-12


def test_kernel_time_text_reads_the_convolutions_as_one_group():
    from course_lib.profile.ops import OpTable

    def row(op, percent, by="oneDNN"):
        return {"op type": op, "kernels by": by, "% of op time": percent, "% of steps": percent}

    rows = [row("Conv2DBackpropFilter", 30), row("Conv2DBackpropInput", 20), row("Conv2D", 9),
            row("_FusedConv2D", 8), row("AddV2", 5, "TensorFlow")]
    text = G.kernel_time_text(OpTable(rows, "op type"), True)
    swapped = G.kernel_time_text(OpTable(rows[:2] + [rows[3], rows[2]] + rows[4:], "op type"), True)
    assert text == swapped  # the third and fourth trading places says the same
    assert "(`Conv2D`, `Conv2DBackpropFilter`, `Conv2DBackpropInput`, `_FusedConv2D`) took 67%" in text
    assert "oneDNN is on" in text and "ran 4 of the trace's 5 op types" in text
    plain = G.kernel_time_text(OpTable([row("MatMul", 100, "TensorFlow")], "op type"), False)
    assert plain == ("No convolution appears in the trace's op types. oneDNN is off in this TensorFlow, and "
                     "TensorFlow's own kernels ran every op type in the trace.")
