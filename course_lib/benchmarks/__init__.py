"""The ``course bench`` commands. Each one is a function made by ``command`` (``benchmarks/command.py``, the
skeleton they share), which registers it by name when its module is imported; ``commands()`` imports them all.

To add a benchmark: write its module here (one function decorated with ``command("name", ...)``) and add the
module to the import line in ``commands``.
"""

from __future__ import annotations

from typing import Callable, Sequence

from course_lib.benchmarks.command import COMMANDS


def commands() -> dict[str, Callable[[Sequence[str] | None], int]]:
    """Every ``course bench`` command by name (importing a benchmark module registers its command)."""
    from course_lib.benchmarks import (  # noqa: F401
        eager_vs_graph,
        fit,
        ga,
        ga_replicas,
        gan,
        moo,
        neuro,
        nsga3,
        ops,
        precision,
        strategies,
        tfdata,
        tsp,
        xla,
    )

    return dict(COMMANDS)
