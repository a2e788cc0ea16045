"""Variation ops, one module per family (``course bench ops --module NAME`` times one family).

A new op is one class in one module of this package: a public subclass of ``Op`` registers
itself (``base.REGISTRY``). ``registry()`` imports every module here and returns the table that
``evo.ops.<Name>``, ``course bench ops`` and the op tests read. Names resolve lazily (PEP 562):
importing the package imports no op module until a name is asked for, and asking for one name
imports the one module that defines it (found by reading the modules' source, not importing them).
"""

import ast
import functools
import importlib
import pathlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from course_lib.evo.ops.base import Op

# public base classes, the helpers every mating op draws its mates with (``partner_rows``) and reads its
# knobs for (``genome_spec``), and the descriptor of an op's runtime settings (``Knob``): not ops
_BASES = {"Op": "base", "Mating": "base", "Crossover": "crossover", "PermutationOp": "permutation",
          "partner_rows": "base", "genome_spec": "base", "Knob": "base"}


def registry() -> dict[str, type["Op"]]:
    """Every op class by name: this package's modules, imported, and any op defined elsewhere so far."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    from course_lib.evo.ops.base import REGISTRY

    return dict(REGISTRY)


@functools.cache
def _defined_in() -> dict[str, str]:
    """Each public class name of this package's modules -> its module, from their source."""
    out = {}
    for module in pkgutil.iter_modules(__path__):
        tree = ast.parse((pathlib.Path(__path__[0]) / f"{module.name}.py").read_text())
        out.update({node.name: module.name for node in tree.body
                    if isinstance(node, ast.ClassDef) and not node.name.startswith("_")})
    return out


def __getattr__(name):
    if name in _BASES:
        return getattr(importlib.import_module(f"{__name__}.{_BASES[name]}"), name)
    if name == "__all__":
        return [*_BASES, *registry()]
    module = _defined_in().get(name)
    if module is not None:
        found = importlib.import_module(f"{__name__}.{module}").__dict__.get(name)
        if found is not None:
            return found
    ops = registry()
    if name not in ops:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return ops[name]


def __dir__():
    return sorted([*globals(), *_BASES, *registry()])
