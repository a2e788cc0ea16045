"""The interleaved rounds behind every comparison: the order each round runs the variants in, how many rounds
are taken (more while a ratio is unsettled, within a time budget), and the two ways in: ``compare`` for
callables, ``compare_timers`` for any other way of timing a variant (a worker process, ``processes.Workers``)."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from course_lib.bench.comparison import Comparison
from course_lib.bench.rule import LOOK_BLOCKS, looks
from course_lib.bench.timing import Timing, calls_per_repeat, check_callable, check_repeats, timed_call
from course_lib.host import machine

TWIN = "A/A"             # the name of the baseline's second copy, timed in the same rounds
MORE_ROUNDS = 2          # of ``LOOK_BLOCKS``, ``compare_timers`` always runs this many blocks while a ratio is
SETTLE_S = 10.0          # unsettled; beyond them, more only while its rounds so far took under this many seconds
MOST_ROUNDS = LOOK_BLOCKS[-1]  # (few rounds give lumpy intervals; cheap ones can afford more), up to this many blocks
ROUND_SEED = 0           # seeds the order of the variants in each round (``round_order``)


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
    check_repeats(repeats, warmup, number)
    for name, fn in variants.items():
        check_callable(fn, name)
    first = {name: timed_call(fn, name) for name, fn in variants.items()}
    last = dict(first)  # a call's duration, to size a round; the first call (tracing) only without warm-up
    for _ in range(warmup):
        for name, fn in variants.items():
            last[name] = timed_call(fn, name)
    numbers = {name: number or calls_per_repeat(last[name], min_repeat_s) for name in names}

    def timer(name: str) -> Callable[[], float]:
        fn, n = variants[name], numbers[name]
        return lambda: sum(timed_call(fn, name) for _ in range(n)) / n

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
    check_repeats(repeats, 0)
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
