"""Fitness functions: population (N, *genome) -> float32 (N,), in the problem's own units.

Each declares ``maximize``; selection turns that into a score to maximise, while
results and history keep the original values (tour lengths, knapsack values).
Any TensorFlow callable works too: ``Function(fn, maximize=...)`` or
``compile(fitness=fn, maximize=...)``.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import tensorflow as tf

from course_lib.evo import bitpack, pareto
from course_lib.evo.config import Configurable, state_fingerprint
from course_lib.evo.fastmath import cos_2pi
from course_lib.evo.fusion import per_element
from course_lib.evo.symbolic import GenomeSpec, check_binary


class Fitness(Configurable):
    """Base class: subclasses set ``maximize`` and define ``evaluate``.

    A fitness that draws new conditions every generation (fresh episodes of a control task) sets
    ``per_generation`` and defines ``evaluate_generation`` and ``validate``: the engine then passes it
    a key of the generation's own (the same in every batch and replica), scores parents and children
    on the same draw, and keeps as the best so far the generation's best judged by ``validate``.
    """

    maximize: bool = True
    permutation = False  # genomes must be permutations of 0..L-1
    per_generation = False
    objectives = 1  # how many objectives it returns (``MultiObjective``: M)
    width: int | None = None  # columns per individual the engine carries; None: one value, shape (N,)
    binary = False  # scores 0/1 genomes only (checked on each population ``evolve`` starts from)
    version = 0  # counts the instances ``load`` put in place (ops holding the problem's data compare it)

    @property
    def signs(self) -> tuple[float, ...]:
        """+1 per maximised objective, -1 per minimised one."""
        return (1.0 if self.maximize else -1.0,)

    def __call__(self, population) -> tf.Tensor:
        """float32 values of ``population``. The engine ranks and records float32: an ``evaluate`` that
        returns float64 is refused rather than rounded quietly (integer counts are cast exactly up
        to 2**24)."""
        pop = tf.convert_to_tensor(population)
        if self.binary and tf.executing_eagerly():
            check_binary(type(self).__name__, pop)
        return as_float32(self, self.evaluate(pop))

    def evaluate(self, population: tf.Tensor) -> tf.Tensor:
        raise NotImplementedError

    def evaluate_generation(self, population: tf.Tensor, key: tf.Tensor) -> tf.Tensor:
        """Fitness under the generation's draw ``key`` (uint32[2]); used when ``per_generation``."""
        raise NotImplementedError

    def validate(self, genomes: tf.Tensor) -> tf.Tensor:
        """Scores on fixed conditions that judge the best so far; used when ``per_generation``."""
        raise NotImplementedError

    def evaluate_packed(self, words: tf.Tensor, spec: GenomeSpec) -> tf.Tensor:
        """Fitness of bit-packed 0/1 genomes; by default unpack (XLA fuses it into the fitness)."""
        return self(bitpack.unpack(words, spec.shape, spec.dtype))

    def check(self, spec: GenomeSpec) -> None:
        """Raise a clear error if this fitness cannot score genomes of ``spec``."""

    def settings(self) -> tuple:
        """Everything this fitness holds as its programs' constants, exactly (``config.state_fingerprint``;
        a variable, which a program reads when it runs, and the count of ``load``s are left out): part of
        its programs' key, so that an attribute set in place (``rastrigin.a = 1.0``) takes effect on the
        next run. ``evaluate`` should read its parameters when it traces, not from values ``__init__``
        derived from them."""
        return state_fingerprint(self, skip=("version",))

    def config(self) -> dict:
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({args})"


class External(Fitness):
    """A fitness computed outside the engine, told through ask/tell (``evo.AskTell``): only its direction.

    For several objectives or a constraint use ``MultiObjective(directions, reference=...)`` itself.
    """

    def __init__(self, maximize: bool = True):
        self.maximize = bool(maximize)

    def evaluate(self, population):
        raise TypeError("evo.fitness.External is computed outside the engine: run the model with "
                        "model.ask_tell(population) and tell() it the values, not with evolve()")

    def config(self):
        return {"maximize": self.maximize}


def as_float32(fitness: Fitness, values) -> tf.Tensor:
    """``values`` as float32, or a TypeError for float64, which the cast would round quietly."""
    values = tf.convert_to_tensor(values)
    if values.dtype == tf.float64:
        raise TypeError(f"{type(fitness).__name__}.evaluate returned float64, but the engine ranks and records "
                        "float32 fitness, which would round it quietly; return float32 (tf.cast(..., "
                        "tf.float32)) if 7 significant digits tell your individuals apart, or rescale the "
                        "objective (subtract a baseline) so that they do")
    return tf.cast(values, tf.float32)


def _flat(x: tf.Tensor, dtype=tf.float32) -> tf.Tensor:
    return tf.reshape(tf.cast(x, dtype), (-1, x.shape[1:].num_elements()))


class OneMax(Fitness):
    """Number of ones (maximise); on packed genomes a popcount."""

    def evaluate(self, population):
        return tf.reduce_sum(_flat(population), axis=1)

    def evaluate_generation(self, population: tf.Tensor, key: tf.Tensor) -> tf.Tensor:
        """Fitness under the generation's draw ``key`` (uint32[2]); used when ``per_generation``."""
        raise NotImplementedError

    def validate(self, genomes: tf.Tensor) -> tf.Tensor:
        """Scores on fixed conditions that judge the best so far; used when ``per_generation``."""
        raise NotImplementedError

    def evaluate_packed(self, words, spec):
        return tf.cast(bitpack.popcount(words), tf.float32)


class Sphere(Fitness):
    """Sum of squares (minimise; optimum 0 at the origin)."""

    maximize = False

    def evaluate(self, population):
        return tf.reduce_sum(tf.square(_flat(population)), axis=1)


class Rastrigin(Fitness):
    """A*d + sum(x² - A cos 2πx) (minimise; optimum 0 at the origin, many local minima).

    cos(2πx) is ``fastmath.cos_2pi``, a polynomial that XLA vectorises on CPU, computed for the
    whole population as one flat vector (``fusion.per_element``).
    """

    maximize = False

    def __init__(self, a: float = 10.0):
        self.a = float(a)

    def evaluate(self, population):
        x = _flat(population)
        d = x.shape[1]
        return self.a * d + tf.reduce_sum(per_element(lambda g: g * g - self.a * cos_2pi(g), x), axis=1)

    def config(self):
        return {"a": self.a}


class Ackley(Fitness):
    """Ackley's function (minimise; optimum 0 at the origin)."""

    maximize = False

    def evaluate(self, population):
        x = _flat(population)
        r = tf.sqrt(tf.reduce_mean(x * x, axis=1))
        c = tf.reduce_mean(per_element(cos_2pi, x), axis=1)
        return -20.0 * tf.exp(-0.2 * r) - tf.exp(c) + 20.0 + math.e


def _matrix(name: str, value, ndim: int) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite numbers, got {np.count_nonzero(~np.isfinite(arr))} NaN or "
                         "infinite value(s)")
    return arr


class TSP(Fitness):
    """Length of the closed tour that visits cities in genome order (minimise).

    Give ``coordinates`` (n, 2+) for Euclidean distances or a ``distances`` (n, n) matrix.
    With ``loadable=True`` the distances are a variable that the compiled program reads, so
    ``load`` puts another city set of as many cities in place and the next ``evolve`` runs it
    without compiling again (a constant, the default, lets XLA fold it into the program).
    """

    maximize = False
    permutation = True

    def __init__(self, coordinates=None, distances=None, loadable: bool = False):
        if (coordinates is None) == (distances is None):
            raise ValueError("TSP needs exactly one of coordinates= (n, 2) or distances= (n, n)")
        if coordinates is not None:
            xy = _matrix("coordinates", coordinates, 2)
            d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))
        else:
            d = _matrix("distances", distances, 2)
            if d.shape[0] != d.shape[1]:
                raise ValueError(f"distances must be square (n, n), got shape {d.shape}")
        self.n = d.shape[0]
        self.distances = tf.constant(d.reshape(-1), tf.float32)
        self.loadable = _hold(self, loadable, "distances")

    def load(self, coordinates=None, distances=None) -> None:
        """Another city set of ``n`` cities in place of this one (``loadable=True`` only)."""
        _load(self, TSP(coordinates=coordinates, distances=distances), "distances")

    def check(self, spec):
        if spec.shape != (self.n,) or not spec.dtype.is_integer:
            raise ValueError(f"TSP with {self.n} cities needs integer genomes of shape ({self.n},) "
                             f"(a tour), got {spec}")

    def evaluate(self, population):
        tour = tf.cast(population, tf.int32)
        nxt = tf.roll(tour, shift=-1, axis=1)
        return tf.reduce_sum(tf.gather(self.distances, tour * self.n + nxt), axis=1)

    def config(self):
        return {"cities": self.n}

    def get_config(self):
        """The distance matrix (n, n) as the program holds it (float32), and ``loadable``."""
        return {"distances": np.asarray(self.distances).reshape(self.n, self.n), "loadable": self.loadable}


class Knapsack(Fitness):
    """0/1 knapsack: total value, minus ``penalty`` per unit of weight over ``capacity`` (maximise).

    The default penalty is the best value per unit weight, so no overweight choice
    scores more than it would after dropping items to fit. ``loadable=True``: the instance
    (weights, values, capacity, penalty) is held in variables, so ``load`` swaps in another of
    as many items without compiling again, as for ``TSP``. Genes must be 0 or 1 (a 2 would count an
    item twice): ``evolve`` and a direct call check the population.
    """

    binary = True

    def __init__(self, weights, values, capacity: float, penalty: float | None = None, loadable: bool = False):
        w, v = _matrix("weights", weights, 1), _matrix("values", values, 1)
        if w.shape != v.shape:
            raise ValueError(f"weights and values must have the same length, got {w.shape} and {v.shape}")
        if (w <= 0).any() or not 0 < capacity < math.inf:
            raise ValueError("Knapsack needs positive weights and a positive finite capacity, got "
                             f"capacity={capacity!r}")
        if penalty is not None and not 0 <= penalty < math.inf:
            raise ValueError("Knapsack penalty (value lost per unit of weight over capacity) must be a finite number "
                             f">= 0, got {penalty!r}: a negative one would reward overweight packings")
        self.n, self.capacity = w.shape[0], float(capacity)
        self.penalty = float(penalty) if penalty is not None else float((v / w).max())
        self.weights, self.values = tf.constant(w, tf.float32), tf.constant(v, tf.float32)
        self.loadable = _hold(self, loadable, "weights", "values", "capacity", "penalty")

    def load(self, weights, values, capacity: float, penalty: float | None = None) -> None:
        """Another instance of ``n`` items in place of this one (``loadable=True`` only)."""
        _load(self, Knapsack(weights, values, capacity, penalty), "weights", "values", "capacity", "penalty")

    def check(self, spec):
        if spec.shape != (self.n,) or not spec.dtype.is_integer:
            raise ValueError(f"Knapsack with {self.n} items needs 0/1 integer genomes of shape "
                             f"({self.n},), got {spec}")

    def evaluate(self, population):
        x = _flat(population)
        over = tf.nn.relu(tf.linalg.matvec(x, self.weights) - self.capacity)
        return tf.linalg.matvec(x, self.values) - self.penalty * over

    def config(self):
        if self.loadable:  # the instance can change under a compiled model: only its size is fixed
            return {"items": self.n}
        return {"items": self.n, "capacity": self.capacity, "penalty": self.penalty}

    def get_config(self):
        """The instance as the program holds it now (after any ``load``), and ``loadable``."""
        return {"weights": np.asarray(self.weights), "values": np.asarray(self.values),
                "capacity": float(np.asarray(self.capacity)), "penalty": float(np.asarray(self.penalty)),
                "loadable": self.loadable}


def _hold(fitness: Fitness, loadable: bool, *names: str) -> bool:
    """With ``loadable``, the instance data ``names`` of ``fitness`` become variables; returns ``loadable``."""
    if loadable:
        for name in names:
            setattr(fitness, name, tf.Variable(tf.cast(getattr(fitness, name), tf.float32), trainable=False))
    return loadable


def _load(fitness: TSP | Knapsack, other: TSP | Knapsack, *names: str) -> None:
    """Assign ``other``'s instance data ``names`` to ``fitness``'s variables, or say why it cannot."""
    if not fitness.loadable:
        raise ValueError(f"this {type(fitness).__name__} holds its instance as constants of the compiled program; "
                         f"build it with loadable=True to load others")
    if other.n != fitness.n:
        raise ValueError(f"this model was compiled for instances of size {fitness.n}, got one of size {other.n}: "
                         "build and compile another model for it")
    for name in names:
        getattr(fitness, name).assign(tf.cast(getattr(other, name), tf.float32))
    fitness.version += 1


class CosineSimilarity(Fitness):
    """Cosine similarity between each genome and ``target`` (maximise; 1 when aligned)."""

    def __init__(self, target):
        self.target = tf.constant(np.asarray(target, dtype=np.float32))

    @property
    def shape(self) -> tuple:
        return tuple(self.target.shape)

    def check(self, spec):
        if spec.shape != self.shape:
            raise ValueError(f"CosineSimilarity target has shape {self.shape}, genomes have {spec.shape}")

    def evaluate(self, population):
        x = _flat(population)
        flat = tf.reshape(tf.cast(self.target, tf.float32), (-1,))
        unit = flat / tf.maximum(tf.norm(flat), 1e-12)
        return tf.linalg.matvec(x, unit) / tf.maximum(tf.norm(x, axis=1), 1e-12)

    def config(self):
        return {"shape": self.shape}


class Function(Fitness):
    """Any TensorFlow callable population -> (N,) fitness, with its direction."""

    def __init__(self, fn: Callable[[tf.Tensor], tf.Tensor], maximize: bool, name: str | None = None):
        if not callable(fn):
            raise TypeError(f"Function needs a callable population -> fitness, got {type(fn).__name__}")
        if not isinstance(maximize, bool):
            raise TypeError(f"maximize must be True or False, got {maximize!r}")
        self.fn, self.maximize = fn, maximize
        self.name = name or getattr(fn, "__name__", type(fn).__name__)

    def evaluate(self, population):
        out = self.fn(population)
        if out.shape.rank != 1:
            raise ValueError(f"fitness function {self.name!r} must return one value per individual "
                             f"(shape (N,)), got shape {tuple(out.shape)}")
        return out

    def config(self):
        return {"fn": self.name, "maximize": self.maximize}


DIRECTIONS = {"min": -1.0, "max": 1.0}
QUALITIES = ("hypervolume", "igd", "igd+")  # what a run with several objectives can track


class MultiObjective(Fitness):
    """Base class for fitnesses with several objectives or a constraint; subclasses define ``evaluate``.

    ``evaluate`` returns the objectives, float (N, M) ((N,) for one), or a pair (objectives,
    violation): violation float (N,), 0 where an individual is feasible and positive by how much
    it is not. Selection compares feasibility first, then violation, then the objectives (Deb's
    rules); ``evo.selection.NSGA2`` ranks several objectives. The engine carries (N, M + 1)
    values: the objectives in the problem's units, then the violation.

    Args:
        directions: "min" or "max" per objective (one string for a single objective).
        reference: the point the hypervolume is measured from, in the problem's units, worse than
            the solutions of interest in every objective.
        reference_front: a known Pareto front (K, M) in the problem's units, e.g. sampled from a test
            problem's true front, for IGD or IGD+.
        quality: what a run with several objectives tracks per generation (history "best", and the
            target of ``EarlyStopping``): "hypervolume" (exact, for 2 or 3 objectives; maximised; needs
            ``reference``), "igd" or "igd+" (any number of objectives; minimised; needs
            ``reference_front``). By default "hypervolume" when ``reference`` is given, else "igd".
    """

    def __init__(self, directions, reference=None, reference_front=None, quality: str | None = None):
        directions = (directions,) if isinstance(directions, str) else tuple(directions)
        if not directions or any(d not in DIRECTIONS for d in directions):
            raise ValueError(f"directions must be 'min' or 'max' per objective, e.g. ('min', 'min'); got "
                             f"{directions!r}")
        self.directions, self.objectives, self.width = directions, len(directions), len(directions) + 1
        m = self.objectives
        if reference is not None:
            reference = tuple(float(r) for r in np.ravel(reference))
            if len(reference) != m:
                raise ValueError(f"reference has {len(reference)} values for {m} objectives")
        if reference_front is not None:
            front = np.asarray(reference_front, np.float64)
            if front.ndim != 2 or front.shape[1] != m or len(front) == 0 or not np.all(np.isfinite(front)):
                raise ValueError(f"reference_front must be finite points of shape (K, {m}), one column per "
                                 f"objective; got shape {front.shape}")
            reference_front = tuple(map(tuple, front.tolist()))
        if quality is None and m > 1:
            quality = "hypervolume" if reference is not None else "igd" if reference_front is not None else None
        if m > 1 and quality not in QUALITIES:
            if quality is not None:
                raise ValueError(f"quality must be one of {', '.join(QUALITIES)}; got {quality!r}")
            raise ValueError(f"{type(self).__name__} with {m} objectives needs reference=: the point the hypervolume "
                             "is measured from, worse than the solutions of interest in every objective (e.g. "
                             "(1.1, 1.1) for ZDT problems); or reference_front=, a known front, to track IGD")
        if quality == "hypervolume" and (reference is None or m > 3):
            raise ValueError(f"the hypervolume the engine tracks is exact for 2 or 3 objectives and needs reference=; "
                             f"{m} objectives with reference={reference!r}: for more objectives give "
                             "reference_front= (a known front) and quality='igd' or 'igd+'")
        if quality in ("igd", "igd+") and reference_front is None:
            raise ValueError(f"quality={quality!r} needs reference_front=: points (K, {m}) of the known front")
        self.reference, self.reference_front, self.quality = reference, reference_front, quality
        # the tracked quality is maximised for the hypervolume, minimised for IGD
        self.maximize = quality == "hypervolume" if m > 1 else directions[0] == "max"

    @property
    def tracked(self):
        """What ``pareto.summary`` measures a population by: the hypervolume point, or a ``pareto.ReferenceFront``."""
        if self.quality in ("igd", "igd+"):
            return pareto.ReferenceFront(self.reference_front, self.quality == "igd+")
        return self.reference

    @property
    def signs(self):
        return tuple(DIRECTIONS[d] for d in self.directions)

    def __call__(self, population):
        out = self.evaluate(tf.convert_to_tensor(population))
        objectives, violation = out if isinstance(out, tuple) else (out, None)
        objectives = as_float32(self, objectives)
        if self.objectives == 1 and objectives.shape.rank == 1:
            objectives = objectives[:, None]
        if objectives.shape.rank != 2 or objectives.shape[1] != self.objectives:
            raise ValueError(f"{self!r} has {self.objectives} direction(s) {self.directions}, so it must return "
                             f"objectives of shape (N, {self.objectives}); it returned shape "
                             f"{tuple(objectives.shape)}: give one direction per objective")
        if violation is None:
            violation = tf.zeros_like(objectives[:, 0])
        violation = tf.cast(violation, tf.float32)
        if violation.shape.rank != 1 or violation.shape[0] != objectives.shape[0]:
            raise ValueError(f"{self!r}: the constraint violation must have one value per individual, shape "
                             f"({objectives.shape[0]},), got shape {tuple(violation.shape)}")
        return tf.concat([objectives, violation[:, None]], axis=1)

    def config(self):
        if self.reference_front is None:
            return {"directions": self.directions, "reference": self.reference}
        return {"directions": self.directions, "reference": self.reference, "reference_front": self.reference_front,
                "quality": self.quality}


class Objectives(MultiObjective):
    """Any TensorFlow callable population -> objectives (N, M), or (objectives, violation (N,)).

    ``Objectives(fn, directions=("min", "min"), reference=(1.1, 1.1))``; see ``MultiObjective``.
    """

    def __init__(self, fn: Callable, directions, reference=None, name: str | None = None, reference_front=None,
                 quality: str | None = None):
        if not callable(fn):
            raise TypeError(f"Objectives needs a callable population -> objectives, got {type(fn).__name__}")
        super().__init__(directions, reference, reference_front, quality)
        self.fn, self.name = fn, name or getattr(fn, "__name__", type(fn).__name__)

    def evaluate(self, population):
        return self.fn(population)

    def config(self):
        return {"fn": self.name, **super().config()}


def capacity_violation(population: tf.Tensor, weights, capacity: float) -> tf.Tensor:
    """float32 (N,): how far each genome's total ``weights`` exceeds ``capacity`` (a knapsack's limit)."""
    w = tf.constant(np.asarray(weights, np.float32))
    return tf.nn.relu(tf.linalg.matvec(_flat(population), w) - float(capacity))


def order_violation(population: tf.Tensor, pairs) -> tf.Tensor:
    """float32 (N,): the sum over (i, j) in ``pairs`` of how far gene i exceeds gene j (0 when every
    gene i <= gene j): bounds between genes as a constraint."""
    p = np.asarray(pairs, np.int64).reshape(-1, 2)
    x = _flat(population)
    return tf.reduce_sum(tf.nn.relu(tf.gather(x, p[:, 0], axis=1) - tf.gather(x, p[:, 1], axis=1)), axis=1)


def resolve(fitness, maximize: bool | None = None) -> Fitness:
    """A Fitness from a Fitness or a plain callable (which needs ``maximize``)."""
    if isinstance(fitness, Fitness):
        if maximize is not None and maximize != fitness.maximize:
            raise ValueError(f"{fitness!r} is {'maximised' if fitness.maximize else 'minimised'}; "
                             f"maximize={maximize} contradicts it")
        return fitness
    if callable(fitness):
        if maximize is None:
            raise ValueError("a plain fitness function does not say whether to maximise it: pass "
                             "compile(..., maximize=True or False) or evo.fitness.Function(fn, maximize=...)")
        return Function(fitness, maximize)
    raise TypeError(f"fitness must be an evo.fitness.Fitness or a callable, got {type(fitness).__name__}")
