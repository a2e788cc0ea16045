"""What ``evolve`` returns: the best genome, the history and the final population, as NumPy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course_lib.evo import pareto


@dataclass
class Result:
    """What ``evolve`` returns; arrays are NumPy, fitness in the problem's units.

    For a ``MultiObjective`` fitness ``fitness`` is (N, M + 1) (objectives, then violation);
    with several objectives ``best_fitness`` and history "best" are the hypervolume, and
    ``front`` holds the non-dominated feasible individuals.
    """

    best: np.ndarray
    best_fitness: float
    history: dict
    population: np.ndarray
    fitness: np.ndarray
    generations: int
    mode: str
    packed: bool
    stopped_early: bool
    # several objectives: the final population's non-dominated feasible individuals (``pareto.Front``)
    front: pareto.Front | None = None
    # this call only (a resumed run counts from the checkpoint): generations run, fitness evaluations
    # (scoring the first population, then every generation's children; a per_generation fitness scores
    # the parents again; mode='auto''s timing probes are not counted), the call's wall time, and the
    # wall time of the calls that traced (and under XLA compiled) a program, each including its run
    generations_run: int = 0
    evaluations: int = 0
    wall_time_s: float = 0.0
    compile_time_s: float = 0.0

    def __repr__(self) -> str:
        return (f"Result(generations={self.generations}, best_fitness={self.best_fitness:.6g}, "
                f"population={self.population.shape}, mode={self.mode!r}, packed={self.packed}, "
                f"stopped_early={self.stopped_early}, evaluations={self.evaluations})")


def of_state(fitness, fields: dict, history: dict, generations: int, mode: str, packed: bool,
             stopped_early: bool) -> Result:
    """The ``Result`` of a run's state ``fields`` (``state.arrays``' names) under the model's ``fitness``;
    ``evolve``, the replicated run and ask/tell all build theirs here."""
    pop, values = fields["population"], fields["fitness"]
    front = pareto.front(pop, values, fitness.signs, fitness.tracked) if fitness.objectives > 1 else None
    return Result(best=fields["best"], best_fitness=float(fields["best_fitness"]), history=history,
                  population=pop, fitness=values, generations=generations, mode=mode, packed=packed,
                  stopped_early=stopped_early, front=front)
