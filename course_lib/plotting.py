"""Matplotlib figures shared by the lectures.

Figures are built with the object-oriented API (``fig, ax = plt.subplots()``) so a
lecture can place them in its own axes, and they never call ``plt.show``: the
notebook shows whatever the cell returns.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt


def _axes(ax, figsize=(6, 3)):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def speedup_bars(comparison, ax=None):
    """Speedup of each variant over the baseline, with the spread as error bars."""
    ax = _axes(ax)
    base = comparison[comparison.baseline].median_s
    names, values, lower, upper = [], [], [], []
    for t in comparison.timings:
        lo, hi = t.spread_s
        speed = base / t.median_s
        names.append(t.name)
        values.append(speed)
        lower.append(max(speed - base / hi, 0.0))
        upper.append(max(base / lo - speed, 0.0))
    colors = ["#999999" if n == comparison.baseline else "#1f77b4" for n in names]
    ax.barh(names, values, xerr=[lower, upper], color=colors, capsize=3)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel(f"speedup over {comparison.baseline} (median, quartiles)")
    if comparison.title:
        ax.set_title(comparison.title)
    for y, (v, up) in enumerate(zip(values, upper)):
        ax.annotate(f"{v:.2f}x", (v + up, y), xytext=(4, 0), textcoords="offset points", va="center")
    ax.set_xlim(0, 1.3 * max(v + up for v, up in zip(values, upper)))  # room for the labels right of the bars
    return ax


def timeline(events: Sequence[Mapping], ax=None, *, lane_key: str = "lane", label_key: str = "label",
             lanes: Sequence | None = None, labels: Sequence | None = None):
    """Horizontal spans on lanes: each event has ``start`` and ``end`` (seconds), a lane and a label.

    Used for tf.data pipelines (which thread produced which element, when) and for
    profiles of training steps. Lanes (top to bottom) and label colours follow the order
    of first appearance, after those listed in ``lanes`` and ``labels``: fixing them
    keeps colours and legends the same across several plots.
    """
    ax = _axes(ax, figsize=(8, 3))
    lanes = list(lanes or [])
    labels = list(labels or [])
    cmap = plt.get_cmap("tab10")
    for ev in events:
        lane = ev[lane_key]
        if lane not in lanes:
            lanes.append(lane)
        label = ev.get(label_key, "")
        if label not in labels:
            labels.append(label)
        ax.broken_barh([(ev["start"], ev["end"] - ev["start"])], (lanes.index(lane) - 0.4, 0.8),
                       facecolors=cmap(labels.index(label) % 10), edgecolor="white", linewidth=0.5)
    ax.set_yticks(range(len(lanes)), [str(lane) for lane in lanes])
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    handles = [matplotlib.patches.Patch(color=cmap(i % 10), label=str(lab)) for i, lab in enumerate(labels)]
    if 1 < len(handles) <= 10:
        ax.legend(handles=handles, loc="upper right", fontsize="small")
    return ax


def fitness_history(history: Mapping[str, Sequence[float]], ax=None, *, title: str = ""):
    """Best and mean fitness per generation, with the standard deviation as a band."""
    ax = _axes(ax)
    best = list(history["best"])
    gens = range(len(best))
    ax.plot(gens, best, label="best")
    if "mean" in history:
        mean = list(history["mean"])
        ax.plot(gens, mean, label="mean")
        if "std" in history:
            std = list(history["std"])
            ax.fill_between(gens, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)],
                            alpha=0.2, color=ax.lines[-1].get_color())
    ax.set_xlabel("generation")
    ax.set_ylabel("fitness")
    ax.legend()
    if title:
        ax.set_title(title)
    return ax


def fitness_histories(runs: Mapping, stat: str = "best", ax=None, *, title: str = ""):
    """One line per run (name -> an evolve Result or its history dict) of ``stat`` fitness per generation."""
    ax = _axes(ax)
    for name, run in runs.items():
        history = getattr(run, "history", run)
        ax.plot(range(1, len(history[stat]) + 1), history[stat], label=name)
    ax.set_xlabel("generation")
    ax.set_ylabel(f"{stat} fitness")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return ax


def throughput_bars(names: Sequence[str], values: Sequence[float], *, unit: str, ax=None, title: str = "",
                    log: bool = False):
    """Plain bars of a rate (images/s, gene-generations/s) for step-by-step case studies."""
    ax = _axes(ax)
    ax.barh(list(names), list(values), color="#1f77b4")
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    if log:
        ax.set_xscale("log")
    if title:
        ax.set_title(title)
    for y, v in enumerate(values):
        ax.annotate(f"{v:.3g}", (v, y), xytext=(4, 0), textcoords="offset points", va="center")
    return ax


def cart_pole(states, axes=None, *, snapshots: int = 12, half_length: float = 0.5, track: float = 2.4,
              angle_limit_deg: float = 12.0, tau: float = 0.02, title: str = ""):
    """A cart-pole episode, ``states`` (steps + 1, 4: x, x_dot, theta, theta_dot): above, cart and
    pole drawn at evenly spaced steps (early ones faint, colour by time); below, pole angle and cart
    position over time against their limits. ``axes``: two axes, or None for a new figure."""
    import numpy as np

    if axes is None:
        _, axes = plt.subplots(2, 1, figsize=(8, 4.5), layout="constrained", height_ratios=[1.2, 1])
    top, bottom = axes
    states = np.asarray(states)
    picks = np.linspace(0, len(states) - 1, min(snapshots, len(states))).round().astype(int)
    cmap = plt.get_cmap("viridis")
    for k, i in enumerate(picks):
        x, theta = states[i, 0], states[i, 2]
        share = k / max(len(picks) - 1, 1)
        color, alpha = cmap(share), 0.25 + 0.75 * share
        top.add_patch(matplotlib.patches.Rectangle((x - 0.2, -0.1), 0.4, 0.2, color=color, alpha=alpha))
        tip = (x + 2 * half_length * np.sin(theta), 0.1 + 2 * half_length * np.cos(theta))
        top.plot([x, tip[0]], [0.1, tip[1]], color=color, alpha=alpha, linewidth=2)
    top.axhline(-0.1, color="black", linewidth=0.8)
    for edge in (-track, track):
        top.axvline(edge, color="#b00", linestyle="--", linewidth=0.8)
    top.set_xlim(-track - 0.3, track + 0.3)
    top.set_ylim(-0.2, 0.2 + 2 * half_length)
    top.set_aspect("equal")
    top.set_yticks([])
    top.set_xlabel(f"cart position (m); {len(picks)} snapshots, colour from start (purple) to end (yellow)")
    if title:
        top.set_title(title)
    t = np.arange(len(states)) * tau
    bottom.plot(t, np.degrees(states[:, 2]), label="pole angle (degrees)")
    bottom.plot(t, states[:, 0], label="cart position (m)")
    for limit, color in ((angle_limit_deg, "C0"), (track, "C1")):
        for sign in (-1, 1):
            bottom.axhline(sign * limit, color=color, linestyle="--", linewidth=0.8)
    bottom.set_xlabel("time (s)")
    bottom.legend(loc="upper left", fontsize="small")
    return axes


def pareto_front(objectives, true_front=None, ax=None, *, labels: Sequence[str] = (), title: str = ""):
    """Points of a front, 2 or 3 objectives (a 3-D scatter), with the true front as a line or a faint cloud."""
    import numpy as np

    points = np.asarray(objectives, float)
    m = points.shape[1]
    if m not in (2, 3):
        raise ValueError(f"pareto_front plots 2 or 3 objectives, got {m}")
    if ax is None:
        fig = plt.figure(figsize=(5, 4))
        ax = fig.add_subplot(projection="3d" if m == 3 else None)
    if true_front is not None:
        t = np.asarray(true_front, float)
        if m == 2:
            ax.plot(t[:, 0], t[:, 1], ".", markersize=1, color="0.6", label="true front")
        else:
            ax.scatter(*t.T, s=1, color="0.75", alpha=0.3, label="true front")
    ax.scatter(*points.T, s=12, color="C0", label="found")
    names = list(labels) or [f"objective {i + 1}" for i in range(m)]
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    if m == 3:
        ax.set_zlabel(names[2])
    ax.legend()
    if title:
        ax.set_title(title)
    return ax
