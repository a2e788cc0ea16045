"""The live widget comparing the pipeline variants."""

from __future__ import annotations

from typing import Sequence

from course_lib.data.latency import Latency
from course_lib.data.pipelines import VARIANTS, Work, check_variant, consume, pipeline
from course_lib.data.shards import Shards


def pipeline_widget(shards: Shards, variants: Sequence[str] = VARIANTS, *, latency: Latency = Latency(),
                    batch_size: int = 16, threads: int | None = None, step_ms: float = 0.0,
                    work: Work | None = None, repeats: int = 3):
    """A ``SpeedupWidget`` comparing the variants; its knobs are the read and map latencies
    and the consumer's step (ms).

    The latency knobs offer half, the same and twice ``latency``; the step knob offers no
    step, ``step_ms`` and twice that (the consumer computes a ``Work`` of that length per batch).
    ``work`` is a calibrated step to use at ``step_ms`` (its ``ms`` by default), so the widget's
    steps are the ones timed elsewhere; without it one ``Work(step_ms)`` is calibrated here.
    The variants run in turns (``bench.compare`` always times in turns), so a change in the machine's load
    hits them alike.
    """
    from course_lib.speedup_widget import SpeedupWidget

    for v in variants:
        check_variant(v)
    if work is not None:
        if not isinstance(work, Work):
            raise TypeError(f"work must be a data.Work, got {type(work).__name__}")
        if step_ms and step_ms != work.ms:
            raise ValueError(f"step_ms={step_ms!r} but work computes for {work.ms:g} ms: pass one of them")
        step_ms = work.ms
    if not isinstance(step_ms, (int, float)) or step_ms < 0:
        raise ValueError(f"step_ms must be a number of milliseconds >= 0, got {step_ms!r}")
    base = work  # one calibrated step (made on first use when None); the other lengths are multiples of it

    def step_of(ms: float) -> Work | None:
        nonlocal base
        if not ms:
            return None
        if base is None:
            base = Work(step_ms or ms)
        return base.scaled(ms / base.ms)

    def builder(variant):
        def build(record_ms: float, map_ms: float, step_ms: float):
            lat = Latency(open_s=latency.open_s, record_s=record_ms / 1e3, map_s=map_ms / 1e3)
            ds = pipeline(shards, variant, latency=lat, batch_size=batch_size, threads=threads)
            step = step_of(step_ms)
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
