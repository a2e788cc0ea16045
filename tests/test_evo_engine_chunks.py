"""engine.default_chunk: a run nobody watches is one compiled call, and no generation count retraces."""

from course_lib import evo
from course_lib.evo import engine
from course_lib.lessons import evolution as benchmarks


def test_unwatched_runs_are_one_call_and_share_one_program():
    model = benchmarks.onemax_model(32, "graph")
    pop = evo.population.random_integers((16, 32), 0, 2, seed=0)
    calls = []

    class Every(evo.callbacks.Callback):
        every = 1000

        def on_chunk_end(self, run):
            calls.append(run.generation)

    model.evolve(pop, generations=100, callbacks=[Every()])
    traces = model.trace_count
    model.evolve(pop, generations=300, callbacks=[Every(), evo.callbacks.EarlyStopping(patience=1000)])
    assert calls == [100, 300] and model.trace_count == traces


def test_a_callback_without_every_sees_chunks_of_the_watched_size():
    seen = []

    class Watch(evo.callbacks.Callback):
        def on_chunk_end(self, run):
            seen.append(run.generation)

    model = benchmarks.onemax_model(32, "graph")
    model.evolve(evo.population.random_integers((16, 32), 0, 2, seed=0), generations=150, callbacks=[Watch()])
    w = engine.WATCHED_CHUNK
    assert seen == [w, 2 * w, 150]
