"""Eager execution against graphs: when ``tf.function`` pays, and how to look inside one.

Lectures 01 and 02 call this module. It holds the three measured demos of lecture 01
(many small operations, a training step, one big matmul) as builders for the speedup
widget, and the inspection tools of lecture 02: a trace counter, a concrete function's
signature and operations, op properties, AutoGraph's output, captured retracing
warnings, and the variable-creation rule of ``tf.function`` with the create-once pattern.

Why graphs help: in eager mode every operation is dispatched from Python, one at a
time, which costs microseconds per op whatever its size. A ``tf.function`` runs Python
once (the *trace*) to record a graph, and later calls hand the whole graph to the C++
runtime. The saving is per operation, so it is large for many small ops and invisible
for one big one.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from course_lib.arguments import whole

__all__ = [
    "small_ops", "small_ops_variants", "matmul_variants", "kernel_threads", "matmul_reading", "conv_model",
    "make_train_step", "train_step_variants", "eagerly", "save_and_load",
    "TraceCounter", "describe_args", "traces_per_call", "concrete", "signature", "operations",
    "op_properties", "op_types", "format_rows", "autograph_code", "captured_tf_warnings",
    "error_summary", "variable_in_function_error", "LazyScale", "retracing_variants",
]


# ---------------------------------------------------------------------------------------
# Lecture 01: eager against graph, measured
# ---------------------------------------------------------------------------------------

def small_ops(x: tf.Tensor, n_ops: int) -> tf.Tensor:
    """``n_ops`` cheap element-wise operations in a Python loop (two per step).

    On a small tensor each op's kernel takes far less time than dispatching it, so this
    is the function where a graph removes almost all of the cost.
    """
    for _ in range(n_ops // 2):
        x = x * 0.999 + 0.001
    return x


def small_ops_variants(elements: int = 16) -> dict[str, Callable[..., Callable[[], Any]]]:
    """Widget builders for ``small_ops`` on a vector of ``elements`` floats; knob: ``ops``."""
    whole("elements", elements, 1)

    def eager(ops: int):
        whole("ops", ops, 1)
        x = tf.ones([elements])
        return lambda: small_ops(x, ops)

    def graph(ops: int):
        whole("ops", ops, 1)
        x = tf.ones([elements])
        f = tf.function(lambda v: small_ops(v, ops))
        return lambda: f(x)

    return {"eager": eager, "tf.function": graph}


def matmul_variants() -> dict[str, Callable[..., Callable[[], Any]]]:
    """Widget builders for one ``n x n`` matmul, eager and as a ``tf.function``; knob: ``n``.

    One operation means one dispatch: all a graph can save is that one dispatch, on a
    kernel that runs for milliseconds.
    """

    def data(n):
        whole("n", n, 1)
        rng = np.random.default_rng(0)
        return (tf.constant(rng.standard_normal((n, n), dtype=np.float32)),
                tf.constant(rng.standard_normal((n, n), dtype=np.float32)))

    def eager(n: int):
        a, b = data(n)
        return lambda: tf.matmul(a, b)

    def graph(n: int):
        a, b = data(n)
        f = tf.function(tf.matmul)
        return lambda: f(a, b)

    def concrete(n: int):
        a, b = data(n)
        f = tf.function(tf.matmul).get_concrete_function(a, b)  # traced here: a call skips tf.function's lookup
        return lambda: f(a, b)

    return {"eager": eager, "tf.function": graph, "concrete function": concrete}


def kernel_threads(fn: Callable[[], Any], op_type: str, steps: int = 2) -> list[str]:
    """Where ``fn``'s ``op_type`` kernels ran, read from a profile of ``steps`` calls.

    An eager op runs inside its ``EagerLocalExecute`` on the thread that called it ("the calling
    thread"); a graph's executor runs a kernel where it schedules it, named here by the runtime's
    thread name without its number (``tf_Compute`` is the executor's pool). Kernels are matched by the
    op they run under any library's name for it (``_MklMatMul`` with oneDNN on, ``MatMul`` off)."""
    from course_lib import kernels, profile

    trace = profile.capture(fn, steps=steps)
    caller = trace.steps[0].thread
    return sorted({"the calling thread" if e.thread == caller else e.thread.split("/")[0]
                   for e in trace.events if kernels.runs_op(e.name, op_type)})


def _check_dispatch(dispatch_s: float) -> None:
    """The readings set a gap beside measured dispatches: a dispatch of 0 s or less was not measured."""
    if not dispatch_s > 0:
        raise ValueError(f"dispatch_s must be a measured time > 0 s, got {dispatch_s!r}")


def matmul_reading(result, dispatch_s: float, timed: Mapping[str, Callable[[], Any]]) -> str:
    """Why one big matmul ran as it did as a graph, read from ``matmul_variants``' comparison.

    Within about three dispatches the gap is all a graph can change; beyond that it is not dispatch, and
    the sentence names where each variant's MatMul kernel ran (``kernel_threads``, profiled only then).

    Args:
        result: the comparison of ``matmul_variants`` (baseline "eager", then "tf.function" and
            "concrete function").
        dispatch_s: one eager dispatch on this machine, measured (the small-ops demo's time per operation).
        timed: the callables the comparison timed, by variant name (``SpeedupWidget.timed``).
    """
    _check_dispatch(dispatch_s)
    dispatch_us = dispatch_s * 1e6
    gap_us = (result["eager"].median_s - result["tf.function"].median_s) * 1e6
    way = "faster" if gap_us > 0 else "slower"
    text = (f"One operation means one dispatch, about {dispatch_us:.0f} µs on this machine (measured with the "
            f"small operations above), against a kernel of {result['tf.function'].median_s * 1e3:.1f} ms. ")
    if not result.apart("tf.function"):
        return text + (f"The graph against eager: {result.uncalled('tf.function')}; a graph can save at most that "
                       "one dispatch.")
    if abs(gap_us) <= 3 * dispatch_us:
        return text + (f"The graph was {abs(gap_us):.0f} µs {way} per call, about one dispatch: that is all a "
                       "graph can change here.")
    ran = {name: kernel_threads(timed[name], "MatMul") for name in ("eager", "tf.function")}
    spec = tf.TensorSpec([None, None])
    ops = [op.type for op in tf.function(tf.matmul).get_concrete_function(spec, spec).graph.get_operations()]
    route = ("Nor is it `tf.function`'s Python call path: calling its concrete function directly skips it, "
             if not result.apart("concrete function", "tf.function") else
             "Calling its concrete function directly skips `tf.function`'s Python call path, ")
    return text + (
        f"The graph was {abs(gap_us) / 1e3:.2f} ms {way} per call, {abs(gap_us) / dispatch_us:.0f} times one "
        f"dispatch, so the difference is not dispatch. {route}and reads "
        f"*{result.verdict('concrete function', over='tf.function')}*. The graph holds nothing but the matmul "
        f"({', '.join(ops)}), and the profiler shows where each ran: the eager MatMul on "
        f"{' and '.join(ran['eager'])}, the graph's on {' and '.join(ran['tf.function'])}, the executor's thread "
        "pool. So a graph call hands its kernel to a pool thread and waits for it. This run does not time that "
        "hand-off apart from the kernel, so it cannot tell whether the gap is the route or the kernel itself "
        "running slower on the pool's thread. The variants took turns, one call each, so the machine's load hit "
        "all three alike.")


def dispatch_gap_reading(result, dispatch_s: float, dispatches: int, graph: str = "tf.function",
                         eager: str = "TF eager") -> str:
    """Whether the gap between ``eager`` and ``graph`` in ``result`` is the ``dispatches`` eager dispatches the
    graph removes (each ``dispatch_s``, measured), read from the ratio's interval: dispatch where even the
    interval's widest gap stays within twice their cost, not dispatch where even its narrowest lies beyond."""
    _check_dispatch(dispatch_s)
    graph_us, removed_us = result[graph].median_s * 1e6, dispatches * dispatch_s * 1e6
    gap_us = result[eager].median_s * 1e6 - graph_us
    # eager = graph x ratio, so the gap's range is graph x (ratio - 1) over the ratio's interval
    gap_lo_us, gap_hi_us = (graph_us * (r - 1) for r in result.interval(graph, eager))
    text = (f"Dispatching one operation from Python costs about {dispatch_s * 1e6:.0f} µs here (timed on 200 "
            f"operations on a 16-element vector, as lecture 01 does). The gap between {eager} and {graph}: ")
    cost = f"what the {dispatches} dispatches the graph removes cost ({removed_us:.0f} µs)"
    if not result.apart(graph, eager):
        return text + f"none this machine could measure; the {dispatches} dispatches the graph removes cost " \
                      f"{removed_us:.0f} µs."
    if gap_hi_us <= 2 * removed_us:
        return text + f"{abs(gap_us):.0f} µs per call, about {cost}: here the difference is dispatch."
    if gap_lo_us > 2 * removed_us:
        return text + (f"{abs(gap_us) / 1e3:.2f} ms per call (at least {gap_lo_us / 1e3:.2f} ms by the interval), "
                       f"more than twice {cost}, so most of it is not dispatch: see the mechanism below.")
    return text + (f"{abs(gap_us) / 1e3:.2f} ms per call, and its interval reaches from below to above twice {cost}: "
                   "whether dispatch accounts for most of it, this run cannot tell.")


def conv_model(image_size: int = 28, classes: int = 10):
    """A small convolutional classifier (two convolutions, pooling, one dense layer)."""
    import keras

    return keras.Sequential([
        keras.Input((image_size, image_size, 1)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(classes),
    ])


def make_train_step(model, optimizer, loss_fn) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """The textbook custom training step: forward pass under a tape, gradients, update.

    The same Python function runs eagerly or, wrapped in ``tf.function``, as one graph.
    """

    def train_step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return train_step


def _batch(batch: int, image_size: int, classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    images = rng.random((batch, image_size, image_size, 1), dtype=np.float32)
    labels = rng.integers(0, classes, size=batch).astype(np.int32)
    return tf.constant(images), tf.constant(labels)


def train_step_variants(image_size: int = 28, classes: int = 10) -> dict[str, Callable[..., Callable[[], Any]]]:
    """Widget builders for one training step of ``conv_model``; knob: ``batch``.

    Three ways to run the same step: the Python ``train_step`` eagerly, the same function
    under ``tf.function``, and Keras' ``train_on_batch`` (its own ``tf.function``). Keras 3
    compiles with XLA by default on this backend; we pass ``jit_compile=False`` so all three
    run the same kernels and differ only in how they are dispatched (XLA is lecture 07).
    Each builder makes its own model and optimizer, so no variant warms another up.
    """
    import keras

    def setup(batch):
        whole("batch", batch, 1)
        model = conv_model(image_size, classes)
        optimizer = keras.optimizers.SGD(0.01)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return model, optimizer, loss_fn, _batch(batch, image_size, classes)

    def eager(batch: int):
        model, optimizer, loss_fn, (x, y) = setup(batch)
        optimizer.build(model.trainable_variables)
        step = make_train_step(model, optimizer, loss_fn)
        return lambda: step(x, y)

    def graph(batch: int):
        model, optimizer, loss_fn, (x, y) = setup(batch)
        optimizer.build(model.trainable_variables)
        step = tf.function(make_train_step(model, optimizer, loss_fn))
        return lambda: step(x, y)

    def keras_batch(batch: int):
        model, optimizer, loss_fn, (x, y) = setup(batch)
        model.compile(optimizer=optimizer, loss=loss_fn, jit_compile=False)
        return lambda: model.train_on_batch(x, y)

    return {"eager train_step": eager, "tf.function train_step": graph, "train_on_batch": keras_batch}


@contextlib.contextmanager
def eagerly():
    """Run every ``tf.function`` eagerly inside the block (for debugging), then restore.

    ``tf.config.run_functions_eagerly`` is process-wide; this puts it back even when the
    block raises, so a debugging session cannot leave the whole notebook slow.
    """
    before = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(before)


def save_and_load(module: tf.Module, directory) -> tuple[Any, list[str]]:
    """Save ``module`` as a SavedModel in ``directory`` and load it back.

    Returns the loaded object and the files written (relative paths, sorted): the graph
    and the variables, which is all that TF Serving, the C++ API or TFLite need.
    The graphs come from the module's ``tf.function`` methods, so they need an
    ``input_signature`` (or a previous call) to be saved.
    """
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)  # not "INFO: Assets written to <path>"
    try:
        tf.saved_model.save(module, str(directory))
    finally:
        logger.setLevel(level)
    root = Path(directory)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    return tf.saved_model.load(str(directory)), files


# ---------------------------------------------------------------------------------------
# Lecture 02: tracing and concrete functions
# ---------------------------------------------------------------------------------------

def _spec(value) -> str:
    """``float32[2, None]`` for a tensor or spec (``[]`` a scalar, ``[?]`` unknown rank); else repr."""
    if isinstance(value, tf.TensorSpec) or tf.is_tensor(value):
        dims = "?" if value.shape.rank is None else ", ".join(str(d) for d in value.shape.as_list())
        return f"{value.dtype.name}[{dims}]"
    return repr(value)


def describe_args(args: Sequence = (), kwargs: Mapping | None = None) -> str:
    """A short, stable description of call arguments, e.g. ``(float32[2], 3)``.

    Tensors show dtype and shape, other values their ``repr``: exactly what decides
    whether a call retraces.
    """
    parts = [_spec(a) for a in args] + [f"{k}={_spec(v)}" for k, v in (kwargs or {}).items()]
    return "(" + ", ".join(parts) + ")"


class TraceCounter:
    """Count traces of a ``tf.function``, as a decorator or over a block.

    Decorator, placed *under* ``@tf.function``: it counts how often TensorFlow runs the
    Python body, which happens once per trace, and logs the arguments each trace saw::

        counter = TraceCounter()

        @tf.function
        @counter
        def f(x): ...

        f(1); f(2); f(tf.constant(1.0))
        counter.count, counter.log   # 3, ['(1)', '(2)', '(float32[])']

    Context manager around calls of a ``tf.function`` (or of a decorated one): it counts
    the traces made inside the block, using TensorFlow's own tracing count::

        with TraceCounter(f) as traces:
            f(tf.constant(2.0))
        traces.count                 # 0: same signature, no new trace

    Python side effects in the body (appending to ``log``) happen only at trace time;
    that is exactly what makes them a reliable trace counter.
    """

    def __init__(self, function=None):
        if function is not None and not hasattr(function, "experimental_get_tracing_count"):
            raise TypeError(f"TraceCounter(function) needs a tf.function to watch, got "
                            f"{type(function).__name__}; wrap it first: tf.function(fn)")
        self.function = function
        self.log: list[str] = []
        self._start = 0
        self._end: int | None = None

    def __call__(self, fn: Callable) -> Callable:
        if self.function is not None:
            raise TypeError("this TraceCounter watches a tf.function; use a fresh TraceCounter() "
                            "as the decorator")
        if not callable(fn):
            raise TypeError(f"TraceCounter decorates a function, got {type(fn).__name__}")

        @functools.wraps(fn)
        def traced(*args, **kwargs):
            self.log.append(describe_args(args, kwargs))
            return fn(*args, **kwargs)

        return traced

    def _total(self) -> int:
        if self.function is None:
            return len(self.log)
        return self.function.experimental_get_tracing_count()

    @property
    def count(self) -> int:
        """Traces since the start (or since entering the ``with`` block, frozen at its end)."""
        return (self._total() if self._end is None else self._end) - self._start

    def __enter__(self) -> "TraceCounter":
        self._start, self._end = self._total(), None
        return self

    def __exit__(self, *exc) -> None:
        self._end = self._total()

    def __repr__(self) -> str:
        return f"TraceCounter(count={self.count})"


def traces_per_call(function, calls: Iterable[Sequence]) -> list[dict]:
    """Call the ``tf.function`` once per argument tuple; say which calls traced.

    Returns one row per call: the arguments, whether that call made a new trace, and the
    function's traces so far. This is the table that shows "one trace per new signature,
    many executions per trace".
    """
    rows = []
    with TraceCounter(function) as total:
        for i, args in enumerate(calls, 1):
            args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
            before = total.count
            function(*args)
            rows.append({"call": i, "arguments": describe_args(args),
                         "traced": "yes" if total.count > before else "no", "traces so far": total.count})
    return rows


def concrete(function, *args, **kwargs):
    """The concrete function (one traced graph) of ``function`` for these arguments.

    Accepts a ``tf.function`` (traced for ``args``, which may be ``tf.TensorSpec``) or a
    concrete function (returned as is).
    """
    if hasattr(function, "graph") and hasattr(function, "structured_input_signature"):
        return function
    if not hasattr(function, "get_concrete_function"):
        raise TypeError(f"expected a tf.function or a concrete function, got {type(function).__name__}; "
                        "wrap a Python function with tf.function first")
    return function.get_concrete_function(*args, **kwargs)


def signature(function, *args, **kwargs) -> str:
    """Inputs, outputs and captures of a concrete function, as stable text.

    Unlike ``pretty_printed_signature`` it prints no object ids, so it can be checked.
    """
    cf = concrete(function, *args, **kwargs)
    pos, kw = cf.structured_input_signature
    lines = ["inputs:"]
    params = [(getattr(s, "name", None) or f"arg{i}", s) for i, s in enumerate(pos)] + sorted(kw.items())
    lines += [f"  {name}: {_spec(spec)}" for name, spec in params] or ["  (none)"]
    outputs = tf.nest.flatten(cf.structured_outputs)
    lines.append("outputs:")
    lines += [f"  {_spec(t)}" for t in outputs] or ["  (none)"]
    lines.append(f"captured tensors: {len(cf.captured_inputs)}")
    return "\n".join(lines)


def operations(function, *args, **kwargs) -> list[dict]:
    """The operations of a concrete function's graph, in order: name, type, inputs.

    Inputs arrive as ``Placeholder`` ops named after the arguments, and each output
    leaves through an ``Identity`` op that tf.function adds.
    """
    cf = concrete(function, *args, **kwargs)
    return [{"name": op.name, "type": op.type, "inputs": ", ".join(t.name for t in op.inputs) or "-"}
            for op in cf.graph.get_operations()]


def _attr_value(attr) -> Any:
    kind = attr.WhichOneof("value")
    if kind == "type":
        return tf.dtypes.as_dtype(attr.type).name
    if kind == "shape":
        return str(tf.TensorShape(attr.shape))
    if kind == "tensor":
        return tf.make_ndarray(attr.tensor).tolist()
    if kind == "s":
        return attr.s.decode(errors="replace")
    if kind == "list":
        return [str(v) for v in (attr.list.i or attr.list.s or attr.list.f or [])]
    if kind == "func":
        return f"function {attr.func.name}"
    return getattr(attr, kind) if kind else None


def op_properties(op: tf.Operation) -> dict:
    """What the graph records about one operation: type, inputs, outputs, device, attributes."""
    if not isinstance(op, tf.Operation):
        raise TypeError(f"expected a tf.Operation (from graph.get_operations()), got {type(op).__name__}")
    return {
        "name": op.name,
        "type": op.type,
        "inputs": [f"{t.name} {_spec(t)}" for t in op.inputs],
        "outputs": [f"{t.name} {_spec(t)}" for t in op.outputs],
        "device": op.device or "(not pinned: the placer chooses at run time)",
        "attributes": {k: _attr_value(op.node_def.attr[k]) for k in sorted(op.node_def.attr)
                       if not k.startswith("_")},
    }


def op_types(function, *args, nested: bool = False, **kwargs) -> dict[str, int]:
    """How many ops of each type the graph holds, sorted by type.

    With ``nested=True`` it also counts the ops inside the bodies of control flow
    (``While``/``If`` keep their branches and loop bodies as separate functions).
    """
    cf = concrete(function, *args, **kwargs)
    counts = Counter(op.type for op in cf.graph.get_operations())
    if nested:
        for fdef in cf.graph.as_graph_def().library.function:
            counts.update(node.op for node in fdef.node_def)
    return dict(sorted(counts.items()))


def format_rows(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows of equal keys as a fixed-width text table (stable, so notebooks can check it)."""
    rows = list(rows)
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    cells = [[str(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]

    def line(values):
        return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    return "\n".join([line(cols), line(["-" * w for w in widths])] + [line(row) for row in cells])


# ---------------------------------------------------------------------------------------
# Lecture 02: AutoGraph, warnings, variables
# ---------------------------------------------------------------------------------------

def autograph_code(fn: Callable) -> str:
    """The Python that AutoGraph generates from ``fn`` (what tf.function actually traces)."""
    fn = getattr(fn, "python_function", fn)
    return tf.autograph.to_code(fn)


_ADDRESS = re.compile(r"<function (\S+) at 0x[0-9a-fA-F]+>")


@contextlib.contextmanager
def captured_tf_warnings():
    """Collect TensorFlow's Python warnings (retracing warnings among them) in a list.

    Inside the block they go to the list instead of stderr; function addresses are
    replaced by names so the text is the same on every run.
    """
    messages: list[str] = []

    class ToList(logging.Handler):
        def emit(self, record):
            messages.append(_ADDRESS.sub(r"\1", record.getMessage()))

    logger = tf.get_logger()
    handler, saved = ToList(level=logging.WARNING), logger.propagate
    old_handlers = logger.handlers[:]
    logger.handlers = [handler]
    logger.propagate = False
    try:
        yield messages
    finally:
        logger.handlers, logger.propagate = old_handlers, saved


def error_summary(exc: BaseException) -> str:
    """``Type: message`` of an error, without the traceback TensorFlow puts in front.

    Errors raised inside a tf.function carry an ``in user code:`` preamble with file
    paths; the last line naming an error is the part worth reading.
    """
    text = str(exc).strip()
    found = re.findall(r"^\s*(\w+(?:Error|Exception)): (.+)$", text, flags=re.MULTILINE)
    kind, message = found[-1] if found else (type(exc).__name__, text.splitlines()[0] if text else "")
    # argument-binding errors go on to print the arguments' values; the reason comes first
    return f"{kind}: {message.split(' Received args:')[0].strip()}"


def variable_in_function_error() -> str:
    """Create a ``tf.Variable`` on every call of a tf.function; return the error it raises.

    tf.function traces a function that creates variables twice on its first call and
    requires the second trace to create none; a body that always creates one fails.
    """

    @tf.function
    def scale(x):
        v = tf.Variable(2.0)
        return v * x

    try:
        scale(tf.constant(1.0))
    except ValueError as exc:
        return error_summary(exc)
    raise AssertionError("TensorFlow accepted a variable created on every call; this TF version "
                         "changed the rule the lecture explains")


class LazyScale(tf.Module):
    """Multiply by a learnable scale, creating the variable on the first trace only.

    The create-once pattern: keep the variable on an object that outlives the traces,
    create it when it does not exist yet, and reuse it on every later trace.
    """

    def __init__(self, initial: float = 2.0, name: str | None = None):
        super().__init__(name=name)
        self.initial = float(initial)
        self.scale: tf.Variable | None = None

    @tf.function
    def __call__(self, x):
        if self.scale is None:
            self.scale = tf.Variable(self.initial, name="scale")
        return self.scale * x


def retracing_variants() -> dict[str, Callable[..., Callable[[], Any]]]:
    """Widget builders: the same function called with a new Python number or a new tensor each call.

    A Python number is part of the signature, so every new value retraces; a tensor of
    the same dtype and shape reuses the one graph. Knob: ``ops`` (graph size, so trace cost).
    """

    def build(ops: int, as_tensor: bool):
        whole("ops", ops, 1)
        f = tf.function(lambda x: small_ops(tf.fill([4], tf.cast(x, tf.float32)), ops))
        counter = iter(range(10**9))
        run = (lambda: f(tf.constant(next(counter)))) if as_tensor else (lambda: f(next(counter)))
        run.function = f  # so a reader can count the traces afterwards
        return run

    return {"tensor argument": lambda ops: build(ops, True),
            "Python number (retraces)": lambda ops: build(ops, False)}
