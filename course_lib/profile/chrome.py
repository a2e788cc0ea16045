"""Export a trace to the Chrome trace event format, which Perfetto (ui.perfetto.dev) and chrome://tracing open.

One complete event (``"ph": "X"``) per traced event, with its statistics as ``args``; each plane is a
process and each line a thread, named by metadata events (``"ph": "M"``). Times are microseconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from course_lib.profile.trace import Trace


def chrome_trace(trace: Trace) -> dict:
    """The trace as a Chrome trace event dictionary (``{"traceEvents": [...]}``)."""
    pids, tids = {}, {}
    meta = []
    for plane, thread in trace.threads:
        if plane not in pids:
            pids[plane] = len(pids) + 1
            meta.append({"ph": "M", "name": "process_name", "pid": pids[plane], "args": {"name": plane}})
        tids[(plane, thread)] = len(tids) + 1
        meta.append({"ph": "M", "name": "thread_name", "pid": pids[plane], "tid": tids[(plane, thread)],
                     "args": {"name": thread}})
    events = [{"ph": "X", "name": e.name, "pid": pids[e.plane], "tid": tids[(e.plane, e.thread)],
               "ts": round(e.start_us, 3), "dur": round(e.duration_us, 3),
               "args": {k: v if isinstance(v, (int, float, str)) else str(v) for k, v in e.stats.items()}}
              for e in trace.events]
    return {"traceEvents": meta + events, "displayTimeUnit": "ms"}


def write_chrome(trace: Trace, path: str | Path) -> Path:
    """Write ``chrome_trace(trace)`` as JSON to ``path``; open it in ui.perfetto.dev or chrome://tracing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(trace)))
    return path
