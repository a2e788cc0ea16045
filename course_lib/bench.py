"""Timing that can be trusted.

Every number the course shows comes from here. The rules (docs/performance.md, "How a number is taken"):
the first call is timed on its own (it pays for tracing or compilation), results are
forced to host memory inside the timed region, each variant is repeated and reported
as a median with its spread, and variants are compared as ratios measured in the same
run, next to a description of the machine.

A verdict ("faster", "slower", "no measurable difference") is called the same way everywhere
(``Comparison.verdict``): the variants run in interleaved rounds, the baseline twice per round
(an A/A pair: the same code against itself), a bootstrap over the rounds gives each ratio a 95%
interval, and the A/A pair's interval gives the noise floor of this machine at this moment. A pair of two
other variants is judged on its own floor, the larger of the two variants' own (each against itself in
adjacent rounds), not on the baseline's. A difference is called only when the ratio's whole interval lies
outside the floor, and "no measurable difference" only when it holds 1 and lies within ``MIN_FLOOR`` (1.05x)
of 1, the least floor: a wide floor can hide a difference that a quieter re-run calls, so it never rules one
out. An interval within that least floor that excludes 1 measured a difference too small to call
(``TOO_SMALL``): the words say a difference was measured, not that there was none. Any other interval,
still so after more rounds (as many as a few seconds buy), is "too close to call"; a re-run can move such a
ratio to either side, and then it contradicts neither of the other two verdicts. Fewer than
``MIN_ROUNDS`` rounds give no interval and no verdict. Adding rounds while a ratio is unsettled is repeated
looking, so each look's interval is widened (``looks``) to keep the 95% for the look the rounds stop at.
Every table and sentence writes a ratio and its interval one way: "1.17x slower (95% interval 1.07–1.34x)".
"""

from __future__ import annotations

import html
import json
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from course_lib.host import machine, machine_summary
from course_lib.tables import text_table

__all__ = [
    "BenchError",
    "Timing",
    "Comparison",
    "force",
    "measure",
    "compare",
    "compare_timers",
    "round_order",
    "two_readings",
    "interval_bounds",
    "interval_text",
]


class BenchError(RuntimeError):
    """A variant could not be measured; the message names it and the cause."""


def force(value: Any) -> Any:
    """Bring a result to host memory so its computation is finished.

    TensorFlow may run work asynchronously (on a GPU, or in parallel threads);
    ``.numpy()`` waits for it. Nested lists, tuples and dicts are forced leaf by leaf.
    """
    if hasattr(value, "numpy") and callable(value.numpy):
        return value.numpy()
    if isinstance(value, dict):
        return {k: force(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [force(v) for v in value]
    return value


@dataclass
class Timing:
    """One variant's measurement, in seconds per call."""

    name: str
    first_call_s: float
    times_s: list[float]
    number: int

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def spread_s(self) -> tuple[float, float]:
        """Lower and upper quartile of the per-call times (min and max when few repeats)."""
        ts = sorted(self.times_s)
        if len(ts) < 4:
            return ts[0], ts[-1]
        q = statistics.quantiles(ts, n=4)
        return q[0], q[2]

    @property
    def relative_spread(self) -> float:
        lo, hi = self.spread_s
        return (hi - lo) / self.median_s if self.median_s > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(median_s=self.median_s, spread_s=list(self.spread_s))
        return d


def _check_repeats(repeats: int, warmup: int) -> None:
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number >= 1, got {repeats!r}: "
                         "a median needs at least one timed repeat")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a whole number >= 0, got {warmup!r}")


def _check_callable(fn, name: str) -> None:
    if not callable(fn):
        raise TypeError(f"variant {name!r} is not callable (got {type(fn).__name__}); "
                        "pass a zero-argument function, e.g. lambda: f(x)")


def _call(fn: Callable[[], Any], name: str) -> float:
    start = time.perf_counter()
    try:
        force(fn())
    except Exception as exc:  # re-raised with the variant's name
        raise BenchError(f"variant {name!r} raised {type(exc).__name__}: {exc}") from exc
    return time.perf_counter() - start


def measure(fn: Callable[[], Any], *, name: str = "fn", repeats: int = 7, warmup: int = 1,
            number: int | None = None, min_repeat_s: float = 0.02) -> Timing:
    """Time ``fn()`` the trustworthy way.

    The first call is timed alone and reported as ``first_call_s`` (tracing, compiling,
    allocating). ``warmup`` further untimed calls follow. Then ``repeats`` timed repeats of
    ``number`` calls each; when ``number`` is None it is chosen so one repeat lasts at least
    ``min_repeat_s``, which keeps timer resolution out of very short calls.
    """
    _check_callable(fn, name)
    _check_repeats(repeats, warmup)
    if number is not None and (not isinstance(number, int) or number < 1):
        raise ValueError(f"number must be a whole number >= 1 or None, got {number!r}")
    first = _call(fn, name)
    for _ in range(warmup):
        _call(fn, name)
    if number is None:
        one = max(_call(fn, name), 1e-7)
        number = max(1, min(10_000, math.ceil(min_repeat_s / one)))
    times = []
    for _ in range(repeats):
        total = sum(_call(fn, name) for _ in range(number))
        times.append(total / number)
    return Timing(name=name, first_call_s=first, times_s=times, number=number)


CONFIDENCE = 0.95        # the coverage of every ratio's interval, repeated looks at the rounds included
BOOTSTRAP_SAMPLES = 2000  # resamples of the rounds; enough for a stable 2.5th and 97.5th percentile
BOOTSTRAP_SEED = 0       # fixed, so the same timings always give the same interval and verdict
MIN_FLOOR = 1.05         # the smallest noise floor: a difference under 5% is never called, because two runs
                         # of a lecture on a shared machine drift by that much even when each run's A/A is tight;
                         # an interval within it of 1 is "no measurable difference" where it holds 1, and
                         # "too small to call" where it does not
MIN_ROUNDS = 5           # fewer rounds give no interval and no verdict: a bootstrap of a median over 3 rounds has
                         # 10 distinct resamples, and the point estimate sits on its own interval's edge
TWIN = "A/A"             # the name of the baseline's second copy, timed in the same rounds
LOOK_BLOCKS = (1, 2, 4, 8)  # ``compare_timers`` judges the rounds after this many blocks of ``repeats`` rounds
MORE_ROUNDS = 2          # and always runs this many blocks while a ratio is unsettled; beyond them, more only
SETTLE_S = 10.0          # while its rounds so far took under this many seconds (few rounds give lumpy intervals;
MOST_ROUNDS = LOOK_BLOCKS[-1]  # cheap ones can afford more), up to this many blocks
ROUND_SEED = 0           # seeds the order of the variants in each round (``round_order``)
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


def round_order(names: Sequence[str], r: int) -> list[str]:
    """The order round ``r`` runs ``names`` in (the baseline's twin among them): a shuffle seeded by
    ``ROUND_SEED`` and the round's number, so the same rounds always run in the same order.

    A call can be slower right after another variant (its threads still spinning, its data in the caches).
    A fixed order puts each variant after the same neighbour in most rounds, so that neighbour's cost lands on
    one side of a ratio, the A/A pair's included; a shuffled order spreads it over every variant and every
    round, where the bootstrap sees it as noise.
    """
    rng = np.random.default_rng([ROUND_SEED, r])
    return [names[i] for i in rng.permutation(len(names))]


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


@dataclass
class Comparison:
    """Several variants measured in one run, with ratios against a baseline and verdicts on them.

    ``speedup`` of a variant is baseline median / variant median: above 1 is faster. ``twin`` is the
    baseline timed a second time in the same rounds (``compare`` adds it); its ratio to the baseline
    sets ``noise_floor``, the floor of every pair with the baseline in it. A pair of two other variants is
    judged on a floor of its own (``floor``), so a noisy baseline does not decide it. ``looks`` is how many
    times the rounds were judged on the way (``looks``; 1 for timings put together by hand): each interval
    is widened for them. Renders as a table in a notebook (``_repr_html_``) and exports with
    ``to_dict``/``to_json``.
    """

    timings: list[Timing]
    baseline: str
    machine: dict = field(default_factory=dict)
    title: str = ""
    params: dict = field(default_factory=dict)
    twin: Timing | None = None
    repeats: int | None = None  # the rounds asked for; ``rounds`` may be a multiple of it (None: put together by hand)
    looks: int = 1  # how many times the rounds could be judged while they were taken (``looks(repeats)``)

    COLUMNS = ("variant", "first call (ms)", "median (ms)", "spread (ms)", "against the baseline", "verdict")

    def __getitem__(self, name: str) -> Timing:
        for t in self.timings:
            if t.name == name:
                return t
        raise KeyError(f"no variant {name!r}; measured: {', '.join(self.names)}")

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.timings]

    @property
    def rounds(self) -> int:
        """How many interleaved rounds were timed: ``repeats``, or a multiple of it where a ratio was not
        settled after them (``compare_timers``)."""
        return len(self.timings[0].times_s)

    @property
    def confidence(self) -> float:
        """The coverage of each interval: 95% split over the looks (Bonferroni), so that the interval the
        rounds stopped at covers the true ratio with at least 95% whichever look it was."""
        return 1 - (1 - CONFIDENCE) / self.looks

    def speedup(self, name: str, over: str | None = None) -> float:
        """How many times faster ``name`` ran than ``over`` (the baseline by default)."""
        return self[over or self.baseline].median_s / self[name].median_s

    def interval(self, name: str, over: str | None = None) -> tuple[float, float]:
        """The bootstrap interval of ``speedup(name, over)`` over the measured rounds, at ``confidence``.
        Computed whatever the rounds; with fewer than ``MIN_ROUNDS`` nothing renders it (``enough_rounds``)."""
        return ratio_interval(self[over or self.baseline].times_s, self[name].times_s, self.confidence)

    def enough_rounds(self, name: str, over: str | None = None) -> bool:
        """Whether both sides have at least ``MIN_ROUNDS`` rounds: with fewer, no interval and no verdict."""
        return min(len(self[name].times_s), len(self[over or self.baseline].times_s)) >= MIN_ROUNDS

    @property
    def noise_floor(self) -> float:
        """The baseline's floor: the farther end of the A/A pair's 95% interval (the baseline against itself,
        in the same rounds), and never less than ``MIN_FLOOR``. Without a twin (timings put together by hand,
        from separate runs) it is ``MIN_FLOOR``."""
        if self.twin is None:
            return MIN_FLOOR
        return _floor_of(*ratio_interval(self[self.baseline].times_s, self.twin.times_s))

    def own_floor(self, name: str) -> float:
        """A variant's own noise floor. The baseline's is ``noise_floor``. Any other variant is set against
        itself in adjacent rounds (rounds 1 and 2, 3 and 4, ...): the farther end of that pair's 95% interval,
        never less than ``MIN_FLOOR``. It costs no extra timing, and it holds the variant's own jitter and
        what a neighbour left behind for it (each round runs the variants in another order), not the baseline's."""
        if name == self.baseline:
            return self.noise_floor
        times = self[name].times_s
        pairs = len(times) // 2
        if pairs == 0:
            return MIN_FLOOR
        return _floor_of(*ratio_interval(times[0:2 * pairs:2], times[1:2 * pairs:2]))

    def floor(self, name: str, over: str | None = None) -> float:
        """The noise floor a pair is judged on: with the baseline in it, the baseline's A/A floor; otherwise
        the larger of the two variants' own floors (``own_floor``), so that each pair is judged against its
        own noise, and a quiet pair beside a noisy baseline is not hidden by the baseline's jitter."""
        over = over or self.baseline
        if self.baseline in (name, over):
            return self.noise_floor
        return max(self.own_floor(name), self.own_floor(over))

    def settled(self, name: str, over: str | None = None) -> bool:
        """Whether more rounds would not change the verdict but for an unlucky run: the difference is
        called, or the ratio's whole interval lies within ``MIN_FLOOR`` of 1. An interval across an edge of
        the floor is not settled, nor one inside a wide floor that reaches past ``MIN_FLOOR``: a difference the
        floor's width hides in this run, which a narrower floor in a re-run may call, nor a pair with fewer
        than ``MIN_ROUNDS`` rounds (``compare_timers`` adds rounds until every variant is settled)."""
        return self.call(name, over) not in (TOO_CLOSE, TOO_FEW)

    def apart(self, name: str, over: str | None = None) -> bool:
        """Whether the difference is called: the ratio's whole interval lies outside
        [1 / floor, floor] for the pair's ``floor``."""
        return self.call(name, over) in ("faster", "slower")

    def call(self, name: str, over: str | None = None) -> str:
        """The verdict in words: "faster" or "slower" (the whole interval outside the pair's noise floor), "no
        difference" (the whole interval within ``MIN_FLOOR`` of 1, holding 1), "too small to call" (within
        ``MIN_FLOOR`` of 1 but excluding 1: measured, and too small to call), "too close to call" (not ``settled``,
        so a re-run may fall on either side) or "too few rounds" (fewer than ``MIN_ROUNDS``: not judged)."""
        if not self.enough_rounds(name, over):
            return TOO_FEW
        return _judge(*self.interval(name, over), self.floor(name, over))

    def judged(self, name: str, over: str | None = None) -> str:
        """The ratio with its interval in the one notation of every table and sentence, led by its verdict
        where it is not called: "1.92x faster (95% interval 1.85–1.99x)", "1.17x slower (95% interval
        1.07–1.34x)", "no measurable difference, 1.02x (95% interval 0.97–1.03x)", "a difference too small to
        call, 1.04x (95% interval 1.03–1.05x)", "too close to call, 1.06x (95% interval 1.02–1.11x)" or "too
        few rounds to judge (3; at least 5 needed)". What a helper lists as a gain: a ratio the verdict did not
        call never appears bare."""
        call = self.call(name, over)
        if call == TOO_FEW:
            return self._too_few(name, over)
        text = self.ratio_with_interval(name, over)
        return f"{CALL_WORDS[call]}, {text}" if call in CALL_WORDS else text

    def uncalled(self, name: str, over: str | None = None) -> str:
        """What a pair whose difference was not called shows, in words that match its interval: "no measurable
        difference" (the interval holds 1, within the least floor), "a measured difference too small to call"
        (within the least floor, clear of 1), "a measured difference too close to the noise floor to call"
        (clear of 1, not of the floor), "too close to call either way" (holding 1, reaching past the least
        floor) or "too few rounds to judge". For a called pair, its direction ("faster", "slower")."""
        call = self.call(name, over)
        if call in ("faster", "slower", "no difference"):
            return "no measurable difference" if call == "no difference" else call
        if call == TOO_FEW:
            return f"{TOO_FEW} to judge"
        if call == TOO_SMALL:
            return f"a measured difference {TOO_SMALL}"
        lo, hi = self.interval(name, over)
        return ("too close to call either way" if lo <= 1 <= hi
                else "a measured difference too close to the noise floor to call")

    def ratio_with_interval(self, name: str, over: str | None = None) -> str:
        """The ratio and its interval in one notation, the interval oriented like the number it qualifies:
        "1.92x faster (95% interval 1.85–1.99x)" and "1.17x slower (95% interval 1.07–1.34x)" where the
        difference is called, the plain factor "1.06x (95% interval 1.02–1.11x)" where it is not (a hedge
        reads as no direction), "" with fewer than ``MIN_ROUNDS`` rounds."""
        if not self.enough_rounds(name, over):
            return ""
        ratio, (lo, hi) = self.speedup(name, over), self.interval(name, over)
        if not self.apart(name, over):
            return f"{_times(ratio)} {interval_text(lo, hi)}"
        if ratio >= 1:
            return f"{ratio_text(ratio)} faster {interval_text(lo, hi)}"
        return f"{ratio_text(1 / ratio)} slower {interval_text(1 / hi, 1 / lo)}"

    def _too_few(self, name: str, over: str | None) -> str:
        n = min(len(self[name].times_s), len(self[over or self.baseline].times_s))
        return f"{TOO_FEW} to judge ({n}; at least {MIN_ROUNDS} needed)"

    def verdict(self, name: str, over: str | None = None) -> str:
        """One sentence read from the measurement, so committed prose and a re-run cannot disagree: the pair,
        the verdict and the interval, nothing of the method (lecture 00 explains it once).

        "prefetch: 1.92x faster than naive (95% interval 1.85–1.99x)", "naive: 3.1x slower than prefetch (...)",
        "cache against naive: no measurable difference, 1.02x (95% interval 0.97–1.03x)", "... a difference too
        small to call, 1.04x (...)", "... too close to call, 1.06x (...)" or "cache against naive: too few rounds
        to judge (3; at least 5 needed)". ``lectures.verdicts_in`` reads them back.
        """
        over = over or self.baseline
        if self.apart(name, over):
            ratio_words, _, interval = self.ratio_with_interval(name, over).partition(" (")
            return f"{name}: {ratio_words} than {over} ({interval}"
        return f"{name} against {over}: {self.judged(name, over)}"

    def verdicts(self) -> "Verdicts":
        """Every variant's verdict against the baseline, shown as a Markdown list in a notebook."""
        return Verdicts([self.verdict(n) for n in self.names if n != self.baseline])

    def _call_word(self, name: str) -> str:
        return "baseline" if name == self.baseline else self.call(name)

    def rows(self) -> list[tuple]:
        """The table's rows: name, first call and median (ms), spread (text), the ratio against the baseline with
        its interval (``ratio_with_interval``; "" for the baseline, and no interval from too few rounds) and the
        verdict."""
        out = []
        for t in self.timings:
            lo, hi = t.spread_s
            n = min(len(t.times_s), len(self[self.baseline].times_s))
            against = ("" if t.name == self.baseline else self.ratio_with_interval(t.name)
                       or f"no interval from {n} rounds (at least {MIN_ROUNDS} needed)")
            out.append((t.name, t.first_call_s * 1e3, t.median_s * 1e3, f"{lo * 1e3:.3g}–{hi * 1e3:.3g}",
                        against, self._call_word(t.name)))
        return out

    def floor_text(self) -> str:
        """The measured noise floor, for a caption: "noise floor 1.17x, A/A in the same 10 rounds". What a floor
        is and how the intervals are taken, lecture 00 says once."""
        how = (f"A/A in the same {len(self.twin.times_s)} rounds" if self.twin is not None
               else "the least: no A/A pair timed")
        return f"noise floor {_factor(self.noise_floor)}x, {how}"

    def to_dict(self) -> dict:
        def variant(t: Timing) -> dict:
            enough = self.enough_rounds(t.name)
            return dict(t.to_dict(), speedup=self.speedup(t.name),
                        interval=list(self.interval(t.name)) if enough else None, verdict=self._call_word(t.name))

        return {"title": self.title, "baseline": self.baseline, "params": self.params, "repeats": self.repeats,
                "looks": self.looks, "machine": self.machine, "columns": list(self.COLUMNS),
                "noise_floor": self.noise_floor, "twin": None if self.twin is None else self.twin.to_dict(),
                "variants": [variant(t) for t in self.timings]}

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2, default=str)
        if path is not None:
            with open(path, "w") as fh:
                fh.write(text + "\n")
        return text

    def __repr__(self) -> str:
        header = f"{self.title}\n" if self.title else ""
        rows = [(name, f"{first:.3g}", f"{med:.3g}", spread, against, call)
                for name, first, med, spread, against, call in self.rows()]
        return (header + text_table(self.COLUMNS, rows)
                + f"\n(baseline: {self.baseline}; {self.floor_text()}; {machine_summary(self.machine)})")

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.COLUMNS)
        body = []
        for name, first, med, spread, against, call in self.rows():
            body.append(f"<tr><td>{html.escape(name)}</td><td>{first:.3g}</td><td>{med:.3g}</td>"
                        f"<td>{spread}</td><td><b>{html.escape(against)}</b></td><td>{html.escape(call)}</td></tr>")
        caption = html.escape(self.title) if self.title else ""
        return (f"<table><caption>{caption}</caption><tr>{head}</tr>{''.join(body)}</table>"
                f"<p><small>baseline: {html.escape(self.baseline)}; {html.escape(self.floor_text())}; "
                f"{html.escape(machine_summary(self.machine))}</small></p>")

    def plot(self, ax=None):
        """Speedup bars with spread (see ``course_lib.plotting.speedup_bars``)."""
        from course_lib.plotting import speedup_bars
        return speedup_bars(self, ax=ax)


def two_readings(first: Comparison, second: Comparison, name: str, over: str | None = None,
                 labels: tuple[str, str] = ("in the first comparison", "in the second")) -> str:
    """What one pair measured in two comparisons says, read from both: its two verdicts, and whether their
    intervals overlap (where they do, the words are a hedge: a re-run may find them apart, and contradicts
    nothing). Where they do not, the medians show which side moved: each call starts from the state the call
    before it left, so the other variants in a comparison's rounds are part of what a ratio measured."""
    over = over or first.baseline
    text = (f"{name} against {over} {labels[0]}: {first.judged(name, over)}; {labels[1]}: "
            f"{second.judged(name, over)}.")
    if not (first.enough_rounds(name, over) and second.enough_rounds(name, over)):
        return text
    (lo1, hi1), (lo2, hi2) = first.interval(name, over), second.interval(name, over)
    if max(lo1, lo2) <= min(hi1, hi2):
        return text + " The two intervals overlap: the rounds cannot tell the two readings apart."
    ms = {n: tuple(f"{c[n].median_s * 1e3:.3g}" for c in (first, second)) for n in (over, name)}
    return (text + f" The two intervals do not overlap: the readings differ by more than either one's noise, so "
            f"they measured the pair in different conditions, not different code. {over} took {ms[over][0]} ms "
            f"a call {labels[0]} and {ms[over][1]} ms {labels[1]}, {name} {ms[name][0]} and {ms[name][1]} ms. "
            "Each call starts from the state the one before it left (the data in the caches, threads still "
            "awake, the cores' clock), and the other variants in the rounds are part of that state: a ratio "
            "holds for the rounds it was measured in.")


def _floor_of(lo: float, hi: float) -> float:
    """A noise floor from an A/A interval: its farther end from 1, never less than ``MIN_FLOOR``."""
    return max(MIN_FLOOR, hi, 1 / lo)


def interval_text(lo: float, hi: float) -> str:
    """An interval in the one notation of every table and sentence, "(95% interval 1.07–1.34x)", written after the
    factor it qualifies and oriented like it."""
    return f"({CONFIDENCE:.0%} interval {interval_bounds(lo, hi)}x)"


def interval_bounds(lo: float, hi: float) -> str:
    """An interval's two ends, "1.07–1.34", each with the digits that keep it off 1 when it is not 1: a
    bound of 1.0004 written "1" would contradict the verdict its side of 1 gives."""
    return f"{_factor(lo)}–{_factor(hi)}"


def _judge(lo: float, hi: float, floor: float) -> str:
    """``Comparison.call`` from a ratio's interval [lo, hi] and the noise floor."""
    if lo > floor:
        return "faster"
    if hi < 1 / floor:
        return "slower"
    if not 1 / MIN_FLOOR <= lo <= hi <= MIN_FLOOR:
        return TOO_CLOSE
    return "no difference" if lo <= 1 <= hi else TOO_SMALL


def _factor(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    digits = 3
    while float(f"{x:.{digits}g}") == 1 != x and digits < 9:
        digits += 1
    return f"{x:.{digits}g}"


def _times(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def ratio_text(ratio: float) -> str:
    """A factor as a reader can read it: "2.31x", "0.25x", and "226x slower" where "0.00x" would hide it."""
    return _times(ratio) if ratio >= 0.1 else f"{_times(1 / ratio)} slower"


def speedup_text(speedup: float) -> str:
    """A speedup column's cell, one notation for every row: "2.31x" when faster, "4.49x slower" when not."""
    return _times(speedup) if speedup >= 1 else f"{_times(1 / speedup)} slower"


@dataclass
class Verdicts:
    """Sentences rendered from measurements; a notebook shows them as Markdown under the table."""

    sentences: list[str]

    def __str__(self) -> str:
        return "\n".join(f"- {s}" for s in self.sentences)

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        return str(self)


def compare(variants: Mapping[str, Callable[[], Any]], *, baseline: str | None = None,
            repeats: int = 7, warmup: int = 1, number: int | None = None,
            title: str = "", params: Mapping | None = None,
            on_result: Callable[[Timing, int, int], None] | None = None, in_turns: bool = True,
            min_repeat_s: float = 0.02) -> Comparison:
    """Measure the variants in turns in this run and compare them against ``baseline``.

    ``baseline`` defaults to the first variant. Each variant's first call is timed alone, then
    ``warmup`` untimed and ``repeats`` timed rounds follow; in each round every variant runs once
    (``number`` calls; when None, as many as last ``min_repeat_s``, sized from the last warm-up
    call), the baseline twice (the
    A/A pair that sets the noise floor), in an order shuffled each round (``round_order``), so drift in the
    machine's load and what a variant leaves behind for the next hit them alike.
    ``on_result(timing, done, total)`` is called for each variant once all rounds are done.
    ``in_turns`` is always true: variants timed one after the other are lecture 00's fourth mistake.
    """
    if not variants:
        raise ValueError("compare needs at least one variant, e.g. {'numpy': lambda: f(x)}")
    if not in_turns:
        raise ValueError("compare always times the variants in turns, the only way its verdicts hold; "
                         "drop in_turns=False")
    names = list(variants)
    baseline = names[0] if baseline is None else baseline
    if baseline not in variants:
        raise ValueError(f"unknown baseline {baseline!r}; variants are: {', '.join(names)}")
    _check_repeats(repeats, warmup)
    if number is not None and (not isinstance(number, int) or number < 1):
        raise ValueError(f"number must be a whole number >= 1 or None, got {number!r}")
    for name, fn in variants.items():
        _check_callable(fn, name)
    first = {name: _call(fn, name) for name, fn in variants.items()}
    last = dict(first)  # a call's duration, to size a round; the first call (tracing) only without warm-up
    for _ in range(warmup):
        for name, fn in variants.items():
            last[name] = _call(fn, name)
    numbers = {name: number or max(1, min(10_000, math.ceil(min_repeat_s / max(last[name], 1e-7))))
               for name in names}

    def timer(name: str) -> Callable[[], float]:
        fn, n = variants[name], numbers[name]
        return lambda: sum(_call(fn, name) for _ in range(n)) / n

    return compare_timers({name: timer(name) for name in names}, first, baseline=baseline, repeats=repeats,
                          numbers=numbers, title=title, params=params, on_result=on_result)


def compare_timers(timers: Mapping[str, Callable[[], float]], first_call_s: Mapping[str, float], *,
                   baseline: str, repeats: int, twin: Callable[[], float] | None = None,
                   numbers: Mapping[str, int] | None = None, title: str = "", params: Mapping | None = None,
                   on_result: Callable[[Timing, int, int], None] | None = None) -> Comparison:
    """The interleaved rounds behind every verdict, for any way of timing a variant.

    ``timers[name]()`` times one round of variant ``name`` and returns seconds per call (``compare``
    times a callable here; ``processes.Workers`` asks a live process). Each of ``repeats`` rounds runs
    every timer once and the baseline's twice (``twin``, the baseline's timer by default: a second
    process of the same kind, for variants in their own processes), in an order shuffled each round
    (``round_order``). ``first_call_s`` is each variant's first call, timed before the rounds.

    A verdict flips between two runs when a ratio's interval straddles an edge of the noise floor: the
    rounds could not tell. So the rounds are judged after each of ``LOOK_BLOCKS`` blocks of ``repeats`` rounds,
    and while a variant is not ``settled`` against the baseline (fewer than ``MIN_ROUNDS`` rounds are never
    settled), the blocks go on to the next look: always up to ``MORE_ROUNDS`` blocks, beyond that while the
    rounds so far took under ``SETTLE_S`` seconds, up to ``MOST_ROUNDS`` blocks; a ratio that sits on the floor's
    edge stays unsettled, and its verdict is "too close to call". Deciding whether to go on from what the rounds
    show is repeated looking, which would let more than 5% of the intervals miss; the comparison's ``looks``
    (``looks(repeats)``) widens every interval for it.
    """
    if baseline not in timers:
        raise ValueError(f"unknown baseline {baseline!r}; variants are: {', '.join(timers)}")
    _check_repeats(repeats, 0)
    order = list(timers) + [TWIN]
    run = {**timers, TWIN: twin or timers[baseline]}
    times: dict[str, list[float]] = {name: [] for name in order}
    numbers = dict(numbers or {})

    def measured() -> Comparison:
        timings = [Timing(name=name, first_call_s=first_call_s[name], times_s=list(times[name]),
                          number=numbers.get(name, 1)) for name in timers]
        twin_timing = Timing(name=f"{baseline} ({TWIN})", first_call_s=first_call_s[baseline],
                             times_s=list(times[TWIN]), number=numbers.get(baseline, 1))
        return Comparison(timings=timings, baseline=baseline, title=title, params=dict(params or {}),
                          twin=twin_timing, repeats=repeats, looks=looks(repeats))

    r, started = 0, time.perf_counter()
    for blocks in LOOK_BLOCKS:
        while r < blocks * repeats:
            for name in round_order(order, r):
                times[name].append(run[name]())
            r += 1
        comparison = measured()
        if all(comparison.settled(n) for n in timers if n != baseline):
            break
        if blocks >= MORE_ROUNDS and time.perf_counter() - started >= SETTLE_S:
            break
    for i, timing in enumerate(comparison.timings):
        if on_result is not None:
            on_result(timing, i + 1, len(comparison.timings))
    comparison.machine = machine()
    return comparison
