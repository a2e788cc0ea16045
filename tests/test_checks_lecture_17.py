"""Lecture 17's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import numpy as np

from course_lib import checks


def fail(k, **answer):
    return checks.failure("17", k, **answer)


def dominates(a, b):
    return bool(np.all(a <= b) and np.any(a < b))


def test_dominance():
    assert fail(1, dominates=dominates) is None
    assert "equal one" in fail(1, dominates=lambda a, b: bool(np.all(a <= b)))
    assert "trade-off" in fail(1, dominates=lambda a, b: bool(np.any(a < b)))
    assert "should be a function" in fail(1, dominates=None)


def hypervolume_2d(points, reference):
    p = np.minimum(np.asarray(points, float), reference)
    p = p[np.argsort(p[:, 0], kind="stable")]
    nxt = np.r_[p[1:, 0], reference[0]]
    return float(np.sum((nxt - p[:, 0]) * (reference[1] - np.minimum.accumulate(p[:, 1]))))


def without_running_minimum(points, reference):
    p = np.minimum(np.asarray(points, float), reference)
    p = p[np.argsort(p[:, 0], kind="stable")]
    nxt = np.r_[p[1:, 0], reference[0]]
    return float(np.sum((nxt - p[:, 0]) * (reference[1] - p[:, 1])))


def without_clipping(points, reference):
    p = np.asarray(points, float)
    p = p[np.argsort(p[:, 0], kind="stable")]
    nxt = np.r_[p[1:, 0], reference[0]]
    return float(np.sum((nxt - p[:, 0]) * (reference[1] - np.minimum.accumulate(p[:, 1]))))


def test_hypervolume():
    assert fail(2, hypervolume_2d=hypervolume_2d) is None
    assert "dominated point must add nothing" in fail(2, hypervolume_2d=without_running_minimum)
    assert "clip the points" in fail(2, hypervolume_2d=without_clipping)
    assert "should be a function" in fail(2, hypervolume_2d=3)


def igd(points, front):
    d = np.linalg.norm(front[:, None, :] - points[None, :, :], axis=2)
    return float(d.min(axis=1).mean())


def test_igd():
    assert fail(3, igd=igd) is None
    gd = "generational distance"
    assert gd in fail(3, igd=lambda p, f: float(np.linalg.norm(p[:, None] - f[None], axis=2).min(axis=1).mean()))
    assert "squared" in fail(3, igd=lambda p, f: float(np.square(np.linalg.norm(f[:, None] - p[None], axis=2))
                                                        .min(axis=1).mean()))
    assert "should be" in fail(3, igd=lambda p, f: float(np.linalg.norm(f[:, None] - p[None], axis=2).min(axis=1)
                                                          .max()))
    assert "should be a function" in fail(3, igd=None)
