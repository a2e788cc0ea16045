"""The live widget of lecture 07: graph against XLA on each workload and size."""

from __future__ import annotations

from typing import Sequence

from course_lib.xla.workloads import GRAPH, WORKLOADS, workload_variants


def speedup_widget(n_choices: Sequence[int] = (16, 10_000, 1_000_000, 16_000_000), *, repeats: int = 5):
    """The live widget comparing graph and XLA on each workload and size."""
    from course_lib.speedup_widget import SpeedupWidget

    return SpeedupWidget(workload_variants(), sizes={"workload": list(WORKLOADS), "n": list(n_choices)},
                         baseline=GRAPH, title="XLA vs graph on this CPU", repeats=repeats)
