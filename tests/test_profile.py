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
