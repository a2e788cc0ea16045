"""tf.data pipelines whose costs are known, so that every speedup can be explained.

The data are real TFRecord shards that this module writes to a temporary folder.
Reading them is slowed down by a simulated storage and decoding latency
(``Latency``: per shard opened, per record read, per call of the map function),
the way a network file system or an image decoder would slow a real pipeline.
The latency is a sleep on the tf.data thread that does the work, so it costs time
but no CPU: on a 2-core machine it shows what overlap and parallelism can hide.

``pipeline(shards, variant)`` builds the same input pipeline at each step of the
usual optimisation path (``VARIANTS``): each is one small function (``BUILDERS``) whose
source, ``source(variant)``, is the technique; every variant yields the same elements.
tf.data's own rewrites that would blur the steps (fusing map and batch into one
asynchronous op, injecting a final prefetch) are switched off, so each variant does
exactly what its code says. ``Work`` is a consumer step that computes for a known time.
A ``Recorder`` passed to it logs each open, read, map, wait and training step with
its thread and time, which ``Recorder.plot`` draws as a timeline.

One module per concern: ``shards`` writes the data, ``latency`` simulates slow storage and decoding,
``recorder`` logs and draws what ran when, ``pipelines`` builds, runs and times the variants (which
``course bench tfdata`` in ``course_lib.benchmarks.tfdata`` calls), ``pipeline_widget`` is the live comparison,
``readings`` turns the lecture's measurements into sentences,
``shuffle`` shows the shuffle buffer, and ``input_bound`` tells input-bound from compute-bound training.
Their public names are gathered here, so ``from course_lib import data`` is all a notebook needs.
"""

from course_lib.data.input_bound import EPOCH_PARTS, Diagnosis, bottleneck_text, diagnose, make_model
from course_lib.data.latency import Latency, decoder, read_shard, transform
from course_lib.data.pipeline_widget import pipeline_widget
from course_lib.data.pipelines import (
    AUTOTUNE,
    BUILDERS,
    VARIANTS,
    Work,
    check_variant,
    compare_pipelines,
    consume,
    describe,
    elements,
    pipeline,
    record_run,
    same_records,
    source,
    transformations,
    xy,
)
from course_lib.data.readings import floor_reading, no_step_reading, steps_compared, steps_reading
from course_lib.data.recorder import Event, Recorder, hidden_text, plot_runs
from course_lib.data.shards import Shards, record_spec, write_shards
from course_lib.data.shuffle import plot_shuffle, shuffle_order

__all__ = [
    "AUTOTUNE", "BUILDERS", "EPOCH_PARTS", "VARIANTS", "Diagnosis", "Event", "Latency", "Recorder", "Shards",
    "Work", "bottleneck_text", "check_variant", "compare_pipelines", "consume", "decoder", "describe", "diagnose",
    "elements",
    "floor_reading", "hidden_text", "make_model", "no_step_reading", "pipeline", "pipeline_widget", "plot_runs",
    "plot_shuffle", "read_shard", "record_run", "record_spec", "same_records", "shuffle_order", "source",
    "steps_compared", "steps_reading", "transform", "transformations", "write_shards", "xy",
]
