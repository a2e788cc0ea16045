"""The digits shipped with the course (lectures 06 and 15): the file is whole and the loaders scale it."""

import numpy as np

from course_lib import digits
from course_lib.lessons import neuroevolution as neuro
from course_lib.models import gan

# Images per class in the file as saved from scikit-learn's copy: a truncated or mislabelled file
# would not reproduce them.
PER_CLASS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_the_file_holds_the_1797_digits_of_every_class():
    pixels, labels = digits.load()
    assert pixels.shape == (1797, 8, 8) and pixels.dtype == np.uint8 and pixels.max() == 16
    assert labels.shape == (1797,) and np.bincount(labels).tolist() == PER_CLASS
    assert labels[:10].tolist() == list(range(10))  # scikit-learn's order starts 0, 1, ..., 9
    means = [pixels[labels == d].mean() for d in range(10)]
    assert means[1] < means[0] and means[1] < means[8]  # a one has less ink than a zero or an eight


def test_the_loaders_scale_the_same_pixels():
    pixels, labels = digits.load()
    assert np.array_equal(gan.load_digits_images()[..., 0], pixels / 8.0 - 1.0)
    x_train, y_train, x_test, y_test = neuro.digits(test_fraction=0.25, seed=0)
    assert len(x_train) + len(x_test) == 1797 and len(x_test) == 449
    flat = pixels.reshape(1797, 64) / 16.0
    order = np.random.default_rng(0).permutation(1797)
    assert np.array_equal(x_test, flat[order[:449]].astype(np.float32))
    assert np.array_equal(y_train, labels[order[449:]].astype(np.int32))
