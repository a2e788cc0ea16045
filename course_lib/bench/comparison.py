"""A run's measurements with the rule applied: ``Comparison`` answers what a lecture asks of one (speedups,
intervals, noise floors, verdicts, the table, JSON); ``two_readings`` reads one pair from two comparisons, and
``largest_gain`` says in which of several a pair's ratio is largest, where the noise lets it.
Apart from the rounds that fill it (``rounds``), so timings put together by hand are judged the same way."""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field

from course_lib.bench.rule import (
    CALL_WORDS,
    CONFIDENCE,
    MIN_FLOOR,
    MIN_ROUNDS,
    TOO_CLOSE,
    TOO_FEW,
    TOO_SMALL,
    floor_of,
    judge,
    ratio_interval,
)
from course_lib.bench.text import Verdicts, factor_text, interval_text, ratio_text, times_text
from course_lib.bench.timing import Timing
from course_lib.host import machine_summary
from course_lib.tables import text_table


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
        return floor_of(*ratio_interval(self[self.baseline].times_s, self.twin.times_s))

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
        return floor_of(*ratio_interval(times[0:2 * pairs:2], times[1:2 * pairs:2]))

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
        return judge(*self.interval(name, over), self.floor(name, over))

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
        return call_words(call, *(self.interval(name, over) if call != TOO_FEW else (1.0, 1.0)))

    def ratio_with_interval(self, name: str, over: str | None = None) -> str:
        """The ratio and its interval in one notation, the interval oriented like the number it qualifies:
        "1.92x faster (95% interval 1.85–1.99x)" and "1.17x slower (95% interval 1.07–1.34x)" where the
        difference is called, the plain factor "1.06x (95% interval 1.02–1.11x)" where it is not (a hedge
        reads as no direction), "" with fewer than ``MIN_ROUNDS`` rounds."""
        if not self.enough_rounds(name, over):
            return ""
        ratio, (lo, hi) = self.speedup(name, over), self.interval(name, over)
        if not self.apart(name, over):
            return f"{times_text(ratio)} {interval_text(lo, hi)}"
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
        return f"noise floor {factor_text(self.noise_floor)}x, {how}"

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


def call_words(call: str, lo: float, hi: float) -> str:
    """A call (``judge``'s) in words that match its interval [lo, hi] (``Comparison.uncalled``)."""
    if call in ("faster", "slower", "no difference"):
        return "no measurable difference" if call == "no difference" else call
    if call == TOO_FEW:
        return f"{TOO_FEW} to judge"
    if call == TOO_SMALL:
        return f"a measured difference {TOO_SMALL}"
    if lo <= 1 <= hi:
        return "too close to call either way"
    return "a measured difference too close to the noise floor to call"


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


def largest_gain(readings: dict[str, Comparison], name: str, over: str | None = None) -> str | None:
    """Of one pair read in several comparisons (by label), the label whose ratio of ``name`` over ``over`` is
    largest by more than the noise: its interval lies wholly above every other reading's, as two readings whose
    intervals do not overlap differ (``two_readings``). None where the intervals overlap, or a reading has too
    few rounds for an interval: then a re-run may rank them either way."""
    if not all(c.enough_rounds(name, over) for c in readings.values()):
        return None
    intervals = {label: c.interval(name, over) for label, c in readings.items()}
    top = max(readings, key=lambda label: readings[label].speedup(name, over))
    if all(intervals[top][0] > hi for label, (_, hi) in intervals.items() if label != top):
        return top
    return None
