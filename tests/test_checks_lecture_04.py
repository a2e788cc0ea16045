"""Lecture 04's checkers: the reference answers pass, plausible wrong answers fail and say why."""

import pytest
import tensorflow as tf

from course_lib import bench, checks, data


def failure(k, **answer):
    return checks.failure("04", k, **answer)


@pytest.fixture(scope="module")
def shards():
    with data.write_shards(4, 4, seed=0, features=4) as s:
        yield s


LATENCY = data.Latency(open_s=0.02, record_s=0.001, map_s=0.001)


def slow_pipeline(shards, latency, recorder=None):
    files = tf.data.Dataset.list_files(shards.pattern, shuffle=False)
    records = files.flat_map(lambda path: data.read_shard(path, latency, recorder))
    return records.map(data.decoder(shards, latency, recorder)).batch(8)


def fast(prefetch=True, parallel_reads=True, threads=8):
    def fast_pipeline(shards, latency, recorder=None):
        files = tf.data.Dataset.list_files(shards.pattern, shuffle=False)
        read = lambda path: data.read_shard(path, latency, recorder)  # noqa: E731
        records = (files.interleave(read, cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE) if parallel_reads
                   else files.flat_map(read))
        ds = records.batch(8).map(data.decoder(shards, latency, recorder), num_parallel_calls=tf.data.AUTOTUNE)
        if prefetch:
            ds = ds.prefetch(tf.data.AUTOTUNE)
        options = tf.data.Options()
        options.threading.private_threadpool_size = threads
        return ds.with_options(options)
    return fast_pipeline


@pytest.mark.slow
def test_fast_pipeline(shards):
    answer = dict(slow_pipeline=slow_pipeline, shards=shards, latency=LATENCY)
    assert failure(1, fast_pipeline=fast(), **answer) is None
    assert "does not end with a prefetch" in failure(1, fast_pipeline=fast(prefetch=False), **answer)
    assert "not read by a parallel interleave" in failure(1, fast_pipeline=fast(parallel_reads=False), **answer)
    assert "thread pool has 0 threads" in failure(1, fast_pipeline=fast(threads=0), **answer)
    assert "thread pool has 2 threads" in failure(1, fast_pipeline=fast(threads=2), **answer)
    assert failure(1, fast_pipeline=fast(threads=16), **answer) is None
    assert "not yield the same records" in failure(
        1, fast_pipeline=lambda s, lat, recorder=None: fast()(s, lat, recorder).take(1), **answer)


def test_shuffle_by_epochs():
    ds = tf.data.Dataset.range(50)
    assert failure(2, two_epochs=ds.shuffle(50, seed=7).repeat(2)) is None
    assert "an epoch leaks into the next" in failure(2, two_epochs=ds.repeat(2).shuffle(100, seed=7))
    assert "same order" in failure(2, two_epochs=ds.shuffle(50, seed=7, reshuffle_each_iteration=False).repeat(2))
    assert "not shuffled" in failure(2, two_epochs=ds.repeat(2))
    assert "expected 100 elements" in failure(2, two_epochs=ds.shuffle(50, seed=7))


def test_vectorise_map(shards):
    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "x": tf.io.FixedLenFeature([shards.features], tf.float32),
            "y": tf.io.FixedLenFeature([], tf.int64)}

    def parse_one(record):
        example = tf.io.parse_single_example(record, spec)
        return example["x"] * 2.0 + 1.0, example["y"]

    def parse_batch(records):
        example = tf.io.parse_example(records, spec)
        return example["x"] * 2.0 + 1.0, example["y"]

    def unscaled(records):
        example = tf.io.parse_example(records, spec)
        return example["x"], example["y"]

    records = tf.data.TFRecordDataset(shards.paths)
    assert failure(3, parse_batch=parse_batch, parse_one=parse_one, records=records) is None
    assert "other values" in failure(3, parse_batch=unscaled, parse_one=parse_one, records=records)
    assert "raised" in failure(3, parse_batch=parse_one, parse_one=parse_one, records=records)


def test_predict_epoch(shards):
    truth = 4 * LATENCY.open_s + shards.n_records * (LATENCY.record_s + LATENCY.map_s)
    assert failure(4, predicted_slow_s=truth, shards=shards, latency=LATENCY) is None
    no_opens = shards.n_records * (LATENCY.record_s + LATENCY.map_s)
    assert "is not the sum of the waits" in failure(4, predicted_slow_s=no_opens, shards=shards, latency=LATENCY)
    parallel = LATENCY.open_s + shards.n_records * (LATENCY.record_s + LATENCY.map_s) / 4
    assert "is not the sum of the waits" in failure(4, predicted_slow_s=parallel, shards=shards, latency=LATENCY)


@pytest.mark.slow
def test_measure_pipelines(shards):
    latency = data.Latency(0, 0, 0)
    fast_pipeline = fast()
    variants = {"slow": lambda: data.consume(slow_pipeline(shards, latency)),
                "fast": lambda: data.consume(fast_pipeline(shards, latency))}
    comparison = bench.compare(variants, baseline="slow", repeats=3, number=1)
    answer = dict(variants=variants, comparison=comparison, epoch_speedup=comparison.speedup("fast"),
                  slow_pipeline=slow_pipeline, fast_pipeline=fast_pipeline, shards=shards)
    assert failure(5, **answer) is None
    unconsumed = {**variants, "fast": lambda: fast_pipeline(shards, latency)}
    assert "iterate over the whole pipeline" in failure(5, **dict(answer, variants=unconsumed))
    one_batch = {**variants, "fast": lambda: data.consume(fast_pipeline(shards, latency).take(1))}
    assert "saw 8 records" in failure(5, **dict(answer, variants=one_batch))
    swapped = {"slow": variants["slow"], "fast": variants["slow"]}
    assert "does not call fast_pipeline" in failure(5, **dict(answer, variants=swapped))
    assert "epoch_speedup" in failure(5, **dict(answer, epoch_speedup=1 / answer["epoch_speedup"]))
