"""``course profile MODULE:FUNCTION``: profile any zero-argument callable and write what the reader shows.

The output folder gets the profiler's own log (``trace/``, which TensorBoard's Profile tab also
opens), the op tables and the step breakdown as text, the counters and the hypothesis as JSON, the
timeline as a PNG and the trace in Chrome's format (``trace.json``) for Perfetto or chrome://tracing.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from course_lib.profile.capture import capture
from course_lib.profile.chrome import write_chrome
from course_lib.profile.hypothesis import hypothesis
from course_lib.profile.ops import op_stats
from course_lib.profile.timeline import timeline
from course_lib.profile.trace import ProfileError, Trace

DEFAULT_OUT = "build/profiles/course-profile"


def load_target(target: str):
    """The callable named by ``MODULE:FUNCTION``; a clear error when it is not one."""
    module, _, name = target.partition(":")
    if not module or not name:
        raise ProfileError(f"name the callable as MODULE:FUNCTION (e.g. mypackage.train:one_step), got {target!r}")
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise ProfileError(f"cannot import {module!r} ({exc}); run from the folder that holds it, "
                           "or put it on PYTHONPATH") from None
    for part in name.split("."):
        if not hasattr(obj, part):
            raise ProfileError(f"{module} has no {name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ProfileError(f"{target} is a {type(obj).__name__}, not a callable")
    return obj


def write(trace: Trace, out: str | Path) -> dict[str, Path]:
    """Write the tables, the counters, the hypothesis, the timeline PNG and the Chrome JSON into ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    h = hypothesis(trace)
    paths = {"ops by type": out / "op_types.txt", "ops": out / "ops.txt", "breakdown": out / "steps.txt",
             "summary": out / "summary.json", "timeline": out / "timeline.png", "chrome": out / "trace.json"}
    paths["ops by type"].write_text(repr(op_stats(trace)) + "\n")
    paths["ops"].write_text(repr(op_stats(trace, by="op")) + "\n")
    paths["breakdown"].write_text(repr(h.breakdown) + "\n")
    summary = {"hypothesis": h.sentence, "bottleneck": h.bottleneck, "share": h.share,
               "counters": {r["counter"]: r["value"] for r in h.counters.rows},
               "traces by function": dict(h.counters.traces), "xplane": str(trace.path)}
    paths["summary"].write_text(json.dumps(summary, indent=2) + "\n")
    fig = timeline(trace)
    fig.savefig(paths["timeline"], dpi=110)
    plt.close(fig)
    write_chrome(trace, paths["chrome"])
    return paths


def run(target: str, *, steps: int = 3, warmup: int = 1, out: str | Path = DEFAULT_OUT) -> int:
    """``course profile TARGET``: capture, write, print the hypothesis and the files; an exit code."""
    try:
        fn = load_target(target)
        out = Path(out)
        trace = capture(fn, steps, warmup=warmup, logdir=out / "trace")
        paths = write(trace, out)
    except (ProfileError, ValueError, TypeError) as exc:
        print(f"course profile: {exc}", file=sys.stderr)
        return 2
    print(hypothesis(trace).sentence)
    for what, path in paths.items():
        print(f"{what:>12}: {path}")
    return 0
