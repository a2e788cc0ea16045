"""Simulated storage and decoding: sleeps on the tf.data thread doing the work, which cost time but no CPU."""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable

import tensorflow as tf

from course_lib.data.recorder import Recorder
from course_lib.data.shards import Shards, record_spec


@dataclass(frozen=True)
class Latency:
    """Simulated costs in seconds: opening one shard, reading one record, one call of the map."""

    open_s: float = 0.01
    record_s: float = 0.001
    map_s: float = 0.001

    def __post_init__(self) -> None:
        for name in ("open_s", "record_s", "map_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"Latency.{name} must be a number of seconds >= 0, got {value!r}")


def _sleep(recorder: Recorder | None, stage: str, seconds: float, ids=(), source: str = "") -> None:
    with recorder.span(stage, ids, source) if recorder else nullcontext():
        if seconds:
            time.sleep(seconds)


def _after(value, wait: Callable[..., None], *inputs):
    """``value``, available only after ``wait(*inputs)`` has run (on NumPy values) on the
    tf.data thread that computes it.

    ``wait`` runs in a ``tf.py_function``; time.sleep releases the GIL, so parallel
    tf.data threads overlap their simulated delays as they would overlap waits on storage.
    """
    @tf.autograph.experimental.do_not_convert
    def run(*args):
        wait(*(a.numpy() for a in args))
        return True

    done = tf.py_function(run, list(inputs), tf.bool)
    with tf.control_dependencies([done]):
        return tf.nest.map_structure(tf.identity, value)


def transform(element: dict) -> dict:
    """The real work of the map: squash the features. Element-wise, so it gives the same
    numbers on one record or on a batch."""
    return {"id": element["id"], "x": tf.tanh(element["x"]), "y": element["y"]}


def read_shard(path, latency: Latency = Latency(), recorder: Recorder | None = None) -> tf.data.Dataset:
    """One shard's serialized records, each after ``record_s``, the first also after ``open_s``.

    The open is paid on the first read, in the thread that reads, as a real file system
    pays it: so parallel readers open their shards at the same time too.
    """
    records = tf.data.TFRecordDataset(path)
    if recorder is None and latency.open_s == 0 and latency.record_s == 0:
        return records

    def wait(index, shard):
        source = os.path.basename(shard.decode())
        if index == 0:
            _sleep(recorder, "open", latency.open_s, source=source)
        _sleep(recorder, "read", latency.record_s, source=source)

    return records.enumerate().map(lambda i, record: _after(record, wait, i, path))


def decoder(shards: Shards, latency: Latency = Latency(), recorder: Recorder | None = None):
    """The map function: parse serialized records, pay ``map_s`` once per call, ``transform``.

    It takes one record or a batch of them (``tf.io.parse_example`` handles both), so the
    same function serves map-then-batch and batch-then-map.
    """
    spec = record_spec(shards.features)

    def wait(ids):
        _sleep(recorder, "map", latency.map_s, ids)

    def decode(records):
        element = tf.io.parse_example(records, spec)
        if recorder is not None or latency.map_s:
            element = _after(element, wait, element["id"])
        return transform(element)

    return decode
