"""The 0/1 knapsack: seeded instances (uncorrelated or correlated values) and the classical answers:
dynamic programming (exact for integer weights), brute force (tiny instances) and the greedy ratio."""

from __future__ import annotations

import itertools

import numpy as np


def knapsack_instance(n: int = 30, seed: int = 0, correlated: bool = False, max_weight: int = 100) -> dict:
    """Integer weights in [1, max_weight], values, and capacity half the total weight.

    ``correlated``: value = weight + 10 (harder: every item has nearly the same value per
    unit weight, so greedy choices are poor guides).
    """
    if n < 1 or max_weight < 1:
        raise ValueError(f"knapsack_instance needs n >= 1 and max_weight >= 1, got n={n}, max_weight={max_weight}")
    rng = np.random.default_rng(seed)
    weights = rng.integers(1, max_weight + 1, n)
    values = weights + 10 if correlated else rng.integers(1, max_weight + 1, n)
    return {"weights": weights, "values": values, "capacity": int(weights.sum() // 2)}


def _items(weights, values, capacity) -> tuple[np.ndarray, np.ndarray, int]:
    w, v = np.asarray(weights), np.asarray(values)
    if w.shape != v.shape or w.ndim != 1:
        raise ValueError(f"weights and values must be 1-D and of the same length, got {w.shape} and {v.shape}")
    if not np.issubdtype(w.dtype, np.integer) or (w < 1).any():
        raise ValueError("knapsack_dp needs positive integer weights (it tables every capacity 0..C)")
    if int(capacity) != capacity or capacity < 0:
        raise ValueError(f"capacity must be a whole number >= 0, got {capacity!r}")
    return w.astype(np.int64), v.astype(np.float64), int(capacity)


def knapsack_dp(weights, values, capacity) -> tuple[float, np.ndarray]:
    """The exact optimum (value, 0/1 choice) by dynamic programming over capacities: O(n·C).

    Row i of the table holds the best value for every capacity using the first i items;
    the whole row is updated at once with NumPy.
    """
    w, v, c = _items(weights, values, capacity)
    best = np.zeros(c + 1)
    took = np.zeros((w.shape[0], c + 1), bool)
    for i, (wi, vi) in enumerate(zip(w, v)):
        if wi > c:
            continue
        with_item = best[:-wi] + vi
        took[i, wi:] = with_item > best[wi:]
        best[wi:] = np.maximum(best[wi:], with_item)
    choice = np.zeros(w.shape[0], np.int32)
    room = c
    for i in range(w.shape[0] - 1, -1, -1):
        if took[i, room]:
            choice[i], room = 1, room - w[i]
    return float(best[c]), choice


def knapsack_brute_force(weights, values, capacity) -> tuple[float, np.ndarray]:
    """The optimum by trying all 2ⁿ choices (n <= 20): the check on ``knapsack_dp``."""
    w, v, c = np.asarray(weights), np.asarray(values, dtype=np.float64), capacity
    if w.shape[0] > 20:
        raise ValueError(f"brute force tries 2**n choices; n={w.shape[0]} is too many (at most 20)")
    choices = np.array(list(itertools.product([0, 1], repeat=w.shape[0])), np.int32)
    value = np.where(choices @ w <= c, choices @ v, -np.inf)
    k = int(np.argmax(value))
    return float(value[k]), choices[k]


def knapsack_greedy(weights, values, capacity) -> tuple[float, np.ndarray]:
    """Baseline: take items by value per unit weight while they fit."""
    w, v = np.asarray(weights, dtype=np.float64), np.asarray(values, dtype=np.float64)
    choice = np.zeros(w.shape[0], np.int32)
    room = float(capacity)
    for i in np.argsort(-v / w, kind="stable"):
        if w[i] <= room:
            choice[i], room = 1, room - w[i]
    return float(choice @ v), choice


def knapsack_check(choice, weights, values, capacity) -> dict:
    """Value, weight and feasibility of a 0/1 choice."""
    x = np.asarray(choice)
    weight = float(x @ np.asarray(weights))
    return {"value": float(x @ np.asarray(values)), "weight": weight, "feasible": weight <= capacity}
