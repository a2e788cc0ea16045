"""``course bench tsp``: time to quality on random cities, the NumPy local search against the plain
and the memetic GA, each for the same budget, one after the other in one run, on several instances; each
tour read against LKH-3's (elkai, the ``bench`` extra) where it is installed."""

from __future__ import annotations

import time

import numpy as np

from course_lib.benchmarks.command import Report, command
from course_lib.lessons import applications as app
from course_lib.problems import tsp


def print_quality_table(rows: list[dict]) -> None:
    """``applications.quality_table`` as text."""
    print(f"{'method':44}{'work':>26}{'length':>10}{'% above':>9}{'s to 1%':>9}{'ended':>8}{'CPU s':>8}")
    for r in rows:
        within = r["s to within 1%"]
        print(f"{r['method']:44}{r['work']:>26}{r['length']:>10.4f}{r['% above shortest']:>8.2f}%"
              f"{within if isinstance(within, str) else f'{within:.2f}':>9}{r['ended at s']:>8.1f}{r['CPU s']:>8.1f}")


def percent(gap: float, sign: str = "") -> str:
    """A gap in % to two decimals; a tour a hair shorter than LKH-3's reads 0.00, not -0.00."""
    return f"{round(gap, 2) + 0.0:{sign}.2f}"


def gap_summary(gaps: dict) -> list[str]:
    """One line per method: its % above LKH-3's tour at the budget, per instance, with the median and the
    largest (``gaps``: method -> one % per instance)."""
    return [f"  {name:44} % above LKH-3: {', '.join(map(percent, values))}; median {percent(np.median(values))}, "
            f"largest {percent(max(values))}" for name, values in gaps.items()]


def _tsp_sizes(args) -> str | None:
    if min(args.cities) < 10 or min(args.budget) <= 0:
        return "--cities must be >= 10 and --budget > 0"
    return "--instances must be >= 1" if args.instances < 1 else None


@command("tsp", repeats=None, quick={"cities": [100], "budget": [5.0], "instances": 1}, check=_tsp_sizes,
               options={"--cities": dict(type=int, nargs="+", default=[200, 1000], help="instance sizes"),
                        "--budget": dict(type=float, nargs="+", default=[15.0, 60.0],
                                         help="seconds per method, one per instance size (the last one repeats)"),
                        "--instances": dict(type=int, default=3, help="random instances per size"),
                        "--seed": dict(type=int, default=1001,
                                       help="the first instance's seed (then +1, ...); the lectures and exercises "
                                            "use seeds below 1000"),
                        "--methods": dict(nargs="+", choices=list(app.METHODS), default=list(app.METHODS),
                                          help="which methods to run"),
                        "--clock": dict(choices=["wall", "cpu"], default="wall",
                                        help="budget and times in wall time, or in this process's CPU time "
                                             "(on a busy machine)")})
def bench_tsp(args):
    """Time to quality on random cities in the unit square: multi-start nearest neighbour + 2-opt +
    or-opt (NumPy), the plain GA and the memetic GA (XLA, compile included), each for the same
    budget, one after the other, on ``--instances`` instances per size. With elkai installed, every
    method's tour at the budget is read against LKH-3's tour of the same cities (% above it); without it,
    up to 200 cities, against the best of 30 descents."""
    sizes, budgets = args.cities, args.budget
    lkh = tsp.lkh_available()
    if not lkh:
        print("elkai (LKH-3) is not installed: tours are read against each other; pip install -e '.[bench]' "
              "to read them against LKH-3's")
    results = []
    for k, n in enumerate(sizes):
        budget = budgets[min(k, len(budgets) - 1)]
        gaps: dict[str, list[float]] = {}
        for seed in range(args.seed, args.seed + args.instances):
            xy = app.cities("random", n, seed=seed)
            traces = app.time_to_quality(xy, budget, seed=seed, clock=args.clock, methods=tuple(args.methods))
            rows = app.quality_table(traces, budget)
            print(f"\n{n} random cities (seed {seed}), {budget:g} s of {args.clock} time per method, compile included")
            print_quality_table(rows)
            record = {"cities": n, "seed": seed, "budget_s": budget, "clock": args.clock, "table": rows,
                      "traces": {name: {"seconds": t.seconds, "lengths": t.lengths, "work": t.work}
                                 for name, t in traces.items()}}
            d = app.distance_matrix(xy)
            if lkh:
                began = time.perf_counter()
                best = tsp.tour_length(tsp.lkh_tour(xy), d)
                record["lkh3"] = {"length": best, "seconds": time.perf_counter() - began}
                print(f"LKH-3 (elkai, 1 run): {best:.4f} in {record['lkh3']['seconds']:.1f} s")
            elif n <= 200:
                reference = app.multi_start(d, float("inf"), starts=30, seed=seed, clock=args.clock)
                best = reference.lengths[-1]
                record["best_of_30_descents"] = {"length": best, "seconds": reference.seconds[-1]}
                print(f"best of 30 descents: {best:.4f} (in {reference.seconds[-1]:.1f} s)")
            else:
                results.append(record)
                continue
            for name, t in traces.items():
                gap = 100 * (t.length_at(budget) / best - 1)
                gaps.setdefault(name, []).append(gap)
                print(f"  {name:44} {percent(gap, '+')}% against it at {budget:g} s; "
                      f"within 1% of it after {t.time_to(1.01 * best):.1f} s")
            results.append(record)
        if lkh and gaps:
            print(f"\n{n} cities, {budget:g} s, {args.instances} instances:")
            print("\n".join(gap_summary(gaps)))
    return Report([], {"results": results})
