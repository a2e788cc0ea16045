"""course_lib.arguments: a count that is not a whole number is a TypeError, one too small a ValueError, each
naming the argument; a share lies in [0, 1]; device names shorten to TYPE:INDEX."""

import numpy as np
import pytest

from course_lib.arguments import share, short_device_name, whole


def test_whole_accepts_integers_and_names_what_is_wrong():
    assert whole("n", np.int64(3), 1) == 3 and type(whole("n", np.int64(3), 1)) is int
    with pytest.raises(TypeError, match=r"launch: n_workers must be a whole number >= 1, got float 2.0"):
        whole("n_workers", 2.0, 1, owner="launch")
    with pytest.raises(TypeError, match="got bool True"):
        whole("n", True, 0)
    with pytest.raises(ValueError, match=r"^rounds must be a whole number >= 1, got 0$"):
        whole("rounds", 0, 1)


def test_share_is_a_number_in_zero_to_one():
    assert share("seeded", 0.25) == 0.25 and share("seeded", np.float32(1)) == 1.0 and share("s", 0) == 0.0
    with pytest.raises(ValueError, match=r"seeded must be in \[0, 1\] \(a share\), got 1.5"):
        share("seeded", 1.5)
    with pytest.raises(TypeError, match="seeded must be a number in"):
        share("seeded", "half")
    with pytest.raises(TypeError, match="got bool"):
        share("seeded", True)


@pytest.mark.parametrize("name, short", [("/job:localhost/replica:0/task:0/device:CPU:1", "CPU:1"),
                                         ("/device:GPU", "GPU:0"), ("CPU:3", "CPU:3"), ("", ""),
                                         ("weird", "weird")])
def test_short_device_name(name, short):
    assert short_device_name(name) == short
