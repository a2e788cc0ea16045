"""The symbolic side of the Keras-like API: Input, symbolic genomes, graph order.

Calling an op on a symbolic genome records a node; ``Model`` orders the nodes once
(topologically) and compiles one generation from that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

# the gene dtypes every op either handles or rejects up front (qint*, bool, complex, string: neither)
INTEGER_DTYPES = (tf.int8, tf.uint8, tf.int16, tf.uint16, tf.int32, tf.uint32, tf.int64, tf.uint64)
FLOAT_DTYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64)


def check_gene_dtype(who: str, dtype: tf.DType) -> None:
    """A clear error unless ``dtype`` is one of the integer or float gene dtypes."""
    if dtype not in INTEGER_DTYPES + FLOAT_DTYPES:
        names = ", ".join(d.name for d in INTEGER_DTYPES + FLOAT_DTYPES)
        raise TypeError(f"{who} needs integer or float genes ({names}), got dtype {dtype.name}")


def check_binary(op: str, genes) -> None:
    """A clear error unless every gene of ``genes`` is 0 or 1."""
    x = tf.convert_to_tensor(genes)
    if x.dtype.is_integer and not bool(tf.reduce_all((x == 0) | (x == 1))):
        bad = sorted({int(v) for v in np.unique(x.numpy()) if v not in (0, 1)})[:5]
        raise ValueError(f"{op} needs genes that are 0 or 1, got values {bad}; give it a 0/1 population "
                         "(evo.population.random_integers(shape, 0, 2)), or use RandomValueMutation for "
                         "genes of more values")


def check_fits(who: str, low: int, high: int, dtype: tf.DType) -> None:
    """A clear error unless every integer in [low, high) is a value of ``dtype`` (never wrap)."""
    if low < dtype.min or high - 1 > dtype.max:
        raise ValueError(f"{who}: values in [{low}, {high}) do not fit dtype {dtype.name} "
                         f"({dtype.min}..{dtype.max}); use a wider dtype or a narrower range")


@dataclass(frozen=True)
class GenomeSpec:
    """The shape of one genome (no population axis) and its dtype."""

    shape: tuple[int, ...]
    dtype: tf.DType

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        return f"{self.shape} {self.dtype.name}"


class SymbolicTensor:
    """A population of genomes flowing through the graph; ``node`` made it (None: Input)."""

    def __init__(self, spec: GenomeSpec, node: "Node | None", name: str):
        self.spec, self.node, self.name = spec, node, name

    @property
    def shape(self) -> tuple:
        return (None, *self.spec.shape)

    @property
    def dtype(self) -> tf.DType:
        return self.spec.dtype

    def __repr__(self) -> str:
        source = self.node.op.name if self.node else "Input"
        return f"<evo.SymbolicTensor {self.name!r} shape={self.shape} dtype={self.dtype.name} from {source}>"


@dataclass(eq=False)
class Node:
    """One op applied to symbolic inputs."""

    op: Any  # an evo.ops.Op (ops.base imports this module, so the name is not imported here)
    inputs: tuple[SymbolicTensor, ...]
    output: SymbolicTensor | None = None


def Input(shape, dtype="int32", name: str = "input") -> SymbolicTensor:  # noqa: N802 (Keras name)
    """One genome's shape and dtype, without the population axis, e.g. ``Input((1024,), "int32")``."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise ValueError(f"Input shape must be a non-empty tuple of positive ints (one genome, no "
                         f"population axis), e.g. (1024,) or (8, 8); got {shape!r}")
    try:
        dt = tf.as_dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"Input dtype {dtype!r} is not a TensorFlow dtype; use e.g. 'int32' or 'float32'") from exc
    check_gene_dtype("Input", dt)
    return SymbolicTensor(GenomeSpec(shape, dt), None, name)


def connect(op, inputs: tuple[SymbolicTensor, ...], spec: GenomeSpec) -> SymbolicTensor:
    """Record ``op(*inputs)`` as a node; return its symbolic output."""
    node = Node(op, inputs)
    node.output = SymbolicTensor(spec, node, op.name)
    return node.output


def topological_order(source: SymbolicTensor, outputs: list[SymbolicTensor]) -> list[Node]:
    """The nodes between ``source`` and ``outputs``, each after the nodes it reads."""
    order: list[Node] = []
    seen: set[int] = set()

    def visit(t: SymbolicTensor) -> None:
        if t.node is None:
            if t is not source:
                raise ValueError(f"the graph reads {t!r}, which is not the model's Input; "
                                 "a model has one Input: build every branch from it")
            return
        if id(t.node) in seen:
            return
        for parent in t.node.inputs:
            visit(parent)
        seen.add(id(t.node))
        order.append(t.node)

    for out in outputs:
        visit(out)
    return order
