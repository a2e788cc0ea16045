"""An op's scalar knobs (rates, probabilities, spreads) as inputs of the compiled programs.

An op states what its program reads at run time (``Op.knobs(spec)``): the values, exact and in
the dtype they are used in, and the structure they imply (a bit mask's form, a table's length).
Inside a model's program (``as_inputs``) the values are read from variables that ``Model.program``
fills before each run, so another rate with the same structure runs the same program: no retrace.
Everywhere else (an op called on a population, a program replicated under a strategy, whose
replicas cannot read a variable of another device under XLA) they are constants.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

_INPUTS = contextvars.ContextVar("knobs_as_inputs", default=False)
# variables hold uint32 words as int32 (a dtype every device's variables hold), as the seed's key
_HELD = {np.dtype(np.uint32): np.int32}


class Knobs(NamedTuple):
    """What an op's program reads at run time: ``values`` by name, and the ``structure`` (hashable) that
    the values imply and the traced program depends on."""

    structure: tuple = ()
    values: dict[str, np.ndarray] = {}

    def key(self) -> tuple:
        """The structure and each value's name, shape and dtype: equal keys, one program."""
        return (self.structure, tuple((n, v.shape, v.dtype.str) for n, v in sorted(self.values.items())))


def merged(structure: tuple, **parts: Any) -> Knobs:
    """One op's knobs from plain values (converted with ``np.asarray``) and other ``Knobs`` (their values
    prefixed with the part's name and their structure appended)."""
    values: dict[str, np.ndarray] = {}
    for name, part in parts.items():
        if isinstance(part, Knobs):
            structure += ((name, part.structure),)
            values.update({f"{name}/{k}": v for k, v in part.values.items()})
        else:
            values[name] = np.asarray(part)
    return Knobs(structure, values)


@contextlib.contextmanager
def as_inputs(on: bool = True):
    """While tracing a model's program: knobs are read from their variables (``on``) or are constants."""
    token = _INPUTS.set(on)
    try:
        yield
    finally:
        _INPUTS.reset(token)


def constants(knobs: Knobs) -> dict[str, tf.Tensor]:
    """The knobs' values as constants of the program."""
    return {name: tf.constant(v) for name, v in knobs.values.items()}


def _store(owner) -> dict:
    return owner.__dict__.setdefault("_knob_variables", {})


def tensors(owner, spec, knobs: Knobs) -> dict[str, tf.Tensor]:
    """The values of ``owner``'s knobs for genomes ``spec``: variable reads inside a model's program,
    constants elsewhere."""
    if not _INPUTS.get():
        return constants(knobs)
    store, out = _store(owner), {}
    for name, v in knobs.values.items():
        var = store.get((spec, name, v.shape, v.dtype.str))
        if var is None:  # a program that skipped Model.program would bake a value a later run changes
            raise RuntimeError(f"{owner!r}: its knob {name!r} has no variable; a model's program reads knobs "
                               "only after Model.program has filled them")
        read = var.read_value()
        out[name] = tf.bitcast(read, tf.as_dtype(v.dtype)) if v.dtype in _HELD else read
    return out


def fill(owner, spec, knobs: Knobs) -> None:
    """Put the current values into ``owner``'s variables for genomes ``spec``, made on first use (eagerly,
    before a program that reads them is traced)."""
    store = _store(owner)
    for name, v in knobs.values.items():
        held = v.view(_HELD[v.dtype]) if v.dtype in _HELD else v
        slot = (spec, name, v.shape, v.dtype.str)
        if slot in store:
            store[slot].assign(held)
        else:
            store[slot] = tf.Variable(held, trainable=False, name=f"{getattr(owner, 'name', 'op')}/{name}")
