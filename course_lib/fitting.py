"""Keras ``fit`` and ``predict`` at speed, and what a training step holds in memory (lecture 19).

* ``fit`` at speed: a small regression MLP compiled with ``steps_per_execution`` and ``jit_compile``,
  one epoch on in-memory NumPy data per timed call (``fit_variants``); the same at a width where the
  arithmetic dominates; ``run_eagerly=True``, the price of debugging.
* ``BatchCounter``: a callback that counts ``on_train_batch_begin``/``end``, which Keras calls once per
  *execution* (``steps_per_execution`` steps), not once per step.
* ``predict_variants``: ``model.predict``, ``model(x)``, ``model.predict_on_batch`` and a ``tf.function``
  of the call, at any batch size.
* Memory: ``step_peaks`` runs one training step per case in a fresh process and reads that process's
  high-water mark of resident memory (``VmHWM`` in ``/proc/self/status``, reset just before the step
  through ``/proc/self/clear_refs``; ``getrusage``'s ``ru_maxrss`` where that file is missing), and, on a
  GPU, TensorFlow's allocator peak (``tf.config.experimental.get_memory_info``). A case may wrap each
  layer in ``tf.recompute_grad`` or set the ``mixed_bfloat16`` policy (in the child only).
* The sentences a notebook shows about these measurements are built here, from the results.

TensorFlow and Keras are imported by the functions that need them, so the ``course`` command and a child
that only allocates NumPy memory stay quick.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from course_lib import bench, processes

FEATURES = 16
CASE_ENV = "COURSE_FIT_CASE"  # the child's case, as JSON (run_many gives each child its own environment)

FIT_SETTINGS: dict[str, dict[str, Any]] = {
    "steps_per_execution=1": dict(steps_per_execution=1, jit_compile=False),
    "steps_per_execution=8": dict(steps_per_execution=8, jit_compile=False),
    "steps_per_execution=64": dict(steps_per_execution=64, jit_compile=False),
    "steps_per_execution=1, XLA": dict(steps_per_execution=1, jit_compile=True),
    "steps_per_execution=8, XLA": dict(steps_per_execution=8, jit_compile=True),
    "steps_per_execution=64, XLA": dict(steps_per_execution=64, jit_compile=True),
}
EAGER_SETTINGS: dict[str, dict[str, Any]] = {
    "compiled (steps_per_execution=1)": dict(steps_per_execution=1, jit_compile=False),
    "run_eagerly=True": dict(run_eagerly=True),
}


# ---------------------------------------------------------------------------------------------- the model

def code_of(fn: Callable) -> str:
    """``fn``'s source without its docstring: the lines a notebook shows as the technique."""
    import ast
    import inspect
    import textwrap

    source = textwrap.dedent(inspect.getsource(fn))
    body = ast.parse(source).body[0].body
    lines = source.splitlines()
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        del lines[body[0].lineno - 1:body[0].end_lineno]
    return "\n".join(lines)


def mlp(width: int = 32, *, depth: int = 2, features: int = FEATURES, seed: int = 0):
    """A regression MLP: ``depth`` Dense layers of ``width`` ReLU units and one linear output, seeded."""
    import keras

    inputs = keras.Input((features,))
    h = inputs
    for i in range(depth):
        h = keras.layers.Dense(width, activation="relu",
                               kernel_initializer=keras.initializers.GlorotUniform(seed=seed + i))(h)
    outputs = keras.layers.Dense(1, kernel_initializer=keras.initializers.GlorotUniform(seed=seed + depth))(h)
    return keras.Model(inputs, outputs)


def data(rows: int, *, features: int = FEATURES, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` inputs and targets in memory (float32 NumPy arrays): a noisy linear target."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features), dtype=np.float32)
    y = x @ rng.standard_normal((features, 1), dtype=np.float32) + 0.1 * rng.standard_normal((rows, 1),
                                                                                             dtype=np.float32)
    return x, y


def compiled_model(width: int = 32, *, steps_per_execution: int | str = 1, jit_compile: bool | str = False,
                   run_eagerly: bool = False, seed: int = 0):
    """``mlp(width)`` compiled for ``fit``: SGD on the mean squared error, with the three speed settings."""
    import keras

    model = mlp(width, seed=seed)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse",
                  steps_per_execution=steps_per_execution, jit_compile=jit_compile, run_eagerly=run_eagerly)
    return model


def in_memory_dataset(rows: int, batch: int, *, seed: int = 0):
    """``data(rows)`` as a ``tf.data`` pipeline of batches, built once, outside any timed call: ``fit`` on
    NumPy arrays builds such a pipeline again at every epoch."""
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices(data(rows, seed=seed)).batch(batch)


def one_epoch(model, dataset):
    """One epoch of ``model.fit`` over ``dataset``, silently; the loss of the epoch."""
    history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    return history.history["loss"][-1]


def fit_variants(settings: Mapping[str, Mapping[str, Any]] | None = None, *, batch: int = 64,
                 seed: int = 0) -> dict[str, Callable[..., Callable[[], Any]]]:
    """Builders for the widget: ``build(width=, steps=)`` compiles a fresh model with one setting and
    returns the timed call, one epoch of ``steps`` batches of ``batch`` rows from a dataset built once."""
    settings = FIT_SETTINGS if settings is None else settings

    def builder(setting: Mapping[str, Any]) -> Callable[..., Callable[[], Any]]:
        def build(width: int = 32, steps: int = 64):
            model = compiled_model(width, seed=seed, **setting)
            dataset = in_memory_dataset(steps * batch, batch, seed=seed)
            return lambda: one_epoch(model, dataset)
        return build

    return {name: builder(setting) for name, setting in settings.items()}


INPUT_NAMES = ("fit(x, y), NumPy arrays", "fit(dataset), built once")


def input_variants(*, width: int = 32, steps: int = 64, batch: int = 64, seed: int = 0) -> dict[str, Callable]:
    """The same epoch from NumPy arrays (``fit`` wraps them in a new ``tf.data`` pipeline every epoch) and
    from a dataset built once, each with its own model compiled with ``steps_per_execution=1``."""
    x, y = data(steps * batch, seed=seed)
    arrays, ready = (compiled_model(width, seed=seed) for _ in range(2))
    dataset = in_memory_dataset(steps * batch, batch, seed=seed)
    return {INPUT_NAMES[0]: lambda: arrays.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False),
            INPUT_NAMES[1]: lambda: ready.fit(dataset, epochs=1, verbose=0, shuffle=False)}


def input_sentence(result) -> str:
    """What feeding ``fit`` arrays costs per epoch against a dataset built once."""
    arrays, ready = INPUT_NAMES
    extra = (result[arrays].median_s - result[ready].median_s) * 1e3
    return (f"{result.verdict(ready, over=arrays)}. From arrays, this epoch took {extra:,.1f} ms more: fit "
            "builds a tf.data pipeline over the arrays (slicing, batching, tracing its functions) at every epoch.")


def auto_steps_per_execution(width: int = 32, steps: int = 8, batch: int = 64) -> dict[str, Any]:
    """What this Keras does with ``steps_per_execution="auto"``: whether ``compile`` and one epoch of
    ``fit`` accept it, and the value the model holds afterwards (or the error, by type and message)."""
    import keras

    out: dict[str, Any] = {"keras": keras.__version__, "compile": False, "fit": False, "error": ""}
    try:
        model = compiled_model(width, steps_per_execution="auto")
        out["compile"] = True
        x, y = data(steps * batch)
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
        out["fit"] = True
        out["after_fit"] = model.steps_per_execution
    except Exception as exc:  # what this version says is the lesson, whatever its type
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    return out


def auto_sentence(auto: Mapping[str, Any]) -> str:
    """The run's answer to "does ``steps_per_execution='auto'`` work here?", in one sentence."""
    version = f"Keras {auto['keras']}"
    if not auto["compile"]:
        return f"{version} refuses steps_per_execution=\"auto\" in compile ({auto['error']})."
    if not auto["fit"]:
        return (f"{version} accepts steps_per_execution=\"auto\" in compile, but fit on in-memory arrays "
                f"stops with {auto['error']}, so no timed variant uses it.")
    return (f"{version} accepts steps_per_execution=\"auto\" and trains with it; after one epoch the model "
            f"holds steps_per_execution={auto['after_fit']!r}.")


def per_step_rows(result, steps: int) -> list[dict[str, Any]]:
    """One row per variant: the median epoch and the time per step (the epoch over ``steps``)."""
    return [{"variant": name, "epoch (ms)": round(result[name].median_s * 1e3, 1),
             "per step (µs)": round(result[name].median_s / steps * 1e6),
             "against the baseline": "baseline" if name == result.baseline else result.ratio_with_interval(name)}
            for name in result.names]


def fit_sentences(result, steps: int) -> list[str]:
    """What the ``fit`` table says: each steps_per_execution against 1, then XLA against no XLA."""
    out = []
    names = set(result.names)
    for n in (8, 64):
        for xla in ("", ", XLA"):
            name, over = f"steps_per_execution={n}{xla}", f"steps_per_execution=1{xla}"
            if name in names and over in names:
                out.append(result.verdict(name, over=over))
    for n in (1, 8, 64):
        name, over = f"steps_per_execution={n}, XLA", f"steps_per_execution={n}"
        if name in names and over in names:
            out.append(result.verdict(name, over=over))
    best = min(result.names, key=lambda k: result[k].median_s)
    out.append(f"Fastest here: {best}, {result[best].median_s / steps * 1e6:.0f} µs per step.")
    return out


def _gain_words(small, wide, name: str, over: str, small_label: str, wide_label: str) -> str:
    if not (small.enough_rounds(name, over) and wide.enough_rounds(name, over)):
        return (f"{name} against {over}: {small.speedup(name, over):.2f}x at {small_label}, "
                f"{wide.speedup(name, over):.2f}x at {wide_label}, from too few rounds to tell the two gains apart.")
    lo_s, hi_s = small.interval(name, over)
    lo_w, hi_w = wide.interval(name, over)
    head = (f"{name} against {over}: {bench.ratio_text(small.speedup(name, over))} at {small_label} "
            f"{bench.interval_text(lo_s, hi_s)}, {bench.ratio_text(wide.speedup(name, over))} at {wide_label} "
            f"{bench.interval_text(lo_w, hi_w)}")
    if hi_w < lo_s:
        return head + ": the gain shrinks where the arithmetic dominates."
    if lo_w > hi_s:
        return head + ": the gain grows at the wider width, against what the per-step cost alone predicts."
    return head + ": the two intervals overlap, so this run cannot tell the two gains apart."


def shrink_sentence(small, wide, *, small_width: int, wide_width: int, name: str = "steps_per_execution=64",
                    over: str = "steps_per_execution=1") -> str:
    """Whether the ``steps_per_execution`` gain shrinks at the wide width, read from both intervals."""
    return _gain_words(small, wide, name, over, f"width {small_width}", f"width {wide_width}")


def eager_sentence(result, steps: int) -> str:
    """The cost of ``run_eagerly=True``: the verdict and the extra time per step."""
    eager, compiled = "run_eagerly=True", "compiled (steps_per_execution=1)"
    extra = (result[eager].median_s - result[compiled].median_s) / steps * 1e6
    return (f"{result.verdict(eager, over=compiled)}; debugging eagerly costs {extra:,.0f} µs more per step, "
            "Python running every operation of the step.")


# --------------------------------------------------------------------------------------- the callback

def _callback_class():
    import keras

    class BatchCounter(keras.callbacks.Callback):
        """Counts the calls of ``on_train_batch_begin`` and ``on_train_batch_end`` and keeps the batch
        indices Keras passes to ``end``."""

        def __init__(self):
            super().__init__()
            self.begins, self.ends, self.indices = 0, 0, []

        def on_train_batch_begin(self, batch, logs=None):
            self.begins += 1

        def on_train_batch_end(self, batch, logs=None):
            self.ends += 1
            self.indices.append(int(batch))

    return BatchCounter


def BatchCounter():  # noqa: N802 (a class made on first use, so importing this module needs no Keras)
    """A fresh counting callback (a ``keras.callbacks.Callback``)."""
    return _callback_class()()


def count_callbacks(steps_per_execution: int, *, steps: int = 64, batch: int = 8) -> dict[str, Any]:
    """One epoch of ``steps`` batches with ``steps_per_execution``; how often each batch hook fired."""
    model = compiled_model(8, steps_per_execution=steps_per_execution)
    x, y = data(steps * batch)
    counter = BatchCounter()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False, callbacks=[counter])
    return {"steps_per_execution": steps_per_execution, "steps": steps, "begin calls": counter.begins,
            "end calls": counter.ends, "indices": counter.indices}


# -------------------------------------------------------------------------------------------- predict

PREDICT_NAMES = ("model.predict(x)", "model(x)", "model.predict_on_batch(x)", "tf.function(model)(x)")


def predict_variants(model, *, features: int = FEATURES, seed: int = 0) -> dict[str, Callable[..., Callable]]:
    """Builders ``build(batch=)`` for the four ways to run ``model`` forward on ``batch`` rows. The
    ``tf.function`` is made once, with an open batch dimension, so no batch size traces it again."""
    import tensorflow as tf

    served = tf.function(model, input_signature=[tf.TensorSpec([None, features], tf.float32)])

    def rows(batch: int) -> np.ndarray:
        return np.random.default_rng(seed).standard_normal((batch, features), dtype=np.float32)

    def predict(batch: int = 1):
        x = rows(batch)
        return lambda: model.predict(x, verbose=0)

    def call(batch: int = 1):
        x = tf.constant(rows(batch))
        return lambda: model(x)

    def on_batch(batch: int = 1):
        x = rows(batch)
        return lambda: model.predict_on_batch(x)

    def graph(batch: int = 1):
        x = tf.constant(rows(batch))
        return lambda: served(x)

    return dict(zip(PREDICT_NAMES, (predict, call, on_batch, graph)))


def predict_sentences(result, batch: int, *, predict_batch_size: int = 32) -> list[str]:
    """Where ``predict``'s time goes at ``batch`` rows: its overhead over ``predict_on_batch`` (the same
    compiled forward pass without a dataset, an iterator and a loop), and each variant against it."""
    predict, on_batch = "model.predict(x)", "model.predict_on_batch(x)"
    extra = (result[predict].median_s - result[on_batch].median_s) * 1e6
    loops = math.ceil(batch / predict_batch_size)
    out = [f"At batch {batch}: " + result.verdict(name, over=predict) for name in result.names if name != predict]
    out.append(f"predict spends {extra / 1e3:,.1f} ms per call more than predict_on_batch: building a dataset and an "
               f"iterator over the rows, the callbacks, and a loop of {loops} compiled step"
               f"{'' if loops == 1 else 's'} of {predict_batch_size} rows (predict's default batch_size).")
    return out


# --------------------------------------------------------------------------------------------- memory

def _status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_high_water() -> bool:
    """Reset this process's resident high-water mark (Linux: ``5`` into ``/proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _maxrss_kib() -> int:
    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return value // 1024 if sys.platform == "darwin" else value  # bytes on macOS, KiB on Linux


def _high_water_kib(reset: bool) -> tuple[int, str]:
    hwm = _status_kib("VmHWM")
    if reset and hwm is not None:
        return hwm, "VmHWM (reset before the step)"
    return _maxrss_kib(), "ru_maxrss (not reset: the whole process's peak)"


def peak_of(run: Callable[[], Any]) -> dict[str, Any]:
    """Call ``run`` once in this process and read how far resident memory rose above where it stood."""
    import gc

    gc.collect()
    before = _status_kib("VmRSS")
    if before is None:
        before = _maxrss_kib()
    reset = _reset_high_water()
    gpu = _gpu_reset()
    run()
    high, reader = _high_water_kib(reset)
    return {"peak_mb": (high - before) / 1024, "resident_before_mb": before / 1024, "reader": reader,
            "gpu_peak_mb": _gpu_peak_mb() if gpu else None}


def _gpu_reset() -> bool:
    if "tensorflow" not in sys.modules:
        return False
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return False
    tf.config.experimental.reset_memory_stats("GPU:0")
    return True


def _gpu_peak_mb() -> float:
    import tensorflow as tf

    return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def train_step(width: int = 256, depth: int = 8, *, recompute: bool = False, seed: int = 0):
    """A traced training step of a ``depth``-layer GELU MLP (GradientTape, SGD) and its model. With
    ``recompute``, each layer runs under ``tf.recompute_grad``: the backward pass runs it again instead of
    keeping its activations."""
    import keras
    import tensorflow as tf

    glorot = keras.initializers.GlorotUniform
    layers = [keras.layers.Dense(width, activation="gelu", kernel_initializer=glorot(seed=seed + i))
              for i in range(depth)]
    head = keras.layers.Dense(1, dtype="float32", kernel_initializer=glorot(seed=seed + depth))
    inputs = keras.Input((width,))
    h = inputs
    for layer in layers:
        h = layer(h)
    model = keras.Model(inputs, head(h))
    optimizer = keras.optimizers.SGD(0.01)
    blocks = [tf.recompute_grad(layer) if recompute else layer for layer in layers]

    @tf.function(autograph=False)  # plain Python loops over layers: nothing for AutoGraph to convert
    def step(x, y):
        with tf.GradientTape() as tape:
            h = x
            for block in blocks:
                h = block(h)
            loss = tf.reduce_mean(tf.square(tf.cast(head(h), tf.float32) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step, model


def step_data(batch: int, width: int = 256, seed: int = 0):
    import tensorflow as tf

    return (tf.random.stateless_normal([batch, width], seed=[seed, 1]),
            tf.random.stateless_normal([batch, 1], seed=[seed, 2]))


def _child_case() -> dict[str, Any]:
    """In the child: run the case named in ``COURSE_FIT_CASE`` once and read its peak."""
    case = json.loads(os.environ[CASE_ENV])
    if case.get("kind") == "numpy":
        mb = case["mb"]
        return {**case, **peak_of(lambda: np.ones(int(mb * 2**20), dtype=np.uint8))}
    import keras

    if case.get("policy"):
        keras.mixed_precision.set_global_policy(case["policy"])
    step, _ = train_step(case["width"], case["depth"], recompute=case.get("recompute", False))
    x, y = step_data(case["batch"], case["width"])
    step.get_concrete_function(x, y)  # traced before the reading, so it measures the step, not tracing
    return {**case, **peak_of(lambda: step(x, y).numpy())}


def step_peaks(cases: Sequence[Mapping[str, Any]], *, timeout: float = 240.0) -> list[dict[str, Any]]:
    """Each case in a fresh Python of its own (started together): its keys back, with ``peak_mb`` (the
    child's resident high-water mark during one step, over its resident memory just before), ``reader``
    (which high-water mark), ``resident_before_mb`` and ``gpu_peak_mb`` (None without a GPU).

    A case is ``dict(batch=, width=, depth=)`` with optional ``recompute=True`` and ``policy=`` (set with
    ``keras.mixed_precision.set_global_policy`` in the child only), or ``dict(kind="numpy", mb=)``, a
    NumPy allocation of known size that checks the reader.
    """
    each = [{CASE_ENV: json.dumps(dict(case))} for case in cases]
    return [f.result for f in processes.run_many("course_lib.fitting:_child_case", each, timeout=timeout)]


def memory_rows(peaks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table of ``step_peaks``: one row per case."""
    rows = []
    for p in peaks:
        what = ("tf.recompute_grad" if p.get("recompute") else "plain") + (f", {p['policy']}" if p.get("policy")
                                                                         else ", float32")
        row = {"batch": p["batch"], "step": what, "peak over resident (MB)": round(p["peak_mb"], 1)}
        if p.get("gpu_peak_mb") is not None:
            row["GPU allocator peak (MB)"] = round(p["gpu_peak_mb"], 1)
        rows.append(row)
    return rows


def memory_sentence(peaks: Sequence[Mapping[str, Any]]) -> str:
    """How a plain float32 step's peak grows with the batch, read from the children."""
    plain = sorted((p for p in peaks if not p.get("recompute") and not p.get("policy") and "batch" in p),
                   key=lambda p: p["batch"])
    if len(plain) < 2:
        return "One batch size only: nothing to compare."
    first, last = plain[0], plain[-1]
    rising = all(b["peak_mb"] > a["peak_mb"] for a, b in zip(plain, plain[1:]))
    per_row = (last["peak_mb"] - first["peak_mb"]) * 1024 / (last["batch"] - first["batch"])
    trend = ("rises at every step up in batch" if rising else
             "does not rise at every step up in batch (see the table)")
    return (f"A training step's peak {trend}: {first['peak_mb']:.0f} MB at batch {first['batch']}, "
            f"{last['peak_mb']:.0f} MB at batch {last['batch']}, about {per_row:.0f} KB more per row "
            f"(read from {first['reader'].split(' ')[0]} of each child).")


def reader_sentence(calibration: Mapping[str, Any]) -> str:
    """The reader checked on a known size: a NumPy allocation of ``mb`` MB made in a child."""
    return (f"The same reader, on a NumPy array of {calibration['mb']} MB allocated in a child, read "
            f"{calibration['peak_mb']:.1f} MB.")


def _find(peaks, batch, recompute=False, policy=None):
    for p in peaks:
        if p.get("batch") == batch and bool(p.get("recompute")) == recompute and p.get("policy") == policy:
            return p
    raise KeyError(f"no case at batch {batch} with recompute={recompute}, policy={policy}")


def _change(new: float, old: float) -> str:
    if old <= 0:
        return "against a baseline of no measurable memory"
    ratio = new / old
    return f"{(1 - ratio):.0%} less" if ratio < 1 else f"{(ratio - 1):.0%} more"


def recompute_sentence(peaks, timing, batch: int) -> str:
    """The ``tf.recompute_grad`` trade at ``batch``: both peaks, and the time verdict of the same step."""
    plain, remat = _find(peaks, batch), _find(peaks, batch, recompute=True)
    return (f"At batch {batch}, tf.recompute_grad's step peaked at {remat['peak_mb']:.0f} MB against "
            f"{plain['peak_mb']:.0f} MB ({_change(remat['peak_mb'], plain['peak_mb'])}); its time: "
            f"{timing.verdict('tf.recompute_grad', over='plain')}.")


def policy_sentence(peaks, batch: int, policy: str = "mixed_bfloat16") -> str:
    """What the ``policy`` did to the step's peak at ``batch``."""
    plain, mixed = _find(peaks, batch), _find(peaks, batch, policy=policy)
    return (f"Under {policy}, the step at batch {batch} peaked at {mixed['peak_mb']:.0f} MB against "
            f"{plain['peak_mb']:.0f} MB in float32 ({_change(mixed['peak_mb'], plain['peak_mb'])}): the "
            "activations kept for the backward pass are half as wide, the float32 weights stay.")


def recompute_variants(batch: int, width: int = 256, depth: int = 8) -> dict[str, Callable[[], Any]]:
    """The plain step and the ``tf.recompute_grad`` step on the same batch, traced, for ``bench.compare``."""
    x, y = step_data(batch, width)
    out = {}
    for name, recompute in (("plain", False), ("tf.recompute_grad", True)):
        step, _ = train_step(width, depth, recompute=recompute)
        out[name] = (lambda s: lambda: s(x, y))(step)
    return out


def largest_batch(width: int = 256, depth: int = 8, *, start: int = 1024, limit: int = 2**22,
                  recompute: bool = False) -> int:
    """The largest power-of-two multiple of ``start`` whose step runs without running out of memory, on
    the device TensorFlow places it on (meant for a GPU; a CPU runs until ``limit``)."""
    import tensorflow as tf

    step, _ = train_step(width, depth, recompute=recompute)
    fits, batch = 0, start
    while batch <= limit:
        try:
            x, y = step_data(batch, width)
            step(x, y).numpy()
        except (tf.errors.ResourceExhaustedError, tf.errors.InternalError):
            break
        fits, batch = batch, batch * 2
    return fits


# ------------------------------------------------------------------------------------------- the GPU

def jit_auto() -> dict[str, Any]:
    """What ``jit_compile="auto"`` resolves to here: the compiled model's ``jit_compile`` and the devices."""
    import tensorflow as tf

    model = compiled_model(8, jit_compile="auto")
    return {"jit_compile": model.jit_compile, "gpus": len(tf.config.list_physical_devices("GPU"))}


def gpu_sentence(info: Mapping[str, Any]) -> str:
    """What ``jit_compile="auto"`` did on this machine, and what a GPU changes."""
    where = f"{info['gpus']} GPU(s)" if info["gpus"] else "no GPU"
    said = f"With {where}, compile(jit_compile=\"auto\") left the model with jit_compile={info['jit_compile']}"
    if info["gpus"]:
        return (said + ": Keras turns XLA on by itself where a GPU runs the step, and each return to Python "
                "also waits for the device, so steps_per_execution saves a synchronisation per step as well.")
    return (said + ": on a CPU Keras leaves XLA off unless asked; on a GPU it turns it on, and every return to "
            "Python also synchronises with the device, so steps_per_execution pays more there.")
