"""Continuous test functions with their usual search box: the engine's fitness and the half-width b of
[-b, b]^d (the minimum, 0, is at the origin), and populations uniform in the box."""

from __future__ import annotations

from course_lib import evo

FUNCTIONS = {"rastrigin": (evo.fitness.Rastrigin, 5.12), "ackley": (evo.fitness.Ackley, 32.768)}


def continuous_population(function: str, n: int, dims: int, seed: int = 0):
    """``n`` points uniform in the function's box."""
    bound = FUNCTIONS[function][1]
    return evo.population.uniform((n, dims), -bound, bound, seed=seed)
