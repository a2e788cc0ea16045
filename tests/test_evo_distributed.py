"""course_lib.evo.distributed: evolve on a tf.distribute.Strategy.

On 2 and 4 virtual CPUs (a fresh process each: virtual devices are fixed when TensorFlow
starts) both global selection and islands reach the OneMax optimum and repeat exactly
with the same seed; two worker processes under MultiWorkerMirroredStrategy give the
single-process result and leave no process behind; bad sharding and bad options raise
clear errors. Small populations; XLA on 2 devices and across workers, graph mode on 4
(XLA compiles once per device: four compilations would double this file's time).
"""

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from course_lib import devices, distribute, evo, plotting
from course_lib.evo import benchmarks, distributed
from course_lib.evo.benchmarks import onemax_model

from processes import child_processes

pytestmark = pytest.mark.timeout(240)

TESTS = str(Path(__file__).resolve().parent)
LENGTH, INDIVIDUALS, GENERATIONS = 32, 64, 60
RUN = {"length": LENGTH, "individuals": INDIVIDUALS, "generations": GENERATIONS, "migration_interval": 5,
       "migrants": 2}


def virtual_device_report(replicas: int, mode: str) -> dict:
    """Run in a fresh process: both distributions twice on ``replicas`` virtual CPUs, and the sharding error."""
    cpus = devices.virtual_cpus(replicas)
    strategy = distribute.make_strategy("mirrored", cpus)
    out = {"devices": len(cpus), "runs": {}}
    model = onemax_model(LENGTH, mode)
    for how in distributed.DISTRIBUTIONS:
        out["runs"][how] = [benchmarks.onemax_run(strategy, distribution=how, mode=mode, model=model, **RUN)
                            for _ in range(2)]
    try:
        model.evolve(evo.population.random_integers((INDIVIDUALS - 1, LENGTH), 0, 2), generations=1,
                     strategy=strategy)
    except ValueError as exc:
        out["sharding_error"] = str(exc)
    return out


def _in_fresh_process(call: str) -> dict:
    source = f"""
        import json, sys
        sys.path.insert(0, {TESTS!r})
        import test_evo_distributed as t
        print("REPORT " + json.dumps({call}))
    """
    proc = devices.run_python(textwrap.dedent(source), env={"TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=200)
    return json.loads([s for s in proc.stdout.splitlines() if s.startswith("REPORT ")][-1][len("REPORT "):])


@pytest.fixture(scope="module")
def two():
    return _in_fresh_process("t.virtual_device_report(2, 'xla')")


@pytest.fixture(scope="module")
def four():
    return _in_fresh_process("t.virtual_device_report(4, 'graph')")

# -- virtual CPUs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("report", ["two", "four"])
@pytest.mark.parametrize("mode", distributed.DISTRIBUTIONS)
def test_both_modes_reach_the_optimum_and_repeat_exactly(report, mode, request):
    report = request.getfixturevalue(report)
    first, second = report["runs"][mode]
    assert first["replicas"] == report["devices"]
    assert first["best_fitness"] == max(first["best_history"]) == LENGTH
    assert len(first["best_history"]) == first["generations"] == GENERATIONS
    assert first["mean_history"][-1] > first["mean_history"][0]
    assert first == second  # same seed: same history and the same final population


def test_islands_and_global_select_differently(two):
    assert two["runs"]["global"][0]["population_digest"] != two["runs"]["islands"][0]["population_digest"]


@pytest.mark.parametrize("report", ["two", "four"])
def test_a_population_that_does_not_split_is_refused(report, request):
    report = request.getfixturevalue(report)
    replicas = report["devices"]
    assert f"population of {INDIVIDUALS - 1} individuals does not split evenly over {replicas} replicas" \
        in report["sharding_error"]
    assert f"use a multiple of {replicas}" in report["sharding_error"]


# -- several processes -------------------------------------------------------------------------------


@pytest.mark.timeout(200)
def test_two_workers_give_the_single_process_result_and_leave_no_process(two):
    for mode in distributed.DISTRIBUTIONS:
        workers = distribute.launch("course_lib.evo.benchmarks:multi_worker_onemax", 2,
                                    kwargs={"distribution": mode, **RUN}, timeout=150)
        assert [w.pop("worker") for w in workers] == [0, 1]
        assert workers[0] == workers[1]  # both workers hold the whole result
        assert workers[0]["replicas"] == 2 and workers[0]["best_fitness"] == LENGTH
        # the same replicas and keys as MirroredStrategy over 2 virtual CPUs: the same run
        assert workers[0] == two["runs"][mode][0]
        assert child_processes() == []


def assert_same(a, b):
    for field in ("population", "fitness", "best"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert (a.history, a.best_fitness, a.generations, a.stopped_early) == \
        (b.history, b.best_fitness, b.generations, b.stopped_early)


# -- one device, in this process -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_device():
    return tf.distribute.OneDeviceStrategy("/cpu:0")


@pytest.mark.parametrize("mode", distributed.DISTRIBUTIONS)
def test_one_device_strategy_evolves_like_a_plain_run(one_device, mode):
    model = onemax_model(LENGTH, "graph")
    genes = evo.population.random_integers((INDIVIDUALS, LENGTH), 0, 2, seed=0)
    stop = evo.callbacks.EarlyStopping(target=LENGTH)
    result = model.evolve(genes, generations=200, strategy=one_device, distribution=mode, chunk=10,
                          migration_interval=5, callbacks=[stop])
    assert result.best_fitness == LENGTH and result.best.sum() == LENGTH
    assert result.stopped_early and result.generations < 200
    assert stop.stopped_generation == result.generations == len(result.history["best"])
    assert result.population.shape == (INDIVIDUALS, LENGTH) and result.population.dtype == np.int32
    np.testing.assert_array_equal(result.fitness, result.population.sum(axis=1))
    plain = model.evolve(genes, generations=200, chunk=10, callbacks=[evo.callbacks.EarlyStopping(target=LENGTH)])
    assert_same(result, plain)  # one replica draws the plain run's random numbers: the same run, stopped alike


def test_float_genomes_and_elitist_selection_run_sharded(one_device):
    inputs = evo.Input((6,), "float32")
    x = evo.ops.UniformCrossover()(evo.ops.GaussianMutation(stddev=0.2, rate=0.5, low=-5.12, high=5.12)(inputs))
    model = evo.Model(inputs, x)
    model.compile(fitness=evo.fitness.Rastrigin(), selection=evo.selection.Elitist(), mode="graph", seed=1)
    result = model.evolve(evo.population.uniform((32, 6), -5.12, 5.12, seed=1), generations=30,
                          strategy=one_device, distribution="islands", migration_interval=7)
    best = result.history["best"]
    assert result.generations == 30 and len(best) == 30
    assert all(b >= a for a, b in zip(best[1:], best))  # elitist: the best never gets worse
    assert result.best_fitness == min(best) and np.abs(result.population).max() <= 5.12


def test_bad_options_are_named(one_device):
    model = onemax_model(LENGTH, "graph")
    genes = evo.population.random_integers((INDIVIDUALS, LENGTH), 0, 2)
    with pytest.raises(ValueError, match="does not split evenly over 3 replicas: use a multiple of 3"):
        distributed.shard_size(64, 3)
    with pytest.raises(ValueError, match="unknown distribution 'ring'"):
        model.evolve(genes, strategy=one_device, distribution="ring")
    with pytest.raises(ValueError, match="migrants=64 must be fewer than the 64 individuals"):
        model.evolve(genes, strategy=one_device, distribution="islands", migrants=64)
    with pytest.raises(ValueError, match="migration_interval must be a whole number >= 1"):
        model.evolve(genes, strategy=one_device, distribution="islands", migration_interval=0)
    with pytest.raises(TypeError, match="strategy must be a tf.distribute.Strategy"):
        model.evolve(genes, strategy="mirrored")
    eager = onemax_model(LENGTH, "eager")
    with pytest.raises(ValueError, match="compile the model with mode='graph', 'xla' or 'auto'"):
        eager.evolve(genes, strategy=one_device)


def test_a_strategy_on_devices_that_do_not_exist_is_refused():
    missing = devices.missing_device("GPU")
    strategy = tf.distribute.MirroredStrategy([missing, "/cpu:0"])  # TF accepts it, and would run on the CPU
    with pytest.raises(ValueError, match=r"devices GPU:\d are not available here"):
        onemax_model(LENGTH, "graph").evolve(evo.population.random_integers((8, LENGTH), 0, 2), strategy=strategy)


def test_traffic_counts_what_crosses_devices():
    model = onemax_model(256, "graph")  # packed: 8 words of 4 bytes, and a 4-byte fitness
    assert distributed.traffic(model, 1024, 4, "global")["bytes per generation"] == 1024 * 36
    islands = distributed.traffic(model, 1024, 4, "islands", migration_interval=8, migrants=2)
    assert islands["rows gathered"] == 8 and islands["bytes per generation"] == 8 * 36 / 8
    assert distributed.traffic(model, 1024, 1, "islands")["bytes per generation"] == 0
    inputs = evo.Input((100,), "float32")
    floats = evo.Model(inputs, evo.ops.GaussianMutation(stddev=0.1)(inputs))
    floats.compile(fitness=evo.fitness.Rastrigin(), selection=evo.selection.Elitist(), mode="graph")
    assert distributed.traffic(floats, 64, 2, "global")["bytes per generation"] == 2 * 64 * 404  # parents too
    with pytest.raises(ValueError, match="unknown distribution 'ring'"):
        distributed.traffic(model, 64, 2, "ring")


def test_histories_plot_one_line_per_run(one_device):
    model = onemax_model(LENGTH, "graph")
    genes = evo.population.random_integers((16, LENGTH), 0, 2)
    runs = {how: model.evolve(genes, generations=5, strategy=one_device, distribution=how)
            for how in distributed.DISTRIBUTIONS}
    ax = plotting.fitness_histories(runs, "mean", title="t")
    assert [line.get_label() for line in ax.lines] == list(runs) and len(ax.lines[0].get_xdata()) == 5


def test_the_replica_benchmark_checks_its_arguments_before_starting_processes():
    with pytest.raises(SystemExit):
        benchmarks.bench_replicas(["--replicas", "0"])
    with pytest.raises(ValueError, match="does not split evenly over 3 replicas"):
        benchmarks.bench_replicas(["--quick", "--replicas", "3"])


def test_permutation_genomes_stay_tours_when_sharded(one_device):
    from course_lib.evo import applications as app

    xy = app.cities("circle", 10, seed=0)
    model = app.tsp_model(xy, mode="graph")
    result = model.evolve(app.tour_population(32, 10, seed=0), generations=40, strategy=one_device,
                          distribution="islands", migration_interval=10)
    assert all(app.is_tour(t, 10) for t in result.population)
    assert result.best_fitness == pytest.approx(app.optimal_length("circle", 10), rel=1e-5)
