"""Lecture 05's checkers: the reference answers pass, plausible wrong answers fail and say why.

The exercises need two logical CPUs, which must be made before TensorFlow starts, so the answers are
checked in a fresh process (``processes.run``) that returns each checker's complaint.
"""

import textwrap

import pytest

from course_lib import processes

CHILD = textwrap.dedent('''
    import keras
    import numpy as np
    import tensorflow as tf
    from course_lib import bench, checks, devices, distribute

    tf.get_logger().setLevel("ERROR")
    cpus = devices.virtual_cpus(2)
    f = lambda k, **a: checks.failure("05", k, **a)
    out = {}
    x, y = distribute.regression_data(n=64)
    BATCH = 16
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)

    def plain_training():
        model = distribute.make_model(x.shape[1], seed=0)
        optimizer = keras.optimizers.SGD(0.05)

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss
        return step, [float(step(xb, yb)) for xb, yb in dataset]

    single_step, single_losses = plain_training()

    def mirrored(devices_, op=tf.distribute.ReduceOp.SUM):
        strategy = tf.distribute.MirroredStrategy(devices_, cross_device_ops=tf.distribute.ReductionToOneDevice())
        with strategy.scope():
            model = distribute.make_model(x.shape[1], seed=0)
            optimizer = keras.optimizers.SGD(0.05)

        def replica_step(xb, yb):
            with tf.GradientTape() as tape:
                per_example = tf.reduce_mean(tf.square(model(xb, training=True) - yb), axis=-1)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=BATCH)
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss

        @tf.function
        def step(batch):
            return strategy.reduce(op, strategy.run(replica_step, args=batch), axis=None)

        distributed = strategy.experimental_distribute_dataset(dataset)
        return dict(strategy=strategy, mirrored_step=step, distributed=distributed,
                    mirrored_losses=[float(step(b)) for b in distributed], single_losses=single_losses)

    answer = mirrored(cpus)
    out["1 ok"] = f(1, **answer)
    unused_step, unused_losses = plain_training()  # a strategy is made, but the loop never uses it
    out["1 strategy unused"] = f(1, **dict(answer, mirrored_step=unused_step, distributed=dataset,
                                           mirrored_losses=unused_losses))
    out["1 step on one replica"] = f(1, **dict(answer, mirrored_step=tf.function(lambda batch: tf.constant(0.0))))
    out["1 mean of replicas"] = f(1, **mirrored(cpus, tf.distribute.ReduceOp.MEAN))
    out["1 one device"] = f(1, **mirrored(cpus[:1]))

    strategy = answer["strategy"]
    out["2 ok"] = f(2, global_batch=32, learning_rate=0.02, steps_per_epoch=8, mirrored=strategy, n_examples=256)
    out["2 rate not scaled"] = f(2, global_batch=32, learning_rate=0.01, steps_per_epoch=8, mirrored=strategy,
                                 n_examples=256)
    out["2 per-replica batch"] = f(2, global_batch=16, learning_rate=0.01, steps_per_epoch=16, mirrored=strategy,
                                   n_examples=256)
    out["2 partial batch dropped"] = f(2, global_batch=32, learning_rate=0.02, steps_per_epoch=7, mirrored=strategy,
                                       n_examples=250)

    xb, yb = next(iter(dataset))
    batch = next(iter(answer["distributed"]))
    mirrored_step = answer["mirrored_step"]
    variants = {"one device": lambda: single_step(xb, yb), "mirrored": lambda: mirrored_step(batch)}
    c = bench.compare(variants, baseline="one device", repeats=5, number=1)
    measured = dict(variants=variants, comparison=c, mirrored_speedup=c.speedup("mirrored"),
                    single_step=single_step, mirrored_step=mirrored_step)
    out["3 ok"] = f(3, **measured)
    out["3 mirrored calls the single step"] = f(
        3, **dict(measured, variants={**variants, "mirrored": variants["one device"]}))
    out["3 inverted"] = f(3, **dict(measured, mirrored_speedup=1 / c.speedup("mirrored")))
    two = bench.compare(variants, baseline="mirrored", repeats=5, number=1)
    out["3 wrong baseline"] = f(3, **dict(measured, comparison=two))

    split = dict(strategy=strategy, n_examples=245, batch=48, x=x.repeat(4, axis=0))
    out["4 ok"] = f(4, last_batch_per_replica=[3, 2], **split)
    out["4 swapped"] = f(4, last_batch_per_replica=[2, 3], **split)
    out["4 full batch"] = f(4, last_batch_per_replica=[24, 24], **split)
    out["4 not a list"] = f(4, last_batch_per_replica=5, **split)
    result = out
''')


@pytest.fixture(scope="module")
def results():
    return processes.run(source=CHILD, timeout=300).result


@pytest.mark.parametrize("case, complaint", [
    ("1 ok", None),
    ("1 strategy unused", "distributed by the strategy"),
    ("1 step on one replica", "no operation of mirrored_step runs on the second replica"),
    ("1 mean of replicas", "losses differ"),
    ("1 one device", "1 replica(s)"),
    ("2 ok", None),
    ("2 rate not scaled", "linear scaling rule"),
    ("2 per-replica batch", "does not give each of the 2 replicas 16"),
    ("2 partial batch dropped", "do not cover 250 examples"),
    ("3 ok", None),
    ("3 mirrored calls the single step", "'mirrored' variant does not call"),
    ("3 inverted", "mirrored_speedup"),
    ("3 wrong baseline", "baseline should be 'one device'"),
    ("4 ok", None),
    ("4 swapped", "not how the last batch is split"),
    ("4 full batch", "not how the last batch is split"),
    ("4 not a list", "list of whole numbers"),
])
def test_lecture_05_checkers(results, case, complaint):
    if complaint is None:
        assert results[case] is None
    else:
        assert complaint in (results[case] or "(passed)")
