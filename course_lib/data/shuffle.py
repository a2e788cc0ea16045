"""What a shuffle buffer does to the order."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf


def shuffle_order(n: int, buffer_size: int, seed: int = 0) -> np.ndarray:
    """The order in which ``range(n).shuffle(buffer_size, seed)`` hands out its elements."""
    if not isinstance(buffer_size, (int, np.integer)) or buffer_size < 1:
        raise ValueError(f"buffer_size must be a whole number >= 1, got {buffer_size!r}")
    ds = tf.data.Dataset.range(n).shuffle(buffer_size, seed=seed)
    return np.fromiter((int(i) for i in ds), dtype=np.int64, count=n)


def plot_shuffle(n: int = 200, buffer_sizes: Sequence[int] = (1, 10, 50, 200), seed: int = 0):
    """Output position against input index, one panel per buffer size.

    A buffer of b elements can hand out element i no earlier than position i - (b - 1),
    so small buffers stay close to the diagonal: order is only locally mixed.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(buffer_sizes), figsize=(2.6 * len(buffer_sizes), 2.6),
                             sharey=True, layout="constrained")
    for ax, b in zip(np.atleast_1d(axes), buffer_sizes):
        order = shuffle_order(n, b, seed)
        ax.scatter(np.arange(n), order, s=4)
        ax.set_title(f"buffer_size={b}")
        ax.set_xlabel("output position")
    np.atleast_1d(axes)[0].set_ylabel("input index")
    return axes
