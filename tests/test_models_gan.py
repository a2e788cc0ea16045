"""The GAN of lecture 06: data, shapes, learning, and the journey's steps computing the same step."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench
from course_lib.models import gan as G


@pytest.fixture(scope="module")
def images():
    return G.load_digits_images()


@pytest.fixture(scope="module")
def model():
    return G.GAN(seed=0)


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


def test_unsupported_size_is_refused():
    with pytest.raises(ValueError, match="image size 12 is not supported"):
        G.load_digits_images(12)
    with pytest.raises(ValueError, match="choose one of"):
        G.GAN(size=10)


@pytest.mark.parametrize("size", G.SIZES)
def test_generator_and_discriminator_shapes(size):
    gan = G.GAN(size=size, latent_dim=16, width=8)
    fake = gan.generator(np.zeros((3, 16), np.float32), training=False)
    assert fake.shape == (3, size, size, 1)
    assert gan.discriminator(fake, training=False).shape == (3, 1)
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
    out = G.make_step(key, gan, batch=8, images=images, seed=seed)()
    return float(out["g_loss"]), float(out["d_loss"]), gan.weights()


def test_reloading_and_in_memory_steps_compute_the_same_step(images, model):
    a = _run("reload", model.clone(), images)
    b = _run("in_memory", model.clone(), images)
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
        out = wrap(lambda r, n, l: G.update(gan, r, n, l))(real, z, labels)
        results.append(([float(out["g_loss"]), float(out["d_loss"])], gan.weights()))
    for losses, weights in results[1:]:
        np.testing.assert_allclose(losses, results[0][0], rtol=1e-4)
        assert _max_diff(weights, results[0][1]) < 1e-4


def test_make_step_refuses_bad_input(model, images):
    with pytest.raises(ValueError, match="unknown step 'fast'"):
        G.make_step("fast", model)
    with pytest.raises(ValueError, match="batch must be a whole number"):
        G.make_step("tf_ops", model, batch=0)
    with pytest.raises(RuntimeError, match="auto_jit_timing"):
        G.make_step("auto_jit", model)
    with pytest.raises(ValueError, match="load_digits_images"):
        G.make_step("in_memory", model, images=G.load_digits_images(16))


def test_train_records_losses(model):
    history = G.train(model.clone(), steps=5, batch=8, log_every=2)
    assert history["step"] == [0, 2, 4]
    assert all(np.isfinite(history["g_loss"])) and all(np.isfinite(history["d_loss"]))


def test_throughput_reads_timings_as_images_per_second():
    result = G.throughput([("tf_function", 4), ("tf_function", 8)], repeats=2, study=[100, None])
    assert [r["batch"] for r in result.rows()] == [4, 8]
    assert [t.name for t in result.comparison.timings] == ["tf.function, batch 4", "tf.function, batch 8"]
    t = result.comparison.timings[1]
    assert result.images_per_s(1) == pytest.approx(16 / t.median_s)
    assert result.rows()[0]["study, A100 (images/s)"] == "100"
    assert "images per step = 2 x batch" in result._repr_html_()
    assert result.plot() is not None


def test_throughput_refuses_an_empty_or_unknown_plan():
    with pytest.raises(ValueError, match="plan is empty"):
        G.throughput([])
    with pytest.raises(ValueError, match="unknown step 'warp'"):
        G.throughput([("warp", 8)])
    with pytest.raises(ValueError, match="repeats a"):
        G.throughput([("tf_function", 8), ("tf_function", 8)])


def test_python_profile_finds_the_data_reload(model):
    profile = G.python_profile(G.make_step("reload", model.clone(), batch=4), calls=2)
    names = [r["function"] for r in profile.rows]
    assert "course_lib.models.gan.fetch_real_batch_reloading" in names
    assert "sklearn.datasets._base.load_digits" in names
    assert 0.0 < profile.share("load_digits_images") < profile.share("step") <= 1.0
    with pytest.raises(KeyError, match="no function 'nothing'"):
        profile.share("nothing")


def test_trace_steps_writes_a_profile_and_lists_ops(tmp_path, model, images):
    trace = G.trace_steps(G.make_step("tf_function", model.clone(), batch=4, images=images), steps=1,
                          logdir=tmp_path)
    assert list(tmp_path.glob("plugins/profile/*/*.xplane.pb"))
    ops = [r["op type"] for r in trace.ops(top=50)]
    assert any("Conv2D" in op for op in ops)


def test_auto_clustering_compiles_clusters_in_a_subprocess():
    timing, compilations = G.auto_jit_timing(batch=4, repeats=1)
    assert isinstance(timing, bench.Timing) and timing.median_s > 0
    assert compilations >= 1


def test_image_grid_draws_and_refuses_wrong_shapes(images):
    ax = G.image_grid(images[:10], cols=4)
    assert ax.images[0].get_array().shape == (3 * 9 - 1, 4 * 9 - 1)
    with pytest.raises(ValueError, match="expected images of shape"):
        G.image_grid(np.zeros((2, 2)))


def test_course_bench_gan_writes_json(tmp_path):
    import json

    out = tmp_path / "gan.json"
    assert G.bench_journey(["--batch", "4", "--big-batch", "8", "--repeats", "1", "--no-auto-jit",
                            "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [r["batch"] for r in data["rows"]] == [4, 4, 4, 4, 8, 8]
    assert data["rows"][0]["study, A100 (images/s)"] == "237"
