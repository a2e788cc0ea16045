"""Lecture 06's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import bench, checks
from course_lib.models import gan


def failure(k, **answer):
    return checks.failure("06", k, **answer)


def test_noise_in_graph():
    generator = tf.random.Generator.from_seed(1)
    noise = tf.function(lambda: generator.uniform([4, 8], -1.0, 1.0))
    assert failure(1, noise=noise, latent_dim=8) is None
    frozen = tf.function(lambda: tf.constant(np.random.uniform(-1, 1, (4, 8)).astype(np.float32)))
    assert "did not change" in failure(1, noise=frozen, latent_dim=8)
    inside = tf.function(lambda: tf.random.Generator.from_seed(1).uniform([4, 8], -1.0, 1.0))
    assert "raised" in failure(1, noise=inside, latent_dim=8)
    assert "outside [-1, 1]" in failure(1, noise=tf.function(lambda: generator.normal([4, 8]) * 3), latent_dim=8)
    assert "should be a tf.function" in failure(1, noise=lambda: generator.uniform([4, 8], -1.0, 1.0), latent_dim=8)


@pytest.fixture(scope="module")
def steps():
    model = gan.GAN(seed=0)
    images = gan.load_digits_images()
    rng = np.random.default_rng(0)
    compiled_update = tf.function(lambda real, z, labels: gan.update(model, real, z, labels))

    def noise_batch():
        return rng.uniform(-1, 1, (8, model.latent_dim)).astype(np.float32)

    def mistake():
        return compiled_update(gan.fetch_real_batch_reloading(8, rng), noise_batch(), gan.numpy_labels(8))

    def fixed():
        return compiled_update(gan.fetch_real_batch(images, 8, rng), noise_batch(), gan.numpy_labels(8))

    def no_reload():  # the mistake forgotten: both steps draw from memory
        return compiled_update(gan.fetch_real_batch(images, 8, rng), noise_batch(), gan.numpy_labels(8))

    def eager_fixed():  # the update not compiled
        return gan.update(model, gan.fetch_real_batch(images, 8, rng), noise_batch(), gan.numpy_labels(8))

    comparison = bench.compare({"fixed": fixed, "mistake": mistake}, baseline="fixed", repeats=5, number=1)
    answer = dict(compiled_update=compiled_update, mistake=mistake, fixed=fixed, comparison=comparison,
                  reload_share=1 - comparison["fixed"].median_s / comparison["mistake"].median_s)
    return answer, no_reload, eager_fixed


def test_mistake_after_compiling(steps):
    answer, no_reload, eager_fixed = steps
    assert failure(2, **answer) is None
    assert "mistake() does not reload" in failure(2, **dict(answer, mistake=no_reload))
    assert "fixed() reloads" in failure(2, **dict(answer, fixed=answer["mistake"]))
    assert "fixed() does not call compiled_update" in failure(2, **dict(answer, fixed=eager_fixed))
    assert "reload_share" in failure(2, **dict(answer, reload_share=answer["comparison"].speedup("mistake")))
    two_runs = bench.Comparison([answer["comparison"]["mistake"], answer["comparison"]["fixed"]], baseline="fixed")
    assert "variants should be ['fixed', 'mistake']" in failure(2, **dict(answer, comparison=two_runs))


def test_predict_numpy_noise():
    @tf.function
    def numpy_noise():
        return tf.constant(np.random.uniform(-1, 1, (4, 2)).astype(np.float32))

    assert failure(3, distinct_batches=1, traces=1, numpy_noise=numpy_noise, calls=5) is None
    assert "different batches" in failure(3, distinct_batches=5, traces=1, numpy_noise=numpy_noise, calls=5)
    assert "traces" in failure(3, distinct_batches=1, traces=5, numpy_noise=numpy_noise, calls=5)
