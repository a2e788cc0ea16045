"""Variation ops, one module per family (``course bench ops --module NAME`` times one family).

A new op is one class in one module of this package: a public subclass of ``Op`` registers
itself (``base.REGISTRY``). ``registry()`` imports every module here and returns the table that
``evo.ops.<Name>``, ``course bench ops`` and the op tests read. Names resolve lazily (PEP 562):
importing the package imports no op module until a name is asked for.
"""

import importlib
import pkgutil

# public base classes, and the helper every mating op draws its mates with (``partner_rows``): not ops
_BASES = {"Op": "base", "Mating": "base", "Crossover": "crossover", "PermutationOp": "permutation",
          "partner_rows": "base"}


def registry() -> dict[str, type]:
    """Every op class by name: this package's modules, imported, and any op defined elsewhere so far."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    from course_lib.evo.ops.base import REGISTRY

    return dict(REGISTRY)


def __getattr__(name):
    if name in _BASES:
        return getattr(importlib.import_module(f"{__name__}.{_BASES[name]}"), name)
    if name == "__all__":
        return [*_BASES, *registry()]
    ops = registry()
    if name not in ops:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return ops[name]


def __dir__():
    return sorted([*globals(), *_BASES, *registry()])
