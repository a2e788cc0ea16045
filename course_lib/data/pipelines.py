"""The same input pipeline at each step of the usual optimisation path, run, recorded and timed."""

from __future__ import annotations

import copy
import inspect
import threading
import time
from contextlib import nullcontext
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

from course_lib import bench
from course_lib.data.latency import Latency, decoder, read_shard
from course_lib.data.recorder import Recorder
from course_lib.data.shards import Shards

AUTOTUNE = tf.data.AUTOTUNE

# -- the variants: one function each, whose source is the technique ------------------------------
# Each takes the file names, the function that opens a shard into its records, the decode function and
# the batch size. Each step adds one change to the one before it, except "cache" and "vectorised": both
# start from "interleave" and are alternatives (once the map's output is cached there is no map call
# left to vectorise).

def naive(files, read, decode, batch_size):
    """read the shards one after another, map each record, batch"""
    return files.flat_map(read).map(decode).batch(batch_size)


def prefetched(files, read, decode, batch_size):
    """+ prefetch: the pipeline runs ahead of the consumer on its own thread"""
    return files.flat_map(read).map(decode).batch(batch_size).prefetch(tf.data.AUTOTUNE)


def parallel_map(files, read, decode, batch_size):
    """+ map(num_parallel_calls=AUTOTUNE): several records decoded at once"""
    return (files.flat_map(read)
            .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
            .batch(batch_size)
            .prefetch(tf.data.AUTOTUNE))


def interleaved(files, read, decode, batch_size):
    """+ interleave(num_parallel_calls=AUTOTUNE): all shards opened and read at once"""
    return (files.interleave(read, cycle_length=files.cardinality(), num_parallel_calls=tf.data.AUTOTUNE)
            .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
            .batch(batch_size)
            .prefetch(tf.data.AUTOTUNE))


def cached(files, read, decode, batch_size):
    """interleave + cache() after the map: later epochs come from memory"""
    return (files.interleave(read, cycle_length=files.cardinality(), num_parallel_calls=tf.data.AUTOTUNE)
            .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
            .cache()
            .batch(batch_size)
            .prefetch(tf.data.AUTOTUNE))


def vectorised(files, read, decode, batch_size):
    """interleave, but batch then map: one decode call per batch, not per record"""
    return (files.interleave(read, cycle_length=files.cardinality(), num_parallel_calls=tf.data.AUTOTUNE)
            .batch(batch_size)
            .map(decode, num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE))


BUILDERS = {"naive": naive, "prefetch": prefetched, "parallel map": parallel_map, "interleave": interleaved,
            "cache": cached, "vectorised": vectorised}
VARIANTS = tuple(BUILDERS)


def describe(variant: str) -> str:
    """One line saying what ``variant`` changes (its builder's docstring)."""
    check_variant(variant)
    return BUILDERS[variant].__doc__


def source(variant: str) -> str:
    """The code of ``variant``'s builder, to print in a lecture: the technique itself."""
    check_variant(variant)
    return inspect.getsource(BUILDERS[variant])


def check_variant(variant: str) -> None:
    """A clear error for a name that is not in ``VARIANTS``."""
    if variant not in BUILDERS:
        raise ValueError(f"unknown pipeline variant {variant!r}; choose one of: {', '.join(VARIANTS)}")


# -- a consumer that computes ----------------------------------------------------------------------

class Work:
    """A consumer step that computes for about ``ms`` milliseconds: chained matrix products on
    the CPU, calibrated on this machine when it is made.

    It stands in for a training step that does real work. Unlike a sleep it uses the cores,
    so whatever the pipeline computes at the same time competes with it.
    """

    def __init__(self, ms: float, *, size: int = 256):
        if not isinstance(ms, (int, float)) or ms <= 0:
            raise ValueError(f"Work needs a positive number of milliseconds, got {ms!r}")
        w = tf.random.stateless_normal([size, size], seed=[0, 1]) / np.sqrt(size)
        x0 = tf.ones([size, size])

        @tf.function
        def run(n):
            x = x0
            for _ in tf.range(n):
                x = tf.tanh(x @ w)
            return tf.reduce_sum(x)

        probe = 32
        # the fastest repeat: the one least slowed by whatever else the machine ran while calibrating
        per_iteration = min(bench.measure(lambda: run(tf.constant(probe)), repeats=5).times_s) / probe
        self.ms, self.size, self.per_iteration_s = float(ms), size, per_iteration
        self.iterations = max(1, round(ms / 1e3 / per_iteration))
        self._run, self._n = run, tf.constant(self.iterations)

    def scaled(self, factor: float) -> "Work":
        """The same computation ``factor`` times as long, without calibrating again, so the two steps
        compare by construction (a second calibration on a busy machine could differ)."""
        if not isinstance(factor, (int, float)) or factor <= 0:
            raise ValueError(f"Work.scaled needs a positive factor, got {factor!r}")
        out = copy.copy(self)
        out.ms, out.iterations = self.ms * factor, max(1, round(self.iterations * factor))
        out._n = tf.constant(out.iterations)
        return out

    @property
    def step_s(self) -> float:
        """One step's length as calibrated: read from the calibration, so no second timing can disagree."""
        return self.iterations * self.per_iteration_s

    def __call__(self, batch: Any = None):
        return self._run(self._n)

    def __repr__(self) -> str:
        return f"Work({self.ms:g} ms: {self.iterations} products of {self.size}x{self.size} matrices)"


def pipeline(shards: Shards, variant: str = "naive", *, latency: Latency = Latency(), batch_size: int = 16,
             recorder: Recorder | None = None, threads: int | None = None) -> tf.data.Dataset:
    """The input pipeline at one step of the optimisation path (``BUILDERS[variant]``, see ``VARIANTS``).

    Yields batches ``{"id", "x", "y"}``; the interleaving variants read every shard at once, since
    waiting, not CPU, is what parallel reads hide. ``threads`` gives the pipeline a private thread pool
    of that size: by default tf.data runs its functions on a pool with one thread per core, which caps
    how many waits (reads, remote calls) can overlap however large ``num_parallel_calls`` is.
    """
    check_variant(variant)
    if not isinstance(shards, Shards):
        raise TypeError(f"shards must come from write_shards(), got {type(shards).__name__}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be None (tf.data's default pool) or a whole number >= 1, got {threads!r}")
    files = tf.data.Dataset.list_files(shards.pattern, shuffle=False)

    def read(path):
        return read_shard(path, latency, recorder)

    ds = BUILDERS[variant](files, read, decoder(shards, latency, recorder), batch_size)
    # Reading files hides how many batches there are; saying so lets Keras size its epochs.
    ds = ds.apply(tf.data.experimental.assert_cardinality(-(-shards.n_records // batch_size)))
    return ds.with_options(_options(threads))


def _options(threads: int | None) -> tf.data.Options:
    """Settings for every variant. By default tf.data fuses a map with the batch after it into one
    asynchronous op that runs ahead of the consumer, and injects a prefetch at the end: both
    would give the "naive" pipeline the overlap that "prefetch" is meant to add, so they are off."""
    options = tf.data.Options()
    options.experimental_optimization.map_and_batch_fusion = False
    options.experimental_optimization.inject_prefetch = False
    if threads is not None:
        options.threading.private_threadpool_size = threads
    return options


def transformations(dataset: tf.data.Dataset) -> list[str]:
    """The dataset operations of a pipeline, source first, read from its serialized graph.

    Shows what a chain of Python calls built (``ParallelMapDatasetV2`` for a parallel map,
    ``PrefetchDataset`` ...); functions inside map and interleave are left out, and so is
    ``OptionsDataset``, which holds settings (``with_options``) and does no work.
    """
    graph = tf.compat.v1.GraphDef()
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor,
                                             external_state_policy=1)  # ignore py_function state
    graph.ParseFromString(serialized.numpy())
    return [node.op for node in graph.node if "Dataset" in node.op and node.op != "OptionsDataset"]


def xy(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``(x, y)`` pairs from a pipeline's dict elements, the form ``keras.Model.fit`` takes."""
    return dataset.map(lambda e: (e["x"], e["y"]))


def consume(dataset: tf.data.Dataset, *, recorder: Recorder | None = None,
            step: Callable[[Any], Any] | None = None, step_s: float = 0.0, release_here: bool = False) -> int:
    """Iterate over a pipeline once, as a training loop would; return how many records it saw.

    Each batch is handed to ``step`` (a training step, say) or, without one, the consumer
    sleeps ``step_s`` to stand in for it. With a ``recorder``, the time spent waiting for
    each batch and the time spent on it are logged as "wait" and "step" spans.

    The exhausted iterator is destroyed on a background thread (``_release``), so a timed call
    ends with the last step, where a recorded run's timeline ends too; with ``release_here`` it is
    destroyed before returning, so a timed call includes the teardown, as a ``fit`` epoch does.
    """
    count = 0
    iterator = iter(dataset)
    while True:
        with recorder.span("wait") if recorder else nullcontext():
            try:
                batch = next(iterator)
            except StopIteration:
                break
        ids = batch["id"].numpy().ravel()
        with recorder.span("step", ids) if recorder else nullcontext():
            if step is not None:
                bench.force(step(batch))
            elif step_s:
                time.sleep(step_s)
        count += len(ids)
    if release_here:
        del iterator
        return count
    holder = [iterator]
    del iterator  # the holder has the last reference: the iterator dies where holder.clear() runs
    _release(holder)
    return count


def _release(holder: list) -> None:
    """Destroy the one iterator in ``holder`` on a background thread.

    Destroying a ``tf.data`` iterator stops its autotuning thread, and in this TensorFlow that
    thread can first sleep out the rest of its current tuning interval: the caller would wait
    anywhere from nothing to the length of that interval, at random, whatever the pipeline. The
    sleep costs no CPU, so it can run beside the next epoch.
    """
    threading.Thread(target=holder.clear, name="release tf.data iterator", daemon=True).start()


def record_run(shards: Shards, variant: str, *, latency: Latency = Latency(), batch_size: int = 16,
               threads: int | None = None, step: Callable[[Any], Any] | None = None, step_s: float = 0.0,
               epochs: int = 1) -> Recorder:
    """Run ``variant`` for ``epochs`` with a recorder and return it (``.plot()`` draws the timeline).

    The consumer calls ``step`` on each batch (a ``Work``, say) or, without one, sleeps ``step_s``.
    """
    recorder = Recorder()
    ds = pipeline(shards, variant, latency=latency, batch_size=batch_size, recorder=recorder, threads=threads)
    recorder.start()
    for _ in range(epochs):
        consume(ds, recorder=recorder, step=step, step_s=step_s)
    return recorder


def elements(dataset: tf.data.Dataset) -> dict[int, tuple]:
    """Every record a pipeline yields, keyed by id: ``{id: (x, y)}`` (order dropped)."""
    out = {}
    for batch in dataset:
        for i, x, y in zip(batch["id"].numpy(), batch["x"].numpy(), batch["y"].numpy()):
            if int(i) in out:
                raise ValueError(f"record {int(i)} appeared twice")
            out[int(i)] = (x, int(y))
    return out


def same_records(got: dict[int, tuple], expected: dict[int, tuple]) -> bool:
    """Whether two ``elements`` results hold the same records (ids, features and labels)."""
    return got.keys() == expected.keys() and all(
        np.array_equal(got[i][0], x) and got[i][1] == y for i, (x, y) in expected.items())


def compare_pipelines(shards: Shards, variants: Sequence[str] = VARIANTS, *, latency: Latency = Latency(),
                      batch_size: int = 16, threads: int | None = None, step_ms: float = 0.0,
                      repeats: int = 3) -> bench.Comparison:
    """Time one epoch of each variant against the first (``bench.compare``).

    The consumer computes a ``Work(step_ms)`` on each batch (nothing when 0). Each dataset is
    built once and iterated on each call, so "cache" reports its first, uncached epoch as the
    first call and its cached epochs as the median. The variants run in turns, so a change in the
    machine's load hits them alike.
    """
    for v in variants:
        check_variant(v)
    step = Work(step_ms) if step_ms else None
    datasets = {v: pipeline(shards, v, latency=latency, batch_size=batch_size, threads=threads)
                for v in variants}
    return bench.compare({v: (lambda ds=ds: consume(ds, step=step)) for v, ds in datasets.items()},
                         baseline=variants[0], repeats=repeats, number=1, in_turns=True,
                         title=f"one epoch of {shards.n_records} records, batch {batch_size}, "
                               f"{step_ms:g} ms step",
                         params={"latency": latency, "batch_size": batch_size, "threads": threads,
                                 "step_ms": step_ms})
