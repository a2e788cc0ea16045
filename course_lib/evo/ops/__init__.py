"""Variation ops, one module per family; each module prints its speedup table with ``python -m``.

Names resolve lazily (PEP 562), so ``python -m course_lib.evo.ops.mutation`` runs the
module without it having been imported first by this package.
"""

import importlib

_MODULES = {
    "Op": "base",
    "Crossover": "crossover", "UniformCrossover": "crossover", "SinglePointCrossover": "crossover",
    "TwoPointCrossover": "crossover",
    "BitFlipMutation": "mutation", "RandomValueMutation": "mutation", "GaussianMutation": "mutation",
    "SwapMutation": "permutation", "InversionMutation": "permutation", "ShuffleMutation": "permutation",
    "OrderCrossover": "permutation",
    "TwoOpt": "local_search", "OrOpt": "local_search",
}
__all__ = list(_MODULES)


def __getattr__(name):
    if name not in _MODULES:
        raise AttributeError(f"module 'course_lib.evo.ops' has no attribute {name!r}")
    return getattr(importlib.import_module(f"course_lib.evo.ops.{_MODULES[name]}"), name)


def __dir__():
    return sorted(list(globals()) + __all__)
