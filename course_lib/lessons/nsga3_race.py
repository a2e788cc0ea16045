"""NSGA-III compiled whole on DTLZ1-4, beside pymoo's NSGA-III when it is installed: the workload of
``course bench nsga3`` and of lecture 17's race.

In one run: the median IGD over seeds of the engine's final population, and of pymoo's (``pip install
pymoo``, or the project's ``bench`` extra) run on the same settings, with generations per second of
each; generations per second of the engine (XLA) and of a NumPy NSGA-III (the same algorithm: random
mates, simulated binary crossover, polynomial mutation, ``problems.nsga3_numpy.survivors``) at large
populations; and the survivor selection alone, compiled against NumPy, against the pool.

Settings, from Deb and Jain, "An evolutionary many-objective optimization algorithm using
reference-point-based nondominated sorting approach, part I", IEEE Transactions on Evolutionary
Computation 18(4), 2014 (Tables I-III), the same for both: k = 5 distance variables for DTLZ1 and 10
for DTLZ2-4 (pymoo is told ``n_var``); Das-Dennis directions, p = 12 for 3 objectives (91, population
92), 6 for 5 (210, population 212), two layers (3, 2) for 8 (156, population 156) and 10 (275,
population 276), and 99 for 2 objectives (100 directions, population 100); their generations; SBX with
eta 30, probability 1 and each variable crossed with probability 1/2, polynomial mutation with eta 20
and rate 1 / n of a child picked with probability 0.9 (pymoo's NSGA-III defaults: ``SBX(eta=30,
prob=1.0)``, ``PM(eta=20)``, whose ``prob`` is 0.9). Both start from a uniform random population of the
seed. pymoo's NSGA-III eliminates duplicates by default, drawing a child that copies a parent or another
child again before it is evaluated; the engine runs ``NSGA3(eliminate_duplicates=True)``, which does the
same, unless ``--keep-duplicates``. IGD is pymoo's indicator (the same formula in NumPy without
pymoo) of the non-dominated rows of the final population, their decision variables evaluated again in
float64 (``Dtlz.numpy``), against the points where the directions meet the true front.
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import tensorflow as tf

from course_lib import bench, evo
from course_lib.problems import dtlz, nsga3_numpy
from course_lib.problems.nsga3_numpy import numpy_nsga3

# objectives -> (Das-Dennis partitions, population), Deb and Jain's (99 partitions: 100 directions for 2)
SIZES = {2: (99, 100), 3: (12, 92), 5: (6, 212), 8: ((3, 2), 156), 10: ((3, 2), 276)}
# (DTLZ number, objectives) -> generations, Deb and Jain's (2 objectives: as few as for 3)
GENERATIONS = {(1, 2): 400, (1, 3): 400, (1, 5): 600, (1, 8): 750, (1, 10): 1000,
               (2, 2): 250, (2, 3): 250, (2, 5): 350, (2, 8): 500, (2, 10): 750,
               (3, 3): 1000, (3, 5): 1000, (4, 3): 600, (4, 5): 1000}
ETA_C, ETA_M, MUTATION_PROBABILITY = 30.0, 20.0, 0.9  # pymoo's NSGA-III: SBX(eta=30), PM(eta=20, prob=0.9)
GENES = "float64"  # pymoo's precision (``dtlz.start`` says why it matters)


def has_pymoo() -> bool:
    return importlib.util.find_spec("pymoo") is not None


def non_dominated(f: np.ndarray) -> np.ndarray:
    """The rows of f (P, M) (minimised) that no row dominates, duplicates kept once."""
    f = np.unique(f, axis=0)
    beaten = np.any(np.all(f[:, None] <= f[None], axis=2) & np.any(f[:, None] < f[None], axis=2), axis=0)
    return f[~beaten]


def igd(points: np.ndarray, front: np.ndarray) -> float:
    """IGD of points (P, M) against front (K, M): pymoo's indicator when installed, the same mean distance
    from each front point to its nearest point otherwise."""
    if has_pymoo():
        from pymoo.indicators.igd import IGD
        return float(IGD(front)(points))
    return float(np.mean(np.min(np.linalg.norm(front[:, None] - points[None], axis=2), axis=1)))


def engine_model(problem: dtlz.Dtlz, directions: np.ndarray, eliminate_duplicates: bool,
                 genes: str = GENES) -> evo.Model:
    """The engine's NSGA-III on ``problem`` under XLA with pymoo's variation settings, on ``genes``."""
    selection = evo.selection.NSGA3(directions=directions, eliminate_duplicates=eliminate_duplicates)
    return dtlz.model(problem, selection, mode="xla", eta_c=ETA_C, eta_m=ETA_M,
                      mutation_probability=MUTATION_PROBABILITY, dtype=genes)


def engine_run(model: evo.Model, problem: dtlz.Dtlz, size: int, generations: int,
               seed: int) -> tuple[np.ndarray, float]:
    """(final population, generations per second) of ``model`` compiled again with ``seed`` (which keeps its
    programs); the rate is of a second, identical call, so that it leaves out the first call's compile."""
    model.compile(fitness=model.fitness, selection=model.selection, mode="xla", seed=seed)
    start = dtlz.start(problem, size, seed, dtype=model.input.dtype.name)
    result = model.evolve(start, generations=generations)
    began = time.perf_counter()
    model.evolve(start, generations=generations)
    return result.population, generations / (time.perf_counter() - began)


def pymoo_run(problem: dtlz.Dtlz, directions: np.ndarray, size: int, generations: int,
              seed: int) -> tuple[np.ndarray, float]:
    """(final population, generations per second) of pymoo's NSGA-III with its defaults (SBX eta 30,
    probability 1; polynomial mutation eta 20, rate 1 / n, probability 0.9; duplicates eliminated). The
    rate runs from the end of pymoo's first generation (its initial population scored) to the end of
    its last, read by a callback: set-up and the first evaluation are left out, as the engine's
    compile is."""
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.optimize import minimize
    from pymoo.problems import get_problem

    target = get_problem(f"dtlz{problem.number}", n_var=problem.variables, n_obj=problem.objectives)
    stamps: list[float] = []
    # pymoo counts the initial population as generation 1: n_gen = generations + 1 breeds ``generations``
    # times, the engine's number of evaluations
    result = minimize(target, NSGA3(directions, pop_size=size), ("n_gen", generations + 1), seed=seed,
                      verbose=False, callback=lambda algorithm: stamps.append(time.perf_counter()))
    return result.pop.get("X"), generations / max(stamps[-1] - stamps[0], 1e-9)


def accuracy(cases, seeds, generations_scale: float = 1.0, eliminate_duplicates: bool = True,
             with_pymoo: bool = True, genes: str = GENES, progress: bool = True) -> list[dict]:
    """One row per (problem, objectives): the median final IGD over ``seeds`` of the engine and (when
    ``with_pymoo`` and it is installed) of pymoo on the same settings, and median generations per second;
    with ``progress``, a line per run as it ends (a long benchmark shows it is moving).
    ``eliminate_duplicates``: the engine's ``NSGA3(eliminate_duplicates=)``; pymoo's NSGA-III eliminates
    duplicates by default, so True is the same setting. ``genes``: the engine's gene dtype.

    The ratio of medians comes with a bootstrap interval over the seeds (each side resampled on its own,
    ``bench.ratio_interval``) and a verdict only where the interval excludes 1: on the multimodal problems
    one seed's IGD can be ten times another's, so a handful of seeds decides little."""
    rows = []
    for number, m in cases:
        partitions, size = SIZES[m]
        problem = dtlz.dtlz(number, m, partitions=partitions)
        directions = evo.nsga3.reference_directions(m, partitions)
        gens = max(1, round(GENERATIONS[number, m] * generations_scale))
        model = engine_model(problem, directions, eliminate_duplicates, genes)
        runners = {"engine": lambda seed: engine_run(model, problem, size, gens, seed)}
        if with_pymoo and has_pymoo():
            runners["pymoo"] = lambda seed: pymoo_run(problem, directions, size, gens, seed)
        row = {"problem": f"DTLZ{number}", "objectives": m, "population": size, "generations": gens,
               "seeds": len(seeds)}
        igds_of = {}
        for name, run in runners.items():
            igds, rates = igds_of.setdefault(name, []), []
            for seed in seeds:
                x, rate = run(seed)
                igds.append(igd(non_dominated(problem.numpy(x)), problem.front))
                rates.append(rate)
                if progress:
                    print(f"  DTLZ{number} M={m} {name} seed {seed}: IGD {igds[-1]:.4g}, {rate:.4g} gen/s", flush=True)
            row[f"{name} IGD"], row[f"{name} gen/s"] = float(np.median(igds)), float(np.median(rates))
        if "pymoo IGD" in row:
            row["IGD engine / pymoo"] = row["engine IGD"] / row["pymoo IGD"]
            if len(seeds) < bench.MIN_ROUNDS:
                row["95% interval"], row["verdict"] = "", f"too few seeds (under {bench.MIN_ROUNDS})"
            else:
                lo, hi = bench.ratio_interval(igds_of["engine"], igds_of["pymoo"], paired=False)
                row["95% interval"] = bench.interval_bounds(lo, hi)
                row["verdict"] = ("engine lower" if hi < 1 else "pymoo lower" if lo > 1 else
                                  f"not told apart by {len(seeds)} seeds")
            row["speed engine / pymoo"] = row["engine gen/s"] / row["pymoo gen/s"]
        rows.append(row)
    return rows


def speed(sizes, generations: int, repeats: int, numpy_generations: int, eliminate_duplicates: bool = True,
          with_pymoo: bool = True, genes: str = GENES) -> list[dict]:
    """Generations per second on DTLZ2 with 5 objectives at each population: the engine under XLA (the
    first call, which compiles, apart; pymoo's settings, as ``engine_model``), the NumPy NSGA-III and
    (when ``with_pymoo`` and it is installed) pymoo's NSGA-III over the engine's ``generations`` from a
    random start (``pymoo_run``), in the same run."""
    problem = dtlz.dtlz(2, 5)
    rows = []
    for size in sizes:
        directions = evo.nsga3.reference_directions(5, evo.nsga3.default_partitions(5, size))
        model = engine_model(problem, directions, eliminate_duplicates, genes)
        pop = dtlz.start(problem, size, dtype=genes)
        result = bench.compare(
            {"NumPy NSGA-III": lambda size=size: numpy_nsga3(problem, size, numpy_generations),
             "evo xla": lambda model=model, pop=pop: model.evolve(pop, generations=generations)},
            repeats=repeats, warmup=1, number=1, title=f"NSGA-III on DTLZ2 (5 objectives), population {size:,}")
        print(result, end="\n\n")
        numpy_rate = numpy_generations / result["NumPy NSGA-III"].median_s
        engine_rate = generations / result["evo xla"].median_s
        row = {"population": size, "NumPy gen/s": numpy_rate, "evo xla gen/s": engine_rate,
               "ratio": engine_rate / numpy_rate}
        if with_pymoo and has_pymoo():
            rate = pymoo_run(problem, directions, size, generations, 0)[1]
            row.update({"pymoo gen/s": rate, "engine / pymoo": engine_rate / rate})
        rows.append(row)
    return rows


def selection_speed(pools, repeats: int = 3, objectives: int = 5) -> list[dict]:
    """Milliseconds of NSGA-III's survivor selection of half of a random DTLZ2 pool: compiled with XLA
    (``evo.nsga3.survivors``) and in NumPy (``problems.nsga3_numpy.survivors``)."""
    problem = dtlz.dtlz(2, objectives)
    rows = []
    for p in pools:
        x = np.random.default_rng(p).random((p, problem.variables))
        f = problem.numpy(x)
        n = p // 2
        directions = evo.nsga3.reference_directions(objectives, evo.nsga3.default_partitions(objectives, n))
        values = tf.constant(np.concatenate([f, np.zeros((p, 1))], 1), tf.float32)
        key = evo.rng.key(0)
        signs = (-1.0,) * objectives
        fn = tf.function(lambda v, k: evo.nsga3.survivors(v, signs, k, n, directions), jit_compile=True)
        words = np.random.default_rng(0).integers(0, 2 ** 32, (p, 2))
        result = bench.compare(
            {"NumPy": lambda f=f, n=n, d=directions, w=words: nsga3_numpy.survivors(f, np.zeros(len(f)), n, d, w),
             "XLA": lambda fn=fn, values=values: fn(values, key).numpy()},
            repeats=repeats, warmup=1, number=1, title=f"NSGA-III selection, pool {p:,}")
        rows.append({"pool": p, "directions": len(directions), "NumPy ms": result["NumPy"].median_s * 1e3,
                     "XLA ms": result["XLA"].median_s * 1e3,
                     "ratio": result.speedup("XLA", over="NumPy")})
    return rows
