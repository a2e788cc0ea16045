"""``course bench xla``: XLA's fusion and compilation. jit_compile against auto-clustering in live
processes timed in turns, then the plain graph against XLA for each of lecture 07's workloads and sizes
(the workloads live in ``course_lib.xla``)."""

from __future__ import annotations

from course_lib import bench
from course_lib.benchmarks.command import command
from course_lib.xla import WORKLOADS, jit_vs_auto, workload_variants


@command(
    "xla", repeats=5, quick={"n": 10_000, "sizes": "16,10000", "repeats": 2},
    options={
        "--n": dict(type=int, default=1_000_000, help="elements for jit_compile vs auto-clustering"),
        "--sizes": dict(default="16,10000,1000000", help="comma-separated sizes for the workloads"),
        "--no-auto-jit": dict(action="store_true", help="skip auto-clustering"),
    })
def bench_xla(args) -> list[bench.Comparison]:
    """``course bench xla``: jit_compile vs auto-clustering, then graph vs XLA for each workload and size."""
    results = [jit_vs_auto(n=args.n, repeats=args.repeats, auto=not args.no_auto_jit)]
    for workload in WORKLOADS:
        for n in (int(s) for s in args.sizes.split(",")):
            results.append(bench.compare({name: build(workload, n) for name, build in workload_variants().items()},
                                         repeats=args.repeats, title=f"{workload}, n={n:,}",
                                         params={"workload": workload, "n": n}))
    for result in results:
        print(result, end="\n\n")
    return results
