"""course_lib.data: every pipeline variant yields the naive pipeline's records; the record
of a run says who produced and consumed each element; shuffling keeps its promise."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from course_lib import data
from course_lib.benchmarks import tfdata

pytestmark = pytest.mark.timeout(120)

FAST = data.Latency(open_s=0.002, record_s=0.0002, map_s=0.0002)


@pytest.fixture(scope="module")
def shards():
    with data.write_shards(n_shards=3, records_per_shard=10, features=4, classes=3, seed=1) as s:
        yield s


def test_shards_are_tfrecord_files_holding_the_arrays(shards):
    assert len(shards.paths) == 3 and all(os.path.exists(p) for p in shards.paths)
    assert sorted(tf.io.gfile.glob(shards.pattern)) == shards.paths
    assert shards.n_records == 30 and shards.x.shape == (30, 4) and set(shards.y) <= {0, 1, 2}
    first = tf.io.parse_single_example(next(iter(tf.data.TFRecordDataset(shards.paths[1]))),
                                       data.record_spec(4))
    assert int(first["id"]) == 10
    np.testing.assert_array_equal(first["x"].numpy(), shards.x[10])


def test_temporary_folder_is_removed_on_cleanup():
    s = data.write_shards(n_shards=1, records_per_shard=2)
    folder = s.folder
    assert folder.exists()
    s.cleanup()
    assert not folder.exists()


def test_naive_pipeline_yields_every_record_in_file_order(shards):
    batches = list(data.pipeline(shards, "naive", latency=FAST, batch_size=4))
    ids = np.concatenate([b["id"].numpy() for b in batches])
    np.testing.assert_array_equal(ids, np.arange(30))
    assert [len(b["id"]) for b in batches] == [4] * 7 + [2]
    x = np.concatenate([b["x"].numpy() for b in batches])
    np.testing.assert_allclose(x, np.tanh(shards.x), rtol=1e-6)


@pytest.mark.parametrize("variant", [v for v in data.VARIANTS if v != "naive"])
def test_every_variant_yields_the_same_records_as_naive(shards, variant):
    reference = data.elements(data.pipeline(shards, "naive", latency=FAST, batch_size=4))
    got = data.elements(data.pipeline(shards, variant, latency=FAST, batch_size=4, threads=4))
    assert got.keys() == reference.keys()
    for i, (x, y) in reference.items():
        np.testing.assert_array_equal(got[i][0], x)
        assert got[i][1] == y
    assert data.same_records(got, reference)


def test_same_records_notices_a_difference(shards):
    reference = data.elements(data.pipeline(shards, "naive", latency=FAST))
    changed = dict(reference)
    changed[3] = (reference[3][0] + 1, reference[3][1])
    assert not data.same_records(changed, reference)
    del changed[3]
    assert not data.same_records(changed, reference)


def test_transformations_name_each_variant_s_operations(shards):
    ops = {v: data.transformations(data.pipeline(shards, v, latency=FAST)) for v in data.VARIANTS}
    assert ops["naive"] == ["TensorSliceDataset", "FlatMapDataset", "MapDataset", "BatchDatasetV2",
                            "AssertCardinalityDataset"]
    assert ops["prefetch"][-2:] == ["PrefetchDataset", "AssertCardinalityDataset"]
    assert "ParallelMapDatasetV2" in ops["parallel map"] and "FlatMapDataset" in ops["parallel map"]
    assert "ParallelInterleaveDatasetV4" in ops["interleave"]
    assert "CacheDatasetV2" in ops["cache"]
    vec = ops["vectorised"]
    assert vec.index("BatchDatasetV2") < vec.index("ParallelMapDatasetV2"), "batch, then map"
    assert "OptionsDataset" not in data.transformations(data.pipeline(shards, "naive", threads=2))


def test_every_variant_switches_off_the_rewrites_that_would_hide_its_steps(shards):
    for variant in data.VARIANTS:
        options = data.pipeline(shards, variant, latency=FAST, threads=2).options()
        assert options.experimental_optimization.map_and_batch_fusion is False
        assert options.experimental_optimization.inject_prefetch is False
        assert options.threading.private_threadpool_size == 2


def test_reads_overlap_only_when_interleaved(shards):
    slow_reads = data.Latency(open_s=0.002, record_s=0.002, map_s=0.0)
    naive = data.record_run(shards, "naive", latency=slow_reads)
    assert naive.concurrency("read") == naive.concurrency("map") == 1
    interleaved = data.record_run(shards, "interleave", latency=slow_reads, threads=4)
    assert interleaved.concurrency("read") >= 2


def test_building_blocks_compose_into_a_pipeline(shards):
    decode = data.decoder(shards, FAST)
    records = tf.data.Dataset.from_tensor_slices(shards.paths).flat_map(lambda p: data.read_shard(p, FAST))
    one_by_one = data.elements(records.map(decode).batch(7))
    batched = data.elements(records.batch(7).map(decode))
    assert data.same_records(batched, one_by_one) and len(one_by_one) == 30


@pytest.mark.parametrize("variant", ["prefetch", "parallel map"])
def test_order_preserving_variants_keep_file_order(shards, variant):
    ids = np.concatenate([b["id"].numpy() for b in data.pipeline(shards, variant, latency=FAST)])
    np.testing.assert_array_equal(ids, np.arange(30))


def test_cache_serves_later_epochs_without_reading(shards):
    recorder = data.Recorder()
    ds = data.pipeline(shards, "cache", latency=FAST, recorder=recorder)
    assert data.consume(ds) == 30
    recorder.start()
    assert data.consume(ds, recorder=recorder) == 30
    stages = {e.stage for e in recorder.events}
    assert stages == {"wait", "step"}


def test_vectorised_maps_once_per_batch(shards):
    naive = data.record_run(shards, "naive", latency=FAST, batch_size=5)
    vectorised = data.record_run(shards, "vectorised", latency=FAST, batch_size=5)
    count = lambda rec, stage: sum(e.stage == stage for e in rec.events)  # noqa: E731
    assert count(naive, "map") == 30 and count(vectorised, "map") == 6
    assert count(naive, "open") == count(vectorised, "open") == 3
    assert count(naive, "read") == count(vectorised, "read") == 30


def test_record_says_when_each_element_was_produced_and_consumed(shards):
    rec = data.record_run(shards, "prefetch", latency=FAST, batch_size=4, step_s=0.001)
    produced, consumed = rec.produced(), rec.consumed()
    assert sorted(produced) == sorted(consumed) == list(range(30))
    assert all(produced[i] <= consumed[i] for i in range(30))
    lanes = rec.lanes()
    assert lanes[rec.consumer] == "consumer"
    work = [e for e in rec.events if e.stage in ("open", "read", "map")]
    assert work and all(e.thread != rec.consumer for e in work), "tf.data work runs on its own threads"
    assert all(e.thread == rec.consumer for e in rec.events if e.stage in ("wait", "step"))
    assert {e.source for e in rec.events if e.stage == "open"} == {os.path.basename(p) for p in shards.paths}
    summary = rec.summary()
    assert summary["elements"] == 30 and summary["threads"] >= 2


def test_prefetch_produces_during_the_step_and_naive_does_not(shards):
    naive = data.record_run(shards, "naive", latency=FAST, batch_size=5, step_s=0.01)
    prefetch = data.record_run(shards, "prefetch", latency=FAST, batch_size=5, step_s=0.01)
    assert naive.overlap()["hidden_s"] == 0.0, "without prefetch the pipeline works only while the consumer waits"
    assert naive.overlap()["production_s"] > 0
    assert prefetch.overlap()["hidden_s"] > 0, "with prefetch the next batch is produced during the step"
    assert "hidden" in data.hidden_text("prefetch", prefetch)


def test_overlap_measures_the_intersection_of_production_and_steps():
    rec = data.Recorder()
    rec._events = [data.Event("read", 1, 0.0, 2.0), data.Event("map", 2, 1.0, 3.0),  # production 0-3
                   data.Event("read", 1, 5.0, 6.0),                                    # and 5-6
                   data.Event("step", 0, 2.5, 5.5), data.Event("wait", 0, 0.0, 2.5)]
    assert rec.overlap() == pytest.approx({"production_s": 4.0, "step_s": 3.0, "hidden_s": 1.0})


def test_work_computes_and_is_calibrated():
    work = data.Work(2)
    assert work.iterations >= 1 and np.isfinite(float(work(None)))
    assert "2 ms" in repr(work)
    with pytest.raises(ValueError, match="positive number of milliseconds"):
        data.Work(0)


def test_timeline_figure_has_a_lane_per_thread(shards):
    import matplotlib.pyplot as plt

    rec = data.record_run(shards, "interleave", latency=FAST, threads=4)
    ax = rec.plot(title="interleave")
    assert [t.get_text() for t in ax.get_yticklabels()] == list(rec.lanes().values())
    assert ax.get_title() == "interleave"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(data.Recorder.STAGES), "fixed colours"
    axes = data.plot_runs({"naive": data.record_run(shards, "naive", latency=FAST), "interleave": rec})
    assert len(axes) == 2
    plt.close("all")


def test_empty_recorder_cannot_plot():
    with pytest.raises(ValueError, match="nothing recorded"):
        data.Recorder().plot()


def test_compare_pipelines_measures_each_variant(shards):
    result = data.compare_pipelines(shards, ["naive", "vectorised"], latency=FAST, repeats=1)
    assert result.names == ["naive", "vectorised"] and result.baseline == "naive"
    assert all(t.median_s > 0 for t in result.timings)


@pytest.mark.slow
def test_benchmark_writes_every_variant(tmp_path):
    out = tmp_path / "tfdata.json"
    assert tfdata.bench_pipelines(["--shards", "2", "--records", "4", "--batch", "4", "--open-ms", "0",
                                 "--record-ms", "0", "--map-ms", "0", "--threads", "0", "2", "--repeats", "1",
                                 "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert len(saved["comparisons"]) == 2
    assert [v["name"] for v in saved["comparisons"][0]["variants"]] == list(data.VARIANTS)
    assert saved["comparisons"][1]["params"]["threads"] == 2


def test_widget_runs_headless(shards):
    w = data.pipeline_widget(shards, ["naive", "prefetch"], latency=FAST, step_ms=1, repeats=1)
    assert w.sizes["step_ms"] == [0, 1, 2]
    result = w.run(record_ms=FAST.record_s * 1e3 * 2, step_ms=2)
    assert result.names == ["naive", "prefetch"] and result.params["step_ms"] == 2
    with pytest.raises(ValueError, match="step_ms"):
        data.pipeline_widget(shards, latency=FAST, step_ms=-1)


def test_widget_uses_the_given_step_and_its_multiples(shards):
    work = data.Work(2)
    w = data.pipeline_widget(shards, ["naive"], latency=FAST, work=work, repeats=1)
    assert w.sizes["step_ms"] == [0, 2, 4]
    assert w.run(step_ms=4).params["step_ms"] == 4
    double = work.scaled(2)
    assert double.iterations == 2 * work.iterations and double.ms == 4 and work.ms == 2
    with pytest.raises(ValueError, match="pass one of them"):
        data.pipeline_widget(shards, latency=FAST, step_ms=3, work=work)
    with pytest.raises(ValueError, match="positive factor"):
        work.scaled(0)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="unknown pipeline variant 'fast'"):
        data.describe("fast")
    with pytest.raises(ValueError, match="Latency.record_s"):
        data.Latency(record_s=-1)
    with pytest.raises(TypeError, match="write_shards"):
        data.pipeline("/tmp/x", "naive")
    with pytest.raises(ValueError, match="n_shards"):
        data.write_shards(n_shards=0)


def test_shuffle_buffer_bounds_how_early_an_element_can_come_out():
    n = 100
    assert list(data.shuffle_order(n, 1)) == list(range(n))
    for b in (5, 20):
        order = data.shuffle_order(n, b, seed=3)
        assert sorted(order) == list(range(n))
        position = np.argsort(order)  # where each input index came out
        assert (np.arange(n) - position).max() <= b - 1
        np.testing.assert_array_equal(order, data.shuffle_order(n, b, seed=3))
    with pytest.raises(ValueError, match="buffer_size"):
        data.shuffle_order(10, 0)


def test_model_trains_on_the_pipeline_and_the_epoch_is_accounted_for(shards):
    model = data.make_model(shards.features, shards.classes, hidden=8, depth=1)
    ds = data.pipeline(shards, "interleave", latency=FAST, batch_size=10, threads=4)
    diagnosis = data.diagnose(model, ds, shards, batch_size=10, repeats=2)
    assert diagnosis.comparison.names == ["input only", "compute only", "training"]
    assert set(diagnosis.epochs) == {"compute only", "training"}
    for name, epoch in diagnosis.epochs.items():
        assert epoch["steps"] == 3, "30 records in batches of 10"
        whole = sum(epoch[p] for p in data.EPOCH_PARTS)
        assert all(epoch[p] >= 0 for p in data.EPOCH_PARTS)
        assert whole <= max(diagnosis.comparison[name].times_s) + 1e-3, "the parts are inside the timed epoch"
    assert diagnosis.unexplained_s == pytest.approx(diagnosis.training_s - diagnosis.input_s - diagnosis.compute_s)
    text = str(diagnosis.verdicts())
    assert "part by part" in text and "whole epoch" in diagnosis.table()


def _diagnosis(input_ms, compute_ms, training_ms, rounds=5, training_noise_ms=(0,) * 5):
    from course_lib import bench
    times = {"input only": [input_ms] * rounds, "compute only": [compute_ms] * rounds,
             "training": [training_ms + e for e in training_noise_ms[:rounds]]}
    timings = [bench.Timing(n, t[0] / 1e3, [v / 1e3 for v in t], 1) for n, t in times.items()]
    return data.Diagnosis(bench.Comparison(timings, baseline="training"))


def test_diagnosis_reports_time_beyond_input_plus_compute_without_a_share_of_overlap():
    slow = _diagnosis(100, 50, 300)
    assert slow.unexplained_s == pytest.approx(0.15) and not hasattr(slow, "overlap")
    assert slow.bound == "neither"
    assert ("training took 150 ms more than input and compute together, in every round: 150 ms is explained by "
            "neither half alone" in str(slow.verdicts()))
    hidden = _diagnosis(100, 50, 125)
    assert hidden.bound == "input"
    assert "training took 25 ms less than input and compute timed apart, in every round" in str(hidden.verdicts())
    assert "%" not in str(hidden.verdicts()) + str(slow.verdicts())
    assert _diagnosis(40, 100, 100).bound == "compute"
    assert repr(hidden).startswith("input-bound: input 100 ms")
    assert _diagnosis(40, 100, 100).bound_text == "compute-bound" and slow.bound_text == "bound by neither half"
    assert "training took no longer than the longer half alone" in str(_diagnosis(40, 100, 90).verdicts())


def test_the_larger_half_is_called_only_where_input_and_compute_differ_beyond_their_noise():
    jittered = (12, -9, 4, -11, 8)  # input and compute each drift round by round, in opposite directions
    times = {"input only": [100 + e for e in jittered], "compute only": [104 - e for e in jittered],
             "training": [210] * 5}
    from course_lib import bench
    even = data.Diagnosis(bench.Comparison([bench.Timing(n, t[0] / 1e3, [v / 1e3 for v in t], 1)
                                            for n, t in times.items()], baseline="training"))
    assert even.bound == "even" and even.bound_text == "bound by input and compute alike"
    text = str(even.verdicts())
    assert "this run cannot tell which is the larger part" in text and "the compute took 0.962x (95% interval" in text
    assert "larger part:" not in text
    fast = _diagnosis(40, 100, 100)
    assert data.bottleneck_text(even, fast).startswith(
        "The naive pipeline's diagnosis reads bound by input and compute alike, the fast one's compute-bound: so "
        "this run cannot tell whether the faster pipeline moved the bottleneck; the breakdowns above show where "
        "time went.")
    assert "moved the bottleneck from the input to the model" in data.bottleneck_text(_diagnosis(100, 50, 125), fast)


def test_the_time_beyond_input_plus_compute_is_called_only_where_every_round_agrees():
    mixed = _diagnosis(100, 50, 152, training_noise_ms=(5, -4, 3, -3, 0))  # rounds: +7, -2, +5, -1, +2 ms
    assert mixed.unexplained_rounds_s() == pytest.approx([0.007, -0.002, 0.005, -0.001, 0.002])
    text = str(mixed.verdicts())
    assert ("training against input and compute timed apart: 2 ms more by the medians, but the rounds disagree on "
            "the sign, so this run cannot tell whether the halves add up") in text
    assert "explained by neither half" not in text
    few = str(_diagnosis(100, 50, 300, rounds=3).verdicts())
    assert "training took 150 ms against input and compute timed apart, by the medians: too few rounds (3)" in few


def test_diagnose_times_every_epoch_with_autotuning_off(shards):
    ds = data.pipeline(shards, "interleave", latency=FAST, batch_size=10, threads=4)
    assert ds.options().autotune.enabled is not False
    alike = data.input_bound.timed_alike(ds)
    assert alike.options().autotune.enabled is False
    assert [b["id"].numpy().tolist() for b in alike] == [b["id"].numpy().tolist() for b in ds]


def test_consume_can_release_its_iterator_before_returning(shards):
    ds = data.pipeline(shards, "interleave", latency=FAST, batch_size=10, threads=4)
    assert data.consume(ds, release_here=True) == data.consume(ds) == shards.n_records
