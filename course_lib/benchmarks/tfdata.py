"""``course bench tfdata``: one epoch of each tf.data pipeline variant against the naive one, per
thread pool size (the pipelines, the simulated latency and the shards live in ``course_lib.data``)."""

from __future__ import annotations

from course_lib import bench
from course_lib.benchmarks.command import command
from course_lib.data import Latency, compare_pipelines, write_shards


@command(
    "tfdata", repeats=7, quick={"shards": 2, "records": 4, "open_ms": 1.0, "step_ms": 4.0, "repeats": 2},
    options={
        "--shards": dict(type=int, default=4, help="TFRecord files"),
        "--records": dict(type=int, default=32, help="records per file"),
        "--batch": dict(type=int, default=16, help="batch size"),
        "--open-ms": dict(type=float, default=10.0, help="simulated latency of opening a file"),
        "--record-ms": dict(type=float, default=1.0, help="simulated latency of reading a record"),
        "--map-ms": dict(type=float, default=1.0, help="simulated latency of one decode call"),
        "--step-ms": dict(type=float, default=40.0, help="the consumer's computing step per batch (0: none)"),
        "--threads": dict(type=int, nargs="+", default=[0, 16],
                          help="private thread pool sizes to compare (0: tf.data's default pool)"),
    })
def bench_pipelines(args) -> list[bench.Comparison]:
    """``course bench tfdata``: one epoch of each pipeline variant against the naive one."""
    latency = Latency(args.open_ms / 1e3, args.record_ms / 1e3, args.map_ms / 1e3)
    records = []
    with write_shards(args.shards, args.records) as shards:
        for threads in args.threads:
            result = compare_pipelines(shards, latency=latency, batch_size=args.batch, threads=threads or None,
                                       step_ms=args.step_ms, repeats=args.repeats)
            result.title += f", {threads or 'default'} threads"
            print(result, end="\n\n")
            records.append(result)
    return records
