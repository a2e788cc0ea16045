"""How one variant is timed: the first call apart from the repeats, results forced to host memory inside the
timed region (``measure``), and the one forced call (``timed_call``) every round in ``rounds`` is made of. What
a time is stays apart from how times are judged (``rule``), so either can change without the other."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable


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


def check_repeats(repeats: int, warmup: int, number: int | None = None) -> None:
    """A ValueError that names the argument where ``repeats``, ``warmup`` or ``number`` is out of range."""
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a whole number >= 1, got {repeats!r}: "
                         "a median needs at least one timed repeat")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a whole number >= 0, got {warmup!r}")
    if number is not None and (not isinstance(number, int) or number < 1):
        raise ValueError(f"number must be a whole number >= 1 or None, got {number!r}")


def check_callable(fn, name: str) -> None:
    """A TypeError that names the variant where ``fn`` cannot be called."""
    if not callable(fn):
        raise TypeError(f"variant {name!r} is not callable (got {type(fn).__name__}); "
                        "pass a zero-argument function, e.g. lambda: f(x)")


def timed_call(fn: Callable[[], Any], name: str) -> float:
    """Seconds one call of ``fn`` takes, its result forced; what it raises comes back as a ``BenchError``."""
    start = time.perf_counter()
    try:
        force(fn())
    except Exception as exc:  # re-raised with the variant's name
        raise BenchError(f"variant {name!r} raised {type(exc).__name__}: {exc}") from exc
    return time.perf_counter() - start


def calls_per_repeat(call_s: float, min_repeat_s: float) -> int:
    """How many calls of ``call_s`` seconds make a repeat last ``min_repeat_s`` (1 to 10,000)."""
    return max(1, min(10_000, math.ceil(min_repeat_s / max(call_s, 1e-7))))


def measure(fn: Callable[[], Any], *, name: str = "fn", repeats: int = 7, warmup: int = 1,
            number: int | None = None, min_repeat_s: float = 0.02) -> Timing:
    """Time ``fn()`` the trustworthy way.

    The first call is timed alone and reported as ``first_call_s`` (tracing, compiling,
    allocating). ``warmup`` further untimed calls follow. Then ``repeats`` timed repeats of
    ``number`` calls each; when ``number`` is None it is chosen so one repeat lasts at least
    ``min_repeat_s``, which keeps timer resolution out of very short calls.
    """
    check_callable(fn, name)
    check_repeats(repeats, warmup, number)
    first = timed_call(fn, name)
    for _ in range(warmup):
        timed_call(fn, name)
    if number is None:
        number = calls_per_repeat(timed_call(fn, name), min_repeat_s)
    times = []
    for _ in range(repeats):
        total = sum(timed_call(fn, name) for _ in range(number))
        times.append(total / number)
    return Timing(name=name, first_call_s=first, times_s=times, number=number)
