"""Lecture 17's helpers: NSGA-II variants for the speed widget, NSGA-II against NSGA-III beyond three
objectives, plots of many-objective fronts, and sentences read from runs."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from course_lib import bench, evo, graphs
from course_lib.lessons import nsga3_race
from course_lib.lessons.nsga3_race import selection_speed  # noqa: F401 (lecture 17 calls it from here)
from course_lib.problems import dtlz
from course_lib.problems import multiobjective as mo

NUMPY = "NumPy NSGA-II"
GRAPH = "evo, graph"
XLA = "evo, XLA"


def speed_variants(generations: int) -> dict[str, Callable]:
    """Builders for ``SpeedupWidget``: ``population`` -> a callable running ``generations`` generations of
    NSGA-II on ZDT1 from a random start, in NumPy and in the engine (graph and XLA)."""
    problem = mo.zdt(1)

    def numpy_run(population: int):
        return lambda: mo.numpy_nsga2(problem, population, generations)

    def engine(mode: str):
        model = mo.real_coded_model(problem, mode=mode)

        def build(population: int):
            start = mo.start(problem, population)

            def run():
                # each population size is its own compiled program, which TensorFlow's retracing
                # warning would count as retraces of one function: kept out of the lecture's output
                with graphs.captured_tf_warnings():
                    return model.evolve(start, generations=generations)
            return run
        return build

    return {NUMPY: numpy_run, GRAPH: engine("graph"), XLA: engine("xla")}


def best_hypervolume(problem: mo.Problem, size: int, samples: int = 1000) -> float:
    """The most hypervolume ``size`` points of ``problem``'s true front reach (two objectives, minimised).

    A finite set cannot reach the whole front's hypervolume, so a found front of ``size`` points is fairly
    judged against the best set of that size. The true front is sampled at ``samples`` points at least, and
    the best subset is exact over the sample: sorted by the first objective, a set's hypervolume is a sum of
    rectangles, each fixed by a point and the next one chosen, so a dynamic program over (points chosen,
    leftmost point) finds it in ``size`` passes over a ``samples`` x ``samples`` table.
    """
    if len(problem.reference) != 2:
        raise ValueError(f"best_hypervolume takes two objectives; {problem.name} has {len(problem.reference)}")
    if size < 1:
        raise ValueError(f"size must be at least 1 point, got {size}")
    front = problem.front(samples)
    if len(front) < samples:  # a disconnected front keeps only part of an even sample
        front = problem.front(-(-samples * samples // len(front)))
    r1, r2 = problem.reference
    front = front[(front[:, 0] < r1) & (front[:, 1] < r2)]
    f1, height = front[:, 0].astype(np.float64), r2 - front[:, 1].astype(np.float64)
    alone = (r1 - f1) * height  # one point, i leftmost
    # [i, j]: the rectangle point i adds when j is the next point chosen; -inf where j cannot follow i
    step = np.where(f1[None, :] > f1[:, None], (f1[None, :] - f1[:, None]) * height[:, None], -np.inf)
    best = alone
    for _ in range(min(size, len(f1)) - 1):
        best = np.maximum((step + best[None, :]).max(axis=1), alone)  # at most k points: one alone is a floor
    return float(best.max())


def front_verdicts(runs: dict) -> bench.Verdicts:
    """One sentence per problem: the found front's hypervolume against the best that as many points of the
    true front reach (``best_hypervolume``), with the whole front's beside it.

    ``runs`` maps a ``Problem`` name to (problem, result)."""
    sentences = []
    for name, (problem, result) in runs.items():
        hv, size = result.front.hypervolume, len(result.front)
        best = best_hypervolume(problem, size)
        sentences.append(f"{name}: {size} non-dominated individuals after {result.generations} generations, "
                         f"hypervolume {hv:.4f} against {best:.4f}, the most any {size} points of the true front "
                         f"reach ({100 * (1 - hv / best):.2f}% short; the whole front's is "
                         f"{problem.true_hypervolume:.4f}).")
    return bench.Verdicts(sentences)


# -- beyond three objectives ----------------------------------------------------------------------------


def nondominated_share(objectives, size: int, seed: int = 0) -> list[dict]:
    """For each number of objectives: the share of ``size`` uniform random points (minimised) that no other
    point dominates."""
    rows = []
    for m in objectives:
        points = np.random.default_rng(seed).random((size, m)).astype(np.float32)
        values = tf.constant(np.concatenate([points, np.zeros((size, 1), np.float32)], 1))
        top = evo.pareto.non_dominated(*evo.pareto.minimise_space(values, (-1.0,) * m))
        rows.append({"objectives": m, "non-dominated share": float(tf.reduce_mean(tf.cast(top, tf.float32)))})
    return rows


SELECTIONS = {"NSGA-II": evo.selection.NSGA2, "NSGA-III": evo.selection.NSGA3}


def igd_race(objectives, generations: int, seed: int = 0, mode: str = "graph") -> dict:
    """NSGA-II and NSGA-III on DTLZ2 for each number of objectives, with Deb and Jain's population for it
    (the number of directions rounded up to a multiple of four) and ``generations``; returns
    {M: (problem, {selection name: result})}."""
    race = {}
    for m in objectives:
        problem = dtlz.dtlz(2, m)
        size = -(-len(problem.front) // 4) * 4
        start = dtlz.start(problem, size, seed)
        race[m] = (problem, {name: dtlz.model(problem, make(), mode=mode, seed=seed).evolve(start, generations)
                             for name, make in SELECTIONS.items()})
    return race


def race_verdicts(race: dict, seed: int) -> bench.Verdicts:
    """One sentence per number of objectives: each selection's final IGD on DTLZ2 from GA seed ``seed`` and
    their ratio, said of that one seed: IGD moves from seed to seed, so one run ranks nothing (the comparison
    beside pymoo reads medians over seeds)."""
    sentences = []
    for m, (problem, results) in race.items():
        two, three = results["NSGA-II"].front.igd, results["NSGA-III"].front.igd
        sentences.append(f"{m} objectives (population {len(results['NSGA-III'].population)}, "
                         f"{results['NSGA-III'].generations} generations): IGD {two:.4f} with NSGA-II and "
                         f"{three:.4f} with NSGA-III, {two / three:.2f} times NSGA-III's.")
    sentences.append(f"These are one GA seed's runs (seed {seed}): a single run shows how far apart the two can "
                     "end, not which ends lower in general; the comparison beside pymoo below reads medians over "
                     "seeds with an interval.")
    return bench.Verdicts(sentences)


def parallel_coordinates(objectives: np.ndarray, ax, title: str = "", color: str = "C0"):
    """A many-objective front the way practitioners draw one: one line per solution across the objective
    axes (each objective on its own axis, its values as they are)."""
    m = objectives.shape[1]
    ax.plot(np.arange(1, m + 1), objectives.T, color=color, alpha=0.25, linewidth=0.8)
    ax.set_xticks(np.arange(1, m + 1))
    ax.set_xlabel("objective")
    ax.set_ylabel("value")
    ax.set_title(title)
    return ax


def scatter_3d(objectives: np.ndarray, true_front: np.ndarray, ax, title: str = ""):
    """A three-objective front as points in 3-D, over the true front's points."""
    ax.scatter(*true_front.T, s=4, color="0.7", label="true front")
    ax.scatter(*objectives.T, s=10, color="C0", label="found")
    ax.set_xlabel("f1")
    ax.set_ylabel("f2")
    ax.set_zlabel("f3")
    ax.set_title(title)
    ax.legend()
    return ax


def numpy_breakdown(population: int, repeats: int = 3, seed: int = 0) -> dict[str, float]:
    """Median seconds of each part of one NumPy NSGA-II generation on ZDT1 at ``population``: variation
    (mates, crossover, mutation), evaluation, and survivor selection (dominance matrix, fronts, crowding)."""
    problem = mo.zdt(1)

    def objectives(x: np.ndarray) -> np.ndarray:
        return np.asarray(problem.fitness.fn(x), np.float64)

    r = np.random.default_rng(seed)
    x = r.random((population, problem.variables))
    f = objectives(x)
    parts: dict[str, list[float]] = {"variation": [], "evaluation": [], "selection": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        mates = x[(np.arange(population) + r.integers(1, population, population)) % population]
        children = mo.numpy_pm(mo.numpy_sbx(x, mates, r), r)
        t1 = time.perf_counter()
        pool_f = np.concatenate([f, objectives(children)])
        t2 = time.perf_counter()
        mo.numpy_survivors(pool_f, population)
        t3 = time.perf_counter()
        for name, t in zip(parts, (t1 - t0, t2 - t1, t3 - t2)):
            parts[name].append(t)
    return {name: float(np.median(ts)) for name, ts in parts.items()}


def breakdown_sentence(parts: dict[str, float], population: int) -> str:
    """The NumPy generation's time and each part's share of it, in words."""
    total = sum(parts.values())
    shares = ", ".join(f"{name} {100 * s / total:.0f}%" for name, s in parts.items())
    return f"One NumPy NSGA-II generation at population {population:,} takes {total * 1e3:.3g} ms: {shares}."


def beside_pymoo(seeds: int, generations_scale: float = 1.0) -> dict:
    """NSGA-III on DTLZ2 with three objectives, Deb and Jain's settings (population 92, 91 directions, 250
    generations), the engine and, where it is installed, pymoo's NSGA-III with the same settings and seeds
    0..seeds-1: ``nsga3_race.accuracy``'s row (median IGD of each, their ratio with an interval over
    the seeds and a verdict, generations per second)."""
    return nsga3_race.accuracy([(2, 3)], list(range(seeds)), generations_scale, progress=False)[0]


def beside_pymoo_verdicts(row: dict) -> bench.Verdicts:
    """The comparison beside pymoo in words, read from ``beside_pymoo``'s row."""
    setting = (f"DTLZ2 with {row['objectives']} objectives, population {row['population']}, "
               f"{row['generations']} generations, seeds 0-{row['seeds'] - 1}")
    if "pymoo IGD" not in row:
        return bench.Verdicts([f"{setting}: the engine's median IGD is {row['engine IGD']:.3g}. pymoo is not installed "
                               "here (`pip install pymoo`, or the course's `bench` extra), so there is nothing "
                               "beside it."])
    ratio = f"the engine's median is {row['IGD engine / pymoo']:.2f} times pymoo's"
    if not row["95% interval"]:
        reading = f"{ratio}; {row['seeds']} seeds are too few for an interval, so no verdict."
    else:
        meaning = {"engine lower": "the engine's IGD is lower beyond what the seeds' spread explains",
                   "pymoo lower": "pymoo's IGD is lower beyond what the seeds' spread explains"}.get(
            row["verdict"], "the interval holds 1: these seeds do not tell the two apart")
        reading = f"{ratio} (95% interval {row['95% interval']}x over the seeds): {meaning}."
    return bench.Verdicts([
        f"{setting}: median IGD {row['engine IGD']:.3g} for the engine, {row['pymoo IGD']:.3g} for pymoo; {reading}",
        f"Generations per second, the median of each run on its own: {row['engine gen/s']:,.0f} for the engine "
        f"(XLA, its compile apart), {row['pymoo gen/s']:,.0f} for pymoo (NumPy, one Python step per operator)."])


def selection_verdicts(rows: list[dict]) -> bench.Verdicts:
    return bench.Verdicts([f"Pool {row['pool']:,} ({row['directions']} directions): NumPy {row['NumPy ms']:.3g} ms, "
                           f"XLA {row['XLA ms']:.3g} ms, {row['ratio']:.3g}x." for row in rows])
