"""The engine's door for code that takes a generation apart: lectures that time its parts one by one, and
exporters that hand its compiled program to another runtime.

``model.evolve`` hides how a run is prepared (the population checked, bit-packing decided) and what one
generation is made of (``executors.Generation``: the ops in order, the fitness, selection, the best so far).
``generation`` prepares a population exactly as ``evolve`` does and returns those named parts, so that a
lesson builds what it times from the engine's own pieces instead of importing the engine's insides; ``program``
returns the one-device program ``evolve`` would compile for the whole run. Nothing here changes a run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import tensorflow as tf

from course_lib.evo import engine, executors
from course_lib.evo.engine import BYTES_PER_GENE_IN_FLIGHT, device_memory
from course_lib.evo.executors import Generation, no_limits
from course_lib.evo.state import State

__all__ = ["Inspected", "generation", "program", "batch_rows", "State", "no_limits", "device_memory",
           "BYTES_PER_GENE_IN_FLIGHT"]


@dataclass(frozen=True)
class Inspected:
    """One population prepared as ``evolve`` prepares it, and the generation that evolves it.

    ``generation`` (``executors.Generation``): ``start(stored genes)`` the first state, ``step(state, i)``
    one generation, ``loop``; its parts ``apply(op, inputs, key, rows)``, ``evaluate(population)``,
    ``select(pool, pool_fitness, key, carried)``; ``stored``/``unpack`` between the genes and how the state
    holds them (packed or not); ``root`` the run's key. ``genes``: the checked population; ``packed``:
    whether the state holds it bit-packed.
    """

    generation: Generation
    genes: tf.Tensor
    packed: bool

    @property
    def individuals(self) -> int:
        return int(self.genes.shape[0])

    def without(self, op) -> Generation:
        """The same generation with ``op`` passing its first input through: what the rest costs without it."""
        gen = self.generation

        def apply(other, inputs, key, rows):
            return rows.take(inputs[0]) if other is op else gen.apply(other, inputs, key, rows)

        removed = copy.copy(gen)
        setattr(removed, "apply", apply)  # on this copy only: the generation evolve runs keeps its own
        return removed

    def without_selection(self) -> Generation:
        """The same generation keeping the children in order instead of selecting among them."""
        removed = copy.copy(self.generation)

        def select(pool, pool_fit, key, carried, blocks=1):
            return tf.range(removed.rows * blocks), carried

        setattr(removed, "select", select)
        return removed


def generation(model, population) -> Inspected:
    """``population`` checked against ``model`` and packed where ``evolve`` would pack it, with the one-device
    generation (no memory budget: every row in one batch) that evolves it."""
    genes = engine.checked_population(model, population)
    packed = engine.decide_packing(model, genes)
    return Inspected(Generation(model, packed, genes.shape[0], None), genes, packed)


def batch_rows(model, memory_budget: int, rows: int) -> int:
    """The rows per batch ``evolve`` gives ops and fitness under ``memory_budget`` bytes on the CPU target, for a
    population of ``rows`` (``rows`` itself where the budget holds them all)."""
    return engine.batch_rows(model, None, memory_budget, rows) or rows


def program(model, population, mode: str = "xla") -> tuple[executors.OneDeviceProgram, Inspected]:
    """The one-device program ``evolve`` compiles for ``population`` in ``mode`` (a whole run per call,
    no memory budget), and the prepared population it runs on."""
    inspected = generation(model, population)
    prog = executors.OneDevice().program(model, mode, inspected.packed, inspected.individuals, None,
                                         engine.capacity(engine.WHOLE_RUN_CHUNK))
    return prog, inspected
