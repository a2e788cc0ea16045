"""Checkers for lecture 12, compiling the whole evolution: chunks, checkpoints, resuming."""

from __future__ import annotations

import types
from unittest import mock

import numpy as np

from course_lib import bench, evo
from course_lib.checks import exercise, method


def _whole(value, name: str) -> None:
    assert isinstance(value, (int, np.integer)) and not isinstance(value, bool), \
        f"{name} should be a whole number, got {type(value).__name__}"


@exercise("12", 1, "pick a chunk size",
          "Lecture 12: evolve runs `chunk` generations per compiled call, and callbacks run between calls.",
          "The callback runs after every chunk, and once more at the end of the run if the last chunk is "
          "shorter: for a candidate CHUNK, list the generations at which its chunks end.")
def pick_chunk(reports, CHUNK):
    assert isinstance(reports, evo.callbacks.Callback), "Reports should subclass evo.callbacks.Callback"
    fresh = type(reports)()
    fresh.on_chunk_end(types.SimpleNamespace(generation=7))
    assert getattr(fresh, "generations", None) == [7], \
        "a new Reports() should start with an empty list and append run.generation at each chunk end"
    _whole(CHUNK, "CHUNK")
    assert reports.generations == [50, 100, 150, 200], \
        f"reports came after generations {reports.generations}; want [50, 100, 150, 200]"


@exercise("12", 2, "resume an interrupted run",
          "model.evolve has an argument that continues from a checkpoint file.",
          "When resuming, the population comes from the checkpoint, and generations counts from the original "
          "start, not from the checkpoint.")
def resume(resumed, model, population, generations):
    assert isinstance(resumed, evo.Result), "resumed should be what model.evolve returns"
    assert resumed.generations == generations, \
        f"the resumed run ended at generation {resumed.generations}, not {generations}"
    whole = model.evolve(population, generations=generations)
    assert np.array_equal(resumed.population, whole.population) and resumed.history == whole.history, \
        "the resumed run differs from the uninterrupted one: resume from the checkpoint, not from a population"


@exercise("12", 3, "predict the lost work",
          "Checkpoint(path, every=...) saves after a chunk whose last generation is a multiple of every; "
          "callbacks run in the order they are listed.",
          "Write down the generations at which this run's chunks end, and at each one which callbacks got to "
          "run; the resumed run restarts from whatever the file held.")
def lost_work(last_checkpoint, recomputed, saved_generation, crashed_at):
    _whole(last_checkpoint, "last_checkpoint")
    _whole(recomputed, "recomputed")
    assert last_checkpoint == saved_generation, \
        f"last_checkpoint is {last_checkpoint}: the crash came before the Checkpoint callback of that chunk ran?"
    assert recomputed == crashed_at - saved_generation, \
        f"recomputed is {recomputed}: the resumed run starts again from the last checkpoint up to the crash"


@exercise("12", 4, "what a return to Python costs",
          "evolve's chunk argument sets how many generations run per compiled call; bench.compare times "
          "zero-argument functions.",
          "A variant is a lambda around one evolve call that returns its Result; the Comparison that "
          "bench.compare returns answers how many times faster one variant ran than the baseline.")
def chunk_cost(variants, chunking, speedup, model, population, generations):
    names = ["chunk=1", f"chunk={generations}"]
    method.variants_named(variants, names)
    expected = model.evolve(population, generations=generations)
    for name, chunk in zip(names, (1, generations)):
        with mock.patch.object(model, "evolve", wraps=model.evolve) as spy:
            result = method.value_of(variants, name)
        assert spy.call_count == 1, \
            f"the {name!r} variant should call model.evolve once, it called it {spy.call_count} times"
        assert spy.call_args.kwargs.get("chunk") == chunk, \
            f"the {name!r} variant calls model.evolve with chunk={spy.call_args.kwargs.get('chunk', 64)}"
        assert isinstance(result, evo.Result) and result.generations == generations, \
            f"the {name!r} variant should return the Result of {generations} generations"
        assert np.array_equal(result.population, expected.population), \
            f"the {name!r} variant should evolve population (the chunk size does not change the result)"
    method.comparison(chunking, names, names[0], repeats=bench.MIN_ROUNDS)
    method.close(speedup, chunking.speedup(names[1]), f"speedup ({names[1]} over chunk=1, from chunking)")
