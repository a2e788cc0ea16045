"""The model: a graph of ops compiled with fitness and selection into one generation,
and ``evolve``, which runs many generations per compiled call.

One generation is ``step(population, fitness, generation)``: the graph's ops make
children from the population, the fitness scores them, selection picks the next
population. It is a pure function of its arguments (random numbers come from the
seed folded with the generation), which is what makes chunked, batched and resumed
runs equal to plain ones, and what lets a distribution strategy run it per replica.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from course_lib import bench
from course_lib.evo import callbacks as cb_lib
from course_lib.evo import fitness as fitness_lib
from course_lib.evo import fusion
from course_lib.evo import packed as packing
from course_lib.evo import rng
from course_lib.evo.graph import SymbolicTensor, topological_order
from course_lib.evo.rng import Rows
from course_lib.evo.selection import Selection, score

MODES = ("eager", "graph", "xla", "auto")
STATS = ("best", "mean", "std")
# memory_budget model: a gene's 4 bytes plus the temporaries of ops and fitness on it
BYTES_PER_GENE_IN_FLIGHT = 32
AUTO_PROBE_GENERATIONS = 3
_NO_PATIENCE = np.iinfo(np.int32).max


@dataclass
class Result:
    """What ``evolve`` returns; arrays are NumPy, fitness in the problem's units."""

    best: np.ndarray
    best_fitness: float
    history: dict
    population: np.ndarray
    fitness: np.ndarray
    generations: int
    mode: str
    packed: bool
    stopped_early: bool

    def plot(self, ax=None):
        """Best and mean fitness per generation (``course_lib.plotting.fitness_history``)."""
        from course_lib.plotting import fitness_history

        return fitness_history(self.history, ax=ax)

    def __repr__(self) -> str:
        return (f"Result(generations={self.generations}, best_fitness={self.best_fitness:.6g}, "
                f"population={self.population.shape}, mode={self.mode!r}, packed={self.packed}, "
                f"stopped_early={self.stopped_early})")


class Plan:
    """The compiled order of one generation; prints as text."""

    def __init__(self, header: str, steps: list[str]):
        self.header, self.steps = header, steps

    def __str__(self) -> str:
        return "\n".join([self.header] + [f"  {i + 1}. {s}" for i, s in enumerate(self.steps)])

    __repr__ = __str__


def _map_rows(fn, total: int, batch: int | None, dtype: tf.DType, shape: tuple) -> tf.Tensor:
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


class _Program:
    """The model's functions for one population size, packing, batch size and chunk, in one mode.

    ``start`` packs and scores the initial population, ``run`` evolves up to ``chunk``
    generations in one ``tf.while_loop`` and records history in a preallocated tensor,
    ``finish`` unpacks. Counts (generations, start generation, limits) are tensors, so
    running a different number of generations never retraces.
    """

    def __init__(self, model: "Model", mode: str, packed: bool, n: int, batch: int | None, chunk: int):
        self.model, self.mode, self.packed = model, mode, packed
        self.n, self.batch, self.chunk = n, batch, chunk
        self.spec = model.input.spec
        self.sign = 1.0 if model.fitness.maximize else -1.0
        self.key = rng.key(model.seed)
        # autograph=False: the code is explicit tf.while_loop, with no Python control flow to convert
        wrap = {"eager": lambda f: f, "graph": lambda f: tf.function(f, autograph=False),
                "xla": fusion.xla_function}[mode]
        self.start, self.run, self.finish = wrap(self._start), wrap(self._run), wrap(self._finish)

    def _traced(self) -> None:
        if not tf.executing_eagerly():  # Python runs this body only while tracing
            self.model.trace_count += 1

    # -- one generation ------------------------------------------------------------------
    def evaluate(self, pop: tf.Tensor) -> tf.Tensor:
        fit = self.model.fitness
        if self.packed:
            def fn(rows):
                return fit.evaluate_packed(rows.take(pop), self.spec)
        else:
            def fn(rows):
                return fit(rows.take(pop))
        return _map_rows(fn, pop.shape[0], self.batch, tf.float32, ())

    def vary(self, pop: tf.Tensor, key: tf.Tensor) -> tf.Tensor:
        values = {id(self.model.input): pop}
        for i, node in enumerate(self.model.nodes):
            args = ([values[id(t)] for t in node.inputs], rng.fold_in(key, i + 1))
            if self.packed:
                def fn(rows, op=node.op, args=args):
                    return op.apply_packed(*args, rows, self.spec)
            else:
                def fn(rows, op=node.op, args=args):
                    return op.apply(*args, rows)
            values[id(node.output)] = fusion.materialize(
                _map_rows(fn, self.n, self.batch, pop.dtype, tuple(pop.shape[1:])), key)
        outs = [values[id(o)] for o in self.model.outputs]
        return outs[0] if len(outs) == 1 else tf.concat(outs, axis=0)

    def step(self, pop: tf.Tensor, fit: tf.Tensor, generation: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One generation: pure in (population, fitness, generation)."""
        key = rng.fold_in(self.key, generation)
        children = self.vary(pop, key)
        child_fit = self.evaluate(children)
        parents = None
        if self.model.selection.pool == "both":
            children, child_fit = tf.concat([pop, children], 0), tf.concat([fit, child_fit], 0)
            parents = np.arange(children.shape[0]) < self.n
        idx = self.model.selection.choose(child_fit, self.sign, rng.fold_in(key, 0), self.n, parents)
        return tf.gather(children, idx), tf.gather(child_fit, idx)

    # -- the compiled entry points -----------------------------------------------------------
    def _start(self, genes):
        """The initial state, and whether packing was valid (all genes 0 or 1), found in the same pass."""
        self._traced()
        binary = tf.constant(True)
        if self.packed:
            binary = tf.reduce_all(tf.equal(genes & tf.cast(-2, genes.dtype), 0))
            genes = packing.pack(genes)
        fit = self.evaluate(genes)
        j = tf.argmax(score(fit, self.sign), output_type=tf.int32)
        return (genes, fit, tf.gather(genes, j), tf.gather(fit, j), tf.constant(0)), binary

    def _run(self, state, generation, count, target, patience):
        self._traced()
        sign = self.sign

        def finished(best_fit, stale):
            return (sign * best_fit >= sign * target) | (stale >= patience)

        def body(i, state, hist):
            pop, fit, best, best_fit, stale = state
            pop, fit = self.step(pop, fit, generation + i + 1)
            # gather, not pop[j]: XLA would treat a slice's begin as a compile-time constant
            j = tf.argmax(score(fit, sign), output_type=tf.int32)
            gen_best = tf.gather(fit, j)
            better = score(gen_best, sign) > score(best_fit, sign)
            best = tf.where(better, tf.gather(pop, j), best)
            best_fit = tf.where(better, gen_best, best_fit)
            stale = tf.where(better, 0, stale + 1)
            row = tf.stack([gen_best, tf.reduce_mean(fit), tf.math.reduce_std(fit)])
            hist = tf.tensor_scatter_nd_update(hist, [[i]], row[None])
            return i + 1, (pop, fit, best, best_fit, stale), hist

        i, state, hist = tf.while_loop(
            lambda i, s, h: (i < count) & ~finished(s[3], s[4]), body,
            (tf.constant(0), tuple(state), tf.zeros((self.chunk, len(STATS)))))
        return state, i, hist, finished(state[3], state[4])

    def _finish(self, pop, best):
        self._traced()
        if not self.packed:
            return pop, best
        shape, dtype = self.spec.shape, self.spec.dtype
        return packing.unpack(pop, shape, dtype), packing.unpack(best[None], shape, dtype)[0]

    def no_limits(self) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.constant(self.sign * math.inf, tf.float32), tf.constant(_NO_PATIENCE, tf.int32)


class Run:
    """An evolve call as callbacks see it between chunks; set ``stop = True`` to end it."""

    def __init__(self, model, program: _Program, state, generation: int, generations: int, history):
        self.model, self.program, self.state = model, program, state
        self.generation, self.generations, self.history = generation, generations, history
        self.stop = self.stopped_early = False

    @property
    def best_fitness(self) -> float:
        return float(self.state[3])

    def _arrays(self):
        pop, best = self.program.finish(self.state[0], self.state[2])
        return pop.numpy(), best.numpy()

    def snapshot(self) -> dict:
        """Everything needed to resume exactly (NumPy arrays, for ``np.savez``)."""
        pop, best = self._arrays()
        return {"population": pop, "best": best, "best_fitness": np.float32(self.best_fitness),
                "stale": np.int32(int(self.state[4])), "generation": np.int64(self.generation),
                "history": np.array([self.history[k] for k in STATS], np.float64).reshape(len(STATS), -1),
                "mode": np.str_(self.program.mode), "signature": np.str_(self.model.signature(self.program.n))}

    def result(self) -> Result:
        pop, best = self._arrays()
        return Result(best=best, best_fitness=self.best_fitness, history=self.history,
                      population=pop, fitness=self.state[1].numpy(), generations=self.generation,
                      mode=self.program.mode, packed=self.program.packed, stopped_early=self.stopped_early)


def _whole(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


class Model:
    """A genetic algorithm as a graph of ops from one ``evo.Input`` to one or more outputs.

    Children are the outputs (concatenated when there are several). ``compile`` adds
    fitness, selection, mode and seed; ``evolve`` runs it.
    """

    def __init__(self, inputs, outputs, name: str = "model"):
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(inputs) != 1 or not isinstance(inputs[0], SymbolicTensor) or inputs[0].node is not None:
            raise ValueError("Model takes exactly one evo.Input (the population's genome), got "
                             f"{inputs!r}")
        self.input = inputs[0]
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if not outs or not all(isinstance(o, SymbolicTensor) for o in outs):
            raise ValueError(f"Model outputs must be symbolic genomes made by ops from the Input, got {outputs!r}")
        for o in outs:
            if o.spec != self.input.spec:
                raise ValueError(f"output {o.name!r} has genomes {o.spec}, but children must have the "
                                 f"Input's genomes {self.input.spec}")
        self.outputs, self.name = outs, name
        self.nodes = topological_order(self.input, outs)
        self.trace_count = 0
        self.fitness = self.selection = None
        self.history: dict[str, list[float]] = {}

    # -- compile -------------------------------------------------------------------------
    def compile(self, fitness, selection: Selection, mode: str = "auto", seed: int = 0,
                maximize: bool | None = None, pack="auto") -> None:
        """Set fitness, selection, mode ('eager', 'graph', 'xla' or 'auto') and seed.

        ``pack``: 'auto' packs 0/1 genomes into uint32 words when every op supports it;
        False never packs; True requires packing.
        """
        fit = fitness_lib.resolve(fitness, maximize)
        fit.check(self.input.spec)
        if not isinstance(selection, Selection):
            raise TypeError(f"selection must be an evo.selection.Selection (e.g. Tournament(size=2)), "
                            f"got {type(selection).__name__}")
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        rng.key(seed)  # validates
        if pack not in ("auto", True, False):
            raise ValueError(f"pack must be 'auto', True or False, got {pack!r}")
        for node in self.nodes:
            node.op.attach(fit)
        self.fitness, self.selection, self.mode, self.seed, self.pack = fit, selection, mode, seed, pack
        self.chosen_mode = None if mode == "auto" else mode
        self.mode_timings: dict[str, float] = {}
        self._programs: dict[tuple, _Program] = {}

    def _require_compiled(self) -> None:
        if self.fitness is None:
            raise RuntimeError("compile the model first: model.compile(fitness=..., selection=..., mode=..., seed=...)")

    # -- describing ------------------------------------------------------------------------
    def _describe(self) -> list[tuple[str, str, str]]:
        rows = [(self.input.name, f"Input(shape={self.input.spec.shape}, dtype={self.input.dtype.name})", "")]
        for node in self.nodes:
            rows.append((node.op.name, repr(node.op), ", ".join(t.name for t in node.inputs)))
        return rows

    def summary(self) -> None:
        """Print the ops, their parameters and inputs, then fitness, selection and mode."""
        rows = self._describe()
        w0 = max(len(r[0]) for r in rows) + 2
        w1 = max(len(r[1]) for r in rows) + 2
        lines = [f'Model "{self.name}"', f"{'name'.ljust(w0)}{'op'.ljust(w1)}inputs"]
        lines += [f"{a.ljust(w0)}{b.ljust(w1)}{c}" for a, b, c in rows]
        lines.append(f"outputs (children): {', '.join(o.name for o in self.outputs)}")
        if self.fitness is not None:
            direction = "maximise" if self.fitness.maximize else "minimise"
            lines.append(f"fitness: {self.fitness!r} ({direction}); selection: {self.selection!r}; "
                         f"mode: {self.mode}; seed: {self.seed}")
        print("\n".join(lines))

    def plan(self) -> Plan:
        """The order in which one compiled generation runs."""
        self._require_compiled()
        steps = [f"{node.op.name}: {node.op!r} <- {', '.join(t.name for t in node.inputs)}" for node in self.nodes]
        children = " + ".join(o.name for o in self.outputs)
        direction = "maximise" if self.fitness.maximize else "minimise"
        steps.append(f"fitness: {self.fitness!r} ({direction}) on {children}")
        if self.selection.elitism:
            steps.append(f"selection: {self.selection!r}: the {self.selection.elitism} best parents, "
                         "the other slots from the children")
        else:
            pool = "parents + children" if self.selection.pool == "both" else "children"
            steps.append(f"selection: {self.selection!r} from {pool}")
        steps.append("record best/mean/std; keep the best so far")
        note = "0/1 genomes run bit-packed (32 genes per uint32 word)" if self._packable() else "genomes run unpacked"
        return Plan(f"one generation (mode={self.mode!r}, seed={self.seed}; {note}):", steps)

    def signature(self, n: int) -> str:
        """What a checkpoint must match to resume this model exactly (ops by position, not name)."""
        index = {id(self.input): 0} | {id(node.output): i + 1 for i, node in enumerate(self.nodes)}
        ops = [f"{i + 1}: {node.op!r} <- {[index[id(t)] for t in node.inputs]}" for i, node in enumerate(self.nodes)]
        outputs = [index[id(o)] for o in self.outputs]
        return "\n".join(ops + [f"children {outputs}; fitness {self.fitness!r}; selection {self.selection!r}",
                                f"input {self.input.spec}; seed {self.seed}; population {n}"])

    # -- evolve --------------------------------------------------------------------------
    def _population(self, population) -> tf.Tensor:
        spec = self.input.spec
        x = tf.convert_to_tensor(population)
        if x.shape.rank is None or x.shape.rank < 2:
            raise ValueError(f"population must have shape (individuals, *genome), at least 2-D; got shape "
                             f"{tuple(x.shape)}. For a single genome add the population axis: x[None]")
        if tuple(x.shape[1:]) != spec.shape:
            raise ValueError(f"population genomes have shape {tuple(x.shape[1:])}, but the model's Input "
                             f"expects {spec.shape}; reshape the population or change evo.Input(shape=...)")
        if x.dtype != spec.dtype:
            same_kind = (x.dtype.is_integer and spec.dtype.is_integer) or (x.dtype.is_floating and spec.dtype.is_floating)
            if not same_kind:
                raise TypeError(f"population dtype {x.dtype.name} does not match the Input's {spec.dtype.name}; "
                                f"cast it (e.g. population.astype('{spec.dtype.name}')) or change evo.Input(dtype=...)")
            x = tf.cast(x, spec.dtype)
        if x.shape[0] < 2:
            raise ValueError(f"a population needs at least 2 individuals, got {x.shape[0]}")
        if self.fitness.permutation or any(n.op.permutation for n in self.nodes):
            # in int64: sort and range have no kernels for the narrow dtypes
            ok = tf.reduce_all(tf.sort(tf.cast(x, tf.int64), axis=1) == tf.range(spec.shape[0], dtype=tf.int64)[None, :])
            if not bool(ok):
                raise ValueError(f"this model needs each genome to be a permutation of 0..{spec.shape[0] - 1}; "
                                 "make one with evo.population.permutations(n, length, seed)")
        return x

    def _packable(self) -> bool:
        """Whether to try bit-packing: genes are integers, every op can, and pack is not False."""
        return self.pack is not False and self.input.dtype.is_integer and all(n.op.packable for n in self.nodes)

    def _start(self, mode, genes, batch, chunk) -> tuple[_Program, tuple]:
        """The program for this population and its initial state: packed if the genes are 0/1."""
        if self.pack is True and not self._packable():
            raise ValueError("pack=True, but these ops cannot run on packed genomes: "
                             + ", ".join(n.op.name for n in self.nodes if not n.op.packable))
        prog = self._program(mode, self._packable(), genes.shape[0], batch, chunk)
        state, binary = prog.start(genes)
        if not bool(binary):
            if self.pack is True:
                raise ValueError("pack=True, but the population has genes other than 0 and 1")
            prog = self._program(mode, False, genes.shape[0], batch, chunk)
            state, _ = prog.start(genes)
        return prog, state

    def _batch_rows(self, batch_size, memory_budget, n: int) -> int | None:
        if batch_size is not None and memory_budget is not None:
            raise ValueError("give batch_size (rows) or memory_budget (bytes), not both")
        if memory_budget is not None:
            per_row = self.input.spec.size * BYTES_PER_GENE_IN_FLIGHT
            batch_size = _whole("memory_budget", memory_budget, 1) // per_row
            if batch_size < 1:
                raise ValueError(f"memory_budget={memory_budget} bytes is less than one individual needs "
                                 f"(about {per_row} bytes); raise it")
        elif batch_size is not None:
            batch_size = _whole("batch_size", batch_size, 1)
        return None if batch_size is None or batch_size >= n else batch_size

    def _program(self, mode, packed, n, batch, chunk) -> _Program:
        k = (mode, packed, n, batch, chunk)
        if k not in self._programs:
            self._programs[k] = _Program(self, mode, packed, n, batch, chunk)
        return self._programs[k]

    def _resolve_mode(self, genes, batch, chunk) -> str:
        """The compiled mode, or for 'auto' the fastest, timed once on the first generations."""
        if self.chosen_mode is not None:
            return self.chosen_mode
        probe = min(AUTO_PROBE_GENERATIONS, chunk)
        for mode in ("eager", "graph", "xla"):
            prog, state = self._start(mode, genes, batch, chunk)
            args = (state, tf.constant(0), tf.constant(probe), *prog.no_limits())
            t = bench.measure(lambda: prog.run(*args), name=mode, repeats=3, warmup=1, number=1)
            self.mode_timings[mode] = t.median_s / probe
        self.chosen_mode = min(self.mode_timings, key=self.mode_timings.get)
        print(f"evo: auto mode chose {self.chosen_mode!r} (" + ", ".join(
            f"{m} {s * 1e3:.3g} ms/generation" for m, s in self.mode_timings.items()) + ")")
        return self.chosen_mode

    def _limits(self, callbacks, prog: _Program) -> tuple[tf.Tensor, tf.Tensor]:
        target, patience = prog.no_limits()
        stops = [c for c in callbacks if isinstance(c, cb_lib.EarlyStopping)]
        if len(stops) > 1:
            raise ValueError("pass at most one EarlyStopping (it can have both target= and patience=)")
        if stops and stops[0].target is not None:
            target = tf.constant(stops[0].target, tf.float32)
        if stops and stops[0].patience is not None:
            patience = tf.constant(stops[0].patience, tf.int32)
        return target, patience

    def evolve(self, population=None, generations: int = 100, *, callbacks=(), batch_size: int | None = None,
               memory_budget: int | None = None, chunk: int = 64, resume_from=None, strategy=None,
               distribution: str = "global", migration_interval: int = 10, migrants: int = 1) -> Result:
        """Evolve ``population`` (N, *genome) until generation ``generations``.

        ``chunk`` generations run per compiled call; callbacks run between calls.
        ``batch_size`` (rows) or ``memory_budget`` (bytes) evaluate ops and fitness in
        row batches; the result equals the unbatched one. ``resume_from`` continues a
        checkpoint: ``generations`` is then still the total counted from the original start
        (a run saved at generation 20 and resumed with ``generations=25`` runs 5 more, and
        equals an uninterrupted 25-generation run); fewer than the checkpoint's is an error. ``strategy``
        (a ``tf.distribute.Strategy``) shards the population over its replicas, with
        ``distribution`` "global" or "islands" (see ``course_lib.evo.distributed``).
        """
        self._require_compiled()
        if strategy is not None:
            from course_lib.evo import distributed

            if resume_from is not None:
                raise ValueError("resume_from cannot be combined with strategy=: distributed runs are not checkpointed")
            return distributed.evolve(self, population, generations, strategy=strategy, distribution=distribution,
                                      migration_interval=migration_interval, migrants=migrants, callbacks=callbacks,
                                      batch_size=batch_size, memory_budget=memory_budget, chunk=chunk)
        generations = _whole("generations", generations, 0)
        chunk = _whole("chunk", chunk, 1)
        callbacks = list(callbacks)
        for c in callbacks:
            if not isinstance(c, cb_lib.Callback):
                raise TypeError(f"callbacks must be evo.callbacks.Callback instances, got {type(c).__name__}")
        checkpoint = None
        if resume_from is not None:
            if population is not None:
                raise ValueError("pass population or resume_from, not both: the checkpoint holds the population")
            checkpoint = cb_lib.load_checkpoint(resume_from)
            population = checkpoint["population"]
            saved = int(checkpoint["generation"])
            if generations < saved:
                raise ValueError(f"the checkpoint is at generation {saved}, past generations={generations}: when "
                                 "resuming, generations counts from the original start, not from the checkpoint; "
                                 f"pass generations={saved + generations} for {generations} more")
        elif population is None:
            raise ValueError("evolve needs a population, e.g. evo.population.random_integers((N, L), 0, 2), "
                             "or resume_from=<checkpoint path>")
        genes = self._population(population)
        n = genes.shape[0]
        pool = n * len(self.outputs) + (n if self.selection.pool == "both" else 0)
        self.selection.check(pool, n)
        batch = self._batch_rows(batch_size, memory_budget, n)
        if checkpoint is not None:
            mode = self._checkpoint_mode(checkpoint, n)
        else:
            mode = self._resolve_mode(genes, batch, chunk)
        prog, state = self._start(mode, genes, batch, chunk)
        generation, history = 0, {k: [] for k in STATS}
        if checkpoint is not None:
            best = tf.cast(checkpoint["best"][None], self.input.dtype)
            best = packing.pack(best)[0] if prog.packed else best[0]
            state = (state[0], state[1], best, tf.constant(checkpoint["best_fitness"], tf.float32),
                     tf.constant(checkpoint["stale"], tf.int32))
            generation = int(checkpoint["generation"])
            history = {k: checkpoint["history"][i].tolist() for i, k in enumerate(STATS)}
        run = Run(self, prog, state, generation, generations, history)
        for c in callbacks:
            c.on_evolve_begin(run)
        target, patience = self._limits(callbacks, prog)
        every = [c.every for c in callbacks if c.every]
        while run.generation < generations and not run.stop:
            g = run.generation
            end = min([generations, g + chunk] + [(g // e + 1) * e for e in every])
            state, done, hist, stopped = prog.run(run.state, tf.constant(g), tf.constant(end - g), target, patience)
            done = int(done)
            for k, column in zip(STATS, hist.numpy()[:done].T):
                run.history[k].extend(column.tolist())
            run.state, run.generation = state, g + done
            run.stop = run.stopped_early = bool(stopped)
            for c in callbacks:
                c.on_chunk_end(run)
        for c in callbacks:
            c.on_evolve_end(run)
        self.history = run.history
        return run.result()

    def _checkpoint_mode(self, checkpoint: dict, n: int) -> str:
        if str(checkpoint["signature"]) != self.signature(n):
            raise ValueError("the checkpoint was written by a different model (ops, fitness, selection, seed "
                             f"or population size differ):\n{checkpoint['signature']}\nthis model:\n{self.signature(n)}")
        mode = str(checkpoint["mode"])
        if self.mode not in ("auto", mode):
            raise ValueError(f"the checkpoint was written in mode {mode!r}, this model is compiled with "
                             f"mode {self.mode!r}; compile with mode={mode!r} (or 'auto') to resume exactly")
        return mode
