"""``course bench eager-vs-graph``: lecture 01's three comparisons of a function's eager, graph and XLA
calls (the variants live in ``course_lib.graphs``)."""

from __future__ import annotations

from course_lib import bench
from course_lib.benchmarks.command import command
from course_lib.graphs import matmul_variants, small_ops_variants, train_step_variants


@command(
    "eager-vs-graph", repeats=7, quick={"ops": 20, "batch": 4, "n": 64, "repeats": 2},
    options={
        "--ops": dict(type=int, default=200, help="operations in the small-ops function"),
        "--batch": dict(type=int, default=32, help="images per training step"),
        "--n": dict(type=int, default=1024, help="size of the square matmul"),
    })
def bench_eager_vs_graph(args) -> list[bench.Comparison]:
    """``course bench eager-vs-graph``: lecture 01's three comparisons."""
    cases = [("many small ops", small_ops_variants(), {"ops": args.ops}),
             ("training step", train_step_variants(), {"batch": args.batch}),
             ("one big matmul", matmul_variants(), {"n": args.n})]
    records = []
    for title, builders, sizes in cases:
        result = bench.compare({name: build(**sizes) for name, build in builders.items()},
                               repeats=args.repeats, title=f"{title} {sizes}", params=sizes)
        print(result, end="\n\n")
        records.append(result)
    return records
