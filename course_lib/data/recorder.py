"""A log of which thread opened, read, decoded, waited and computed when, and its timeline."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from course_lib import plotting


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

    def durations(self, stage: str) -> list[float]:
        """How long each span of ``stage`` lasted (s), in the order they began."""
        if stage not in self.STAGES:
            raise ValueError(f"unknown stage {stage!r}; a recorder logs: {', '.join(self.STAGES)}")
        return [e.end - e.start for e in self.events if e.stage == stage]

    def summary(self) -> dict:
        """Wall time, threads used, and how long the consumer waited for input vs worked."""
        events = self.events
        if not events:
            return {"elements": 0, "wall_s": 0.0, "threads": 0, "wait_s": 0.0, "step_s": 0.0}
        wait = sum(self.durations("wait"))
        step = sum(self.durations("step"))
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
