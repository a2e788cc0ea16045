"""The TensorFlow profiler, read in the notebook: capture a few steps, then read the trace without a server.

``capture`` profiles a callable; ``read`` parses a profiler log folder (``.xplane.pb``) into events;
``timeline``/``timelines`` draw them; ``op_stats``, ``step_breakdown`` and ``counters`` turn them into
tables; ``hypothesis`` says what the trace points at, ``fix_reading`` and ``fix_ratios`` what a fix's
traces and timing say; ``write_chrome`` exports for Perfetto.
"""

from course_lib.profile.breakdown import CATEGORIES, Breakdown, step_breakdown
from course_lib.profile.capture import capture
from course_lib.profile.chrome import chrome_trace, write_chrome
from course_lib.profile.counters import Counters, counters
from course_lib.profile.hypothesis import Hypothesis, fix_ratios, fix_reading, hypothesis
from course_lib.profile.ops import OpTable, op_stats
from course_lib.profile.timeline import timeline, timelines
from course_lib.profile.trace import Event, ProfileError, Step, Trace, read

__all__ = ["CATEGORIES", "Breakdown", "Counters", "Event", "Hypothesis", "OpTable", "ProfileError", "Step",
           "Trace", "capture", "chrome_trace", "counters", "fix_ratios", "fix_reading", "hypothesis", "op_stats",
           "read", "step_breakdown", "timeline", "timelines", "write_chrome"]
