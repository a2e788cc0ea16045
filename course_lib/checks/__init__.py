"""Exercise checkers: each exercise graded by a unit-tested function, hints in steps, never a crash.

Every lecture has a module ``course_lib.checks.lecture_NN`` whose functions are registered with
``@exercise("NN", k, title, hint1, hint2, ...)``. A checker takes the learner's answer as keyword
arguments and raises ``AssertionError`` with a message that says what is wrong. A notebook's check
cell grades one exercise::

    checks.grade("00", 1, lambda: dict(timing=timing, tracing_ms=tracing_ms))

The lambda defers reading the learner's names, so an exercise not answered yet (its stub raised
``NotImplementedError``, or a name is missing) prints what to do next instead of a traceback and the
notebook runs top to bottom. Each failed attempt at the same exercise shows the next, narrower hint;
hints say where to look, never the answer (the answers live in ``solutions/``). ``summary(lecture)``
(the last cell of each exercise notebook) and ``course check`` show a table of all of a lecture's
exercises and a score.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Mapping

REPORT_ENV = "COURSE_CHECK_REPORT"  # `course check` sets it: grade() appends each result there as JSON

PASSED, WRONG, UNANSWERED = "✓", "✗", "…"


@dataclass
class CheckResult:
    passed: bool
    message: str
    status: str = ""

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Shown once: the checker already printed the message, so a notebook displays nothing more."""


@dataclass
class Exercise:
    lecture: str
    number: int
    title: str
    test: Callable[..., None]
    hints: tuple[str, ...]
    attempts: int = 0
    last: CheckResult | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return f"{self.lecture}.{self.number}"

    def next_hint(self) -> str:
        """The hint for this failed attempt: the first says where to look, later ones narrow it down."""
        step = min(self.attempts, len(self.hints)) - 1
        more = " (try again for a narrower hint)" if step < len(self.hints) - 1 else ""
        return f"Hint {step + 1} of {len(self.hints)}: {self.hints[step]}{more}"


_REGISTRY: dict[tuple[str, int], Exercise] = {}


def exercise(lecture: str, number: int, title: str, *hints: str):
    """Register the decorated function as the checker of exercise ``number`` of ``lecture``."""
    if not hints:
        raise ValueError(f"exercise {lecture}.{number} needs at least one hint")

    def register(test: Callable[..., None]) -> Callable[..., None]:
        _REGISTRY[(lecture, number)] = Exercise(lecture, number, title, test, tuple(hints))
        return test

    return register


def exercises_of(lecture: str) -> list[Exercise]:
    """The registered exercises of one lecture ("00" to "15"), in order."""
    lecture = str(lecture).zfill(2)
    try:
        importlib.import_module(f"course_lib.checks.lecture_{lecture}")
    except ModuleNotFoundError as exc:
        raise ValueError(f"no exercises for lecture {lecture!r} "
                         f"(no module course_lib.checks.lecture_{lecture})") from exc
    return [ex for (lec, _), ex in sorted(_REGISTRY.items()) if lec == lecture]


def get(lecture: str, number: int) -> Exercise:
    lecture = str(lecture).zfill(2)
    for ex in exercises_of(lecture):
        if ex.number == number:
            return ex
    raise ValueError(f"lecture {lecture} has no exercise {number}")


def _outcome(ex: Exercise, answer: Callable[[], Mapping]) -> CheckResult:
    label = f"{ex.key} {ex.title}"
    try:
        args = answer()
        ex.test(**args)
    except (NotImplementedError, NameError) as exc:
        detail = f" ({exc})" if isinstance(exc, NameError) else ""
        return CheckResult(False, f"{UNANSWERED} {label}: not answered yet{detail}. {ex.hints[0]}", UNANSWERED)
    except AssertionError as exc:
        ex.attempts += 1
        detail = f" {exc}" if str(exc) else ""
        return CheckResult(False, f"{WRONG} {label}: not yet.{detail} {ex.next_hint()}", WRONG)
    except Exception as exc:  # a wrong answer may fail in any way; the learner gets a hint, not a traceback
        ex.attempts += 1
        return CheckResult(False, f"{WRONG} {label}: your answer raised {type(exc).__name__}: {exc}. "
                                  f"{ex.next_hint()}", WRONG)
    return CheckResult(True, f"{PASSED} {label}: correct.", PASSED)


def grade(lecture: str, number: int, answer: Callable[[], Mapping]) -> CheckResult:
    """Check the learner's answer (``answer()`` returns the checker's keyword arguments); print the verdict."""
    ex = get(lecture, number)
    result = _outcome(ex, answer)
    ex.last = result
    print(result.message)
    report = os.environ.get(REPORT_ENV)
    if report:
        with open(report, "a") as fh:
            fh.write(json.dumps({"exercise": ex.key, "title": ex.title, "status": result.status,
                                 "message": result.message}) + "\n")
    return result


def failure(lecture: str, number: int, **answer) -> str | None:
    """The checker's complaint about ``answer``, or None when it passes (what the unit tests call)."""
    try:
        get(lecture, number).test(**answer)
    except AssertionError as exc:
        return str(exc) or "wrong"
    return None


def summary(lecture: str) -> str:
    """A table of the lecture's exercises as graded in this kernel, with a score; printed and returned."""
    rows = []
    exs = exercises_of(lecture)
    for ex in exs:
        status = ex.last.status if ex.last is not None else UNANSWERED  # a failed result is falsy
        note = "" if ex.last is not None else " (its check cell has not run)"
        rows.append(f"{status} {ex.key:<6} {ex.title}{note}")
    passed = sum(1 for ex in exs if ex.last and ex.last.passed)
    text = "\n".join(rows + [f"score: {passed} of {len(exs)}"])
    print(text)
    return text

