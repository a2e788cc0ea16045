"""``course bench ga``: end-to-end throughput of the engine's models in every mode against NumPy,
measured with ``course_lib.bench`` (first call apart, forced results, medians, ratios in one run).

The NumPy references implement the same algorithm as the engine's models, vectorised over the
population (no Python loop per individual): the bar the engine is judged by.
"""

from __future__ import annotations

from course_lib import bench, evo
from course_lib.benchmarks.command import Report, command
from course_lib.benchmarks.ga_replicas import GENERATIONS, bench_replicas, measure_replicas, replica_counts
from course_lib.evo import fusion
from course_lib.lessons.evolution import (
    RASTRIGIN,
    breakdown_sentences,
    breakdown_table,
    generation_breakdown,
    onemax_model,
    rastrigin_model,
    single_call,
    threefry_evolve,
)
from course_lib.problems.numpy_ga import numpy_onemax, numpy_rastrigin

# on a GPU, by default: the populations the engine is judged at there, up to what the device's memory holds
GPU_SIZES = {"OneMax": (4096, 65536, 262144), "Rastrigin": (4096, 65536, 1048576)}


def sizes(problem: str, length: int, args, target: str) -> list[int]:
    """The population sizes to time: ``--sizes``, else 512 with --quick, 4096 on a CPU, and on a GPU the
    ``GPU_SIZES`` whose genes in flight fit the device's free memory (``evo.inspect.device_memory``)."""
    if args.sizes:
        try:
            chosen = [int(s) for s in str(args.sizes).split(",") if s.strip()]
        except ValueError:
            chosen = []
        if not chosen or min(chosen) < 2:
            raise ValueError(f"--sizes takes population sizes of at least 2, comma-separated (e.g. 4096,65536), "
                             f"got {args.sizes!r}")
        return chosen
    if args.quick:
        return [512]
    if target != "gpu":
        return [4096]
    free, _ = evo.inspect.device_memory("gpu")
    fits = [n for n in GPU_SIZES[problem] if n * length * evo.inspect.BYTES_PER_GENE_IN_FLIGHT <= free]
    return fits or [GPU_SIZES[problem][0]]


@command("ga", repeats=3, quick={}, check=replica_counts,
               options={"--generations": GENERATIONS,
                        "--replicas": dict(type=int, nargs="+", default=None, metavar="N",
                                           help="throughput per replica count instead (as course bench ga-replicas; "
                                                "its report goes to build/bench/ga_replicas.json unless --out)"),
                        "--sizes": dict(type=str, default=None, metavar="N,N,...",
                                        help="population sizes to time, e.g. 4096,65536 (default: 4096 on a CPU; "
                                             "on a GPU the sizes of GPU_SIZES that fit the device's memory)"),
                        "--breakdown": dict(action="store_true",
                                            help="also time the parts of one generation (generation_breakdown)")})
def bench_ga(args):
    """OneMax and Rastrigin throughput (gene-generations/s) in every mode against NumPy, in one run.

    Each timed call is a whole ``evolve`` of 100 generations (10 with --quick), so the
    per-call work (checking, packing and unpacking the population, copying the result
    to NumPy) counts, once per run as in real use. "xla, Threefry" is ``threefry_evolve``, the
    other random-word generator; "xla, one call" is ``single_call``, the
    same generations as one compiled function: xla over it is what ``evolve`` costs on top, timed
    again with the two alone (3x the repeats). The variants take turns in each round
    (``bench.compare(in_turns=True)``).
    """
    if args.replicas:
        if args.out == bench_ga.parser().get_default("out"):
            args.out = bench_replicas.parser().get_default("out")  # the skeleton writes args.out after this returns
        return measure_replicas(args)
    generations = args.generations or (10 if args.quick else 100)
    device = fusion.placed_device()
    target = fusion.device_target(device)
    print(f"device: {device} (programs traced for the {target.upper()} target)\n")
    problems = []
    for name, length, numpy_run, make_model in (
            ("OneMax", 256 if args.quick else 1024, numpy_onemax, onemax_model),
            ("Rastrigin", 100, lambda pop, g, rate: numpy_rastrigin(pop, g, **RASTRIGIN), rastrigin_model)):
        for n in sizes(name, length, args, target):
            shape = (n, length)
            population = (evo.population.random_integers(shape, 0, 2, seed=0) if name == "OneMax"
                          else evo.population.uniform(shape, -5.12, 5.12, seed=0))
            problems.append((name, shape, population,
                             lambda pop, run=numpy_run, length=length: run(pop, generations, rate=1 / length),
                             make_model))
    comparisons, results = [], []
    for name, (n, length), population, numpy_run, make_model in problems:
        pop_np = population.numpy()
        variants = {"numpy": lambda: numpy_run(pop_np)}
        for mode in ("xla", "graph", "eager"):  # xla next to numpy: the key ratio, least exposed to drift in load
            model = make_model(length, mode)
            variants[mode] = lambda model=model: model.evolve(population, generations=generations).population
            if mode == "xla":
                variants["xla, one call"] = single_call(make_model(length, mode), population, generations)
                variants["xla, Threefry"] = threefry_evolve(make_model(length, mode), population, generations)
        cmp = bench.compare(variants, baseline="numpy", repeats=args.repeats, warmup=0, in_turns=True,
                            title=f"{name}: population {n} x {length}, {generations} generations per call",
                            params={"problem": name, "population": [n, length], "generations": generations})
        work = n * length * generations
        rates = {t.name: work / t.median_s for t in cmp.timings}
        print(cmp)
        print(f"{'variant':16}{'gene-generations/s':>20}{'vs numpy':>10}")
        for variant, rate in rates.items():
            print(f"{variant:16}{rate:>20.3e}{cmp.speedup(variant):>9.2f}x")
        # the two again, alone in turns: beside the NumPy and eager runs their few percent drown in noise
        pair = bench.compare({v: variants[v] for v in ("xla", "xla, one call")}, repeats=3 * args.repeats,
                             warmup=1, in_turns=True, title=f"{name}: evolve against one compiled call, alone in turns",
                             params={"problem": name, "population": [n, length], "generations": generations})
        overhead = pair.speedup("xla, one call", over="xla")
        print(pair)
        print(f"evolve (xla) takes {overhead:.3f}x the time of one compiled call, the two alone in turns; "
              f"{pair.verdict('xla', 'xla, one call')}")
        print(f"SplitMix64 words against Threefry words: {cmp.verdict('xla', 'xla, Threefry')}")
        print()
        comparisons += [cmp, pair]
        results.append({"problem": name, "population": [n, length], "device": device, "target": target,
                        "gene_generations_per_s": rates,
                        "vs_numpy": {v: cmp.speedup(v) for v in rates}, "evolve_over_one_call": overhead})
        if args.breakdown:
            parts = generation_breakdown(make_model(length, "xla"), population, repeats=args.repeats)
            print(f"{'part of one generation':40}{'µs apart':>10}{'share':>8}{'µs saved without it':>22}{'share':>8}")
            for row in breakdown_table(parts):
                print(f"{row['part']:40}{row['µs per generation, apart']:>10}{row['share of a generation']:>8}"
                      f"{row['µs saved without it']:>22}{row['share saved']:>8}")
            print(breakdown_sentences(parts), end="\n\n")
            comparisons.append(parts["comparison"])
            results[-1]["breakdown"] = {k: v for k, v in parts.items() if k != "comparison"}
    return Report(comparisons, {"results": results})
