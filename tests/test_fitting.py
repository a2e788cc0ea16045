"""course_lib.fitting: the memory reader reads the child, callbacks fire per execution, peaks grow with the
batch, tf.recompute_grad changes memory and not the gradients, and the sentences follow their numbers."""

import resource
import types

import numpy as np
import pytest
import tensorflow as tf

from course_lib import fitting


def _own_maxrss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_the_reader_returns_the_childs_peak_not_the_parents():
    held = np.ones(300 * 2**20, dtype=np.uint8)  # the parent holds more than the child will allocate
    before = _own_maxrss_mb()
    small, large = fitting.step_peaks([dict(kind="numpy", mb=20), dict(kind="numpy", mb=160)])
    after = _own_maxrss_mb()
    assert held.sum() == held.size
    assert small["reader"].startswith("VmHWM")
    assert 150 < large["peak_mb"] < 175, large   # what the child allocated, not the parent's 300 MB and more
    assert 15 < small["peak_mb"] < 35, small
    assert large["peak_mb"] - small["peak_mb"] == pytest.approx(140, abs=15)
    assert after - before < 50  # the children's allocations never reached the parent's own high-water mark
    assert small["resident_before_mb"] < before  # a fresh Python, without the parent's 300 MB
    assert small["gpu_peak_mb"] is None          # NumPy alone: no TensorFlow allocator to read


def test_peak_of_reads_an_allocation_in_this_process():
    reading = fitting.peak_of(lambda: np.ones(64 * 2**20, dtype=np.uint8))
    assert 55 < reading["peak_mb"] < 80, reading


@pytest.mark.parametrize("spe, steps, ends, indices", [
    (1, 8, 8, list(range(8))),
    (8, 32, 4, [7, 15, 23, 31]),
    (16, 40, 3, [15, 31]),  # the last execution holds the 8 steps left (its index is Keras's to choose)
])
def test_the_batch_hooks_fire_once_per_execution(spe, steps, ends, indices):
    counted = fitting.count_callbacks(spe, steps=steps, batch=4)
    assert counted["begin calls"] == counted["end calls"] == ends
    assert counted["indices"][:len(indices)] == indices


SHAPE = dict(width=256, depth=6)


def test_a_steps_peak_rises_with_the_batch():
    small, large = fitting.step_peaks([dict(batch=256, **SHAPE), dict(batch=4096, **SHAPE)])
    assert large["peak_mb"] > small["peak_mb"] + 40, (small, large)  # 16x the activations: tens of MB more
    assert "rises at every step up in batch" in fitting.memory_sentence([small, large])


@pytest.mark.slow
def test_recompute_grad_and_bfloat16_lower_the_peak():
    plain, remat, mixed = fitting.step_peaks([dict(batch=4096, **SHAPE), dict(batch=4096, recompute=True, **SHAPE),
                                              dict(batch=4096, policy="mixed_bfloat16", **SHAPE)])
    assert remat["peak_mb"] < plain["peak_mb"] - 20, (plain, remat)
    assert mixed["peak_mb"] < plain["peak_mb"] - 10, (plain, mixed)


def test_recompute_grad_gives_the_same_gradients():
    x, y = fitting.step_data(32, width=16)
    plain, plain_model = fitting.train_step(16, 3)
    remat, remat_model = fitting.train_step(16, 3, recompute=True)
    for a, b in zip(plain_model.trainable_variables, remat_model.trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the same seeded start
    losses = [(plain(x, y).numpy(), remat(x, y).numpy()) for _ in range(2)]  # SGD: same update = same gradient
    for a, b in losses:
        assert a == pytest.approx(b, rel=1e-5)
    for a, b in zip(plain_model.trainable_variables, remat_model.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_fit_variants_run_one_epoch_of_the_steps_asked_for():
    build = fitting.fit_variants({"s": dict(steps_per_execution=2, jit_compile=False)}, batch=4)["s"]
    epoch = build(width=8, steps=6)
    loss = epoch()
    assert np.isfinite(loss)


def test_input_variants_train_the_same_epoch_from_arrays_and_from_a_dataset():
    variants = fitting.input_variants(width=8, steps=3, batch=4)
    assert list(variants) == list(fitting.INPUT_NAMES)
    losses = [variant().history["loss"][-1] for variant in variants.values()]
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)  # the same seeded model on the same batches, in order


def test_predict_variants_compute_the_same_and_the_graph_traces_once():
    model = fitting.mlp(8)
    variants = fitting.predict_variants(model)
    assert list(variants) == list(fitting.PREDICT_NAMES)
    outs = {batch: [np.asarray(build(batch=batch)()) for build in variants.values()] for batch in (1, 5)}
    for batch, values in outs.items():
        for value in values[1:]:
            np.testing.assert_allclose(value, values[0], rtol=1e-5, atol=1e-6)


def test_code_of_shows_the_lines_without_the_docstring():
    code = fitting.code_of(fitting.compiled_model)
    assert "steps_per_execution=steps_per_execution, jit_compile=jit_compile" in code
    assert '"""' not in code and code.startswith("def compiled_model")


def test_jit_auto_reads_what_compile_resolved():
    info = fitting.jit_auto()
    gpus = len(tf.config.list_physical_devices("GPU"))
    assert info == {"jit_compile": bool(gpus), "gpus": gpus}
    assert f"jit_compile={bool(gpus)}" in fitting.gpu_sentence(info)


class _Fake:
    """A comparison with fixed speedups and intervals, for the sentence builders."""

    def __init__(self, speedup, interval, rounds=True):
        self._s, self._i, self._rounds = speedup, interval, rounds

    def enough_rounds(self, name, over=None):
        return self._rounds

    def speedup(self, name, over=None):
        return self._s

    def interval(self, name, over=None):
        return self._i


def test_the_shrink_sentence_follows_the_intervals():
    small = _Fake(1.8, (1.6, 2.0))
    assert "shrinks" in fitting.shrink_sentence(small, _Fake(1.1, (1.0, 1.2)), small_width=32, wide_width=1024)
    assert "cannot tell" in fitting.shrink_sentence(small, _Fake(1.5, (1.2, 1.7)), small_width=32, wide_width=1024)
    assert "grows" in fitting.shrink_sentence(small, _Fake(2.5, (2.2, 2.8)), small_width=32, wide_width=1024)
    few = fitting.shrink_sentence(small, _Fake(1.1, (1.0, 1.2), rounds=False), small_width=32, wide_width=1024)
    assert "too few rounds" in few and "nan" not in few


def test_the_memory_sentences_read_their_numbers():
    reader = "VmHWM (reset before the step)"
    peaks = [dict(batch=512, peak_mb=20.0, reader=reader), dict(batch=2048, peak_mb=80.0, reader=reader),
             dict(batch=2048, recompute=True, peak_mb=40.0, reader=reader),
             dict(batch=2048, policy="mixed_bfloat16", peak_mb=60.0, reader=reader)]
    text = fitting.memory_sentence(peaks)
    assert "rises at every step up in batch" in text and "20 MB at batch 512" in text and "80 MB at batch 2048" in text
    assert "40 KB more per row" in text and "VmHWM" in text
    flat = [dict(p, peak_mb=50.0) for p in peaks[:2]]
    assert "does not rise" in fitting.memory_sentence(flat)
    assert "25% less" in fitting.policy_sentence(peaks, 2048)
    timing = types.SimpleNamespace(verdict=lambda name, over: f"{name} against {over}: slower")
    text = fitting.recompute_sentence(peaks, timing, 2048)
    assert "40 MB against 80 MB (50% less)" in text and "tf.recompute_grad against plain: slower" in text
    assert "read 99.5 MB" in fitting.reader_sentence(dict(mb=100, peak_mb=99.5))


def test_the_auto_sentence_says_what_this_keras_did():
    base = dict(keras="3.x", compile=True, fit=False, error="TypeError: no")
    assert "stops with TypeError: no" in fitting.auto_sentence(base)
    assert "refuses" in fitting.auto_sentence(dict(base, compile=False))
    assert "holds steps_per_execution=4" in fitting.auto_sentence(dict(base, fit=True, after_fit=4))


def test_course_bench_fit_is_registered_with_a_quick_setting():
    from course_lib.benchmarks import commands

    main = commands()["fit"]
    args = main.parser().parse_args(["--steps", "8"])
    assert args.steps == 8 and args.memory_batches.split(",")[0] == "512"


def test_per_step_rows_lead_an_uncalled_ratio_with_its_verdict():
    from course_lib import bench

    def timing(name, ms):
        return bench.Timing(name=name, first_call_s=ms[0] / 1e3, times_s=list(np.asarray(ms) / 1e3), number=1)

    steady = [10.0, 10.4, 9.8, 10.2, 10.1, 9.9, 10.3, 10.0]
    result = bench.Comparison(timings=[timing("steps_per_execution=1", steady),
                                       timing("steps_per_execution=64", steady[::-1]),
                                       timing("halved", [t / 2 for t in steady])],
                              baseline="steps_per_execution=1")
    rows = {r["variant"]: r for r in fitting.per_step_rows(result, steps=10)}
    assert rows["steps_per_execution=1"]["against the baseline"] == "baseline"
    assert rows["steps_per_execution=64"]["per step (µs)"] == 1005
    assert rows["steps_per_execution=64"]["against the baseline"].startswith(("no measurable difference, ",
                                                                              "too close to call, "))
    assert rows["halved"]["against the baseline"].startswith("2x faster (95% interval")
