"""``course bench gan``: the GAN training step's optimisation journey.

The command is defined beside the code it measures (``course_lib.models.gan.bench_journey``);
importing it registers it."""

from course_lib.models.gan import bench_journey

__all__ = ["bench_journey"]
