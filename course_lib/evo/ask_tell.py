"""Ask/tell: the model's compiled variation and selection, for a fitness computed outside TensorFlow.

A simulator, a Python model, a Gymnasium environment, a process pool or a remote service
scores the genomes; the engine breeds and selects::

    search = model.ask_tell(population)          # or evo.AskTell(model, population)
    while search.generation < 100:
        genomes = search.ask()                   # NumPy: the genomes to score now
        search.tell(my_fitness(genomes))         # NumPy or a tensor, one value (row) per genome
    search.best, search.best_fitness, search.history

The first ``ask`` returns the population itself (generation 0 is scored like any other);
every later one returns the children of the current population. ``tell`` then forms the pool,
selects with the model's selection and keeps the best so far. Both run the code of
``executors.Generation`` (the generation's key, variation, pool, selection, best-so-far
tracking), compiled in the model's mode, so with the same values told, ask/tell gives
``evolve``'s result bit for bit: the same population, best and history.

The model's fitness gives only the direction (and, for several objectives, their number
and the hypervolume's reference): compile with ``evo.fitness.External(maximize=...)``, or with
``evo.fitness.MultiObjective(directions, reference=...)`` for several objectives or a
constraint, whose values are told as (N, M) objectives or (N, M + 1) objectives then
violation. Values are ranked as float32, like every fitness of the engine.

``state()`` is everything needed to continue (NumPy arrays); ``save(path)`` writes it and
``model.ask_tell(resume_from=path)`` continues it, the same as an uninterrupted search.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.evo import callbacks as cb_lib
from course_lib.evo import engine, fusion
from course_lib.evo import result as result_lib
from course_lib.evo import state as state_lib
from course_lib.evo.executors import Generation, compiler, pool_size
from course_lib.evo.result import Result
from course_lib.evo.state import State

EXECUTOR = "ask/tell"


class AskTell:
    """The ask/tell loop of a compiled ``model`` from ``population`` (or a saved state, ``resume_from``).

    Args:
        model: a compiled ``evo.Model``; its fitness gives the direction only (see the module).
        population: the first population, (N, *genome), as for ``evolve``.
        resume_from: a path written by ``save`` (instead of ``population``).
    """

    def __init__(self, model, population=None, resume_from=None):
        model._require_compiled()
        if model.fitness.per_generation:
            raise ValueError(f"{model.fitness!r} draws new conditions each generation inside the engine; ask/tell "
                             "scores genomes outside it: compile with evo.fitness.External(maximize=...) and "
                             "draw your conditions where you compute the values")
        model.bind()
        population, saved = engine.starting_point("ask/tell", population, resume_from)
        genes = engine.checked_population(model, population)
        model.selection.check(pool_size(model, genes.shape[0]), genes.shape[0])
        self.model, self.n = model, genes.shape[0]
        self.mode = model.chosen_mode or ("graph" if model.mode == "auto" else model.mode)
        self._target = fusion.resolve_target(model.target, [fusion.placed_device()])
        self.generation = 0
        self.history: dict[str, list[float]] = {k: [] for k in model.history_keys()}
        self._genes, self._state, self._asked = genes, None, None
        if saved is not None:
            self._restore(saved)

    @property
    def _program(self) -> "_Program":
        """The model's program for this loop, with the ops' knobs as they are now (a changed rate between
        generations takes effect, compiling again only where it changes the program's structure)."""
        model, mode, n, target = self.model, self.mode, self.n, self._target
        return model.program((EXECUTOR, mode, target, n), lambda: _Program(model, mode, n, target))

    # -- the loop ----------------------------------------------------------------------------------
    def ask(self) -> np.ndarray:
        """The genomes to score now (NumPy): the population first, then each generation's children
        (every output's children one after the other). Asking again before ``tell`` returns the same."""
        if self._asked is None:
            self._asked = self._genes if self._state is None else self._program.children(
                self._state.population, tf.constant(self.generation + 1))
        return self._asked.numpy()

    def tell(self, fitness) -> None:
        """The values of the genomes the last ``ask`` returned, in the same order: (rows,) for one
        objective, (rows, M) or (rows, M + 1) (objectives, then violation) for ``MultiObjective``."""
        if self._asked is None:
            raise RuntimeError("tell() answers an ask(): call ask() first and score the genomes it returns")
        values = self._values(fitness, self._asked.shape[0])
        if self._state is None:
            self._state = self._program.start(self._asked, values)
        else:
            self._state, row = self._program.settle(self._state, self._asked, values,
                                                    tf.constant(self.generation + 1))
            for k, v in zip(self.model.history_keys(), row.numpy().tolist()):
                self.history[k].append(v)
            self.generation += 1
        self._asked = None

    def _values(self, fitness, rows: int) -> tf.Tensor:
        fit = self.model.fitness
        values = tf.cast(tf.convert_to_tensor(fitness), tf.float32)
        if fit.width is None:
            if tuple(values.shape) != (rows,):
                raise ValueError(f"tell() needs one value per asked genome, shape ({rows},); got shape "
                                 f"{tuple(values.shape)}")
            return values
        if values.shape.rank == 1 and fit.objectives == 1:
            values = values[:, None]
        if values.shape.rank == 2 and values.shape[1] == fit.objectives:
            values = tf.concat([values, tf.zeros((values.shape[0], 1))], 1)  # feasible
        if tuple(values.shape) != (rows, fit.width):
            raise ValueError(f"{fit!r} needs (rows, {fit.objectives}) objectives or (rows, {fit.width}) objectives "
                             f"then violation for the {rows} asked genomes; got shape {tuple(values.shape)}")
        return values

    # -- what it holds ----------------------------------------------------------------------------
    def _require_told(self) -> State:
        if self._state is None:
            raise RuntimeError("nothing told yet: ask() for the population, score it and tell() its values")
        return self._state

    @property
    def population(self) -> np.ndarray:
        return self._require_told().population.numpy()

    @property
    def fitness(self) -> np.ndarray:
        return self._require_told().fitness.numpy()

    @property
    def best(self) -> np.ndarray:
        return self._require_told().best.numpy()

    @property
    def best_fitness(self) -> float:
        return float(self._require_told().best_fitness)

    def result(self) -> Result:
        """What ``evolve`` would return after these generations."""
        return result_lib.of_state(self.model.fitness, state_lib.arrays(self._require_told()),
                                   {k: list(v) for k, v in self.history.items()}, self.generation, self.mode,
                                   packed=False, stopped_early=False)

    def state(self) -> dict:
        """Everything needed to continue exactly (NumPy arrays, for ``np.savez``); the model's identity
        (``Model.signature``) is checked on resume."""
        state = self._require_told()  # children asked and not told yet are drawn again on resume
        return state_lib.checkpoint(state_lib.arrays(state), self.generation, self.history,
                                    self.model.history_keys(), self.mode, self.model.signature(self.n, EXECUTOR))

    def save(self, path) -> None:
        """Write ``state()`` to ``path`` (an .npz file, atomically)."""
        cb_lib.save_checkpoint(path, self.state())

    def _restore(self, saved: dict) -> None:
        state_lib.check_identity(saved, self.model.signature(self.n, EXECUTOR))
        width = self.model.fitness.width
        genes, scalar = self._genes, (lambda dtype: tf.TensorSpec((), dtype))
        like = State(genes, tf.TensorSpec((self.n,) if width is None else (self.n, width), tf.float32), genes[0],
                     scalar(tf.float32), scalar(tf.int32), self._program.gen.initial_selection())
        self._state = State(genes, **state_lib.read(saved, like, State._fields[1:]))
        self.generation, self.history = state_lib.resumed(saved, self.model.history_keys())


class _Program:
    """The compiled halves of a generation for ask/tell: variation, and pool + selection + best so far."""

    def __init__(self, model, mode: str, n: int, target: str):
        self.gen = Generation(model, packed=False, rows=n, batch=None)
        wrap = compiler(model, mode, target)
        self.start = wrap(self._start_fn)
        self.children = wrap(self._children_fn)
        self.settle = wrap(self._settle_fn)

    def _start_fn(self, genes, values):
        self.gen.traced()
        return self.gen.scored(genes, values)

    def _children_fn(self, population, generation):
        self.gen.traced()
        return self.gen.vary(population, self.gen.key(generation))

    def _settle_fn(self, state, children, values, generation):
        self.gen.traced()
        return self.gen.settle(state, children, values, generation)
