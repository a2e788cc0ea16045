"""Callbacks run between compiled chunks of generations: progress, history, early stop, checkpoints,
TensorBoard.

``evolve`` compiles many generations into one call and hands control back to Python
only between chunks; a callback sees the run (``course_lib.evo.engine.Run``) there, never inside
a generation. The hooks, in the order they are called:

- ``on_mode_chosen(mode, timings)``: with ``mode='auto'``, once, after the modes were timed and
  before the run starts (not called on resume, nor when the mode is fixed).
- ``on_evolve_begin(run)``: once, after the first population was scored (or the checkpoint
  restored), before any generation of this call. ``run.generation`` is 0 (or the checkpoint's),
  ``run.best_fitness`` the first population's best, ``run.history`` empty (or the checkpoint's).
- ``on_chunk_end(run)``: after each compiled call. ``run.generation`` counts the generations
  done; ``run.history`` has one (best, mean, std) entry per generation, all of them, the chunk's
  appended (entry i is generation i + 1); ``run.best_fitness`` is the best so far; ``run.snapshot()``
  is what a checkpoint holds; ``run.stopped_early`` says whether EarlyStopping ended it. Setting
  ``run.stop = True`` ends the run after this chunk. A chunk is ``chunk`` generations (default:
  64 when a callback without ``every`` watches, else up to 1024), cut at the multiples of every
  callback's ``every`` and where EarlyStopping stops it.
- ``on_evolve_end(run)``: once, after the last chunk (also when a callback stopped the run).

A callback with ``every = k`` makes chunks end at multiples of k generations.
EarlyStopping is also compiled into the loop, so a run stops at the exact generation.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from course_lib.evo.validation import whole


class Callback:
    """Base class: override the hooks you need."""

    every: int | None = None

    def on_mode_chosen(self, mode: str, timings: dict[str, float]) -> None:
        """With ``mode='auto'``, once, before the run: the mode chosen and each mode's seconds per generation."""

    def on_evolve_begin(self, run) -> None:
        pass

    def on_chunk_end(self, run) -> None:
        pass

    def on_evolve_end(self, run) -> None:
        pass


class Stopwatch(Callback):
    """Records (seconds since ``start``, best fitness so far) when the run begins and after each chunk,
    and stops the run once ``budget_s`` seconds have passed (None: never). ``clock`` is any function
    returning seconds (``time.perf_counter`` for wall time, ``time.process_time`` for this process's
    CPU time); ``start`` defaults to the clock's reading when the stopwatch is made, so work done
    before ``evolve`` (building, compiling) can be counted."""

    def __init__(self, budget_s: float | None = None, clock=time.perf_counter, start: float | None = None):
        if budget_s is not None and not budget_s > 0:
            raise ValueError(f"Stopwatch: budget_s must be a positive number of seconds or None, got {budget_s!r}")
        self.budget_s, self.clock = budget_s, clock
        self.start = clock() if start is None else start
        self.seconds: list[float] = []
        self.best: list[float] = []

    def on_evolve_begin(self, run):
        self.seconds.append(self.clock() - self.start)
        self.best.append(run.best_fitness)

    def on_chunk_end(self, run):
        self.on_evolve_begin(run)
        run.stop = run.stop or (self.budget_s is not None and self.seconds[-1] >= self.budget_s)


class ProgressBar(Callback):
    """A tqdm bar (a widget in Jupyter, text elsewhere) with the best fitness so far."""

    def __init__(self, **tqdm_options):
        self.options = {"desc": "evolve", "unit": "gen", **tqdm_options}
        self.bar: Any = None  # the tqdm bar, made when a run begins

    def on_evolve_begin(self, run):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=run.generations, initial=run.generation, **self.options)

    def on_chunk_end(self, run):
        self.bar.update(run.generation - self.bar.n)
        self.bar.set_postfix(best=f"{run.best_fitness:.6g}")

    def on_evolve_end(self, run):
        self.bar.close()


class History(Callback):
    """best/mean/std of the population's fitness per generation, updated after every chunk.

    ``evolve`` records history anyway (``result.history``, ``model.history``); this
    callback lets you watch it while the run goes on.
    """

    def __init__(self):
        self.history: dict[str, list[float]] = {}

    def on_chunk_end(self, run):
        self.history = {k: list(v) for k, v in run.history.items()}

    on_evolve_end = on_chunk_end


class EarlyStopping(Callback):
    """Stop when the best fitness reaches ``target``, has not improved for ``patience`` generations, or
    the next generation would pass ``max_evaluations`` fitness evaluations.

    "Reaches" follows the fitness's direction (>= target when maximised, <= when
    minimised). Target and patience are checked inside the compiled loop after every generation;
    the evaluation budget (the first population's evaluations, then each generation's children,
    counted from the start of this ``evolve`` call) sets where the run's last chunk ends.
    ``stopped_generation`` is the generation at which one of these stopped the run (None when the
    run went on to ``generations``, or another callback stopped it): the generation the run started
    from (0) when the budget does not cover one generation after the first population.
    """

    def __init__(self, target: float | None = None, patience: int | None = None,
                 max_evaluations: int | None = None):
        if target is None and patience is None and max_evaluations is None:
            raise ValueError("EarlyStopping needs target= (stop once the best fitness reaches it), "
                             "patience= (stop after that many generations without improvement) "
                             "and/or max_evaluations= (a budget of fitness evaluations)")
        self.target = None if target is None else float(target)
        self.patience = None if patience is None else whole("patience", patience, 1, "EarlyStopping")
        self.max_evaluations = (None if max_evaluations is None
                                else whole("max_evaluations", max_evaluations, 1, "EarlyStopping"))
        self.stopped_generation: int | None = None

    def on_chunk_end(self, run):
        # stopped_early: this callback's target, patience or budget stopped the run (not another callback's stop)
        if run.stopped_early and self.stopped_generation is None:
            self.stopped_generation = run.generation

    # a budget smaller than one generation stops a run before its first chunk: it ends with no chunk
    on_evolve_end = on_chunk_end


# what TensorBoard's scalar plugin writes with a value (tf.summary.scalar itself needs the tensorboard package)
SCALAR = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"),
                                     data_class=summary_pb2.DATA_CLASS_SCALAR).SerializeToString()


class TensorBoard(Callback):
    """Write the history to TensorBoard event files in ``logdir`` with ``tf.summary``: one scalar per
    statistic ("best", "mean", "std"; with several objectives the hypervolume, the share on the front
    and its std) at step = generation, written after each chunk for the generations it ran, and
    flushed then, so TensorBoard shows a running evolve. A resumed run goes on at the checkpoint's
    generation."""

    def __init__(self, logdir):
        self.logdir = os.fspath(logdir)
        self.writer: Any = None  # the summary writer, made when a run begins
        self._written = 0

    def on_evolve_begin(self, run):
        self.writer = tf.summary.create_file_writer(self.logdir)
        self._written = run.generation

    def on_chunk_end(self, run):
        with self.writer.as_default():
            for g in range(self._written, run.generation):
                for name, values in run.history.items():
                    tf.summary.write(name, tf.constant(values[g], tf.float32), step=g + 1, metadata=SCALAR)
        self.writer.flush()
        self._written = run.generation

    def on_evolve_end(self, run):
        self.writer.close()


class Checkpoint(Callback):
    """Save the run every ``every`` generations (and at the end) to ``path`` (an .npz file).

    ``evolve(generations=G, resume_from=path)`` continues from it and gives exactly the
    result of an uninterrupted run of G generations, under the same executor (one device, or
    the same number of replicas and distribution). Under MultiWorkerMirroredStrategy every
    worker runs the callbacks: give each worker its own path (e.g. with its task index).
    """

    def __init__(self, path, every: int):
        self.path = os.fspath(path)
        self.every = whole("every", every, 1, "Checkpoint")
        self._saved_at: int | None = None

    def on_chunk_end(self, run):
        if run.generation % self.every == 0:
            self._save(run)

    def on_evolve_end(self, run):
        if self._saved_at != run.generation:
            self._save(run)

    def _save(self, run):
        save_checkpoint(self.path, run.snapshot())
        self._saved_at = run.generation


def save_checkpoint(path: str, arrays: dict) -> None:
    """Write atomically: a crash mid-write leaves the previous checkpoint intact."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)


def load_checkpoint(path) -> dict:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no checkpoint at {path!r}; write one with "
                                "callbacks=[evo.callbacks.Checkpoint(path, every=N)]")
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}
