"""graphs.matmul_reading and dispatch_gap_reading: lectures 01 and 00 read a graph's gain over eager from their
comparisons, each branch."""

import pytest

from course_lib import bench, graphs

SPREAD = (0.99, 1.0, 1.01, 0.995, 1.005)


def matmul_result(eager_s, graph_s, concrete_s):
    medians = {"eager": eager_s, "tf.function": graph_s, "concrete function": concrete_s}
    return bench.Comparison(timings=[bench.Timing(n, m, [m * f for f in SPREAD], 1) for n, m in medians.items()],
                            baseline="eager")


def test_a_pair_not_told_apart_says_a_graph_saves_one_dispatch_at_most():
    text = graphs.matmul_reading(matmul_result(1e-3, 1e-3, 1e-3), 10e-6, {})
    assert "about 10 µs on this machine" in text and "a kernel of 1.0 ms" in text
    assert "The graph against eager: no measurable difference; a graph can save at most" in text
    small = matmul_result(1.02e-3, 1e-3, 1e-3)   # measured, and within the least floor
    assert f"The graph against eager: {small.uncalled('tf.function')};" in graphs.matmul_reading(small, 10e-6, {})
    assert small.uncalled("tf.function") != "no measurable difference"


def test_a_gap_of_about_one_dispatch_is_all_a_graph_changes():
    text = graphs.matmul_reading(matmul_result(1.2e-3, 1e-3, 1e-3), 100e-6, {})
    assert "The graph was 200 µs faster per call, about one dispatch" in text


def test_a_gap_beyond_dispatch_names_where_each_kernel_ran():
    variants = graphs.matmul_variants()
    timed = {name: variants[name](n=64) for name in ("eager", "tf.function")}
    result = matmul_result(1e-3, 2e-3, 2e-3)
    text = graphs.matmul_reading(result, 10e-6, timed)
    assert "The graph was 1.00 ms slower per call, 100 times one dispatch, so the difference is not dispatch" in text
    assert "Nor is it `tf.function`'s Python call path" in text
    assert result.verdict("concrete function", over="tf.function") in text
    assert "MatMul" in text and "the eager MatMul on the calling thread" in text
    apart = graphs.matmul_reading(matmul_result(1e-3, 2e-3, 1.5e-3), 10e-6, timed)
    assert "Calling its concrete function directly skips" in apart


def test_matmul_reading_needs_a_measured_dispatch():
    with pytest.raises(ValueError, match="dispatch_s must be a measured time"):
        graphs.matmul_reading(matmul_result(1e-3, 1e-3, 1e-3), 0.0, {})


def elementwise_result(graph_s, eager_s, eager_spread=SPREAD * 2):
    times = {"tf.function": [graph_s * f for f in SPREAD * 2], "TF eager": [eager_s * f for f in eager_spread]}
    return bench.Comparison(timings=[bench.Timing(n, t[0], t, 1) for n, t in times.items()], baseline="tf.function")


def test_a_gap_within_twice_the_removed_dispatches_is_dispatch():
    text = graphs.dispatch_gap_reading(elementwise_result(1e-3, 1.3e-3), 50e-6, dispatches=6)
    assert "about 50 µs here" in text
    assert text.endswith("300 µs per call, about what the 6 dispatches the graph removes cost (300 µs): here the "
                         "difference is dispatch.")


def test_a_gap_far_beyond_the_dispatches_is_not_dispatch():
    result = elementwise_result(10e-3, 16e-3)
    text = graphs.dispatch_gap_reading(result, 50e-6, dispatches=6)
    lo = 10e-3 * (result.interval("tf.function", "TF eager")[0] - 1)
    assert f"6.00 ms per call (at least {lo * 1e3:.2f} ms by the interval), more than twice" in text
    assert "so most of it is not dispatch" in text


def test_a_gap_whose_interval_straddles_twice_the_dispatches_is_left_open():
    wide = (0.8, 1.0, 1.25, 0.85, 1.2, 0.9, 1.1, 0.95, 1.05, 1.15)
    result = elementwise_result(1e-3, 1.5e-3, eager_spread=wide)
    lo, hi = (1e-3 * (r - 1) for r in result.interval("tf.function", "TF eager"))
    assert result.apart("tf.function", "TF eager") and lo <= 2 * 300e-6 < hi
    assert "whether dispatch accounts for most of it, this run cannot tell" in graphs.dispatch_gap_reading(
        result, 50e-6, dispatches=6)


def test_an_uncalled_gap_says_none_was_measured():
    text = graphs.dispatch_gap_reading(elementwise_result(1e-3, 1e-3), 50e-6, dispatches=6)
    assert text.endswith("none this machine could measure; the 6 dispatches the graph removes cost 300 µs.")
    with pytest.raises(ValueError, match="dispatch_s must be a measured time"):
        graphs.dispatch_gap_reading(elementwise_result(1e-3, 1e-3), -1.0, dispatches=6)
