"""``course bench strategies``: tf.distribute strategies. The command is defined beside the code it measures
(``course_lib.distribute.bench_strategies``); importing it registers it."""

from course_lib.distribute import bench_strategies

__all__ = ["bench_strategies"]
