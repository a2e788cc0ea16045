"""Running a learner's code inside a checker.

A learner's function may fail in any way; a checker turns that into an ``AssertionError`` that
names what raised, so ``checks.failure`` reports it like any other wrong answer. ``counting``
watches a module function while a learner's code runs, for checks of what a step really calls.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator
from unittest import mock

from course_lib import graphs


def run(what: str, fn: Callable, *args, **kwargs) -> Any:
    """``fn(*args, **kwargs)``; an exception becomes an AssertionError that starts with ``what``."""
    assert callable(fn), f"{what}: expected a function, got {type(fn).__name__}"
    try:
        return fn(*args, **kwargs)
    except AssertionError:
        raise
    except Exception as exc:
        raise AssertionError(f"{what} raised {graphs.error_summary(exc)}") from exc


@contextlib.contextmanager
def counting(module: Any, name: str) -> Iterator[mock.Mock]:
    """Count the calls of ``module.name`` made inside the block (it still runs); ``.call_count``."""
    with mock.patch.object(module, name, wraps=getattr(module, name)) as spy:
        yield spy


def number(value: Any, what: str, *, integer: bool = False) -> None:
    """Check that ``value`` is a plain number (an int where ``integer``), not a bool or a tensor."""
    import numpy as np

    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    assert isinstance(value, kinds) and not isinstance(value, bool), \
        f"{what} should be {'a whole number' if integer else 'a number'}, got {type(value).__name__} {value!r:.60}"
