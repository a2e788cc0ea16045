"""course_lib.processes: code in a fresh Python gives its result back, its settings reach it, and a
failure or a hang is a clear error that leaves no process behind."""

import os
import statistics
import time

import pytest
from processes import child_processes

from course_lib import bench, processes

pytestmark = pytest.mark.timeout(120)


def test_a_target_returns_its_value_through_json():
    assert processes.run("math:hypot", args=[3, 4]).result == 5.0
    assert processes.run("builtins:dict", kwargs={"a": [1, 2], "b": None}).result == {"a": [1, 2], "b": None}
    assert child_processes() == []


def test_a_snippet_returns_its_result_variable_and_its_output():
    done = processes.run(source="""
        import sys
        import numpy as np
        print("to stdout")
        print("to stderr", file=sys.stderr)
        result = {"array": np.arange(3), "scalar": np.float32(1.5)}
    """)
    assert done.result == {"array": [0, 1, 2], "scalar": 1.5}
    assert done.stdout == "to stdout\n" and "to stderr" in done.stderr
    assert processes.run(source="x = 1").result is None


def test_environment_and_xla_flags_reach_the_child():
    source = """
        import os
        result = {k: os.environ.get(k) for k in ("COURSE_TEST", "TF_XLA_FLAGS", "TF_CPP_MIN_LOG_LEVEL")}
    """
    seen = processes.run(source=source, env={"COURSE_TEST": "yes"}, xla_flags="--tf_xla_auto_jit=2")
    assert seen.result == {"COURSE_TEST": "yes", "TF_XLA_FLAGS": "--tf_xla_auto_jit=2", "TF_CPP_MIN_LOG_LEVEL": "2"}
    quiet = processes.run(source=source, env={"TF_CPP_MIN_LOG_LEVEL": "3"}).result
    assert quiet["TF_CPP_MIN_LOG_LEVEL"] == "3" and quiet["COURSE_TEST"] is None
    assert "COURSE_TEST" not in os.environ, "the parent's environment is left alone"


def test_each_child_of_a_group_gets_its_own_environment():
    results = [f.result for f in processes.run_many("os:getenv", [{"WHO": "a"}, {"WHO": "b"}, {}], args=["WHO"])]
    assert results == ["a", "b", None]


@pytest.mark.slow
def test_virtual_cpus_are_made_before_the_code_runs():
    source = "import tensorflow as tf\nresult = len(tf.config.list_logical_devices('CPU'))"
    assert processes.run(source=source, virtual_cpus=3, env={"TF_CPP_MIN_LOG_LEVEL": "3"}).result == 3


def test_a_failing_child_raises_an_error_naming_its_error():
    with pytest.raises(processes.ChildError, match=r"the child Python running a source snippet exited with code 1"
                                                   r"[\s\S]*ZeroDivisionError: division by zero") as info:
        processes.run(source="print('partial output')\n1 / 0")
    assert info.value.returncode == 1 and "ZeroDivisionError" in info.value.stderr_tail
    with pytest.raises(processes.ChildError, match=r"math:no_such_function.*exited with code 1[\s\S]*AttributeError"):
        processes.run("math:no_such_function")
    with pytest.raises(processes.ChildError, match=r"must be JSON-able; object is not"):
        processes.run("builtins:object")
    assert child_processes() == []


def test_a_child_past_its_timeout_is_stopped():
    with pytest.raises(processes.ChildTimeout, match=r"time:sleep had not finished after 1 s \(timeout\)"):
        processes.run("time:sleep", args=[60], timeout=1, grace=1)
    assert child_processes() == []


@pytest.mark.parametrize("call, error, message", [
    (dict(), ValueError, "either target"),
    (dict(target="math:sqrt", source="x = 1"), ValueError, "either target"),
    (dict(source="x = 1", args=[1]), ValueError, "a source snippet takes none"),
    (dict(target="math.sqrt"), ValueError, "'module:function'"),
    (dict(target="no_such_module:f"), ValueError, "cannot find module 'no_such_module'"),
    (dict(target="math:sqrt", args=[object()]), TypeError, "as JSON"),
    (dict(target="math:sqrt", virtual_cpus=0), ValueError, "virtual_cpus"),
    (dict(target="math:sqrt", timeout=0), ValueError, "timeout"),
])
def test_bad_input_is_refused_before_anything_starts(call, error, message):
    with pytest.raises(error, match=message):
        processes.run(**call)
    assert child_processes() == []


# -- live workers, timed in turns ---------------------------------------------------------------

class _Sleeper:
    """What a worker times: sleeps, and reports the environment it was started with."""

    def __init__(self, seconds):
        self.seconds, self.calls = seconds, 0

    def __call__(self):
        self.calls += 1
        time.sleep(self.seconds)

    def info(self):
        return {"calls": self.calls, "COURSE_TEST": os.environ.get("COURSE_TEST"), "pid": os.getpid()}


def sleeper(seconds):
    return _Sleeper(seconds)


def not_callable():
    return 3


def test_workers_keep_two_processes_per_variant_and_time_them_in_turns_in_rotation():
    variants = {"slow": ({"COURSE_TEST": "slow"}, {"seconds": 0.02}),
                "fast": ({"COURSE_TEST": "fast"}, {"seconds": 0.002})}
    with processes.Workers("test_processes:sleeper", variants) as workers:
        first = [workers.info("slow", j) for j in (0, 1)]
        assert [f["COURSE_TEST"] for f in first] == ["slow", "slow"] and first[0]["pid"] != first[1]["pid"]
        assert workers.info("fast", 1)["COURSE_TEST"] == "fast"
        assert len(child_processes()) == 6  # two a variant, and two for the baseline's twin: the A/A pair
        cmp = workers.compare(repeats=4, warmup=1, title="sleep")
        # the same live processes did every call, the rounds (4, or more if unsettled) shared in rotation:
        # each process's first call, its warm-up, and every other round
        assert cmp.rounds in range(4, 4 * bench.MOST_ROUNDS + 1, 4)
        for name in ("slow", "fast"):
            now = [workers.info(name, j) for j in (0, 1)]
            assert [n["calls"] for n in now] == [1 + 1 + cmp.rounds // 2] * 2
        assert [n["pid"] for n in now] != [f["pid"] for f in first]
        assert [workers.info("slow", j)["pid"] for j in (0, 1)] == [f["pid"] for f in first]
        with pytest.raises(KeyError, match="no process 2 of variant 'slow'.*processes 0 to 1"):
            workers.info("slow", 2)
    assert child_processes() == []
    assert cmp.names == ["slow", "fast"] and cmp.twin is not None and len(cmp.twin.times_s) == cmp.rounds
    assert cmp.params["processes per variant"] == 2
    each = processes.process_medians(cmp)
    assert list(each) == ["slow", "fast", "slow (A/A)"] and all(len(m) == 2 for m in each.values())
    # a sleep lasts at least as long as asked, on any machine: the medians are each process's own
    assert min(each["slow"] + each["slow (A/A)"]) >= 0.02 and min(each["fast"]) >= 0.002
    assert each["fast"] == [statistics.median(cmp["fast"].times_s[j::2]) for j in (0, 1)]
    with pytest.raises(ValueError, match="made by Workers.compare"):
        processes.process_medians(bench.compare({"a": lambda: None}, repeats=1))
    assert cmp.speedup("fast") > 2 and cmp.apart("fast")
    assert cmp.verdict("fast").startswith("fast: ")


def test_every_comparison_starts_the_rotation_at_each_variants_first_process():
    # one round a comparison when the variants settle at once: an odd count leaves the rotation mid-way
    with processes.Workers("test_processes:sleeper", {"slow": ({}, {"seconds": 0.02}),
                                                      "fast": ({}, {"seconds": 0.001})}) as workers:
        rounds = [workers.compare(repeats=1, warmup=1).rounds for _ in range(2)]
        calls = [workers.info("fast", j)["calls"] for j in (0, 1)]
    # each comparison: every process's first call and warm-up, then round r on process r % 2
    assert calls == [4 + sum((r + 1) // 2 for r in rounds), 4 + sum(r // 2 for r in rounds)]


def test_workers_can_keep_one_process_per_variant():
    with processes.Workers("test_processes:sleeper", {"a": ({}, {"seconds": 0.001})}, per_variant=1) as workers:
        assert len(child_processes()) == 2  # the variant and its twin
        workers.time("a")
        workers.time("a")
        assert workers.info("a")["calls"] == 2
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="per_variant must be a whole number of processes >= 1"):
            processes.Workers("test_processes:sleeper", {"a": ({}, {"seconds": 0})}, per_variant=bad)
    assert child_processes() == []


def test_a_worker_that_fails_is_a_clear_error_and_leaves_nothing_behind():
    with pytest.raises(processes.ChildError, match=r"(?s)the worker for 'x' \(process 1 of 2\) exited with code 1.*"
                                                    r"must return the zero-argument callable"):
        processes.Workers("test_processes:not_callable", {"x": ({}, {})})
    assert child_processes() == []
    with pytest.raises(ValueError, match="at least one variant"):
        processes.Workers("test_processes:sleeper", {})
    with processes.Workers("test_processes:sleeper", {"a": ({}, {"seconds": 5})}, timeout=0.5) as workers:
        with pytest.raises(processes.ChildTimeout, match="did not answer within 0.5 s"):
            workers.time("a")
        with pytest.raises(KeyError, match="no variant 'b'"):
            workers.time("b")
    assert child_processes() == []
