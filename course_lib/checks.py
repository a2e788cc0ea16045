"""Exercise checkers: a friendly pass message, or a hint, never a crash.

A checker cell in a notebook calls ``check(...)`` with a function that asserts what
the exercise asks. An unanswered exercise (the stub raises ``NotImplementedError``,
or a name it should define is missing) prints what to do next instead of a traceback,
so an exercise notebook always runs top to bottom.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class CheckResult:
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message

    def _ipython_display_(self) -> None:
        """Shown once: ``check`` already printed the message, so a notebook displays nothing more."""


def check(title: str, test: Callable[[], object], *, hint: str) -> CheckResult:
    """Run ``test``; print and return whether the exercise ``title`` is solved.

    ``test`` raises ``AssertionError`` (with a message saying what is wrong) when the
    answer is wrong. Any other exception is reported with the hint, not raised.
    """
    try:
        test()
    except NotImplementedError:
        result = CheckResult(False, f"… {title}: not answered yet. Hint: {hint}")
    except NameError as exc:
        result = CheckResult(False, f"… {title}: not answered yet ({exc}). Hint: {hint}")
    except AssertionError as exc:
        detail = f" {exc}" if str(exc) else ""
        result = CheckResult(False, f"✗ {title}: not yet.{detail} Hint: {hint}")
    except Exception as exc:  # a wrong answer may fail in any way; the reader gets the hint
        result = CheckResult(False, f"✗ {title}: your answer raised {type(exc).__name__}: {exc}. Hint: {hint}")
    else:
        result = CheckResult(True, f"✓ {title}: correct.")
    print(result.message)
    return result
