"""What lectures 10 to 13 run beyond the engine: the benchmark models, the one-call reference, the price
of eager dispatch, the breakdown of one generation, replica races and the multi-worker runs. The NumPy GAs
they are judged against live beside their problems, in ``course_lib.problems.numpy_ga``.
"""

from __future__ import annotations

import glob
import hashlib
from typing import Callable

import numpy as np
import tensorflow as tf

from course_lib import bench, distribute, evo, graphs
from course_lib.evo import fusion, rng
from course_lib.problems.numpy_ga import numpy_onemax

# -- the engine's models for the same problems ---------------------------------------------------


def onemax_model(length: int, mode: str, seed: int = 0, pack="auto"):
    """The model of the engine's first example (docs/engine.md): bit flip 1/L, uniform crossover, OneMax,
    tournament of 2."""
    inputs = evo.Input(shape=(length,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=1 / length)(inputs)
    x = evo.ops.UniformCrossover()(x)
    model = evo.Model(inputs, x, name="onemax")
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode=mode, seed=seed,
                  pack=pack)
    return model


def onemax_variants(generations: int, *, small_chunk: int = 1, memory_budget: int = 1 << 20,
                    seed: int = 0) -> dict[str, Callable[..., Callable[[], object]]]:
    """``SpeedupWidget`` builders (knobs ``population`` and ``genes``) for lectures 10 and 12.

    Each timed call is a whole ``evolve`` of ``generations`` from the same random population, as
    a user pays for it: "NumPy" is ``numpy_onemax``; "engine" is ``onemax_model`` with XLA (packed,
    chunks of 64); the other variants change one thing each: ``small_chunk`` generations per compiled
    call, no bit-packing, a ``memory_budget`` in bytes. Building a variant compiles nothing; its
    first call does (reported apart).
    """
    def population_of(population: int, genes: int):
        return evo.population.random_integers((population, genes), 0, 2, seed=seed)

    def numpy_ga(population: int, genes: int):
        pop = population_of(population, genes).numpy()
        return lambda: numpy_onemax(pop, generations, rate=1 / genes, seed=seed)[0]

    def engine(pack="auto", **evolve_options):
        def build(population: int, genes: int):
            pop, model = population_of(population, genes), onemax_model(genes, "xla", seed=seed, pack=pack)
            return lambda: model.evolve(pop, generations=generations, **evolve_options).population
        return build

    return {"NumPy": numpy_ga, "engine": engine(), f"engine, chunk={small_chunk}": engine(chunk=small_chunk),
            "engine, unpacked": engine(pack=False), "engine, memory budget": engine(memory_budget=memory_budget)}


RASTRIGIN = {"stddev": 0.1, "low": -5.12, "high": 5.12}


def rastrigin_model(dims: int, mode: str, seed: int = 0):
    """Gaussian mutation (clipped to [-5.12, 5.12]), uniform crossover, Rastrigin, tournament of 2."""
    inputs = evo.Input(shape=(dims,), dtype="float32")
    x = evo.ops.GaussianMutation(**RASTRIGIN)(inputs)
    x = evo.ops.UniformCrossover()(x)
    model = evo.Model(inputs, x, name="rastrigin")
    model.compile(fitness=evo.fitness.Rastrigin(), selection=evo.selection.Tournament(size=2), mode=mode, seed=seed)
    return model


# -- end-to-end throughput -----------------------------------------------------------------------


def single_call(model, population, generations: int) -> Callable[[], np.ndarray]:
    """The bar ``evolve`` is held to: one XLA function that packs, runs ``generations`` generations in one
    ``tf.while_loop`` and unpacks; no checks, history, callbacks or host round trips. Its population equals
    ``model.evolve(population, generations)``'s bit for bit."""
    prepared = evo.inspect.generation(model, population)
    gen, genes = prepared.generation, prepared.genes

    @fusion.xla_function
    def run(genes, count):
        state = gen.start(gen.stored(genes))
        _, state, _ = gen.loop(state, 0, lambda i, s: i < count, lambda hist, *_: hist, tf.zeros(()))
        return gen.unpack(state.population)

    count = tf.constant(generations)
    return lambda: run(genes, count).numpy()


def threefry_evolve(model, population, generations: int) -> Callable[[], np.ndarray]:
    """``model.evolve`` with every word drawn by Threefry-2x32-20 (``compile(generator="threefry")``):
    the reference ``course bench ga`` measures the default generator against. Recompiles ``model``."""
    model.compile(model.fitness, model.selection, mode=model.mode, seed=model.seed, pack=model.pack,
                  generator="threefry")
    return lambda: model.evolve(population, generations=generations).population


# -- what eager dispatch costs per operation (lecture 11) ----------------------------------------

NESTED = ("While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall")  # ops that run a graph of their own


def operation_count(fn, *args) -> tuple[int, bool]:
    """The TensorFlow operations one call of the ``tf.function`` ``fn`` traces, and whether any of them runs a
    nested graph (a loop or a function call), whose operations the count leaves out."""
    operations = fn.get_concrete_function(*args).graph.get_operations()
    return len(operations), any(op.type in NESTED for op in operations)


def dispatch_sentence(per_op: dict, eager: str = "eager", graph: str = "autograph") -> str:
    """What eager execution cost per operation beyond the graph, read from per-op comparisons.

    ``per_op`` maps an op's label to (its ``bench.Comparison`` with ``eager`` and ``graph`` variants, the
    operations one call traces), for ops whose graph nests no other graph. For each op whose graph was
    measurably faster, the eager time beyond the graph's is divided by the operations: both run the same
    kernels, so the difference is what dispatching them one at a time from Python added.
    """
    extra = {label: (cmp[eager].median_s - cmp[graph].median_s) / count * 1e6
             for label, (cmp, count) in per_op.items() if cmp.call(graph, over=eager) == "faster"}
    if not extra:
        return (f"In this run no op's {graph} variant was measurably faster than {eager}, so the table gives no "
                "price of dispatching an operation eagerly.")
    values = sorted(extra.values())
    return (f"Across the {len(values)} ops whose graph nests no loop and ran measurably faster than {eager}, {eager} "
            f"took {values[0]:,.1f} to {values[-1]:,.1f} µs more per operation than the graph (median "
            f"{float(np.median(values)):,.1f} µs): what dispatching each operation from Python cost on this machine "
            "beyond the graph's own scheduling. Hundreds of operations per call make that milliseconds.")


# -- where the time of one generation goes ----------------------------------------------------------


def _cache_bytes() -> dict[str, int]:
    """Data cache sizes of CPU 0 by level (Linux sysfs; empty elsewhere)."""
    out = {}
    for index in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(f"{index}/type") as t, open(f"{index}/level") as lv, open(f"{index}/size") as sz:
                kind, level, size = t.read().strip(), lv.read().strip(), sz.read().strip()
        except OSError:
            continue
        if kind != "Instruction" and size.endswith("K"):
            out[f"L{level}"] = int(size[:-1]) * 1024
    return out


def generation_breakdown(model, population, generations: int = 20, repeats: int = 5) -> dict:
    """Time each part of one generation of ``model`` (XLA, one device) on its own, in turns.

    Each part runs ``generations`` times in one compiled ``tf.while_loop``, its result pinned
    (``fusion.materialize``) as in ``evolve``, so a part costs what it costs inside a generation:
    every op of the model applied to the population, the fitness, selection (tournament indices
    and the gather of the winners), and the random words alone (as many 32-bit words as one
    generation draws, counted while tracing it). A part timed apart can cost more or less than it
    adds to the whole generation (XLA fuses and schedules the whole differently), so each op and
    selection is also timed the other way: the whole generation without it (the op passes its
    input through; selection keeps the children in order), ``saved`` = whole - without. Returns
    per-generation seconds with the counts the limits need (words per generation, population
    bytes, cache sizes).
    """
    prepared = evo.inspect.generation(model, population)
    gen, genes, packed, n = prepared.generation, prepared.genes, prepared.packed, prepared.individuals
    state = gen.start(gen.stored(genes))
    with rng.counting() as words_drawn:
        tf.function(lambda s: gen.step(s, tf.constant(1)), autograph=False).get_concrete_function(state)
    per_row = -(-words_drawn[0] // n)
    spec = model.input.spec
    parts = breakdown_parts(model, prepared, state, per_row)
    count = tf.constant(generations)
    with graphs.captured_tf_warnings():  # one tf.function per part, each traced once: no retracing to warn of
        cmp = bench.compare({name: part_loop(gen, part, state, count) for name, part in parts.items()},
                            baseline="whole generation", repeats=repeats, warmup=0, in_turns=True,
                            title=f"{model.name}: one generation of {n} x {spec.size}, its parts apart")
    timed = {t.name: t.median_s / generations for t in cmp.timings}
    seconds = {name: s for name, s in timed.items() if not name.startswith("without ")}
    saved = {name.removeprefix("without "): timed["whole generation"] - timed[name]
             for name in parts if name.startswith("without ")}
    stored = int(np.prod(state.population.shape)) * state.population.dtype.size
    return {"comparison": cmp, "seconds": seconds, "saved": saved, "words": words_drawn[0], "individuals": n,
            "genes": spec.size, "population_bytes": stored, "arrays": population_arrays(model),
            "cache_bytes": _cache_bytes(), "packed": packed}


def breakdown_parts(model, prepared, state, per_row: int) -> dict[str, Callable]:
    """Each part of a generation, and the whole generation without each op and without selection, as
    functions (population, fitness, key, generation) -> (population, fitness), so one loop times them alike."""
    gen, n = prepared.generation, prepared.individuals

    def op_part(node):
        def part(pop, fit, key, i):
            return gen.apply(node.op, [pop] * len(node.inputs), key, rng.Rows.all(n)), fit
        return part

    def fitness(pop, fit, key, i):
        return pop, gen.evaluate(pop)

    def selection(pop, fit, key, i):
        idx = gen.select(pop, fit, key, state.selection)[0]
        return tf.gather(pop, idx), tf.gather(fit, idx)

    def words(pop, fit, key, i):
        drawn = rng.bits(key, rng.Rows.all(n), (per_row,))
        return pop, fit + tf.cast(drawn[:, 0] & 1, tf.float32)

    def whole_of(g):
        def whole(pop, fit, key, i):
            s = g.step(state._replace(population=pop, fitness=fit, best=pop[0], best_fitness=fit[0]), i)[0]
            return s.population, s.fitness
        return whole

    names = _part_names(model)
    parts = {"whole generation": whole_of(gen), "random words alone": words}
    parts.update({name: op_part(node) for name, node in zip(names, model.nodes)})
    parts.update({"fitness": fitness, "selection (tournament + gather)": selection})
    parts.update({f"without {name}": whole_of(prepared.without(node.op)) for name, node in zip(names, model.nodes)})
    parts["without selection (tournament + gather)"] = whole_of(prepared.without_selection())
    return parts


def part_loop(gen, part, state, count: tf.Tensor) -> Callable[[], tuple]:
    """``part`` run ``count`` times in one XLA ``tf.while_loop``, its results pinned as ``evolve`` pins
    them, so that it costs what it costs inside a compiled generation."""
    @fusion.xla_function
    def run(pop, fit, count):
        def body(i, pop, fit):
            key = rng.fold_in(gen.root, i)
            pop, fit = part(pop, fit, key, i + 1)
            return i + 1, fusion.materialize(pop, key), fusion.materialize(fit, key)
        # both: an unused one would be optimised away
        return tf.while_loop(lambda i, p, f: i < count, body, (tf.constant(0), pop, fit))[1:]
    return lambda: run(state.population, state.fitness, count)


def _part_names(model) -> list[str]:
    """A name per node of ``model``: its op's class, with the node's name where two share a class."""
    kinds = [type(node.op).__name__ for node in model.nodes]
    return [kind if kinds.count(kind) == 1 else f"{kind} ({node.op.name})" for kind, node in zip(kinds, model.nodes)]


def population_arrays(model) -> list[str]:
    """The population-sized arrays one generation of ``model`` can hold (XLA fusion may never write some)."""
    names = _part_names(model)
    return (["the population"] + [f"{name}'s children" for name in names]
            + [f"{name}'s mates" for name, node in zip(names, model.nodes) if isinstance(node.op, evo.ops.Mating)]
            + ["selection's new population"])


def _smallest_cache(total: int, caches: dict[str, int]) -> str:
    """Where ``total`` bytes sit in the cache hierarchy, as words: "fits in L2 (1,024 KiB)" or not."""
    fits = [level for level, b in sorted(caches.items()) if total <= b]
    largest = max(caches, key=caches.get, default=None)
    return (f"which fits in {fits[0]} ({caches[fits[0]] // 1024:,} KiB)" if fits else
            f"more than the largest cache, {largest} ({caches[largest] // 1024:,} KiB)" if largest else
            "against cache sizes this machine does not report")


def breakdown_table(breakdown: dict) -> list[dict]:
    """``generation_breakdown`` as rows: microseconds per generation timed apart, their share of the
    whole generation, and what removing the part from the whole saved (ops and selection)."""
    whole, saved = breakdown["seconds"]["whole generation"], breakdown["saved"]
    return [{"part": name, "µs per generation, apart": round(s * 1e6, 1), "share of a generation": f"{s / whole:.0%}",
             "µs saved without it": round(saved[name] * 1e6, 1) if name in saved else "",
             "share saved": f"{saved[name] / whole:.0%}" if name in saved else ""}
            for name, s in breakdown["seconds"].items()]


def breakdown_sentences(breakdown: dict) -> bench.Verdicts:
    """What the breakdown says against the limits: random words, the generator's rate, and the
    smallest cache that holds the population-sized arrays of a generation."""
    sec, n, genes = breakdown["seconds"], breakdown["individuals"], breakdown["genes"]
    whole, drawn, words = sec["whole generation"], sec["random words alone"], breakdown["words"]
    rate = words / drawn
    out = [f"One generation takes {whole * 1e6:,.0f} µs: {n * genes / whole:.3g} gene-generations/s.",
           f"It draws {words:,} random 32-bit words ({words / n:.1f} per individual); drawn alone they take "
           f"{drawn * 1e6:,.0f} µs ({drawn / whole:.0%} of the generation), {rate:.3g} words/s on this "
           f"machine, so a design drawing this many words cannot pass {n * genes * rate / words:.3g} "
           "gene-generations/s.",
           most_expensive_sentence(breakdown)]
    out.append(removal_sentence(breakdown))
    arrays, size = breakdown["arrays"], breakdown["population_bytes"]
    total = size * len(arrays)
    out.append(f"The stored population is {size / 1024:,.0f} KiB; a generation handles up to {len(arrays)} arrays "
               f"of that size ({', '.join(arrays)}), {total / 1024:,.0f} KiB in all, "
               f"{_smallest_cache(total, breakdown['cache_bytes'])}.")
    return bench.Verdicts(out)


def most_expensive_sentence(breakdown: dict) -> str:
    """The part that took longest timed apart, named alone only where it took measurably longer than each
    other part; otherwise it and the parts this run cannot tell from it, in order of their medians."""
    cmp, sec = breakdown["comparison"], breakdown["seconds"]
    whole = sec["whole generation"]
    parts = sorted((k for k in sec if k not in ("whole generation", "random words alone")), key=sec.get, reverse=True)
    biggest = parts[0]
    judged = cmp.rounds >= bench.MIN_ROUNDS
    tied = [p for p in parts[1:] if not judged or cmp.call(biggest, over=p) != "slower"]
    reading = ", ".join(f"{p} {sec[p] * 1e6:,.0f} µs ({sec[p] / whole:.0%})" for p in [biggest, *tied])
    if not tied:
        return (f"The most expensive part measured apart is {reading}, measurably more than every other part; "
                "the parts measured apart include their own random words.")
    return (f"The most expensive parts measured apart are {reading}, which this run cannot tell apart"
            + ("" if judged else f" ({cmp.rounds} rounds are too few to judge)")
            + "; the parts measured apart include their own random words.")


def _saved_share(cmp: bench.Comparison, name: str) -> tuple[float, float]:
    """The 95% interval of the share of the whole generation that removing ``name`` saved."""
    lo, hi = cmp.interval(f"without {name}", over="whole generation")
    return 1 - 1 / lo, 1 - 1 / hi


def removal_sentence(breakdown: dict) -> str:
    """Which part saves the most when removed from the whole generation, said only as far as the intervals go.

    A part's saving is called where the generation without it is measurably faster than the whole; one part
    is named as saving the most only where the generation without it is also measurably faster than the
    generation without each other part. Otherwise the sentence says this run cannot tell; with fewer than
    ``bench.MIN_ROUNDS`` rounds it gives the savings with no interval and judges nothing.
    """
    cmp, saved = breakdown["comparison"], breakdown["saved"]
    whole = breakdown["seconds"]["whole generation"]

    judged = cmp.rounds >= bench.MIN_ROUNDS

    def reading(name: str) -> str:
        if not judged:
            return f"{name} {saved[name] * 1e6:,.0f} µs ({_percent(saved[name] / whole)} of the generation)"
        lo, hi = _saved_share(cmp, name)
        return (f"{name} {saved[name] * 1e6:,.0f} µs ({_percent(saved[name] / whole)} of the generation; 95% "
                f"interval {_percent(lo)} to {_percent(hi)})")

    if not judged:
        return ("Removed from the whole generation: " + ", ".join(map(reading, saved)) + f"; {cmp.rounds} rounds "
                f"are too few to judge which saves the most (at least {bench.MIN_ROUNDS} are needed).")
    helps = [name for name in saved if cmp.call(f"without {name}", over="whole generation") == "faster"]
    if not helps:
        return ("Removing any one part did not measurably shorten the whole generation in this run: "
                + ", ".join(map(reading, saved)) + ".")
    most = max(helps, key=saved.get)
    rivals = [name for name in saved if name != most]
    if all(cmp.call(f"without {most}", over=f"without {name}") == "faster" for name in rivals):
        return (f"Removed from the whole generation, {reading(most)} saves the most, measurably more than "
                + (" or ".join(rivals) if rivals else "nothing") + "; a part can cost less inside the generation "
                "than apart, where XLA fuses it with its neighbours, or more.")
    unsettled = [name for name in rivals if cmp.call(f"without {most}", over=f"without {name}") != "faster"]
    return ("Removed from the whole generation, " + " and ".join(map(reading, helps))
            + (" each measurably shorten it" if len(helps) > 1 else " measurably shortens it")
            + f", but {most} is not called the largest saving: "
            + "; ".join(f"beside the generation without {name}, the one without {most} reads "
                        f"{cmp.ratio_with_interval(f'without {most}', f'without {name}')}, "
                        f"{cmp.uncalled(f'without {most}', f'without {name}')}" for name in unsettled)
            + ".")


def _percent(share: float) -> str:
    """A share as a whole percentage, with no "-0%" for a share that rounds to nothing."""
    text = f"{share:.0%}"
    return "0%" if text == "-0%" else text


def packing_sentence(measured: bench.Comparison, model, packed: str, unpacked: str,
                     cache_bytes: dict[str, int] | None = None) -> str:
    """What the packed-against-unpacked verdict of ``measured`` says, and where the unpacked arrays sit.

    Packing gives each step 32 times fewer words: fewer bytes to move and fewer instructions to run. Which
    of the two a gain comes from is not measured; the sentence only rules out main memory where the unpacked
    generation's population-sized arrays (``population_arrays(model)`` of int32 genes) fit in a cache.
    """
    caches = _cache_bytes() if cache_bytes is None else cache_bytes
    n, genes = measured.params["population"], measured.params["genes"]
    arrays = len(population_arrays(model))
    total = arrays * n * genes * 4
    where = _smallest_cache(total, caches)
    verdict = measured.verdict(packed, over=unpacked)
    head = (f"Packing: {verdict}. Unpacked, a generation of {n} x {genes} handles up to {arrays} "
            f"population-sized arrays of int32 genes, {total / 1024:,.0f} KiB in all, {where}")
    if not measured.apart(packed, unpacked):
        return head + "; at this size packing made no difference this run could call."
    if where.startswith("which fits"):
        cause = ("so the difference does not come from main memory: packed, each instruction handles 32 genes and "
                 "each pass moves 32 times fewer bytes through the caches")
    elif caches:
        cause = ("so an unpacked pass reaches main memory with 32 times the bytes of a packed one, and packed, each "
                 "instruction also handles 32 genes")
    else:
        cause = "packed, each pass moves 32 times fewer bytes and each instruction handles 32 genes"
    return head + "; " + cause + "; this run does not separate the two."



def budget_sentence(measured: bench.Comparison, budgeted: str, unbudgeted: str, model: evo.Model,
                    memory_budget: int, generations: int) -> str:
    """What the memory budget did in ``measured`` (``budgeted`` against ``unbudgeted``, ``generations`` per
    call, ``model`` evolved): its batches of the population (``evo.inspect.batch_rows``), then the verdict and,
    where the run calls one, the mechanism: each extra batch pays a loop step and hands the cores a smaller
    kernel; a faster budgeted run is put down to the smaller working set, as a reading to re-run."""
    n, per_row = measured.params["population"], measured.params["genes"] * evo.inspect.BYTES_PER_GENE_IN_FLIGHT
    rows = evo.inspect.batch_rows(model, memory_budget, n)
    batches = -(-n // rows)
    text = (f"With the budget, each generation runs its ops and fitness over {batches} batches of {rows} rows in an "
            f"inner `tf.while_loop`: {generations * batches} loop iterations per call instead of {generations}, each "
            f"running kernels {batches} times smaller. The work is the same (the result is identical). ")
    if not measured.apart(budgeted, unbudgeted):
        return text + (f"Against the run without it, the budget showed {measured.uncalled(budgeted, unbudgeted)} "
                       f"({measured.ratio_with_interval(budgeted, unbudgeted)}): whatever the extra iterations cost, "
                       "this run does not call it.")
    if measured.speedup(budgeted, over=unbudgeted) < 1:
        extra_us = ((measured[budgeted].median_s - measured[unbudgeted].median_s)
                    / (generations * max(batches - 1, 1)) * 1e6)
        return text + (f"Here the budget cost {extra_us:,.0f} µs per extra batch: each iteration pays the loop's own "
                       "step (its condition, its state) and hands the cores a smaller piece of work per kernel, so "
                       "with two cores and a small population the budget is pure overhead.")
    return text + (f"Here the batched run was faster: a batch's working set ({rows * per_row:,} bytes against "
                   f"{n * per_row:,} for a whole generation) can sit in a faster cache, which paid for the extra "
                   "iterations this time; re-run before relying on it.")

# -- runs the lecture, the tests and the benchmark share -----------------------------------------


def onemax_run(strategy, length: int = 64, individuals: int = 64, generations: int = 60,
               distribution: str = "global", migration_interval: int = 10, migrants: int = 1,
               mode: str = "xla", seed: int = 0, model=None, **evolve_options) -> dict:
    """Evolve the engine's OneMax model (bit flip 1/L, uniform crossover, tournament of 2) under
    ``strategy``; a JSON-able summary, so a worker process can return it. Pass ``model`` (built
    with the same length, mode and seed) to reuse its compiled programs; other options go to
    ``evolve`` (callbacks, chunk, resume_from with population=None...)."""
    model = model or onemax_model(length, mode, seed=seed)
    genes = None if "resume_from" in evolve_options else evo.population.random_integers((individuals, length), 0, 2,
                                                                                         seed=seed)
    result = model.evolve(genes, generations, strategy=strategy, distribution=distribution,
                          migration_interval=migration_interval, migrants=migrants, **evolve_options)
    return {"replicas": strategy.num_replicas_in_sync, "distribution": distribution,
            "best_fitness": result.best_fitness, "generations": result.generations,
            "best_history": result.history["best"], "mean_history": result.history["mean"],
            "stopped_early": result.stopped_early, "population_digest": digest(result.population),
            "best_digest": digest(result.best)}


def digest(array: np.ndarray) -> str:
    """A short hash of an array's bytes: equal digests, equal arrays."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def multi_worker_onemax(checkpoint: str | None = None, resume_at: int | None = None, **kwargs) -> dict:
    """Run inside ``course_lib.distribute.launch``: ``resumable_onemax`` under MultiWorkerMirroredStrategy
    (one replica per worker process, collectives over gRPC on 127.0.0.1). ``checkpoint`` has ``{worker}``
    in it: each worker writes its own file."""
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG; first TF call of the worker
    worker = distribute.worker_context()["index"]
    path = None if checkpoint is None else checkpoint.format(worker=worker)
    return {"worker": worker, **resumable_onemax(strategy, path, resume_at, **kwargs)}


def resumable_onemax(strategy, checkpoint: str | None = None, resume_at: int | None = None, **kwargs) -> dict:
    """``onemax_run``; with a ``checkpoint`` path and ``resume_at``: run to ``resume_at`` with a Checkpoint
    there, then resume from it to the end (the summary of the resumed run)."""
    if checkpoint is None:
        return onemax_run(strategy, **kwargs)
    model = onemax_model(kwargs.get("length", 64), kwargs.get("mode", "xla"), seed=kwargs.get("seed", 0))
    onemax_run(strategy, **{**kwargs, "generations": resume_at}, model=model,
               callbacks=[evo.callbacks.Checkpoint(checkpoint, every=resume_at)])
    return onemax_run(strategy, **kwargs, model=model, resume_from=checkpoint)


def replica_variants(make_model, population, generations: int, *, strategy_for, migrants: int = 1) -> dict:
    """``SpeedupWidget`` builders (knobs ``replicas`` and ``interval``, the islands' migration interval,
    a name short enough for a slider's label): a model on one device without a strategy, and with
    global selection and with islands under ``strategy_for(replicas)``, each timed call a whole
    ``evolve`` of ``generations`` from ``population``.

    ``make_model()`` returns the compiled model a variant runs; each build calls it, so a fresh
    model makes every variant's first call trace and compile its own programs (a model caches
    them, and a shared one would have compiled them in an earlier call)."""

    def builder(distribution: str | None):
        def build(replicas: int, interval: int):
            model = make_model()
            if distribution is None:
                return lambda: model.evolve(population, generations=generations).population
            strategy = strategy_for(replicas)
            return lambda: model.evolve(population, generations=generations, strategy=strategy,
                                        distribution=distribution, migration_interval=interval,
                                        migrants=migrants).population
        return build

    return {"one device": builder(None), "global": builder("global"), "islands": builder("islands")}


def replica_comparison(strategy, model, population, generations: int = 30, *, migration_interval: int = 10,
                       migrants: int = 1, repeats: int = 3):
    """Time ``model`` on one device without a strategy, then with global selection and with islands
    under ``strategy``, on the same population, in this run (``course_lib.bench.compare``)."""
    r = strategy.num_replicas_in_sync
    shape = tuple(np.shape(population))
    builders = replica_variants(lambda: model, population, generations, strategy_for=lambda _: strategy,
                                migrants=migrants)
    variants = {name if name == "one device" else f"{name} x{r}": build(r, migration_interval)
                for name, build in builders.items()}
    return bench.compare(variants, baseline="one device", repeats=repeats, warmup=1, number=1,
                         title=f"{model.name} {shape[0]} x {shape[1]}, {generations} generations, {r} replica(s)",
                         params={"problem": model.name, "population": list(shape), "generations": generations,
                                 "replicas": r, "migration_interval": migration_interval, "migrants": migrants})
