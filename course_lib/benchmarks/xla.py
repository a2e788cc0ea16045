"""``course bench xla``: XLA's fusion and compilation. The command is defined beside the code it measures
(``course_lib.xla.bench_xla``); importing it registers it."""

from course_lib.xla import bench_xla

__all__ = ["bench_xla"]
