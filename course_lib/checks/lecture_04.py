"""Checkers of lecture 04's exercises: fix an input-bound pipeline, shuffle by epochs, vectorise a map,
predict an epoch's time from its latencies, measure two pipelines in one run."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib import data
from course_lib.checks import answers, exercise, method


@exercise("04", 1, "fix a slow pipeline",
          "Look at lecture 04's pipeline variants: which transformations let reading, decoding and training "
          "overlap, and which run several calls at once?",
          "Three kinds of waiting can overlap: the files with one another, the decodes with one another, "
          "and the whole pipeline with its consumer. A stage that waits needs a thread to wait in, not a "
          "core.")
def fast_pipeline(fast_pipeline, slow_pipeline, shards, latency):
    instant = data.Latency(0, 0, 0)
    expected = data.elements(slow_pipeline(shards, instant))
    got = data.elements(answers.run("fast_pipeline", fast_pipeline, shards, instant))
    assert data.same_records(got, expected), "fast_pipeline does not yield the same records as slow_pipeline"
    ds = fast_pipeline(shards, latency)
    ops = data.transformations(ds)
    assert "ParallelInterleaveDatasetV4" in ops, f"the files are not read by a parallel interleave: {ops}"
    assert ops[-1] == "PrefetchDataset", f"the pipeline does not end with a prefetch: {ops}"
    threads = ds.options().threading.private_threadpool_size
    assert threads >= len(shards.paths), \
        f"the private thread pool has {threads} threads (0 means none): a waiting read needs a thread to " \
        f"wait in; give the pipeline a private pool of at least one thread per shard ({len(shards.paths)})"
    recorder = data.Recorder()
    data.consume(fast_pipeline(shards, latency, recorder), recorder=recorder)
    assert recorder.concurrency("read") >= 2, "the recorder saw no two files read at the same time"
    decodes = sum(e.stage == "map" for e in recorder.events)
    assert recorder.concurrency("map") >= 2 or decodes < shards.n_records, \
        "records are decoded one per call, one at a time: decode in parallel or a batch per call"


@exercise("04", 2, "shuffle by epochs",
          "Look at lecture 04's section on shuffle and repeat: where does the order of the two decide "
          "what an epoch holds?",
          "An epoch holds every element once only if the shuffle buffer never mixes two epochs; keep the "
          "default that reshuffles at every iteration.")
def shuffle_by_epochs(two_epochs):
    assert isinstance(two_epochs, tf.data.Dataset), \
        f"two_epochs should be a tf.data.Dataset, got {type(two_epochs).__name__}"
    values = [int(v) for v in two_epochs]
    assert len(values) == 100, f"expected 100 elements (two epochs of 50), got {len(values)}"
    first, second = values[:50], values[50:]
    assert sorted(first) == list(range(50)), \
        "the first 50 elements are not every number once: an epoch leaks into the next"
    assert sorted(second) == list(range(50)), "the second epoch does not hold every number once"
    assert first != list(range(50)), "the first epoch is not shuffled"
    assert first != second, "both epochs came out in the same order"
    ops = data.transformations(two_epochs)
    assert "ShuffleDataset" in " ".join(ops), f"no shuffle in the pipeline: {ops}"


@exercise("04", 3, "vectorise a map",
          "Look at lecture 04's section on vectorised maps: what parses many records in one call?",
          "The batched parser returns the same features with a batch axis in front; scale them the same way.")
def vectorise_map(parse_batch, parse_one, records):
    expected = list(records.map(parse_one).batch(8))
    got = answers.run("records.batch(8).map(parse_batch)", lambda: list(records.batch(8).map(parse_batch)))
    assert len(got) == len(expected), f"{len(got)} batches instead of {len(expected)}"
    for (gx, gy), (ex, ey) in zip(got, expected):
        assert gx.shape == ex.shape, f"features of shape {gx.shape}, expected {ex.shape}"
        method.same(gx, ex, "parse_batch's features")
        assert np.array_equal(gy.numpy(), ey.numpy()), "parse_batch's labels differ"


@exercise("04", 4, "predict an epoch's time",
          "Look at how lecture 04 simulates latency: which costs does slow_pipeline pay, how many times, "
          "and does any of them overlap another?",
          "Nothing in slow_pipeline runs beside anything else, so its waits add up. For each kind of "
          "latency, count how often one epoch pays it: once per shard, per record, or per call of the map "
          "(and how many records does one of slow_pipeline's map calls take?).")
def predict_epoch(predicted_slow_s, shards, latency):
    answers.number(predicted_slow_s, "predicted_slow_s")
    n_shards = len(shards.paths)
    truth = n_shards * latency.open_s + shards.n_records * (latency.record_s + latency.map_s)
    assert abs(predicted_slow_s - truth) <= 1e-6 * truth, \
        f"{predicted_slow_s} s is not the sum of the waits slow_pipeline pays in one epoch"


@exercise("04", 5, "measure two pipelines in one run",
          "Look at how lecture 04 times a pipeline: what must a variant do for the time to cover one epoch?",
          "Each variant builds its pipeline and iterates over all of it (data.consume does), returning the "
          "number of records it saw; both go into one bench.compare.")
def measure_pipelines(variants, comparison, epoch_speedup, slow_pipeline, fast_pipeline, shards):
    method.variants_named(variants, ["slow", "fast"])
    for name, fn in [("slow", slow_pipeline), ("fast", fast_pipeline)]:
        assert method.calls(variants[name], fn), f"the {name!r} variant does not call {name}_pipeline"
        seen = method.value_of(variants, name)
        assert isinstance(seen, (int, np.integer)) and not isinstance(seen, bool), (
            f"the {name!r} variant returns {type(seen).__name__}: iterate over the whole pipeline and return "
            "how many records it saw, so the time covers one epoch")
        assert seen == shards.n_records, f"the {name!r} variant saw {seen} records, not the epoch's {shards.n_records}"
    method.comparison(comparison, ["slow", "fast"], "slow", repeats=3)
    answers.number(epoch_speedup, "epoch_speedup")
    method.close(epoch_speedup, comparison.speedup("fast"), "epoch_speedup (the fast variant's speedup over slow)")
