"""TFRecord shards of a small classification problem, written to a temporary folder."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf


@dataclass
class Shards:
    """TFRecord shards written by ``write_shards``, and the arrays they hold.

    Each record is a ``tf.train.Example`` with an ``id`` (its position in the data set),
    a float feature vector ``x`` and an integer class ``y``. A folder this module made
    is deleted by ``cleanup()``, on leaving a ``with`` block, or when the object is
    garbage-collected, at the latest when the interpreter (a notebook's kernel) exits: a
    notebook keeps the object, so its live widgets can still read the files.
    """

    folder: Path
    paths: list[str]
    ids: np.ndarray
    x: np.ndarray
    y: np.ndarray
    classes: int
    _finalizer: Any = field(default=None, repr=False)

    @property
    def pattern(self) -> str:
        """A glob for ``tf.data.Dataset.list_files``."""
        return str(self.folder / "shard-*.tfrecord")

    @property
    def n_records(self) -> int:
        return len(self.ids)

    @property
    def features(self) -> int:
        return self.x.shape[1]

    def cleanup(self) -> None:
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> "Shards":
        return self

    def __exit__(self, *exc) -> None:
        self.cleanup()


def _example(i: int, x: np.ndarray, y: int) -> bytes:
    feature = {
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=x.tolist())),
        "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_shards(n_shards: int = 4, records_per_shard: int = 32, *, features: int = 16, classes: int = 4,
                 seed: int = 0, folder: str | os.PathLike | None = None) -> Shards:
    """Write a small, learnable classification problem as TFRecord shards.

    ``x`` is standard normal and ``y`` is the arg-max of a fixed random linear map of
    ``x``, so a small model can learn it. Without ``folder`` the shards go to a new
    temporary folder that is removed with the returned object.
    """
    for name, value, low in (("n_shards", n_shards, 1), ("records_per_shard", records_per_shard, 1),
                             ("features", features, 1), ("classes", classes, 2)):
        if not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    rng = np.random.default_rng(seed)
    n = n_shards * records_per_shard
    x = rng.standard_normal((n, features)).astype(np.float32)
    y = np.argmax(x @ rng.standard_normal((features, classes)), axis=1).astype(np.int64)
    ids = np.arange(n, dtype=np.int64)
    owned = folder is None
    root = Path(tempfile.mkdtemp(prefix="course-shards-") if owned else folder)
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in range(n_shards):
        path = root / f"shard-{s:05d}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for i in range(s * records_per_shard, (s + 1) * records_per_shard):
                writer.write(_example(int(i), x[i], int(y[i])))
        paths.append(str(path))
    shards = Shards(root, paths, ids, x, y, classes)
    if owned:
        shards._finalizer = weakref.finalize(shards, shutil.rmtree, str(root), True)
    return shards


_SPEC = {"id": tf.io.FixedLenFeature([], tf.int64), "y": tf.io.FixedLenFeature([], tf.int64)}


def record_spec(features: int) -> dict:
    """How to parse one record with ``features`` features (``tf.io.parse_example``)."""
    return dict(_SPEC, x=tf.io.FixedLenFeature([features], tf.float32))
