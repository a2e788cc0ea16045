"""What a training step holds in memory (lecture 19): one step per case in a fresh process, its high-water
mark read there, ``tf.recompute_grad`` and ``mixed_bfloat16`` against the plain step, and the sentences."""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from course_lib import processes

CASE_ENV = "COURSE_FIT_CASE"  # the child's case, as JSON (run_many gives each child its own environment)


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
    return [f.result for f in processes.run_many("course_lib.fitting.memory:_child_case", each, timeout=timeout)]


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
