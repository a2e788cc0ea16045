"""A deep, thin MLP that exposes per-layer call overhead (lecture 09).

Hundreds of ``Dense(4)`` layers do almost no arithmetic, so the time of a forward pass
is nearly all bookkeeping: Python calling each layer, Keras checking its inputs, one
eager op dispatch per matmul, add and activation. The same function is written three
ways, as a Keras Sequential model, a Functional model and a subclassed model, and
``copy_weights`` makes them compute exactly the same thing. ``generated_forward`` writes
the forward pass as straight-line TensorFlow code from the model's topological order
(the idea of the PyTorch study this lecture follows), and ``variants`` puts them all,
plus one ``tf.function`` graph and one XLA-compiled graph, in front of the speedup widget.
"""

from __future__ import annotations

import contextlib
import cProfile
import pstats
import sys
from typing import Callable

import keras
import numpy as np
import tensorflow as tf
from keras import layers

KINDS = ("sequential", "functional", "subclassed")
ACTIVATIONS = {"tanh": "tf.tanh", "relu": "tf.nn.relu", "linear": None}  # name -> op in generated code


def _check(depth: int, width: int, activation: str) -> None:
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a whole number >= 1 (the number of Dense layers), got {depth!r}")
    if not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be a whole number >= 1 (features per layer), got {width!r}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose one of {', '.join(ACTIVATIONS)}")


def _dense(i: int, width: int, activation: str) -> layers.Dense:
    # Orthogonal weights keep the signal alive through hundreds of tanh layers; the default
    # (Glorot) init shrinks it to zero within 250 layers, and identical zeros prove nothing.
    act = None if activation == "linear" else activation
    return layers.Dense(width, activation=act, kernel_initializer="orthogonal", name=f"dense_{i:04d}")


@contextlib.contextmanager
def _recursion_limit(depth: int):
    """Keras maps a Functional graph recursively, one Python frame per layer; a chain of 1000
    layers needs more than Python's default limit of 1000 frames."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 5 * depth + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def sequential(depth: int = 250, width: int = 4, activation: str = "tanh", seed: int = 0) -> keras.Sequential:
    """``depth`` Dense(width) layers as a ``keras.Sequential``."""
    _check(depth, width, activation)
    keras.utils.set_random_seed(seed)
    with _recursion_limit(depth):
        return keras.Sequential([keras.Input((width,))] + [_dense(i, width, activation) for i in range(depth)],
                                name="sequential")


def functional(depth: int = 250, width: int = 4, activation: str = "tanh", seed: int = 0) -> keras.Model:
    """The same layers wired with the Functional API (Keras keeps them in topological order)."""
    _check(depth, width, activation)
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((width,))
    x = inputs
    for i in range(depth):
        x = _dense(i, width, activation)(x)
    with _recursion_limit(depth):
        return keras.Model(inputs, x, name="functional")


class Subclassed(keras.Model):
    """The same layers held in a list and called in a Python loop in ``call``."""

    def __init__(self, depth: int = 250, width: int = 4, activation: str = "tanh", **kwargs):
        super().__init__(**kwargs)
        _check(depth, width, activation)
        self.depth, self.width, self.activation = depth, width, activation
        self.blocks = [_dense(i, width, activation) for i in range(depth)]

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def subclassed(depth: int = 250, width: int = 4, activation: str = "tanh", seed: int = 0) -> Subclassed:
    """A built ``Subclassed`` model (its variables exist, so weights can be copied in)."""
    keras.utils.set_random_seed(seed)
    model = Subclassed(depth, width, activation, name="subclassed")
    model(tf.zeros([1, width]))
    return model


def build(kind: str, depth: int = 250, width: int = 4, activation: str = "tanh", seed: int = 0) -> keras.Model:
    """One of ``KINDS`` by name."""
    makers = {"sequential": sequential, "functional": functional, "subclassed": subclassed}
    if kind not in makers:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    return makers[kind](depth, width, activation, seed)


def dense_layers(model: keras.Model) -> list[layers.Dense]:
    """The model's Dense layers in the order the forward pass calls them."""
    found = [layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
    if isinstance(model, Subclassed):
        found = list(model.blocks)
    for layer in found:
        if not isinstance(layer, layers.Dense):
            raise TypeError(f"layer {layer.name!r} is a {type(layer).__name__}; these helpers handle "
                            "chains of Dense layers only")
    return found


def copy_weights(source: keras.Model, target: keras.Model) -> keras.Model:
    """Give ``target`` the weights of ``source``, layer by layer; returns ``target``."""
    src, dst = dense_layers(source), dense_layers(target)
    if len(src) != len(dst):
        raise ValueError(f"cannot copy weights: {source.name} has {len(src)} Dense layers, "
                         f"{target.name} has {len(dst)}; build both with the same depth")
    for a, b in zip(src, dst):
        wa, wb = a.get_weights(), b.get_weights()
        if [w.shape for w in wa] != [w.shape for w in wb]:
            raise ValueError(f"cannot copy weights: layer {a.name} has shapes {[w.shape for w in wa]}, "
                             f"{b.name} has {[w.shape for w in wb]}; build both with the same width")
        b.set_weights(wa)
    return target


def same_function(depth: int = 250, width: int = 4, activation: str = "tanh", seed: int = 0) -> dict:
    """The three kinds, each with the weights of the Sequential one."""
    models = {kind: build(kind, depth, width, activation, seed + i) for i, kind in enumerate(KINDS)}
    for kind in KINDS[1:]:
        copy_weights(models["sequential"], models[kind])
    return models


# -- code generated from the topological order -------------------------------------------------

def forward_source(model: keras.Model) -> str:
    """Python source of the model's forward pass as straight-line TensorFlow ops.

    One line per layer, in the order the model calls them; weights are passed in a list
    (kernel, bias, kernel, bias, ...), so the code holds no Keras object at all.
    """
    lines = ["def forward(x, w):"]
    for i, layer in enumerate(dense_layers(model)):
        act = layer.get_config()["activation"]
        if act not in ACTIVATIONS:
            raise ValueError(f"layer {layer.name!r} uses activation {act!r}; supported: {', '.join(ACTIVATIONS)}")
        z = (f"tf.nn.bias_add(tf.matmul(x, w[{2 * i}]), w[{2 * i + 1}])" if layer.use_bias
             else f"tf.matmul(x, w[{2 * i}])")
        lines.append(f"    x = {z}" if ACTIVATIONS[act] is None else f"    x = {ACTIVATIONS[act]}({z})")
    lines.append("    return x")
    return "\n".join(lines)


def generated_forward(model: keras.Model) -> Callable:
    """Compile ``forward_source(model)`` and bind it to the model's variables: ``fn(x)``."""
    namespace = {"tf": tf}
    exec(compile(forward_source(model), f"<generated forward of {model.name}>", "exec"), namespace)
    forward = namespace["forward"]
    weights = [v for layer in dense_layers(model) for v in (layer.kernel, layer.bias) if v is not None]
    return lambda x: forward(x, weights)


# -- counting the work of a call -------------------------------------------------------------------

EAGER_EXECUTE = ("TFE_Py_FastPathExecute", "TFE_Py_Execute")  # the two ways Python enters the eager runtime


def call_counts(fn: Callable[[], object], calls: int = 3) -> dict[str, float]:
    """What one ``fn()`` does, counted by Python's profiler over ``calls`` calls (after one warm-up call).

    Returns ``{"Python function calls": ..., "runtime entries": ...}`` per call: every Python-level call
    (Keras' layer machinery, TensorFlow's op wrappers), and every entry into TensorFlow's eager runtime.
    An op whose fast path gives up (``tf.nn.bias_add`` on a Keras variable does) enters twice, so
    entries can exceed the ops run; a trace counts the ops (``profile.op_stats``). Counts, unlike
    times, do not depend on how busy the machine is; the profiler slows the calls down, so its times
    are not reported.
    """
    if not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be a whole number >= 1, got {calls!r}")
    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (primitive calls, calls, ...)
    entries = sum(row[1] for (_, _, name), row in stats.items() if any(e in name for e in EAGER_EXECUTE))
    return {"Python function calls": sum(row[1] for row in stats.values()) / calls,
            "runtime entries": entries / calls}



GENERATED = "generated ops, eager"  # the straight-line code every Keras model is read against


def overhead_reading(result, counts: dict, share: dict, ops: dict, depth: int,
                     again: Callable[[str, str], object], keras_models: tuple[str, ...]) -> list[str]:
    """What lecture 09's eager variants did, one line each: the work (Python calls, ops per layer), the
    trace's Python share, the time between the slowest and fastest Keras model, the generated code's calls
    and Keras' share of a layer call.

    ``result``: the widget's comparison; ``counts`` (``call_counts``), ``share`` ({"python", "eager"} of a
    traced pass) and ``ops`` (ops per layer) by variant, ``GENERATED`` among them. A gap between the slowest
    and fastest Keras model that the widget calls is timed ``again(fast, slow)`` (a comparison of the two in
    turns) and called only where that holds too; the call counts then predict part of it."""
    py_calls = [counts[n]["Python function calls"] for n in keras_models]
    same_ops = all(ops[n] == ops[GENERATED] for n in keras_models)
    lines = [f"Work: the three Keras models make Python calls within {max(py_calls) / min(py_calls) - 1:.1%} of "
             "each other" + (", and every eager variant runs the same ops per layer." if same_ops else
                             "; the ops per layer differ between variants (see the trace's lines).")]
    low, high = min(share[n]["python"] for n in keras_models), max(share[n]["python"] for n in keras_models)
    lines.append(f"Trace: Python took {low:.0%} to {high:.0%} of a traced Keras forward pass, against "
                 f"{share[GENERATED]['python']:.0%} for the generated code.")
    slow = max(keras_models, key=lambda n: result[n].median_s)
    fast = min(keras_models, key=lambda n: result[n].median_s)
    lines.append(_keras_gap(result, counts, share, slow, fast, again))
    gen = counts[GENERATED]
    lines.append(f"Generated ops: {gen['Python function calls'] / min(py_calls):.0%} of the Python calls of the "
                 f"leanest Keras model, for the same {gen['runtime entries'] / depth:.0f} runtime entries per layer.")
    lines += [f"Keras' share of an eager layer call in the {name.split(',')[0]} model: "
              f"{1 - 1 / result.speedup(GENERATED, over=name):.0%}" for name in keras_models]
    return lines


def _keras_gap(result, counts, share, slow: str, fast: str, again) -> str:
    first = result.speedup(fast, over=slow)
    if not result.apart(slow, fast):
        return (f"Time: timed in turns, the slowest and the fastest of the three show {result.uncalled(slow, fast)} "
                f"({slow} {first:.2f}x as long as {fast}), as near-equal work predicts.")
    retimed = again(fast, slow)
    second = retimed.speedup(fast, over=slow)
    if not (retimed.apart(slow, fast) and second > 1):
        return (f"Time: {slow} took {first:.2f}x as long as {fast} in the widget, but {second:.2f}x when the two "
                "were timed again in turns: the gap did not hold, so this run does not show the model style "
                "costing time.")
    extra = counts[slow]["Python function calls"] / counts[fast]["Python function calls"] - 1
    head = (f"Time: {slow} took {first:.2f}x as long as {fast}, and {second:.2f}x when the two were timed again "
            "in turns: a difference that holds. ")
    if extra <= 0:
        return head + (f"The counts point the other way ({slow} makes {-extra:.1%} fewer Python calls), so the gap "
                       "is in what the calls cost, not how many, which a count cannot see.")
    predicted = share[slow]["python"] * extra  # more calls of the same cost, on the Python share of a pass
    return head + (f"The counts point the same way: {slow} makes {extra:.1%} more Python calls, which at its Python "
                   f"share of {share[slow]['python']:.0%} predicts about {predicted:.1%} more time, "
                   f"{predicted / (second - 1):.0%} of the {second - 1:.1%} measured; the rest is in what its calls "
                   "cost, which a count cannot see.")

# -- training, to show the three are real models -----------------------------------------------

def toy_data(n: int = 256, width: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and a smooth target (a fixed random linear map through tanh)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, width)).astype("float32")
    a = rng.normal(size=(width, width)).astype("float32")
    return x, np.tanh(x @ a)


def train(model: keras.Model, x, y, *, steps: int = 20, learning_rate: float = 1e-2) -> list[float]:
    """Full-batch Adam on mean squared error, one graph per step; returns the loss of each step."""
    optimizer = keras.optimizers.Adam(learning_rate)
    x, y = tf.constant(x), tf.constant(y)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return [float(step()) for _ in range(steps)]


# -- the variants the widget compares ------------------------------------------------------------

def graph_forward(model: keras.Model, jit_compile: bool = False) -> Callable:
    """The model traced once into a graph, so a call is one dispatch; ``jit_compile`` has XLA compile that graph."""
    return tf.function(model, jit_compile=jit_compile)


def variants(width: int = 4, activation: str = "tanh") -> dict[str, Callable[..., Callable]]:
    """Builders for ``SpeedupWidget``: each takes ``depth`` and ``batch`` and returns ``fn()``.

    The graph variants capture a Functional model once; the first call (tracing, and
    for XLA compiling) is reported apart by ``bench``. Each eager variant calls a model of
    its own, which no other variant traces, compiles or reads, so the three eager models
    are timed under the same conditions; the generated code and the graphs share one more.
    """
    models: dict[tuple[str, str, int], keras.Model] = {}

    def prepared(kind, depth, batch, user="eager"):
        if (kind, user, depth) not in models:  # one model per kind, depth and the variants that share it
            models[kind, user, depth] = build(kind, depth, width, activation)
        return models[kind, user, depth], tf.random.stateless_normal([batch, width], seed=[0, 0])

    def eager(kind):
        def builder(depth, batch):
            model, x = prepared(kind, depth, batch)
            return lambda: model(x)
        return builder

    def generated(depth, batch):
        model, x = prepared("functional", depth, batch, user="code and graphs")
        fn = generated_forward(model)
        return lambda: fn(x)

    def graph(jit_compile):
        def builder(depth, batch):
            model, x = prepared("functional", depth, batch, user="code and graphs")
            fn = graph_forward(model, jit_compile)
            return lambda: fn(x)
        return builder

    return {
        "Sequential, eager": eager("sequential"),
        "Functional, eager": eager("functional"),
        "subclassed, eager": eager("subclassed"),
        "generated ops, eager": generated,
        "tf.function": graph(False),
        "tf.function + XLA": graph(True),
    }
