"""Checkers of lecture 05's exercises: a mirrored training loop, batch and learning rate for the
replicas, measure a mirrored step, predict how a batch is split."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.checks import answers, exercise, method


@exercise("05", 1, "a mirrored training loop",
          "Look at lecture 05's custom training loop under a strategy: what is created inside the scope, "
          "what runs on every replica, how are the replicas' losses combined?",
          "Model and optimizer inside strategy.scope(); the step calls strategy.run on each distributed batch; "
          "each replica's loss is averaged over the global batch, so the combined loss is a sum.")
def mirrored_loop(strategy, mirrored_step, distributed, mirrored_losses, single_losses):
    assert isinstance(strategy, tf.distribute.MirroredStrategy), \
        f"strategy should be a MirroredStrategy, got {type(strategy).__name__}"
    assert strategy.num_replicas_in_sync == 2, f"{strategy.num_replicas_in_sync} replica(s); use both cpus"
    assert isinstance(distributed, tf.distribute.DistributedDataset), \
        f"distributed should be the dataset distributed by the strategy, got {type(distributed).__name__}"
    assert method.is_tf_function(mirrored_step), \
        f"mirrored_step should be a tf.function, got {type(mirrored_step).__name__}"
    graph = answers.run("tracing mirrored_step on a distributed batch", mirrored_step.get_concrete_function,
                        next(iter(distributed))).graph
    used = {op.device.rsplit("/", 1)[-1] for op in graph.get_operations() if op.device}
    assert "device:CPU:1" in used, ("no operation of mirrored_step runs on the second replica's device: "
                                    "the step must run the replica step through the strategy")
    assert isinstance(mirrored_losses, (list, tuple)) and all(isinstance(v, float) for v in mirrored_losses), \
        "mirrored_losses should be a list of Python floats, one per batch"
    assert len(mirrored_losses) == len(single_losses), \
        f"{len(mirrored_losses)} losses for {len(single_losses)} batches"
    ratio = np.array(mirrored_losses) / np.array(single_losses)
    assert np.allclose(ratio, 1.0, rtol=1e-4), \
        f"the losses differ from the single-device loop's (mirrored / single is {ratio.mean():.3f} on average)"


@exercise("05", 2, "size the batch and the learning rate",
          "Look at lecture 05's section on batch size and learning rate under data parallelism.",
          "The global batch is the per-replica batch times the strategy's replicas; the linear scaling rule "
          "grows the rate by the same factor as the batch; a last, partial batch is still a step.")
def size_batch(global_batch, learning_rate, steps_per_epoch, mirrored, n_examples):
    for name, value in [("global_batch", global_batch), ("steps_per_epoch", steps_per_epoch)]:
        answers.number(value, name, integer=True)
    answers.number(learning_rate, "learning_rate")
    replicas = mirrored.num_replicas_in_sync
    assert global_batch == 16 * replicas, \
        f"a global batch of {global_batch} does not give each of the {replicas} replicas 16"
    assert abs(learning_rate - 0.01 * global_batch / 16) < 1e-12, \
        f"a learning rate of {learning_rate} does not follow the linear scaling rule from 0.01 at batch 16"
    assert steps_per_epoch == -(-n_examples // global_batch), \
        f"{steps_per_epoch} steps do not cover {n_examples} examples at that global batch exactly once"


@exercise("05", 3, "measure a mirrored step",
          "Look at how lecture 05 compares strategies: the same step, the same batch, one run.",
          "One variant calls the single-device step on one batch, the other the mirrored step on the same "
          "batch distributed; both go into one bench.compare.")
def measure_step(variants, comparison, mirrored_speedup, single_step, mirrored_step):
    method.variants_named(variants, ["one device", "mirrored"])
    for name, fn in [("one device", single_step), ("mirrored", mirrored_step)]:
        assert method.calls(variants[name], fn), f"the {name!r} variant does not call {fn.__name__}"
        loss = method.value_of(variants, name)
        assert np.ndim(loss) == 0 and np.isfinite(loss), f"the {name!r} variant should return the step's loss"
    method.comparison(comparison, ["one device", "mirrored"], "one device", repeats=5)
    answers.number(mirrored_speedup, "mirrored_speedup")
    method.close(mirrored_speedup, comparison.speedup("mirrored"), "mirrored_speedup")


@exercise("05", 4, "predict how a batch is split",
          "Look at what lecture 05 says a strategy does with each global batch of a distributed dataset.",
          "Work out the size of the last global batch first. How a strategy splits a batch that does not "
          "divide evenly between its replicas is easy to see: distribute a few examples of your own and look "
          "at strategy.experimental_local_results of the last batch, then predict.")
def predict_split(last_batch_per_replica, strategy, n_examples, batch, x):
    assert isinstance(last_batch_per_replica, (list, tuple)) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in last_batch_per_replica), \
        "last_batch_per_replica should be a list of whole numbers, one per replica"
    ds = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(x[:n_examples]).batch(batch))
    last = None
    for last in ds:
        pass
    truth = [int(t.shape[0]) for t in strategy.experimental_local_results(last)]
    assert len(last_batch_per_replica) == len(truth), f"{len(last_batch_per_replica)} sizes for {len(truth)} replicas"
    assert list(last_batch_per_replica) == truth, "that is not how the last batch is split"
