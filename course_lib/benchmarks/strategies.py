"""``course bench strategies``: step time per tf.distribute strategy on virtual CPUs (the model,
data and strategy variants live in ``course_lib.distribute``)."""

from __future__ import annotations

from course_lib import bench
from course_lib.benchmarks.command import command
from course_lib.distribute import regression_data, strategy_variants


@command(
    "strategies", repeats=7, quick={"global_batch": [64], "steps": 2, "repeats": 2},
    options={
        "--devices": dict(type=int, default=4, help="virtual CPU devices"),
        "--global-batch": dict(type=int, nargs="+", default=[64, 1024], help="global batch sizes"),
        "--steps": dict(type=int, default=5, help="training steps per timed call"),
    })
def bench_strategies(args) -> list[bench.Comparison]:
    """``course bench strategies``: step time per strategy on virtual CPUs."""
    from course_lib.devices import virtual_cpus

    cpus = virtual_cpus(args.devices)  # before any other TensorFlow work
    x, y = regression_data()
    builders = strategy_variants(cpus, x, y, steps=args.steps)
    records = []
    for batch in args.global_batch:
        result = bench.compare({name: build(global_batch=batch) for name, build in builders.items()},
                               repeats=args.repeats, title=f"{args.steps} steps, global batch {batch}",
                               params={"global_batch": batch, "steps": args.steps})
        print(result, end="\n\n")
        records.append(result)
    return records
