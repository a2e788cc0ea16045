"""The model: a graph of ops from one ``evo.Input``, compiled with fitness, selection, mode and seed.

``Model.evolve`` is a thin call into ``course_lib.evo.engine``: the engine prepares the
run and its one loop drives it through an executor, ``executors.OneDevice`` or, with
``strategy=``, ``sharding.Replicated`` with the policy ``distribution`` names. The
model owns its graph, its compiled programs (built once per ``compile``) and its
identity for checkpoints (``signature``).
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import engine, fusion, knobs, rng, saving, sharding
from course_lib.evo import fitness as fitness_lib
from course_lib.evo.ask_tell import AskTell
from course_lib.evo.engine import BYTES_PER_GENE_IN_FLIGHT  # noqa: F401 (public names of the model)
from course_lib.evo.executors import MODES, STATS, OneDevice
from course_lib.evo.ops.base import Op
from course_lib.evo.result import Result
from course_lib.evo.selection import Selection
from course_lib.evo.symbolic import SymbolicTensor, topological_order


class Plan:
    """The compiled order of one generation; prints as text."""

    def __init__(self, header: str, steps: list[str]):
        self.header, self.steps = header, steps

    def __str__(self) -> str:
        return "\n".join([self.header] + [f"  {i + 1}. {s}" for i, s in enumerate(self.steps)])

    __repr__ = __str__


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
        self.fitness: fitness_lib.Fitness | None = None  # set by compile()
        self.selection: Selection | None = None
        self.seed_key = None
        self.mode: str | None = None
        self.target: str | None = None
        self.pack: str | bool | None = None
        self.generator: str | None = None
        self.metrics: dict = {}
        self.history: dict[str, list[float]] = {}

    # -- compile -------------------------------------------------------------------------
    def compile(self, fitness, selection: Selection, mode: str = "auto", seed: int = 0,
                maximize: bool | None = None, pack="auto", generator: str = "splitmix64", metrics=None,
                target: str = "auto") -> None:
        """Set fitness, selection, mode and seed; nothing is compiled until ``evolve``.

        Compiling again with the same fitness and selection objects, mode, packing and generator
        and another seed keeps the compiled programs: the seed, like the ops' rates and probabilities
        (set between runs: ``mutation.rate = 0.05``), is read from a variable when a program runs, so
        it does not retrace (on one device and in ask/tell; a program sharded under ``strategy=``
        holds them as constants). Any other parameter of an op, the fitness or the selection can be
        set in place too (``tournament.size = 6``, ``rastrigin.a = 1.0``): the next run checks the
        parts and compiles with the new value (``docs/engine.md``, "Editing a compiled model").
        Tournament size, elitism, population size, batch size and mode fix shapes or code: changing one
        compiles again, as does a mask's rate that changes its form (``docs/engine.md``, "Runtime
        parameters").

        Args:
            fitness: an ``evo.fitness.Fitness``, or a function of the population (see ``maximize``).
            selection: an ``evo.selection.Selection``, e.g. ``Tournament(size=2)``.
            mode: 'eager', 'graph', 'xla' or 'auto' (times the three on a few generations of the first run
                and keeps the fastest).
            seed: every random number of a run derives from it; the same seed, mode and generator give the
                same run.
            maximize: for a plain function as ``fitness``, whether higher is better.
            pack: 'auto' packs 0/1 genomes into uint32 words when every op supports it; False never packs;
                True requires packing.
            generator: the random words' generator, one of ``evo.rng.GENERATORS`` (the same seed gives
                other numbers under another one).
            metrics: {name: fn(population, fitness) -> scalar}, tensor functions compiled into the loop and
                recorded in the history after best, mean and std, every generation (population unpacked,
                fitness in the problem's units, after selection); on one device and in ask/tell.
            target: the device the programs are shaped for, "cpu" or "gpu" (a TPU counts as a GPU); "auto"
                takes it from the device a run is placed on (see ``docs/engine.md``, "Targets"). A named
                target traces that program on any machine: ``target="gpu"`` on a CPU runs the GPU-shaped
                program there, with the same results (bit for bit where the arithmetic is integer).
        """
        fit = fitness_lib.resolve(fitness, maximize)
        fit.check(self.input.spec)
        if not isinstance(selection, Selection):
            raise TypeError(f"selection must be an evo.selection.Selection (e.g. Tournament(size=2)), "
                            f"got {type(selection).__name__}")
        selection.check_fitness(fit)
        selection.check_genomes(self.input.spec)
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        rng.key(seed)  # validates
        seed = int(seed)  # a NumPy integer too: saved as JSON, shown as a number
        rng.check_generator(generator)
        fusion.check_target(target)
        if pack not in ("auto", True, False):
            raise ValueError(f"pack must be 'auto', True or False, got {pack!r}")
        for node in self.nodes:
            node.op.attach(fit)
        metrics = dict(metrics or {})
        for name, fn in metrics.items():
            if not isinstance(name, str) or name in STATS or not callable(fn):
                raise ValueError(f"metrics maps new names (not {', '.join(STATS)}) to functions fn(population, "
                                 f"fitness) -> scalar; got {name!r}: {fn!r}")
        # only the seed changed: the compiled programs stay (they read the seed's key from a variable)
        same = (self.fitness is fit and self.selection is selection and metrics == self.metrics
                and (self.mode, self.pack, self.generator, self.target) == (mode, pack, generator, target))
        self.metrics = metrics
        self.fitness, self.selection, self.mode, self.seed, self.pack = fit, selection, mode, seed, pack
        self.generator, self.target = generator, target
        root = tf.bitcast(rng.key(seed), tf.int32)  # int32: a variable dtype every device holds
        if self.seed_key is None:
            self.seed_key = tf.Variable(root, trainable=False, name="seed_key")
        else:
            self.seed_key.assign(root)
        if not same:
            self.chosen_mode = None if mode == "auto" else mode
            self.mode_timings: dict[str, float] = {}
            self._programs: dict[tuple, object] = {}

    def _require_compiled(self) -> fitness_lib.Fitness:
        """The compiled fitness, or a clear error before ``compile``."""
        if self.fitness is None:
            raise RuntimeError("compile the model first: model.compile(fitness=..., selection=..., mode=..., seed=...)")
        return self.fitness

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
            direction = _direction(self.fitness)
            lines.append(f"fitness: {self.fitness!r} ({direction}); selection: {self.selection!r}; "
                         f"mode: {self.mode}; seed: {self.seed}")
        print("\n".join(lines))

    def plan(self) -> Plan:
        """The order in which one compiled generation runs."""
        self._require_compiled()
        assert self.fitness is not None and self.selection is not None  # for the type checker: compiled
        steps = [f"{node.op.name}: {node.op!r} <- {', '.join(t.name for t in node.inputs)}" for node in self.nodes]
        children = " + ".join(o.name for o in self.outputs)
        direction = _direction(self.fitness)
        steps.append(f"fitness: {self.fitness!r} ({direction}) on {children}")
        if self.selection.elitism:
            steps.append(f"selection: {self.selection!r}: the {self.selection.elitism} best parents, "
                         "the other slots from the children")
        else:
            pool = "parents + children" if self.selection.pool == "both" else "children"
            steps.append(f"selection: {self.selection!r} from {pool}")
        steps.append("record hypervolume and the share on the front; keep the best hypervolume so far"
                     if self.fitness.objectives > 1 else "record best/mean/std; keep the best so far")
        note = "0/1 genomes run bit-packed (32 genes per uint32 word)" if self.packable() else "genomes run unpacked"
        # a named target is shown, "auto" (the device a run is placed on) is not: the plan reads alike on every machine
        target = "" if self.target == "auto" else f", target={self.target!r}"
        return Plan(f"one generation (mode={self.mode!r}{target}, seed={self.seed}; {note}):", steps)

    def signature(self, n: int, executor: str = "one device") -> str:
        """What a checkpoint must match to resume this model exactly: every op's exact parameters
        (not rounded), its inputs by position, fitness, selection, seed, population size and executor.

        The target is left out: a run saved on a GPU resumes on a CPU and back, exactly where the
        arithmetic is integer, and to rounding for float genes and fitness (the targets' programs
        differ in how XLA fuses them, not in what they compute)."""
        index = {id(self.input): 0} | {id(node.output): i + 1 for i, node in enumerate(self.nodes)}
        ops = [f"{i + 1}: {type(node.op).__name__}({_exact(node.op)}) <- {[index[id(t)] for t in node.inputs]}"
               for i, node in enumerate(self.nodes)]
        outputs = [index[id(o)] for o in self.outputs]
        return "\n".join(ops + [f"children {outputs}; fitness {type(self.fitness).__name__}({_exact(self.fitness)}); "
                                f"selection {type(self.selection).__name__}({_exact(self.selection)})",
                                f"input {self.input.spec}; seed {self.seed}; population {n}; {executor}"
                                + (f"; metrics {list(self.metrics)}" if self.metrics else "")
                                + ("" if self.generator == rng.GENERATORS[0] else f"; words {self.generator}")])

    def history_keys(self) -> tuple[str, ...]:
        """The history's entries per generation: best, mean, std, then the metrics."""
        return (*STATS, *self.metrics)

    def packable(self) -> bool:
        """Whether to try bit-packing: genes are integers, every op can, and pack is not False."""
        return self.pack is not False and self.input.dtype.is_integer and all(n.op.packable for n in self.nodes)

    def bind(self) -> None:
        """Attach the ops that hold problem data to this model's fitness as it is now (an op shared with
        another model, or a fitness that loaded another instance, holds other data), and drop the
        programs compiled with the old data."""
        stale = [node.op for node in self.nodes if not node.op.attached(self.fitness)]
        for op in stale:
            op.attach(self.fitness)
        if stale:
            self._programs.clear()

    def fill_knobs(self) -> list[knobs.Knobs]:
        """Put every op's knobs as they are now into the variables its programs read (``evo.knobs``);
        returns them, node by node."""
        now = [node.op.knobs(node.inputs[0].spec) for node in self.nodes]
        for node, values in zip(self.nodes, now):
            knobs.fill(node.op, node.inputs[0].spec, values)
        return now

    def check_parts(self) -> None:
        """Check every part as it is now against the genomes, as ``compile`` and building the graph did: a
        parameter set in place to a value the part cannot run with is a clear error before the run."""
        assert self.fitness is not None and self.selection is not None  # for the type checker: compiled
        for node in self.nodes:
            node.op.check(*[t.spec for t in node.inputs])
        self.fitness.check(self.input.spec)
        self.selection.check_fitness(self.fitness)
        self.selection.check_genomes(self.input.spec)

    def program(self, key: tuple, build, knobs_constant: bool = False):
        """The compiled program for ``key`` and the parts as they are now, built once per ``compile`` (so a
        sweep reuses compilations). The knobs' variables get the ops' current values first, so a changed
        rate runs the same program where its structure is the same (``evo.knobs``); every other parameter
        of the ops, the fitness and the selection is part of the key (``Op.settings``, ``Fitness.settings``,
        ``Selection.settings``), so a part edited in place runs as edited: another program is built (or
        one built before for those values is reused). ``knobs_constant``: the program holds the knobs as
        constants, so their values are part of its key."""
        assert self.fitness is not None and self.selection is not None  # for the type checker: compiled
        self.check_parts()
        now = self.fill_knobs()
        key = (*key, tuple(values.key() for values in now), tuple(node.op.settings() for node in self.nodes),
               self.fitness.settings(), self.selection.settings())
        if knobs_constant:
            key += (tuple(tuple((n, v.tobytes()) for n, v in sorted(values.values.items())) for values in now),)
        if key not in self._programs:
            self._programs[key] = build()
        return self._programs[key]

    def save(self, path) -> None:
        """Write the model (its graph, every part's config and, once compiled, its compile settings) to
        ``path``, one .npz file; ``evo.load_model(path)`` gives it back, evolving bit-identically
        (``course_lib.evo.saving``)."""
        saving.save_model(self, path)

    # -- evolve --------------------------------------------------------------------------
    def ask_tell(self, population=None, *, resume_from=None):
        """An ask/tell loop (``evo.AskTell``) for a fitness computed outside TensorFlow: ``ask()`` gives
        the genomes to score, ``tell(values)`` selects; equal to ``evolve`` given the same values."""
        return AskTell(self, population, resume_from=resume_from)

    def evolve(self, population=None, generations: int = 100, *, callbacks=(), batch_size: int | None = None,
               memory_budget: int | None = None, chunk: int | None = None, resume_from=None, strategy=None,
               distribution: str = "global", migration_interval: int = 10, migrants: int = 1) -> Result:
        """Evolve ``population`` (N, *genome) until generation ``generations``.

        ``chunk`` generations run per compiled call; callbacks run between calls. By default
        (None) a run nobody watches is one call (up to 1024 generations), and one watched by a
        callback without ``every`` (a progress bar) runs 64 per call.
        ``batch_size`` (rows) or ``memory_budget`` (bytes) evaluate ops and fitness in
        row batches; the result equals the unbatched one. ``resume_from`` continues a
        checkpoint: ``generations`` is then still the total counted from the original start
        (a run saved at generation 20 and resumed with ``generations=25`` runs 5 more, and
        equals an uninterrupted 25-generation run); fewer than the checkpoint's is an error.
        ``strategy`` (a ``tf.distribute.Strategy``) shards the population over its replicas,
        with ``distribution`` "global" or "islands" (``migration_interval``, ``migrants``; see
        ``course_lib.evo.sharding``); every other option works the same under it.

        Returns:
            A ``Result``: ``best``, ``best_fitness``, ``history`` (per-generation statistics), the final
            ``population`` and its ``fitness``, the ``mode`` that ran, and ``front`` for several objectives.
        """
        self._require_compiled()
        self.bind()
        executor: OneDevice | sharding.Replicated
        if strategy is None:
            executor = OneDevice()
        else:
            executor = sharding.Replicated(strategy, sharding.policy(distribution, migration_interval, migrants))
        return engine.evolve(self, executor, population, generations, callbacks=callbacks, batch_size=batch_size,
                             memory_budget=memory_budget, chunk=chunk, resume_from=resume_from)


def load_model(path) -> Model:
    """The model ``Model.save`` (or ``evo.save_model``) wrote to ``path``, rebuilt and compiled as it was;
    a file that is no such model (not an .npz file, truncated or damaged, a description that is not valid
    JSON, another format or version), or names an op that is not registered, is a ValueError naming the file."""
    saved = saving.read_model(path)
    model = Model(saved.input, saved.outputs, name=saved.name)
    if saved.compile is not None:
        model.compile(**saved.compile)
    return model


def _direction(fitness) -> str:
    """How a fitness is optimised, in words: one direction, or one per objective."""
    if fitness.objectives > 1:
        return ", ".join("maximise" if s > 0 else "minimise" for s in fitness.signs)
    return "maximise" if fitness.maximize else "minimise"


def _exact(part) -> str:
    """An op's parameters exactly (``get_config``: ``repr`` of floats round-trips); a fitness's or
    selection's as ``config`` shows them."""
    config = part.get_config() if isinstance(part, Op) else part.config()
    return ", ".join(f"{k}={v!r}" for k, v in sorted(config.items()))
