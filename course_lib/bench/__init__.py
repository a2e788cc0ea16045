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

One module a concern, every public name gathered here (``bench.compare``, ``bench.TOO_CLOSE``): ``timing``
(one variant's calls, forced and timed), ``rule`` (the constants, intervals, floors and the verdict),
``text`` (the notation), ``comparison`` (``Comparison``, ``two_readings``, ``largest_gain``) and ``rounds``
(the interleaved rounds: ``compare``, ``compare_timers``).
"""

from course_lib.bench.comparison import Comparison, call_words, largest_gain, two_readings
from course_lib.bench.rounds import (
    MORE_ROUNDS,
    MOST_ROUNDS,
    ROUND_SEED,
    SETTLE_S,
    TWIN,
    compare,
    compare_timers,
    round_order,
)
from course_lib.bench.rule import (
    BOOTSTRAP_SAMPLES,
    BOOTSTRAP_SEED,
    CALL_WORDS,
    CONFIDENCE,
    LOOK_BLOCKS,
    MIN_FLOOR,
    MIN_ROUNDS,
    NEGLIGIBLE,
    TOO_CLOSE,
    TOO_FEW,
    TOO_SMALL,
    judge,
    looks,
    ratio_interval,
)
from course_lib.bench.text import Verdicts, interval_bounds, interval_text, ratio_text, speedup_text
from course_lib.bench.timing import BenchError, Timing, force, measure

__all__ = [
    "BOOTSTRAP_SAMPLES", "BOOTSTRAP_SEED", "CALL_WORDS", "CONFIDENCE", "LOOK_BLOCKS", "MIN_FLOOR", "MIN_ROUNDS",
    "MORE_ROUNDS", "MOST_ROUNDS", "NEGLIGIBLE", "ROUND_SEED", "SETTLE_S", "TOO_CLOSE", "TOO_FEW", "TOO_SMALL", "TWIN",
    "BenchError", "Comparison", "Timing", "Verdicts", "call_words", "compare", "compare_timers", "force",
    "interval_bounds", "interval_text", "judge", "largest_gain", "looks", "measure", "ratio_interval", "ratio_text",
    "round_order", "speedup_text", "two_readings",
]
