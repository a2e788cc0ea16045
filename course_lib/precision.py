"""Reduced precision on the reader's machine: float32, bfloat16 and float16 compute, a Keras model under a
mixed-precision policy, the numerics that decide what is safe, and post-training quantization.

Whether a narrower type pays depends on the processor: bfloat16 halves the bytes moved, but only a processor
with bfloat16 instructions (AVX-512 BF16, AMX) multiplies it without converting each value to float32 first,
and only a library that knows those instructions (oneDNN) uses them. So every sentence here is rendered from
the run (the comparison's verdict) and from the features this processor reports (``host.machine``).
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from course_lib import bench, host, processes

DTYPES = ("float32", "bfloat16", "float16")
FLOAT16_MAX = 65504.0          # the largest finite float16
FLOAT16_TINY = 2.0 ** -24      # the smallest positive float16 (a subnormal, about 5.96e-8)
LOSS_TOLERANCE = 0.03          # mixed_bfloat16's loss may differ from float32's by this fraction at any step:
                               # bfloat16 keeps 8 bits of mantissa, a relative step of 0.4% per rounding, and
                               # the roundings of each layer and step compound (more where Eigen, not oneDNN,
                               # runs the bfloat16 matmul)
AGREEMENT_BOUND = 0.1          # a quantized model's largest output difference from float32, in probability:
                               # full integer holds each probability in 1/256 steps after int8 activations

# -- the processor ------------------------------------------------------------------------------------------

_FEATURE_NAMES = {"amx_tile": "AMX tile instructions", "avx512_bf16": "AVX-512 BF16 instructions",
                  "avx512f": "AVX-512", "avx2": "AVX2"}


def cpu_features(info: Mapping | None = None) -> dict[str, bool]:
    """Which of the features that decide reduced precision this processor has: ``amx_tile``,
    ``avx512_bf16``, ``avx512f``, ``avx2`` (read by ``host.machine``, or given as ``info``)."""
    flags = set((info or host.machine()).get("cpu_flags", []))
    return {name: name in flags for name in _FEATURE_NAMES}


def bfloat16_hardware(features: Mapping[str, bool]) -> str:
    """The words for what multiplies bfloat16 on this processor: its best native instructions, or none."""
    if features.get("amx_tile"):
        return "AMX tile instructions (and AVX-512 BF16)" if features.get("avx512_bf16") else "AMX tile instructions"
    if features.get("avx512_bf16"):
        return "AVX-512 BF16 instructions"
    return ""


def _widest(features: Mapping[str, bool]) -> str:
    return "AVX-512" if features.get("avx512f") else "AVX2" if features.get("avx2") else "no AVX2"


def dtype_sentence(result: bench.Comparison, name: str = "bfloat16", over: str = "float32", *,
                   features: Mapping[str, bool] | None = None, onednn: bool | None = None) -> str:
    """One sentence reading ``result``'s verdict of ``name`` against ``over`` with the reason this processor
    gives: "bfloat16: 1.9x faster than float32 (95% interval ...), because this processor has AVX-512 BF16
    instructions ...", and the true opposite on a processor without them.

    Args:
        result: the comparison that timed both variants in turns.
        name, over: the two variants (a narrow type and float32).
        features: ``cpu_features()`` (this machine's by default).
        onednn: whether oneDNN ran the kernels (``host.onednn_enabled()`` by default).
    """
    features = cpu_features() if features is None else features
    onednn = host.onednn_enabled() if onednn is None else onednn
    call = result.call(name, over)
    native = bfloat16_hardware(features)
    kind = name.split(",")[0]  # "bfloat16, oneDNN off" -> "bfloat16"
    if call == bench.TOO_FEW:
        return f"{name} against {over}: {result.judged(name, over)}."
    measured = result.judged(name, over)
    ratio_words, _, interval = result.ratio_with_interval(name, over).partition(" (")
    head = f"{name}: {ratio_words} than {over} ({interval}"  # the course's verdict notation
    if call == "faster":
        if native and onednn is not False:
            return (f"{head}, because this processor has {native}, which oneDNN uses to multiply {kind} "
                    "directly, and half the bytes move.")
        return (f"{head}, although this processor has no bfloat16 instructions ({_widest(features)}): the gain "
                "is half the bytes moved, which outweighed converting each value to float32 and back.")
    if call == "slower":
        if not native:
            return (f"{head}, because this processor has no bfloat16 instructions ({_widest(features)} only): "
                    f"each {kind} value is widened to float32, multiplied, and rounded back, more work than "
                    "float32 alone.")
        if onednn is False:
            return (f"{head}: this processor has {native}, but with oneDNN off TensorFlow's own (Eigen) kernels "
                    f"do not use them and convert each {kind} value to float32 and back.")
        return (f"{head}, although this processor has {native}: at this size the conversions around the "
                "product cost more than the narrower multiply saves.")
    reason = (f"this processor has no bfloat16 instructions ({_widest(features)} only)" if not native else
              f"this processor has {native}, but with oneDNN off TensorFlow's own kernels do not use them"
              if onednn is False else f"this processor has {native}")
    return f"{name} against {over}: {measured}; {reason}."


def float16_sentence(result: bench.Comparison, library: str, name: str = "float16", over: str = "float32") -> str:
    """``result``'s verdict of float16 against float32 with the library that ran float16's kernel (a
    ``kernels_by_dtype`` row's ``library``): oneDNN takes float16 only on processors with float16 arithmetic
    (AVX-512 FP16, AMX FP16); elsewhere TensorFlow's own kernel widens each value to float32."""
    if result.call(name, over) == bench.TOO_FEW:
        return f"{name} against {over}: {result.judged(name, over)}."
    ratio_words, _, interval = result.ratio_with_interval(name, over).partition(" (")
    call = result.call(name, over)
    head = (f"{name}: {ratio_words} than {over} ({interval}" if call in ("faster", "slower")
            else f"{name} against {over}: {result.judged(name, over)}")
    if library == "oneDNN":
        return f"{head}; oneDNN ran its kernel, so this processor has float16 arithmetic it could use."
    tail = ("the gain is half the bytes moved" if call == "faster" else "so float16 saves memory here, not time")
    return (f"{head}; {library}'s own kernel ran it, not oneDNN's: without float16 arithmetic in the processor, "
            f"each value is widened to float32 for the multiply, {tail}.")


# -- throughput by dtype ------------------------------------------------------------------------------------

@contextlib.contextmanager
def _tf_log_level(level: str):
    """TensorFlow's Python logger at ``level`` for a while: tracing many small functions on purpose (one per
    dtype and size) is what its retracing warning is about, and here it is the point."""
    logger = tf.get_logger()
    old = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(old)


def _traced(fn: Callable, *args) -> Callable[[], tf.Tensor]:
    """``fn`` as a ``tf.function`` traced now on ``args``, and the call of it on them."""
    graph = tf.function(fn)
    with _tf_log_level("ERROR"):
        graph(*args)
    return lambda: graph(*args)


def _tensor(shape: Sequence[int], dtype: str, seed: int) -> tf.Tensor:
    return tf.cast(tf.random.stateless_normal(shape, seed=[seed, 7]), dtype)


def matmul_fn(n: int, dtype: str) -> Callable[[], tf.Tensor]:
    """A timed call of one ``n`` x ``n`` matrix product in ``dtype``: the inputs cast once, the product a
    ``tf.function`` traced once, before any timing."""
    a, b = _tensor([n, n], dtype, 1), _tensor([n, n], dtype, 2)
    return _traced(lambda a, b: tf.matmul(a, b), a, b)


def conv_fn(size: int, dtype: str, batch: int = 8, channels: int = 32) -> Callable[[], tf.Tensor]:
    """A timed call of one 3 x 3 convolution, ``channels`` in and out, over a ``size`` x ``size`` batch."""
    x, w = _tensor([batch, size, size, channels], dtype, 3), _tensor([3, 3, channels, channels], dtype, 4)
    return _traced(lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"), x, w)


def matmul_flops(n: int) -> float:
    return 2.0 * n ** 3


def conv_flops(size: int, batch: int = 8, channels: int = 32) -> float:
    return 2.0 * batch * size * size * 9 * channels * channels


def matmul_variants(dtypes: Sequence[str] = DTYPES) -> dict[str, Callable[..., Callable[[], Any]]]:
    """Builders for ``SpeedupWidget``: one matmul per dtype, sized by the knob ``n``."""
    return {dtype: (lambda n, dtype=dtype: matmul_fn(n, dtype)) for dtype in dtypes}


def gflops(result: bench.Comparison, flops: float) -> dict[str, float]:
    """Each variant's GFLOP/s from its median."""
    return {name: flops / result[name].median_s / 1e9 for name in result.names}


def dtype_sweep(sizes: Sequence[int] = (256, 1024), conv_size: int = 32, *, dtypes: Sequence[str] = DTYPES,
                repeats: int = 5) -> list[bench.Comparison]:
    """The dtypes timed in turns for a matmul at each of ``sizes`` and for one convolution."""
    out = []
    for n in sizes:
        out.append(bench.compare({d: matmul_fn(n, d) for d in dtypes}, repeats=repeats,
                                 title=f"matmul {n} x {n}", params={"op": "matmul", "n": n, "flops": matmul_flops(n)}))
    out.append(bench.compare({d: conv_fn(conv_size, d) for d in dtypes}, repeats=repeats,
                             title=f"conv2d 3x3, 8 x {conv_size} x {conv_size} x 32",
                             params={"op": "conv2d", "n": conv_size, "flops": conv_flops(conv_size)}))
    return out


def sweep_rows(results: Sequence[bench.Comparison], over: str = "float32") -> list[dict]:
    """One row per op and size: GFLOP/s per dtype and each narrow type's ratio with its interval."""
    rows = []
    for r in results:
        rates = gflops(r, r.params["flops"])
        row = {"op": r.title}
        row.update({f"{d} GFLOP/s": round(rates[d], 1) for d in r.names})
        row.update({f"{d} against {over}": r.judged(d, over) for d in r.names if d != over})
        rows.append(row)
    return rows


def kernels_by_dtype(n: int = 256, dtypes: Sequence[str] = DTYPES) -> list[dict]:
    """Which kernel ran the matmul and the convolution in each dtype, read from a profile of two calls, with
    the op it runs and the library it belongs to (names read through ``course_lib.kernels``)."""
    from course_lib import kernels, profile
    from course_lib.profile import kinds

    rows = []
    for what, build in (("MatMul", lambda d: matmul_fn(n, d)), ("Conv2D", lambda d: conv_fn(16, d))):
        for dtype in dtypes:
            fn = build(dtype)
            bench.force(fn())
            trace = profile.capture(fn, steps=2)
            ran = sorted({k for k in (kinds.kernel(e) for e in trace.events) if k and kernels.op_of(k) == what})
            for kernel in ran or ["(none recorded)"]:
                rows.append({"op": what, "dtype": dtype, "kernel": kernel, "library": kernels.library_of(kernel)})
    return rows


def kernel_sentence(rows: Sequence[Mapping]) -> str:
    """Which library ran each dtype's matmul, read from ``kernels_by_dtype``'s rows."""
    by = {}
    for row in rows:
        if row["op"] == "MatMul":
            by.setdefault(row["library"], []).append(row["dtype"])
    parts = [f"{lib}'s kernels ran {', '.join(ds)}" for lib, ds in by.items()]
    return "For the matmul, " + "; ".join(parts) + "." if parts else "No matmul kernel was recorded."


_HALF_LINE = re.compile(r"oneDNN supports DT_HALF only on platforms with AVX-512")


def half_log_sentence(log: str, features: Mapping[str, bool] | None = None) -> str:
    """The explanation of oneDNN's "supports DT_HALF only on platforms with AVX-512" line where ``log`` (this
    run's kernel log, ``devices.NativeLog``) holds it, and one sentence where it does not."""
    features = cpu_features() if features is None else features
    if not _HALF_LINE.search(log):
        return ("This run's kernel log holds no line about float16 (`DT_HALF`): oneDNN either took float16 or "
                "was off.")
    has = (" This processor has AVX-512 (`avx512f`) and still got the line: the check asks for float16 "
           "arithmetic instructions, which AVX-512F alone does not have." if features.get("avx512f") else "")
    return ("This run's kernel log holds \"oneDNN supports DT_HALF only on platforms with AVX-512\": the graph "
            "rewrite asked whether oneDNN can take the float16 ops, the processor check said no, and they kept "
            "TensorFlow's own kernels." + has)


ONEDNN_SETTINGS = {"oneDNN on": "1", "oneDNN off": "0"}


def matmul_worker(n: int, dtype: str) -> Callable[[], Any]:
    """Runs in a live worker of ``onednn_comparison``: the timed matmul, built once."""
    fn = matmul_fn(n, dtype)
    bench.force(fn())
    return lambda: bench.force(fn())


def onednn_comparison(n: int = 512, *, dtypes: Sequence[str] = ("float32", "bfloat16"), repeats: int = 5,
                      per_variant: int = 1, timeout_s: float = 300) -> bench.Comparison:
    """The matmul per dtype in fresh processes with ``TF_ENABLE_ONEDNN_OPTS=1`` and ``=0``, timed in turns
    (``processes.Workers``); TensorFlow reads the setting once, when it starts, so each needs its own
    process. The baseline is float32 with oneDNN on."""
    variants = {f"{dtype}, {setting}": ({"TF_ENABLE_ONEDNN_OPTS": flag}, {"dtype": dtype})
                for setting, flag in ONEDNN_SETTINGS.items() for dtype in dtypes}
    try:
        with processes.Workers("course_lib.precision:matmul_worker", variants, kwargs={"n": n},
                               per_variant=per_variant, timeout=timeout_s) as workers:
            return workers.compare(repeats=repeats, title=f"matmul {n} x {n} in fresh processes",
                                   params={"n": n, "flops": matmul_flops(n)})
    except processes.ChildError as exc:
        raise bench.BenchError(f"a oneDNN setting's worker process failed: {exc}") from None


# -- a Keras model under a mixed-precision policy -----------------------------------------------------------

def mlp(width: int, policy: str = "float32", *, depth: int = 3, features: int = 32, seed: int = 0):
    """A ``depth``-layer ReLU MLP of ``width`` units under ``policy``, with a float32 output layer (a
    mixed policy's last layer stays float32 so the loss is computed in full precision). The kernels are
    seeded, so two policies start from the same float32 weights."""
    import keras

    layers = [keras.Input((features,))]
    for i in range(depth):
        layers.append(keras.layers.Dense(width, activation="relu", dtype=policy, name=f"hidden_{i}",
                                         kernel_initializer=keras.initializers.GlorotUniform(seed=seed + i)))
    layers.append(keras.layers.Dense(1, dtype="float32", name="out",
                                     kernel_initializer=keras.initializers.GlorotUniform(seed=seed + depth)))
    return keras.Sequential(layers)


def regression_data(batch: int = 256, features: int = 32, seed: int = 0) -> tuple[tf.Tensor, tf.Tensor]:
    """A fixed batch: inputs and a smooth target of them."""
    x = tf.random.stateless_normal([batch, features], seed=[seed, 1])
    y = tf.reduce_sum(tf.sin(x[:, :4]), axis=1, keepdims=True)
    return x, y


def train_step(model, learning_rate: float = 0.05) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """One SGD step on mean squared error, as one ``tf.function``; returns the loss."""
    import keras

    optimizer = keras.optimizers.SGD(learning_rate)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return step


def loss_trajectory(policy: str, steps: int = 20, *, width: int = 64, seed: int = 0) -> list[float]:
    """The loss over ``steps`` same-seed SGD steps of ``mlp(width, policy)`` on ``regression_data``."""
    model = mlp(width, policy, seed=seed)
    x, y = regression_data(seed=seed)
    step = train_step(model)
    return [float(step(x, y)) for _ in range(steps)]


def trajectory_gap(losses: Sequence[float], reference: Sequence[float]) -> float:
    """The largest relative difference of ``losses`` from ``reference``, step by step."""
    a, b = np.asarray(losses, float), np.asarray(reference, float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"two trajectories of the same length are needed, got {a.size} and {b.size} steps")
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-12)))


def trajectory_sentence(losses: Sequence[float], reference: Sequence[float], policy: str = "mixed_bfloat16",
                        tolerance: float = LOSS_TOLERANCE) -> str:
    """Whether ``losses`` stayed within ``tolerance`` of the float32 ``reference`` at every step, in words."""
    gap = trajectory_gap(losses, reference)
    within = "within" if gap <= tolerance else "outside"
    return (f"Over {len(losses)} same-seed steps, {policy}'s loss stayed {within} {tolerance:.0%} of float32's at "
            f"every step (largest gap {gap:.2%}); it went from {losses[0]:.4g} to {losses[-1]:.4g}, float32's from "
            f"{reference[0]:.4g} to {reference[-1]:.4g}.")


def variable_dtypes(model) -> dict[str, str]:
    """Each layer's variable dtype and compute dtype: a mixed policy keeps the variables float32."""
    return {layer.name: f"variables {layer.variable_dtype}, compute {layer.compute_dtype}"
            for layer in model.layers}


def cast_count(model, x: tf.Tensor, y: tf.Tensor) -> int:
    """How many Cast ops the traced training step of ``model`` holds (nested functions included)."""
    from course_lib import graphs

    return graphs.op_types(train_step(model), x, y, nested=True).get("Cast", 0)


def step_variants(depth: int = 3, batch: int = 256) -> dict[str, Callable[..., Callable[[], Any]]]:
    """Builders for ``SpeedupWidget``: one training step per policy, sized by the knob ``width``."""
    def build(policy):
        def make(width):
            model = mlp(width, policy, depth=depth)
            x, y = regression_data(batch)
            step = train_step(model)
            with _tf_log_level("ERROR"):  # one trace per model, on purpose
                step(x, y)
            return lambda: step(x, y)
        return make

    return {"float32": build("float32"), "mixed_bfloat16": build("mixed_bfloat16")}


def policy_sentence(result: bench.Comparison, width: int, casts: int | None = None) -> str:
    """What ``mixed_bfloat16`` did to one training step at ``width``, read from ``result`` (float32 the
    baseline), with the mechanism that fits the verdict; ``casts`` is the step's Cast count, where known."""
    name, over = "mixed_bfloat16", "float32"
    call = result.call(name, over)
    casts_words = f"its {casts} casts" if casts else "its casts"
    if call in ("faster", "slower"):
        ratio_words, _, interval = result.ratio_with_interval(name, over).partition(" (")
        head = f"At width {width}, {name}: {ratio_words} than {over} per training step ({interval}"
        if call == "faster":
            return f"{head}: the bfloat16 matmuls saved more than {casts_words} and the float32 updates cost."
        return (f"{head}: the layers are too narrow for a faster matmul to matter, so {casts_words} (weights to "
                "bfloat16, gradients back to float32) are extra work on every step.")
    if call == "no difference":
        return (f"At width {width}, {name} against {over} per training step: {result.judged(name, over)}; the "
                f"narrower matmuls saved about what {casts_words} cost.")
    return (f"At width {width}, {name} against {over} per training step: {result.judged(name, over)}; this run "
            f"cannot tell whether the narrower matmuls saved more than {casts_words} cost.")


def g2p_sentence(rows: Sequence[Mapping]) -> str:
    """What the converter made of the g2p model's parts, read from ``try_convert_g2p``."""
    done = [r["part"] for r in rows if r["converts"] == "yes"]
    failed = [r for r in rows if r["converts"] != "yes"]
    text = f"The converter took the g2p {', '.join(done)}" if done else "The converter took no part of the g2p model"
    if failed:
        text += "; it refused the " + "; and the ".join(f"{r['part']}: \"{r['size or reason']}\"" for r in failed)
        text += (". A `tf.while_loop` that collects its outputs in a `TensorArray` of unknown length has no "
                 "static shape for TensorFlow Lite's built-in ops; the converter can keep such ops only as "
                 "TensorFlow ops (`SELECT_TF_OPS`), which needs the larger runtime and is not quantized. So the "
                 "quantization below runs on a model made of layers the converter takes whole")
    return text + "."


# -- numerics ------------------------------------------------------------------------------------------------

def range_table(values: Sequence[float] = (65504.0, 65520.0, 1e5, 6e-8, 3e-8, 1e-8)) -> list[dict]:
    """Each value as float16 and bfloat16 hold it: float16 overflows past 65504 and flushes to zero below
    about 3e-8; bfloat16 keeps float32's range with fewer digits."""
    rows = []
    for v in values:
        f16, bf16 = (tf.cast(tf.constant(v, tf.float32), d) for d in (tf.float16, tf.bfloat16))
        rows.append({"value": f"{v:g}", "as float16": f"{float(f16):.6g}", "as bfloat16": f"{float(bf16):.6g}"})
    return rows


def running_sum(n: int = 1000, step: float = 0.01, dtype: str = "bfloat16") -> float:
    """``step`` added ``n`` times to an accumulator of ``dtype``, one addition at a time (a ``tf.while_loop``)."""
    inc = tf.constant(step, dtype)

    @tf.function
    def total():
        return tf.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, acc + inc),
                             (tf.constant(0), tf.constant(0, dtype)))[1]

    with _tf_log_level("ERROR"):
        return float(total())


def running_sums(n: int = 1000, step: float = 0.01) -> list[dict]:
    """``running_sum`` in each dtype beside the exact total."""
    return [{"dtype": d, "sum": round(running_sum(n, step, d), 4), "exact": round(n * step, 4),
             "error": f"{abs(running_sum(n, step, d) - n * step) / (n * step):.2%}"} for d in DTYPES]


def loss_scale_run(gradients: Sequence[Sequence[float]], *, initial_scale: float = 1024.0,
                   growth_steps: int = 2) -> list[dict]:
    """Apply each of ``gradients`` (as the scaled gradients of one variable) with a dynamic
    ``keras.optimizers.LossScaleOptimizer`` and read its scale after each step. A non-finite gradient
    halves the scale and skips the update; ``growth_steps`` finite steps in a row double it."""
    import keras

    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=initial_scale,
                                                    dynamic_growth_steps=growth_steps)
    v = keras.Variable(np.zeros(len(gradients[0]), np.float32), name="w")
    rows = []
    for i, g in enumerate(gradients):
        before = v.numpy().copy()
        optimizer.apply([tf.constant(np.asarray(g, np.float32))], [v])
        rows.append({"step": i + 1, "gradient finite": bool(np.all(np.isfinite(g))),
                     "scale after": float(optimizer.dynamic_scale),
                     "variable updated": bool(np.any(v.numpy() != before))})
    return rows


def planted_overflow(steps: int = 8, overflow_at: int = 3, width: int = 2) -> list[list[float]]:
    """Finite gradients with one infinite gradient at step ``overflow_at`` (1-based)."""
    return [[float("inf")] + [1.0] * (width - 1) if i + 1 == overflow_at else [1.0] * width for i in range(steps)]


def scale_sentence(rows: Sequence[Mapping], growth_steps: int) -> str:
    """What the dynamic scale did around the first non-finite gradient, read from ``loss_scale_run``."""
    bad = next((r for r in rows if not r["gradient finite"]), None)
    if bad is None:
        return "Every gradient was finite, so the scale only grew."
    i = bad["step"] - 1
    before = rows[i - 1]["scale after"] if i else None
    later = [r for r in rows[i + 1:] if r["scale after"] > bad["scale after"]]
    fell = (f"fell from {before:g} to {bad['scale after']:g}" if before is not None and before > bad["scale after"]
            else f"stood at {bad['scale after']:g}")
    skipped = "skipped the update" if not bad["variable updated"] else "still updated the variable"
    rose = (f"rose again to {later[0]['scale after']:g} at step {later[0]['step']}, after {growth_steps} finite "
            "steps in a row" if later else "did not rise again within the run")
    return f"At step {bad['step']} the gradient was infinite: the scale {fell} and the optimizer {skipped}; it {rose}."


def underflow_rows(gradient: float = 1e-8, scale: float = 1024.0) -> list[dict]:
    """A small gradient in float16 without and with loss scaling: scaled, it survives the cast."""
    g = tf.constant(gradient, tf.float32)
    plain = float(tf.cast(g, tf.float16))
    scaled = float(tf.cast(g * scale, tf.float16)) / scale
    return [{"gradient": f"{gradient:g}", "float16, unscaled": f"{plain:.3g}",
             f"float16, scaled by {scale:g} then unscaled": f"{scaled:.3g}"}]


# -- post-training quantization -----------------------------------------------------------------------------

QUANTIZATIONS = ("float32", "dynamic-range int8", "float16 weights", "full integer int8")


def digits_data() -> tuple[np.ndarray, np.ndarray]:
    """The shipped 8 x 8 digits as float32 rows of 64 in [0, 1], and their labels."""
    from course_lib import digits

    pixels, labels = digits.load()
    return (pixels.reshape(len(pixels), 64) / 16.0).astype(np.float32), labels.astype(np.int32)


def digits_classifier(width: int = 256, epochs: int = 3, seed: int = 0):
    """A small dense classifier trained briefly on the digits (softmax output), and its test rows."""
    import keras

    keras.utils.set_random_seed(seed)
    x, y = digits_data()
    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(width, activation="relu"),
                              keras.layers.Dense(width, activation="relu"),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy")
    model.fit(x[:1400], y[:1400], epochs=epochs, batch_size=64, verbose=0)
    return model, x[1400:], y[1400:]


@contextlib.contextmanager
def _quiet():
    """The converter's Python chatter (Keras' export prints its signatures and logs the temporary folder it
    writes, the calibrator warns) kept out of a notebook; its C++ log goes where the kernel sends descriptor 2."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), _tf_log_level("ERROR"):
        warnings.simplefilter("ignore")
        yield


def convert(model, kind: str, *, representative: Callable | None = None) -> bytes:
    """A Keras ``model`` as a TensorFlow Lite flatbuffer with one post-training quantization: ``kind`` is one
    of ``QUANTIZATIONS``; full integer needs ``representative``, a generator of ``[input]`` lists."""
    if kind not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {kind!r}; choose from {', '.join(QUANTIZATIONS)}")
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if kind != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if kind == "float16 weights":
        converter.target_spec.supported_types = [tf.float16]
    if kind == "full integer int8":
        if representative is None:
            raise ValueError("full integer quantization needs a representative dataset")
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    with _quiet():
        return converter.convert()


def representative_dataset(x: np.ndarray, n: int = 100) -> Callable[[], Any]:
    """The calibration rows the converter runs to pick int8 ranges: ``n`` single rows of real inputs."""
    def gen():
        for row in x[:n]:
            yield [row[None, :].astype(np.float32)]
    return gen


@dataclass
class Lite:
    """One converted model, ready to call on batch-1 float inputs (int8 in- and outputs are (de)quantized)."""

    kind: str
    flatbuffer: bytes
    interpreter: Any = field(repr=False)

    @classmethod
    def of(cls, kind: str, flatbuffer: bytes) -> "Lite":
        with _quiet():  # the interpreter warns that it moves to the LiteRT package
            interpreter = tf.lite.Interpreter(model_content=flatbuffer, num_threads=1)
        interpreter.allocate_tensors()
        return cls(kind, flatbuffer, interpreter)

    @property
    def size_kb(self) -> float:
        return len(self.flatbuffer) / 1024

    def __call__(self, row: np.ndarray) -> np.ndarray:
        inp, out = self.interpreter.get_input_details()[0], self.interpreter.get_output_details()[0]
        value = row
        if inp["dtype"] == np.int8:
            s, z = inp["quantization"]
            value = np.clip(np.round(row / s + z), -128, 127).astype(np.int8)
        self.interpreter.set_tensor(inp["index"], value)
        self.interpreter.invoke()
        result = self.interpreter.get_tensor(out["index"])
        if out["dtype"] == np.int8:
            s, z = out["quantization"]
            result = (result.astype(np.float32) - z) * s
        return result


def quantized_models(model, x: np.ndarray) -> dict[str, Lite]:
    """``model`` converted with each of ``QUANTIZATIONS``, full integer calibrated on rows of ``x`` (training
    rows: the rows the outputs are judged on should be ones calibration never saw)."""
    rep = representative_dataset(x)
    return {kind: Lite.of(kind, convert(model, kind, representative=rep if kind.startswith("full") else None))
            for kind in QUANTIZATIONS}


def agreement_rows(model, lites: Mapping[str, Lite], x: np.ndarray, y: np.ndarray, *, rows: int = 200) -> list[dict]:
    """Size, largest output difference from the Keras float32 model, and accuracy for each converted model."""
    reference = model(x[:rows]).numpy()
    out = []
    for kind, lite in lites.items():
        got = np.concatenate([lite(x[i:i + 1]) for i in range(min(rows, len(x)))])
        out.append({"model": kind, "size (KB)": round(lite.size_kb, 1),
                    "largest difference from float32": float(np.max(np.abs(got - reference))),
                    "same class as float32": float(np.mean(got.argmax(1) == reference.argmax(1))),
                    "accuracy": float(np.mean(got.argmax(1) == y[:len(got)]))})
    return out


def agreement_sentence(rows: Sequence[Mapping], bound: float = AGREEMENT_BOUND) -> str:
    """Which converted models stayed within ``bound`` of float32's outputs and how much smaller each is."""
    base = next(r for r in rows if r["model"] == "float32")
    parts = []
    for r in rows:
        if r["model"] == "float32":
            continue
        within = "within" if r["largest difference from float32"] <= bound else "outside"
        parts.append(f"{r['model']} is {base['size (KB)'] / r['size (KB)']:.2g}x smaller and {within} the bound "
                     f"(largest difference {r['largest difference from float32']:.3g}, same class for "
                     f"{r['same class as float32']:.1%} of rows)")
    return f"Against the float32 flatbuffer ({base['size (KB)']:g} KB), bound {bound:g}: " + "; ".join(parts) + "."


def latency_variants(lites: Mapping[str, Lite], row: np.ndarray) -> dict[str, Callable[[], Any]]:
    """One batch-1 interpreter call per converted model, for ``bench.compare``."""
    return {kind: (lambda lite=lite: lite(row)) for kind, lite in lites.items()}


def conversion_error(exc: BaseException) -> str:
    """The converter's own reason from its exception: the first line that says ``error:``, without the
    source location before it."""
    for line in str(exc).splitlines():
        if "error:" in line:
            return re.sub(r"\s+", " ", line.split("error:", 1)[1]).strip()
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip()


def try_convert_g2p(embed_dim: int = 32, units: int = 64, letters: int = 10) -> list[dict]:
    """Try the g2p model's encoder and its one-graph greedy decoder through the converter (float32): what
    converts, at what size, and the converter's reason where it does not."""
    from course_lib.models import g2p

    model = g2p.build(embed_dim=embed_dim, units=units)
    x = tf.constant(g2p.encode_words(["precision"]))[:, :letters]
    model.encode(x)
    parts = {"encoder (BiGRU)": lambda x: model.encode(x)[0], "greedy decoder (while loop)": g2p.greedy_decoder(model)}
    rows = []
    for name, fn in parts.items():
        cf = tf.function(fn, input_signature=[tf.TensorSpec([1, letters], tf.int32)]).get_concrete_function()
        converter = tf.lite.TFLiteConverter.from_concrete_functions([cf], model)
        try:
            with _quiet():
                size = f"{len(converter.convert()) / 1024:.1f} KB"
            rows.append({"part": name, "converts": "yes", "size or reason": size})
        except Exception as exc:  # the converter raises its own ConverterError with the MLIR diagnostics
            rows.append({"part": name, "converts": "no", "size or reason": conversion_error(exc)})
    return rows


# -- a GPU ---------------------------------------------------------------------------------------------------

def gpu_state() -> list[dict]:
    """Where a GPU is present: each one's name and compute capability, and whether TF32 is on for float32
    matmuls and convolutions (TensorFlow's default on Ampere and later). Empty without a GPU."""
    gpus = tf.config.list_physical_devices("GPU")
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    rows = []
    for gpu in gpus:
        details = tf.config.experimental.get_device_details(gpu)
        cc = details.get("compute_capability")
        rows.append({"GPU": details.get("device_name", gpu.name),
                     "compute capability": ".".join(map(str, cc)) if cc else "unknown",
                     "TF32 for float32 matmuls": "on" if tf32 else "off",
                     "Tensor Cores for TF32/bfloat16": "yes" if cc and cc[0] >= 8 else "no (before Ampere)"})
    return rows


def gpu_sentence(rows: Sequence[Mapping]) -> str:
    """One sentence for the GPU notes, read from ``gpu_state``."""
    if not rows:
        return ("This run has no GPU, so nothing below is measured here; `tensor_float_32_execution_enabled()` "
                f"reads {'on' if tf.config.experimental.tensor_float_32_execution_enabled() else 'off'}, the setting a "
                "GPU would use.")
    r = rows[0]
    return (f"This run has {len(rows)} GPU(s); the first, {r['GPU']} (compute capability {r['compute capability']}), "
            f"runs float32 matmuls with TF32 {r['TF32 for float32 matmuls']}.")

