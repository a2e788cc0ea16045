"""tf.data pipelines whose costs are known, so that every speedup can be explained.

The data are real TFRecord shards that this module writes to a temporary folder.
Reading them is slowed down by a simulated storage and decoding latency
(``Latency``: per shard opened, per record read, per call of the map function),
the way a network file system or an image decoder would slow a real pipeline.
The latency is a sleep on the tf.data thread that does the work, so it costs time
but no CPU: on a 2-core machine it shows what overlap and parallelism can hide.

``pipeline(shards, variant)`` builds the same input pipeline at each step of the
usual optimisation path (``VARIANTS``), and every variant yields the same elements.
A ``Recorder`` passed to it logs each open, read, map, wait and training step with
its thread and time, which ``Recorder.plot`` draws as a timeline.
"""

from __future__ import annotations

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
    garbage-collected.
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
    if threads is not None:
        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        ds = ds.with_options(options)
    return ds


def transformations(dataset: tf.data.Dataset) -> list[str]:
    """The dataset operations of a pipeline, source first, read from its serialized graph.

    Shows what a chain of Python calls built (``ParallelMapDatasetV2`` for a parallel map,
    ``PrefetchDataset`` ...); functions inside map and interleave are left out.
    """
    graph = tf.compat.v1.GraphDef()
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset._variant_tensor,
                                             external_state_policy=1)  # ignore py_function state
    graph.ParseFromString(serialized.numpy())
    return [node.op for node in graph.node if "Dataset" in node.op]


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
               threads: int | None = None, step_s: float = 0.0, epochs: int = 1) -> Recorder:
    """Run ``variant`` for ``epochs`` with a recorder and return it (``.plot()`` draws the timeline).

    The consumer spends ``step_s`` on each batch, standing in for a training step.
    """
    recorder = Recorder()
    ds = pipeline(shards, variant, latency=latency, batch_size=batch_size, recorder=recorder, threads=threads)
    recorder.start()
    for _ in range(epochs):
        consume(ds, recorder=recorder, step_s=step_s)
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
                      batch_size: int = 16, threads: int | None = None, repeats: int = 3) -> bench.Comparison:
    """Time one epoch of each variant against the first (``bench.compare``).

    Each dataset is built once and iterated on each call, so "cache" reports its first,
    uncached epoch as the first call and its cached epochs as the median.
    """
    for v in variants:
        _check_variant(v)
    datasets = {v: pipeline(shards, v, latency=latency, batch_size=batch_size, threads=threads)
                for v in variants}
    return bench.compare({v: (lambda ds=ds: consume(ds)) for v, ds in datasets.items()},
                         baseline=variants[0], repeats=repeats, number=1,
                         title=f"one epoch of {shards.n_records} records, batch {batch_size}",
                         params={"latency": latency, "batch_size": batch_size, "threads": threads})


def pipeline_widget(shards: Shards, variants: Sequence[str] = VARIANTS, *, latency: Latency = Latency(),
                    batch_size: int = 16, threads: int | None = None, repeats: int = 3):
    """A ``SpeedupWidget`` comparing the variants; the read and map latencies (ms) are its knobs.

    Each knob offers half, the same and twice the latency of ``latency``.
    """
    from course_lib.widgets import SpeedupWidget

    for v in variants:
        _check_variant(v)

    def builder(variant):
        def build(record_ms: float, map_ms: float):
            lat = Latency(open_s=latency.open_s, record_s=record_ms / 1e3, map_s=map_ms / 1e3)
            ds = pipeline(shards, variant, latency=lat, batch_size=batch_size, threads=threads)
            return lambda: consume(ds)
        return build

    def choices(seconds):
        return [round(seconds * 1e3 * f, 3) for f in (0.5, 1, 2)]

    return SpeedupWidget({v: builder(v) for v in variants},
                         sizes={"record_ms": choices(latency.record_s), "map_ms": choices(latency.map_s)},
                         defaults={"record_ms": choices(latency.record_s)[1], "map_ms": choices(latency.map_s)[1]},
                         baseline=variants[0], repeats=repeats,
                         title=f"tf.data: one epoch of {shards.n_records} records")


def bench_pipelines(argv: list[str]) -> int:
    """``course bench tfdata``: one epoch of each pipeline variant against the naive one, printed and saved as JSON."""
    import argparse

    parser = argparse.ArgumentParser(prog="course bench tfdata", description=bench_pipelines.__doc__)
    parser.add_argument("--shards", type=int, default=4, help="TFRecord files")
    parser.add_argument("--records", type=int, default=32, help="records per file")
    parser.add_argument("--batch", type=int, default=16, help="batch size")
    parser.add_argument("--open-ms", type=float, default=10.0, help="simulated latency of opening a file")
    parser.add_argument("--record-ms", type=float, default=1.0, help="simulated latency of reading a record")
    parser.add_argument("--map-ms", type=float, default=1.0, help="simulated latency of one decode call")
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 16],
                        help="private thread pool sizes to compare (0: tf.data's default pool)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per variant")
    parser.add_argument("--json", default="build/bench/tfdata.json", help="where to write the results")
    args = parser.parse_args(argv)
    latency = Latency(args.open_ms / 1e3, args.record_ms / 1e3, args.map_ms / 1e3)
    records = []
    with write_shards(args.shards, args.records) as shards:
        for threads in args.threads:
            result = compare_pipelines(shards, latency=latency, batch_size=args.batch, threads=threads or None,
                                       repeats=args.repeats)
            result.title += f", {threads or 'default'} threads"
            print(result, end="\n\n")
            records.append(result)
    print(f"wrote {bench.save_report(records, args.json)}")
    return 0


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


@dataclass
class Diagnosis:
    """Where an epoch's time goes: input alone, compute alone, and both in one training run."""

    comparison: bench.Comparison

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
    def bound(self) -> str:
        """"input" when reading the data takes longer than the model's work on it, else "compute"."""
        return "input" if self.input_s > self.compute_s else "compute"

    @property
    def overlap(self) -> float:
        """1.0 when training takes only as long as its slower half (input and compute fully
        overlapped); 0.0 when it takes their sum (no overlap)."""
        slow, total = max(self.input_s, self.compute_s), self.input_s + self.compute_s
        return float(np.clip((total - self.training_s) / (total - slow), 0.0, 1.0)) if total > slow else 1.0

    def __repr__(self) -> str:
        return (f"{self.bound}-bound: input {self.input_s * 1e3:.0f} ms, compute {self.compute_s * 1e3:.0f} ms, "
                f"training {self.training_s * 1e3:.0f} ms per epoch (overlap {self.overlap:.0%})")

    def _repr_html_(self) -> str:
        return f"<p><b>{repr(self)}</b></p>" + self.comparison._repr_html_()


def diagnose(model, dataset: tf.data.Dataset, shards: Shards, *, batch_size: int = 16,
             repeats: int = 3) -> Diagnosis:
    """Is training on ``dataset`` input-bound or compute-bound?

    Times one epoch three ways in the same run: iterating the input pipeline alone,
    training on the same batches already in memory (compute alone), and training on
    the pipeline. ``dataset`` yields the dict batches of ``pipeline``.
    """
    ready = transform({"id": shards.ids, "x": shards.x, "y": shards.y})
    in_memory = tf.data.Dataset.from_tensor_slices((ready["x"], ready["y"])).batch(batch_size).cache()
    train = xy(dataset)
    variants = {
        "input only": lambda: consume(dataset),
        "compute only": lambda: model.fit(in_memory, epochs=1, verbose=0, shuffle=False).history["loss"][-1],
        "training": lambda: model.fit(train, epochs=1, verbose=0, shuffle=False).history["loss"][-1],
    }
    # The first, separately reported epoch is the warm-up: it traces the training step.
    return Diagnosis(bench.compare(variants, baseline="training", repeats=repeats, warmup=0, number=1,
                                   title=f"one epoch, batch {batch_size}"))
