"""course_lib.evo.sharding: evolve on a tf.distribute.Strategy.

On 2 and 4 virtual CPUs (a fresh process each: virtual devices are fixed when TensorFlow
starts) both global selection and islands reach the OneMax optimum and repeat exactly
with the same seed; checkpoint and resume, target and patience, callbacks' ``every`` work
as on one device, exactly; NSGA3's nested state is checkpointed by name per replica and resumes
exactly; one replica is the plain run bit for bit; strategies of 2, 4
and 1 replicas follow each other in one process; two worker processes under
MultiWorkerMirroredStrategy give the single-process result, resume a checkpoint into it,
and leave no process behind; bad sharding and bad options raise clear errors. Small
populations; XLA on 2 devices and across workers, graph mode on 4
(XLA compiles once per device: four compilations would double this file's time).
"""

import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from processes import child_processes

from course_lib import devices, distribute, evo, plotting, processes
from course_lib.benchmarks import ga_replicas
from course_lib.evo import sharding
from course_lib.lessons import evolution as benchmarks
from course_lib.lessons.evolution import onemax_model

pytestmark = pytest.mark.timeout(240)

TESTS = str(Path(__file__).resolve().parent)
LENGTH, INDIVIDUALS, GENERATIONS = 32, 64, 60
RUN = {"length": LENGTH, "individuals": INDIVIDUALS, "generations": GENERATIONS, "migration_interval": 5,
       "migrants": 2}


def virtual_device_report(replicas: int, mode: str) -> dict:
    """Run in a fresh process on ``replicas`` virtual CPUs: first a short run on 2 of them (strategies of
    different sizes in one process), both distributions twice, every engine feature per distribution
    (``engine_report``), one replica against the plain run, and the sharding error."""
    cpus = devices.virtual_cpus(replicas)
    model = onemax_model(LENGTH, mode)
    smaller = distribute.make_strategy("mirrored", cpus[:2])
    out = {"devices": len(cpus), "runs": {}, "engine": {}, "one replica": {},
           "smaller first": benchmarks.onemax_run(smaller, mode=mode, model=model, **{**RUN, "generations": 3})}
    strategy = distribute.make_strategy("mirrored", cpus)
    for how in sharding.DISTRIBUTIONS:
        out["runs"][how] = [benchmarks.onemax_run(strategy, distribution=how, mode=mode, model=model, **RUN)
                            for _ in range(2)]
        out["engine"][how] = engine_report(model, strategy, how)
    one = distribute.make_strategy("mirrored", cpus[:1])
    for how in sharding.DISTRIBUTIONS if replicas == 2 else ["islands"]:
        out["one replica"][how] = one_replica_report(model, one, how, with_target=replicas == 2)
    if replicas == 2:
        out["nsga3"] = {how: nsga3_report(strategy, how) for how in sharding.DISTRIBUTIONS}
    try:
        model.evolve(evo.population.random_integers((INDIVIDUALS - 1, LENGTH), 0, 2), generations=1,
                     strategy=strategy)
    except ValueError as exc:
        out["sharding_error"] = str(exc)
    return out


def same(a, b) -> bool:
    return (all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("population", "fitness", "best"))
            and (a.history, a.best_fitness, a.generations) == (b.history, b.best_fitness, b.generations))


class ChunkEnds(evo.callbacks.Callback):
    def __init__(self, every=None):
        self.every, self.seen = every, []

    def on_chunk_end(self, run):
        self.seen.append(run.generation)


def stale_counts(best: list) -> list:
    """Generations since the best so far last improved, after each generation of a history."""
    out, top, stale = [], -np.inf, 0
    for b in best:
        stale = 0 if b > top else stale + 1
        top = max(top, b)
        out.append(stale)
    return out


def engine_report(model, strategy, how) -> dict:
    """Checkpoint and resume, target and patience, ``every``: facts to compare with uninterrupted runs."""
    import tempfile

    pop = evo.population.random_integers((INDIVIDUALS, LENGTH), 0, 2, seed=0)
    opts = {"strategy": strategy, "distribution": how, "migration_interval": 5, "migrants": 2}
    whole = model.evolve(pop, generations=GENERATIONS, **opts)
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/run.npz"
        model.evolve(pop, generations=23, callbacks=[evo.callbacks.Checkpoint(path, every=23)], **opts)
        resumed = model.evolve(generations=GENERATIONS, resume_from=path, **opts)
    running = np.maximum.accumulate(whole.history["best"])
    target = float(running[9])  # the best so far after 10 generations
    by_target = model.evolve(pop, generations=GENERATIONS, callbacks=[evo.callbacks.EarlyStopping(target=target)],
                             **opts)
    patience = evo.callbacks.EarlyStopping(patience=6)
    by_patience = model.evolve(pop, generations=GENERATIONS, callbacks=[patience], **opts)
    ends = ChunkEnds(every=7)
    model.evolve(pop, generations=30, callbacks=[ends], **opts)
    return {"resumed == whole": same(resumed, whole),
            "target stop": by_target.generations, "target expected": int(np.argmax(running >= target)) + 1,
            "target run == plain run that long": same(by_target, model.evolve(pop, generations=by_target.generations,
                                                                            **opts)),
            "patience stop": patience.stopped_generation, "stopped early": by_patience.stopped_early,
            "patience expected": stale_counts(whole.history["best"]).index(6) + 1,
            "patience run == plain run that long": same(by_patience, model.evolve(
                pop, generations=by_patience.generations, **opts)),
            "chunk ends": ends.seen}


def one_replica_report(model, strategy, how, with_target: bool) -> dict:
    """One replica against the plain run, to the end and (``with_target``) stopped by a target."""
    pop = evo.population.random_integers((INDIVIDUALS, LENGTH), 0, 2, seed=0)
    opts = {"distribution": how, "migration_interval": 5, "migrants": 2}
    plain = model.evolve(pop, generations=GENERATIONS)
    out = {"== plain": same(plain, model.evolve(pop, generations=GENERATIONS, strategy=strategy, **opts))}
    if with_target:
        stop = evo.callbacks.EarlyStopping(target=LENGTH - 1)
        out["stopped == plain stopped"] = same(model.evolve(pop, generations=GENERATIONS, callbacks=[stop]),
                                               model.evolve(pop, generations=GENERATIONS, callbacks=[stop],
                                                            strategy=strategy, **opts))
    return out


def nsga3_report(strategy, how) -> dict:
    """NSGA3 carries a nested state (``nsga3.Normalization``) on every replica: a checkpoint holds it by name,
    stacked per replica, and resumes into the uninterrupted run."""
    import tempfile

    from course_lib.problems import dtlz

    problem = dtlz.dtlz(2, 3, distance_variables=4, partitions=6)
    model = dtlz.model(problem, evo.selection.NSGA3(), mode="graph", seed=2)
    pop = dtlz.start(problem, 32, seed=1)
    opts = {"strategy": strategy, "distribution": how, "migration_interval": 3}
    whole = model.evolve(pop, generations=8, **opts)
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/run.npz"
        model.evolve(pop, generations=4, callbacks=[evo.callbacks.Checkpoint(path, every=4)], **opts)
        with np.load(path) as saved:
            shapes = {name: list(saved[name].shape) for name in saved.files if "selection_state" in name}
        resumed = model.evolve(generations=8, resume_from=path, **opts)
    return {"shapes": shapes, "resumed == whole": same(resumed, whole)}


def _in_fresh_process(call: str) -> dict:
    source = f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import test_evo_sharding as t
        result = {call}
    """
    return processes.run(source=textwrap.dedent(source), env={"TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=200).result


@pytest.fixture(scope="module")
def two():
    return _in_fresh_process("t.virtual_device_report(2, 'xla')")


@pytest.fixture(scope="module")
def four():
    return _in_fresh_process("t.virtual_device_report(4, 'graph')")

# -- virtual CPUs ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("report", ["two", "four"])
@pytest.mark.parametrize("mode", sharding.DISTRIBUTIONS)
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


@pytest.mark.parametrize("report", ["two", pytest.param("four", marks=pytest.mark.slow)])
@pytest.mark.parametrize("how", sharding.DISTRIBUTIONS)
def test_every_engine_feature_works_under_a_strategy(report, how, request):
    check_engine_facts(request.getfixturevalue(report)["engine"][how])


def check_engine_facts(facts: dict) -> None:
    """What ``engine_report`` must find under any strategy."""
    assert facts["resumed == whole"]  # checkpoint at 23 (between migrations), resumed to 60: bit for bit
    assert 1 < facts["target stop"] == facts["target expected"] <= 10  # the exact generation, not a chunk's end
    assert facts["target run == plain run that long"]
    assert facts["stopped early"] and facts["patience stop"] == facts["patience expected"] < GENERATIONS
    assert facts["patience run == plain run that long"]
    assert facts["chunk ends"] == [7, 14, 21, 28, 30]  # a callback's every=7 ends the chunks


def multi_worker_report(checkpoint: str) -> dict:
    """In each worker of one ``distribute.launch`` (starting two processes and their collectives costs more
    than these runs): both distributions as ``two`` runs them, a checkpoint at generation 23 resumed into
    ``checkpoint`` (``{worker}`` in it), and every engine feature (graph mode)."""
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG; first TF call of the worker
    worker = distribute.worker_context()["index"]
    model = onemax_model(LENGTH, "graph")
    return {"worker": worker,
            "runs": {how: benchmarks.onemax_run(strategy, distribution=how, **RUN)
                     for how in sharding.DISTRIBUTIONS},
            "resumed": benchmarks.resumable_onemax(strategy, checkpoint.format(worker=worker), 23,
                                                   distribution="islands", **RUN),
            "engine": {how: engine_report(model, strategy, how) for how in sharding.DISTRIBUTIONS}}


@pytest.fixture(scope="module")
def workers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("workers")
    out = distribute.launch("test_evo_sharding:multi_worker_report", 2, timeout=380,
                            kwargs={"checkpoint": str(folder / "worker{worker}.npz")})
    return {"reports": out, "folder": folder, "left behind": child_processes()}


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_every_engine_feature_works_under_multi_worker_mirrored_strategy(workers):
    first, second = workers["reports"]
    assert first["engine"] == second["engine"]  # both workers hold the whole result
    for how in sharding.DISTRIBUTIONS:
        check_engine_facts(first["engine"][how])


@pytest.mark.parametrize("how", sharding.DISTRIBUTIONS)
def test_a_nested_selection_state_is_saved_by_name_per_replica_and_resumes(two, how):
    facts = two["nsga3"][how]
    assert facts["shapes"] == {"selection_state.ideal": [3], "selection_state.worst": [3],
                               "selection_state.extremes": [3, 3], "replica_selection_state.ideal": [2, 3],
                               "replica_selection_state.worst": [2, 3], "replica_selection_state.extremes": [2, 3, 3]}
    assert facts["resumed == whole"]


@pytest.mark.parametrize("how", sharding.DISTRIBUTIONS)
def test_one_replica_is_the_plain_run_bit_for_bit(two, how):
    assert two["one replica"][how] == {"== plain": True, "stopped == plain stopped": True}


def test_strategies_of_different_sizes_follow_each_other_in_one_process(four):
    # 2 replicas, then 4, then 1 in one process: TensorFlow's collectives would refuse the second group size
    assert four["smaller first"]["replicas"] == 2 and four["smaller first"]["generations"] == 3
    assert four["runs"]["global"][0]["replicas"] == 4
    assert four["one replica"]["islands"]["== plain"]


@pytest.mark.parametrize("report", ["two", "four"])
def test_a_population_that_does_not_split_is_refused(report, request):
    report = request.getfixturevalue(report)
    replicas = report["devices"]
    assert f"population of {INDIVIDUALS - 1} individuals does not split evenly over {replicas} replicas" \
        in report["sharding_error"]
    assert f"use a multiple of {replicas}" in report["sharding_error"]


# -- several processes -------------------------------------------------------------------------------


@pytest.mark.timeout(400)
def test_two_workers_give_the_single_process_result_and_leave_no_process(two, workers):
    assert [w["worker"] for w in workers["reports"]] == [0, 1]
    first, second = (w["runs"] for w in workers["reports"])
    assert first == second  # both workers hold the whole result
    for mode in sharding.DISTRIBUTIONS:
        assert first[mode]["replicas"] == 2 and first[mode]["best_fitness"] == LENGTH
        # the same replicas and keys as MirroredStrategy over 2 virtual CPUs: the same run
        assert first[mode] == two["runs"][mode][0]
    assert workers["left behind"] == []


@pytest.mark.timeout(400)
def test_two_workers_resume_a_checkpoint_into_the_uninterrupted_run(two, workers):
    first, second = (w["resumed"] for w in workers["reports"])
    assert first == second == two["runs"]["islands"][0]
    assert (workers["folder"] / "worker0.npz").exists() and (workers["folder"] / "worker1.npz").exists()


# -- one device, in this process -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_device():
    return tf.distribute.OneDeviceStrategy("/cpu:0")


@pytest.mark.parametrize("mode", sharding.DISTRIBUTIONS)
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
    # one replica draws the plain run's random numbers: the same run, stopped alike
    assert same(result, plain) and plain.stopped_early


def test_a_checkpoint_resumes_only_under_the_executor_that_wrote_it(one_device, tmp_path):
    model, path = onemax_model(LENGTH, "graph"), tmp_path / "islands.npz"
    genes = evo.population.random_integers((INDIVIDUALS, LENGTH), 0, 2, seed=0)
    model.evolve(genes, generations=4, strategy=one_device, distribution="islands", migration_interval=5,
                 callbacks=[evo.callbacks.Checkpoint(path, every=4)])
    with pytest.raises(ValueError, match=r"different model or run(.|\n)*islands, migration every 5(.|\n)*global"):
        model.evolve(generations=8, resume_from=path, strategy=one_device)
    with pytest.raises(ValueError, match=r"(.|\n)*islands(.|\n)*this model:\n(.|\n)*one device"):
        model.evolve(generations=8, resume_from=path)


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
        sharding.shard_size(64, 3)
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
    assert sharding.traffic(model, 1024, 4, "global")["bytes per generation"] == 1024 * 36
    islands = sharding.traffic(model, 1024, 4, "islands", migration_interval=8, migrants=2)
    assert islands["rows gathered"] == 8 and islands["bytes per generation"] == 8 * 36 / 8
    assert sharding.traffic(model, 1024, 1, "islands")["bytes per generation"] == 0
    inputs = evo.Input((100,), "float32")
    floats = evo.Model(inputs, evo.ops.GaussianMutation(stddev=0.1)(inputs))
    floats.compile(fitness=evo.fitness.Rastrigin(), selection=evo.selection.Elitist(), mode="graph")
    assert sharding.traffic(floats, 64, 2, "global")["bytes per generation"] == 2 * 64 * 404  # parents too
    with pytest.raises(ValueError, match="unknown distribution 'ring'"):
        sharding.traffic(model, 64, 2, "ring")


def test_histories_plot_one_line_per_run(one_device):
    model = onemax_model(LENGTH, "graph")
    genes = evo.population.random_integers((16, LENGTH), 0, 2)
    runs = {how: model.evolve(genes, generations=5, strategy=one_device, distribution=how)
            for how in sharding.DISTRIBUTIONS}
    ax = plotting.fitness_histories(runs, "mean", title="t")
    assert [line.get_label() for line in ax.lines] == list(runs) and len(ax.lines[0].get_xdata()) == 5


def test_the_replica_benchmark_checks_its_arguments_before_starting_processes():
    with pytest.raises(SystemExit):
        ga_replicas.bench_replicas(["--replicas", "0"])
    with pytest.raises(ValueError, match="does not split evenly over 3 replicas"):
        ga_replicas.bench_replicas(["--quick", "--replicas", "3"])


def test_permutation_genomes_stay_tours_when_sharded(one_device):
    from course_lib.lessons import applications as app

    xy = app.cities("circle", 10, seed=0)
    model = app.tsp_model(xy, mode="graph")
    result = model.evolve(app.tour_population(32, 10, seed=0), generations=40, strategy=one_device,
                          distribution="islands", migration_interval=10)
    assert all(app.is_tour(t, 10) for t in result.population)
    assert result.best_fitness == pytest.approx(app.optimal_length("circle", 10), rel=1e-5)
