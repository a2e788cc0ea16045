"""The timeline: one lane per thread that did work, events coloured by kind, steps marked.

Drawn with matplotlib, so it renders in a notebook, in a PNG and headless. Nested events are drawn
inside their thread's lane, one band per nesting depth (the outermost at the bottom). ``steps``
zooms to some of the marked steps; several traces drawn with ``timelines`` share one time axis, so a
faster program's steps are visibly shorter.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from course_lib.profile import kinds
from course_lib.profile.trace import HOST_PLANE, Trace

MAX_DEPTH = 6  # deeper events (XLA's compiler passes, executor bookkeeping) are too thin to see


def lane_names(threads: Sequence[tuple[str, str]]) -> list[str]:
    """Short labels, one per (plane, thread): pool threads lose their numeric ids and are numbered instead
    ("tf_Compute 1", "tf_Compute 2"); device lanes keep their plane."""
    bases = [re.sub(r"/-?\d+$", "", t) if p == HOST_PLANE else f"{p.removeprefix('/device:')} {t}"
             for p, t in threads]
    seen: dict[str, int] = defaultdict(int)
    out = []
    for base in bases:
        seen[base] += 1
        out.append(f"{base} {seen[base]}" if bases.count(base) > 1 else base)
    return out


def _window(trace: Trace, steps) -> tuple[float, float, list]:
    marked = trace.require_steps()
    if steps is None:
        chosen = marked
    else:
        first, last = (steps, steps) if isinstance(steps, int) else steps
        chosen = [s for s in marked if first <= s.number <= last]
        if not chosen:
            have = ", ".join(str(s.number) for s in marked)
            raise ValueError(f"no marked step in {steps!r}; the trace has steps {have}")
    return chosen[0].start_us, chosen[-1].end_us, chosen


def _bars(trace: Trace, steps) -> tuple[float, float, list, list, dict]:
    """The window, the chosen steps, the lanes that did work in it (step thread first) and the bars."""
    lo, hi, chosen = _window(trace, steps)
    bars: dict = defaultdict(list)  # (lane, depth, kind) -> [(start ms, width ms)]
    lanes: list = []
    for e in trace.events:
        if e.duration_us <= 0 or e.end_us <= lo or e.start_us >= hi or e.depth >= MAX_DEPTH:
            continue
        k = kinds.kind(e)
        if k == "step":
            continue
        lane = (e.plane, e.thread)
        if lane not in lanes:
            lanes.append(lane)
        start, end = max(e.start_us, lo), min(e.end_us, hi)
        bars[(lane, e.depth, k)].append(((start - lo) / 1e3, (end - start) / 1e3))
    main = (HOST_PLANE, chosen[0].thread)
    lanes.sort(key=lambda lane: (lane != main, lane[0] != HOST_PLANE, lane_names([lane])[0], lane[1]))
    return lo, hi, chosen, lanes, bars


def draw(trace: Trace, ax, steps: int | tuple[int, int] | None = None, title: str = "") -> set[str]:
    """Draw ``trace`` on ``ax`` (x in ms from the first step shown); the kinds drawn."""
    lo, hi, chosen, lanes, bars = _bars(trace, steps)
    band = 0.85 / MAX_DEPTH
    for (lane, depth, k), spans in bars.items():
        y = len(lanes) - 1 - lanes.index(lane)
        ax.broken_barh(spans, (y - 0.42 + depth * band, band * 0.95), facecolors=kinds.COLOURS[k], linewidth=0)
    for s in chosen:
        x = (s.start_us - lo) / 1e3
        ax.axvline(x, color="k", lw=0.8, ls="--")
        ax.text(x, len(lanes) - 0.45, f" step {s.number}", fontsize=8, va="bottom")
    ax.set_yticks(range(len(lanes)), lane_names(lanes)[::-1], fontsize=8)
    ax.set_ylim(-0.6, len(lanes) + 0.1)
    ax.set_xlim(0, (hi - lo) / 1e3)
    ax.set_xlabel("ms from the first step shown")
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    return {k for (_, _, k) in bars}


def _legend(fig, drawn: set[str]) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=kinds.COLOURS[k], label=k) for k in kinds.KINDS if k in drawn]
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, frameon=False)


def timelines(traces: Sequence[Trace], titles: Sequence[str] = (), steps=None, width: float = 11.0):
    """Several traces one above the other on one time axis; returns the figure."""
    import matplotlib.pyplot as plt

    traces = list(traces)
    if not traces:
        raise ValueError("timelines needs at least one trace")
    heights = [0.8 + 0.45 * len(_bars(t, steps)[3]) for t in traces]
    fig, axes = plt.subplots(len(traces), 1, figsize=(width, sum(heights) + 0.6), sharex=True,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    drawn: set[str] = set()
    spans = []
    for ax, trace, title in zip(axes[:, 0], traces, list(titles) + [""] * len(traces)):
        drawn |= draw(trace, ax, steps, title)
        spans.append(ax.get_xlim()[1])
    axes[0, 0].set_xlim(0, max(spans))
    for ax in axes[:-1, 0]:
        ax.set_xlabel("")
    _legend(fig, drawn)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def timeline(trace: Trace, steps=None, title: str = "", width: float = 11.0):
    """One trace's timeline; ``steps``: a step number or a (first, last) range to zoom to."""
    return timelines([trace], [title], steps, width)
