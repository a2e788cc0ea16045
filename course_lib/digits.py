"""The 1,797 handwritten 8x8 digits lectures 06 and 15 train on, shipped with the course.

They are the test set of the UCI "Optical Recognition of Handwritten Digits" data (Alpaydin and
Kaynak, 1998; CC BY 4.0), the copy scikit-learn bundles, saved once as ``digits.npz``: pixels 0..16
and labels, in scikit-learn's order. Shipping the 45 KB file instead of depending on scikit-learn
matters beyond the download: Keras imports scikit-learn (and SciPy with it), when installed, in
every process that imports TensorFlow, which makes each start slower (docs/performance.md has the
figure), and the tests start dozens of such processes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_FILE = Path(__file__).with_name("digits.npz")


def load() -> tuple[np.ndarray, np.ndarray]:
    """pixels uint8 (1797, 8, 8) with values 0..16, and labels uint8 (1797,) 0..9."""
    with np.load(_FILE) as data:
        return data["pixels"], data["labels"]
