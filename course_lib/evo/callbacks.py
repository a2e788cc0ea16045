"""Callbacks run between compiled chunks of generations: progress, history, early stop, checkpoints.

``evolve`` compiles many generations into one call and hands control back to Python
only between chunks; a callback sees the run (``course_lib.evo.engine.Run``) there.
A callback with ``every = k`` makes chunks end at multiples of k generations.
EarlyStopping is also compiled into the loop, so a run stops at the exact generation.
"""

from __future__ import annotations

import os
import time

import numpy as np

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
        self.bar = None

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
    """Stop when the best fitness reaches ``target`` or has not improved for ``patience`` generations.

    "Reaches" follows the fitness's direction (>= target when maximised, <= when
    minimised). Checked inside the compiled loop after every generation.
    """

    def __init__(self, target: float | None = None, patience: int | None = None):
        if target is None and patience is None:
            raise ValueError("EarlyStopping needs target= (stop once the best fitness reaches it) "
                             "and/or patience= (stop after that many generations without improvement)")
        self.target = None if target is None else float(target)
        self.patience = None if patience is None else whole("patience", patience, 1, "EarlyStopping")
        self.stopped_generation: int | None = None

    def on_chunk_end(self, run):
        # stopped_early: this callback's target or patience stopped the run (not another callback's stop)
        if run.stopped_early and self.stopped_generation is None:
            self.stopped_generation = run.generation


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
