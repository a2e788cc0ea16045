"""Selection: which individuals of the pool form the next population.

A selection maps scores (fitness signed so that higher is better) to indices into
its pool: the children (Tournament, Rank) or parents and children together
(Elitist, mu + lambda). It returns indices, not genomes, so the same code selects
packed and unpacked populations.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import rng
from course_lib.evo.rng import Rows


class Selection:
    """Base class: ``pool`` is 'children' or 'both' (parents then children)."""

    pool = "children"

    def select(self, score: tf.Tensor, key: tf.Tensor, n: int) -> tf.Tensor:
        """int32 (n,): indices into the pool (higher score is better)."""
        raise NotImplementedError

    def check(self, pool_size: int, n: int) -> None:
        """Raise a clear error if this selection cannot pick ``n`` from ``pool_size``."""

    def config(self) -> dict:
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.config().items())})"


class Tournament(Selection):
    """Each slot goes to the best of ``size`` children drawn at random (with replacement)."""

    def __init__(self, size: int = 2):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"Tournament size must be a whole number >= 1, got {size!r}")
        self.size = size

    def check(self, pool_size, n):
        if self.size > pool_size:
            raise ValueError(f"Tournament size {self.size} is larger than the pool of {pool_size} "
                             "individuals; use a smaller size or a larger population")

    def select(self, score, key, n):
        entrants = rng.integers(key, Rows.all(n), (self.size,), score.shape[0])
        winner = tf.argmax(tf.gather(score, entrants), axis=1, output_type=tf.int32)
        return tf.gather(entrants, winner, batch_dims=1)

    def config(self):
        return {"size": self.size}


class Elitist(Selection):
    """mu + lambda: the best ``n`` of parents and children together, so the best is never lost."""

    pool = "both"

    def select(self, score, key, n):
        return tf.math.top_k(score, k=n, sorted=False).indices


class Rank(Selection):
    """Linear ranking: the worst child is drawn with weight 2 - pressure, the best with ``pressure``.

    Only the order of fitness values matters, so it works for minimised and negative fitness,
    unlike a roulette wheel.
    """

    def __init__(self, pressure: float = 1.5):
        if isinstance(pressure, bool) or not isinstance(pressure, (int, float)) or not 1.0 <= pressure <= 2.0:
            raise ValueError(f"Rank pressure must be in [1, 2] (1: uniform, 2: strongest), got {pressure!r}")
        self.pressure = float(pressure)

    def select(self, score, key, n):
        m = score.shape[0]
        order = tf.argsort(score, stable=True)  # worst first
        r = tf.range(m, dtype=tf.float32) / max(m - 1, 1)
        weight = (2.0 - self.pressure) + 2.0 * (self.pressure - 1.0) * r
        cdf = tf.math.cumsum(weight) / tf.reduce_sum(weight)
        u = rng.uniform(key, Rows.all(n), ())
        pick = tf.minimum(tf.searchsorted(cdf, u, side="right"), m - 1)
        return tf.gather(order, pick)

    def config(self):
        return {"pressure": self.pressure}
