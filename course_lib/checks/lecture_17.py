"""Checkers for lecture 17, many objectives: Pareto dominance, the hypervolume of a 2-D front, and IGD."""

from __future__ import annotations

import numpy as np

from course_lib.checks import exercise
from course_lib.evo import pareto

_DOMINANCE_CASES = [  # (a, b, a dominates b), both objectives minimised
    ((1.0, 2.0), (2.0, 3.0), True),
    ((1.0, 3.0), (1.0, 4.0), True),
    ((1.0, 2.0), (1.0, 2.0), False),
    ((1.0, 4.0), (2.0, 3.0), False),
    ((2.0, 3.0), (1.0, 2.0), False),
    ((0.0, 0.0, 1.0), (0.0, 0.0, 2.0), True),
    ((0.0, 1.0, 1.0), (1.0, 0.0, 1.0), False),
]


@exercise("17", 1, "Pareto dominance",
          "a dominates b when a is no worse in every objective and strictly better in at least one.",
          "Compare the two vectors element by element; NumPy's reductions say whether a condition holds "
          "for every element or for at least one.")
def dominance(dominates):
    assert callable(dominates), f"dominates should be a function (a, b) -> bool, got {type(dominates).__name__}"
    for a, b, want in _DOMINANCE_CASES:
        got = dominates(np.array(a), np.array(b))
        assert isinstance(got, (bool, np.bool_)), f"dominates should return True or False, got {got!r}"
        if a == b and got:
            raise AssertionError(f"dominates({a}, {b}) is True, but a point does not dominate an equal one: "
                                 "it must be strictly better in at least one objective")
        if got != want:
            raise AssertionError(f"dominates({a}, {b}) is {bool(got)}, should be {want}"
                                 + (" (a trade-off: each is better in one objective)" if not want and
                                    any(x < y for x, y in zip(a, b)) else ""))


def _hypervolume_cases():
    r = np.random.default_rng(17)
    cases = [np.array([[0.2, 0.8], [0.5, 0.5], [0.8, 0.2]]),
             np.array([[0.2, 0.8], [0.3, 0.9], [0.5, 0.5]]),  # a dominated point
             np.array([[0.4, 0.6], [1.5, 0.2]]),  # a point beyond the reference
             r.random((20, 2))]
    return cases


@exercise("17", 2, "the hypervolume of a 2-D front",
          "Draw a few points and the reference: the dominated area is a staircase, which cuts into one "
          "rectangle per point once the points are in order along one objective.",
          "Two cases need care: a point that another point dominates, and a point beyond the reference; "
          "neither may add area.")
def hypervolume(hypervolume_2d):
    assert callable(hypervolume_2d), \
        f"hypervolume_2d should be a function (points, reference) -> float, got {type(hypervolume_2d).__name__}"
    reference = (1.0, 1.0)
    for points in _hypervolume_cases():
        want = float(pareto.hypervolume(points, reference, (-1.0, -1.0)))
        got = hypervolume_2d(points.copy(), reference)
        assert np.isscalar(got) or np.ndim(got) == 0, f"hypervolume_2d should return one number, got {got!r}"
        if len(points) == 3 and np.allclose(points[1], [0.3, 0.9]) and abs(float(got) - want) > 1e-4:
            raise AssertionError(f"{float(got):.4f} for a front with a dominated point, should be {want:.4f}: "
                                 "a dominated point must add nothing")
        if np.any(points > 1) and abs(float(got) - want) > 1e-4:
            raise AssertionError(f"{float(got):.4f} where a point lies beyond the reference, should be {want:.4f}: "
                                 "clip the points to the reference")
        assert abs(float(got) - want) <= 1e-4 * want, \
            f"hypervolume_2d gives {float(got):.6g} for {len(points)} points; it should be {want:.6g}"


def _igd_cases():
    r = np.random.default_rng(170)
    front = np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]])
    return [(np.array([[0.0, 1.0], [1.0, 0.0]]), front),  # the middle of the front missed
            (np.array([[0.1, 1.1], [0.6, 0.6], [1.1, 0.1], [3.0, 3.0]]), front),  # a far point, nearest to none
            (r.random((30, 4)), r.random((12, 4)))]


@exercise("17", 3, "IGD: how far a known front is from the points found",
          "IGD goes from the true front to the points: for each point of the front, the distance to the "
          "nearest point found, averaged over the front.",
          "A (K, P) matrix of distances between the front's points and the found points gives it in two "
          "reductions: a minimum over the found points, then a mean over the front.")
def igd(igd):
    assert callable(igd), f"igd should be a function (points, front) -> float, got {type(igd).__name__}"
    for points, front in _igd_cases():
        m = points.shape[1]
        want = pareto.igd(points, pareto.ReferenceFront(tuple(map(tuple, front))), (-1.0,) * m)
        got = igd(points.copy(), front.copy())
        assert np.isscalar(got) or np.ndim(got) == 0, f"igd should return one number, got {got!r}"
        got = float(got)
        d = np.linalg.norm(points[:, None, :] - front[None, :, :], axis=2)  # (P, K)
        if abs(got - want) > 1e-5 * max(1.0, want):
            if abs(got - float(d.min(axis=1).mean())) <= 1e-6:
                raise AssertionError(f"{got:.4f} is the generational distance (from each point found to the front); "
                                     f"IGD goes the other way, from each front point to the points found: {want:.4f}")
            if abs(got - float(np.square(d).min(axis=0).mean())) <= 1e-6:
                raise AssertionError(f"{got:.4f} averages squared distances; take the square root first: {want:.4f}")
            raise AssertionError(f"igd gives {got:.6g} for {len(points)} points and a front of {len(front)}; "
                                 f"it should be {want:.6g}")
