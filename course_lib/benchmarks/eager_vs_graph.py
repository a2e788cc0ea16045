"""``course bench eager-vs-graph``: a function's eager, graph and XLA calls.

The command is defined beside the code it measures (``course_lib.graphs.bench_eager_vs_graph``);
importing it registers it."""

from course_lib.graphs import bench_eager_vs_graph

__all__ = ["bench_eager_vs_graph"]
