"""Checks of a measurement's method, shared by the lecture checkers.

A number alone proves nothing: a variant named "tf.function" may call the eager model, a
variant may return nothing, a ratio may mix two runs. These helpers let a checker look at
what the learner's variants call (the objects their code refers to) and what they return,
and at the ``bench`` objects the numbers came from. Each raises ``AssertionError`` with a
message naming the variant and what is wrong.
"""

from __future__ import annotations

import types
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from course_lib import bench


def is_tf_function(obj: Any) -> bool:
    """Whether ``obj`` is a ``tf.function`` (it traces, so it has a tracing count)."""
    return callable(obj) and hasattr(obj, "experimental_get_tracing_count") and hasattr(obj, "python_function")


def is_xla(obj: Any) -> bool:
    """Whether ``obj`` is a ``tf.function`` compiled with XLA (``jit_compile=True``)."""
    return is_tf_function(obj) and getattr(obj, "_jit_compile", None) is True


def _codes(code: types.CodeType) -> Iterable[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def referenced(fn: Callable, depth: int = 3) -> list:
    """The objects ``fn``'s code refers to: closure cells and the globals it names, following
    plain Python functions (and a ``tf.function``'s Python function) ``depth`` levels down."""
    seen: dict[int, Any] = {}

    def visit(f: Any, level: int) -> None:
        if is_tf_function(f):
            f = f.python_function
        f = getattr(f, "__func__", f)
        if not isinstance(f, types.FunctionType) or level > depth:
            return
        found = [cell.cell_contents for cell in (f.__closure__ or ()) if _filled(cell)]
        for code in _codes(f.__code__):
            found += [f.__globals__[name] for name in code.co_names if name in f.__globals__]
        for obj in found:
            if id(obj) not in seen and not isinstance(obj, types.ModuleType):
                seen[id(obj)] = obj
                visit(obj, level + 1)

    visit(fn, 0)
    return list(seen.values())


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def calls(fn: Callable, obj: Any) -> bool:
    """Whether ``fn`` refers to ``obj`` (directly or through the functions it calls)."""
    return any(o is obj for o in referenced(fn))


def tf_functions_in(fn: Callable) -> list:
    """The ``tf.function`` objects ``fn`` refers to."""
    return [o for o in referenced(fn) if is_tf_function(o)] + ([fn] if is_tf_function(fn) else [])


def variants_named(variants: Any, names: list[str]) -> Mapping[str, Callable]:
    """Check that ``variants`` is the dict given to ``bench.compare``, with these names in order."""
    assert isinstance(variants, Mapping), \
        f"variants should be the dict of zero-argument functions you gave bench.compare, got {type(variants).__name__}"
    assert list(variants) == names, f"the variants should be {names} in this order, got {list(variants)}"
    for name, fn in variants.items():
        assert callable(fn), f"variant {name!r} is not callable: write it as lambda: ..."
    return variants


def value_of(variants: Mapping[str, Callable], name: str) -> Any:
    """Call one variant as ``bench`` does and return its forced result."""
    try:
        return bench.force(variants[name]())
    except AssertionError:
        raise
    except Exception as exc:
        raise AssertionError(f"variant {name!r} raised {type(exc).__name__}: {exc}") from exc


def same(value: Any, expected: Any, what: str, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Check that a result equals the expected one (arrays, or lists of arrays)."""
    value, expected = bench.force(value), bench.force(expected)
    if isinstance(expected, list):
        assert isinstance(value, list) and len(value) == len(expected), \
            f"{what} should return {len(expected)} results, got {_describe(value)}"
        for v, e in zip(value, expected):
            same(v, e, what, rtol, atol)
        return
    assert value is not None, f"{what} returns nothing: return the result, so that bench forces it"
    v, e = np.asarray(value), np.asarray(expected)
    assert v.shape == e.shape, f"{what} returns shape {v.shape}, expected {e.shape}"
    assert np.allclose(v, e, rtol=rtol, atol=atol), f"{what} returns other values than the computation it names"


def _describe(value: Any) -> str:
    return f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__


def comparison(result: Any, names: list[str], baseline: str, repeats: int) -> bench.Comparison:
    """Check that ``result`` is one ``bench.compare`` run of these variants."""
    assert isinstance(result, bench.Comparison), \
        f"the measurement should be what bench.compare returns (one run of all variants), got {type(result).__name__}"
    assert result.names == names, f"the comparison's variants should be {names}, got {result.names}"
    assert result.baseline == baseline, f"the baseline should be {baseline!r}, got {result.baseline!r}"
    # the rounds asked for, not those timed: an unsettled ratio gets more rounds, depending on the noise
    asked = result.rounds if result.repeats is None else result.repeats
    assert asked >= repeats, f"the comparison asked for {asked} rounds; ask for repeats={repeats}"
    for t in result.timings:
        assert t.first_call_s > 0, f"variant {t.name!r} has no first call timed apart"
    return result


def close(value: Any, expected: float, what: str, rel: float = 1e-9) -> None:
    """Check a number derived from a measurement (e.g. a median divided by the work done)."""
    assert isinstance(value, (int, float, np.floating)) and not isinstance(value, bool), \
        f"{what} should be a number, got {type(value).__name__}"
    assert abs(float(value) - expected) <= rel * abs(expected) + 1e-12, \
        f"{what} is {float(value):.6g}; from your measurement it should be {expected:.6g}"
