"""tf.data pipelines whose costs are known, so that every speedup can be explained.

The data are real TFRecord shards that this module writes to a temporary folder.
Reading them is slowed down by a simulated storage and decoding latency
(``Latency``: per shard opened, per record read, per call of the map function),
the way a network file system or an image decoder would slow a real pipeline.
The latency is a sleep on the tf.data thread that does the work, so it costs time
but no CPU: on a 2-core machine it shows what overlap and parallelism can hide.

``pipeline(shards, variant)`` builds the same input pipeline at each step of the
usual optimisation path (``VARIANTS``), and every variant yields the same elements.
tf.data's own rewrites that would blur the steps (fusing map and batch into one
asynchronous op, injecting a final prefetch) are switched off, so each variant does
exactly what its code says. ``Work`` is a consumer step that computes for a known time.
A ``Recorder`` passed to it logs each open, read, map, wait and training step with
its thread and time, which ``Recorder.plot`` draws as a timeline.
"""

from __future__ import annotations

import html
import os
import shutil
import tempfile
import threading
import time
import weakref
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import tensorflow as tf

from course_lib import bench, plotting

AUTOTUNE = tf.data.AUTOTUNE

# Each step adds one change to the one before it, except "cache" and "vectorised":
# both start from "interleave" and are alternatives (once the map's output is cached
# there is no map call left to vectorise).
VARIANTS = ("naive", "prefetch", "parallel map", "interleave", "cache", "vectorised")

_DESCRIPTIONS = {
    "naive": "read the shards one after another, map each record, batch",
    "prefetch": "+ prefetch: the pipeline runs ahead of the consumer on its own thread",
    "parallel map": "+ map(num_parallel_calls=AUTOTUNE): several records decoded at once",
    "interleave": "+ interleave(num_parallel_calls=AUTOTUNE): all shards opened and read at once",
    "cache": "interleave + cache() after the map: later epochs come from memory",
    "vectorised": "interleave, but batch then map: one decode call per batch, not per record",
}


def describe(variant: str) -> str:
    """One line saying what ``variant`` changes."""
    _check_variant(variant)
    return _DESCRIPTIONS[variant]


def _check_variant(variant: str) -> None:
    if variant not in _DESCRIPTIONS:
        raise ValueError(f"unknown pipeline variant {variant!r}; choose one of: {', '.join(VARIANTS)}")


# -- the data: TFRecord shards in a temporary folder ---------------------------------------------

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


# -- the instrumented record ------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    """One span of work: what (``stage``), for which elements or shard, on which thread, when (s)."""

    stage: str
    thread: int
    start: float
    end: float
    ids: tuple = ()
    source: str = ""


class Recorder:
    """A thread-safe log of what a pipeline and its consumer did, and when.

    tf.data calls the pipeline's functions on its own threads; each logs an ``Event``
    with the thread it ran on. The consumer (``consume``) logs its waits for the next
    batch and its training steps on the thread that iterates. Times are seconds since
    ``start()`` (or creation).
    """

    STAGES = ("open", "read", "map", "wait", "step")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.start()

    def start(self) -> None:
        """Forget earlier events; times count from now and the calling thread is the consumer."""
        with self._lock:
            self._events: list[Event] = []
            self._t0 = time.perf_counter()
            self.consumer = threading.get_ident()

    @contextmanager
    def span(self, stage: str, ids: Iterable[int] = (), source: str = ""):
        begin = time.perf_counter()
        try:
            yield
        finally:
            end = time.perf_counter()
            event = Event(stage, threading.get_ident(), begin - self._t0, end - self._t0,
                          tuple(int(i) for i in np.ravel(ids)), source)
            with self._lock:
                self._events.append(event)

    @property
    def events(self) -> list[Event]:
        with self._lock:
            return sorted(self._events, key=lambda e: e.start)

    def lanes(self) -> dict[int, str]:
        """Thread id -> readable lane name: the consumer, then tf.data threads in order of first use."""
        names = {self.consumer: "consumer"}
        for e in self.events:
            if e.thread not in names:
                names[e.thread] = f"tf.data thread {len(names)}"
        return names

    def produced(self) -> dict[int, float]:
        """Element id -> when its map finished (the element was ready)."""
        return {i: e.end for e in self.events if e.stage == "map" for i in e.ids}

    def consumed(self) -> dict[int, float]:
        """Element id -> when the consumer's step on it began."""
        return {i: e.start for e in self.events if e.stage == "step" for i in e.ids}

    def concurrency(self, stage: str) -> int:
        """The most ``stage`` spans that were in progress at the same moment."""
        edges = sorted((t, step) for e in self.events if e.stage == stage for t, step in ((e.start, 1), (e.end, -1)))
        most = now = 0
        for _, step in edges:
            now += step
            most = max(most, now)
        return most

    PRODUCTION = ("open", "read", "map")

    def overlap(self) -> dict:
        """How much of the pipeline's work ran while the consumer was busy with a step.

        ``production_s``: time during which at least one open, read or map was in progress;
        ``step_s``: time the consumer spent in steps; ``hidden_s``: the time both were true at once.
        """
        production = _union([(e.start, e.end) for e in self.events if e.stage in self.PRODUCTION])
        steps = _union([(e.start, e.end) for e in self.events if e.stage == "step"])
        hidden, i, j = 0.0, 0, 0
        while i < len(production) and j < len(steps):  # both lists are sorted and disjoint
            hidden += max(0.0, min(production[i][1], steps[j][1]) - max(production[i][0], steps[j][0]))
            if production[i][1] < steps[j][1]:
                i += 1
            else:
                j += 1
        return {"production_s": sum(b - a for a, b in production), "step_s": sum(b - a for a, b in steps),
                "hidden_s": hidden}

    def summary(self) -> dict:
        """Wall time, threads used, and how long the consumer waited for input vs worked."""
        events = self.events
        if not events:
            return {"elements": 0, "wall_s": 0.0, "threads": 0, "wait_s": 0.0, "step_s": 0.0}
        wait = sum(e.end - e.start for e in events if e.stage == "wait")
        step = sum(e.end - e.start for e in events if e.stage == "step")
        return {
            "elements": len(self.consumed()),
            "wall_s": max(e.end for e in events),
            "threads": len({e.thread for e in events}),
            "wait_s": wait,
            "step_s": step,
        }

    def plot(self, ax=None, *, title: str = ""):
        """The timeline: one lane per thread, one colour per stage (``plotting.timeline``)."""
        lanes = self.lanes()
        spans = [{"lane": lanes[e.thread], "label": e.stage, "start": e.start, "end": e.end} for e in self.events]
        if not spans:
            raise ValueError("nothing recorded yet: pass this Recorder to pipeline() and consume()")
        ax = plotting.timeline(spans, ax=ax, lanes=list(lanes.values()), labels=self.STAGES)  # same colours always
        if title:
            ax.set_title(title)
        return ax


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping ``(start, end)`` spans merged: sorted, disjoint spans covering the same time."""
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def hidden_text(name: str, recorder: Recorder) -> str:
    """One sentence, read from a recorded run: how much of the pipeline's work the consumer's steps hid."""
    o = recorder.overlap()
    if o["production_s"] <= 0:
        return f"{name}: the pipeline did no recorded work"
    share = o["hidden_s"] / o["production_s"]
    return (f"{name}: {o['hidden_s'] * 1e3:.0f} of the {o['production_s'] * 1e3:.0f} ms in which the pipeline "
            f"was working ran while the consumer computed a step ({share:.0%} hidden); the consumer waited "
            f"{recorder.summary()['wait_s'] * 1e3:.0f} ms for batches")


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
        per_iteration = bench.measure(lambda: run(tf.constant(probe)), repeats=3).median_s / probe
        self.ms, self.size = float(ms), size
        self.iterations = max(1, round(ms / 1e3 / per_iteration))
        self._run, self._n = run, tf.constant(self.iterations)

    def __call__(self, batch: Any = None):
        return self._run(self._n)

    def __repr__(self) -> str:
        return f"Work({self.ms:g} ms: {self.iterations} products of {self.size}x{self.size} matrices)"


# -- simulated latency ----------------------------------------------------------------------------

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


_SPEC = {"id": tf.io.FixedLenFeature([], tf.int64), "y": tf.io.FixedLenFeature([], tf.int64)}


def _spec(features: int) -> dict:
    return dict(_SPEC, x=tf.io.FixedLenFeature([features], tf.float32))


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
    spec = _spec(shards.features)

    def wait(ids):
        _sleep(recorder, "map", latency.map_s, ids)

    def decode(records):
        element = tf.io.parse_example(records, spec)
        if recorder is not None or latency.map_s:
            element = _after(element, wait, element["id"])
        return transform(element)

    return decode


def pipeline(shards: Shards, variant: str = "naive", *, latency: Latency = Latency(), batch_size: int = 16,
             recorder: Recorder | None = None, cycle_length: int | None = None,
             threads: int | None = None) -> tf.data.Dataset:
    """The input pipeline at one step of the optimisation path (see ``VARIANTS``).

    Yields batches ``{"id", "x", "y"}``. ``cycle_length`` (interleaving variants) is how
    many shards are read at once; all of them by default, since waiting, not CPU, is
    what parallel reads hide. ``threads`` gives the pipeline a private thread pool of
    that size: by default tf.data runs its functions on a pool with one thread per core,
    which caps how many waits (reads, remote calls) can overlap however large
    ``num_parallel_calls`` is.
    """
    _check_variant(variant)
    if not isinstance(shards, Shards):
        raise TypeError(f"shards must come from write_shards(), got {type(shards).__name__}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be None (tf.data's default pool) or a whole number >= 1, got {threads!r}")
    files = tf.data.Dataset.list_files(shards.pattern, shuffle=False)

    def open_shard(path):
        return read_shard(path, latency, recorder)

    decode = decoder(shards, latency, recorder)
    if variant in ("naive", "prefetch", "parallel map"):
        records = files.flat_map(open_shard)
    else:
        records = files.interleave(open_shard, cycle_length=cycle_length or len(shards.paths),
                                   num_parallel_calls=AUTOTUNE)
    parallel = None if variant in ("naive", "prefetch") else AUTOTUNE
    if variant == "vectorised":
        ds = records.batch(batch_size).map(decode, num_parallel_calls=parallel)
    else:
        ds = records.map(decode, num_parallel_calls=parallel)
        if variant == "cache":
            ds = ds.cache()
        ds = ds.batch(batch_size)
    if variant != "naive":
        ds = ds.prefetch(AUTOTUNE)
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
            step: Callable[[Any], Any] | None = None, step_s: float = 0.0) -> int:
    """Iterate over a pipeline once, as a training loop would; return how many records it saw.

    Each batch is handed to ``step`` (a training step, say) or, without one, the consumer
    sleeps ``step_s`` to stand in for it. With a ``recorder``, the time spent waiting for
    each batch and the time spent on it are logged as "wait" and "step" spans.
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
    return count


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


def plot_runs(runs: dict[str, Recorder]):
    """Several recorded runs one above the other, on one time axis, so their lengths compare."""
    import matplotlib.pyplot as plt

    if not runs:
        raise ValueError("plot_runs needs at least one recorded run: {'naive': record_run(...)}")
    lanes = [len(r.lanes()) for r in runs.values()]
    fig, axes = plt.subplots(len(runs), 1, sharex=True, figsize=(8, 1.0 + 0.28 * sum(lanes)),
                             height_ratios=lanes, layout="constrained")
    axes = np.atleast_1d(axes)
    for ax, (name, recorder) in zip(axes, runs.items()):
        recorder.plot(ax=ax, title=name)
        if ax is not axes[-1]:
            ax.set_xlabel("")
        if ax is axes[0]:
            ax.get_legend().set(loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: it hides no spans
        else:
            ax.get_legend().remove()
    return axes


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
    first call and its cached epochs as the median.
    """
    for v in variants:
        _check_variant(v)
    step = Work(step_ms) if step_ms else None
    datasets = {v: pipeline(shards, v, latency=latency, batch_size=batch_size, threads=threads)
                for v in variants}
    return bench.compare({v: (lambda ds=ds: consume(ds, step=step)) for v, ds in datasets.items()},
                         baseline=variants[0], repeats=repeats, number=1,
                         title=f"one epoch of {shards.n_records} records, batch {batch_size}, "
                               f"{step_ms:g} ms step",
                         params={"latency": latency, "batch_size": batch_size, "threads": threads,
                                 "step_ms": step_ms})


def pipeline_widget(shards: Shards, variants: Sequence[str] = VARIANTS, *, latency: Latency = Latency(),
                    batch_size: int = 16, threads: int | None = None, step_ms: float = 0.0, repeats: int = 3):
    """A ``SpeedupWidget`` comparing the variants; its knobs are the read and map latencies
    and the consumer's step (ms).

    The latency knobs offer half, the same and twice ``latency``; the step knob offers no
    step, ``step_ms`` and twice that (the consumer computes a ``Work`` of that length per batch).
    """
    from course_lib.widgets import SpeedupWidget

    for v in variants:
        _check_variant(v)
    if not isinstance(step_ms, (int, float)) or step_ms < 0:
        raise ValueError(f"step_ms must be a number of milliseconds >= 0, got {step_ms!r}")
    works: dict[float, Work] = {}  # calibrated once per length, shared by the variants

    def builder(variant):
        def build(record_ms: float, map_ms: float, step_ms: float):
            lat = Latency(open_s=latency.open_s, record_s=record_ms / 1e3, map_s=map_ms / 1e3)
            ds = pipeline(shards, variant, latency=lat, batch_size=batch_size, threads=threads)
            if step_ms and step_ms not in works:
                works[step_ms] = Work(step_ms)
            step = works.get(step_ms)
            return lambda: consume(ds, step=step)
        return build

    def choices(ms, factors=(0.5, 1, 2)):
        return sorted({round(ms * f, 3) for f in factors})

    sizes = {"record_ms": choices(latency.record_s * 1e3), "map_ms": choices(latency.map_s * 1e3),
             "step_ms": choices(step_ms, (0, 1, 2))}
    return SpeedupWidget({v: builder(v) for v in variants}, sizes=sizes,
                         defaults={"record_ms": round(latency.record_s * 1e3, 3),
                                   "map_ms": round(latency.map_s * 1e3, 3), "step_ms": round(step_ms, 3)},
                         baseline=variants[0], repeats=repeats,
                         title=f"tf.data: one epoch of {shards.n_records} records")


@bench.command(
    "tfdata", repeats=7, quick={"shards": 2, "records": 4, "open_ms": 1.0, "step_ms": 4.0, "repeats": 2},
    options={
        "--shards": dict(type=int, default=4, help="TFRecord files"),
        "--records": dict(type=int, default=32, help="records per file"),
        "--batch": dict(type=int, default=16, help="batch size"),
        "--open-ms": dict(type=float, default=10.0, help="simulated latency of opening a file"),
        "--record-ms": dict(type=float, default=1.0, help="simulated latency of reading a record"),
        "--map-ms": dict(type=float, default=1.0, help="simulated latency of one decode call"),
        "--step-ms": dict(type=float, default=40.0, help="the consumer's computing step per batch (0: none)"),
        "--threads": dict(type=int, nargs="+", default=[0, 16],
                          help="private thread pool sizes to compare (0: tf.data's default pool)"),
    })
def bench_pipelines(args) -> list[bench.Comparison]:
    """``course bench tfdata``: one epoch of each pipeline variant against the naive one."""
    latency = Latency(args.open_ms / 1e3, args.record_ms / 1e3, args.map_ms / 1e3)
    records = []
    with write_shards(args.shards, args.records) as shards:
        for threads in args.threads:
            result = compare_pipelines(shards, latency=latency, batch_size=args.batch, threads=threads or None,
                                       step_ms=args.step_ms, repeats=args.repeats)
            result.title += f", {threads or 'default'} threads"
            print(result, end="\n\n")
            records.append(result)
    return records


# -- shuffling -----------------------------------------------------------------------------------

def shuffle_order(n: int, buffer_size: int, seed: int = 0) -> np.ndarray:
    """The order in which ``range(n).shuffle(buffer_size, seed)`` hands out its elements."""
    if not isinstance(buffer_size, (int, np.integer)) or buffer_size < 1:
        raise ValueError(f"buffer_size must be a whole number >= 1, got {buffer_size!r}")
    ds = tf.data.Dataset.range(n).shuffle(buffer_size, seed=seed)
    return np.fromiter((int(i) for i in ds), dtype=np.int64, count=n)


def plot_shuffle(n: int = 200, buffer_sizes: Sequence[int] = (1, 10, 50, 200), seed: int = 0):
    """Output position against input index, one panel per buffer size.

    A buffer of b elements can hand out element i no earlier than position i - (b - 1),
    so small buffers stay close to the diagonal: order is only locally mixed.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(buffer_sizes), figsize=(2.6 * len(buffer_sizes), 2.6),
                             sharey=True, layout="constrained")
    for ax, b in zip(np.atleast_1d(axes), buffer_sizes):
        order = shuffle_order(n, b, seed)
        ax.scatter(np.arange(n), order, s=4)
        ax.set_title(f"buffer_size={b}")
        ax.set_xlabel("output position")
    np.atleast_1d(axes)[0].set_ylabel("input index")
    return axes


# -- an end-to-end input pipeline feeding a model ----------------------------------------------------

def make_model(features: int, classes: int, *, hidden: int = 256, depth: int = 2, seed: int = 0):
    """A small MLP classifier, compiled; ``hidden`` and ``depth`` set how much compute a step costs."""
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input((features,))]
    layers += [keras.layers.Dense(hidden, activation="relu") for _ in range(depth)]
    layers += [keras.layers.Dense(classes)]
    model = keras.Sequential(layers)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


EPOCH_PARTS = ("before the first step", "in steps", "between steps", "after the last step")


def _epoch_clock():
    """A Keras callback that timestamps each training step, so one ``fit`` epoch can be split into
    ``EPOCH_PARTS`` that add up to the whole call (``start()`` marks the call's beginning)."""
    import keras

    class EpochClock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epochs: list[dict] = []

        def start(self):
            self._t0, self._steps = time.perf_counter(), []

        def on_train_batch_begin(self, batch, logs=None):
            self._steps.append([time.perf_counter(), None])

        def on_train_batch_end(self, batch, logs=None):
            self._steps[-1][1] = time.perf_counter()

        def stop(self):
            end, steps = time.perf_counter(), self._steps
            self.epochs.append({
                "before the first step": steps[0][0] - self._t0,
                "in steps": sum(b - a for a, b in steps),
                "between steps": sum(steps[i + 1][0] - steps[i][1] for i in range(len(steps) - 1)),
                "after the last step": end - steps[-1][1],
                "steps": len(steps)})

    return EpochClock()


@dataclass
class Diagnosis:
    """Where an epoch's time goes: input alone, compute alone, and both in one training run.

    ``epochs`` holds, for "compute only" and "training", the timed epoch closest to the median
    split into ``EPOCH_PARTS`` (they add up to the epoch), which is where time that neither the
    input nor the compute explains shows up.
    """

    comparison: bench.Comparison
    epochs: dict = field(default_factory=dict)

    @property
    def input_s(self) -> float:
        return self.comparison["input only"].median_s

    @property
    def compute_s(self) -> float:
        return self.comparison["compute only"].median_s

    @property
    def training_s(self) -> float:
        return self.comparison["training"].median_s

    @property
    def unexplained_s(self) -> float:
        """Training time beyond input plus compute: positive when the halves did not overlap and
        something else cost time too, negative when overlap hid part of the shorter half."""
        return self.training_s - self.input_s - self.compute_s

    @property
    def overlap(self) -> float:
        """The share of the shorter half that training hid behind the longer one, not clipped:
        1.0 when training took only as long as the longer half, 0.0 when it took their sum, and
        below 0 when it took longer than the sum."""
        return -self.unexplained_s / min(self.input_s, self.compute_s)

    @property
    def bound(self) -> str:
        """What the epoch spent most time on: "input", "compute", or "neither" when the time
        beyond input plus compute is larger than both."""
        parts = {"input": self.input_s, "compute": self.compute_s, "neither": self.unexplained_s}
        return max(parts, key=parts.get)

    def verdicts(self) -> bench.Verdicts:
        """The diagnosis as sentences read from this measurement (Markdown in a notebook)."""
        ms = lambda s: f"{s * 1e3:.0f} ms"  # noqa: E731
        out = [f"one training epoch took {ms(self.training_s)}: the input alone {ms(self.input_s)}, "
               f"the compute alone {ms(self.compute_s)}"]
        if self.unexplained_s >= 0:
            out.append(f"training took {ms(self.unexplained_s)} more than input and compute together: nothing "
                       f"overlapped (overlap {self.overlap:.0%}), and {ms(self.unexplained_s)} is explained by "
                       f"neither half alone")
        elif self.training_s > max(self.input_s, self.compute_s):
            out.append(f"training took {ms(-self.unexplained_s)} less than input and compute together: "
                       f"{self.overlap:.0%} of the shorter half ran hidden behind the longer one")
        else:
            out.append("training took no longer than the longer half alone: the shorter half was hidden "
                       "completely")
        out.append({"input": "the input is the larger part: a faster model would help little; fix the pipeline first",
                    "compute": "the compute is the larger part: the model is the bigger lever",
                    "neither": "the time beyond input plus compute is larger than either: look at the "
                               "breakdown below before optimising either half"}[self.bound])
        train, alone = self.epochs.get("training"), self.epochs.get("compute only")
        if train and alone:
            extra = {p: train[p] - alone[p] for p in EPOCH_PARTS}
            where = max(extra, key=extra.get)
            parts = ", ".join(f"{p} {ms(train[p])} (in memory: {ms(alone[p])})" for p in EPOCH_PARTS)
            out.append(f"the training epoch, part by part: {parts}")
            if extra[where] > 0:
                out.append(f"against training on in-memory data, most of the extra time ({ms(extra[where])}) "
                           f"is {where}")
            else:
                out.append("no part of the training epoch took longer than on in-memory data")
        return bench.Verdicts(out)

    def table(self) -> str:
        """The epoch parts of "compute only" and "training" as an HTML table (ms)."""
        rows = [{"part of the epoch": p, **{f"{k} (ms)": e[p] * 1e3 for k, e in self.epochs.items()}}
                for p in EPOCH_PARTS]
        rows.append({"part of the epoch": "whole epoch",
                     **{f"{k} (ms)": sum(e[p] for p in EPOCH_PARTS) * 1e3 for k, e in self.epochs.items()}})
        return bench.table(rows)

    def __repr__(self) -> str:
        return (f"{self.bound}: input {self.input_s * 1e3:.0f} ms, compute {self.compute_s * 1e3:.0f} ms, "
                f"training {self.training_s * 1e3:.0f} ms per epoch ({self.unexplained_s * 1e3:+.0f} ms "
                f"against input + compute)")

    def _repr_html_(self) -> str:
        return f"<p><b>{html.escape(repr(self))}</b></p>" + self.comparison._repr_html_() + \
            (self.table() if self.epochs else "")


def diagnose(model, dataset: tf.data.Dataset, shards: Shards, *, batch_size: int = 16,
             repeats: int = 3) -> Diagnosis:
    """Is training on ``dataset`` input-bound or compute-bound, and what else costs time?

    Times one epoch three ways in the same run: iterating the input pipeline alone,
    training on the same batches already in memory (compute alone), and training on
    the pipeline; each ``fit`` epoch is also split into ``EPOCH_PARTS``. ``dataset``
    yields the dict batches of ``pipeline``.
    """
    ready = transform({"id": shards.ids, "x": shards.x, "y": shards.y})
    in_memory = tf.data.Dataset.from_tensor_slices((ready["x"], ready["y"])).batch(batch_size).cache()
    train = xy(dataset)
    clocks = {"compute only": _epoch_clock(), "training": _epoch_clock()}

    def fit(name, ds):
        def run():
            clock = clocks[name]
            clock.start()
            loss = model.fit(ds, epochs=1, verbose=0, shuffle=False, callbacks=[clock]).history["loss"][-1]
            clock.stop()
            return loss
        return run

    variants = {"input only": lambda: consume(dataset), "compute only": fit("compute only", in_memory),
                "training": fit("training", train)}
    # The first, separately reported epoch is the warm-up: it traces the training step.
    comparison = bench.compare(variants, baseline="training", repeats=repeats, warmup=0, number=1,
                               title=f"one epoch, batch {batch_size}")
    epochs = {}
    for name, clock in clocks.items():
        timed = clock.epochs[1:] or clock.epochs  # the first call is reported apart
        median = comparison[name].median_s
        epochs[name] = min(timed, key=lambda e: abs(sum(e[p] for p in EPOCH_PARTS) - median))
    return Diagnosis(comparison, epochs)

