"""``course bench moo``: NSGA-II compiled whole against a vectorised NumPy NSGA-II, on ZDT problems.

In one run: generations per second of the engine in each mode and of the NumPy NSGA-II
(``problems.multiobjective.numpy_nsga2``, the same algorithm: random mates, simulated binary crossover,
polynomial mutation, mu + lambda by front and crowding distance) at a large population on ZDT1; how the
non-dominated sort's time grows with the pool; hypervolume against evaluations for both;
and the final hypervolume on ZDT1-3 and DTLZ2 per seed against the true front's.
"""

from __future__ import annotations

import time

import numpy as np

from course_lib import bench
from course_lib.benchmarks.command import Report, command
from course_lib.evo import fusion, pareto
from course_lib.problems import multiobjective as mo


def pymoo_run(size: int, generations: int):
    """pymoo's NSGA-II on its ZDT1 with its defaults, when pymoo is installed (it is not a dependency of
    the course: ``pip install pymoo`` to add it to the comparison); None otherwise."""
    try:
        from pymoo.algorithms.moo.nsga2 import NSGA2
        from pymoo.optimize import minimize
        from pymoo.problems import get_problem
    except ImportError:
        return None
    return lambda: minimize(get_problem("zdt1"), NSGA2(pop_size=size), ("n_gen", generations), seed=0, verbose=False)


def speed(size: int, generations: int, repeats: int, modes) -> bench.Comparison:
    """Generations per second on ZDT1 at ``size``: the NumPy NSGA-II (and pymoo's, if installed) and the
    engine per mode."""
    problem = mo.zdt(1)
    pop = mo.start(problem, size, seed=0)
    variants = {"NumPy NSGA-II": lambda: mo.numpy_nsga2(problem, size, generations)}
    pymoo = pymoo_run(size, generations)
    if pymoo is not None:
        variants["pymoo NSGA-II"] = pymoo
    for mode in modes:
        model = mo.real_coded_model(problem, mode=mode)
        variants[f"evo {mode}"] = lambda model=model: model.evolve(pop, generations=generations)
    return bench.compare(variants, repeats=repeats, warmup=0, number=1,
                         title=f"NSGA-II on ZDT1, population {size:,}, {generations} generations per call",
                         params={"population": size, "generations": generations})


def sort_scaling(sizes, repeats: int) -> list[dict]:
    """Time of NSGA-II's selection (dominance, fronts, crowding) under XLA on random ZDT1 pools."""
    import tensorflow as tf

    zdt1 = mo.zdt(1).fitness.fn
    rows = []
    for p in sizes:
        x = np.random.default_rng(p).random((p, 30))
        values = tf.constant(np.concatenate([zdt1(x), np.zeros((p, 1))], 1), tf.float32)
        fn = fusion.xla_function(lambda v, n=p // 2: pareto.order(v, (-1.0, -1.0), until=n)[:n])
        t = bench.measure(lambda fn=fn, values=values: fn(values).numpy(), name=f"pool {p}", repeats=repeats,
                          warmup=1, number=1)
        rows.append({"pool": p, "ms": t.median_s * 1e3})
    for a, b in zip(rows, rows[1:]):
        b["growth exponent"] = float(np.log(b["ms"] / a["ms"]) / np.log(b["pool"] / a["pool"]))
    return rows


def hypervolume_curves(size: int, generations: int) -> dict:
    """Hypervolume (reference (1.1, 1.1)) after each generation against evaluations, engine and NumPy."""
    problem = mo.zdt(1)
    engine = mo.real_coded_model(problem, mode="xla").evolve(mo.start(problem, size), generations=generations)
    numpy_hv = []
    mo.numpy_nsga2(problem, size, generations, on_generation=lambda g, f: numpy_hv.append(problem.hypervolume(f)))
    evaluations = [size * (g + 1) for g in range(1, generations + 1)]
    return {"evaluations": evaluations, "evo xla": engine.history["best"], "NumPy NSGA-II": numpy_hv,
            "true front": problem.true_hypervolume}


def final_hypervolumes(size: int, generations: int, seeds) -> list[dict]:
    """Final front's hypervolume per problem and seed, against the true front's."""
    rows = []
    for problem in (mo.zdt(1), mo.zdt(2), mo.zdt(3), mo.dtlz2()):
        for seed in seeds:
            model = mo.real_coded_model(problem, mode="xla", seed=seed)
            start = time.perf_counter()
            front = model.evolve(mo.start(problem, size, seed=seed), generations=generations).front
            rows.append({"problem": problem.name, "seed": seed, "hypervolume": front.hypervolume,
                         "true front": problem.true_hypervolume,
                         "gap %": 100 * (1 - front.hypervolume / problem.true_hypervolume),
                         "front size": len(front), "seconds": time.perf_counter() - start})
    return rows


def _print_rows(title: str, rows: list[dict]) -> None:
    print(title)
    for row in rows:
        print("  " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
    print()


@command(
    "moo", repeats=3,
    quick={"population": 256, "generations": 5, "sizes": "256,512", "curve_generations": 10,
           "final_generations": 20, "seeds": "0", "modes": "graph,xla", "repeats": 1},
    options={
        "--population": dict(type=int, default=4096, help="population for the speed comparison"),
        "--generations": dict(type=int, default=10, help="generations per timed call"),
        "--modes": dict(default="eager,graph,xla", help="engine modes to time"),
        "--sizes": dict(default="1024,2048,4096,8192", help="pool sizes for the sort's growth"),
        "--curve-generations": dict(type=int, default=100, help="generations of the hypervolume curves"),
        "--final-generations": dict(type=int, default=250, help="generations of the final-hypervolume runs"),
        "--seeds": dict(default="0,1,2", help="seeds of the final-hypervolume runs"),
    })
def bench_moo(args) -> Report:
    """``course bench moo``: NSGA-II in the engine (each mode) against a NumPy NSGA-II, the sort's growth,
    hypervolume against evaluations, and final hypervolumes on ZDT1-3 and DTLZ2 at population 100."""
    result = speed(args.population, args.generations, args.repeats, args.modes.split(","))
    print(result, end="\n\n")
    per_s = {t.name: args.generations / t.median_s for t in result.timings}
    _print_rows("generations per second", [{k: v for k, v in per_s.items()}])
    scaling = sort_scaling([int(s) for s in args.sizes.split(",")], args.repeats)
    _print_rows("NSGA-II selection under XLA against the pool size", scaling)
    curves = hypervolume_curves(100, args.curve_generations)
    every = max(1, len(curves["evaluations"]) // 10)
    _print_rows("hypervolume on ZDT1 against evaluations (population 100)",
                [{"evaluations": e, "evo xla": a, "NumPy NSGA-II": b} for e, a, b in
                 list(zip(curves["evaluations"], curves["evo xla"], curves["NumPy NSGA-II"]))[every - 1::every]])
    finals = final_hypervolumes(100, args.final_generations, [int(s) for s in args.seeds.split(",")])
    _print_rows(f"final hypervolume, population 100, {args.final_generations} generations", finals)
    return Report([result], {"generations_per_s": per_s, "sort_scaling": scaling, "curves": curves,
                                   "final": finals})
