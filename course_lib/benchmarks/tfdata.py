"""``course bench tfdata``: tf.data input pipelines. The command is defined beside the code it measures
(``course_lib.data.bench_pipelines``); importing it registers it."""

from course_lib.data import bench_pipelines

__all__ = ["bench_pipelines"]
