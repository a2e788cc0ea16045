"""``course bench nsga3``: NSGA-III compiled whole on DTLZ problems with 5 and 8 objectives.

In one run: the IGD of the final front against the true front on DTLZ1 (5 objectives) and DTLZ2
(5 and 8), per seed, with Deb and Jain's settings, next to the values their paper reports;
generations per second of the engine (XLA) and of a NumPy NSGA-III (the same algorithm: random
mates, simulated binary crossover, polynomial mutation, ``problems.nsga3_numpy.survivors``) at
large populations; and the survivor selection alone, compiled against NumPy, against the pool.

Settings, from Deb and Jain, "An evolutionary many-objective optimization algorithm using
reference-point-based nondominated sorting approach, part I", IEEE Transactions on Evolutionary
Computation 18(4), 2014 (Tables I-III): population 212 (210 directions, p = 6) for 5 objectives and
156 (two layers, p = 3 and 2) for 8; 600 generations for DTLZ1 with 5 objectives, 350 and 500 for
DTLZ2 with 5 and 8; SBX with eta 30 and probability 1, polynomial mutation with eta 20 and rate
1 / n; k = 5 (DTLZ1), 10 (DTLZ2); IGD against the points where the directions meet the true front.
"""

from __future__ import annotations

import time

from course_lib import bench, evo
from course_lib.lessons.multiobjective import selection_speed
from course_lib.problems import dtlz
from course_lib.problems.nsga3_numpy import numpy_nsga3

# (DTLZ number, objectives) -> (population, generations, the paper's NSGA-III IGD best, median, worst)
PAPER = {
    (1, 5): (212, 600, (5.116e-4, 9.799e-4, 1.979e-3)),
    (2, 5): (212, 350, (4.254e-3, 4.982e-3, 5.862e-3)),
    (2, 8): (156, 500, (1.371e-2, 1.571e-2, 1.811e-2)),
}


def accuracy(seeds, generations_scale: float = 1.0) -> list[dict]:
    """Final IGD per (problem, seed) with the paper's population and (scaled) generations."""
    rows = []
    for (number, m), (size, generations, paper) in PAPER.items():
        problem = dtlz.dtlz(number, m)
        gens = max(1, round(generations * generations_scale))
        for seed in seeds:
            model = dtlz.model(problem, evo.selection.NSGA3(), mode="xla", seed=seed)
            start = time.perf_counter()
            result = model.evolve(dtlz.start(problem, size, seed), generations=gens)
            rows.append({"problem": f"DTLZ{number}", "objectives": m, "population": size, "generations": gens,
                         "seed": seed, "igd": result.front.igd, "paper median": paper[1],
                         "front size": len(result.front), "seconds with compile": time.perf_counter() - start})
            print("  " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in rows[-1].items()),
                  flush=True)
    return rows


def speed(sizes, generations: int, repeats: int, numpy_generations: int) -> list[dict]:
    """Generations per second on DTLZ2 with 5 objectives at each population: the engine under XLA (the
    first call, which compiles, apart) and the NumPy NSGA-III, in the same run."""
    problem = dtlz.dtlz(2, 5)
    rows = []
    for size in sizes:
        model = dtlz.model(problem, evo.selection.NSGA3(), mode="xla")
        pop = dtlz.start(problem, size)
        result = bench.compare(
            {"NumPy NSGA-III": lambda size=size: numpy_nsga3(problem, size, numpy_generations),
             "evo xla": lambda model=model, pop=pop: model.evolve(pop, generations=generations)},
            repeats=repeats, warmup=1, number=1, title=f"NSGA-III on DTLZ2 (5 objectives), population {size:,}")
        print(result, end="\n\n")
        numpy_rate = numpy_generations / result["NumPy NSGA-III"].median_s
        engine_rate = generations / result["evo xla"].median_s
        rows.append({"population": size, "NumPy gen/s": numpy_rate, "evo xla gen/s": engine_rate,
                     "ratio": engine_rate / numpy_rate})
    return rows


def _print_rows(title: str, rows: list[dict]) -> None:
    print(title)
    print(bench.text_table_of(rows, ".4g"), end="\n\n")


@bench.command(
    "nsga3", repeats=3,
    quick={"seeds": "0", "generations_scale": 0.02, "sizes": "256", "generations": 5, "numpy_generations": 1,
           "pools": "256,512", "repeats": 1},
    options={
        "--seeds": dict(default="0,1,2", help="seeds of the IGD runs"),
        "--generations-scale": dict(type=float, default=1.0,
                                    help="fraction of the paper's generations the IGD runs use"),
        "--sizes": dict(default="1000,4000", help="populations of the generations-per-second comparison"),
        "--generations": dict(type=int, default=20, help="engine generations per timed call"),
        "--numpy-generations": dict(type=int, default=2, help="NumPy NSGA-III generations per timed call"),
        "--pools": dict(default="500,1000,2000,4000", help="pool sizes of the selection-alone timing"),
    })
def bench_nsga3(args) -> bench.Report:
    """``course bench nsga3``: IGD of NSGA-III on DTLZ1 (5 objectives) and DTLZ2 (5, 8) against Deb and Jain's
    figures, generations per second against a NumPy NSGA-III, and the selection alone against the pool."""
    finals = accuracy([int(s) for s in args.seeds.split(",")], args.generations_scale)
    _print_rows("final IGD against the true front (Deb and Jain's settings)", finals)
    rates = speed([int(s) for s in args.sizes.split(",")], args.generations, args.repeats, args.numpy_generations)
    _print_rows("generations per second, DTLZ2 with 5 objectives", rates)
    selection = selection_speed([int(s) for s in args.pools.split(",")], args.repeats)
    _print_rows("NSGA-III selection alone, DTLZ2 with 5 objectives (half the pool kept)", selection)
    return bench.Report([], {"final": finals, "speed": rates, "selection": selection})
