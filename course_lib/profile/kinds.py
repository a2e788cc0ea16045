"""What each traced event is: a step, waiting for input, tracing, compiling, a function, eager dispatch, an op.

One rule set, used by the timeline's colours, the op table, the step breakdown and the counters, so they
agree. Op events have three shapes: ``name:Type`` kernels run by a graph executor (inside a
``tf.function``), ``EagerLocalExecute: Type`` for an op run eagerly, and events carrying an ``hlo_op``
statistic for the operations of an XLA executable; on a device plane every event of a stream is a kernel.
"""

from __future__ import annotations

import re

from course_lib import kernels
from course_lib.profile.trace import Event

KINDS = ("step", "input", "tracing", "compile", "py_function", "op", "function", "eager", "other")
COLOURS = {"step": "#dddddd", "input": "#d62728", "tracing": "#9467bd", "compile": "#8c564b",
           "py_function": "#e377c2", "op": "#1f77b4", "function": "#2ca02c", "eager": "#ff7f0e",
           "other": "#bbbbbb"}

PY_FUNCTION_TYPES = ("EagerPyFunc", "PyFunc", "PyFuncStateless")
_EAGER = "EagerLocalExecute: "
_COMPILE = re.compile(r"Compiler::RunBackend$")


def op_type(event: Event) -> str | None:
    """The op type of an op event (``MatMul``, ``Conv2D``, an XLA fusion's name), None for other events.

    The op, not the kernel's library name: a oneDNN ``_MklMatMul`` is a ``MatMul`` (``kernels.op_of``)."""
    name = kernel(event)
    return None if name is None else kernels.op_of(name)


def kernel(event: Event) -> str | None:
    """The kernel an op event ran, as this machine named it (``_MklMatMul`` where oneDNN ran it)."""
    if event.on_device:
        if not event.thread.startswith("Stream"):
            return None  # derived lines (TensorFlow Ops, XLA Ops, Steps) repeat the streams' kernels
        tf_op = str(event.stats.get("tf_op", ""))
        return tf_op.rsplit(":", 1)[-1] if tf_op else event.name
    if "hlo_op" in event.stats:
        return f"XLA {event.name}"
    if event.name.startswith(_EAGER):
        return None if event.name[len(_EAGER):].startswith("__inference") else event.name[len(_EAGER):]
    parts = kernels.split_event(event.name)
    if parts and (not event.display or event.display == parts[1]) and not parts[1].startswith("__inference"):
        return parts[1]
    return None


def op_name(event: Event) -> str:
    """The op's own name (``dense/MatMul``); eager ops have only their type."""
    if event.name.startswith(_EAGER):
        return f"eager {event.name[len(_EAGER):]}"
    return event.name.split(":", 1)[0] if ":" in event.name else event.name


def is_input(event: Event) -> bool:
    """Waiting for tf.data's next element (the consumer's side)."""
    return "IteratorGetNext" in event.name


def is_compile(event: Event) -> bool:
    return bool(_COMPILE.search(event.name))


def is_tracing(event: Event) -> bool:
    return event.name == "tf.function-graph_building"


def is_function_execution(event: Event) -> bool:
    """The eager runtime executing a traced function (``EagerLocalExecute: __inference_...``)."""
    return event.name.startswith(_EAGER + "__inference")


def is_kernel_run(event: Event) -> bool:
    """The eager runtime running a kernel it has ready; inside a function's execution, the graph running.

    What its parent function execution did before it is readying the graph: for a graph not seen before,
    optimising it (Grappler) and instantiating it (placing, partitioning, creating its executor and kernels),
    which no event of its own marks; for a known graph, a cache lookup.
    """
    return event.name == "EagerKernelExecute"


def is_function_call(event: Event) -> bool:
    """A call of a traced function: the Python ``tf.function`` call or its execution."""
    return ("tf_function_call" in event.stats or is_function_execution(event)
            or event.name == "ExecutorState::Process")


def is_eager_dispatch(event: Event) -> bool:
    return event.name == "EagerExecute" and not event.stats.get("is_func")


def kind(event: Event) -> str:
    """One of ``KINDS``, first match in that order."""
    if "step_num" in event.stats:
        return "step"
    if is_input(event) or event.name.startswith("Iterator::"):
        return "input"
    if is_tracing(event):
        return "tracing"
    if is_compile(event):
        return "compile"
    t = op_type(event)
    if t in PY_FUNCTION_TYPES:
        return "py_function"
    if t is not None:
        return "op"
    if is_function_call(event):
        return "function"
    if is_eager_dispatch(event) or event.name.startswith(("TFE_Py_FastPathExecute", "TFE_Py_Execute")):
        return "eager"
    return "other"
