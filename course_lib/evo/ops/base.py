"""What every variation op shares: the layer-like call, input checks, partner choice, the registry.

An op is pure: ``apply(inputs, key, rows)`` maps full input populations to the
children of ``rows`` using only tensor code (gathers, masks, ``where``), so the same
op runs eagerly, in a ``tf.function`` and under XLA, on the whole population or on a
batch of rows, with the same random numbers (see ``course_lib.evo.rng``).

A new op is one class: a public subclass of ``Op`` registers itself in ``REGISTRY`` when its
module is imported, and ``evo.ops.registry()``, ``evo.ops.<Name>``, ``course bench ops`` and the
op tests all read that one table.
"""

from __future__ import annotations

import collections
import re
import secrets
from typing import Any

import numpy as np
import tensorflow as tf

from course_lib.evo import knobs as knobs_lib
from course_lib.evo import rng
from course_lib.evo.config import Checked, constructor_config
from course_lib.evo.fusion import materialize
from course_lib.evo.rng import Rows
from course_lib.evo.symbolic import GenomeSpec, SymbolicTensor, check_binary, check_gene_dtype, connect


def check_rate(op: str, rate: Any, name: str = "rate") -> float:
    """A probability in [0, 1], or a clear error."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.floating, np.integer)):
        raise TypeError(f"{op}: {name} must be a number in [0, 1], got {rate!r}")
    if not 0.0 <= float(rate) <= 1.0:
        raise ValueError(f"{op}: {name} must be in [0, 1] (a probability), got {rate}")
    return float(rate)


class Knob(Checked):
    """An op's scalar setting (``rate``, ``probability``, ``stddev``, ``eta``), checked by
    ``check(op_name, value, name)`` whenever it is set: at construction and between runs. Its program
    reads it at run time (``Op.knobs``), so a new value compiles again only where it changes the
    program's structure."""


# Every public op class by name, filled as op modules are imported (``evo.ops.registry()`` imports them all).
REGISTRY: dict[str, type["Op"]] = {}


class Op:
    """A variation operator used like a Keras layer.

    Called on a symbolic genome (from ``evo.Input``) it adds a node to the graph;
    called on a population (tensor or NumPy array, shape (N, *genome)) it runs now,
    with random numbers from ``seed``; without a seed each call draws fresh ones (as a
    Keras random layer does), so applying an op twice is two different draws.

    A subclass registers itself under its class name unless the name starts with ``_`` or it
    is declared with ``register=False`` (a public base class such as ``Crossover``); one defined in
    a notebook or script (``__main__``) registers too, so that its models save and load there and in
    a new process that defines it again.
    """

    arity: tuple[int, int] = (1, 1)  # how many input populations it accepts (min, max)
    packable = False  # has ``apply_packed`` for bit-packed 0/1 genomes
    permutation = False  # needs each genome to be a permutation of 0..L-1
    genes = "binary"  # the population ``example`` works on: "binary", "integer", "float" or "permutation"
    binary = False  # needs every gene to be 0 or 1 (checked on each population it runs on)
    _names: collections.Counter = collections.Counter()

    def __init_subclass__(cls, register: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        if not register or cls.__name__.startswith("_"):
            return
        taken = REGISTRY.get(cls.__name__)
        if cls.__module__ == "__main__" or (taken is not None and taken.__module__ == "__main__"):
            # a notebook's or script's op registers so that its models load; an imported class of the same
            # name wins (a module run with ``python -m`` defines its classes again as __main__), and
            # ``save_model`` refuses a __main__ op whose name an imported one holds
            if taken is None or taken.__module__ == "__main__" or cls.__module__ != "__main__":
                REGISTRY[cls.__name__] = cls
            return
        if taken is not None and taken.__module__ != cls.__module__:  # same module: a reload replaces it
            raise TypeError(f"op name {cls.__name__!r} is taken by {taken.__module__}.{taken.__qualname__}; "
                            f"give {cls.__module__}.{cls.__qualname__} another name")
        REGISTRY[cls.__name__] = cls

    @classmethod
    def example(cls, length: int) -> "Op":
        """A typical instance for genomes of ``length`` genes of kind ``genes`` (what ``course bench ops``
        and the op tests run). Default: the constructor's defaults; override where it needs arguments."""
        return cls()

    def __init__(self, name: str | None = None):
        base = re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()
        count = Op._names[base]
        Op._names[base] += 1
        self.name = name or (base if count == 0 else f"{base}_{count}")

    # -- the layer-like call -------------------------------------------------------------
    def __call__(self, *inputs, seed: int | None = None):
        lo, hi = self.arity
        if not lo <= len(inputs) <= hi:
            want = str(lo) if lo == hi else f"{lo} or {hi}"
            raise TypeError(f"{type(self).__name__} takes {want} population(s), got {len(inputs)}")
        symbolic = [isinstance(x, SymbolicTensor) for x in inputs]
        if all(symbolic):
            return connect(self, tuple(inputs), self.check(*[x.spec for x in inputs]))
        if any(symbolic):
            raise TypeError(f"{type(self).__name__}: inputs mix symbolic genomes (from evo.Input) "
                            "and concrete populations; pass one kind")
        tensors = [tf.convert_to_tensor(x) for x in inputs]
        for t in tensors:
            check_gene_dtype(type(self).__name__, t.dtype)
            if len(t.shape) < 2:
                raise ValueError(f"{type(self).__name__}: a population needs shape (individuals, "
                                 f"*genome), got shape {tuple(t.shape)}; for one genome use x[None]")
        if len({t.shape[0] for t in tensors}) > 1:
            raise ValueError(f"{type(self).__name__}: input populations differ in size: "
                             f"{[t.shape[0] for t in tensors]}")
        if tensors[0].shape[0] == 0:
            raise ValueError(f"{type(self).__name__}: the population is empty (shape {tuple(tensors[0].shape)}); "
                             "it needs at least one individual")
        self.check(*[GenomeSpec(tuple(t.shape[1:]), t.dtype) for t in tensors])
        if self.binary:
            for t in tensors:
                check_binary(type(self).__name__, t)
        key = rng.key(secrets.randbits(64) if seed is None else seed)
        return self.apply(tensors, key, Rows.all(tensors[0].shape[0]))

    # -- what subclasses define ----------------------------------------------------------
    def check(self, *specs: GenomeSpec) -> GenomeSpec:
        """Validate the input genomes; return the output genome. Default: all alike, unchanged."""
        first = specs[0]
        for s in specs[1:]:
            if s != first:
                raise ValueError(f"{type(self).__name__}: its inputs must have the same genome, "
                                 f"got {first} and {s}")
        return first

    def apply(self, inputs: list[tf.Tensor], key: tf.Tensor, rows: Rows) -> tf.Tensor:
        """Children for ``rows`` from the full input populations."""
        raise NotImplementedError

    def apply_packed(self, inputs: list[tf.Tensor], key: tf.Tensor, rows: Rows,
                     spec: GenomeSpec) -> tf.Tensor:
        """``apply`` on bit-packed words (N, W) of 0/1 genomes (only when ``packable``)."""
        raise NotImplementedError

    def attach(self, fitness) -> None:
        """Called by ``Model.compile`` with the compiled fitness, for ops that need the problem's data
        (e.g. a local search reading ``evo.fitness.TSP``'s distances). Default: nothing."""

    def attached(self, fitness) -> bool:
        """Whether the problem data this op holds is ``fitness``'s, as it is now. ``evolve`` attaches
        again (and compiles again) when it is not: the op is shared with another model, or the
        fitness loaded another instance. Default: True (an op that holds no data)."""
        return True

    def knobs(self, spec: GenomeSpec) -> knobs_lib.Knobs:
        """What this op's program reads at run time for genomes ``spec`` (``evo.knobs``): its rates and
        what derives from them, and the structure they imply. Default: nothing."""
        return knobs_lib.Knobs()

    def settings(self) -> tuple:
        """The op's parameters that are constants of its program (every one but its ``Knob``s), exactly:
        part of a program's key, so that changing one compiles again instead of running the old value."""
        knob_names = {n for cls in type(self).__mro__ for n, v in vars(cls).items() if isinstance(v, Knob)}
        try:
            config = self.get_config()
        except TypeError:  # an op that stores a parameter under another name: all it holds
            config = {k: v for k, v in vars(self).items() if not k.startswith("_") and k != "name"}
        return tuple((k, repr(v)) for k, v in sorted(config.items()) if k not in knob_names)

    def knob_values(self, spec: GenomeSpec) -> dict[str, tf.Tensor]:
        """``knobs(spec)``'s values as tensors: read from variables inside a model's program, else constants."""
        return knobs_lib.tensors(self, spec, self.knobs(spec))

    def config(self) -> dict:
        """The op's parameters worth showing, for ``repr`` and ``Model.summary`` (floats shown to 4 digits)."""
        return {}

    def get_config(self) -> dict:
        """The constructor's arguments, exact, so that ``type(op)(**op.get_config())`` is the same op.

        What a checkpoint compares to recognise its model (``repr`` rounds) and what ``Model.save``
        writes. ``name`` is left out: it does not change the children and is numbered per process.
        Each value is read from the attribute named as the parameter; an op that stores a parameter
        otherwise overrides this.
        """
        return constructor_config(self)

    @classmethod
    def from_config(cls, config: dict) -> "Op":
        """The op ``get_config`` describes (``evo.load_model`` calls it)."""
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={_fmt(v)}" for k, v in self.config().items())
        return f"{type(self).__name__}({args})"

    # -- checks shared by subclasses -------------------------------------------------------
    def require(self, spec: GenomeSpec, kind: str) -> None:
        """Raise TypeError unless the genome dtype is of ``kind`` ('integer' or 'float')."""
        ok = spec.dtype.is_integer if kind == "integer" else spec.dtype.is_floating
        if not ok:
            hint = ("cast the population, or use GaussianMutation for float genomes"
                    if kind == "integer" else "use BitFlipMutation or RandomValueMutation for integer genomes")
            raise TypeError(f"{type(self).__name__} needs {kind} genomes, got dtype "
                            f"{spec.dtype.name}; {hint}")


class Mating(Op, register=False):
    """An op that crosses each child with a mate, with probability ``probability`` per child.

    A child that is not crossed is a copy of its parent (to be mutated by later ops), as in
    the textbook GA's crossover probability; the default 1.0 crosses every child.
    """

    arity = (1, 2)
    probability = Knob(check_rate)

    def __init__(self, probability: float = 1.0, name: str | None = None):
        super().__init__(name)
        self.probability = probability

    def knobs(self, spec):
        # probability 1 crosses every child with no draw: another structure
        return knobs_lib.merged((self.probability >= 1.0,), probability=np.float32(self.probability))

    def crossed(self, key: tf.Tensor, rows: Rows, spec: GenomeSpec) -> tf.Tensor | None:
        """bool (B,): which children of genomes ``spec`` are crossed; None when all are."""
        if self.probability >= 1.0:
            return None
        return rng.uniform(rng.fold_in(key, 3), rows, ()) < self.knob_values(spec)["probability"]

    def config(self) -> dict:
        return {"probability": self.probability} if self.probability < 1.0 else {}


def genome_spec(population: tf.Tensor) -> GenomeSpec:
    """The genome of a population (N, *genome): what an op's knobs are kept for."""
    return GenomeSpec(tuple(population.shape[1:]), population.dtype)


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else repr(v)


def partner_rows(inputs: list[tf.Tensor], key: tf.Tensor, rows: Rows) -> tf.Tensor:
    """Each child's mate, chosen per individual.

    With one input the mate is another individual of the same population (never itself);
    with two inputs it is any individual of the second.
    """
    n = rows.total
    if len(inputs) == 2:
        return tf.gather(inputs[1], materialize(rng.integers(key, rows, (), n), key))
    if n == 1:
        return inputs[0]
    offset = rng.integers(key, rows, (), n - 1) + 1
    # pinned: XLA would otherwise fuse the index's arithmetic into the gather and redo it for every gene
    return tf.gather(inputs[0], materialize((rows.index() + offset) % n, key))


def paired_mates(population: tf.Tensor, key: tf.Tensor, rows: Rows) -> tuple[tf.Tensor, Rows, tf.Tensor]:
    """The population shuffled once per generation and cut into pairs, each pair the two parents of two
    children, as in Deb's and pymoo's simulated binary crossover: (each row's mate, ``rng.Picked`` rows
    that key the draws a pair's two children share, bool (B,) whether a row is its pair's second). Every
    individual is a parent once; in an odd population the last of the shuffle mates with the first and has
    its pair's draws to itself. The shuffle is drawn for the whole population, so every batch agrees."""
    n = rows.total
    order = tf.argsort(rng.uniform(key, Rows.all(n), ()), stable=True)
    slot = tf.gather(tf.math.invert_permutation(order), rows.index())  # each row's place in it
    mate = materialize(tf.gather(order, (slot ^ 1) % n), key)
    return tf.gather(population, mate), rng.Picked(0, rows.size, (n + 1) // 2, slot // 2), slot % 2 > 0
