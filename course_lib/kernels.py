"""Kernel names as a machine prints them, mapped to the op they run: the one place that knows them.

TensorFlow names a kernel by the library that runs it. With oneDNN on (the default on x86 processors with
AVX-512, or with ``TF_ENABLE_ONEDNN_OPTS=1``) a graph's ``MatMul`` runs as ``_MklMatMul`` and a fused
convolution as ``_MklNativeFusedConv2D``; with it off the same ops run as ``MatMul`` and ``_FusedConv2D``;
XLA runs a whole cluster as one ``_XlaRun`` or ``XlaLaunch``. Traces, placement logs and op tables read
names through ``op_of`` so that no reader matches a name only one machine prints, and through
``library_of`` where the text says which library ran a kernel.
"""

from __future__ import annotations

import re

_ONEDNN = re.compile(r"^_Mkl(?:Native)?(?=[A-Z])")
# oneDNN fuses a bias gradient into the filter gradient; the kernel stands for the stock op.
_ONEDNN_ONLY = {"Conv2DBackpropFilterWithBias": "Conv2DBackpropFilter",
                "Conv3DBackpropFilterWithBias": "Conv3DBackpropFilterV2"}
_EVENT = re.compile(r"([^\s:]+):([A-Za-z_]\w*)")  # node names hold no colon or space
_XLA = {"_XlaRun", "_XlaCompile", "XlaLaunch", "XlaLaunchV2", "_XlaMerge"}


def op_of(kernel: str) -> str:
    """The op a kernel runs: ``_MklMatMul`` -> ``MatMul``, ``_MklNativeFusedConv2D`` -> ``_FusedConv2D``.

    Names of TensorFlow's own kernels, XLA's and unknown ones come back unchanged.
    """
    if not _ONEDNN.match(kernel):
        return kernel
    op = _ONEDNN.sub("", kernel)
    if op in _ONEDNN_ONLY:
        return _ONEDNN_ONLY[op]
    # TensorFlow's own fused kernels are internal ops (``_FusedMatMul``); the batch norms are public ops.
    return f"_{op}" if op.startswith("Fused") and not op.startswith("FusedBatchNorm") else op


def library_of(kernel: str) -> str:
    """Which library ran a kernel: ``"oneDNN"``, ``"XLA"`` or ``"TensorFlow"`` (its own kernels)."""
    if _ONEDNN.match(kernel):
        return "oneDNN"
    if kernel in _XLA or kernel.startswith("XLA "):  # the profiler names an XLA executable's ops "XLA fusion.2"
        return "XLA"
    return "TensorFlow"


def split_event(name: str) -> tuple[str, str] | None:
    """``"dense/MatMul:_MklMatMul"`` -> ``("dense/MatMul", "_MklMatMul")``: a graph kernel's event name
    (node name, kernel), or None for a name of another shape."""
    m = _EVENT.fullmatch(name)
    return (m.group(1), m.group(2)) if m else None


def runs_op(name: str, op: str) -> bool:
    """Whether a trace event runs ``op``: a graph kernel (``node:Kernel``), an eager op
    (``EagerLocalExecute: Op``) or a bare kernel name, under any library's name for it."""
    if name.startswith("EagerLocalExecute: "):
        name = name[len("EagerLocalExecute: "):]
    parts = split_event(name)
    return op_of(parts[1] if parts else name) == op
