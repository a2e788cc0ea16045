"""Evolution on many devices and machines: ``model.evolve(population, strategy=...)``.

The population is split into equal shards, one per replica of a ``tf.distribute.Strategy``
(MirroredStrategy over GPUs or virtual CPUs, MultiWorkerMirroredStrategy over processes or
machines, OneDeviceStrategy, TPUStrategy). Each replica makes and scores the children of
its own shard with the engine's generation code. Two ways to select:

* ``distribution="global"``: every generation the replicas ``all_gather`` their children
  and fitness; every replica runs the same selection (same key) over the whole pool and
  keeps the winners for its own slots. One all_gather of all children per generation:
  the price of one well-mixed population.
* ``distribution="islands"``: each replica evolves its shard alone; every
  ``migration_interval`` generations its ``migrants`` best individuals replace the worst of
  the next replica in a ring, through one all_gather of replicas x migrants genomes.

Why TPUStrategy needs no change: a ``tf.function`` loops over generations (global) or
migration epochs (islands) and calls ``strategy.run`` each time; inside, a replica's own
work is an XLA function (variation, fitness and selection; for islands a ``while_loop`` of
generations), the replica id is a tensor, and the only communication is
``ReplicaContext.all_gather``. No Python runs per replica or per generation in the loop.
Results come back to Python between chunks through ``strategy.gather``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import textwrap

import numpy as np
import tensorflow as tf

from course_lib.evo import callbacks as cb_lib
from course_lib.evo import fusion, rng
from course_lib.evo import packed as packing
from course_lib.evo.model import STATS, Result, _Program, _whole
from course_lib.evo.selection import score

DISTRIBUTIONS = ("global", "islands")


# -- checks -------------------------------------------------------------------------------


def shard_size(population: int, replicas: int) -> int:
    """Individuals per replica; a clear error when the population does not split evenly.

    No padding: a padded individual would take part in selection and mating, so the
    population would not be the one given.
    """
    if population % replicas:
        lower = population // replicas * replicas
        raise ValueError(f"a population of {population} individuals does not split evenly over {replicas} "
                         f"replicas: use a multiple of {replicas} (e.g. {lower or replicas} or {lower + replicas}) "
                         "so that every replica evolves a shard of the same size")
    return population // replicas


def check_devices(strategy: tf.distribute.Strategy) -> list[str]:
    """The strategy's devices on this worker, or a clear error when one does not exist here.

    MirroredStrategy accepts device names that do not exist and, with soft placement,
    would silently run everything on the CPU.
    """
    if not isinstance(strategy, tf.distribute.Strategy):
        raise TypeError(f"strategy must be a tf.distribute.Strategy (e.g. tf.distribute.MirroredStrategy()), "
                        f"got {type(strategy).__name__}")
    have = {_short(d.name) for d in tf.config.list_logical_devices()}
    wanted = [_short(d) for d in strategy.extended.worker_devices]
    missing = [d for d in wanted if d not in have]
    if missing:
        raise ValueError(f"the strategy's devices {', '.join(missing)} are not available here (logical devices: "
                         f"{', '.join(sorted(have))}); build the strategy from tf.config.list_logical_devices() "
                         "or split the CPU with course_lib.devices.virtual_cpus(n) before TensorFlow starts")
    return wanted


def _short(device: str) -> str:
    spec = tf.DeviceSpec.from_string(device)
    return f"{spec.device_type}:{spec.device_index or 0}"


def _check_callbacks(callbacks) -> tuple[list, float | None]:
    callbacks = list(callbacks)
    target = None
    for c in callbacks:
        if not isinstance(c, cb_lib.Callback):
            raise TypeError(f"callbacks must be evo.callbacks.Callback instances, got {type(c).__name__}")
        if isinstance(c, cb_lib.Checkpoint):
            raise ValueError("Checkpoint is not supported with strategy=: a distributed run cannot be resumed "
                             "yet; run without a strategy to checkpoint")
        if isinstance(c, cb_lib.EarlyStopping):
            if target is not None:
                raise ValueError("pass at most one EarlyStopping")
            if c.patience is not None:
                raise ValueError("EarlyStopping(patience=...) is not supported with strategy=; use target=")
            target = c.target
    return callbacks, target


# -- the compiled program -------------------------------------------------------------------


def _wire(x: tf.Tensor) -> tf.Tensor:
    """What collectives take on every platform: packed uint32 words bitcast to int32 (free),
    other small integers widened to int32 (lossless); floats, int32 and int64 as they are."""
    if x.dtype == tf.uint32:
        return tf.bitcast(x, tf.int32)
    if x.dtype.is_integer and x.dtype not in (tf.int32, tf.int64):
        return tf.cast(x, tf.int32)
    return x


def _unwire(x: tf.Tensor, dtype: tf.DType) -> tf.Tensor:
    if x.dtype == dtype:
        return x
    return tf.bitcast(x, dtype) if dtype == tf.uint32 else tf.cast(x, dtype)


def _replica_id() -> tf.Tensor:
    return tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.int32)


class _Replica:
    """A replica's own work for one (model, mode, packing, shard size, batch), compiled in ``mode``.

    Shared by every strategy, distribution and migration setting that uses the same shard
    size, so a sweep over them compiles these once per device. Built on the engine's
    ``_Program`` for one shard (variation and fitness); selection and the island loop are here.
    """

    def __init__(self, model, mode, packed, shard, batch):
        self.model, self.shard = model, shard
        self.prog = _Program(model, mode, packed, shard, batch, 1)
        self.sign = self.prog.sign
        compiled = {"graph": lambda f: tf.function(f, autograph=False), "xla": fusion.xla_function}[mode]
        self.children = compiled(self._children)
        self.select = compiled(self._select)
        self.islands = compiled(self._islands)

    def key(self, generation, replica):
        """A replica's key for one generation: the engine's generation key, folded with the replica."""
        return rng.fold_in(rng.fold_in(self.prog.key, generation), replica)

    def start(self, shard):
        """(fitness, best, its fitness) of a first shard; traced into the start graph."""
        fit = self.prog.evaluate(shard)
        j = tf.argmax(score(fit, self.sign), output_type=tf.int32)
        return fit, tf.gather(shard, j), tf.gather(fit, j)

    def _pool(self, pop, fit, key):
        children = self.prog.vary(pop, key)
        child_fit = self.prog.evaluate(children)
        if self.model.selection.pool == "both":
            return tf.concat([pop, children], 0), tf.concat([fit, child_fit], 0)
        return children, child_fit

    def _children(self, pop, fit, generation, replica):
        return self._pool(pop, fit, self.key(generation, replica))

    def _keep_best(self, pop, fit, best, best_fit):
        j = tf.argmax(score(fit, self.sign), output_type=tf.int32)
        gen_best = tf.gather(fit, j)
        better = score(gen_best, self.sign) > score(best_fit, self.sign)
        row = tf.stack([gen_best, tf.reduce_mean(fit), tf.math.reduce_std(fit)])
        return tf.where(better, tf.gather(pop, j), best), tf.where(better, gen_best, best_fit), row

    def _select(self, pool, pool_fit, generation, replica, best, best_fit):
        """Global selection: the same draw over the whole gathered pool on every replica; keep this
        replica's slots. The pool holds every replica's share, so its size gives the population's."""
        factor = len(self.model.outputs) + (1 if self.model.selection.pool == "both" else 0)
        replicas = pool.shape[0] // (self.shard * factor)
        key = rng.fold_in(rng.fold_in(self.prog.key, generation), 0)
        parents = np.tile(np.arange(self.shard * factor) < self.shard, replicas)  # each replica's block: parents first
        idx = self.model.selection.choose(pool_fit, self.sign, key, self.shard * replicas, parents)
        mine = tf.slice(idx, [replica * self.shard], [self.shard])
        pop, fit = tf.gather(pool, mine), tf.gather(pool_fit, mine)
        return (pop, fit, *self._keep_best(pop, fit, best, best_fit))

    def _islands(self, pop, fit, best, best_fit, hist, offset, generation, count, replica):
        """``count`` generations of one island in one while_loop, (best, mean, std) rows into ``hist``
        from ``offset``."""

        def body(i, pop, fit, best, best_fit, hist):
            key = self.key(generation + i + 1, replica)
            pool, pool_fit = self._pool(pop, fit, key)
            parents = np.arange(pool.shape[0]) < self.shard
            idx = self.model.selection.choose(pool_fit, self.sign, rng.fold_in(key, 0), self.shard, parents)
            pop, fit = tf.gather(pool, idx), tf.gather(pool_fit, idx)
            best, best_fit, row = self._keep_best(pop, fit, best, best_fit)
            return i + 1, pop, fit, best, best_fit, tf.tensor_scatter_nd_update(hist, [[offset + i]], row[None])

        return tf.while_loop(lambda i, *_: i < count, body, (tf.constant(0), pop, fit, best, best_fit, hist))[1:]


class _Sharded:
    """The loops of one (strategy, distribution, migration, population size, chunk): graph
    functions that call ``strategy.run`` on the replica's compiled work.

    Per-replica state: (shard, its fitness, best genome so far, its fitness), plus a
    history buffer of (best, mean, std) rows for the generations of one call.
    """

    def __init__(self, replica: _Replica, strategy, distribution, interval, migrants, n, chunk):
        self.replica, self.strategy, self.distribution = replica, strategy, distribution
        self.replicas = strategy.num_replicas_in_sync
        self.total, self.shard = n, n // self.replicas
        self.interval, self.migrants = interval, migrants
        self.sign = replica.sign
        if distribution == "islands":  # whole migration epochs per call
            self.epochs = max(1, chunk // interval)
            self.chunk = max(chunk, interval)
        else:
            self.chunk = chunk
        # partials: TensorFlow's retracing warning counts the traces of a method's code across all
        # instances, but each instance (another strategy or interval) traces its own functions once
        self.start = tf.function(functools.partial(self._start), autograph=False)
        self.run_global = tf.function(functools.partial(self._run_global), autograph=False)
        self.run_islands = tf.function(functools.partial(self._run_islands), autograph=False)
        # one function per kind of result, each traced once
        self._collectors = {what: tf.function(functools.partial(self._collect), autograph=False)
                            for what in ("chunk", "final")}

    def _emigrants(self, pop, fit):
        top = tf.math.top_k(score(fit, self.sign), k=self.migrants).indices
        return tf.gather(pop, top), tf.gather(fit, top)

    def _immigrate(self, pop, fit, arrivals, arrival_fit, replica):
        """The previous replica's emigrants (ring) replace this replica's worst individuals."""
        source = (replica + self.replicas - 1) % self.replicas
        start = source * self.migrants
        rank = len(arrivals.shape)
        incoming = tf.slice(arrivals, [start] + [0] * (rank - 1), [self.migrants] + [-1] * (rank - 1))
        incoming_fit = tf.slice(arrival_fit, [start], [self.migrants])
        worst = tf.math.top_k(-score(fit, self.sign), k=self.migrants).indices[:, None]
        return (tf.tensor_scatter_nd_update(pop, worst, incoming),
                tf.tensor_scatter_nd_update(fit, worst, incoming_fit))

    def _gather(self, ctx, value, size):
        """all_gather along the first axis, keeping the static shape (MultiWorkerMirroredStrategy loses it)."""
        out = _unwire(ctx.all_gather(_wire(value), axis=0), value.dtype)
        return tf.ensure_shape(out, (size, *value.shape[1:]))

    # -- the loops (graph functions around strategy.run; the start and migration are small
    # and run as graph ops, which saves an XLA compilation per device for each) ----------------
    def _start(self, shards):
        self.replica.prog._traced()

        def replica(shard):
            return (shard, *self.replica.start(shard))

        return self.strategy.run(replica, args=(shards,))

    def _empty_history(self):
        return self.strategy.run(lambda: tf.zeros((self.chunk, len(STATS))))

    def _run_global(self, state, generation, count):
        self.replica.prog._traced()

        def replica(pop, fit, best, best_fit, hist, g, i):
            ctx, r = tf.distribute.get_replica_context(), _replica_id()
            pool, pool_fit = self.replica.children(pop, fit, g, r)
            size = self.replicas * pool.shape[0]
            pool, pool_fit = self._gather(ctx, pool, size), self._gather(ctx, pool_fit, size)
            pop, fit, best, best_fit, row = self.replica.select(pool, pool_fit, g, r, best, best_fit)
            return pop, fit, best, best_fit, tf.tensor_scatter_nd_update(hist, [[i]], row[None])

        def body(i, state):
            return i + 1, self.strategy.run(replica, args=(*state, generation + i + 1, i))

        state = (*state, self._empty_history())
        return tf.while_loop(lambda i, s: i < count, body, (tf.constant(0), state))[1]

    def _run_islands(self, state, generation, epochs, length, migrate: bool):
        self.replica.prog._traced()

        def replica(pop, fit, best, best_fit, hist, e):
            r = _replica_id()
            pop, fit, best, best_fit, hist = self.replica.islands(pop, fit, best, best_fit, hist, e * length,
                                                                  generation + e * length, length, r)
            if migrate and self.replicas > 1:
                ctx, size = tf.distribute.get_replica_context(), self.replicas * self.migrants
                out, out_fit = self._emigrants(pop, fit)
                arrivals, arrival_fit = self._gather(ctx, out, size), self._gather(ctx, out_fit, size)
                pop, fit = self._immigrate(pop, fit, arrivals, arrival_fit, r)
            return pop, fit, best, best_fit, hist

        def body(e, state):
            return e + 1, self.strategy.run(replica, args=(*state, e))

        state = (*state, self._empty_history())
        return tf.while_loop(lambda e, s: e < epochs, body, (tf.constant(0), state))[1]

    # -- host side -----------------------------------------------------------------------
    def distribute(self, genes: tf.Tensor):
        """Each replica's shard (on MultiWorkerMirroredStrategy each worker holds the whole population)."""
        shards = tf.split(genes, self.replicas, axis=0)
        return self.strategy.experimental_distribute_values_from_function(
            lambda ctx: tf.identity(shards[ctx.replica_id_in_sync_group]))

    def _collect(self, values):
        dtypes = [self.strategy.experimental_local_results(v)[0].dtype for v in values]
        wired = self.strategy.run(lambda *v: [_wire(x[None]) for x in v], args=tuple(values))
        return [_unwire(self.strategy.gather(v, axis=0), d) for v, d in zip(wired, dtypes)]

    def gather(self, what: str, *values) -> list[np.ndarray]:
        """Every replica's values on this worker, stacked: shape (replicas, *value)."""
        return [v.numpy() for v in self._collectors[what](list(values))]

    def combine_history(self, hist: np.ndarray, done: int) -> dict[str, list[float]]:
        """Per-replica (best, mean, std) rows -> the whole population's (shards are equal in size)."""
        h = hist[:, :done].astype(np.float64)
        best = h[..., 0][np.argmax(score(h[..., 0], self.sign).numpy(), axis=0), np.arange(done)]
        mean = h[..., 1].mean(axis=0)
        std = np.sqrt(np.maximum((h[..., 2] ** 2).mean(axis=0) + ((h[..., 1] - mean) ** 2).mean(axis=0), 0.0))
        return {"best": best.tolist(), "mean": mean.tolist(), "std": std.tolist()}


class _Run:
    """A distributed evolve call as callbacks see it between chunks (no ``snapshot``: no resume)."""

    def __init__(self, model, generations):
        self.model, self.generation, self.generations = model, 0, generations
        self.history = {k: [] for k in STATS}
        self.best_fitness = math.nan  # known after the first chunk
        self.stop = self.stopped_early = False


def _mode(model, shard_genes, batch, chunk) -> str:
    """The model's mode; 'auto' times the modes on one shard as a single-device run."""
    if model.mode == "eager":
        raise ValueError("evolve(strategy=...) compiles its loop: compile the model with mode='graph', 'xla' "
                         "or 'auto' (eager runs replicas one after the other in Python)")
    mode = model._resolve_mode(shard_genes, batch, chunk)
    return "graph" if mode == "eager" else mode


def _packed(model, genes: tf.Tensor) -> bool:
    """Bit-pack when the model can and every gene is 0 or 1 (as the engine decides)."""
    binary = bool(tf.reduce_all((genes == 0) | (genes == 1))) if genes.dtype.is_integer else False
    if model.pack is True and not (model._packable() and binary):
        raise ValueError("pack=True, but the ops cannot run on packed genomes or the population has genes "
                         "other than 0 and 1")
    return model._packable() and binary


def evolve(model, population, generations: int = 100, *, strategy, distribution: str = "global",
           migration_interval: int = 10, migrants: int = 1, callbacks=(), batch_size=None, memory_budget=None,
           chunk: int = 64) -> Result:
    """``model.evolve(population, generations, strategy=...)`` on every replica of ``strategy``.

    ``distribution``: "global" (selection over the whole population every generation) or
    "islands" (each replica its own population; every ``migration_interval`` generations
    its ``migrants`` best replace the next replica's worst, in a ring). The population
    must split evenly over the replicas. Callbacks run between compiled chunks;
    EarlyStopping(target=...) ends the run at the end of the chunk that reached it.
    """
    model._require_compiled()
    check_devices(strategy)
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {distribution!r}; choose 'global' (selection over the whole "
                         "population) or 'islands' (one population per replica, with migration)")
    generations = _whole("generations", generations, 0)
    chunk = _whole("chunk", chunk, 1)
    interval = _whole("migration_interval", migration_interval, 1)
    migrants = _whole("migrants", migrants, 1)
    callbacks, target = _check_callbacks(callbacks)
    genes = model._population(population)
    replicas = strategy.num_replicas_in_sync
    n = genes.shape[0]
    shard = shard_size(n, replicas)
    if shard < 2:
        raise ValueError(f"each of the {replicas} replicas would hold {shard} individual; a shard needs at least 2 "
                         f"(use a population of at least {2 * replicas})")
    per_shard = shard * len(model.outputs) + (shard if model.selection.pool == "both" else 0)
    if distribution == "global":
        model.selection.check(per_shard * replicas, n)
    else:
        model.selection.check(per_shard, shard)
        if migrants >= shard:
            raise ValueError(f"migrants={migrants} must be fewer than the {shard} individuals of a replica's shard")
    packed = _packed(model, genes)
    batch = model._batch_rows(batch_size, memory_budget, shard)
    mode = _mode(model, genes[:shard], batch, chunk)

    # cached in the model's program table, which compile() replaces: a recompiled model starts afresh
    replica_key = ("replica", mode, packed, shard, batch)
    if replica_key not in model._programs:
        model._programs[replica_key] = _Replica(model, mode, packed, shard, batch)
    key = ("strategy", strategy, distribution, interval, migrants, mode, packed, n, batch, chunk)
    if key not in model._programs:
        model._programs[key] = _Sharded(model._programs[replica_key], strategy, distribution, interval, migrants,
                                        n, chunk)
    prog: _Sharded = model._programs[key]
    stored = packing.pack(genes) if packed else genes
    state = prog.start(prog.distribute(stored))
    run = _Run(model, generations)
    for c in callbacks:
        c.on_evolve_begin(run)
    while run.generation < generations and not run.stop:
        g = run.generation
        if distribution == "global":
            done = min(prog.chunk, generations - g)
            state = prog.run_global(state, tf.constant(g), tf.constant(done))
        else:
            epochs = min(prog.epochs, (generations - g) // interval)
            if epochs:
                done = epochs * interval
                state = prog.run_islands(state, tf.constant(g), tf.constant(epochs), tf.constant(interval), True)
            else:  # the last generations, fewer than an interval: no migration
                done = generations - g
                state = prog.run_islands(state, tf.constant(g), tf.constant(1), tf.constant(done), False)
        state, hist = state[:4], state[4]
        hist, bests, best_fits = prog.gather("chunk", hist, state[2], state[3])
        for k, column in prog.combine_history(hist, done).items():
            run.history[k].extend(column)
        run.generation = g + done
        run.best_fitness = float(best_fits[np.argmax(score(best_fits, prog.sign).numpy())])
        if target is not None and prog.sign * run.best_fitness >= prog.sign * target:
            run.stop = run.stopped_early = True
        for c in callbacks:
            c.on_chunk_end(run)
    for c in callbacks:
        c.on_evolve_end(run)
    model.history = run.history
    pop, fit, bests, best_fits = prog.gather("final", *state)
    j = int(np.argmax(score(best_fits, prog.sign).numpy()))
    best, best_fitness = bests[j], float(best_fits[j])
    pop, fit = pop.reshape(n, *pop.shape[2:]), fit.reshape(n)
    spec = model.input.spec
    if packed:
        pop = packing.unpack(tf.constant(pop), spec.shape, spec.dtype).numpy()
        best = packing.unpack(tf.constant(best[None]), spec.shape, spec.dtype).numpy()[0]
    return Result(best=best, best_fitness=best_fitness, history=run.history, population=pop, fitness=fit,
                  generations=run.generation, mode=mode, packed=packed, stopped_early=run.stopped_early)


# -- reading a distributed run ----------------------------------------------------------------------


def traffic(model, population: int, replicas: int, distribution: str = "global", migration_interval: int = 10,
            migrants: int = 1, packed: bool | None = None) -> dict:
    """What each replica receives through ``all_gather``, per generation on average.

    Genomes count as stored in the loop: packed 0/1 genomes (``packed=None``: whenever the
    model's ops allow it) take 4 bytes per 32 genes. Global selection gathers the whole
    pool of children (and parents, for mu + lambda) with their fitness every generation;
    islands gather ``replicas x migrants`` genomes every ``migration_interval`` generations.
    """
    spec = model.input.spec
    packed = model._packable() if packed is None else packed
    genome = 4 * packing.n_words(spec.size) if packed else spec.size * spec.dtype.size
    row = genome + 4  # and its float32 fitness
    if distribution == "global":
        rows = population * (len(model.outputs) + (1 if model.selection.pool == "both" else 0))
        per_generation = rows * row
    elif distribution == "islands":
        rows = replicas * migrants if replicas > 1 else 0
        per_generation = rows * row / migration_interval
    else:
        raise ValueError(f"unknown distribution {distribution!r}; choose one of {', '.join(DISTRIBUTIONS)}")
    return {"distribution": distribution, "replicas": replicas, "rows gathered": rows,
            "bytes per row": row, "bytes per generation": per_generation}


def plot_histories(runs: dict, stat: str = "best", ax=None, title: str = ""):
    """One line per run (name -> Result or history dict) of ``stat`` per generation."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3))
    for name, run in runs.items():
        history = getattr(run, "history", run)
        ax.plot(range(1, len(history[stat]) + 1), history[stat], label=name)
    ax.set_xlabel("generation")
    ax.set_ylabel(f"{stat} fitness")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return ax


# -- runs the lecture, the tests and the benchmark share -----------------------------------------


def onemax_run(strategy, length: int = 64, individuals: int = 64, generations: int = 60,
               distribution: str = "global", migration_interval: int = 10, migrants: int = 1,
               mode: str = "xla", seed: int = 0, model=None) -> dict:
    """Evolve the engine's OneMax model (bit flip 1/L, uniform crossover, tournament of 2) under
    ``strategy``; a JSON-able summary, so a worker process can return it. Pass ``model`` (built
    with the same length, mode and seed) to reuse its compiled programs."""
    from course_lib.evo import population
    from course_lib.evo.benchmarks import onemax_model

    model = model or onemax_model(length, mode, seed=seed)
    genes = population.random_integers((individuals, length), 0, 2, seed=seed)
    result = evolve(model, genes, generations, strategy=strategy, distribution=distribution,
                    migration_interval=migration_interval, migrants=migrants)
    return {"replicas": strategy.num_replicas_in_sync, "distribution": distribution,
            "best_fitness": result.best_fitness, "generations": result.generations,
            "best_history": result.history["best"], "mean_history": result.history["mean"],
            "population_digest": _digest(result.population)}


def _digest(array: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def multi_worker_onemax(**kwargs) -> dict:
    """Run inside ``course_lib.distribute.launch``: ``onemax_run`` under MultiWorkerMirroredStrategy
    (one replica per worker process, collectives over gRPC on 127.0.0.1)."""
    from course_lib.distribute import worker_context

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG; first TF call of the worker
    return {"worker": worker_context()["index"], **onemax_run(strategy, **kwargs)}


# -- throughput per replica count: `course bench ga-replicas` -------------------------------------

PROBLEMS = ("onemax", "rastrigin")


def _problem(problem: str, shape: tuple[int, int], mode: str):
    """(model, initial population) of the engine's benchmark models."""
    from course_lib.evo import benchmarks, population

    n, length = shape
    if problem == "onemax":
        return benchmarks.onemax_model(length, mode), population.random_integers(shape, 0, 2, seed=0)
    if problem == "rastrigin":
        return benchmarks.rastrigin_model(length, mode), population.uniform(shape, -5.12, 5.12, seed=0)
    raise ValueError(f"unknown problem {problem!r}; choose one of {', '.join(PROBLEMS)}")


def replica_variants(model, population, generations: int, *, strategy_for, migrants: int = 1) -> dict:
    """``SpeedupWidget`` builders (knobs ``replicas`` and ``migration_interval``): ``model`` on one device
    without a strategy, and with global selection and with islands under ``strategy_for(replicas)``,
    each timed call a whole ``evolve`` of ``generations`` from ``population``."""

    def builder(distribution: str | None):
        def build(replicas: int, migration_interval: int):
            if distribution is None:
                return lambda: model.evolve(population, generations=generations).population
            strategy = strategy_for(replicas)
            return lambda: evolve(model, population, generations=generations, strategy=strategy,
                                  distribution=distribution, migration_interval=migration_interval,
                                  migrants=migrants).population
        return build

    return {"one device": builder(None), "global": builder("global"), "islands": builder("islands")}


def replica_comparison(strategy, model, population, generations: int = 30, *, migration_interval: int = 10,
                       migrants: int = 1, repeats: int = 3):
    """Time ``model`` on one device without a strategy, then with global selection and with islands
    under ``strategy``, on the same population, in this run (``course_lib.bench.compare``)."""
    from course_lib import bench

    r = strategy.num_replicas_in_sync
    shape = tuple(np.shape(population))
    builders = replica_variants(model, population, generations, strategy_for=lambda _: strategy, migrants=migrants)
    variants = {name if name == "one device" else f"{name} x{r}": build(r, migration_interval)
                for name, build in builders.items()}
    return bench.compare(variants, baseline="one device", repeats=repeats, warmup=1, number=1,
                         title=f"{model.name} {shape[0]} x {shape[1]}, {generations} generations, {r} replica(s)",
                         params={"problem": model.name, "population": list(shape), "generations": generations,
                                 "replicas": r, "migration_interval": migration_interval, "migrants": migrants})


def _measure_in_fresh_process(replicas: int, problems: list, generations: int, repeats: int) -> dict:
    """Runs in a process of its own: virtual CPUs are fixed when TensorFlow starts."""
    from course_lib import devices
    from course_lib.distribute import make_strategy

    strategy = make_strategy("mirrored", devices.virtual_cpus(replicas))
    out = []
    for problem, shape in problems:
        model, population = _problem(problem, shape, "xla")
        cmp = replica_comparison(strategy, model, population, generations, repeats=repeats)
        work = shape[0] * shape[1] * generations
        out.append({"comparison": cmp.to_dict(), "gene_generations_per_s": {t.name: work / t.median_s
                                                                           for t in cmp.timings}})
    return {"replicas": replicas, "results": out}


def bench_replicas(argv: list[str]) -> int:
    """OneMax and Rastrigin throughput per replica count (MirroredStrategy over virtual CPUs, one
    fresh process per count), global selection and islands against one device without a strategy."""
    from pathlib import Path

    from course_lib import bench, devices

    parser = argparse.ArgumentParser(prog="course bench ga-replicas", description=bench_replicas.__doc__)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4], metavar="N",
                        help="replica counts (one virtual CPU each)")
    parser.add_argument("--quick", action="store_true", help="small populations, few generations")
    parser.add_argument("--generations", type=int, default=None, help="generations per timed run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default="build/bench/ga_replicas.json", help="where to write the results")
    args = parser.parse_args(argv)
    if any(r < 1 for r in args.replicas):
        parser.error("--replicas takes whole numbers >= 1")
    generations = args.generations or (10 if args.quick else 30)
    problems = ([("onemax", (512, 256)), ("rastrigin", (512, 100))] if args.quick
                else [("onemax", (4096, 1024)), ("rastrigin", (4096, 100))])
    for r in args.replicas:
        for _, (n, _) in problems:
            shard_size(n, r)
    print(f"GA throughput per replica count on {bench.machine_summary()}")
    runs = []
    for r in args.replicas:
        source = textwrap.dedent(f"""
            import json
            from course_lib.evo import distributed
            out = distributed._measure_in_fresh_process({r}, {problems!r}, {generations}, {args.repeats})
            print("RESULT " + json.dumps(out, default=str))
        """)
        proc = devices.run_python(source, env={"TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=1800)
        runs.append(json.loads([s for s in proc.stdout.splitlines() if s.startswith("RESULT ")][-1][7:]))
    print(f"{'problem':10}{'replicas':>9}  {'variant':14}{'gene-generations/s':>20}{'vs one device':>15}")
    for run in runs:
        for res in run["results"]:
            cmp = res["comparison"]
            for v in cmp["variants"]:
                rate = res["gene_generations_per_s"][v["name"]]
                print(f"{cmp['params']['problem']:10}{run['replicas']:>9}  {v['name']:14}{rate:>20.3e}"
                      f"{v['speedup']:>14.2f}x")
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": bench.machine(), "generations": generations, "runs": runs},
                               indent=2, default=str) + "\n")
    print(f"wrote {args.json}")
    return 0
