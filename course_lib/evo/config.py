"""``get_config``/``from_config`` shared by ops, selections and fitnesses (what ``evo.saving`` writes).

A part's config is its constructor's arguments, exact, read from the attributes named as the
parameters; ``type(part).from_config(part.get_config())`` is the same part. A class that stores a
parameter otherwise (or holds data the constructor derived) overrides ``get_config``.
"""

from __future__ import annotations

import inspect


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
