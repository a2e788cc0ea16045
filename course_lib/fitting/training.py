"""Keras ``fit`` and ``predict`` at speed (lecture 19): the model, the settings, the callback, the four
forward passes, and the sentences that read their measurements."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from course_lib import bench

FEATURES = 16

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
             "against the baseline": "baseline" if name == result.baseline else result.judged(name)}
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
