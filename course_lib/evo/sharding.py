"""Evolution on many devices and machines: ``model.evolve(population, strategy=...)``.

``Replicated`` is the engine's executor for a ``tf.distribute.Strategy`` (MirroredStrategy
over GPUs or virtual CPUs, MultiWorkerMirroredStrategy over processes or machines,
OneDeviceStrategy, TPUStrategy): the population is split into equal shards, one per
replica, and each replica makes and scores the children of its shard with the engine's
``executors.Generation``. How the replicas then form the next population is a ``Policy``
(a new way of distributing is one subclass):

* ``Global``: every generation the replicas share their children and fitness; every
  replica runs the same selection (same key) over the whole pool and keeps the winners
  for its own slots. The price of one well-mixed population: all children cross devices.
* ``Islands``: each replica evolves its shard alone; every ``migration_interval``
  generations (counted from the start) its ``migrants`` best replace the worst of the
  next replica in a ring: ``replicas x migrants`` genomes cross devices.

Everything the one-device run does works the same here (the loop is ``engine.evolve``):
callbacks' ``every``, early stopping at the exact generation (islands re-run the last
chunk up to it: they do not talk between migrations), checkpoint and resume. Replica 0
draws the random numbers of a plain run and replica r > 0 folds r into the generation's
key, so a one-replica run equals the plain run bit for bit.

Sharing between replicas: where all replicas live in this process (MirroredStrategy,
OneDeviceStrategy) the shards are concatenated in the cross-replica function and handed
to every replica, with no collective ops, so strategies of different sizes can follow
each other in one process (TensorFlow's collectives key their groups per process and
refuse a group of 4 where one of 2 ran). Across processes (MultiWorkerMirroredStrategy)
the replicas ``all_gather``. The loops are ``tf.function``s around ``strategy.run``, a
replica's work is compiled in the run's mode, the replica id is a tensor: no Python runs
per replica or per generation, which is what TPUStrategy asks.
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from course_lib.evo import bitpack, fusion
from course_lib.evo import state as state_lib
from course_lib.evo.executors import STATS, Generation, compiler, pool_size
from course_lib.evo.selection import score
from course_lib.evo.validation import short_device_name, whole

DISTRIBUTIONS = ("global", "islands")
# per replica and generation: (best, mean, std) of its shard, then its best so far and its stale count
_ISLAND_COLUMNS = len(STATS) + 2


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
    have = {short_device_name(d.name) for d in tf.config.list_logical_devices()}
    wanted = [short_device_name(d) for d in strategy.extended.worker_devices]
    missing = [d for d in wanted if d not in have]
    if missing:
        raise ValueError(f"the strategy's devices {', '.join(missing)} are not available here (logical devices: "
                         f"{', '.join(sorted(have))}); build the strategy from tf.config.list_logical_devices() "
                         "or split the CPU with course_lib.devices.virtual_cpus(n) before TensorFlow starts")
    return wanted


def _replica_id() -> tf.Tensor:
    return tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.int32)


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


def best_of_replicas(best_fitness: np.ndarray, stale: np.ndarray, sign: float) -> tuple[int, int]:
    """(replica holding the best so far, generations since the whole run's best improved).

    The run's best is the best of the replicas' bests; it was first reached by the replica
    that has held that value longest, so its stale count is the largest among them.
    """
    s = score(np.asarray(best_fitness, np.float32), sign).numpy()
    r = int(np.argmax(s))
    return r, int(np.max(np.asarray(stale)[s == s[r]]))


# -- policies: how replicas form the next population ---------------------------------------------------


class Policy:
    """A way of distributing: subclass it for a new one. ``check`` refuses what cannot run; ``start``
    (traced) may align the replicas' first states; ``loop`` (traced in the cross-replica context,
    called as ``prog.loop``) runs generations with ``strategy.run``; ``run`` (host side) evolves up to
    ``count`` generations, stopping at the exact generation a limit is reached, and returns (state,
    (best, mean, std) rows of the whole population, stopped)."""

    name = ""

    def key(self) -> tuple:
        return (self.name,)

    def describe(self) -> str:
        return self.name

    def check(self, model, shard: int, replicas: int) -> None:
        raise NotImplementedError

    def start(self, prog: "ReplicatedProgram", state):
        return state

    def loop(self, prog: "ReplicatedProgram", state, generation, count, target, patience):
        raise NotImplementedError

    def run(self, prog: "ReplicatedProgram", state, generation: int, count: int, target, patience):
        raise NotImplementedError


class Global(Policy):
    """Selection over the whole population every generation: the one-device algorithm."""

    name = "global"

    def check(self, model, shard, replicas):
        model.selection.check(pool_size(model, shard) * replicas, shard * replicas)

    def start(self, prog, state):
        """Every replica starts from the best of the whole population, so their bests agree."""
        def align(s, bests):
            genomes, values = prog.gathered(bests)
            j = tf.argmax(score(values, prog.gen.sign), output_type=tf.int32)
            return s._replace(best=tf.gather(genomes, j), best_fitness=tf.gather(values, j))

        bests = prog.share(prog.strategy.run(lambda s: (s.best[None], s.best_fitness[None]), args=(state,)))
        return prog.strategy.run(align, args=(state, bests))

    def loop(self, prog, state, generation, count, target, patience):
        """Traced: generations in a while_loop, each a strategy.run of the children, one of selection."""
        prog.gen.traced()
        strategy, work = prog.strategy, prog.work

        def body(i, state, hist):
            g = generation + i + 1
            pools = strategy.run(lambda s: work.children(s.population, s.fitness, g, _replica_id()), args=(state,))

            def select(s, pools):
                pool, pool_fit = prog.gathered(pools)
                return work.select(s, pool, pool_fit, g, _replica_id())

            state, row = strategy.run(select, args=(state, prog.share(pools)))
            return i + 1, state, tf.tensor_scatter_nd_update(hist, [[i]], prog.first(row)[None])

        def going(i, state, hist):  # every replica holds the same best so far
            return (i < count) & ~prog.gen.finished(prog.first(state.best_fitness), prog.first(state.stale),
                                                    target, patience)

        i, state, hist = tf.while_loop(going, body, (tf.constant(0), state, tf.zeros((prog.chunk, len(STATS)))))
        return state, i, hist, ~going(tf.constant(0), state, hist)

    def run(self, prog, state, generation, count, target, patience):
        state, done, hist, stopped = prog.loop(state, tf.constant(generation), tf.constant(count), target, patience)
        return state, hist.numpy()[:int(done)], bool(stopped)


class Islands(Policy):
    """One population per replica; every ``interval`` generations ``migrants`` move round a ring."""

    name = "islands"

    def __init__(self, interval: int, migrants: int):
        self.interval, self.migrants = interval, migrants

    def key(self):
        return (self.name, self.interval, self.migrants)

    def describe(self):
        return f"islands, migration every {self.interval} generations, {self.migrants} migrants"

    def check(self, model, shard, replicas):
        model.selection.check(pool_size(model, shard), shard)
        if self.migrants >= shard:
            raise ValueError(f"migrants={self.migrants} must be fewer than the {shard} individuals of a "
                             "replica's shard")

    def loop(self, prog, state, generation, count, target, patience):
        """Traced: segments up to the next migration, each one compiled call per replica, then migration."""
        prog.gen.traced()
        strategy, work, replicas = prog.strategy, prog.work, prog.replicas

        def body(i, state, hist):
            g = generation + i
            length = tf.minimum(self.interval - g % self.interval, count - i)
            state, hist = strategy.run(lambda s, h: work.islands(s, h, i, g, length, _replica_id()),
                                       args=(state, hist))
            if replicas > 1:
                migrate = tf.equal((g + length) % self.interval, 0)
                leaving = prog.share(strategy.run(lambda s: self._emigrants(s, prog.gen.signs), args=(state,)))
                state = strategy.run(lambda s, arrivals: self._immigrate(prog, s, prog.gathered(arrivals), migrate),
                                     args=(state, leaving))
            return i + length, state, hist

        hist = strategy.run(lambda: tf.zeros((prog.chunk, _ISLAND_COLUMNS)))
        _, state, hist = tf.while_loop(lambda i, s, h: i < count, body, (tf.constant(0), state, hist))
        return state, hist

    def _emigrants(self, s, sign):
        top = tf.math.top_k(score(s.fitness, sign), k=self.migrants).indices
        return tf.gather(s.population, top), tf.gather(s.fitness, top)

    def _immigrate(self, prog, s, arrivals, migrate):
        """The previous replica's emigrants (ring) replace this replica's worst individuals."""
        genomes, values = arrivals
        source = (_replica_id() + prog.replicas - 1) % prog.replicas
        incoming = tf.gather(genomes, source * self.migrants + tf.range(self.migrants))
        incoming_fit = tf.gather(values, source * self.migrants + tf.range(self.migrants))
        worst = tf.math.top_k(-score(s.fitness, prog.gen.signs), k=self.migrants).indices[:, None]
        pop = tf.tensor_scatter_nd_update(s.population, worst, incoming)
        fit = tf.tensor_scatter_nd_update(s.fitness, worst, incoming_fit)
        return s._replace(population=tf.where(migrate, pop, s.population), fitness=tf.where(migrate, fit, s.fitness))

    def run(self, prog, state, generation, count, target, patience):
        """The islands run alone between migrations, so a limit is checked on their rows after the
        chunk; when one was reached inside it, the chunk runs again from its start up to there."""
        g, start = tf.constant(generation), state
        state, hist = prog.loop(state, g, tf.constant(count), target, patience)
        (rows,) = prog.fetch(hist)
        rows = rows[:, :count]
        stop = self._stop(rows, prog.gen.sign, float(target), int(patience))
        if stop is not None and stop < count:
            state, _ = prog.loop(start, g, tf.constant(stop), target, patience)
            rows = rows[:, :stop]
        return state, _combine(rows[..., :len(STATS)], prog.gen.sign), stop is not None

    @staticmethod
    def _stop(rows, sign, target, patience) -> int | None:
        """The first generation count (1-based) after which a limit holds for the whole run
        (``best_of_replicas`` for every generation of the chunk at once)."""
        s = score(rows[..., 3], sign).numpy()  # (replicas, generations)
        top = s.max(axis=0)
        stale = np.where(s == top, rows[..., 4], -1).max(axis=0)
        done = np.flatnonzero((top >= sign * target) | (stale >= patience))
        return int(done[0]) + 1 if done.size else None


def _combine(rows: np.ndarray, sign: float) -> np.ndarray:
    """Per-replica (best, mean, std) rows of equal shards -> the whole population's rows."""
    h = rows.astype(np.float64)
    if h.shape[0] == 1:
        return h[0]
    best = h[..., 0][np.argmax(score(h[..., 0], sign).numpy(), axis=0), np.arange(h.shape[1])]
    mean = h[..., 1].mean(axis=0)
    std = np.sqrt(np.maximum((h[..., 2] ** 2).mean(axis=0) + ((h[..., 1] - mean) ** 2).mean(axis=0), 0.0))
    return np.stack([best, mean, std], axis=1)


def policy(distribution: str, migration_interval: int = 10, migrants: int = 1) -> Policy:
    """The policy ``evolve(distribution=...)`` names, with its options checked."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {distribution!r}; choose 'global' (selection over the whole "
                         "population) or 'islands' (one population per replica, with migration)")
    interval = whole("migration_interval", migration_interval, 1)
    migrants = whole("migrants", migrants, 1)
    return Global() if distribution == "global" else Islands(interval, migrants)


# -- the executor -------------------------------------------------------------------------------------------


class Replicated:
    """The population sharded over ``strategy``'s replicas, the next one formed by ``policy``."""

    def __init__(self, strategy: tf.distribute.Strategy, policy: Policy):
        check_devices(strategy)
        self.strategy, self.policy = strategy, policy
        self.replicas = strategy.num_replicas_in_sync

    def describe(self) -> str:
        return f"{self.replicas} replica(s), {self.policy.describe()}"

    def rows(self, n: int) -> int:
        shard = shard_size(n, self.replicas)
        if shard < 2:
            raise ValueError(f"each of the {self.replicas} replicas would hold {shard} individual; a shard needs at "
                             f"least 2 (use a population of at least {2 * self.replicas})")
        return shard

    def check(self, model, n: int) -> None:
        if model.metrics:
            raise ValueError(f"metrics ({', '.join(model.metrics)}) are recorded on one device and in ask/tell, not "
                             "under strategy=: compile without metrics= for a sharded run")
        self.policy.check(model, n // self.replicas, self.replicas)

    def mode(self, model, mode: str) -> str:
        if model.mode == "eager":
            raise ValueError("evolve(strategy=...) compiles its loop: compile the model with mode='graph', 'xla' "
                             "or 'auto' (eager runs replicas one after the other in Python)")
        return "graph" if mode == "eager" else mode

    def target(self, model) -> str:
        """``model.target``, or for "auto" from the replicas' devices: every replica runs the same program,
        shaped for a GPU when the replicas are GPUs (or TPUs)."""
        return fusion.resolve_target(model.target, self.strategy.extended.worker_devices)

    def program(self, model, mode, packed, n, batch, chunk):
        target = self.target(model)
        # the seed and the knobs are constants of a replicated program (see Generation's seed_input): part of its key
        key = ("replicated", self.strategy, self.policy.key(), mode, target, packed, n, batch, chunk, model.seed)
        return model.program(key, lambda: ReplicatedProgram(model, self.strategy, self.policy, mode, packed, n,
                                                            batch, chunk, target), knobs_constant=True)


def traced_once(f):
    """``f`` traced once for all replicas. A ``tf.function`` keys its traces by the device scope too, so each
    replica's call would trace (and then compile) its own copy; traced with no device scope, its ops carry no
    device and run where each replica's call is placed. Eager mode has no trace to share."""
    if not hasattr(f, "get_concrete_function"):
        return f

    def call(*args):
        with tf.compat.v1.device(None):
            concrete = f.get_concrete_function(*args)
        return concrete(*args)

    return call


class ReplicaWork:
    """A replica's own work for one (model, mode, packing, shard size, batch), compiled in the mode.

    Shared by every strategy and policy with the same shard size (cached in the model), so a
    sweep over them traces these once (``traced_once``) and compiles them once per device.
    """

    def __init__(self, model, mode, packed, shard, batch, target):
        self.gen = Generation(model, packed, shard, batch, seed_input=False)
        wrap = compiler(model, mode, target)
        self.start = wrap(self.gen.start)
        self.children, self.select, self.islands = (traced_once(wrap(f)) for f in (self._children, self._select,
                                                                                    self._islands))

    def _children(self, pop, fit, generation, replica):
        return self.gen.pool(pop, fit, self.gen.key(generation, replica), generation)

    def _select(self, state, pool, pool_fit, generation, replica):
        """The same draw over the whole pool on every replica; this replica keeps its slots. Every
        replica tracks the whole population's best, so their bests stay equal."""
        gen = self.gen
        idx, carried = gen.select(pool, pool_fit, gen.key(generation), state.selection,
                                  blocks=pool.shape[0] // (gen.rows * gen.factor))
        mine = tf.slice(idx, [replica * gen.rows], [gen.rows])
        return gen.advance(state._replace(selection=carried), tf.gather(pool, mine), tf.gather(pool_fit, mine),
                           best_of=(pool, tf.gather(pool_fit, idx), idx))

    def _islands(self, state, hist, offset, generation, count, replica):
        """``count`` generations of one island in one while_loop; rows into ``hist`` from ``offset``."""
        def record(hist, i, state, row):
            row = tf.concat([row, tf.stack([state.best_fitness, tf.cast(state.stale, tf.float32)])], 0)
            return tf.tensor_scatter_nd_update(hist, [[offset + i]], row[None])

        return self.gen.loop(state, generation, lambda i, s: i < count, record, hist, replica)[1:]


class ReplicatedProgram:
    """The compiled loops of one (strategy, policy, mode, target, packing, population size, batch, chunk)."""

    def __init__(self, model, strategy, policy, mode, packed, n, batch, chunk, target):
        self.strategy, self.policy = strategy, policy
        self.mode, self.packed, self.chunk, self.target = mode, packed, chunk, target
        self.replicas = strategy.num_replicas_in_sync
        self.work = model.program(("replica", mode, target, packed, n // self.replicas, batch, model.seed),
                                  lambda: ReplicaWork(model, mode, packed, n // self.replicas, batch, target),
                                  knobs_constant=True)
        self.gen = self.work.gen
        # all replicas in this process: share by concatenating, no collective ops
        self.local = len(strategy.extended.worker_devices) == self.replicas
        # partials: TensorFlow's retracing warning counts traces of a method's code across instances
        self._start = tf.function(functools.partial(self._start_fn), autograph=False)
        self.loop = tf.function(functools.partial(policy.loop, self), autograph=False)
        self._collect = tf.function(functools.partial(self._collect_fn), autograph=False)

    # -- sharing between replicas ----------------------------------------------------------------------
    def first(self, value):
        """A value every replica holds alike, read in the cross-replica context."""
        return self.strategy.experimental_local_results(value)[0]

    def share(self, values):
        """Cross-replica context: per-replica values made readable by every replica (see ``gathered``)."""
        if not self.local:
            return values
        return tf.nest.map_structure(lambda v: tf.concat(self.strategy.experimental_local_results(v), 0), values)

    def gathered(self, shared):
        """Replica context: every replica's values of ``share``, concatenated in replica order."""
        if self.local:
            return shared
        ctx = tf.distribute.get_replica_context()

        def gather(v):
            out = _unwire(ctx.all_gather(_wire(v), axis=0), v.dtype)
            return tf.ensure_shape(out, (self.replicas * v.shape[0], *v.shape[1:]))  # MWMS loses the shape

        return tf.nest.map_structure(gather, shared)

    def _collect_fn(self, values):
        dtypes = [self.strategy.experimental_local_results(v)[0].dtype for v in values]
        wired = self.strategy.run(lambda *v: [_wire(x[None]) for x in v], args=tuple(values))
        return [_unwire(self.strategy.gather(v, axis=0), d) for v, d in zip(wired, dtypes)]

    def fetch(self, *values) -> list[np.ndarray]:
        """Every replica's values on this worker, stacked: shape (replicas, *value)."""
        if self.local:
            return [np.stack([t.numpy() for t in self.strategy.experimental_local_results(v)]) for v in values]
        return [v.numpy() for v in self._collect(list(values))]

    # -- what the engine's loop calls ---------------------------------------------------------------------
    def _distribute(self, per_replica):
        """``per_replica(r)`` on replica r (on MultiWorkerMirroredStrategy each worker computes its own)."""
        return self.strategy.experimental_distribute_values_from_function(
            lambda ctx: per_replica(ctx.replica_id_in_sync_group))

    def _start_fn(self, shards):
        self.gen.traced()
        state = self.strategy.run(self.work.start, args=(shards,))
        return self.policy.start(self, state)

    def start(self, genes: tf.Tensor):
        shards = tf.split(self.gen.stored(genes), self.replicas, axis=0)
        return self._start(self._distribute(lambda r: tf.identity(shards[r])))

    def restore(self, genes: tf.Tensor, saved: dict):
        shards = tf.split(self.gen.stored(genes), self.replicas, axis=0)
        state = self.strategy.run(self.work.start, args=(self._distribute(lambda r: tf.identity(shards[r])),))
        like = state_lib.State(genes, None, genes[0], tf.TensorSpec((), tf.float32), tf.TensorSpec((), tf.int32),
                               self.gen.initial_selection())
        carried = [state_lib.read(saved, like, replica=r) for r in range(self.replicas)]
        best = self.gen.stored(tf.stack([c["best"] for c in carried]))

        def fields(r):  # replica r's carried fields, its best stored as the state holds genes
            return {**tf.nest.map_structure(tf.identity, carried[r]), "best": tf.identity(best[r])}

        saved_state = self._distribute(fields)
        return self.strategy.run(lambda s, fields: s._replace(**fields), args=(state, saved_state))

    def run(self, state, generation: int, count: int, target, patience):
        return self.policy.run(self, state, generation, count, target, patience)

    def best_fitness(self, state) -> float:
        best_fitness, stale = self.fetch(state.best_fitness, state.stale)
        return float(best_fitness[best_of_replicas(best_fitness, stale, self.gen.sign)[0]])

    def arrays(self, state) -> dict:
        """The run's fields (``state.arrays``: the whole population, the best replica's best) and each
        replica's carried fields (``state.per_replica``)."""
        stacked = tf.nest.pack_sequence_as(state, self.fetch(*tf.nest.flatten(state)))
        stacked = stacked._replace(best=self.gen.unpack(tf.constant(stacked.best)).numpy())
        r, run_stale = best_of_replicas(stacked.best_fitness, stacked.stale, self.gen.sign)
        pop, fit = stacked.population, stacked.fitness
        whole_run = state_lib.State(self.gen.unpack(tf.constant(pop.reshape(-1, *pop.shape[2:]))).numpy(),
                                    fit.reshape(-1, *fit.shape[2:]), stacked.best[r], stacked.best_fitness[r],
                                    np.int32(run_stale), tf.nest.map_structure(lambda v: v[r], stacked.selection))
        return {**state_lib.arrays(whole_run), **state_lib.per_replica(stacked)}


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
    packed = model.packable() if packed is None else packed
    genome = 4 * bitpack.n_words(spec.size) if packed else spec.size * spec.dtype.size
    row = genome + 4 * (model.fitness.width or 1)  # and its float32 fitness (M + 1 values for M objectives)
    if distribution == "global":
        rows = pool_size(model, population)
        per_generation: float = rows * row
    elif distribution == "islands":
        rows = replicas * migrants if replicas > 1 else 0
        per_generation = rows * row / migration_interval
    else:
        raise ValueError(f"unknown distribution {distribution!r}; choose one of {', '.join(DISTRIBUTIONS)}")
    return {"distribution": distribution, "replicas": replicas, "rows gathered": rows,
            "bytes per row": row, "bytes per generation": per_generation}


