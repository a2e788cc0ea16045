"""``get_config``/``from_config`` shared by ops, selections and fitnesses (what ``evo.saving`` writes), and
what lets an edit to a compiled part take effect: checked attributes and a part's fingerprint.

A part's config is its constructor's arguments, exact, read from the attributes named as the
parameters; ``type(part).from_config(part.get_config())`` is the same part. A class that stores a
parameter otherwise (or holds data the constructor derived) overrides ``get_config``.

The edit rule (``docs/engine.md``, "Editing a compiled model"): a part's parameter set in place
(``tournament.size = 6``, ``rastrigin.a = 1.0``) takes effect on the next run. A ``Checked``
attribute validates the new value when it is set; ``fingerprint`` is how a model keys its compiled
programs on its parts as they are when a run starts, so a changed constant compiles again.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import tensorflow as tf


class Checked:
    """A part's attribute checked by ``check(owner_name, value, name)`` (returning the value to hold)
    whenever it is set: at construction and in place afterwards, so a bad edit fails where it is made."""

    def __init__(self, check):
        self.check = check

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, part, owner=None) -> Any:
        if part is None:
            return self
        try:
            return part.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"{type(part).__name__} has no {self.name!r} yet") from None

    def __set__(self, part, value) -> None:
        part.__dict__[self.name] = self.check(type(part).__name__, value, self.name)


class Same:
    """An object in a program's key, compared by identity and held, so its id is never reused by another."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, Same) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def fingerprint(value) -> Any:
    """A hashable stand-in for ``value`` as a compiled program holds it: numbers and strings exactly
    (``repr``), NumPy arrays by their contents (they can change in place), tensors and other objects by
    identity (a tensor cannot change; replace an object rather than change it inside), and variables not
    at all (a program reads them when it runs)."""
    if isinstance(value, tf.Variable):
        return "variable"
    if isinstance(value, dict):
        return tuple(sorted((str(k), fingerprint(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(fingerprint(v) for v in value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if value is None or isinstance(value, (bool, int, float, str, np.generic)):
        return repr(value)
    return Same(value)


def state_fingerprint(part, skip: tuple[str, ...] = ()) -> tuple:
    """``fingerprint`` of every attribute ``part`` holds (its parameters and what it derived from them),
    but ``skip``: what a model's programs depend on, so that an edit in place compiles them again."""
    return fingerprint({k: v for k, v in vars(part).items() if k not in skip})


def constructor_config(part, skip: tuple[str, ...] = ("name",)) -> dict:
    """The constructor arguments of ``part`` read from its attributes, or a clear error naming the one
    it cannot read."""
    out = {}
    for p in list(inspect.signature(type(part).__init__).parameters.values())[1:]:
        if p.name in skip or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if not hasattr(part, p.name):
            raise TypeError(f"{type(part).__name__}.get_config: the constructor parameter {p.name!r} is not "
                            f"stored as self.{p.name}; store it so, or override get_config")
        out[p.name] = getattr(part, p.name)
    return out


class Configurable:
    """Mixin: ``get_config`` from the constructor's arguments and ``from_config`` calling the constructor."""

    def get_config(self) -> dict:
        """The constructor's arguments, exact, so that ``type(x).from_config(x.get_config())`` is the same."""
        return constructor_config(self)

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)
