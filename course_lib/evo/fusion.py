"""Shaping what XLA fuses: ``materialize``, ``per_element`` and the XLA wrapper that enables them.

XLA:CPU vectorises plain elementwise loops, but it fuses producers into their
consumers: a per-row or per-word random draw is then recomputed for every gene that
reads it, and an op's whole output is recomputed inside the next op's gather, where
the fused loop runs scalar instead of vectorised. The engine
pins such results with ``materialize`` in functions traced by ``xla_function``, and
runs costly per-gene math on flat vectors with ``per_element``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

import tensorflow as tf

_XLA = contextvars.ContextVar("evo_compiling_with_xla", default=False)


@contextlib.contextmanager
def compiling_with_xla():
    """Mark the functions traced inside as XLA-compiled, so ``materialize`` pins results."""
    token = _XLA.set(True)
    try:
        yield
    finally:
        _XLA.reset(token)


def xla_active() -> bool:
    """Whether the function being traced is compiled by ``xla_function``: an op may then pick the
    kernel XLA runs best (a scatter where TensorFlow has a faster dedicated op), same results."""
    return _XLA.get()


def xla_function(fn):
    """``tf.function(fn, jit_compile=True)``, traced with ``materialize`` active (no AutoGraph:
    the engine writes its loops as ``tf.while_loop``)."""
    @functools.wraps(fn)
    def traced(*args):
        with compiling_with_xla():
            return fn(*args)

    return tf.function(traced, jit_compile=True, autograph=False)


def materialize(x, key: tf.Tensor | None = None):
    """``x`` unchanged, but computed once into memory when compiled by ``xla_function``.

    XLA cannot fuse across a while loop, so ``x`` goes through one whose trip count
    (1) is computed from a random key, so it is unknown at compile time and the loop
    stays. ``x`` may be a list of tensors that share their work (the steps of one
    sequential algorithm): pinned together, XLA computes them in one pass instead of
    recomputing the earlier ones for each later one. Without a key (a fitness has none) the
    trip count comes from the first element of ``x``'s first tensor, which the loop waits for
    anyway. Eager and graph execution compute every tensor once anyway: no-op there.
    """
    if not _XLA.get():
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
    pinned result is one vector loop. Same values: the arithmetic per element does not change.
    """
    shape = inputs[0].shape
    pinned = materialize(fn(*[tf.reshape(x, [-1]) for x in inputs]), key)
    if isinstance(pinned, (list, tuple)):
        return [tf.reshape(p, shape) for p in pinned]
    return tf.reshape(pinned, shape)
