"""The course's argument checks and names, so that a bad argument reads the same in every lecture module:
``whole`` for counts, ``share`` for fractions, ``short_device_name`` for device names in messages and tables.

The engine (``course_lib.evo``) imports nothing of the course, so it keeps its own checks; these follow
the same wording, so a learner meets one kind of message."""

from __future__ import annotations

import re
from numbers import Integral, Real


def whole(name: str, value, minimum: int, owner: str | None = None) -> int:
    """``value`` as an int: a ``TypeError`` when it is not an integer (bool is not), a ``ValueError`` below
    ``minimum``; both say "[owner: ]name must be a whole number >= minimum, got ..."."""
    wanted = f"{owner + ': ' if owner else ''}{name} must be a whole number >= {minimum}, got"
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{wanted} {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{wanted} {value!r}")
    return int(value)


def share(name: str, value) -> float:
    """``value`` as a float in [0, 1]: a ``TypeError`` when it is not a number (bool is not), a ``ValueError``
    outside [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__} {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1] (a share), got {value!r}")
    return float(value)


def short_device_name(device: str) -> str:
    """``/job:localhost/replica:0/task:0/device:CPU:1`` -> ``CPU:1``; a name without an index gets 0
    (``/device:GPU`` -> ``GPU:0``); anything else (the empty name too) comes back as it is."""
    found = re.search(r"(?:device:)?([A-Za-z_]+):(\d+)$", device or "") or re.search(r"device:([A-Za-z_]+)()$",
                                                                                     device or "")
    return f"{found.group(1)}:{found.group(2) or 0}" if found else device
