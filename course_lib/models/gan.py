"""A small DCGAN on the course's 8x8 digits, and the training-step journey of a published study.

The study is the GAN example of ALCF's TensorFlow profiling workshop (Argonne Leadership
Computing Facility, "Profiling TensorFlow", 2021, github.com/argonne-lcf): an MNIST GAN whose training step
is made faster one change at a time (load the data once instead of every step, one ``tf.function``, a larger
batch, XLA auto-clustering). Its published rates are in ``STUDY_IMAGES_PER_S``; they are compared with this
machine only as step-to-step ratios (``journey_ratios``), never as rates on one axis, because they were
measured on other hardware.

The course's dataset has MNIST's shape: ``dataset_file`` writes 70,000 28x28 images (MNIST's training and test
sets together, both of which the study's reload returned), drawn from the 1,797 bundled digits, upsampled and
shifted, as one compressed file, so reloading it every step costs what the study's mistake cost (reading and
decoding the dataset), not a few milliseconds.

Each step of the journey is a function of one GAN built by ``make_step``. All of them run the
same training math (``update``: one forward pass, both networks updated); they differ in how the
batch and the noise are produced and in how the step is executed, so given the same weights and
the same batch they compute the same step. Images per step are counted as the study counted
them: 2 x batch (the discriminator sees a real and a generated batch).
"""

from __future__ import annotations

import cProfile
import html
import math
import os
import pstats
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from course_lib import bench, host, processes, tables, xla
from course_lib import digits as course_digits
from course_lib.profile import Trace, capture

ROOT = Path(__file__).resolve().parents[2]
TRACE_DIR = ROOT / "build" / "profiles" / "06_gan"
DATA_DIR = ROOT / "build" / "data" / "gan"
MNIST_IMAGES = 70_000  # MNIST's 60,000 training and 10,000 test images: the study's get_dataset() read both

SIZES = (8, 16, 28)
REAL_LABEL = 0.9  # one-sided label smoothing: the discriminator is told "0.9 real", never certain

STEPS = {
    "reload": "eager, reload data",
    "in_memory": "eager, data in memory",
    "tf_ops": "eager, TF ops",
    "tf_function": "tf.function",
    "jit_compile": "XLA jit_compile",
    "auto_jit": "XLA auto-clustering",
}

# The steps measured in one process at one batch size (auto-clustering needs its own process).
IN_PROCESS = ("reload", "in_memory", "tf_ops", "tf_function", "jit_compile")

# Images/s on one A100 reported by the study (batch 64, then 2048 from the large-batch step on).
STUDY_IMAGES_PER_S = {("reload", "batch"): 237, ("in_memory", "batch"): 2_200, ("tf_function", "batch"): 18_000,
                      ("tf_function", "big_batch"): 89_000, ("auto_jit", "big_batch"): 101_000}
STUDY_BIG_BATCH = 2048


def _check_size(size: int) -> None:
    if size not in SIZES:
        raise ValueError(f"image size {size!r} is not supported; choose one of {SIZES} "
                         "(8 is the digits' own size, 28 is MNIST's)")


def _check_batch(batch: int) -> None:
    if not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be a whole number >= 1, got {batch!r}")


# -- Data -------------------------------------------------------------------------------------------

def load_digits_images(size: int = 8) -> np.ndarray:
    """The course's 1,797 digits (``course_lib.digits``) as float32 ``(N, size, size, 1)`` in [-1, 1].

    ``size`` 16 or 28 upsamples with ``tf.image.resize`` (bilinear): 28 gives every image MNIST's
    pixel count, so the work per image is closer to the study's, at about 12 times the compute.
    """
    _check_size(size)
    images = course_digits.load()[0].astype(np.float32)[..., None] / 8.0 - 1.0  # pixels are 0..16
    if size != 8:
        images = tf.image.resize(images, (size, size), method="bilinear").numpy()
    return images


def fetch_real_batch(images: np.ndarray, batch: int, rng: np.random.Generator) -> np.ndarray:
    """A batch of real images drawn (with replacement) from data already in memory."""
    return images[rng.integers(0, len(images), batch)]


def dataset_file(size: int = 28, n_images: int = MNIST_IMAGES, seed: int = 0) -> Path:
    """An MNIST-shaped training set as one compressed file under build/data/gan/, written on first use.

    ``n_images`` digits drawn from the 1,797 (seeded), upsampled to ``size``, each shifted by up to two
    pixels, stored as uint8 pixels in a compressed ``.npz`` (the format of Keras' ``mnist.npz``). Reading
    it back (``load_dataset``) is the work the study's step repeated every time.
    """
    _check_size(size)
    if not isinstance(n_images, (int, np.integer)) or n_images < 1:
        raise ValueError(f"n_images must be a whole number >= 1, got {n_images!r}")
    path = DATA_DIR / f"digits{size}-{n_images}-seed{seed}.npz"
    if path.exists():
        return path
    digits = load_digits_images(size)[..., 0]
    rng = np.random.default_rng(seed)
    pick, shifts = rng.integers(0, len(digits), n_images), rng.integers(-2, 3, (n_images, 2))
    padded = np.pad(digits, ((0, 0), (2, 2), (2, 2)), constant_values=-1.0)
    pixels = np.empty((n_images, size, size), np.uint8)
    for dy in range(-2, 3):
        for dx in range(-2, 3):
            chosen = (shifts[:, 0] == dy) & (shifts[:, 1] == dx)
            crop = padded[pick[chosen], 2 + dy:2 + dy + size, 2 + dx:2 + dx + size]
            pixels[chosen] = np.round((crop + 1.0) * 127.5).clip(0, 255)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.npz")  # renamed when complete: readers never see half
    np.savez_compressed(tmp, images=pixels)
    os.replace(tmp, path)
    return path


def load_dataset(path: str | os.PathLike) -> np.ndarray:
    """Read and decode a file written by ``dataset_file``: float32 ``(N, size, size, 1)`` in [-1, 1]."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no dataset at {path.name}; create it with dataset_file(size, n_images)")
    with np.load(path) as data:
        pixels = data["images"]
    return (pixels.astype(np.float32) / 127.5 - 1.0)[..., None]


def fetch_real_batch_reloading(batch: int, rng: np.random.Generator, size: int = 8,
                               n_images: int = MNIST_IMAGES) -> np.ndarray:
    """The study's mistake: read and decode the whole training set from disk again to draw one batch."""
    return fetch_real_batch(load_dataset(dataset_file(size, n_images)), batch, rng)


# -- Models -----------------------------------------------------------------------------------------

def _init(seed: int, index: int):
    return keras.initializers.GlorotUniform(seed=seed * 1000 + index)


def make_generator(size: int = 8, latent_dim: int = 32, width: int = 32, seed: int = 0) -> keras.Model:
    """Noise -> image: a dense layer to a small feature map, transposed convolutions that double it
    (once for 8x8, twice for 16x16 and 28x28), batch norm and leaky ReLU between, tanh out."""
    _check_size(size)
    n_up = 1 if size == 8 else 2
    start = size // 2 ** n_up
    L = keras.layers
    layers = [keras.Input((latent_dim,)),
              L.Dense(start * start * 2 * width, use_bias=False, kernel_initializer=_init(seed, 0)),
              L.BatchNormalization(), L.LeakyReLU(negative_slope=0.2), L.Reshape((start, start, 2 * width))]
    for i in range(n_up):
        layers += [L.Conv2DTranspose(width, 4, strides=2, padding="same", use_bias=False,
                                     kernel_initializer=_init(seed, 1 + i)),
                   L.BatchNormalization(), L.LeakyReLU(negative_slope=0.2)]
    layers.append(L.Conv2D(1, 3, padding="same", activation="tanh", kernel_initializer=_init(seed, 9)))
    return keras.Sequential(layers, name="generator")


def make_discriminator(size: int = 8, width: int = 32, seed: int = 0) -> keras.Model:
    """Image -> one logit (real vs generated): two strided convolutions and a dense layer."""
    _check_size(size)
    L = keras.layers
    return keras.Sequential([
        keras.Input((size, size, 1)),
        L.Conv2D(width, 3, strides=2, padding="same", kernel_initializer=_init(seed, 20)),
        L.LeakyReLU(negative_slope=0.2),
        L.Conv2D(2 * width, 3, strides=2, padding="same", kernel_initializer=_init(seed, 21)),
        L.LeakyReLU(negative_slope=0.2),
        L.Flatten(),
        L.Dense(1, kernel_initializer=_init(seed, 22)),
    ], name="discriminator")


class GAN:
    """A generator, a discriminator and an Adam optimizer for each (built, so no step creates variables)."""

    def __init__(self, size: int = 8, latent_dim: int = 32, width: int = 32, learning_rate: float = 2e-4,
                 seed: int = 0):
        self.size, self.latent_dim, self.width = size, latent_dim, width
        self.learning_rate, self.seed = learning_rate, seed
        self.generator = make_generator(size, latent_dim, width, seed)
        self.discriminator = make_discriminator(size, width, seed)
        self.g_optimizer = keras.optimizers.Adam(learning_rate, beta_1=0.5)
        self.d_optimizer = keras.optimizers.Adam(learning_rate, beta_1=0.5)
        self.g_optimizer.build(self.generator.trainable_variables)
        self.d_optimizer.build(self.discriminator.trainable_variables)

    def clone(self) -> "GAN":
        """A GAN with the same configuration and weights, and fresh optimizer state."""
        other = GAN(self.size, self.latent_dim, self.width, self.learning_rate, self.seed)
        other.generator.set_weights(self.generator.get_weights())
        other.discriminator.set_weights(self.discriminator.get_weights())
        return other

    def weights(self) -> list[np.ndarray]:
        return self.generator.get_weights() + self.discriminator.get_weights()

    def generate(self, n: int = 16, seed: int = 0) -> np.ndarray:
        """``n`` generated images, ``(n, size, size, 1)`` in [-1, 1]."""
        z = np.random.default_rng(seed).uniform(-1, 1, (n, self.latent_dim)).astype(np.float32)
        return self.generator(z, training=False).numpy()


# -- The training step ------------------------------------------------------------------------------

def numpy_labels(batch: int):
    """Targets for real images, generated images, and the generator's wish, built with NumPy."""
    return (np.full((batch, 1), REAL_LABEL, np.float32), np.zeros((batch, 1), np.float32),
            np.ones((batch, 1), np.float32))


def tf_labels(batch: int):
    """The same targets as TensorFlow ops, so they can live inside a graph."""
    return tf.fill([batch, 1], REAL_LABEL), tf.zeros([batch, 1]), tf.ones([batch, 1])


def _bce(labels, logits):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))


NETWORKS = ("generator", "discriminator")


def update(gan: GAN, real, z, labels, train: Sequence[str] = NETWORKS) -> dict:
    """One training step's math, shared by every variant.

    One forward pass: the generator turns ``z`` into images, the discriminator scores the real
    and the generated batch. The discriminator's loss asks for ``REAL_LABEL`` on real images and 0
    on generated ones; the generator's loss asks the discriminator to say 1 on generated images.
    Each network in ``train`` is updated from its own loss.
    """
    unknown = set(train) - set(NETWORKS)
    if unknown:
        raise ValueError(f"unknown network(s) {sorted(unknown)} in train; choose from {NETWORKS}")
    real_labels, fake_labels, target_labels = labels
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = gan.generator(z, training=True)
        real_logits = gan.discriminator(real, training=True)
        fake_logits = gan.discriminator(fake, training=True)
        d_loss = 0.5 * (_bce(real_labels, real_logits) + _bce(fake_labels, fake_logits))
        g_loss = _bce(target_labels, fake_logits)
    if "generator" in train:
        g_vars = gan.generator.trainable_variables
        gan.g_optimizer.apply_gradients(zip(g_tape.gradient(g_loss, g_vars), g_vars))
    if "discriminator" in train:
        d_vars = gan.discriminator.trainable_variables
        gan.d_optimizer.apply_gradients(zip(d_tape.gradient(d_loss, d_vars), d_vars))
    return {"g_loss": g_loss, "d_loss": d_loss}


def make_step(key: str, gan: GAN, *, batch: int = 64, images: np.ndarray | None = None,
              seed: int = 0, n_images: int = MNIST_IMAGES) -> Callable[[], dict]:
    """One training step of the journey as a zero-argument function returning the two losses.

    ``reload``, ``in_memory``, ``tf_ops``, ``tf_function`` and ``jit_compile`` are built by ``reload_step``,
    ``in_memory_step`` (``images`` in memory; by default the dataset file, loaded once), ``tf_ops_step``,
    ``tf_function_step`` and ``jit_compile_step``, each what changes from the step before. ``auto_jit``: the
    plain tf.function, which TensorFlow auto-clusters only in a process started with ``TF_XLA_FLAGS`` (see
    ``auto_clustering``).

    The NumPy steps draw from ``np.random.default_rng(seed)``, the TF steps from
    ``tf.random.Generator.from_seed(seed)``: same seed, same batches within each family, except
    that XLA generates its own random floats from the generator's state, so the ``jit_compile``
    step agrees with the others given the same batch and noise (``update``), not the same seed.
    """
    if key not in STEPS:
        raise ValueError(f"unknown step {key!r}; choose one of: {', '.join(STEPS)}")
    _check_batch(batch)
    if key == "auto_jit" and "--tf_xla_auto_jit" not in os.environ.get("TF_XLA_FLAGS", ""):
        raise RuntimeError("auto-clustering is switched on by TF_XLA_FLAGS before TensorFlow starts, and this "
                           "process started without it; measure it with auto_clustering(), which runs the "
                           f"step in a fresh process with TF_XLA_FLAGS={xla.AUTO_JIT_FLAGS!r}")
    rng = np.random.default_rng(seed)
    if key == "reload":
        return reload_step(gan, batch, rng, n_images)
    images = load_dataset(dataset_file(gan.size, n_images)) if images is None else images
    if images.shape[1:] != (gan.size, gan.size, 1):
        raise ValueError(f"images have shape {images.shape[1:]} per image but the GAN makes "
                         f"{(gan.size, gan.size, 1)}; load them with load_dataset(dataset_file({gan.size}))")
    if key == "in_memory":
        return in_memory_step(gan, images, batch, rng)
    step = tf_ops_step(gan, tf.constant(images), tf.random.Generator.from_seed(seed), batch)
    if key == "tf_ops":
        return step
    return jit_compile_step(step) if key == "jit_compile" else tf_function_step(step)


# Each step of the journey, as the function whose source a lecture prints: what changes from one to the next.

def reload_step(gan: GAN, batch: int, rng: np.random.Generator, n_images: int) -> Callable[[], dict]:
    """The study's step: eager, NumPy for the batch, the noise and the labels, and the whole dataset read
    from disk again for every batch."""
    def step():
        real = fetch_real_batch_reloading(batch, rng, gan.size, n_images)
        z = rng.uniform(-1, 1, (batch, gan.latent_dim)).astype(np.float32)
        return update(gan, real, z, numpy_labels(batch))
    return step


def in_memory_step(gan: GAN, images: np.ndarray, batch: int, rng: np.random.Generator) -> Callable[[], dict]:
    """The data loaded once: the batch drawn from ``images`` in memory; still eager, still NumPy."""
    def step():
        real = fetch_real_batch(images, batch, rng)
        z = rng.uniform(-1, 1, (batch, gan.latent_dim)).astype(np.float32)
        return update(gan, real, z, numpy_labels(batch))
    return step


def tf_ops_step(gan: GAN, data: tf.Tensor, noise: tf.random.Generator, batch: int) -> Callable[[], dict]:
    """No NumPy left: the data a tensor, indices and noise from a ``tf.random.Generator``, labels from TF
    ops; still eager, one op at a time."""
    def step():
        real = tf.gather(data, noise.uniform([batch], 0, data.shape[0], dtype=tf.int32))
        z = noise.uniform([batch, gan.latent_dim], -1.0, 1.0)
        return update(gan, real, z, tf_labels(batch))
    return step


def tf_function_step(step: Callable[[], dict]) -> Callable[[], dict]:
    """That whole step, sampling and both updates, traced into one graph."""
    return tf.function(step)


def jit_compile_step(step: Callable[[], dict]) -> Callable[[], dict]:
    """The same step compiled by XLA, all of it into one program."""
    return tf.function(step, jit_compile=True)


def train(gan: GAN, steps: int = 300, *, batch: int = 64, seed: int = 0, images: np.ndarray | None = None,
          log_every: int = 10) -> dict[str, list]:
    """Train with the one-tf.function step; the losses every ``log_every`` steps."""
    step = make_step("tf_function", gan, batch=batch, images=images, seed=seed)
    history: dict[str, list] = {"step": [], "g_loss": [], "d_loss": []}
    for i in range(steps):
        out = step()
        if i % log_every == 0 or i == steps - 1:
            history["step"].append(i)
            history["g_loss"].append(float(out["g_loss"]))
            history["d_loss"].append(float(out["d_loss"]))
    return history


# -- The journey, measured ------------------------------------------------------------------------

def step_variants(gan: GAN, images: np.ndarray, *, keys: Sequence[str] = IN_PROCESS, seed: int = 0,
                  n_images: int = MNIST_IMAGES) -> dict[str, Callable[..., Callable[[], dict]]]:
    """Builders for ``SpeedupWidget``: each step of ``keys`` on ``gan``, built for the widget's ``batch``."""
    for key in keys:
        if key not in IN_PROCESS:
            raise ValueError(f"step {key!r} cannot run in this process; choose from: {', '.join(IN_PROCESS)}")

    def builder(key: str):
        def build(batch: int = 64):
            return make_step(key, gan, batch=batch, images=images, seed=seed, n_images=n_images)
        return build

    return {STEPS[key]: builder(key) for key in keys}


def journey_widget(gan: GAN, images: np.ndarray, *, batches: Sequence[int] = (64, 256), repeats: int = 5,
                   seed: int = 0, n_images: int = MNIST_IMAGES):
    """The live widget over the in-process steps of the journey: time per step at one batch size each run.

    Its baseline, timed twice a round for the noise floor, is the step with the data in memory: the reload's
    time moves with the file's reading and decoding, and as the baseline its A/A pair would set a wide floor
    for every pair it is in, at twice its cost."""
    from course_lib.speedup_widget import SpeedupWidget

    return SpeedupWidget(step_variants(gan, images, seed=seed, n_images=n_images), sizes={"batch": list(batches)},
                         baseline=STEPS["in_memory"], repeats=repeats,
                         title=f"GAN training step, {gan.size}x{gan.size} images")


@dataclass
class Throughput:
    """Training steps at different batch sizes, measured in one run and read as images per second."""

    comparison: bench.Comparison
    plan: list[tuple[str, int]]  # (step key, batch) per timing
    native_log: str = ""  # what TensorFlow's C++ runtime wrote to standard error during the run

    def images_per_s(self, index: int) -> float:
        _, batch = self.plan[index]
        return 2 * batch / self.comparison.timings[index].median_s

    def gain(self, to: int, over: int = 0) -> float:
        """Images/s of row ``to`` over row ``over``: a ratio of throughputs, fair across batch sizes."""
        return self.images_per_s(to) / self.images_per_s(over)

    def per_image(self) -> bench.Comparison:
        """The same run read as seconds per image (each row's times over its 2 x batch images), so a verdict
        between two batch sizes is a verdict on images/s; the A/A pair is the first row's, scaled alike."""
        c = self.comparison
        per = {t.name: 2 * batch for t, (_, batch) in zip(c.timings, self.plan)}

        def scaled(t: bench.Timing, images: int) -> bench.Timing:
            return bench.Timing(t.name, t.first_call_s / images, [x / images for x in t.times_s], t.number)

        twin = None if c.twin is None else scaled(c.twin, per[c.baseline])
        return bench.Comparison([scaled(t, per[t.name]) for t in c.timings], baseline=c.baseline,
                                machine=c.machine, title=f"{c.title} (per image)".strip(), params=c.params,
                                twin=twin, repeats=c.repeats)

    def verdict(self, to: int, over: int = 0) -> str:
        """``bench.Comparison.verdict`` of row ``to`` over row ``over`` in images/s ("faster": more images/s)."""
        names = self.comparison.names
        return self.per_image().verdict(names[to], over=names[over])

    def call(self, to: int, over: int = 0) -> str:
        """``bench.Comparison.call`` of row ``to`` over row ``over`` in images/s."""
        names = self.comparison.names
        return self.per_image().call(names[to], over=names[over])

    def rows(self) -> list[dict]:
        out = []
        for i, (t, (_, batch)) in enumerate(zip(self.comparison.timings, self.plan)):
            lo, hi = t.spread_s
            out.append({"step": t.name, "batch": batch, "ms per step": t.median_s * 1e3,
                        "spread (ms)": f"{lo * 1e3:.3g}–{hi * 1e3:.3g}", "images/s": round(self.images_per_s(i)),
                        "x first row": self.gain(i)})
        return out

    def _repr_html_(self) -> str:
        caption = f"<p><b>{html.escape(self.comparison.title)}</b></p>" if self.comparison.title else ""
        return (caption + tables.table(self.rows()) + f"<p><small>images per step = 2 x batch; "
                f"{html.escape(host.machine_summary(self.comparison.machine))}</small></p>")

    def __repr__(self) -> str:
        lines = [self.comparison.title] if self.comparison.title else []
        for r in self.rows():
            lines.append(f"{r['step']:<24} batch {r['batch']:>5}  {r['ms per step']:9.3g} ms  "
                         f"{r['images/s']:10,.0f} images/s  {r['x first row']:7.2f}x")
        lines.append(host.machine_summary(self.comparison.machine))
        return "\n".join(lines)


def throughput(plan: Sequence[tuple[str, int]], *, gan: GAN | None = None, images: np.ndarray | None = None,
               size: int = 28, repeats: int = 5, seed: int = 0, n_images: int = MNIST_IMAGES,
               title: str = "") -> Throughput:
    """Measure each in-process ``(step key, batch)`` of ``plan`` in one ``bench.compare`` on one GAN."""
    if not plan:
        raise ValueError("plan is empty: give (step, batch) pairs, e.g. [('tf_function', 64)]")
    for key, batch in plan:
        if key not in IN_PROCESS:
            raise ValueError(f"unknown or out-of-process step {key!r} in plan; choose from: {', '.join(IN_PROCESS)}"
                             " (auto-clustering: auto_clustering())")
        _check_batch(batch)
    if len(set(plan)) != len(plan):
        raise ValueError("plan repeats a (step, batch) pair; each would be measured under the same name")
    gan = GAN(size=size, seed=seed) if gan is None else gan
    names = [STEPS[key] if [k for k, _ in plan].count(key) == 1 else f"{STEPS[key]}, batch {batch}"
             for key, batch in plan]
    steps = {name: make_step(key, gan, batch=batch, images=images, seed=seed, n_images=n_images)
             for name, (key, batch) in zip(names, plan)}
    held: list[str] = []
    try:
        with xla.native_log_held() as held:  # kept to tell which log lines this run wrote (``remapper_text``)
            comparison = bench.compare(steps, repeats=repeats, title=title,
                                       params={"size": gan.size, "plan": list(plan), "repeats": repeats})
    finally:
        if "".join(held):
            os.write(2, "".join(held).encode())  # the log still reaches standard error, as without holding it
    return Throughput(comparison, list(plan), "".join(held))


def step_worker(key: str, size: int, batch: int, seed: int, n_images: int) -> xla.CountedCall:
    """Runs in a live worker process (``auto_clustering``): the step to time, which counts the XLA
    compilations its first call causes.

    The same step runs once eagerly first (``info()["start_up_s"]``): the process's first step pays the
    one-time start-up of what it uses (Keras' layers, TensorFlow's runtime), as the notebook's own process
    did before it timed anything, so the first call then timed holds this step's tracing and compiling. All
    processes start at once, so that start-up is paid side by side, not one process after another."""
    step = make_step(key, GAN(size=size, seed=seed), batch=batch, seed=seed, n_images=n_images)
    start_up = bench.measure(step.python_function, name="start-up", repeats=1, warmup=0, number=1).first_call_s
    return xla.CountedCall(step, start_up_s=start_up)


def auto_clustering_processes(flags: str = xla.AUTO_JIT_FLAGS) -> dict[str, tuple[dict, dict]]:
    """The two variants' live processes: the environment each starts with (the flags are read when TensorFlow
    starts), and the step its worker builds; both build the one-tf.function step."""
    return {STEPS["tf_function"]: ({}, {"key": "tf_function"}),
            STEPS["auto_jit"]: ({"TF_XLA_FLAGS": flags}, {"key": "auto_jit"})}


def auto_clustering(*, size: int = 28, batch: int = 256, repeats: int = 10, seed: int = 0,
                    n_images: int = MNIST_IMAGES, flags: str = xla.AUTO_JIT_FLAGS) -> bench.Comparison:
    """The plain tf.function step against the same step auto-clustered, each in live processes of its own.

    Auto-clustering is switched on when TensorFlow starts, so its step needs processes of its own; the
    step it is compared with runs in processes of its own too, without the flags (two of each, asked in
    rotation), and all stay alive while ``processes.Workers`` asks them in turns, ``repeats`` rounds, with
    two more plain processes as the A/A twin that sets the noise floor. ``params["compilations"]`` says
    how many XLA clusters each compiled, ``params["start-up (s)"]`` its first process's eager start-up step
    (``step_worker``).
    """
    dataset_file(size, n_images, seed)  # written once here, not by each process
    variants = auto_clustering_processes(flags)
    with processes.Workers("course_lib.models.gan:step_worker", variants,
                           kwargs={"size": size, "batch": batch, "seed": seed, "n_images": n_images}) as workers:
        comparison = workers.compare(repeats=repeats, title=f"auto-clustering, batch {batch}, each variant in "
                                                            "two live processes of its own, in turns",
                                     params={"size": size, "batch": batch, "TF_XLA_FLAGS": flags})
        info = {name: workers.info(name) for name in variants}
    comparison.params["compilations"] = {name: i["compilations"] for name, i in info.items()}
    comparison.params["start-up (s)"] = {name: i["start_up_s"] for name, i in info.items()}
    return comparison


def _study_gain(to: tuple[str, str], over: tuple[str, str]) -> float:
    return STUDY_IMAGES_PER_S[to] / STUDY_IMAGES_PER_S[over]


@dataclass
class JourneyRatios:
    """Each step of the journey as a ratio over the step before: this machine's, and the study's own.

    A rate measured on two CPU cores and a rate measured on an A100 do not belong on one axis; how much
    each change multiplied the throughput of the step before it does. Each ratio here comes from
    variants measured in the same run (``source`` names it).
    """

    rows: list[dict]  # step, this machine, the study (or None), call (bench.Comparison.call; None: not judged), source
    machine: dict = field(default_factory=dict)

    def ratio(self, step: str) -> float:
        for r in self.rows:
            if r["step"] == step:
                return r["this machine"]
        raise KeyError(f"no step {step!r}; have: {', '.join(r['step'] for r in self.rows)}")

    def verdicts(self) -> bench.Verdicts:
        """One sentence per step, read from the measurement and set beside the study's ratio."""
        out = []
        for r in self.rows:
            here = bench.ratio_text(r["this machine"]) + " on this machine"
            if r["call"] in bench.NEGLIGIBLE:
                here += f" ({bench.CALL_WORDS[r['call']]})"
            elif r["call"] == bench.TOO_CLOSE:
                here += f" ({bench.TOO_CLOSE} against the noise floor)"
            elif r["call"] == bench.TOO_FEW:
                here += f" ({bench.TOO_FEW} to judge)"
            study = (f"the study: {bench.ratio_text(r['study'])}" if r["study"]
                     else "the study did not measure this step on its own")
            out.append(f"{r['step']}: {here}; {study}")
        return bench.Verdicts(out)

    def __repr__(self) -> str:
        lines = [f"{r['step']:<44} {bench.ratio_text(r['this machine']):>8}   study "
                 f"{bench.ratio_text(r['study']) if r['study'] else '-':>7}   ({r['source']})" for r in self.rows]
        return "\n".join(["step (x the step before)" + " " * 21 + "here        study"] + lines
                         + [host.machine_summary(self.machine)])

    def _repr_html_(self) -> str:
        rows = [{"step": r["step"], "this machine (x the step before)": bench.ratio_text(r["this machine"]),
                 "the study, A100 (x the step before)": bench.ratio_text(r["study"]) if r["study"] else "",
                 "measured in": r["source"]} for r in self.rows]
        return tables.table(rows) + f"<p><small>{html.escape(host.machine_summary(self.machine))}</small></p>"

    def plot(self, ax=None):
        """Both ratios per step on one log axis, 1x marked: bars right of it are gains."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(8, 0.5 * len(self.rows) + 1.2), layout="constrained")
        y = np.arange(len(self.rows))
        ours = [r["this machine"] for r in self.rows]
        theirs = [r["study"] or np.nan for r in self.rows]
        ax.barh(y - 0.2, ours, height=0.4, color="#1f77b4", label="this machine")
        ax.barh(y + 0.2, theirs, height=0.4, color="#bbbbbb", label="the study (one A100)")
        for yi, v in zip(y, ours):
            ax.annotate(bench.ratio_text(v), (v, yi - 0.2), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize="small")
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yticks(y, [r["step"] for r in self.rows])
        ax.invert_yaxis()
        ax.set_xlabel("throughput over the step before (x, log scale)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
        return ax


def journey_ratios(steps: bench.Comparison, batches: Throughput, auto: bench.Comparison | None = None) -> JourneyRatios:
    """The step-to-step ratios from three runs: ``steps`` (the eager steps and tf.function at one batch),
    ``batches`` (tf.function at two batch sizes, then jit_compile at the larger), ``auto`` (``auto_clustering``)."""
    S = STEPS
    need = [S["reload"], S["in_memory"], S["tf_ops"], S["tf_function"]]
    missing = [n for n in need if n not in steps.names]
    if missing:
        raise ValueError(f"steps lacks {missing}; measure {need} at one batch size in one run")
    if [k for k, _ in batches.plan] != ["tf_function", "tf_function", "jit_compile"]:
        raise ValueError("batches must measure tf_function at the small and the big batch, then jit_compile "
                         f"at the big one; got {batches.plan}")
    small, big = batches.plan[0][1], batches.plan[1][1]

    def row(step, ratio, study, call, source):
        return {"step": step, "this machine": ratio, "study": study, "call": call, "source": source}

    eager = f"one run at batch {steps.params.get('batch', small)}"
    rows = [
        row("data loaded once", steps.speedup(S["in_memory"], S["reload"]),
            _study_gain(("in_memory", "batch"), ("reload", "batch")), steps.call(S["in_memory"], S["reload"]), eager),
        row("TF ops, still eager", steps.speedup(S["tf_ops"], S["in_memory"]), None,
            steps.call(S["tf_ops"], S["in_memory"]), eager),
        row("one tf.function", steps.speedup(S["tf_function"], S["tf_ops"]), None,
            steps.call(S["tf_function"], S["tf_ops"]), eager),
        row("TF ops and tf.function together", steps.speedup(S["tf_function"], S["in_memory"]),
            _study_gain(("tf_function", "batch"), ("in_memory", "batch")),
            steps.call(S["tf_function"], S["in_memory"]), eager),
        row(f"batch {small} -> {big} (the study: 64 -> {STUDY_BIG_BATCH})", batches.gain(1, 0),
            _study_gain(("tf_function", "big_batch"), ("tf_function", "batch")), batches.call(1, 0),
            "one run, tf.function at both batch sizes"),
        row("XLA jit_compile", batches.gain(2, 1), None,
            batches.comparison.call(batches.comparison.names[2], batches.comparison.names[1]),
            f"the same run, batch {big}"),
    ]
    if auto is not None:
        rows.append(row("XLA auto-clustering", auto.speedup(S["auto_jit"], S["tf_function"]),
                        _study_gain(("auto_jit", "big_batch"), ("tf_function", "big_batch")),
                        auto.call(S["auto_jit"], S["tf_function"]), "live processes, in turns"))
    return JourneyRatios(rows, steps.machine or host.machine())


def journey(*, size: int = 28, batch: int = 64, big_batch: int = 256, repeats: int = 5, seed: int = 0,
            auto_jit: bool = True, rounds: int = 1, n_images: int = MNIST_IMAGES) -> tuple:
    """The whole journey on this machine, as ``course bench gan`` runs it: (steps, batches, auto, ratios)."""
    gan = GAN(size=size, seed=seed)
    images = load_dataset(dataset_file(size, n_images, seed))
    keys = ("reload", "in_memory", "tf_ops", "tf_function")
    steps = bench.compare({STEPS[k]: make_step(k, gan, batch=batch, images=images, seed=seed, n_images=n_images)
                           for k in keys}, repeats=repeats, title=f"training step at batch {batch}",
                          params={"batch": batch})
    batches = throughput([("tf_function", batch), ("tf_function", big_batch), ("jit_compile", big_batch)],
                         gan=gan, images=images, repeats=repeats, seed=seed, title="batch size and XLA")
    # processes vary more than one process does: auto-clustering's live workers get ``rounds`` x ``repeats`` rounds
    auto = (auto_clustering(size=size, batch=big_batch, repeats=repeats * rounds, seed=seed,
                            n_images=n_images) if auto_jit else None)
    return steps, batches, auto, journey_ratios(steps, batches, auto)


# -- Profiles ---------------------------------------------------------------------------------------

# One cProfile run has no interval of its own: a part is called the larger only when its share of the step
# is at least this many times the rest's (60% against 40%), a margin one re-run's drift does not cross.
PROFILE_MARGIN = 1.5
REMAPPER_LINE = "remapper failed"  # Grappler's line when a remapper rewrite of a training step is invalid


def reload_share_text(share: float) -> str:
    """What a profile's share of the step spent reloading the data supports: which part is larger only
    where the shares differ by ``PROFILE_MARGIN``, and the gain that removing the reload could bring."""
    if not 0 <= share < 1:
        raise ValueError(f"share must be a fraction of the step in [0, 1), got {share!r}")
    rest = 1 - share
    if share >= PROFILE_MARGIN * rest:
        which = "The reload is the larger part of the step, as in the study, so it is the first thing to fix."
    elif rest >= PROFILE_MARGIN * share:
        which = ("Here the rest of the step is the larger part; the reload is still pure waste, and removing it "
                 "costs nothing.")
    else:
        which = ("The reload and the rest of the step are too close in one profile to say which is larger; "
                 "either way the reload is pure waste, and removing it costs nothing.")
    return (f"Removing it should make the step at most **{1 / rest:.1f}x** faster (an estimate: profiling slows "
            f"Python; the widget below measures it). {which}")


def amdahl_text(share: float, call_range: tuple[float, float], steps: bench.Comparison, variant: str,
                over: str) -> str:
    """The profile's bound on the gain of removing a part of ``share`` (Amdahl's law), set beside the
    measured speedup of ``variant`` over ``over``. One profile has no interval, so the bound is read over
    ``call_range``, the least and largest share of a single profiled step (``PythonProfile.share_range``).
    The prediction is tested only where the run calls the gain: then it held where those bounds meet the
    gain's interval, and the profile under- or overstated the part where even the nearest lies outside by
    more than ``PROFILE_MARGIN`` (nearer, the run cannot tell); a gain the run does not call leaves the
    prediction untested, and the text says so."""
    least, most = call_range
    if not 0 <= share < 1:
        raise ValueError(f"share must be a fraction of the step in [0, 1), got {share!r}")
    if not (0 <= least < 1 and 0 <= most < 1):
        raise ValueError(f"call_range must hold fractions of the step in [0, 1), got {call_range!r}")
    if not least <= share <= most:
        raise ValueError(f"call_range must run from the least to the largest single step's share and hold the "
                         f"whole profile's share {share!r}; got {call_range!r}")
    bound, low, high = (1 / (1 - s) for s in (share, least, most))
    gain, (lo, hi) = steps.speedup(variant, over), steps.interval(variant, over)
    text = (f"The profile gave the reload **{share:.0%}** of the step ({least:.0%} to {most:.0%} in single "
            f"steps). Removing a part that takes a share *s* can make the step at most 1 / (1 - *s*) faster, "
            f"because the rest remains (Amdahl's law): **{bound:.2f}x** here ({low:.2f}x to {high:.2f}x over "
            f"the single steps). Measured: **{steps.judged(variant, over)}**. ")
    if not steps.enough_rounds(variant, over):
        return text + "With so few rounds this run cannot set the bound beside the gain."
    call = steps.call(variant, over)
    if call == "slower":
        return text + "The step got slower without the reload, against the profile's prediction of a gain."
    if call != "faster":
        return text + "This run does not call the gain, so it cannot test the profile's prediction."
    if high >= lo and low <= hi:
        return text + "The single steps' bounds meet the measured interval: the profile's share predicted the gain."
    if lo <= high * PROFILE_MARGIN and low <= hi * PROFILE_MARGIN:
        return text + (f"The single steps' bounds miss the measured interval by less than a factor of "
                       f"{PROFILE_MARGIN}, and one profile's bound moves between runs by about that much, so this "
                       "run cannot tell whether the profile misjudged the reload.")
    return text + (f"Even the {'largest' if high < lo else 'least'} single step's bound lies "
                   f"{'below' if high < lo else 'above'} the measured interval: the profile "
                   f"{'understated' if high < lo else 'overstated'} the reload, which the measured gain puts at "
                   f"about {1 - 1 / gain:.0%} of the unprofiled step. A profile is an estimate; the widget's timing "
                   "is the measurement.")


def batch_text(batches: Throughput, to: int = 1, over: int = 0) -> str:
    """What the larger batch did to images/s in ``batches`` (rows ``over`` -> ``to``), explained only where
    the verdict clears the noise floor."""
    (_, small), (_, big) = batches.plan[over], batches.plan[to]
    call, verdict = batches.call(to, over), batches.verdict(to, over)
    head = (f"**A larger batch** spreads the fixed cost of a step (dispatch, launching each kernel) over more "
            f"images. On an A100 with thousands of lanes a batch of 64 leaves most of the chip idle, so the study "
            f"gained about 5x at {STUDY_BIG_BATCH:,}. Here, batch {small} -> {big} in images/s: *{verdict}*. ")
    if call == "faster":
        return head + "The step's fixed cost was a measurable part of the smaller batch's step."
    if call == "slower":
        return head + ("Per image, the larger batch cost more; this run times the whole step only, so it does "
                       "not show which part of it grew.")
    if call in bench.NEGLIGIBLE:
        return head + f"At batch {small} the fixed cost was already too small a part of the step to matter."
    return head + "This run cannot tell whether the larger batch changed images/s."


def remapper_text(log: str) -> str:
    """The explanation of Grappler's "remapper failed" line where ``log`` (what this run wrote to standard
    error) holds it, and one sentence where it does not."""
    if REMAPPER_LINE not in log:
        return ("**A log line you may see.** Where oneDNN is on, Grappler can log \"remapper failed\" for this "
                "training step; this run did not.")
    return ("**A log line this run wrote.** \"remapper failed: INVALID_ARGUMENT: Mutation::Apply error: fanout "
            "'.../LeakyReluGrad' exist for missing node '.../BiasAdd'\". Grappler's remapper, the pass that fuses a "
            "convolution or a matrix product with what follows it into one kernel, tried to fold a discriminator "
            "convolution, its bias add and its leaky ReLU into one kernel, which would delete the bias add's "
            "output; but the leaky ReLU's gradient reads that output, so the rewrite is invalid in a training "
            "step and Grappler does not apply it. Logged at error level, it does not stop the step: the step ran "
            "and was timed above.")


def kernel_time_text(table, onednn: bool | None) -> str:
    """What the profile's op table (``profile.op_stats``) says of the real work: the share of op time the
    convolutions and their gradients took together, and which op types oneDNN ran. A group, not a ranking:
    which of two near-equal op types comes third changes from run to run, their sum does not."""
    convolutions = sorted(r["op type"] for r in table.rows if "Conv" in r["op type"])
    onednn_ops = sorted(r["op type"] for r in table.rows if "oneDNN" in r["kernels by"])
    share = sum(table.share(op, of="op time") for op in convolutions)
    head = (f"The convolutions and their gradients ({', '.join(f'`{op}`' for op in convolutions)}) took "
            f"{share:.0%} of the recorded op time. " if convolutions
            else "No convolution appears in the trace's op types. ")
    state = "on" if onednn else "off" if onednn is False else "unknown"
    return head + f"oneDNN is {state} in this TensorFlow, and " + (
        f"oneDNN's kernels ran {len(onednn_ops)} of the trace's {len(table.rows)} op types: "
        f"{', '.join(f'`{op}`' for op in onednn_ops)}." if onednn_ops
        else "TensorFlow's own kernels ran every op type in the trace.")


def _module_of(filename: str) -> str:
    path = Path(filename)
    if "site-packages" in path.parts:
        path = Path(*path.parts[path.parts.index("site-packages") + 1:])
    else:
        try:
            path = path.resolve().relative_to(ROOT)
        except ValueError:
            return path.stem
    return ".".join(path.with_suffix("").parts)


@dataclass
class PythonProfile:
    """Where a step's Python time went: the functions of interest by cumulative time, and each one's share
    of every profiled step on its own (``call_shares``: one profile has no interval, but its steps differ)."""

    rows: list[dict]
    total_s: float
    calls: int
    call_shares: dict[str, list[float]]

    def _named(self, function: str) -> list[dict]:
        rows = [r for r in self.rows if r["function"].rsplit(".", 1)[-1] == function]
        if not rows:
            raise KeyError(f"no function {function!r} in the profile; have: "
                           f"{', '.join(r['function'] for r in self.rows)}")
        return rows

    def share(self, function: str) -> float:
        """The largest share of the profiled time spent inside functions named ``function``."""
        return max(r["% of step"] / 100 for r in self._named(function))

    def share_range(self, function: str) -> tuple[float, float]:
        """The least and largest share of one profiled step spent inside ``function`` (the function of that
        name with the largest share over all steps): how far the share moved from step to step. The whole
        profile's share is the steps' time-weighted mean, so it lies within them; it is included so that
        rounding cannot put it a hair outside."""
        top = max(self._named(function), key=lambda r: r["% of step"])
        shares = [*self.call_shares[top["function"]], top["% of step"] / 100]
        return min(shares), max(shares)

    def _repr_html_(self) -> str:
        return (tables.table(self.rows) + f"<p><small>cProfile over {self.calls} steps, "
                f"{self.total_s:.3g} s in all (profiling slows Python code)</small></p>")

    def __repr__(self) -> str:
        return "\n".join(f"{r['function']:<60} {r['calls']:>6} {r['cumulative (s)']:8.3f} s "
                         f"{r['% of step']:5.1f}%" for r in self.rows)


def python_profile(step: Callable[[], object], calls: int = 5,
                   where: Sequence[str] = ("course_lib", "numpy.lib"),
                   min_percent: float = 0.5) -> PythonProfile:
    """cProfile ``calls`` steps (after one unprofiled call), each under a profiler of its own, and keep the
    functions whose module starts with one of ``where`` and that took at least ``min_percent`` of the time:
    the drill-down a line profiler gave the study, one level per function."""
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls!r}")
    bench.force(step())
    profilers = []
    for _ in range(calls):
        # Built-in (C) functions are not rows here, and not tracking them keeps the Python frames right: from
        # Python 3.12, cProfile's tracking of some C calls (TensorFlow's op dispatch) drops the frames above them.
        profiler = cProfile.Profile(builtins=False)
        profiler.enable()
        bench.force(step())
        profiler.disable()
        profilers.append(profiler)
    profiles = [pstats.Stats(p) for p in profilers]
    stats = pstats.Stats()
    stats.add(*profiles)  # the whole profile: every step's, merged
    total = stats.total_tt
    rows, call_shares = [], {}
    for key, (_, ncalls, _, cumulative, _) in stats.stats.items():
        filename, _, func = key
        module = _module_of(filename)
        if module.startswith(tuple(where)) and 100 * cumulative / total >= min_percent:
            name = f"{module}.{func}"
            rows.append({"function": name, "calls": ncalls, "cumulative (s)": cumulative,
                         "% of step": 100 * cumulative / total})
            call_shares[name] = [p.stats[key][3] / p.total_tt if key in p.stats else 0.0 for p in profiles]
    rows.sort(key=lambda r: -r["cumulative (s)"])
    return PythonProfile(rows, total, calls, call_shares)


def trace_steps(step: Callable[[], object], steps: int = 3, logdir: str | os.PathLike = TRACE_DIR) -> Trace:
    """Record ``steps`` steps with the TensorFlow profiler into ``logdir`` (``course_lib.profile.capture``:
    older runs there are replaced, the first call runs before, unprofiled); open it with TensorBoard's Profile
    tab, or read it with ``course_lib.profile`` (``op_stats``, ``timeline``)."""
    return capture(step, steps, warmup=1, logdir=logdir)


# -- Pictures ---------------------------------------------------------------------------------------

def image_grid(images: np.ndarray, cols: int = 8, ax=None, title: str = ""):
    """Images in [-1, 1] side by side, grey scale, one pixel of gap."""
    import matplotlib.pyplot as plt

    images = np.asarray(images)
    if images.ndim == 4:
        images = images[..., 0]
    if images.ndim != 3:
        raise ValueError(f"expected images of shape (n, height, width[, 1]), got {images.shape}")
    n, h, w = images.shape
    cols = min(cols, n)
    rows = math.ceil(n / cols)
    canvas = np.full((rows * (h + 1) - 1, cols * (w + 1) - 1), -1.0, np.float32)
    for i, img in enumerate(images):
        r, c = divmod(i, cols)
        canvas[r * (h + 1):r * (h + 1) + h, c * (w + 1):c * (w + 1) + w] = img
    if ax is None:
        _, ax = plt.subplots(figsize=(cols * 0.6, rows * 0.6), layout="constrained")
    ax.imshow(canvas, cmap="gray", vmin=-1, vmax=1, interpolation="nearest")
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax
