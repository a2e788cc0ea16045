"""Initial populations, reproducible from a seed (same random numbers as the engine's ops)."""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import rng
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import check_fits


def _shape(shape) -> tuple[int, ...]:
    shape = tuple(shape)
    if len(shape) < 2 or not all(isinstance(d, int) and d > 0 for d in shape):
        raise ValueError(f"a population shape is (individuals, *genome) with positive sizes, e.g. "
                         f"(4096, 1024); got {shape!r}")
    return shape


def _shape_and_range(name: str, shape, low, high) -> tuple[int, ...]:
    shape = _shape(shape)
    if not low < high:
        raise ValueError(f"{name} needs low < high, got low={low}, high={high}")
    return shape


def random_integers(shape, low: int, high: int, seed: int = 0, dtype="int32") -> tf.Tensor:
    """Integers uniform in [low, high), e.g. ``random_integers((4096, 1024), 0, 2)`` for bits.

    Args:
        shape: (individuals, *genome), positive sizes.
        low, high: the range, ``high`` excluded; both must fit ``dtype``.
        seed: the same seed gives the same population, in every mode and on every machine.
        dtype: of the genes.

    Returns:
        A tensor of ``shape`` and ``dtype``.
    """
    shape = _shape_and_range("random_integers", shape, low, high)
    check_fits("random_integers", low, high, tf.as_dtype(dtype))
    x = rng.integers(rng.key(seed), Rows.all(shape[0]), shape[1:], high - low) + low
    return tf.cast(x, dtype)


def uniform(shape, low: float, high: float, seed: int = 0, dtype="float32") -> tf.Tensor:
    """Floats uniform in [low, high); the arguments and the result as for ``random_integers``."""
    shape = _shape_and_range("uniform", shape, low, high)
    x = low + (high - low) * rng.uniform(rng.key(seed), Rows.all(shape[0]), shape[1:])
    return tf.cast(x, dtype)


def permutations(n: int, length: int, seed: int = 0) -> tf.Tensor:
    """``n`` random permutations of 0..length-1, int32 (n, length)."""
    shape = _shape((n, length))
    return tf.argsort(rng.uniform(rng.key(seed), Rows.all(shape[0]), shape[1:]), axis=1, stable=True)
