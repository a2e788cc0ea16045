"""Argument checks and names shared by the engine and the course, so that a bad argument reads the
same everywhere: ``whole`` for counts, ``short_device_name`` for device names in messages and tables."""

from __future__ import annotations

import re

import numpy as np


def whole(name: str, value, minimum: int, owner: str | None = None) -> int:
    """``value`` as an int; a ``TypeError`` when it is not an integer (bool is not), a ``ValueError``
    when it is below ``minimum``, each saying "[owner: ]name must be a whole number >= minimum"."""
    prefix = f"{owner}: " if owner else ""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{prefix}{name} must be a whole number >= {minimum}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{prefix}{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def short_device_name(device: str) -> str:
    """``/job:localhost/replica:0/task:0/device:CPU:1`` -> ``CPU:1``; a name without an index gets 0
    (``/device:GPU`` -> ``GPU:0``); an empty name stays empty."""
    match = re.search(r"(?:device:)?([A-Za-z_]+):(\d+)$", device or "")
    if match:
        return f"{match.group(1)}:{match.group(2)}"
    bare = re.search(r"device:([A-Za-z_]+)$", device or "")
    return f"{bare.group(1)}:0" if bare else device
