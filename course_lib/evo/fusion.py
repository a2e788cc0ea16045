"""Shaping what XLA fuses for the device a program runs on: targets, ``materialize``, ``per_element``.

A program is traced for one *target*, "cpu" or "gpu" (a TPU is treated as a GPU), read by ops
through ``target()`` while they are traced (``targeting``). XLA:CPU vectorises plain elementwise
loops, but it fuses producers into their consumers: a per-row or per-word random draw is then
recomputed for every gene that reads it, and an op's whole output is recomputed inside the next
op's gather, where the fused loop runs scalar instead of vectorised. For the CPU target the
engine pins such results with ``materialize`` in functions traced by ``xla_function``, and runs
costly per-gene math on flat vectors with ``per_element``.

On XLA:GPU a pin is wrong: the pin is a while loop whose trip count XLA cannot know, and XLA:GPU
evaluates every such loop's condition on the device and copies it to the host before each trip,
so each pin costs a device-to-host round trip and splits the generation into separate kernel
sequences, while the recomputation a pin saves is cheap on a GPU's many cores. For the GPU target
``materialize`` and ``per_element`` are the plain computation, and ops avoid loops whose trip
count depends on data; a loop with a static trip count runs on the device without reading its
condition back. ``docs/engine.md`` ("Targets") lists what differs per target and why.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

import tensorflow as tf

_XLA = contextvars.ContextVar("evo_compiling_with_xla", default=False)
_TARGET = contextvars.ContextVar("evo_target", default="cpu")
TARGETS = ("cpu", "gpu")


@contextlib.contextmanager
def compiling_with_xla():
    """Mark the functions traced inside as XLA-compiled, so ``materialize`` pins results (CPU target)."""
    token = _XLA.set(True)
    try:
        yield
    finally:
        _XLA.reset(token)


def xla_active() -> bool:
    """Whether the function being traced is compiled by ``xla_function``: an op may then pick the
    kernel XLA runs best (a scatter where TensorFlow has a faster dedicated op), same results."""
    return _XLA.get()


def target() -> str:
    """The target the function being traced is shaped for: "cpu" or "gpu" ("cpu" outside ``targeting``)."""
    return _TARGET.get()


def check_target(name: str, allow_auto: bool = True) -> str:
    """``name`` if it is a target (or "auto" where allowed), else a clear error."""
    choices = TARGETS + (("auto",) if allow_auto else ())
    if name not in choices:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(repr(c) for c in choices)} "
                         "('auto': the device the program is placed on)")
    return name


def device_target(device: str) -> str:
    """The target of a TensorFlow device name ('/job:localhost/replica:0/task:0/device:GPU:0', 'GPU:1',
    'CPU'): "gpu" for a GPU or TPU, "cpu" for anything else."""
    kind = tf.DeviceSpec.from_string(device).device_type or ""
    return "gpu" if kind.upper() in ("GPU", "TPU") else "cpu"


def resolve_target(requested: str, devices) -> str:
    """The target a program is traced for: ``requested`` unless it is "auto", then "gpu" when any of
    ``devices`` (the devices the program is placed on) is a GPU or TPU, else "cpu"."""
    check_target(requested)
    if requested != "auto":
        return requested
    return "gpu" if any(device_target(d) == "gpu" for d in devices) else "cpu"


def placed_device() -> str:
    """The device an op created here, eagerly, runs on: the default device, or the one a surrounding
    ``tf.device`` scope names (TensorFlow puts ops on the first GPU when there is one)."""
    return tf.zeros([1]).device


@contextlib.contextmanager
def shaping_for(name: str):
    """Trace the functions inside for target ``name`` ("cpu" or "gpu")."""
    token = _TARGET.set(check_target(name, allow_auto=False))
    try:
        yield
    finally:
        _TARGET.reset(token)


def targeting(name: str, fn):
    """``fn`` run (and so traced) with ``target()`` = ``name``."""
    check_target(name, allow_auto=False)

    @functools.wraps(fn)
    def shaped(*args, **kwargs):
        with shaping_for(name):
            return fn(*args, **kwargs)

    return shaped


def pinning() -> bool:
    """Whether ``materialize`` pins here: traced by ``xla_function`` for the CPU target."""
    return _XLA.get() and _TARGET.get() == "cpu"


def while_loop(cond, body, loop_vars, bound: int):
    """``tf.while_loop`` for a loop whose trip count depends on data: for the GPU target it carries
    ``maximum_iterations=bound`` (a trip count it can never exceed), so the loop is bounded whatever
    the data; for the CPU target the plain loop. Each trip still reads its condition back to the
    host on XLA:GPU: use only where the loop is essential, and say so where it is used."""
    if _TARGET.get() == "gpu":
        return tf.while_loop(cond, body, loop_vars, maximum_iterations=bound)
    return tf.while_loop(cond, body, loop_vars)


def xla_function(fn):
    """``tf.function(fn, jit_compile=True)``, traced with ``materialize`` active (no AutoGraph:
    the engine writes its loops as ``tf.while_loop``)."""
    @functools.wraps(fn)
    def traced(*args):
        with compiling_with_xla():
            return fn(*args)

    return tf.function(traced, jit_compile=True, autograph=False)


def materialize(x, key: tf.Tensor | None = None):
    """``x`` unchanged, but computed once into memory when compiled by ``xla_function`` for the CPU
    target (``pinning``); the identity for the GPU target, where the pin's loop costs a device-to-host
    round trip (module docstring).

    XLA cannot fuse across a while loop, so ``x`` goes through one whose trip count
    (1) is computed from a random key, so it is unknown at compile time and the loop
    stays. ``x`` may be a list of tensors that share their work (the steps of one
    sequential algorithm): pinned together, XLA computes them in one pass instead of
    recomputing the earlier ones for each later one. Without a key (a fitness has none) the
    trip count comes from the first element of ``x``'s first tensor, which the loop waits for
    anyway. Eager and graph execution compute every tensor once anyway: no-op there.
    """
    if not pinning():
        return x
    many = isinstance(x, (list, tuple))
    if key is None:
        first = tf.reshape(x[0] if many else x, [-1])[0]
        key = tf.reshape(tf.bitcast(tf.cast(first, tf.float32), tf.uint32), [1])
    odd = key[0] | 1
    one = tf.cast(odd // odd, tf.int32)  # 1, opaque to XLA's simplifier

    def touch(y):  # rewrite one element in place: O(1), and the loop is not a no-op
        corner = tf.fill([1, len(y.shape)], one - 1)
        return tf.tensor_scatter_nd_update(y, corner, tf.gather_nd(y, corner) * tf.cast(one, y.dtype))

    pinned = tf.while_loop(lambda i, ys: i < one, lambda i, ys: (i + 1, [touch(y) for y in ys]),
                           (0, list(x) if many else [x]))[1]
    return pinned if many else pinned[0]


def per_element(fn, *inputs: tf.Tensor, key: tf.Tensor | None = None):
    """``fn(*inputs)`` for elementwise ``fn`` (returning a tensor or a list), computed on the inputs as
    flat vectors and pinned (``materialize``), each result reshaped to the inputs' shape.

    XLA:CPU emits a loop over the rows of its output and vectorises each row: a row whose length is
    not a multiple of the vector width (8 floats here) ends in scalar steps, and for costly math (a
    polynomial cosine) 100 values per row make those steps about a quarter of the work. A flat,
    pinned result is one vector loop. Same values: the arithmetic per element does not change. For
    the GPU target ``fn`` runs on the inputs as they are: nothing to pin, no row tail to avoid.
    """
    if _TARGET.get() == "gpu":
        return fn(*inputs)
    shape = inputs[0].shape
    pinned = materialize(fn(*[tf.reshape(x, [-1]) for x in inputs]), key)
    if isinstance(pinned, (list, tuple)):
        return [tf.reshape(p, shape) for p in pinned]
    return tf.reshape(pinned, shape)
