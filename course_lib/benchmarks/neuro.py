"""``course bench neuro``: neuroevolution. The command is defined beside the code it measures
(``course_lib.evo.neuro.bench_neuro``); importing it registers it."""

from course_lib.evo.neuro import bench_neuro

__all__ = ["bench_neuro"]
