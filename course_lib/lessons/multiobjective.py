"""Lecture 17's helpers: NSGA-II variants for the speed widget, and sentences read from runs."""

from __future__ import annotations

from collections.abc import Callable

from course_lib import bench, graphs
from course_lib.problems import multiobjective as mo

NUMPY = "NumPy NSGA-II"
GRAPH = "evo, graph"
XLA = "evo, XLA"


def speed_variants(generations: int) -> dict[str, Callable]:
    """Builders for ``SpeedupWidget``: ``population`` -> a callable running ``generations`` generations of
    NSGA-II on ZDT1 from a random start, in NumPy and in the engine (graph and XLA)."""
    problem = mo.zdt(1)

    def numpy_run(population: int):
        return lambda: mo.numpy_nsga2(problem, population, generations)

    def engine(mode: str):
        model = mo.real_coded_model(problem, mode=mode)

        def build(population: int):
            start = mo.start(problem, population)

            def run():
                # each population size is its own compiled program, which TensorFlow's retracing
                # warning would count as retraces of one function: kept out of the lecture's output
                with graphs.captured_tf_warnings():
                    return model.evolve(start, generations=generations)
            return run
        return build

    return {NUMPY: numpy_run, GRAPH: engine("graph"), XLA: engine("xla")}


def front_verdicts(runs: dict) -> bench.Verdicts:
    """One sentence per problem: the found front's hypervolume against the true front's.

    ``runs`` maps a ``Problem`` name to (problem, result)."""
    sentences = []
    for name, (problem, result) in runs.items():
        hv, true = result.front.hypervolume, problem.true_hypervolume
        sentences.append(f"{name}: {len(result.front)} non-dominated individuals after {result.generations} "
                         f"generations, hypervolume {hv:.4f} against the true front's {true:.4f} "
                         f"({100 * (1 - hv / true):.2f}% short).")
    return bench.Verdicts(sentences)
