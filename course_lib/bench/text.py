"""The one notation every table and sentence writes a factor and its interval in ("1.17x slower (95% interval
1.07–1.34x)"), and the Markdown list verdicts are shown as. In one place so that tables, prose and
``lectures``, which reads verdicts back from committed notebooks, cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass

from course_lib.bench.rule import CONFIDENCE


def interval_text(lo: float, hi: float) -> str:
    """An interval in the one notation of every table and sentence, "(95% interval 1.07–1.34x)", written after the
    factor it qualifies and oriented like it."""
    return f"({CONFIDENCE:.0%} interval {interval_bounds(lo, hi)}x)"


def interval_bounds(lo: float, hi: float) -> str:
    """An interval's two ends, "1.07–1.34", each with the digits that keep it off 1 when it is not 1: a
    bound of 1.0004 written "1" would contradict the verdict its side of 1 gives."""
    return f"{factor_text(lo)}–{factor_text(hi)}"


def factor_text(x: float) -> str:
    """A factor with 3 significant digits, more where that is what keeps it off 1 (an interval's bound, a floor)."""
    if x >= 100:
        return f"{x:,.0f}"
    digits = 3
    while float(f"{x:.{digits}g}") == 1 != x and digits < 9:
        digits += 1
    return f"{x:.{digits}g}"


def times_text(x: float) -> str:
    """A factor as "2.31x", or "1,234x" from 100 up."""
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def ratio_text(ratio: float) -> str:
    """A factor as a reader can read it: "2.31x", "0.25x", and "226x slower" where "0.00x" would hide it."""
    return times_text(ratio) if ratio >= 0.1 else f"{times_text(1 / ratio)} slower"


def speedup_text(speedup: float) -> str:
    """A speedup column's cell, one notation for every row: "2.31x" when faster, "4.49x slower" when not."""
    return times_text(speedup) if speedup >= 1 else f"{times_text(1 / speedup)} slower"


@dataclass
class Verdicts:
    """Sentences rendered from measurements; a notebook shows them as Markdown under the table."""

    sentences: list[str]

    def __str__(self) -> str:
        return "\n".join(f"- {s}" for s in self.sentences)

    __repr__ = __str__

    def _repr_markdown_(self) -> str:
        return str(self)
