"""The one evolution loop: a run is prepared once, then one loop drives it through an executor.

``prepare`` validates the population and options, decides packing, the batch size
under a memory budget and the mode (timing the modes for 'auto'), and reads a
checkpoint to resume. ``evolve`` then runs chunks of generations through the
executor's compiled program (``executors.OneDevice`` or ``sharding.Replicated``):
chunks end where a callback's ``every`` asks, early stopping (target and patience) is
compiled into the program so a run stops at the exact generation, history is
appended after each chunk, and ``Run.snapshot`` is what a checkpoint holds. Every
feature works the same under every executor.

Where to add things: an op is one class in ``evo/ops`` (it registers itself); a
selection subclasses ``selection.Selection``; a fitness subclasses ``fitness.Fitness``;
a way of distributing is a ``sharding.Policy``; a mode is an entry of
``executors.COMPILERS``; a way of running generations implements ``executors.Executor``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import statistics
import time
from dataclasses import dataclass
from typing import Protocol

import tensorflow as tf

from course_lib.evo import bitpack
from course_lib.evo import callbacks as cb_lib
from course_lib.evo import fitness as fitness_lib
from course_lib.evo import result as result_lib
from course_lib.evo import state as state_lib
from course_lib.evo.executors import Executor, OneDevice, Program, no_limits
from course_lib.evo.result import Result
from course_lib.evo.symbolic import check_binary
from course_lib.evo.validation import whole

# memory_budget model: a gene's 4 bytes plus the temporaries of ops and fitness on it
BYTES_PER_GENE_IN_FLIGHT = 32
# memory_budget="device": the share of the device's free memory a run may plan to use
DEVICE_SHARE = 0.5
AUTO_PROBE_GENERATIONS = 3
# chunk=None (see default_chunk): generations per compiled call while a callback without `every` watches
# the run, and otherwise; the latter is also the compiled loop's history capacity (see capacity)
WATCHED_CHUNK = 64
WHOLE_RUN_CHUNK = 1024


class Compiled(Protocol):
    """What the loop reads and writes of a compiled ``evo.Model``: a protocol, not the class, because the
    model module imports this one and the arrows run one way."""

    mode: str | None
    fitness: fitness_lib.Fitness | None
    trace_count: int
    history: dict[str, list[float]]

    def _require_compiled(self) -> fitness_lib.Fitness: ...

    def signature(self, n: int, executor: str = "one device") -> str: ...

    def history_keys(self) -> tuple[str, ...]: ...


# -- preparing a run ------------------------------------------------------------------------------------


def checked_population(model, population) -> tf.Tensor:
    """``population`` as a tensor of the model's genomes, or a clear error naming what is wrong."""
    spec = model.input.spec
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
        if x.dtype.is_integer and tf.size(x) > 0:  # a cast would wrap values the Input's dtype cannot hold
            low, high = int(tf.reduce_min(x)), int(tf.reduce_max(x))
            if low < spec.dtype.min or high > spec.dtype.max:
                raise ValueError(f"population values span [{low}, {high}], which the Input's {spec.dtype.name} "
                                 f"({spec.dtype.min}..{spec.dtype.max}) cannot hold; a cast would wrap them: "
                                 "bring them into that range or change evo.Input(dtype=...)")
        x = tf.cast(x, spec.dtype)
    if x.shape[0] < 2:
        raise ValueError(f"a population needs at least 2 individuals, got {x.shape[0]}")
    binary = [n.op.name for n in model.nodes if n.op.binary] + ([repr(model.fitness)] if model.fitness.binary else [])
    if binary:
        check_binary(" and ".join(binary), x)
    if model.fitness.permutation or any(n.op.permutation for n in model.nodes):
        # in int64: sort and range have no kernels for the narrow dtypes
        ok = tf.reduce_all(tf.sort(tf.cast(x, tf.int64), axis=1) == tf.range(spec.shape[0], dtype=tf.int64)[None, :])
        if not bool(ok):
            raise ValueError(f"this model needs each genome to be a permutation of 0..{spec.shape[0] - 1}; "
                             "make one with evo.population.permutations(n, length, seed)")
    return x


def device_memory(target: str, device: str = "GPU:0") -> tuple[int, str]:
    """(bytes free for a run, where that figure comes from) on the memory a ``target`` computes in: for
    "gpu" the GPU's (TensorFlow's limit for ``device`` less what it holds now), for "cpu" the host's
    available memory. A "gpu" target traced on a machine without a GPU falls back to the host's, and says so."""
    if target == "gpu" and tf.config.list_logical_devices("GPU"):
        from tensorflow.python.client import device_lib  # the only public-enough reader of a GPU's size

        name = tf.DeviceSpec.from_string(device)
        limits = {d.name.split("device:")[-1]: d.memory_limit for d in device_lib.list_local_devices()}
        key = f"{name.device_type}:{name.device_index or 0}"
        if key in limits:
            used = tf.config.experimental.get_memory_info(key)["current"]
            return max(int(limits[key]) - int(used), 0), f"{key} memory"
    host = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return int(host), "host memory" + (" (no GPU here)" if target == "gpu" else "")


def batch_rows(model, batch_size, memory_budget, rows: int, target: str = "cpu", memory=device_memory) -> int | None:
    """Rows per batch of ops and fitness on one device (None: all ``rows`` at once).

    ``memory_budget``: bytes, or "device" for ``DEVICE_SHARE`` of what ``memory(target)`` reads free on the
    device the run computes on (``device_memory``: a GPU's own memory for the GPU target, not the host's).
    None means "device" for the GPU target, so that a population larger than GPU memory runs in batches,
    and no batching for the CPU target (the host's memory is the run's anyway, and swaps rather than fails).
    """
    if batch_size is not None and memory_budget is not None:
        raise ValueError("give batch_size (rows) or memory_budget (bytes), not both")
    if memory_budget is None and batch_size is None and target == "gpu":
        memory_budget = "device"
    if memory_budget == "device":
        free, _ = memory(target)
        memory_budget = max(int(free * DEVICE_SHARE), 1)
    if memory_budget is not None:
        per_row = model.input.spec.size * BYTES_PER_GENE_IN_FLIGHT
        if isinstance(memory_budget, str):
            raise ValueError(f"memory_budget must be a number of bytes or 'device', got {memory_budget!r}")
        batch_size = whole("memory_budget", memory_budget, 1) // per_row
        if batch_size < 1:
            raise ValueError(f"memory_budget={memory_budget} bytes is less than one individual needs "
                             f"(about {per_row} bytes); raise it")
    elif batch_size is not None:
        batch_size = whole("batch_size", batch_size, 1)
    return None if batch_size is None or batch_size >= rows else batch_size


def decide_packing(model, genes: tf.Tensor) -> bool:
    """Bit-pack when the ops can and every gene is 0 or 1; ``pack=True`` makes that a requirement."""
    if model.pack is True and not model.packable():
        raise ValueError("pack=True, but these ops cannot run on packed genomes: "
                         + ", ".join(n.op.name for n in model.nodes if not n.op.packable))
    if not model.packable():
        return False
    binary = bool(bitpack.all_binary(genes))
    if model.pack is True and not binary:
        raise ValueError("pack=True, but the population has genes other than 0 and 1")
    return binary


def seconds_per_call_in_rounds(fns: dict, rounds: int = 3, warmup: int = 1) -> dict:
    """Median wall time of each ``fns[name]()`` over ``rounds`` rounds that call every one in turn, after
    ``warmup`` untimed calls each: a burst of other work lands on all of them, not on whichever was being
    timed alone (``fn`` returns only when its work is done, as a program's ``run`` does: it copies the
    history to NumPy)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times: dict = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def choose_mode(model, executor, genes: tf.Tensor, packed: bool, batch, chunk: int, callbacks=()) -> str:
    """The model's compiled mode; 'auto' times the modes in turn, on one device's rows as a plain run,
    keeps the seconds per generation in ``model.mode_timings`` and tells the callbacks
    (``Callback.on_mode_chosen``)."""
    if model.chosen_mode is None:
        probe = min(AUTO_PROBE_GENERATIONS, chunk)
        rows = genes[:executor.rows(genes.shape[0])]
        target, patience = no_limits(1.0 if model.fitness.maximize else -1.0)
        runs = {}
        for mode in ("eager", "graph", "xla"):
            prog = OneDevice().program(model, mode, packed, rows.shape[0], batch, capacity(chunk))
            runs[mode] = functools.partial(prog.run, prog.start(rows), 0, probe, target, patience)
        model.mode_timings.update({mode: seconds / probe
                                   for mode, seconds in seconds_per_call_in_rounds(runs).items()})
        model.chosen_mode = min(model.mode_timings, key=model.mode_timings.get)
        for c in callbacks:
            c.on_mode_chosen(model.chosen_mode, dict(model.mode_timings))
    return executor.mode(model, model.chosen_mode)


def limits(callbacks, sign: float) -> tuple[tf.Tensor, tf.Tensor]:
    """(target, patience) of the one EarlyStopping, as the compiled loop takes them."""
    target, patience = no_limits(sign)
    stops = [c for c in callbacks if isinstance(c, cb_lib.EarlyStopping)]
    if len(stops) > 1:
        raise ValueError("pass at most one EarlyStopping (it can have both target= and patience=)")
    if stops and stops[0].target is not None:
        target = tf.constant(stops[0].target, tf.float32)
    if stops and stops[0].patience is not None:
        patience = tf.constant(stops[0].patience, tf.int32)
    return target, patience


def starting_point(needs: str, population, resume_from) -> tuple[object, dict | None]:
    """(the population to start from, the checkpoint it was read from or None), or a clear error."""
    if resume_from is None:
        if population is None:
            raise ValueError(f"{needs} needs a population, e.g. evo.population.random_integers((N, L), 0, 2), "
                             "or resume_from=<checkpoint path>")
        return population, None
    if population is not None:
        raise ValueError("pass population or resume_from, not both: the checkpoint holds the population")
    checkpoint = cb_lib.load_checkpoint(resume_from)
    return checkpoint["population"], checkpoint


@dataclass
class Prepared:
    """A run, checked and decided once: what the loop needs."""

    genes: tf.Tensor
    generations: int
    chunk: int
    callbacks: list
    batch: int | None
    packed: bool
    mode: str
    checkpoint: dict | None
    sign: float  # 1.0 where the fitness is maximised, -1.0 where minimised


def prepare(model: Compiled, executor: Executor, population_, generations: int, *, callbacks, batch_size: int | None,
            memory_budget: int | None, chunk: int | None, resume_from) -> Prepared:
    """Validate everything and decide packing, batch and mode, before anything compiles."""
    generations = whole("generations", generations, 0)
    callbacks = list(callbacks)
    for c in callbacks:
        if not isinstance(c, cb_lib.Callback):
            raise TypeError(f"callbacks must be evo.callbacks.Callback instances, got {type(c).__name__}")
    chunk = default_chunk(callbacks) if chunk is None else whole("chunk", chunk, 1)
    population_, checkpoint = starting_point("evolve", population_, resume_from)
    if checkpoint is not None:
        saved = int(checkpoint["generation"])
        if generations < saved:
            raise ValueError(f"the checkpoint is at generation {saved}, past generations={generations}: when "
                             "resuming, generations counts from the original start, not from the checkpoint; "
                             f"pass generations={saved + generations} for {generations} more")
    genes = checked_population(model, population_)
    n = genes.shape[0]
    rows = executor.rows(n)
    executor.check(model, n)
    batch = batch_rows(model, batch_size, memory_budget, rows, executor.target(model))
    packed = decide_packing(model, genes)
    if checkpoint is not None:
        mode = executor.mode(model, checkpoint_mode(model, executor, checkpoint, n))
    else:
        mode = choose_mode(model, executor, genes, packed, batch, chunk, callbacks)
    sign = 1.0 if model._require_compiled().maximize else -1.0
    return Prepared(genes, generations, chunk, callbacks, batch, packed, mode, checkpoint, sign)


def capacity(chunk: int) -> int:
    """Generations one compiled call can record: at least ``WHOLE_RUN_CHUNK``, so that every chunk size up to
    it (and every run length) shares one program; the chunk itself is a tensor passed to each call."""
    return max(chunk, WHOLE_RUN_CHUNK)


def default_chunk(callbacks) -> int:
    """Generations per compiled call when ``chunk=None``: the whole run (up to ``WHOLE_RUN_CHUNK``) unless
    a callback without ``every`` (a progress bar, your own) wants to see it between chunks.

    Why: each chunk is a host round trip that also copies history back; a run nobody watches needs one.
    EarlyStopping is compiled into the loop and callbacks with ``every`` end chunks where they ask.
    """
    watched = [c for c in callbacks if not c.every and not isinstance(c, cb_lib.EarlyStopping)]
    return WATCHED_CHUNK if watched else WHOLE_RUN_CHUNK


def checkpoint_mode(model, executor, checkpoint: dict, n: int) -> str:
    """The mode to resume in; a clear error when the checkpoint is of another model or run."""
    state_lib.check_identity(checkpoint, model.signature(n, executor.describe()))
    mode = str(checkpoint["mode"])
    if model.mode not in ("auto", mode):
        raise ValueError(f"the checkpoint was written in mode {mode!r}, this model is compiled with "
                         f"mode {model.mode!r}; compile with mode={mode!r} (or 'auto') to resume exactly")
    return mode


# -- the loop ----------------------------------------------------------------------------------------------


class Run:
    """An evolve call as callbacks see it between chunks; set ``stop = True`` to end it."""

    def __init__(self, model: Compiled, executor: Executor, program: Program, state, generation: int, generations: int,
                 history: dict):
        self.model, self.executor, self.program, self.state = model, executor, program, state
        self.generation, self.generations, self.history = generation, generations, history
        self.stop = self.stopped_early = False

    @property
    def best_fitness(self) -> float:
        return self.program.best_fitness(self.state)

    def snapshot(self) -> dict:
        """Everything needed to resume exactly (NumPy arrays, for ``np.savez``)."""
        fields = self.program.arrays(self.state)
        del fields["fitness"]  # recomputed from the population on resume
        n = fields["population"].shape[0]
        return state_lib.checkpoint(fields, self.generation, self.history, self.model.history_keys(),
                                    self.program.mode, self.model.signature(n, self.executor.describe()))

    def result(self) -> Result:
        return result_lib.of_state(self.model.fitness, self.program.arrays(self.state), self.history,
                                   self.generation, self.program.mode, self.program.packed, self.stopped_early)


def evaluations_per_generation(model, n: int) -> int:
    """Fitness evaluations one generation of ``n`` individuals makes: every output's children, and the
    parents again for a ``per_generation`` fitness (scored on the generation's draw)."""
    return n * len(model.outputs) + (n if model.fitness.per_generation else 0)


def budget_generation(callbacks, model, n: int, generation: int, generations: int) -> int:
    """The generation at which an ``EarlyStopping(max_evaluations=)`` budget ends the run (counting the
    first population's evaluations and this call's generations), or ``generations`` without one."""
    budgets = [c.max_evaluations for c in callbacks
               if isinstance(c, cb_lib.EarlyStopping) and c.max_evaluations is not None]
    if not budgets:
        return generations
    if budgets[0] < n:
        raise ValueError(f"max_evaluations={budgets[0]} is less than the {n} evaluations of the first population; "
                         "raise it or use a smaller population")
    return min(generations, generation + (budgets[0] - n) // evaluations_per_generation(model, n))


class Timed:
    """Calls to a program, timed: the wall time of those that traced (and under XLA compiled) one."""

    def __init__(self, model):
        self.model, self.compile_s = model, 0.0

    def __call__(self, fn, *args):
        traces, start = self.model.trace_count, time.perf_counter()
        out = fn(*args)
        if self.model.trace_count > traces:
            self.compile_s += time.perf_counter() - start
        return out


def evolve(model: Compiled, executor: Executor, population_=None, generations: int = 100, *, callbacks=(),
           batch_size: int | None = None, memory_budget: int | None = None, chunk: int | None = None,
           resume_from=None) -> Result:
    """Prepare the run, then drive ``executor``'s program chunk by chunk (see the module docstring)."""
    began = time.perf_counter()
    setup = prepare(model, executor, population_, generations, callbacks=callbacks, batch_size=batch_size,
                    memory_budget=memory_budget, chunk=chunk, resume_from=resume_from)
    prog = executor.program(model, setup.mode, setup.packed, setup.genes.shape[0], setup.batch,
                            capacity(setup.chunk))
    timed, n = Timed(model), setup.genes.shape[0]
    keys = model.history_keys()
    generation = 0
    history: dict[str, list] = {k: [] for k in keys}
    if setup.checkpoint is not None:
        state = timed(prog.restore, setup.genes, setup.checkpoint)
        generation, history = state_lib.resumed(setup.checkpoint, keys)
    else:
        state = timed(prog.start, setup.genes)
    first = generation
    run = Run(model, executor, prog, state, generation, setup.generations, history)
    callbacks = setup.callbacks
    last = budget_generation(callbacks, model, n, generation, setup.generations)
    # a budget too small for one more generation stops the run before any
    run.stop = run.stopped_early = last < setup.generations and run.generation >= last
    for c in callbacks:
        c.on_evolve_begin(run)
    target, patience = limits(callbacks, setup.sign)
    every = [c.every for c in callbacks if c.every]
    while run.generation < last and not run.stop:
        g = run.generation
        end = min([last, g + setup.chunk] + [(g // e + 1) * e for e in every])
        run.state, rows, stopped = timed(prog.run, run.state, g, end - g, target, patience)
        for k, column in zip(keys, rows.T):
            run.history[k].extend(column.tolist())
        run.generation = g + len(rows)
        budget_spent = last < setup.generations and run.generation >= last
        run.stop = run.stopped_early = stopped or budget_spent
        for c in callbacks:
            c.on_chunk_end(run)
    for c in callbacks:
        c.on_evolve_end(run)
    model.history = run.history
    ran = run.generation - first
    return dataclasses.replace(run.result(), generations_run=ran,
                               evaluations=n + ran * evaluations_per_generation(model, n),
                               wall_time_s=time.perf_counter() - began, compile_time_s=timed.compile_s)
