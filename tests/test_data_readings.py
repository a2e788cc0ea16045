"""course_lib.data.readings: lecture 04's sentences follow their measurements, each branch, and call a
difference only where the noise rule does; the pipeline variants print as the code that runs."""

import numpy as np
import pytest

from course_lib import bench, data

pytestmark = pytest.mark.timeout(120)

SPREAD = (0.99, 1.0, 1.01, 0.995, 1.005)  # five quiet rounds around 1


@pytest.fixture(scope="module")
def work():
    return data.Work(2)


def timed(name, median_s, spread=SPREAD, first_s=None):
    times = [median_s * f for f in spread]
    return bench.Timing(name=name, first_call_s=first_s or median_s, times_s=times, number=1)


def comparison(medians, first=None):
    """A comparison put together by hand: each variant five quiet rounds around its median (s)."""
    first = first or {}
    return bench.Comparison(timings=[timed(n, m, first_s=first.get(n)) for n, m in medians.items()],
                            baseline=next(iter(medians)))


def test_floor_is_the_calibrated_step_times_the_batches(work):
    assert work.step_s == pytest.approx(work.iterations * work.per_iteration_s)
    result = comparison({"naive": 10 * work.step_s, "prefetch": 8.5 * work.step_s})
    text = data.floor_reading(result, work, 8)
    assert f"{8 * work.step_s * 1e3:.0f} ms" in text
    assert f"{work.step_s * 1e3:.0f} ms each as calibrated" in text


def test_variants_within_a_quarter_of_the_floor_are_named_with_their_interval(work):
    floor = 8 * work.step_s
    result = comparison({"naive": 2 * floor, "interleave": 1.5 * floor, "cache": 1.05 * floor},
                        first={"cache": 1.6 * floor})
    text = data.floor_reading(result, work, 8)
    assert "Within a quarter of that floor: cache (" in text and "interleave (" not in text.split("Cache:")[0]
    assert "On the edge" not in text
    assert "The fastest was cache, ahead of every other variant" in text
    assert f"first epoch {1.6 * floor * 1e3:.0f} ms" in text
    lo, hi = bench.ratio_interval(result["cache"].times_s, [floor], result.confidence)
    assert f"({lo:.2f}–{hi:.2f}x the floor)" in text


def test_no_variant_near_the_floor_and_ties_are_said(work):
    floor = 8 * work.step_s
    result = comparison({"naive": 3 * floor, "parallel map": 2 * floor, "interleave": 2.01 * floor})
    text = data.floor_reading(result, work, 8)
    assert "No variant came within a quarter of that floor: each left the consumer waiting" in text
    assert "could not tell apart from" in text and "Cache:" not in text


def test_an_interval_across_a_quarter_is_on_the_edge(work):
    floor = 8 * work.step_s
    wide = (0.8, 1.0, 1.2, 0.9, 1.1)
    result = bench.Comparison(timings=[timed("naive", 3 * floor), timed("prefetch", 1.25 * floor, wide)],
                              baseline="naive")
    text = data.floor_reading(result, work, 8)
    assert "On the edge of a quarter of that floor" in text and "prefetch (" in text
    # the edge is the whole reading: no sentence says that every variant left the consumer waiting
    assert "Within a quarter" not in text and "No variant" not in text


def test_floor_reading_names_bad_input(work):
    result = comparison({"naive": 1.0, "prefetch": 0.5})
    with pytest.raises(TypeError, match="data.Work"):
        data.floor_reading(result, 0.04, 8)
    with pytest.raises(ValueError, match="batches"):
        data.floor_reading(result, work, 0)


def recorded(steps_s, hidden_s):
    """A recorded run whose steps lasted ``steps_s`` and whose pipeline worked ``hidden_s`` during the first."""
    rec = data.Recorder()
    events, t = [], 0.0
    for s in steps_s:
        events.append(data.Event("step", 0, t, t + s))
        t += s + 0.001
    if hidden_s:
        events.append(data.Event("map", 1, 0.0, hidden_s))
    rec._events = events
    return rec


def test_steps_compared_takes_the_busiest_run_and_sets_the_first_step_apart():
    runs = {"naive": recorded([0.05] + [0.02] * 7, 0), "prefetch": recorded([0.02] * 8, 0.01),
            "interleave": recorded([0.02] * 8, 0.005)}
    steps = data.steps_compared(runs)
    assert steps.names == ["naive", "prefetch"] and steps.baseline == "naive"
    assert steps["naive"].first_call_s == pytest.approx(0.05) and len(steps["naive"].times_s) == 7


def test_steps_compared_names_bad_input():
    with pytest.raises(ValueError, match="no recorded run 'naive'"):
        data.steps_compared({"prefetch": recorded([0.02] * 8, 0.01)})
    with pytest.raises(ValueError, match="second recorded run"):
        data.steps_compared({"naive": recorded([0.02] * 8, 0)})
    with pytest.raises(ValueError, match="recorded 1 step"):
        data.steps_compared({"naive": recorded([0.02], 0), "prefetch": recorded([0.02] * 8, 0.01)})


@pytest.mark.parametrize("factor, words", [
    (1.3, "not in turns, so this run cannot tell that cost from a change in the machine's load"),
    (0.7, "the steps ran shorter beside the pipeline's work"),
    (1.0, "did not lengthen them by a difference this run could call"),
    (1.02, "did not lengthen them by a difference this run could call"),
])
def test_steps_reading_follows_the_call(factor, words):
    spread = np.array(SPREAD)
    runs = {"naive": recorded(list(0.02 * np.r_[1.0, spread, spread[:2]]), 0),
            "prefetch": recorded(list(0.02 * factor * np.r_[1.0, spread[::-1], spread[:2]]), 0.01)}
    steps = data.steps_compared(runs)
    text = data.steps_reading(steps)
    assert words in text and steps.judged("prefetch") in text
    assert "with naive" in text and "with prefetch" in text
    if factor in (1.0, 1.02):
        assert not steps.apart("prefetch")


@pytest.mark.parametrize("factor, words", [
    (0.7, "prefetch cost time"),
    (1.4, "Even with no step, prefetch gained"),
    (1.0, "With no step, prefetch against naive: no measurable difference, with no step"),
])
def test_no_step_reading_follows_the_call(factor, words):
    no_step = comparison({"naive": 0.2, "prefetch": 0.2 / factor})
    assert words in data.no_step_reading(no_step)


def test_each_variant_prints_as_the_code_that_runs():
    for variant in data.VARIANTS:
        code = data.source(variant)
        builder = data.BUILDERS[variant]
        assert code.startswith(f"def {builder.__name__}(files, read, decode, batch_size):")
        assert data.describe(variant) in code
    assert ".prefetch(tf.data.AUTOTUNE)" not in data.source("naive")
    assert all(".prefetch(tf.data.AUTOTUNE)" in data.source(v) for v in data.VARIANTS[1:])
    assert ".cache()" in data.source("cache")
    assert data.source("vectorised").index(".batch(") < data.source("vectorised").index(".map(")
    with pytest.raises(ValueError, match="unknown pipeline variant"):
        data.source("fast")
