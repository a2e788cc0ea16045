"""The programs lecture 16 profiles without being told what is wrong with them, and their fixes.

Three slow programs from earlier lectures, each a zero-argument step: a GAN step that reads its whole
dataset again every step (06), a training loop fed by a tf.data pipeline that reads its records one
after another and parses them one at a time (04), and a training step that retraces on every call
(02). Once the GAN step reads its data only once, it is a program whose time is the model's own.
``variants`` functions return widget builders: ``{"as found": ..., "fixed": ...}``.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from course_lib import data, graphs
from course_lib.models import gan as gan_lib

Builder = Callable[..., Callable[[], Any]]


# -- 1. the GAN step that reads its data again ------------------------------------------------------------

def reloading_batches(size: int, batch: int, n_images: int, rng: np.random.Generator) -> Callable[[], np.ndarray]:
    """As found: every batch reads and decodes the whole dataset file again, to draw ``batch`` images."""
    return lambda: gan_lib.fetch_real_batch_reloading(batch, rng, size, n_images)


def batches_read_once(size: int, batch: int, n_images: int, rng: np.random.Generator) -> Callable[[], np.ndarray]:
    """The fix: the dataset file read and decoded once, when the step is built; every batch drawn from memory."""
    images = gan_lib.load_dataset(gan_lib.dataset_file(size, n_images))
    return lambda: gan_lib.fetch_real_batch(images, batch, rng)


def gan_step(size: int = 28, batch: int = 64, n_images: int = 70_000, *, reload: bool = True,
             seed: int = 0) -> Callable[[], Any]:
    """A GAN training step: a batch of real images and noise drawn with NumPy, then one compiled update.

    As found (``reload=True``) the batch comes from ``reloading_batches``; the fix takes it from
    ``batches_read_once``. The update (``gan.update``, both networks, one ``tf.function``) is the same in both.
    """
    model = gan_lib.GAN(size, seed=seed)
    update = tf.function(lambda real, z, labels: gan_lib.update(model, real, z, labels))
    rng = np.random.default_rng(seed)
    labels = gan_lib.numpy_labels(batch)
    real_batch = (reloading_batches if reload else batches_read_once)(size, batch, n_images, rng)

    def step():
        real = real_batch()
        z = rng.uniform(-1, 1, (batch, model.latent_dim)).astype(np.float32)
        return update(real, z, labels)

    return step


def gan_variants(size: int = 28, batch: int = 64, n_images: int = 70_000) -> dict[str, Builder]:
    """The GAN step as found (reading its data again each step) and fixed (data read once)."""
    return {"as found": lambda: gan_step(size, batch, n_images, reload=True),
            "fixed": lambda: gan_step(size, batch, n_images, reload=False)}


def conv_share(table) -> float:
    """The share of all op time that went to convolutions (forward and both gradients) in an op table."""
    return sum(r["% of op time"] for r in table.rows if "Conv" in str(r[table.by])) / 100


# -- 2. the input pipeline --------------------------------------------------------------------------------

FEATURES = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64)}


@dataclass
class Records:
    """TFRecord files of serialized ``tf.train.Example``s (28x28 uint8 images and labels) in a temporary folder.

    The folder lives as long as this object: it is deleted by ``cleanup()``, or when the object is
    garbage-collected, at the latest when the interpreter (a notebook's kernel) exits. A notebook that
    keeps the object therefore keeps the files its widgets read, after Run All as well.
    """

    folder: Path
    paths: list[str]
    per_file: int
    size: int
    _finalizer: Any = field(default=None, repr=False)

    def __post_init__(self):
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.folder), True)

    @property
    def n_records(self) -> int:
        return len(self.paths) * self.per_file

    def cleanup(self) -> None:
        self._finalizer()


def write_records(n_files: int = 16, per_file: int = 16, size: int = 28, seed: int = 0) -> Records:
    """Write ``n_files`` TFRecord files of ``per_file`` images each (random pixels, seeded)."""
    if n_files < 1 or per_file < 1:
        raise ValueError(f"n_files and per_file must be >= 1, got {n_files} and {per_file}")
    rng = np.random.default_rng(seed)
    folder = Path(tempfile.mkdtemp(prefix="course-records-"))
    paths = []
    for f in range(n_files):
        path = folder / f"part-{f:03d}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for _ in range(per_file):
                pixels = rng.integers(0, 256, (size, size), dtype=np.uint8)
                example = tf.train.Example(features=tf.train.Features(feature={
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels.tobytes()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rng.integers(10))]))}))
                writer.write(example.SerializeToString())
        paths.append(str(path))
    return Records(folder, paths, per_file, size)


def read_slowly(path, read_s: float) -> tf.data.Dataset:
    """One TFRecord file whose every record arrives ``read_s`` seconds late, as from remote storage.

    The wait is lecture 04's simulated read (``data.read_shard``): a sleep on the tf.data thread that
    reads the record, which releases the interpreter's lock, so parallel reads overlap their waits as
    real ones would.
    """
    return data.read_shard(path, data.Latency(open_s=0.0, record_s=read_s, map_s=0.0))


def images_and_labels(parsed: dict, size: int):
    """Parsed examples (one or a batch) as float images in [0, 1] of shape (..., size, size, 1) and labels."""
    pixels = tf.io.decode_raw(parsed["image"], tf.uint8)
    images = tf.cast(tf.reshape(pixels, tf.concat([tf.shape(pixels)[:-1], [size, size, 1]], 0)), tf.float32) / 255
    return images, parsed["label"]


def sequential_pipeline(records: Records, batch: int = 32, read_s: float = 0.002) -> tf.data.Dataset:
    """The pipeline as found: the files read one after another, each record parsed alone, nothing ahead."""
    files = tf.data.Dataset.from_tensor_slices(records.paths)
    raw = files.flat_map(lambda p: read_slowly(p, read_s))
    parsed = raw.map(lambda r: images_and_labels(tf.io.parse_single_example(r, FEATURES), records.size))
    return parsed.batch(batch, drop_remainder=True).repeat()


def parallel_pipeline(records: Records, batch: int = 32, read_s: float = 0.002) -> tf.data.Dataset:
    """The fix: all files read at once (on a thread pool with one thread per file, since the reads wait
    rather than compute), whole batches parsed in one op, the next batches made ahead."""
    files = tf.data.Dataset.from_tensor_slices(records.paths)
    raw = files.interleave(lambda p: read_slowly(p, read_s),
                           cycle_length=len(records.paths), num_parallel_calls=len(records.paths),
                           deterministic=False)
    parsed = raw.batch(batch, drop_remainder=True).map(
        lambda r: images_and_labels(tf.io.parse_example(r, FEATURES), records.size),
        num_parallel_calls=tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.threading.private_threadpool_size = len(records.paths)  # the reads wait, they do not compute
    return parsed.repeat().prefetch(2).with_options(options)


def classifier_step(dataset: tf.data.Dataset, size: int = 28, seed: int = 0) -> Callable[[], Any]:
    """A training loop's step: the next batch from ``dataset``, one update of a small classifier."""
    keras.utils.set_random_seed(seed)
    model = graphs.conv_model(size)
    train = tf.function(graphs.make_train_step(model, keras.optimizers.SGD(0.05),
                                               keras.losses.SparseCategoricalCrossentropy(from_logits=True)))
    batches = iter(dataset)
    return lambda: train(*next(batches))


def pipeline_variants(records: Records, batch: int = 32, read_s: float = 0.002) -> dict[str, Builder]:
    """The training loop fed by the pipeline as found and by the fixed one."""
    return {"as found": lambda: classifier_step(sequential_pipeline(records, batch, read_s), records.size),
            "fixed": lambda: classifier_step(parallel_pipeline(records, batch, read_s), records.size)}


# -- 3. the step that retraces -------------------------------------------------------------------------------

def decayed_train_step(size: int = 28, batch: int = 64, seed: int = 0, *, step_as_tensor: bool = False):
    """A training step whose learning rate decays with the step number, called with a new number each time.

    As found (``python_step_number``) the number is a Python int, part of the function's signature, so
    every call traces the step again; the fix (``tensor_step_number``) passes it as a tensor, which keeps
    one graph. The step's ``.function`` is the ``tf.function``, for counting its traces.
    """
    keras.utils.set_random_seed(seed)
    model = graphs.conv_model(size)
    model.build((None, size, size, 1))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(seed)
    images = tf.constant(rng.random((batch, size, size, 1), dtype=np.float32))
    labels = tf.constant(rng.integers(0, 10, batch))

    @tf.function(autograph=False)  # plain Python around tensors: nothing for AutoGraph to convert
    def train_step(images, labels, step):
        rate = 0.05 * 0.999 ** tf.cast(step, tf.float32)
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        for var, grad in zip(model.trainable_variables, tape.gradient(loss, model.trainable_variables)):
            var.assign_sub(rate * grad)
        return loss

    run = (tensor_step_number if step_as_tensor else python_step_number)(train_step, images, labels)
    run.function = train_step
    return run


def python_step_number(train_step, images, labels) -> Callable[[], Any]:
    """As found: the step number goes in as a Python int, part of the signature, so every call traces again."""
    counter = itertools.count()

    def run():
        return train_step(images, labels, next(counter))
    return run


def tensor_step_number(train_step, images, labels) -> Callable[[], Any]:
    """The fix: the step number goes in as a tensor, whose dtype and shape stay the same, so one graph serves."""
    counter = itertools.count()

    def run():
        return train_step(images, labels, tf.constant(next(counter)))
    return run


def retrace_variants(size: int = 28, batch: int = 64) -> dict[str, Builder]:
    """The retracing step as found and fixed."""
    return {"as found": lambda: decayed_train_step(size, batch),
            "fixed": lambda: decayed_train_step(size, batch, step_as_tensor=True)}
