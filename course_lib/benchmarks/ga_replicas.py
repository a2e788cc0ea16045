"""``course bench ga-replicas``: OneMax and Rastrigin throughput per replica count, one fresh process
per count (virtual CPUs are fixed when TensorFlow starts)."""

from __future__ import annotations

from course_lib import devices, distribute, evo, processes
from course_lib.benchmarks.command import Report, command
from course_lib.evo import sharding
from course_lib.lessons.evolution import onemax_model, rastrigin_model, replica_comparison


def replica_counts(args) -> str | None:
    return "--replicas takes whole numbers >= 1" if any(r < 1 for r in args.replicas or ()) else None


GENERATIONS = dict(type=int, default=None, help="generations per timed call")


PROBLEMS = ("onemax", "rastrigin")


def _problem(problem: str, shape: tuple[int, int], mode: str):
    """(model, initial population) of the engine's benchmark models."""
    n, length = shape
    if problem == "onemax":
        return onemax_model(length, mode), evo.population.random_integers(shape, 0, 2, seed=0)
    if problem == "rastrigin":
        return rastrigin_model(length, mode), evo.population.uniform(shape, -5.12, 5.12, seed=0)
    raise ValueError(f"unknown problem {problem!r}; choose one of {', '.join(PROBLEMS)}")


def measure_replicas_in_fresh_process(replicas: int, problems: list, generations: int, repeats: int) -> dict:
    """Runs in a process of its own: virtual CPUs are fixed when TensorFlow starts."""
    strategy = distribute.make_strategy("mirrored", devices.virtual_cpus(replicas))
    out = []
    for problem, shape in problems:
        model, population = _problem(problem, shape, "xla")
        cmp = replica_comparison(strategy, model, population, generations, repeats=repeats)
        work = shape[0] * shape[1] * generations
        out.append({"comparison": cmp.to_dict(), "gene_generations_per_s": {t.name: work / t.median_s
                                                                           for t in cmp.timings}})
    return {"replicas": replicas, "results": out}


@command("ga-replicas", repeats=3, quick={}, check=replica_counts,
               options={"--generations": GENERATIONS,
                        "--replicas": dict(type=int, nargs="+", default=[1, 2, 4], metavar="N",
                                           help="replica counts (one virtual CPU each)")})
def bench_replicas(args):
    """OneMax and Rastrigin throughput per replica count (MirroredStrategy over virtual CPUs, one
    fresh process per count), global selection and islands against one device without a strategy."""
    return measure_replicas(args)


def measure_replicas(args) -> Report:
    """``course bench ga-replicas`` (and ``ga --replicas``): one fresh process per replica count."""
    generations = args.generations or (10 if args.quick else 30)
    problems = ([("onemax", (512, 256)), ("rastrigin", (512, 100))] if args.quick
                else [("onemax", (4096, 1024)), ("rastrigin", (4096, 100))])
    for r in args.replicas:
        for _, (n, _) in problems:
            sharding.shard_size(n, r)
    runs = [processes.run("course_lib.benchmarks.ga_replicas:measure_replicas_in_fresh_process",
                          args=[r, problems, generations, args.repeats], env={"TF_CPP_MIN_LOG_LEVEL": "3"},
                          timeout=1800).result for r in args.replicas]
    print(f"{'problem':10}{'replicas':>9}  {'variant':14}{'gene-generations/s':>20}{'vs one device':>15}")
    for run in runs:
        for res in run["results"]:
            cmp = res["comparison"]
            for v in cmp["variants"]:
                rate = res["gene_generations_per_s"][v["name"]]
                print(f"{cmp['params']['problem']:10}{run['replicas']:>9}  {v['name']:14}{rate:>20.3e}"
                      f"{v['speedup']:>14.2f}x")
    return Report([], {"generations": generations, "runs": runs})
