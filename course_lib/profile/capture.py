"""Capturing a trace of a few steps of any callable with the TensorFlow profiler.

The warm-up calls run first, unprofiled (tracing and compiling a program's functions belong to its
start, not to its steps); then each profiled call is marked as one step with
``tf.profiler.experimental.Trace(name, step_num=i, _r=1)``, which is what the reader's step
breakdown, op table and timeline are measured against.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from course_lib.profile.trace import ProfileError, Trace, read


def capture(fn: Callable[[], Any], steps: int = 3, *, warmup: int = 1, logdir: str | Path | None = None,
            name: str = "step") -> Trace:
    """Profile ``steps`` calls of ``fn`` after ``warmup`` unprofiled ones; the trace, read.

    Args:
        fn: a zero-argument callable running one step; its result is brought to the host
            (``bench.force``) inside the step, so asynchronous work is counted where it ran.
        steps: profiled calls, each marked as one step.
        warmup: calls before the profiler starts.
        logdir: where the profiler writes (earlier traces there are removed); a temporary folder,
            deleted after reading, when None.
        name: the step markers' name.

    The profiler runs at its default levels: host events down to level 2 (every op the runtime runs,
    the executor, tf.data's iterators), no Python function events, device events on. No options are
    passed: this TensorFlow's C++ profiler session does not read the ``ProfilerOptions`` its Python API
    hands it (it logs "host_tracer_level expects an i value" for each option and keeps its defaults;
    a Python tracer asked for records nothing), so asking for other levels would only add log lines.
    """
    import tensorflow as tf

    from course_lib.bench import force

    if not callable(fn):
        raise TypeError(f"capture needs a zero-argument callable, got {type(fn).__name__}")
    if not isinstance(steps, int) or steps < 1 or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"steps must be >= 1 and warmup >= 0 (whole numbers), got {steps!r} and {warmup!r}")
    for _ in range(warmup):
        force(fn())
    tmp = tempfile.mkdtemp(prefix="course-profile-") if logdir is None else None
    folder = Path(tmp or logdir)
    shutil.rmtree(folder / "plugins" / "profile", ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        tf.profiler.experimental.start(str(folder))
    except Exception as exc:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise ProfileError(f"could not start the TensorFlow profiler ({type(exc).__name__}: {exc}); only one "
                           "profiling session can run at a time: stop the other one first") from exc
    try:
        for i in range(steps):
            with tf.profiler.experimental.Trace(name, step_num=i, _r=1):
                force(fn())
    finally:
        tf.profiler.experimental.stop()
    try:
        return read(folder)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
