"""Real-coded ops for bounded float genomes: simulated binary crossover and polynomial mutation (Deb's).

Both draw a child gene from a distribution around the parent gene(s) whose spread a
distribution index ``eta`` sets (larger: children nearer their parents), cut off at the
bounds [low, high] so that every child is inside them; the bounds are numbers or one per
gene. Random numbers are drawn per individual and gene (``course_lib.evo.rng``).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.evo import knobs, rng
from course_lib.evo.ops.base import Knob, Mating, Op, check_rate, genome_spec, paired_mates, partner_rows


def _bounds(op: str, low, high) -> tuple[tuple, tuple]:
    lo, hi = np.ravel(np.asarray(low, np.float64)), np.ravel(np.asarray(high, np.float64))
    if lo.size == 0 or hi.size == 0 or not np.all(np.isfinite(lo)) or not np.all(np.isfinite(hi)):
        raise ValueError(f"{op}: low and high must be finite numbers (or one per gene), got {low!r}, {high!r}")
    if not np.all(lo < hi):
        raise ValueError(f"{op} needs low < high for every gene, got low={low!r}, high={high!r}")
    return tuple(lo.tolist()), tuple(hi.tolist())


def _eta(op: str, eta, name: str = "eta") -> float:
    if isinstance(eta, bool) or not isinstance(eta, (int, float)) or not eta >= 0:
        raise ValueError(f"{op}: eta (the distribution index) must be a number >= 0, got {eta!r}")
    return float(eta)


class _Bounded(Op, register=False):
    """Bounds shared by the real-coded ops: checked against the genome, broadcast as tensors."""

    low: tuple  # set by the op's __init__ (``_bounds``)
    high: tuple

    @classmethod
    def example(cls, length):
        return cls(low=-5.0, high=5.0)  # type: ignore[call-arg]  # the ops built on it take low and high

    def check(self, *specs):
        return self.check_bounds(super().check(*specs))

    def check_bounds(self, spec):
        self.require(spec, "float")
        # again on each run: low and high can be set in place (``sbx.low = -2.0``)
        self.low, self.high = _bounds(type(self).__name__, self.low, self.high)
        for name, b in (("low", self.low), ("high", self.high)):
            if len(b) not in (1, spec.size):
                raise ValueError(f"{type(self).__name__}: {name} has {len(b)} values, but genomes have "
                                 f"{spec.size} genes; give one number or one per gene")
        return spec

    def limits(self, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        shape = (1, *x.shape[1:])
        lo = tf.constant(np.broadcast_to(np.reshape(self.low, (-1,)), (np.prod(shape),)).reshape(shape), x.dtype)
        hi = tf.constant(np.broadcast_to(np.reshape(self.high, (-1,)), (np.prod(shape),)).reshape(shape), x.dtype)
        return lo, hi


def _power(base: tf.Tensor, exponent: float) -> tf.Tensor:
    return tf.pow(tf.maximum(base, 0.0), exponent)


class SimulatedBinaryCrossover(_Bounded, Mating):
    """Simulated binary crossover (Deb and Agrawal): a child gene spread around its two parents' genes.

    For parent genes y1 < y2 the two children are (y1 + y2)/2 -/+ beta (y2 - y1)/2, with the spread
    factor beta drawn so that, far from the bounds, its density is (eta + 1)/2 beta^eta below 1
    and (eta + 1)/2 beta^-(eta + 2) above, and near a bound cut off at it (Deb's bounded form).
    On one population the parents are random pairs (``paired_mates``) and each pair's two children
    share their draws: per gene one beta, one coin for which child takes which value, one pick of
    whether the gene is crossed (``gene_rate``, 1/2 as in Deb's code), so the two children sit
    symmetrically about their parents, as in Deb's and pymoo's code. (Drawn apart, children of random
    mates converge measurably worse on DTLZ: ``docs/performance.md``.) With a second input the mate
    is any row of it and each child draws alone. A pair is crossed with ``probability``.
    """

    genes = "float"
    eta, gene_rate = Knob(_eta), Knob(check_rate)

    def __init__(self, low, high, eta: float = 15.0, probability: float = 0.9, gene_rate: float = 0.5,
                 name: str | None = None):
        super().__init__(probability, name)
        self.low, self.high = _bounds(type(self).__name__, low, high)
        self.eta, self.gene_rate = eta, gene_rate

    def knobs(self, spec):
        base, dtype = super().knobs(spec), spec.dtype.as_numpy_dtype
        # each in the genes' dtype, computed in Python as the constants it replaces were
        return knobs.Knobs(base.structure, {**base.values, "gene_rate": np.asarray(self.gene_rate, dtype),
                                            "tail": np.asarray(-(self.eta + 1.0), dtype),
                                            "root": np.asarray(1.0 / (self.eta + 1.0), dtype)})

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        if len(inputs) == 1:
            mate, draws, second = paired_mates(inputs[0], rng.fold_in(key, 1), rows)
        else:
            mate, draws, second = partner_rows(inputs, rng.fold_in(key, 1), rows), rows, None
        lo, hi = self.limits(x)
        shape = tuple(x.shape[1:])
        u = tf.cast(rng.uniform(rng.fold_in(key, 2), draws, (3, *shape)), x.dtype)
        values = self.knob_values(genome_spec(inputs[0]))
        y1, y2 = tf.minimum(x, mate), tf.maximum(x, mate)
        gap = y2 - y1
        safe = tf.where(gap > 1e-14, gap, 1.0)
        e = values["root"]

        def spread(beta):  # Deb's bounded inverse CDF of the spread factor
            alpha = 2.0 - _power(beta, values["tail"])
            ua = u[:, 0] * alpha
            return tf.where(u[:, 0] <= 1.0 / alpha, _power(ua, e), _power(1.0 / (2.0 - ua), e))

        c1 = 0.5 * (y1 + y2 - spread(1.0 + 2.0 * (y1 - lo) / safe) * gap)
        c2 = 0.5 * (y1 + y2 + spread(1.0 + 2.0 * (hi - y2) / safe) * gap)
        low_child = u[:, 1] < 0.5  # the first of a pair takes c1 here, the second c2
        if second is not None:
            low_child = low_child != tf.reshape(second, (rows.size,) + (1,) * len(shape))
        child = tf.clip_by_value(tf.where(low_child, c1, c2), lo, hi)
        take = (u[:, 2] < values["gene_rate"]) & (gap > 1e-14)
        crossed = self.crossed(key, draws, genome_spec(inputs[0]))
        if crossed is not None:
            take &= tf.reshape(crossed, (rows.size,) + (1,) * len(shape))
        return tf.where(take, child, x)

    def config(self):
        return {"eta": self.eta, **super().config()}


class PolynomialMutation(_Bounded, Op):
    """Polynomial mutation (Deb's bounded form): each gene picked with probability ``rate`` (default
    1/genes) moves by delta (high - low), delta drawn with density proportional to
    (1 - |delta|)^eta, cut off so that the gene stays in [low, high]. An individual is mutated at all
    with ``probability`` (default 1; pymoo's ``PM`` uses 0.9): the others pass through unchanged, which
    near the front keeps some children as close to it as their crossover put them."""

    genes = "float"
    eta, rate = Knob(_eta), Knob(lambda op, rate, name: None if rate is None else check_rate(op, rate, name))
    probability = Knob(check_rate)

    def __init__(self, low, high, eta: float = 20.0, rate: float | None = None, probability: float = 1.0,
                 name: str | None = None):
        super().__init__(name)
        self.low, self.high = _bounds(type(self).__name__, low, high)
        self.eta, self.rate, self.probability = eta, rate, probability

    def knobs(self, spec):
        dtype = spec.dtype.as_numpy_dtype
        rate = self.rate if self.rate is not None else 1.0 / spec.size
        # each in the genes' dtype, computed in Python as the constants it replaces were; probability 1
        # mutates every individual with no draw: another structure
        return knobs.merged((self.probability >= 1.0,), rate=np.asarray(rate, dtype),
                            power=np.asarray(self.eta + 1.0, dtype), root=np.asarray(1.0 / (self.eta + 1.0), dtype),
                            probability=np.float32(self.probability))

    def apply(self, inputs, key, rows):
        x = rows.take(inputs[0])
        lo, hi = self.limits(x)
        shape = tuple(x.shape[1:])
        values = self.knob_values(genome_spec(inputs[0]))
        u = tf.cast(rng.uniform(rng.fold_in(key, 5), rows, (2, *shape)), x.dtype)
        width = hi - lo
        d1, d2 = (x - lo) / width, (hi - x) / width
        r, p, root = u[:, 0], values["power"], values["root"]
        below = _power(2.0 * r + (1.0 - 2.0 * r) * _power(1.0 - d1, p), root) - 1.0
        above = 1.0 - _power(2.0 * (1.0 - r) + 2.0 * (r - 0.5) * _power(1.0 - d2, p), root)
        y = tf.clip_by_value(x + tf.where(r < 0.5, below, above) * width, lo, hi)
        picked = u[:, 1] < values["rate"]
        if self.probability < 1.0:
            mutated = rng.uniform(rng.fold_in(key, 6), rows, ()) < values["probability"]
            picked &= tf.reshape(mutated, (rows.size,) + (1,) * len(shape))
        return tf.where(picked, y, x)

    def config(self):
        out = {"eta": self.eta, "rate": self.rate}
        return {**out, "probability": self.probability} if self.probability < 1.0 else out
