"""What ops and selections share about tours (rows that are permutations of 0..L-1): moving values to the
positions a tour names, inverting a tour, and how many edges two tours do not share.

Its own module, below both ``ops`` and ``selection``: the engine imports no op module before an op is
asked for, and a selection that compares tours (``selection.Clearing``) needs the same scatter as the ops.
"""

from __future__ import annotations

import tensorflow as tf

from course_lib.evo import fusion


def place(values: tf.Tensor, to: tf.Tensor) -> tf.Tensor:
    """(B, L): ``values[r, i]`` moved to position ``to[r, i]``, for rows of ``to`` that are permutations.

    Under XLA one scatter, which it compiles into a loop over the rows; elsewhere a gather through
    ``inverse_permutation``, because TensorFlow's scatter kernel is a general one with locking and
    ``invert_permutation`` is a plain pass. The same result in every mode.
    """
    b, n = to.shape
    if not fusion.xla_active():
        return tf.gather(values, inverse_permutation(to), batch_dims=1)
    flat = tf.reshape(to + n * tf.range(b)[:, None], (-1, 1))
    return tf.reshape(tf.scatter_nd(flat, tf.reshape(values, (-1,)), (b * n,)), (b, n))


def inverse_permutation(x: tf.Tensor) -> tf.Tensor:
    """For int32 rows that are permutations of 0..L-1: where each value sits.

    O(L) per row, no sort (an argsort is O(L log L), and slow under XLA on a CPU): under XLA a
    scatter of the positions (``place``); elsewhere the rows, offset by L per row, form one
    permutation of 0..B*L-1, which ``tf.math.invert_permutation`` inverts.
    """
    b, n = x.shape
    if fusion.xla_active():
        return place(tf.broadcast_to(tf.range(n), (b, n)), x)
    offset = n * tf.range(b)[:, None]
    return tf.reshape(tf.math.invert_permutation(tf.reshape(x + offset, (-1,))), (b, n)) - offset


def tour_distances(tours: tf.Tensor) -> tf.Tensor:
    """int32 (P, P): how many edges of tour a (row of ``tours``, a permutation of 0..L-1) tour b does not
    hold, either way round; 0 for the same tour, whatever its start and direction. Each tour becomes its
    cities' successors and predecessors (``place``d by city), compared pairwise: O(P² L) (``distance_bytes``)."""
    tours = tf.cast(tours, tf.int32)
    n = tours.shape[1]
    after, before = place(tf.roll(tours, -1, axis=1), tours), place(tf.roll(tours, 1, axis=1), tours)
    held = (after[:, None, :] == after[None, :, :]) | (after[:, None, :] == before[None, :, :])
    return n - tf.reduce_sum(tf.cast(held, tf.int32), axis=2)


def distance_bytes(pool: int, length: int) -> int:
    """About how many bytes ``tour_distances`` of ``pool`` tours of ``length`` cities holds at once: the
    pairwise comparison of successors against successors and predecessors (bool, P x P x L each) and its
    int32 count."""
    return pool * pool * length * (1 + 1 + 4)
