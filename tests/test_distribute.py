"""course_lib.distribute: strategies train the same model to the same loss, model-parallel
traffic is what the placement implies, and the multi-worker launcher finishes, fails
clearly and always cleans up, within bounded time."""

import json
import os
import time

import pytest
from processes import child_processes

from course_lib import devices, distribute, processes
from course_lib.benchmarks import strategies

pytestmark = pytest.mark.timeout(180)


# -- helpers the launched workers import (this file is on their sys.path) ---------------------------

def fail_on_worker_one():
    """Worker 1 fails at once; worker 0 would wait a long time (as if blocked on its peer)."""
    if distribute.worker_context()["index"] == 1:
        raise RuntimeError("boom from worker 1")
    time.sleep(600)


def strategy_report():
    """Run in a fresh process: virtual CPUs first, then every strategy on the same problem."""
    cpus = devices.virtual_cpus(4)
    x, y = distribute.regression_data(n=256)
    out = {"devices": cpus, "runs": []}
    for name, devs in [("default", cpus), ("one device", cpus), ("mirrored", cpus[:2]), ("mirrored", cpus),
                       ("central storage", cpus[:2])]:
        strategy = distribute.make_strategy(name, devs)
        for train in (distribute.fit, distribute.custom_loop):
            if train is distribute.fit and len(devs) == 4 and name == "mirrored":
                continue  # Keras fit over 4 replicas is slow to trace on 2 cores; the loop covers it
            r = train(strategy, x, y, global_batch=32, epochs=2)
            out["runs"].append({"strategy": name, "how": train.__name__, "replicas": r.replicas, "name": r.strategy,
                                "variables": distribute.variable_placement(strategy),
                                "per_replica": r.per_replica_batch, "losses": r.losses, "logged": r.logged})
    bench_json = os.path.join(os.environ["REPORT_DIR"], "strategies.json")
    strategies.bench_strategies(["--repeats", "1", "--steps", "1", "--global-batch", "16", "--json", bench_json])
    with open(bench_json) as fh:
        out["bench"] = json.load(fh)
    out["traffic"] = {
        "chain4": distribute.traffic(distribute.chain(cpus, width=32, depth=4, features=16), 8),
        "chain1": distribute.traffic(distribute.chain(cpus[:1], width=32, depth=4, features=16), 8),
        "towers4": distribute.traffic(distribute.towers(cpus, width=32, depth=2, features=16), 8),
    }
    return out

# -- strategies and model parallelism, in a fresh process with 4 virtual CPUs ---------------------------

@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("report"))
    return processes.run("test_distribute:strategy_report", env={"TF_CPP_MIN_LOG_LEVEL": "3", "REPORT_DIR": folder},
                         timeout=170).result


@pytest.mark.slow
def test_every_strategy_trains_to_the_same_loss(report):
    runs = report["runs"]
    reference = runs[0]["losses"]
    assert len(runs) == 9
    for run in runs:
        assert run["losses"] == pytest.approx(reference, rel=1e-4), run
        assert run["losses"][-1] < run["losses"][0], "training lowered the loss"


def test_global_batch_is_per_replica_batch_times_replicas(report):
    seen = {(r["strategy"], r["replicas"], r["per_replica"]) for r in report["runs"]}
    assert seen == {("default", 1, 32), ("one device", 1, 32), ("mirrored", 2, 16), ("mirrored", 4, 8),
                    ("central storage", 2, 16)}


def test_variables_live_where_the_strategy_says(report):
    seen = {(r["name"], r["variables"]) for r in report["runs"]}
    assert seen == {("default", "ResourceVariable on CPU:0"), ("OneDevice", "ResourceVariable on CPU:0"),
                    ("Mirrored", "MirroredVariable on CPU:0, CPU:1"),
                    ("Mirrored", "MirroredVariable on CPU:0, CPU:1, CPU:2, CPU:3"),
                    ("CentralStorage", "AggregatingVariable on CPU:0")}


def test_custom_loop_logs_the_mean_batch_loss_like_fit(report):
    by = {(r["strategy"], r["replicas"], r["how"]): r for r in report["runs"]}
    for key in [("default", 1), ("one device", 1), ("mirrored", 2)]:
        assert by[key + ("custom_loop",)]["logged"] == pytest.approx(by[key + ("fit",)]["logged"], rel=1e-4)


def test_chain_split_moves_each_activation_across_every_cut(report):
    rows = report["traffic"]["chain4"]
    between = [(r["from"], r["to"], r["shape"]) for r in rows if r["from"] != "input"]
    assert between == [("CPU:0", "CPU:1", [8, 32]), ("CPU:1", "CPU:2", [8, 32]), ("CPU:2", "CPU:3", [8, 32])]
    assert all(r["bytes"] == 8 * 32 * 4 for r in rows if r["from"] != "input")
    assert all(r["copied"] == 0 for r in rows), "CPU devices of one process hand the buffer over"
    assert [r for r in report["traffic"]["chain1"] if r["from"] != "input"] == []


def test_towers_cross_devices_only_at_input_and_join(report):
    rows = report["traffic"]["towers4"]
    joins = sorted((r["from"], r["to"], r["shape"]) for r in rows if r["from"] != "input")
    assert joins == [("CPU:1", "CPU:0", [8, 8]), ("CPU:2", "CPU:0", [8, 8]), ("CPU:3", "CPU:0", [8, 8])]
    assert sorted(r["to"] for r in rows if r["from"] == "input") == ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]


def test_model_parallel_verdicts_read_the_towers_concurrency():
    from course_lib import bench

    def comparison(**ms):
        names = {"chain1": "chain, one device", "chain4": "chain, 4 devices", "towers1": "towers, one device",
                 "towers4": "towers, 4 devices", "one": "one tower alone"}
        timings = [bench.Timing(names[k], v / 1e3, [v / 1e3 * f for f in (0.99, 1.0, 1.0, 1.01, 1.0)], 1)
                   for k, v in ms.items()]
        return bench.Comparison(timings, baseline="chain, one device")

    faster = str(distribute.model_parallel_verdicts(comparison(chain1=10, chain4=10, towers1=8, towers4=4, one=2), 4))
    assert "towers, 4 devices: 2x faster than towers, one device" in faster
    assert "would take 8 ms: on one device they ran about 1 at a time, on 4 devices about 2 at a time" in faster
    assert "splitting let more towers run side by side (1 -> 2 at a time)" in faster
    assert "chain, 4 devices against chain, one device: no measurable difference" in faster
    same = str(distribute.model_parallel_verdicts(comparison(chain1=10, chain4=10, towers1=4, towers4=4, one=2), 4))
    assert "changed nothing measurable" in same
    slower = str(distribute.model_parallel_verdicts(comparison(chain1=10, chain4=10, towers1=4, towers4=8, one=2), 4))
    assert "cost more in hand-overs and scheduling" in slower
    with pytest.raises(KeyError, match="one tower alone"):
        distribute.model_parallel_verdicts(comparison(chain1=10, chain4=10, towers1=4, towers4=8), 4)


def test_model_parallel_variants_build_every_shape():
    variants = distribute.model_parallel_variants(["/CPU:0"], width=8, depth=2, features=4)
    assert list(variants) == ["chain, one device", "chain, 1 devices", "towers, one device", "towers, 1 devices",
                              "one tower alone"]
    for build in variants.values():
        assert build(batch=3)().shape == (3, 8)


def test_strategies_benchmark_times_every_strategy(report):
    [comparison] = report["bench"]["comparisons"]
    assert [v["name"] for v in comparison["variants"]] == ["default", "one device", "mirrored x2", "mirrored x4",
                                                           "central storage x2"]
    assert comparison["params"] == {"global_batch": 16, "steps": 1}
    assert report["bench"]["machine"]["devices"][-1].endswith("CPU:3")


# -- in this process (one CPU device) ---------------------------------------------------------------------

def test_bad_strategy_and_batch_are_named():
    with pytest.raises(ValueError, match="unknown strategy 'parameter server'"):
        distribute.make_strategy("parameter server", ["/cpu:0"])
    with pytest.raises(ValueError, match="no devices given"):
        distribute.make_strategy("mirrored", [])
    strategy = distribute.make_strategy("one device", ["/cpu:0"])
    assert distribute.replicas(strategy, 64) == (1, 64)
    with pytest.raises(ValueError, match="multiple of 3"):
        distribute.replicas(type("S", (), {"num_replicas_in_sync": 3})(), 64)
    with pytest.raises(ValueError, match="split evenly into 3 towers"):
        distribute.towers(["/cpu:0"] * 3, width=32)
    with pytest.raises(ValueError, match="each device needs a layer"):
        distribute.chain(["/cpu:0"] * 3, depth=2)


def test_batch_size_study_reports_fixed_and_scaled_rates():
    x, y = distribute.regression_data(n=64)
    rows = distribute.batch_size_study(x, y, batch_sizes=(8, 32), epochs=1)
    assert [r["global batch"] for r in rows] == [8, 32]
    assert [r["updates"] for r in rows] == [8, 2]
    assert rows[1]["scaled learning rate"] == pytest.approx(4 * rows[1]["fixed learning rate"])


def test_strategy_steps_return_the_last_steps_loss():
    x, y = distribute.regression_data(n=64)
    run = distribute.strategy_steps(distribute.make_strategy("default"), x, y, global_batch=16, steps=3)
    loss = run()
    assert loss.shape == () and 0 < float(loss) < 10


# -- the multi-worker launcher ------------------------------------------------------------------------------

def test_tf_config_and_free_ports():
    ports = distribute.free_ports(3)
    assert len(set(ports)) == 3
    config = distribute.tf_config(ports, 2)
    assert config["cluster"]["worker"] == [f"127.0.0.1:{p}" for p in ports]
    assert config["task"] == {"type": "worker", "index": 2}


def test_worker_context_outside_a_worker_says_so(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(RuntimeError, match="inside a worker started by launch"):
        distribute.worker_context()


def test_launch_rejects_bad_input_before_starting_anything():
    with pytest.raises(ValueError, match="'module:function'"):
        distribute.launch("course_lib.distribute.multi_worker_train")
    with pytest.raises(ValueError, match="cannot find module 'no_such_module'"):
        distribute.launch("no_such_module:f")
    with pytest.raises(ValueError, match="n_workers"):
        distribute.launch("math:sqrt", 0)
    with pytest.raises(ValueError, match="timeout"):
        distribute.launch("math:sqrt", 1, timeout=0)
    with pytest.raises(TypeError, match="JSON"):
        distribute.launch("math:sqrt", 1, args=[object()])
    assert child_processes() == []


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_two_workers_train_in_step_and_leave_no_process():
    results = distribute.launch("course_lib.distribute:multi_worker_train", 2, kwargs={"steps": 3}, timeout=120)
    assert [r["worker"] for r in results] == [0, 1]
    assert all(r["replicas"] == 2 and r["workers"] == 2 for r in results)
    assert results[0]["losses"] == results[1]["losses"] and len(results[0]["losses"]) == 3
    assert results[0]["weights_checksum"] == results[1]["weights_checksum"]
    assert child_processes() == []


@pytest.mark.timeout(120)
def test_a_failing_worker_gives_a_clear_error_not_a_hang():
    start = time.monotonic()
    with pytest.raises(distribute.WorkerError, match=r"worker 1 of 2 .* exited with code 1") as info:
        distribute.launch("test_distribute:fail_on_worker_one", 2, timeout=90)
    assert "RuntimeError: boom from worker 1" in info.value.stderr_tail
    assert info.value.worker == 1 and info.value.returncode == 1
    assert time.monotonic() - start < 60, "the waiting worker was stopped, not waited for"
    assert child_processes() == []


@pytest.mark.timeout(60)
def test_a_worker_past_the_timeout_is_stopped():
    start = time.monotonic()
    with pytest.raises(distribute.WorkerTimeout, match=r"workers \[0, 1\] of 2 .* after 2 s"):
        distribute.launch("time:sleep", 2, args=[300], timeout=2)
    assert time.monotonic() - start < 20
    assert child_processes() == []
