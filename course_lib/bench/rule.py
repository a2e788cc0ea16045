"""The verdict rule as numbers: the constants it is stated in, a ratio's bootstrap interval, the widening for
repeated looks at the rounds, a noise floor from an A/A interval and the verdict from an interval and a floor.
Pure functions of times, kept in one place so that ``Comparison`` and every other reader (``ratio_interval``
for two solvers' results per seed) judge by the same rule."""

from __future__ import annotations

from typing import Sequence

import numpy as np

CONFIDENCE = 0.95        # the coverage of every ratio's interval, repeated looks at the rounds included
BOOTSTRAP_SAMPLES = 2000  # resamples of the rounds; enough for a stable 2.5th and 97.5th percentile
BOOTSTRAP_SEED = 0       # fixed, so the same timings always give the same interval and verdict
MIN_FLOOR = 1.05         # the smallest noise floor: a difference under 5% is never called, because two runs
                         # of a lecture on a shared machine drift by that much even when each run's A/A is tight;
                         # an interval within it of 1 is "no measurable difference" where it holds 1, and
                         # "too small to call" where it does not
MIN_ROUNDS = 5           # fewer rounds give no interval and no verdict: a bootstrap of a median over 3 rounds has
                         # 10 distinct resamples, and the point estimate sits on its own interval's edge
LOOK_BLOCKS = (1, 2, 4, 8)  # ``compare_timers`` judges the rounds after this many blocks of ``repeats`` rounds
                            # (how many of them it runs: ``rounds.MORE_ROUNDS`` and ``rounds.SETTLE_S``)
TOO_CLOSE = "too close to call"  # the verdict of a ratio still unsettled after the extra rounds
TOO_FEW = "too few rounds"       # the verdict of a pair with fewer than MIN_ROUNDS rounds: not judged at all
TOO_SMALL = "too small to call"  # the verdict of an interval within MIN_FLOOR of 1 that excludes 1
NEGLIGIBLE = ("no difference", TOO_SMALL)  # the settled verdicts that call no difference worth the name
# how a sentence writes each uncalled verdict before its ratio (``lectures`` reads them back the same way)
CALL_WORDS = {"no difference": "no measurable difference", TOO_SMALL: f"a difference {TOO_SMALL}", TOO_CLOSE: TOO_CLOSE}


def looks(repeats: int) -> int:
    """How many times ``compare_timers`` may judge rounds taken in blocks of ``repeats``: once after each of
    ``LOOK_BLOCKS`` that holds at least ``MIN_ROUNDS`` rounds (fewer are never judged, so they are no look).

    Stopping when a ratio looks settled and going on when it does not is repeated looking: each look is
    another chance for a 95% interval to miss, so the chance that the interval the method stops at misses
    is more than 5%. Each look's interval is therefore taken at ``1 - (1 - CONFIDENCE) / looks`` (Bonferroni):
    the chance that any of them misses, and so the one reported, stays under 5%.
    """
    return max(1, sum(1 for blocks in LOOK_BLOCKS if blocks * repeats >= MIN_ROUNDS))


def ratio_interval(over_s: Sequence[float], name_s: Sequence[float],
                   confidence: float = CONFIDENCE, paired: bool = True) -> tuple[float, float]:
    """The bootstrap interval (95% unless ``confidence`` says otherwise) of median(over_s) / median(name_s),
    deterministic given the values.

    The rounds are resampled with replacement; when both lists have one entry per round (the same
    length) and ``paired``, the same rounds are drawn for both, so a round that was slow for every variant
    moves numerator and denominator together, as it did when it was measured. ``paired=False`` resamples
    each side on its own: for values that share nothing but their index (two solvers' results per seed).
    """
    a, b = np.asarray(over_s, dtype=float), np.asarray(name_s, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("a ratio's interval needs at least one time on each side")
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    ia = rng.integers(0, a.size, (BOOTSTRAP_SAMPLES, a.size))
    ib = ia if paired and a.size == b.size else rng.integers(0, b.size, (BOOTSTRAP_SAMPLES, b.size))
    ratios = np.median(a[ia], axis=1) / np.median(b[ib], axis=1)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie between 0 and 1, got {confidence!r}")
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(ratios, [tail, 100 - tail])
    return float(lo), float(hi)


def floor_of(lo: float, hi: float) -> float:
    """A noise floor from an A/A interval: its farther end from 1, never less than ``MIN_FLOOR``."""
    return max(MIN_FLOOR, hi, 1 / lo)


def judge(lo: float, hi: float, floor: float) -> str:
    """``Comparison.call`` from a ratio's interval [lo, hi] and the noise floor."""
    if lo > floor:
        return "faster"
    if hi < 1 / floor:
        return "slower"
    if not 1 / MIN_FLOOR <= lo <= hi <= MIN_FLOOR:
        return TOO_CLOSE
    return "no difference" if lo <= 1 <= hi else TOO_SMALL
