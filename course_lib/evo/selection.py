"""Selection: which individuals of the pool form the next population.

A selection maps scores (fitness signed so that higher is better, see ``score``) to
indices into its pool: the children (Tournament, Rank) or parents and children
together (Elitist, mu + lambda; or any selection with ``elitism``). It returns indices,
not genomes, so the same code selects packed and unpacked populations.

The engine makes one call, ``Selection.survivors(pool, n, state)``: the ``Pool`` (fitness, the
key, which rows are parents, the genomes when the selection reads them) and the state the
selection carried from the previous generation (``initial_state`` before the first), a tf.nest
structure that the run checkpoints by name.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from course_lib.evo import distinct, nsga3, pareto, rng
from course_lib.evo.config import Checked, Configurable, state_fingerprint
from course_lib.evo.rng import Rows
from course_lib.evo.tours import distance_bytes, tour_distances
from course_lib.evo.validation import whole


def score(fitness: tf.Tensor, sign: float) -> tf.Tensor:
    """Fitness signed so that higher is better, with NaN as -inf: the worst, in every mode.

    Why: argmax and comparisons with NaN differ between TensorFlow's kernels and XLA (XLA's
    argmax picks the NaN), so without this a NaN could win tournaments or become the best.
    An infinity of the wrong sign is already -inf after the sign. Values (N, M + 1) of a
    ``MultiObjective`` fitness (``sign``: one per objective) score by their place in
    ``pareto.order``: feasibility, violation, front, crowding.
    """
    if isinstance(sign, tuple):  # objectives and a violation per row: Deb's rules, NSGA-II's order
        return pareto.quality(fitness, sign)
    s = sign * tf.cast(fitness, tf.float32)
    return tf.where(tf.math.is_nan(s), tf.constant(-np.inf, tf.float32), s)


class Pool(NamedTuple):
    """What a selection chooses from, as the engine hands it over (``Selection.survivors``)."""

    fitness: tf.Tensor  # (P,), or (P, M + 1) for a MultiObjective fitness
    signs: Any  # 1.0 to maximise, -1.0 to minimise; a tuple, one per objective, for a MultiObjective fitness
    key: tf.Tensor  # the selection's key for this generation
    parents: np.ndarray | None = None  # bool (P,): the parents' rows, when the pool holds them (``pool`` "both")
    genomes: tf.Tensor | None = None  # the pool's genomes, unpacked, when the selection reads them (``reads_genomes``)


def _whole(minimum: int):
    """A ``Checked`` attribute's check: a whole number >= ``minimum``, named "<Class> <attribute>"."""
    return lambda owner, value, name: whole(f"{owner} {name}", value, minimum)


class Selection(Configurable):
    """Base class: ``pool`` is 'children' or 'both' (parents then children).

    ``elitism=k`` copies the k best parents into the next population unchanged and fills
    the other slots by this selection from the children, so the best is never lost.

    The engine calls ``survivors(pool, n, state)``; a subclass defines ``select(score, key, n)``, and
    overrides ``survivors`` instead when it ranks the whole pool at once, reads the genomes
    (``reads_genomes``) or carries a state from one generation to the next (``initial_state``).

    Parameters can be set in place after ``compile`` (``selection.elitism = 2``): they are checked
    when set, and the next run compiles with them (``Model.program``).
    """

    elitism = Checked(_whole(0))
    reads_genomes = False  # whether ``survivors`` needs the pool's genomes (``Pool.genomes``), not only their fitness

    def __init__(self, elitism: int = 0):
        self.elitism = elitism

    @property
    def distinct_children(self) -> bool:
        """Whether children that copy a pool row are drawn again before they are scored (``Generation.vary``)."""
        return False

    @property
    def pool(self) -> str:
        """Where selection chooses from: 'both' (parents then children) with elitism, else 'children'; a
        mu + lambda selection (``Elitist``, ``NSGA2``) sets 'both' on its class."""
        return "both" if self.elitism else "children"

    def settings(self) -> tuple:
        """Everything this selection holds, exactly: part of its programs' key (``config.state_fingerprint``)."""
        return state_fingerprint(self)

    def select(self, score: tf.Tensor, key: tf.Tensor, n: int) -> tf.Tensor:
        """int32 (n,): indices into the scores (higher score is better)."""
        raise NotImplementedError

    def initial_state(self, objectives: int) -> Any:
        """What this selection carries from one generation to the next before the first: a tf.nest structure
        of NumPy arrays (a NamedTuple or dict names its parts in a checkpoint); most carry nothing, ()."""
        return ()

    def survivors(self, pool: Pool, n: int, state: Any) -> tuple[tf.Tensor, Any]:
        """(int32 (n,) the pool rows that form the next population, the state carried to the next generation):
        the one call the engine makes. ``state`` is what the previous generation returned (``initial_state``
        before the first). Here: with ``elitism`` the best parents first, the other slots by ``select`` from
        the children, else every slot by ``select`` from the pool; the state passes through."""
        s = score(pool.fitness, pool.signs)
        if not self.elitism:
            return self.select(s, pool.key, n), state
        if pool.parents is None:
            raise ValueError(f"{type(self).__name__} with elitism needs the parents' rows of the pool: pass "
                             "Pool(parents=...), a bool mask over the pool")
        parent_rows = tf.constant(np.flatnonzero(pool.parents), tf.int32)
        child_rows = tf.constant(np.flatnonzero(~pool.parents), tf.int32)
        elite = tf.gather(parent_rows, tf.math.top_k(tf.gather(s, parent_rows), k=self.elitism).indices)
        rest = self.select(tf.gather(s, child_rows), pool.key, n - self.elitism)
        return tf.concat([elite, tf.gather(child_rows, rest)], 0), state

    def check(self, pool_size: int, n: int) -> None:
        """Raise a clear error if this selection cannot pick ``n`` from a pool of ``pool_size``
        (which includes the ``n`` parents when ``pool`` is 'both')."""
        if self.elitism >= n:
            raise ValueError(f"{self!r} keeps {self.elitism} parents, which leaves no slot for children "
                             f"in a population of {n}; use elitism < {n}")
        self.check_candidates(pool_size - n if self.elitism else pool_size)

    def check_fitness(self, fitness) -> None:
        """Raise a clear error if this selection cannot rank ``fitness``'s values."""
        if fitness.objectives > 1:
            raise ValueError(f"{self!r} ranks one objective, but {fitness!r} has {fitness.objectives}; use "
                             "evo.selection.NSGA2() (non-dominated front, then crowding distance)")

    def check_genomes(self, spec) -> None:
        """Raise a clear error if this selection cannot read genomes of ``spec`` (the model's Input, a
        ``GenomeSpec``): called by ``Model.compile``, so a mismatch is found before any run."""

    def check_candidates(self, candidates: int) -> None:
        """Raise a clear error if ``select`` cannot pick from ``candidates`` rows."""

    def config(self) -> dict:
        return {"elitism": self.elitism} if self.elitism else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.config().items())})"


class Tournament(Selection):
    """Each slot goes to the best of ``size`` children drawn at random (with replacement)."""

    size = Checked(_whole(1))

    def __init__(self, size: int = 2, elitism: int = 0):
        self.size = size
        super().__init__(elitism)

    def check_candidates(self, candidates):
        if self.size > candidates:
            among = (f"the {candidates} children that fill the slots elitism={self.elitism} leaves" if self.elitism
                     else f"the pool of {candidates} individuals")
            raise ValueError(f"Tournament size {self.size} is larger than {among}; use a smaller size or a "
                             "larger population")

    def select(self, score, key, n):
        entrants = rng.integers(key, Rows.all(n), (self.size,), score.shape[0])
        winner = tf.argmax(tf.gather(score, entrants), axis=1, output_type=tf.int32)
        return tf.gather(entrants, winner, batch_dims=1)

    def config(self):
        return {"size": self.size, **super().config()}


class Elitist(Selection):
    """mu + lambda: the best ``n`` of parents and children together, so the best is never lost.

    ``eliminate_duplicates``: a pool row whose fitness equals an earlier row's ranks below every
    other row, so copies survive only when the distinct values are fewer than ``n``. Without it a small
    population of a memetic GA fills with copies of its best tour (the local search sends many children
    to the same local optimum) and stops searching; with it, ties in fitness cost a distinct row its place.
    """

    pool = "both"

    def __init__(self, eliminate_duplicates: bool = False):
        super().__init__(0)
        if not isinstance(eliminate_duplicates, bool):
            raise ValueError(f"Elitist eliminate_duplicates must be True or False, got {eliminate_duplicates!r}")
        self.eliminate_duplicates = eliminate_duplicates

    def select(self, score, key, n):
        if self.eliminate_duplicates:
            score = tf.where(distinct.repeated(score), tf.constant(-np.inf, score.dtype), score)
        return tf.math.top_k(score, k=n, sorted=False).indices

    def config(self):
        return {"eliminate_duplicates": True} if self.eliminate_duplicates else {}


class Clearing(Selection):
    """mu + lambda on tours with clearing (Pétrowski 1996, with a niche capacity of one): the pool's tours
    taken best first, each one a niche's winner unless it lies within ``radius`` edges (``tour_distances``)
    of a winner before it, which clears it; winners rank first, by length, then the cleared tours, by
    length (ties go to the earlier row), and the best ``n`` of that order survive. Only winners clear: with
    A < B < C, A and B near, B and C near, A and C far, A clears B and C stays, since B, cleared, clears
    nothing. A child that improves on a tour it barely differs from takes its place; tours far apart both
    stay, however their lengths compare. A memetic GA's small population otherwise converges onto one tour
    and its near copies (the local search sends children of similar parents to neighbouring local optima),
    and then the crossover has nothing left to recombine.

    Reads the pool's tours (``reads_genomes``): integer permutation genomes only, checked at ``Model.compile``
    (``check_genomes``). Costs O(P² L) per generation for a pool of P tours of L cities
    (``tours.distance_bytes``), refused past ``max_bytes``: meant for the small populations of a memetic GA
    (a pool of 64 tours of 1,000 cities: about 25 MB).
    The pass best first is sequential by definition (a winner depends on the winners before it): one
    ``tf.while_loop`` of P steps over (P,) flags, on every target.
    """

    pool = "both"
    reads_genomes = True
    radius = Checked(_whole(1))
    max_bytes = 1 << 30  # what one generation's pairwise comparison may hold at once

    def __init__(self, radius: int = 6):
        super().__init__(0)
        self.radius = radius

    def check_genomes(self, spec):
        if not spec.dtype.is_integer or len(spec.shape) != 1:
            raise ValueError(f"{self!r} compares tours edge by edge: it needs integer permutation genomes of one "
                             f"axis, got genomes {spec}; for other genomes use Elitist(eliminate_duplicates=True)")

    def survivors(self, pool, n, state):
        if pool.genomes is None:
            raise ValueError(f"{self!r} compares the pool's tours: pass them as Pool(genomes=...)")
        m, length = pool.genomes.shape
        if distance_bytes(m, length) > self.max_bytes:
            raise ValueError(f"{self!r} compares every pair of a pool of {m} tours of {length} cities, which "
                             f"holds about {distance_bytes(m, length) / 2**20:,.3g} MiB at once, past its budget "
                             f"of {self.max_bytes / 2**20:,.3g} MiB: evolve a smaller population (the pool is "
                             "parents and children), or raise Clearing.max_bytes where the memory is there")
        order = tf.argsort(-score(pool.fitness, pool.signs), stable=True)  # best first, ties to the earlier row
        near = tf.gather(tf.gather(tour_distances(pool.genomes) < self.radius, order), order, axis=1)

        def visit(i, winner):  # the i-th best wins unless a winner before it is near
            return i + 1, tf.tensor_scatter_nd_update(winner, [[i]], [~tf.reduce_any(near[i] & winner)])

        _, winner = tf.while_loop(lambda i, _: i < m, visit, (tf.constant(0), tf.zeros((m,), tf.bool)))
        ranked = tf.argsort(tf.cast(~winner, tf.int32), stable=True)  # winners, then the cleared, each by length
        return tf.gather(order, ranked[:n]), state

    def config(self):
        return {"radius": self.radius}


def _pressure(pressure) -> float:
    if isinstance(pressure, bool) or not isinstance(pressure, (int, float, np.integer, np.floating)) or \
            not 1.0 <= pressure <= 2.0:
        raise ValueError(f"Rank pressure must be in [1, 2] (1: uniform, 2: strongest), got {pressure!r}")
    return float(pressure)


class Rank(Selection):
    """Linear ranking: the worst child is drawn with weight 2 - pressure, the best with ``pressure``.

    Only the order of fitness values matters, so it works for minimised and negative fitness,
    unlike a roulette wheel.
    """

    pressure = Checked(lambda owner, pressure, name: _pressure(pressure))

    def __init__(self, pressure: float = 1.5, elitism: int = 0):
        self.pressure = pressure
        super().__init__(elitism)

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
        return {"pressure": self.pressure, **super().config()}


class NSGA2(Selection):
    """mu + lambda by NSGA-II: parents and children ranked by Deb's rules into non-dominated fronts,
    within a front by crowding distance (larger first), the best ``n`` kept.

    One batched tensor program over the pool (``course_lib.evo.pareto``): for a pool of P with
    M >= 3 objectives, O(M P²) comparisons for the dominance matrix, then one pass over it per
    front until ``n`` rows are ranked; for two objectives, one lexicographic sort and one running
    minimum per front (O(P log P) each), the same ranks; no random numbers. A single objective
    works too (Deb's rules, then the objective).
    """

    pool = "both"

    def __init__(self):
        super().__init__(0)

    def check_fitness(self, fitness):
        pass

    def survivors(self, pool, n, state):
        fitness, signs = pool.fitness, pool.signs
        if len(fitness.shape) == 1:  # one objective, feasible: Deb's rules order by the objective
            fitness, signs = tf.stack([fitness, tf.zeros_like(fitness)], 1), (signs,)
        return pareto.order(fitness, signs, until=n)[:n], state


class NSGA3(Selection):
    """mu + lambda by NSGA-III (Deb and Jain 2014): parents and children ranked into fronts by Deb's
    rules as in NSGA2; the front that overflows ``n`` is cut by reference directions instead of
    crowding distance: normalized objectives, each row associated with its nearest direction, the
    least crowded directions served first (``course_lib.evo.nsga3``). For four objectives and more,
    where nearly every row is non-dominated and crowding distance no longer spreads the front.

    Args:
        partitions: Das-Dennis partitions: an int p (one layer) or a pair (boundary, inside) for two
            layers; by default Deb and Jain's choice for the population size (``nsga3.default_partitions``).
        directions: reference directions (H, M) instead, each row non-negative and not all zero.
        eliminate_duplicates: (False by default; pymoo's NSGA3 defaults to True) a child that copies a
            parent or an earlier child (gene for gene) is drawn again before it is scored, as pymoo does,
            so no evaluation is spent on a copy (``executors.Generation.vary``); a pool row whose objectives
            and violation still equal an earlier row's ranks after every other row, so it survives only
            when the distinct rows are fewer than the population (``nsga3.survivors_and_state``).

    The normalization's ideal point, worst point and extreme points are carried from one generation to
    the next (Blank, Deb and Roy 2019; ``nsga3.normalize``), checkpointed and resumed with the run.
    Ties between equally crowded directions, and the random picks within a crowded direction,
    come from the engine's counter-based keys for each pool row.
    """

    pool = "both"

    def __init__(self, partitions=None, directions=None, eliminate_duplicates: bool = False):
        super().__init__(0)
        if not isinstance(eliminate_duplicates, bool):
            raise ValueError(f"NSGA3 eliminate_duplicates must be True or False, got {eliminate_duplicates!r}")
        self.eliminate_duplicates = eliminate_duplicates
        if partitions is not None and directions is not None:
            raise ValueError("NSGA3 takes partitions= or directions=, not both")
        if directions is not None:
            directions = np.asarray(directions, np.float64)
            if directions.ndim != 2 or directions.shape[1] < 2 or len(directions) == 0 or \
                    not np.all(np.isfinite(directions)) or np.any(directions < 0) or \
                    np.any(directions.sum(axis=1) <= 0):
                raise ValueError("NSGA3 directions must be a non-empty (H, M) array, M >= 2, of finite non-negative "
                                 f"rows that are not all zero; got {np.shape(directions)}")
        elif partitions is not None:
            nsga3.reference_directions(2, partitions)  # checks the value
        self.partitions, self.directions = partitions, directions

    @property
    def distinct_children(self) -> bool:
        return self.eliminate_duplicates

    def check_fitness(self, fitness):
        m = fitness.objectives if getattr(fitness, "width", None) else 1
        if m < 2:
            raise ValueError(f"NSGA3 needs two or more objectives, but {fitness!r} has one; use "
                             "evo.selection.NSGA2() or Tournament() for a single objective")
        if self.directions is not None and self.directions.shape[1] != m:
            raise ValueError(f"NSGA3 directions have {self.directions.shape[1]} columns, but {fitness!r} has {m} "
                             f"objectives; give directions of shape (H, {m})")

    def directions_for(self, objectives: int, n: int) -> np.ndarray:
        """The (H, M) directions used for ``n`` survivors of ``objectives`` objectives."""
        if self.directions is not None:
            return self.directions
        return nsga3.reference_directions(objectives, self.partitions or nsga3.default_partitions(objectives, n))

    def initial_state(self, objectives):
        return nsga3.initial_state(objectives)

    def survivors(self, pool, n, state):
        if len(pool.fitness.shape) != 2 or not isinstance(pool.signs, tuple) or len(pool.signs) < 2:
            raise ValueError("NSGA3 needs a MultiObjective fitness with two or more objectives")
        return nsga3.survivors_and_state(pool.fitness, pool.signs, pool.key, n,
                                         self.directions_for(len(pool.signs), n), state, self.eliminate_duplicates)

    def config(self):
        out = {"partitions": self.partitions,
               "directions": None if self.directions is None else self.directions.tolist()}
        return {**out, "eliminate_duplicates": True} if self.eliminate_duplicates else out
