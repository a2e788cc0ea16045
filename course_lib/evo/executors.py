"""How generations run: one generation's pure tensor code, and the one-device executor.

An executor is how ``engine.evolve``'s loop runs generations: the ``Executor`` protocol
(``describe``, ``rows``, ``check``, ``mode``, ``target``, ``program``), whose ``program`` compiles a
``Program`` for one prepared run (``start``, ``restore``, ``run``, ``best_fitness``,
``arrays``). To add an executor, implement both; ``tests/test_evo_executors.py`` checks
that the engine's own do. ``OneDevice``
is here; ``sharding.Replicated`` shards the population over a ``tf.distribute``
strategy with a distribution policy. Both build on ``Generation``, so variation, fitness,
selection, best-so-far tracking and random keys are written once.

A mode is how a function is compiled (``COMPILERS``): to add one, add its wrapper there
and its name to ``MODES``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Protocol, runtime_checkable

import numpy as np
import tensorflow as tf

from course_lib.evo import bitpack, distinct, fastmath, fusion, knobs, pareto, rng
from course_lib.evo import state as state_lib
from course_lib.evo.rng import Rows
from course_lib.evo.selection import Pool, score
from course_lib.evo.state import State

# autograph=False: the code is explicit tf.while_loop, with no Python control flow to convert
COMPILERS = {"eager": lambda f: f, "graph": lambda f: tf.function(f, autograph=False), "xla": fusion.xla_function}
MODES = (*COMPILERS, "auto")


def compiler(model, mode: str, target: str):
    """How to compile a function of ``model``'s programs: ``COMPILERS[mode]``, drawing with its generator,
    shaped for ``target`` ("cpu" or "gpu", see ``fusion``).

    Each program's function is its own ``functools.partial``: TensorFlow counts traces per Python
    function (its code object), so programs of several models, each traced once, would otherwise
    add up to its "triggered tf.function retracing ... creating @tf.function repeatedly in a loop"
    warning in any sweep; a partial is counted by itself, so the warning still fires for one
    program that really retraces.
    """
    def wrap(f):
        return COMPILERS[mode](functools.partial(fusion.targeting(target, rng.with_generator(model.generator, f))))

    return wrap

STATS = ("best", "mean", "std")
NO_PATIENCE = np.iinfo(np.int32).max
FITNESS_DRAW = 2**32 - 1  # folded into a generation's key for a per_generation fitness (ops fold 1.., selection 0)
REDRAW = 2**32 - 2  # folded into it for the children drawn again (``Generation.vary``)
REDRAWS = 16  # at most this many more draws of the children that copy a pool row


def map_rows(fn, total: int, batch: int | None, dtype: tf.DType, shape: tuple) -> tf.Tensor:
    """``fn(rows)`` over row batches of ``batch``, stitched into all ``total`` rows.

    The last batch is shifted back to end at ``total`` (recomputing a few rows: their
    random numbers depend only on the global row, so the values are the same) so that
    every batch has the same static shape, as XLA wants.
    """
    if batch is None or batch >= total:
        return fn(Rows.all(total))
    count = -(-total // batch)

    def body(i, out):
        start = tf.minimum(i * batch, total - batch)
        return i + 1, out.write(i, fn(Rows(start, batch, total)))

    out = tf.TensorArray(dtype, size=count, element_shape=(batch, *shape))
    _, out = tf.while_loop(lambda i, _: i < count, body, (tf.constant(0), out))
    stacked = tf.reshape(out.stack(), (count * batch, *shape))
    head = (count - 1) * batch
    return tf.concat([stacked[:head], stacked[head + count * batch - total:]], axis=0)


class Generation:
    """One generation's tensor code for ``rows`` individuals held by one device.

    Pure in its arguments: random numbers come from the seed folded with the generation
    (and, on replicas other than 0, with the replica), which is what makes chunked,
    batched, resumed and sharded runs reproducible, and a one-replica run equal to a
    plain one.
    """

    def __init__(self, model, packed: bool, rows: int, batch: int | None, seed_input: bool = True):
        self.model, self.packed, self.rows, self.batch = model, packed, rows, batch
        # seed_input=False: the seed's key is a constant of the program (replicas on other devices cannot
        # read the model's variable under XLA), so the program's key must name the seed
        self.fixed_root = None if seed_input else rng.key(model.seed)
        if seed_input:  # the knobs are read from variables too, filled now for code that traces this directly
            model.fill_knobs()
        self.spec = model.input.spec
        self.sign = 1.0 if model.fitness.maximize else -1.0
        # what selection and migration rank by: per objective for a MultiObjective fitness
        self.signs = model.fitness.signs if model.fitness.width else self.sign
        self.factor = pool_size(model, 1)  # pool rows per parent

    @property
    def root(self) -> tf.Tensor:
        """The seed's root key, read from the model's variable where the program runs, so that another
        seed (``compile`` again) needs no retrace."""
        if self.fixed_root is not None:
            return self.fixed_root
        return tf.bitcast(self.model.seed_key.read_value(), tf.uint32)

    def traced(self) -> None:
        """Count a trace on the model (Python runs a compiled body only while tracing)."""
        if not tf.executing_eagerly():
            self.model.trace_count += 1

    def key(self, generation, replica=None) -> tf.Tensor:
        """The generation's key; replica r > 0 folds r in, so replica 0 draws as a plain run does
        and replica r's stream does not depend on how many replicas there are."""
        k = rng.fold_in(self.root, generation)
        if replica is None:
            return k
        return tf.where(tf.equal(replica, 0), k, rng.fold_in(k, replica))

    def draw(self, generation) -> tf.Tensor | None:
        """The key a ``per_generation`` fitness draws its conditions from: the generation's, with no
        replica folded in, so every batch and replica scores on the same draw (None for other fitnesses)."""
        return rng.fold_in(self.key(generation), FITNESS_DRAW) if self.model.fitness.per_generation else None

    def evaluate(self, pop: tf.Tensor, draw: tf.Tensor | None = None) -> tf.Tensor:
        fit = self.model.fitness
        if draw is not None:
            def fn(rows):
                return tf.cast(fit.evaluate_generation(self.unpack(rows.take(pop)), draw), tf.float32)
        elif self.packed:
            def fn(rows):
                return fit.evaluate_packed(rows.take(pop), self.spec)
        else:
            def fn(rows):
                return fit(rows.take(pop))
        width = self.model.fitness.width
        return map_rows(fn, pop.shape[0], self.batch, tf.float32, () if width is None else (width,))

    def apply(self, op, inputs: list, key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """``op`` on these rows of its inputs, in the stored form (packed words or genes); its knobs are
        read from their variables where the seed is (``evo.knobs``), constants where it is too."""
        with knobs.as_inputs(self.fixed_root is None):
            return op.apply_packed(inputs, key, rows, self.spec) if self.packed else op.apply(inputs, key, rows)

    def vary(self, pop: tf.Tensor, key: tf.Tensor) -> tf.Tensor:
        """The children of ``pop``. When the selection wants them distinct (``Selection.distinct_children``),
        a child that copies a parent or an earlier child is drawn again (new mates, new numbers), up to
        ``REDRAWS`` times while any copy is left, before it is scored: no evaluation is spent on a copy."""
        children = self.variation(pop, key)
        if not self.model.selection.distinct_children:
            return children
        n, again_key = pop.shape[0], rng.fold_in(key, REDRAW)

        def copies(children):
            return distinct.repeated(tf.concat([pop, children], 0))[n:]

        def body(i, children, copied):
            again = self.variation(pop, rng.fold_in(again_key, i))
            children = tf.where(tf.reshape(copied, (-1,) + (1,) * (children.shape.rank - 1)), again, children)
            return i + 1, children, copies(children)

        _, children, _ = tf.while_loop(lambda i, _, copied: (i < REDRAWS) & tf.reduce_any(copied), body,
                                       (tf.constant(0), children, copies(children)))
        return children

    def variation(self, pop: tf.Tensor, key: tf.Tensor) -> tf.Tensor:
        """The model's ops on ``pop`` once: its children (all outputs, one after the other)."""
        values = {id(self.model.input): pop}
        for i, node in enumerate(self.model.nodes):
            def fn(rows, op=node.op, inputs=[values[id(t)] for t in node.inputs], k=rng.fold_in(key, i + 1)):
                return self.apply(op, inputs, k, rows)
            values[id(node.output)] = fusion.materialize(
                map_rows(fn, self.rows, self.batch, pop.dtype, tuple(pop.shape[1:])), key)
        outs = [values[id(o)] for o in self.model.outputs]
        return outs[0] if len(outs) == 1 else tf.concat(outs, axis=0)

    def pool(self, pop, fit, key, generation) -> tuple[tf.Tensor, tf.Tensor]:
        """The children of ``pop`` and their fitness (after the parents, for mu + lambda); a
        ``per_generation`` fitness scores the parents again on the generation's draw."""
        children = self.vary(pop, key)
        draw = self.draw(generation)
        child_fit = self.evaluate(children, draw)
        if draw is not None:
            fit = self.evaluate(pop, draw)
        return self.join(pop, fit, children, child_fit)

    def join(self, pop, fit, children, child_fit) -> tuple[tf.Tensor, tf.Tensor]:
        """The pool selection chooses from: the children, after the parents for mu + lambda."""
        if self.model.selection.pool == "both":
            return tf.concat([pop, children], 0), tf.concat([fit, child_fit], 0)
        return children, child_fit

    def select(self, pool, pool_fit, key, carried, blocks: int = 1) -> tuple[tf.Tensor, Any]:
        """(pool rows of the next population of ``blocks x rows`` individuals, the selection's next
        state after ``carried``); the pool is ``blocks`` pools of this shape one after the other (one
        per replica). Its genomes reach a selection that reads them (``Selection.reads_genomes``)."""
        selection = self.model.selection
        parents = np.tile(np.arange(self.rows * self.factor) < self.rows, blocks) if selection.pool == "both" else None
        genomes = self.unpack(pool) if selection.reads_genomes else None
        return selection.survivors(Pool(pool_fit, self.signs, rng.fold_in(key, 0), parents, genomes),
                                   self.rows * blocks, carried)

    def initial_selection(self) -> Any:
        """The selection's state before the first generation (``Selection.initial_state``), as tensors."""
        return tf.nest.map_structure(tf.constant, self.model.selection.initial_state(self.model.fitness.objectives))

    def start(self, genes: tf.Tensor) -> State:
        """The first state of stored genes: scored, best so far = the best of them."""
        return self.scored(genes, self.evaluate(genes, self.draw(tf.constant(0))))

    def scored(self, genes: tf.Tensor, fit: tf.Tensor) -> State:
        """The first state of stored genes whose fitness is ``fit``."""
        j, value, _ = self.summary(fit)
        best = tf.gather(genes, j)
        return State(genes, fit, best, self.judge(best, value), tf.constant(0), self.initial_selection())

    def judge(self, best: tf.Tensor, value: tf.Tensor) -> tf.Tensor:
        """The value a generation's best competes with the best so far by: its fitness, or for a
        ``per_generation`` fitness its ``validate`` score on fixed conditions."""
        fit = self.model.fitness
        return tf.cast(fit.validate(self.unpack(best[None]))[0], tf.float32) if fit.per_generation else value

    def summary(self, values) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(the best row, the value best-so-far tracking compares, (best, mean, std)) of ``values``.

        A ``MultiObjective`` fitness reports ``pareto.summary``: for several objectives the
        hypervolume, the share of rows on the feasible front and its std.
        """
        fit = self.model.fitness
        if fit.width is not None:
            return pareto.summary(values, fit.signs, fit.tracked)
        # gather, not x[j]: XLA would treat a slice's begin as a compile-time constant
        j = tf.argmax(score(values, self.sign), output_type=tf.int32)
        best = tf.gather(values, j)
        return j, best, tf.stack([best, *fastmath.mean_and_std(values)])

    def advance(self, state: State, pop, fit, best_of=None) -> tuple[State, tf.Tensor]:
        """The state after selection made (pop, fit), and the generation's (best, mean, std); the
        selection's carried state is ``state``'s.

        ``best_of`` = (pool, the whole population's fitness, its rows in the pool) when
        ``pop`` is only this replica's share of the population.
        """
        genomes, values, rows = best_of or (pop, fit, None)
        j, gen_best, row = self.summary(values)
        best = tf.gather(genomes, j if rows is None else tf.gather(rows, j))
        judged = self.judge(best, gen_best)
        better = score(judged, self.sign) > score(state.best_fitness, self.sign)
        state = state._replace(population=pop, fitness=fit, best=tf.where(better, best, state.best),
                               best_fitness=tf.where(better, judged, state.best_fitness),
                               stale=tf.where(better, 0, state.stale + 1))
        return state, self.measured(row, pop, fit)

    def measured(self, row: tf.Tensor, pop: tf.Tensor, fit: tf.Tensor) -> tf.Tensor:
        """``row`` followed by the model's metrics (``compile(metrics=)``) of the population and its fitness."""
        if not self.model.metrics:
            return row
        genes = self.unpack(pop)
        values = [tf.reshape(tf.cast(fn(genes, fit), tf.float32), ()) for fn in self.model.metrics.values()]
        return tf.concat([row, tf.stack(values)], 0)

    def breed(self, state: State, generation, replica=None) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, State]:
        """One generation's pool, its fitness, the pool rows selection keeps, and ``state`` with the
        selection's next carried state."""
        key = self.key(generation, replica)
        pool, pool_fit = self.pool(state.population, state.fitness, key, generation)
        idx, carried = self.select(pool, pool_fit, key, state.selection)
        return pool, pool_fit, idx, state._replace(selection=carried)

    def step(self, state: State, generation, replica=None) -> tuple[State, tf.Tensor]:
        """One whole generation on this device's rows."""
        pool, pool_fit, idx, state = self.breed(state, generation, replica)
        return self.advance(state, tf.gather(pool, idx), tf.gather(pool_fit, idx))

    def settle(self, state: State, children, child_fit, generation) -> tuple[State, tf.Tensor]:
        """The second half of ``step`` for children scored elsewhere (``evo.ask_tell``): pool, selection
        and best-so-far tracking, with the generation's key."""
        pool, pool_fit = self.join(state.population, state.fitness, children, child_fit)
        idx, carried = self.select(pool, pool_fit, self.key(generation), state.selection)
        return self.advance(state._replace(selection=carried), tf.gather(pool, idx), tf.gather(pool_fit, idx))

    def loop(self, state: State, generation, more, record, hist, replica=None) -> tuple:
        """Generations generation + 1, ... in one ``tf.while_loop`` while ``more(i, state)``; after each,
        ``hist = record(hist, i, state, (best, mean, std))``. Returns (generations run, state, hist).
        ``more`` may read the state's fitness, best and stale fields, not its population: bit-packed,
        that is the pool (below).

        Bit-packed, the loop carries each generation's pool and the rows selection kept, not the
        selected population: gathering those rows where the next generation first reads them lets XLA
        fuse the gather into that op's pass over the words, instead of writing the population out and
        reading it back (the first pass gathers rows 0..n-1 of the population tiled to the pool's
        size). Unpacked genes are gathered right after selection: a gene per element is as cheap to
        gather once as to gather inside the next op, so fusing the gather buys nothing there.
        """
        n, lazy = state.population.shape[0], self.packed

        def body(i, state, kept, hist):
            if lazy:
                state = state._replace(population=tf.gather(state.population, kept))
            pool, pool_fit, idx, state = self.breed(state, generation + i + 1, replica)
            state, row = self.advance(state, tf.gather(pool, idx), tf.gather(pool_fit, idx))
            return i + 1, state._replace(population=pool) if lazy else state, idx, record(hist, i, state, row)

        start = tf.tile(state.population, [self.factor] + [1] * (len(state.population.shape) - 1)) if lazy else \
            state.population
        i, state, kept, hist = tf.while_loop(lambda i, s, k, h: more(i, s), body,
                                             (tf.constant(0), state._replace(population=start), tf.range(n), hist))
        return i, state._replace(population=tf.gather(state.population, kept)) if lazy else state, hist

    def finished(self, best_fitness, stale, target, patience):
        return (self.sign * best_fitness >= self.sign * target) | (stale >= patience)

    def unpack(self, genes: tf.Tensor) -> tf.Tensor:
        return bitpack.unpack(genes, self.spec.shape, self.spec.dtype) if self.packed else genes

    def stored(self, genes) -> tf.Tensor:
        genes = tf.cast(genes, self.spec.dtype)
        return bitpack.pack(genes) if self.packed else genes


def pool_size(model, n: int) -> int:
    """Rows selection chooses from for ``n`` parents: every output's children, and the parents for mu + lambda."""
    return n * (len(model.outputs) + (1 if model.selection.pool == "both" else 0))


def no_limits(sign: float) -> tuple[tf.Tensor, tf.Tensor]:
    """(target, patience) that never stop a run."""
    return tf.constant(sign * math.inf, tf.float32), tf.constant(NO_PATIENCE, tf.int32)


@runtime_checkable
class Program(Protocol):
    """The compiled functions of one prepared run, as ``engine.evolve``'s loop drives them.

    A state is whatever the program hands from one call to the next (``State`` on one device); the
    loop never looks inside it. ``mode`` and ``packed`` say how the program was compiled.
    """

    mode: str
    packed: bool

    def start(self, genes: tf.Tensor) -> Any:
        """The first state of a population of genes (as the model's Input holds them): stored, scored,
        best so far = the best of them."""

    def restore(self, genes: tf.Tensor, saved: dict) -> Any:
        """The state of a resumed run: ``start(genes)`` with the fields ``state.CARRIED`` (the best so far,
        the generations without improvement, the selection's state) read from a checkpoint's arrays
        ``saved`` by ``state.read``."""

    def run(self, state, generation: int, count: int, target, patience) -> tuple[Any, np.ndarray, bool]:
        """Up to ``count`` generations after ``generation``; (new state, one (best, mean, std) row per
        generation run, whether ``target`` or ``patience`` stopped it)."""

    def best_fitness(self, state) -> float:
        """The best fitness so far, in the problem's units."""

    def arrays(self, state) -> dict:
        """NumPy arrays of the state by ``state.arrays``' names, genes unpacked (a checkpoint's contents
        and the ``Result``'s); a replicated program adds each replica's ``state.per_replica``."""


@runtime_checkable
class Executor(Protocol):
    """How generations run: on one device (``OneDevice``) or sharded (``sharding.Replicated``).

    ``engine.prepare`` asks it how many rows one device holds, to check the model (e.g. a selection's
    pool size), which mode it runs a compiled mode in, and how it describes itself (part of a
    checkpoint's identity); ``engine.evolve`` then drives the ``Program`` it compiles.
    """

    replicas: int

    def describe(self) -> str:
        """What a checkpoint records of this executor (a resumed run must match it)."""

    def rows(self, n: int) -> int:
        """The rows one device holds of a population of ``n``; a clear error if ``n`` does not fit."""

    def check(self, model, n: int) -> None:
        """A clear error if ``model`` cannot evolve ``n`` individuals this way."""

    def mode(self, model, mode: str) -> str:
        """The mode this executor runs ``model`` in, when its compiled (or auto-chosen) mode is ``mode``."""

    def target(self, model) -> str:
        """The target ("cpu" or "gpu") its programs are traced for: ``model.target``, or for "auto" from
        the devices it places them on."""

    def program(self, model, mode: str, packed: bool, n: int, batch: int | None, chunk: int) -> Program:
        """The compiled program of one prepared run (built once per model compile and key)."""


class OneDevice:
    """Every generation on one device: ``chunk`` generations per compiled ``tf.while_loop``."""

    replicas = 1

    def describe(self) -> str:
        return "one device"

    def rows(self, n: int) -> int:
        return n

    def check(self, model, n: int) -> None:
        model.selection.check(pool_size(model, n), n)

    def mode(self, model, mode: str) -> str:
        """The mode this executor runs ``model`` in, when its compiled (or auto-chosen) mode is ``mode``."""
        return mode

    def target(self, model) -> str:
        """``model.target``, or for "auto" that of the device ops run on here (the default device, or the one
        a surrounding ``tf.device`` names)."""
        return fusion.resolve_target(model.target, [fusion.placed_device()])

    def program(self, model, mode: str, packed: bool, n: int, batch: int | None, chunk: int):
        target = self.target(model)
        return model.program(("one device", mode, target, packed, n, batch, chunk),
                             lambda: OneDeviceProgram(model, mode, packed, n, batch, chunk, target))


class OneDeviceProgram:
    """The compiled functions of one (model, mode, target, packing, population size, batch, chunk).

    ``start`` packs and scores, ``run`` evolves up to ``chunk`` generations in one
    ``tf.while_loop`` with history in a preallocated tensor, and (bit-packed) unpacks the
    result with ``finish``, so the end of a run needs no further call. Counts and limits
    are tensors, so running a different number of generations never retraces.
    """

    def __init__(self, model, mode, packed, n, batch, chunk, target):
        self.mode, self.packed, self.chunk, self.target = mode, packed, chunk, target
        self.gen = Generation(model, packed, n, batch)
        wrap = compiler(model, mode, target)
        self._start, self._run = wrap(self._start_fn), wrap(self._run_fn)
        # (state, its unpacked population and best) from the last run
        self._unpacked: tuple[Any, tuple] = (None, ())

    def _start_fn(self, genes):
        self.gen.traced()
        return self.gen.start(bitpack.pack(genes) if self.packed else genes)

    def _run_fn(self, state, generation, count, target, patience):
        self.gen.traced()

        i, state, hist = self.gen.loop(
            state, generation, lambda i, s: (i < count) & ~self.gen.finished(s.best_fitness, s.stale, target, patience),
            lambda hist, i, state, row: tf.tensor_scatter_nd_update(hist, [[i]], row[None]),
            tf.zeros((self.chunk, len(STATS) + len(self.gen.model.metrics))))
        unpacked = self._finish_fn(state.population, state.best) if self.packed else ()
        return state, i, hist, self.gen.finished(state.best_fitness, state.stale, target, patience), unpacked

    def _finish_fn(self, pop, best):
        self.gen.traced()
        return self.gen.unpack(pop), self.gen.unpack(best[None])[0]

    # -- what the engine's loop calls ---------------------------------------------------------
    def start(self, genes: tf.Tensor) -> State:
        return self._start(genes)

    def restore(self, genes: tf.Tensor, saved: dict) -> State:
        state = self._start(genes)
        carried = state_lib.read(saved, state._replace(population=genes, best=genes[0]))
        return state._replace(**{**carried, "best": self.gen.stored(carried["best"][None])[0]})

    def run(self, state, generation: int, count: int, target, patience) -> tuple[State, np.ndarray, bool]:
        """Up to ``count`` generations; (state, their (best, mean, std) rows, whether a limit stopped it)."""
        state, done, hist, stopped, unpacked = self._run(state, tf.constant(generation), tf.constant(count), target,
                                                         patience)
        self._unpacked = (state, unpacked)
        return state, hist.numpy()[:int(done)], bool(stopped)

    def best_fitness(self, state) -> float:
        return float(state.best_fitness)

    def arrays(self, state) -> dict:
        """The state's fields as NumPy (``state.arrays``), the population and best unpacked."""
        if not self.packed:
            pop, best = state.population, state.best
        elif self._unpacked[0] is state:  # the last chunk unpacked it already: no further call
            pop, best = self._unpacked[1]
        else:  # a state no chunk ended with (a run of 0 generations): run 0 generations to unpack it
            pop, best = self._run(state, tf.constant(0), tf.constant(0), *no_limits(self.gen.sign))[-1]
        return state_lib.arrays(state._replace(population=pop, best=best))
