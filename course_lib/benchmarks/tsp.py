"""``course bench tsp``: time to quality on random cities, the NumPy local search against the plain
and the memetic GA, each for the same budget, one after the other in one run."""

from __future__ import annotations

from course_lib import bench
from course_lib.lessons import applications as app


def print_quality_table(rows: list[dict]) -> None:
    """``applications.quality_table`` as text."""
    print(f"{'method':44}{'work':>26}{'length':>10}{'% above':>9}{'s to 1%':>9}{'ended':>8}{'CPU s':>8}")
    for r in rows:
        within = r["s to within 1%"]
        print(f"{r['method']:44}{r['work']:>26}{r['length']:>10.4f}{r['% above shortest']:>8.2f}%"
              f"{within if isinstance(within, str) else f'{within:.2f}':>9}{r['ended at s']:>8.1f}{r['CPU s']:>8.1f}")


def _tsp_sizes(args) -> str | None:
    return "--cities must be >= 10 and --budget > 0" if min(args.cities) < 10 or min(args.budget) <= 0 else None


@bench.command("tsp", repeats=None, quick={"cities": [100], "budget": [5.0]}, check=_tsp_sizes,
               options={"--cities": dict(type=int, nargs="+", default=[100, 1000], help="instance sizes"),
                        "--budget": dict(type=float, nargs="+", default=[15.0, 60.0],
                                         help="seconds per method, one per instance size (the last one repeats)"),
                        "--seed": dict(type=int, default=0),
                        "--clock": dict(choices=["wall", "cpu"], default="wall",
                                        help="budget and times in wall time, or in this process's CPU time "
                                             "(on a busy machine)")})
def bench_tsp(args):
    """Time to quality on random cities in the unit square: multi-start nearest neighbour + 2-opt +
    or-opt (NumPy), the plain GA and the memetic GA (XLA, compile included), each for the same
    wall-time budget, one after the other in one run. Up to 200 cities, also the best of 30
    descents, the near-optimal reference the other methods are read against."""
    sizes, budgets = args.cities, args.budget
    results = []
    for k, n in enumerate(sizes):
        budget = budgets[min(k, len(budgets) - 1)]
        xy = app.cities("random", n, seed=args.seed)
        traces = app.time_to_quality(xy, budget, seed=args.seed, clock=args.clock)
        rows = app.quality_table(traces, budget)
        print(f"\n{n} random cities, {budget:g} s of {args.clock} time per method, compile included")
        print_quality_table(rows)
        record = {"cities": n, "budget_s": budget, "clock": args.clock, "table": rows,
                  "traces": {name: {"seconds": t.seconds, "lengths": t.lengths, "work": t.work}
                             for name, t in traces.items()}}
        if n <= 200:
            reference = app.multi_start(app.distance_matrix(xy), float("inf"), starts=30, seed=args.seed,
                                        clock=args.clock)
            best = reference.lengths[-1]
            record["best_of_30_descents"] = {"length": best, "seconds": reference.seconds[-1]}
            print(f"best of 30 descents: {best:.4f} (in {reference.seconds[-1]:.1f} s)")
            for name, t in traces.items():
                print(f"  {name:44} {100 * (t.length_at(budget) / best - 1):+.2f}% against it at {budget:g} s; "
                      f"within 3% of it after {t.time_to(1.03 * best):.1f} s")
        results.append(record)
    return bench.Report([], {"results": results})
