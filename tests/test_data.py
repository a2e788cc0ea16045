"""course_lib.data: every pipeline variant yields the naive pipeline's records; the record
of a run says who produced and consumed each element; shuffling keeps its promise."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from course_lib import data

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
                                       data._spec(4))
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
    assert data.transformations(data.pipeline(shards, "naive", threads=2))[-1] == "OptionsDataset"


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


def test_benchmark_writes_every_variant(tmp_path):
    out = tmp_path / "tfdata.json"
    assert data.bench_pipelines(["--shards", "2", "--records", "4", "--batch", "4", "--open-ms", "0",
                                 "--record-ms", "0", "--map-ms", "0", "--threads", "0", "2", "--repeats", "1",
                                 "--json", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert len(saved["comparisons"]) == 2
    assert [v["name"] for v in saved["comparisons"][0]["variants"]] == list(data.VARIANTS)
    assert saved["comparisons"][1]["params"]["threads"] == 2


def test_widget_runs_headless(shards):
    w = data.pipeline_widget(shards, ["naive", "prefetch"], latency=FAST, repeats=1)
    result = w.run(record_ms=FAST.record_s * 1e3 * 2)
    assert result.names == ["naive", "prefetch"]


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


def test_model_trains_on_the_pipeline_and_diagnosis_names_the_bound(shards):
    model = data.make_model(shards.features, shards.classes, hidden=8, depth=1)
    ds = data.pipeline(shards, "interleave", latency=FAST, batch_size=10, threads=4)
    diagnosis = data.diagnose(model, ds, shards, batch_size=10, repeats=1)
    assert diagnosis.comparison.names == ["input only", "compute only", "training"]
    assert diagnosis.bound in ("input", "compute")
    assert 0.0 <= diagnosis.overlap <= 1.0
    assert "bound" in repr(diagnosis)
