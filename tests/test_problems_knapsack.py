"""course_lib.problems.knapsack: dynamic programming equal to brute force, and clear errors."""

import numpy as np
import pytest

from course_lib.problems import knapsack


@pytest.mark.parametrize("seed,n,correlated", [(0, 8, False), (1, 12, False), (2, 12, True), (3, 14, True)])
def test_knapsack_dp_matches_brute_force(seed, n, correlated):
    inst = knapsack.knapsack_instance(n, seed=seed, correlated=correlated, max_weight=30)
    value, choice = knapsack.knapsack_dp(**inst)
    brute, _ = knapsack.knapsack_brute_force(**inst)
    assert value == brute
    check = knapsack.knapsack_check(choice, **inst)
    assert check["feasible"] and check["value"] == value
    assert knapsack.knapsack_greedy(**inst)[0] <= value


def test_knapsack_dp_edge_cases_and_errors():
    assert knapsack.knapsack_dp([5, 6], [10, 12], 4) == (0.0, pytest.approx(np.array([0, 0])))
    value, choice = knapsack.knapsack_dp([2, 3, 4], [3, 4, 5], 5)
    assert value == 7 and choice.tolist() == [1, 1, 0]
    with pytest.raises(ValueError, match="positive integer weights"):
        knapsack.knapsack_dp([1.5, 2.0], [1, 2], 3)
    with pytest.raises(ValueError, match="same length"):
        knapsack.knapsack_dp([1, 2], [1], 3)
    with pytest.raises(ValueError, match="too many"):
        knapsack.knapsack_brute_force(np.ones(21, int), np.ones(21), 5)
