"""course_lib.profile on traces of known programs: steps, ops, retraces, input waiting, export, errors."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from course_lib import profile
from course_lib.lessons import profiler_cases as cases
from course_lib.profile.trace import HOST_PLANE, Event, Step, Trace

K = 3  # profiled steps
OPS = ("AddV2", "Mul", "Maximum", "Sum")


@tf.function
def four_ops(x, y):
    return tf.reduce_sum(tf.maximum((x + y) * y, x))


@pytest.fixture(scope="module")
def known_trace():
    x, y = tf.ones([32]), tf.fill([32], 2.0)
    return profile.capture(lambda: four_ops(x, y), steps=K)


def test_a_function_of_n_ops_called_k_times_gives_k_steps_and_those_ops(known_trace):
    assert [s.number for s in known_trace.steps] == list(range(K))
    table = profile.op_stats(known_trace)
    calls = {r["op type"]: r["calls"] for r in table.rows}
    for op in OPS:
        assert calls.get(op) == K, f"{op}: {calls}"
    counts = profile.counters(known_trace)
    assert counts.calls["four_ops"] == K and counts.retraces == 0 and counts.xla_compilations == 0
    per_op = {r["op"] for r in profile.op_stats(known_trace, by="op").rows}
    assert {"add", "mul", "Maximum", "Sum"} <= per_op, per_op


def test_breakdown_shares_add_up_and_the_function_shows(known_trace):
    b = profile.step_breakdown(known_trace)
    assert len(b.rows) == K
    for part, step in zip(b.parts, b.steps):
        total = sum(part[c] for c in profile.CATEGORIES)
        assert total == pytest.approx(step.duration_us, rel=1e-6)
        assert 0 <= part["idle"] <= step.duration_us
    assert b.share("function") > 0
    function_us = sorted(p["function"] for p in b.parts)
    assert b.median_ms("function") == pytest.approx(function_us[K // 2] / 1e3) and K % 2 == 1
    for read in (b.share, b.median_ms):
        with pytest.raises(ValueError, match="unknown category"):
            read("waiting")


def test_a_retracing_function_shows_its_traces():
    f = tf.function(lambda x, n: x * n)
    counter = iter(range(100))
    trace = profile.capture(lambda: f(tf.ones([4]), next(counter)), steps=K)
    counts = profile.counters(trace)
    assert counts.retraces == K and sum(counts.calls.values()) == K
    building = sum(e.duration_us for e in trace.events if e.name == "tf.function-graph_building")
    steps_us = sum(s.duration_us for s in trace.steps)
    # the tracing share also counts readying each new graph, which happens outside the building event
    assert profile.step_breakdown(trace).share("tracing") > building / steps_us > 0


def synthetic(*events):
    """A one-step trace on thread "main" from (name, start, end) triples, nested as the reader nests them."""
    evs = [Event(HOST_PLANE, "main", name, lo, hi - lo)
           for name, lo, hi in [("step", 0, 100)] + list(events)]
    evs[0].stats["step_num"] = 0
    for i, e in enumerate(evs[1:], 1):
        enclosing = [j for j in range(i) if evs[j].start_us <= e.start_us and e.end_us <= evs[j].end_us]
        e.parent = enclosing[-1] if enclosing else -1
    return Trace(None, evs, [Step(0, 0.0, 100.0, "main")])


def test_readying_a_graph_before_it_runs_counts_as_tracing():
    trace = synthetic(("EagerLocalExecute: __inference_f_7", 10, 90), ("EagerKernelExecute", 40, 90),
                      ("f:MatMul", 50, 80))
    part = profile.step_breakdown(trace).parts[0]
    assert part["tracing"] == pytest.approx(30) and part["function"] == pytest.approx(50)
    assert part["python"] == pytest.approx(20) and part["idle"] == pytest.approx(70)
    assert profile.counters(trace).retraces == 0  # retraces are tf.function calls that traced, not spans


def test_a_function_share_below_the_bar_points_at_the_next_category():
    trace = synthetic(("EagerLocalExecute: __inference_f_7", 0, 60), ("EagerKernelExecute", 0, 60),
                      ("f:MatMul", 0, 60))
    h = profile.hypothesis(trace)
    assert h.bottleneck == "function" and "next largest share is python (40%" in h.sentence
    assert "arithmetic" not in h.sentence
    whole = profile.hypothesis(synthetic(("EagerLocalExecute: __inference_f_7", 0, 95),
                                         ("EagerKernelExecute", 0, 95), ("f:MatMul", 0, 95)))
    assert "MatMul leads the op time with 100%" in whole.sentence and "arithmetic" in whole.sentence


def test_text_tables_keep_their_headers_apart(known_trace):
    header = repr(profile.step_breakdown(known_trace)).splitlines()[0]
    assert "tracing %  function %" in header
    ops = repr(profile.op_stats(known_trace)).splitlines()
    assert "% of steps  % of op time" in ops[0] and len(ops) == len(profile.op_stats(known_trace).rows) + 1


def test_a_tensor_argument_does_not_retrace():
    f = tf.function(lambda x, n: x * n)
    counter = iter(range(100))
    trace = profile.capture(lambda: f(tf.ones([4]), tf.constant(float(next(counter)))), steps=K)
    assert profile.counters(trace).retraces == 0


def test_a_sleeping_tf_data_stage_shows_input_waiting():
    records = cases.write_records(n_files=1, per_file=4)
    batches = iter(cases.read_slowly(records.paths[0], 0.02).repeat())
    try:
        trace = profile.capture(lambda: next(batches), steps=K)
    finally:
        records.cleanup()
    h = profile.hypothesis(trace)
    assert h.bottleneck == "input" and h.breakdown.share("input") > 0.5
    assert "waits for input" in h.sentence


def test_py_function_calls_and_xla_compilations_are_counted():
    square = tf.function(lambda x: x * x, jit_compile=True)
    sizes = iter(range(1, 100))
    trace = profile.capture(lambda: (tf.py_function(np.square, [tf.ones([2])], tf.float32),
                                     square(tf.ones([next(sizes)]))), steps=2)
    counts = profile.counters(trace)
    assert counts.py_function_calls == 2
    assert counts.xla_compilations == 2


def test_chrome_export_is_valid_json_with_every_event(known_trace, tmp_path):
    path = profile.write_chrome(known_trace, tmp_path / "sub" / "trace.json")
    data = json.loads(path.read_text())
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(known_trace.events)
    threads = {e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e.thread for e in known_trace.events} == threads


def test_timeline_builds_headless(known_trace):
    import matplotlib.pyplot as plt

    for fig in (profile.timeline(known_trace, steps=1, title="one step"),
                profile.timelines([known_trace, known_trace], ["a", "b"], steps=(0, 1))):
        fig.savefig(io.BytesIO(), format="png")
        plt.close(fig)
    with pytest.raises(ValueError, match="no marked step"):
        profile.timeline(known_trace, steps=99)


def test_missing_and_empty_log_folders_get_clear_errors(tmp_path):
    with pytest.raises(profile.ProfileError, match="no log folder"):
        profile.read(tmp_path / "missing")
    with pytest.raises(profile.ProfileError, match="holds no .xplane.pb"):
        profile.read(tmp_path)
    bad = tmp_path / "plugins" / "profile" / "run" / "host.xplane.pb"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\xff\xff not a protobuf")
    with pytest.raises(profile.ProfileError, match="not a profiler trace"):
        profile.read(tmp_path)


def test_a_trace_with_no_steps_gets_a_clear_error(tmp_path):
    tf.profiler.experimental.start(str(tmp_path))
    four_ops(tf.ones([8]), tf.ones([8]))
    tf.profiler.experimental.stop()
    trace = profile.read(tmp_path)
    assert trace.events and not trace.steps
    for analysis in (profile.step_breakdown, profile.op_stats, profile.counters, profile.timeline):
        with pytest.raises(profile.ProfileError, match="marks no steps"):
            analysis(trace)


def test_capture_rejects_bad_arguments():
    with pytest.raises(TypeError, match="zero-argument callable"):
        profile.capture(42)
    with pytest.raises(ValueError, match="steps must be >= 1"):
        profile.capture(lambda: None, steps=0)


def test_timeline_lanes_are_one_per_thread_with_short_names():
    from course_lib.profile.timeline import lane_names

    threads = [("/host:CPU", "python"), ("/host:CPU", "tf_Compute/123"), ("/host:CPU", "tf_Compute/-45"),
               ("/device:GPU:0", "Stream #7(Compute)")]
    assert lane_names(threads) == ["python", "tf_Compute 1", "tf_Compute 2", "GPU:0 Stream #7(Compute)"]


@pytest.mark.slow
def test_capture_runs_at_the_profilers_default_levels_without_option_warnings(tmp_path):
    """In a fresh process, so the C++ log lines land on a stderr this test reads."""
    script = ("import tensorflow as tf\n"
              "from course_lib import profile\n"
              "f = tf.function(lambda x: tf.tanh(x) * 2.0)\n"
              "trace = profile.capture(lambda: f(tf.ones([8])), steps=2)\n"
              "names = {e.name for e in trace.events}\n"
              "print('OPS', any('Tanh' in n for n in names), 'PYTHON', any(n.startswith('$') for n in names))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "expects an" not in done.stderr
    assert "OPS True PYTHON False" in done.stdout  # host level 2 records the ops; no Python tracer


def test_records_live_as_long_as_their_object_and_no_longer():
    import gc

    records = cases.write_records(n_files=1, per_file=2)
    folder = records.folder
    assert all(Path(p).exists() for p in records.paths)
    del records
    gc.collect()
    assert not folder.exists()
    kept = cases.write_records(n_files=1, per_file=2)
    kept.cleanup()
    kept.cleanup()  # a second cleanup does nothing
    assert not kept.folder.exists()


def _breakdown(per_step: list[dict[str, float]]) -> profile.Breakdown:
    """Steps of the given microseconds per category, one after another."""
    steps, parts, start = [], [], 0.0
    for i, part in enumerate(per_step):
        full = {c: part.get(c, 0.0) for c in profile.CATEGORIES + ("idle",)}
        total = sum(v for c, v in full.items() if c != "idle")
        steps.append(Step(i, start, start + total, "main"))
        parts.append(full)
        start += total
    return profile.Breakdown(steps, parts)


def test_fix_reading_compares_the_rest_of_the_step_with_the_bounds_assumption():
    before = _breakdown([{"input": 900.0, "function": 100.0}] * 3)  # 90% input: bound 10x
    grew = profile.fix_reading(before, _breakdown([{"input": 10.0, "function": 190.0}] * 3), "input")
    assert grew["bound"] == pytest.approx(10.0)
    assert grew["traced"] == pytest.approx(5.0)
    assert grew["rest_before_ms"] == pytest.approx(0.1) and grew["rest_after_ms"] == pytest.approx(0.19)
    assert grew["removed_after"] == pytest.approx(0.05) and grew["rest"] == "grew"
    shrank = profile.fix_reading(before, _breakdown([{"function": 50.0}] * 3), "input")
    assert shrank["traced"] > shrank["bound"] and shrank["rest"] == "shrank"
    assert profile.fix_reading(before, _breakdown([{"function": 105.0}] * 3), "input")["rest"] == "held"
    with pytest.raises(ValueError, match="unknown category 'idle'"):
        profile.fix_reading(before, before, "idle")


def _steps_with_function(function_us: list[float]) -> Trace:
    """Steps of 100 µs on thread "main", each spending the given microseconds in a traced function's MatMul
    and the rest in Python."""
    evs, steps = [], []
    for i, f in enumerate(function_us):
        t0 = 100.0 * i
        step = Event(HOST_PLANE, "main", "step", t0, 100.0)
        step.stats["step_num"] = i
        run = [Event(HOST_PLANE, "main", name, t0, f)
               for name in ("EagerLocalExecute: __inference_f_7", "EagerKernelExecute", "f:MatMul")]
        for k, e in enumerate(run):
            e.parent = len(evs) + k  # the step, then each event inside the one before
        evs += [step] + run
        steps.append(Step(i, t0, t0 + 100.0, "main"))
    return Trace(None, evs, steps)


def test_a_lead_that_changes_from_step_to_step_is_not_called():
    tied = profile.hypothesis(_steps_with_function([55.0, 48.0, 57.0]))
    assert tied.bottleneck == "function" and tied.contender == "python"
    assert tied.sentence.startswith("this run cannot tell whether function or python takes more of each step")
    assert "outside TensorFlow" in tied.sentence and "MatMul leads the op time" in tied.sentence
    assert tied.named == "function or python (this run cannot tell which is larger)"
    clear = profile.hypothesis(_steps_with_function([70.0, 75.0, 72.0]))
    assert clear.contender is None and clear.named == "function"
    assert "next largest share is python" in clear.sentence


def test_a_rest_that_overlaps_between_the_traces_is_unclear():
    before = _breakdown([{"input": 900.0, "function": 100.0}, {"input": 900.0, "function": 130.0}])
    overlapping = profile.fix_reading(before, _breakdown([{"function": 125.0}, {"function": 90.0}]), "input")
    assert overlapping["rest"] == "unclear"
    assert profile.fix_reading(before, _breakdown([{"function": 150.0}] * 2), "input")["rest"] == "grew"
    assert profile.fix_reading(before, _breakdown([{"function": 80.0}] * 2), "input")["rest"] == "shrank"


def test_fix_reading_gives_each_ratio_the_range_single_steps_span():
    before = _breakdown([{"input": 900.0, "function": 100.0}, {"input": 400.0, "function": 100.0}])  # 1 ms, 0.5 ms
    reading = profile.fix_reading(before, _breakdown([{"function": 100.0}, {"function": 250.0}]), "input")
    assert reading["bound_range"] == pytest.approx((5.0, 10.0))  # 80% and 90% input
    assert reading["traced_range"] == pytest.approx((0.5 / 0.25, 1.0 / 0.1))


def test_fix_reading_names_the_removed_category_and_the_steps_of_each_trace():
    before = _breakdown([{"input": 900.0, "function": 100.0}] * 3)
    reading = profile.fix_reading(before, _breakdown([{"function": 200.0}] * 2), "input")
    assert reading["removed"] == "input"
    assert (reading["steps_before"], reading["steps_after"]) == (3, 2)
    assert reading["step_before_ms"] == pytest.approx(1.0) and reading["step_after_ms"] == pytest.approx(0.2)


def _fix(**changes) -> dict:
    """A ``fix_reading`` dict: bound 10x, traced 10x, a rest of 4 ms held, nothing of `input` left."""
    reading = {"bound": 10.0, "traced": 10.0, "rest_before_ms": 4.0, "rest_after_ms": 4.0, "rest": "held",
               "removed_after": 0.0, "removed": "input", "steps_before": 3, "steps_after": 3,
               "step_before_ms": 40.0, "step_after_ms": 4.0}
    reading.update(changes)
    for ratio in ("bound", "traced"):  # single steps within 5% of the ratio, unless a test gives their range
        reading.setdefault(f"{ratio}_range", (reading[ratio] * 0.95, reading[ratio] * 1.05))
    return reading


def test_fix_ratios_says_what_each_ratio_measures():
    text = profile.fix_ratios(_fix(), 10.0, (9.0, 11.0))
    assert text.startswith("Removing the `input` share alone would give 10x: a bound that assumes the rest of the "
                           "step (all but `input`) keeps the 4.0 ms it took in the first trace.")
    assert "compares the median step of the 3 steps each trace profiled after its warm-up (40.0 ms against 4.0 ms)" \
        in text
    assert "The timed ratio, 10x (95% interval 9–11x), compares the two programs' medians over many timed calls." \
        in text
    unequal = profile.fix_ratios(_fix(steps_after=6), 10.0, (9.0, 11.0))
    assert "the 3 and 6 steps the two traces profiled after their warm-up" in unequal


def test_fix_ratios_reads_the_rest_of_the_step_by_its_verdict():
    held = profile.fix_ratios(_fix(), 10.0, (9.0, 11.0))
    assert "about what it took before (every step of both traces within 10% of each other): the bound's " \
           "assumption held" in held
    grew = profile.fix_ratios(_fix(rest="grew", rest_after_ms=8.0), 10.0, (9.0, 11.0))
    assert "the rest took 8.0 ms, 2x as long: longer in every traced step" in grew
    assert "the bound's assumption failed" in grew
    shrank = profile.fix_ratios(_fix(rest="shrank", rest_after_ms=2.0), 10.0, (9.0, 11.0))
    assert "the rest took 2.0 ms, 2x shorter: shorter in every traced step" in shrank
    gone = profile.fix_ratios(_fix(rest="shrank", rest_after_ms=0.0), 10.0, (9.0, 11.0))
    assert "the rest took 0.0 ms: shorter in every traced step" in gone  # no factor over 0 ms
    for after, words in ((3.0, "less"), (5.0, "more"), (4.0, "the same")):
        unclear = profile.fix_ratios(_fix(rest="unclear", rest_after_ms=after), 10.0, (9.0, 11.0))
        assert f", {words} by the medians, but single steps of the two traces overlap" in unclear
    why = {"grew": "The threads share the cores.", "shrank": "Its first run cost more."}
    assert "The threads share the cores." in profile.fix_ratios(_fix(rest="grew", rest_after_ms=8.0), 10.0, None,
                                                                 why=why)
    assert "share the cores" not in profile.fix_ratios(_fix(), 10.0, None, why=why)


def test_a_traced_ratio_above_the_bound_means_the_rest_shrank_in_the_traced_steps():
    shrank = profile.fix_ratios(_fix(traced=15.0, rest="shrank", rest_after_ms=2.5), 10.0, (9.0, 11.0))
    assert ("above the bound, which means the rest of the step also shrank in the traced steps (its median from "
            "4.0 to 2.5 ms).") in shrank
    overlapping = profile.fix_ratios(_fix(traced=15.0, rest="unclear", rest_after_ms=2.5), 10.0, (9.0, 11.0))
    assert "shrank in the traced steps (its median from 4.0 to 2.5 ms), a shrink of the medians that single " \
           "overlapping steps leave unsettled" in overlapping
    for rest, after in (("held", 3.9), ("unclear", 4.5)):
        statistics = profile.fix_ratios(_fix(traced=15.0, rest=rest, rest_after_ms=after), 10.0, (9.0, 11.0))
        assert "above the bound although the rest of the step did not shrink beyond its steps' spread" in statistics
        assert "shrank in the traced steps" not in statistics


def test_a_traced_ratio_below_the_bound_names_what_the_fixed_steps_kept():
    left = profile.fix_ratios(_fix(traced=5.0, removed_after=0.2), 10.0, (9.0, 11.0))
    assert "below the bound: the fixed steps still spent 20% of their time in `input`." in left
    grew = profile.fix_ratios(_fix(traced=5.0, removed_after=0.2, rest="grew", rest_after_ms=6.0), 10.0, (9.0, 11.0))
    assert "below the bound: the fixed steps still spent 20% of their time in `input` and their rest took 6.0 ms " \
           "against 4.0 ms." in grew
    unclear = profile.fix_ratios(_fix(traced=5.0, rest="unclear", rest_after_ms=6.0), 10.0, (9.0, 11.0))
    assert "below the bound: their rest took 6.0 ms against 4.0 ms by the medians." in unclear
    neither = profile.fix_ratios(_fix(traced=5.0, removed_after=0.001), 10.0, (9.0, 11.0))
    assert "below the bound although the fix left no `input` to speak of" in neither
    near = profile.fix_ratios(_fix(traced=10.5), 10.0, (9.0, 11.0))  # single steps' ranges overlap
    assert "single steps give it 9.97–11x and the bound 9.5–10.5x, so these few steps cannot tell it from the " \
        "bound." in near
    # a traced ratio of medians 2x past the bound is read only where no single step reaches the bound
    overlapping = profile.fix_ratios(_fix(traced=20.0, traced_range=(8.0, 30.0), rest="shrank"), 10.0, (9.0, 11.0))
    assert "cannot tell it from the bound" in overlapping and "above the bound" not in overlapping


def test_the_timed_interval_is_placed_against_the_traced_ratio_and_the_bound():
    below = profile.fix_ratios(_fix(bound=20.0, traced=30.0, rest="shrank", rest_after_ms=2.7), 9.33, (7.22, 9.36))
    assert ("Its interval lies below every traced step's ratio: the trace's few steps are not the timed calls, and "
            "the timed calls gained less; it lies below every step's bound.") in below
    above = profile.fix_ratios(_fix(bound=5.0, traced=6.0), 7.0, (6.5, 7.5))
    assert ("Its interval lies above every traced step's ratio: the trace's few steps are not the timed calls, and "
            "the timed calls gained more; it lies above every step's bound.") in above
    meets = profile.fix_ratios(_fix(), 10.0, (9.0, 11.0))
    assert "Its interval meets the traced steps' range, so this run cannot tell the two apart; it meets the " \
        "bound's range." in meets
    # a point ratio outside the interval is not enough: single steps that reach the interval leave it unsettled
    wide = profile.fix_ratios(_fix(bound=20.0, traced=30.0, traced_range=(9.0, 40.0), bound_range=(9.0, 25.0)),
                              8.0, (7.5, 9.5))
    assert "cannot tell the two apart; it meets the bound's range." in wide
    none = profile.fix_ratios(_fix(), 10.0, None)
    assert "The timed ratio, 10x, compares" in none
    assert "too few rounds for an interval, this run cannot place the timed ratio" in none
    assert "not the timed calls" not in none
