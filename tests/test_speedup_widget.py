import time

import pytest

from course_lib import bench
from course_lib.speedup_widget import CSS_CLASS, SpeedupWidget


def make_widget(**kw):
    built = []

    def builder(name):
        def build(n):
            built.append((name, n))
            data = list(range(n))
            return (lambda: sum(data)) if name == "sum" else (lambda: len(data))
        return build

    w = SpeedupWidget({"sum": builder("sum"), "len": builder("len")}, sizes={"n": [10, 1000]},
                      baseline="sum", repeats=2, title="toy", **kw)
    return w, built


def test_run_headless_returns_comparison_and_updates_display():
    w, built = make_widget()
    result = w.run(n=1000)
    assert isinstance(result, bench.Comparison)
    assert result.names == ["sum", "len"]
    assert result.params == {"n": 1000}
    assert built == [("sum", 1000), ("len", 1000)]
    assert list(w.timed) == ["sum", "len"] and w.timed["sum"]() == sum(range(1000))
    assert w.progress.value == 2 and w.progress.description == "done"
    assert "len" in w.table.value and "<table>" in w.table.value
    assert len(w.chart.outputs) == 1  # one figure, replaced as each variant finished
    assert w.size_controls["n"].value == 1000
    assert "<table>" in w.report().data


def test_the_widget_times_in_turns_with_an_a_a_pair_and_shows_the_verdicts():
    calls = []

    def builder(name):
        return lambda n: (lambda: calls.append(name) or time.sleep(0.025))  # long enough for one call a round

    w = SpeedupWidget({"a": builder("a"), "b": builder("b")}, sizes={"n": [1]}, repeats=3)
    result = w.run()
    assert result.rounds in range(3, 3 * bench.MOST_ROUNDS + 1, 3)
    assert all(len(result[n].times_s) == result.rounds for n in "ab")
    assert result.twin is not None and len(result.twin.times_s) == result.rounds  # the baseline against itself
    # first calls, one warm-up round (which sizes a round: one call each), then rounds of a, b and a's twin,
    # each in its seeded order (three, or more while the equal sleeps' ratio straddles the noise floor)
    rounds = [bench.round_order(["a", "b", bench.TWIN], r) for r in range(result.rounds)]
    assert "".join(calls) == "ab" + "ab" + "".join("b" if n == "b" else "a" for o in rounds for n in o)
    assert w.progress.value == 2 and len(w.chart.outputs) == 1
    assert "verdict" in w.table.value and "noise floor" in w.table.value
    assert result._call_word("b") in w.table.value


def test_run_from_controls_uses_checkboxes_and_sliders():
    w, _ = make_widget()
    w.checkboxes["len"].value = False
    w.size_controls["n"].value = 10
    result = w.run_from_controls()
    assert result.names == ["sum"] and result.params == {"n": 10}


def test_button_click_runs():
    w, built = make_widget(defaults={"n": 10})
    w.button.click()
    assert isinstance(w.result, bench.Comparison) and w.result.names == ["sum", "len"]
    assert w.result.params == {"n": 10} and built == [("sum", 10), ("len", 10)]
    assert w.progress.description == "done" and "len" in w.table.value


def test_baseline_falls_back_when_unticked():
    w, _ = make_widget()
    result = w.run(variants=["len"])
    assert result.baseline == "len"


def test_bad_input_names_the_problem():
    w, _ = make_widget()
    with pytest.raises(ValueError, match="unknown variant 'gpu'; variants are: sum, len"):
        w.run(variants=["gpu"])
    with pytest.raises(ValueError, match="unknown size knob 'm'"):
        w.run(m=3)
    with pytest.raises(ValueError, match="no variant chosen"):
        w.run(variants=[])
    with pytest.raises(ValueError, match="unknown baseline 'x'"):
        SpeedupWidget({"a": lambda: (lambda: 1)}, baseline="x")
    with pytest.raises(TypeError, match="variant 'a' must be a builder function"):
        SpeedupWidget({"a": 3})
    with pytest.raises(RuntimeError, match="nothing measured yet"):
        w.report()

    def bad_builder(n):
        raise MemoryError("too big")

    w2 = SpeedupWidget({"a": bad_builder}, sizes={"n": [1]})
    with pytest.raises(bench.BenchError, match=r"building variant 'a' with \{'n': 1\} raised MemoryError"):
        w2.run()
    assert not w2.button.disabled


def test_failed_run_shows_error_and_what_to_do_in_the_widget(tmp_path):
    """The Run button's exceptions reach only Lab's log console, so the widget itself must say what went wrong."""
    shard = tmp_path / "shard-0.tfrecord"
    shard.write_text("data")

    def reads_file(n):
        return lambda: shard.read_text()

    w = SpeedupWidget({"read": reads_file}, sizes={"n": [1]}, repeats=1)
    assert CSS_CLASS in w.box._dom_classes
    first = w.run()
    shard.unlink()  # what a lecture's clean-up cell would do behind the widget's back
    assert w.run_from_controls() is None  # the button: shown, not raised
    assert "BenchError" in w.status.value and "No such file or directory" in w.status.value
    assert "shard-0.tfrecord" in w.status.value and "Run All Cells" in w.status.value
    assert w.progress.description == "failed" and not w.button.disabled
    assert w.result is first  # the last good result stays on show
    with pytest.raises(bench.BenchError, match="variant 'read' raised FileNotFoundError"):
        w.run()  # papermill and tests still see the error
    shard.write_text("data")
    w.button.click()
    assert w.status.value == "" and w.progress.description == "done" and w.result is not first


@pytest.mark.slow
def test_onemax_variants_build_what_lectures_10_and_12_time():
    """The lecture widgets' GA builders evolve the requested shape; an engine variant changes the speed only."""
    import numpy as np

    from course_lib.lessons import evolution as benchmarks

    variants = benchmarks.onemax_variants(3, small_chunk=1, memory_budget=4096, seed=0)
    assert list(variants) == ["NumPy", "engine", "engine, chunk=1", "engine, unpacked", "engine, memory budget"]
    timed = ["NumPy", "engine", "engine, chunk=1"]  # each engine variant compiles: two keep the test short
    results = {name: np.asarray(variants[name](population=48, genes=40)()) for name in timed}
    assert all(r.shape == (48, 40) and set(np.unique(r)) <= {0, 1} for r in results.values())
    assert np.array_equal(results["engine, chunk=1"], results["engine"])
