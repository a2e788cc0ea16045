"""A double bridge: the kick of iterated local search for tours.

Two adjacent segments of a tour swap places (A B C D becomes A C B D): three edges out,
three in, and the order inside each segment kept. No single 2-opt move undoes it, and an
or-opt move only where a segment is as short as the or-opt's, so a local search that
follows does not simply return to the tour it started from, as it would after a random
reversal (a 2-opt move). Short segments keep the kick local: most of a good tour survives.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import rng
from course_lib.evo.ops.local_search import move_segment
from course_lib.evo.ops.permutation import RatedPermutationOp
from course_lib.evo.validation import whole


class DoubleBridge(RatedPermutationOp):
    """Swap two adjacent random segments of 1 to ``segment`` cities each, in a share ``rate``
    of the tours (the others pass unchanged)."""

    def __init__(self, rate: float = 1.0, segment: int = 30, name: str | None = None):
        super().__init__(rate, name)
        self.segment = whole("segment", segment, 1, "DoubleBridge")

    def check(self, *specs):
        """Also ``segment`` as it is now, so that a value set after ``compile`` is checked before the run."""
        self.segment = whole("segment", self.segment, 1, "DoubleBridge")
        return super().check(*specs)

    def apply(self, inputs, key, rows):
        tours = tf.cast(rows.take(inputs[0]), tf.int32)
        n = tours.shape[1]
        if n < 4:  # no two segments and a rest to swap them in
            return rows.take(inputs[0])
        mutate = self.changed(inputs, key, rows)
        start = rng.integers(rng.fold_in(key, 2), rows, (), n)
        lengths = rng.integers(rng.fold_in(key, 3), rows, (2,), min(self.segment, (n - 1) // 2)) + 1
        first, second = lengths[:, 0], lengths[:, 1]
        # the first segment moves to just after the second
        moved = move_segment(tours, start, first, (start + first + second - 1) % n, tf.zeros_like(start), mutate)
        return tf.cast(moved, inputs[0].dtype)

    def config(self):
        return {**super().config(), "segment": self.segment}
