"""The NumPy GAs that the engine's benchmark models (OneMax and Rastrigin, ``course_lib.lessons.evolution``)
are judged against in lectures 10-12 and ``course bench ga``: the same algorithm as those models,
vectorised over the population (no Python loop per individual), the bar the engine has to clear."""

from __future__ import annotations

import numpy as np


def random_bools(generator: np.random.Generator, n: int, length: int) -> np.ndarray:
    """Fair random bools from random bytes (8 per byte)."""
    return np.unpackbits(generator.integers(0, 256, (n, -(-length // 8)), dtype=np.uint8), axis=1,
                         count=length).view(bool)


def mates(generator: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """Each individual's mate: another individual, drawn per individual."""
    n = x.shape[0]
    return x[(np.arange(n) + generator.integers(1, n, n)) % n]


def tournament2(generator: np.random.Generator, score: np.ndarray) -> np.ndarray:
    """For each place, the index of the better (higher ``score``) of two individuals drawn at random."""
    e = generator.integers(0, score.shape[0], (score.shape[0], 2))
    return np.where(score[e[:, 0]] >= score[e[:, 1]], e[:, 0], e[:, 1])


def numpy_onemax(population, generations: int, rate: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """OneMax GA in NumPy: bit flips (sampled positions), uniform crossover, tournament of 2.

    Genes are bools (one byte each); the crossover blends with bitwise ops, which
    NumPy vectorises (``np.where`` on bools is several times slower).
    """
    generator = np.random.default_rng(seed)
    pop = np.asarray(population).astype(bool)
    n, length = pop.shape
    rows = np.arange(n)
    fit = np.count_nonzero(pop, axis=1)
    for _ in range(generations):
        counts = generator.binomial(length, rate, n)
        x = pop.copy()
        x[np.repeat(rows, counts), generator.integers(0, length, counts.sum())] ^= True
        children = x ^ ((x ^ mates(generator, x)) & random_bools(generator, n, length))
        fit = np.count_nonzero(children, axis=1)
        winners = tournament2(generator, fit)
        pop, fit = children[winners], fit[winners]
    return pop.astype(np.int32), fit


def numpy_rastrigin(population, generations: int, stddev: float, low: float, high: float,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rastrigin GA in NumPy (float32): Gaussian mutation with clipping, uniform crossover, tournament of 2."""
    generator = np.random.default_rng(seed)
    pop = np.asarray(population, dtype=np.float32)
    n, d = pop.shape
    fit = None
    for _ in range(generations):
        x = np.clip(pop + np.float32(stddev) * generator.standard_normal(pop.shape, dtype=np.float32), low, high)
        children = np.where(random_bools(generator, n, d), mates(generator, x), x)
        fit = 10.0 * d + (children * children - 10.0 * np.cos(np.float32(2 * np.pi) * children)).sum(axis=1)
        winners = tournament2(generator, -fit)
        pop, fit = children[winners], fit[winners]
    return pop, fit
