"""course_lib.problems.control: the compiled episode loop counts like a Python loop, batched returns equal
a Keras policy one genome at a time, fresh starts per generation are drawn identically whatever the
batching or a resume, the best so far is judged on validation starts, and small GAs solve the tasks."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import neuro, rng
from course_lib.evo.executors import FITNESS_DRAW
from course_lib.problems import acrobot, cartpole, control


def test_rollout_counts_steps_until_failure_like_a_python_loop():
    task = cartpole.CartPole()
    start = control.starts(task, 3, seed=1)

    def always_right(obs):
        return tf.ones(obs.shape[:-1], tf.int32)

    returns, trace = control.rollout(task, always_right, start, steps=100, record=True)
    for e in range(3):
        s, n = tf.constant(start[e:e + 1]), 0
        while n < 100:
            s, n = cartpole.step(s, tf.ones(1, tf.int32)), n + 1
            if bool(cartpole.failed(s)[0]):
                break
        assert returns[e].numpy() == n
        np.testing.assert_array_equal(trace[n, e].numpy(), s[0].numpy())
        np.testing.assert_array_equal(trace[-1, e].numpy(), trace[n, e].numpy())  # frozen after failing
    assert trace.shape == (101, 3, 4)


@pytest.mark.slow
@pytest.mark.parametrize("task, outputs", [(cartpole.CartPole(), 1), (acrobot.Acrobot(), 3)])
def test_batched_returns_equal_keras_policy_one_by_one(task, outputs):
    model = neuro.mlp(task.observation_size, [8], outputs)
    fitness = control.Control(model, task, episodes=3, steps=60)
    genomes = neuro.initial_population(model, 4, seed=4)
    np.testing.assert_array_equal(fitness.returns(genomes).numpy(),
                                  control.per_individual_returns(model, task, genomes, fitness.start, 60))


def fresh_run(generations, **evolve):
    model = neuro.mlp(4, [4], 1, seed=0)
    fitness = control.Control(model, cartpole.CartPole(), episodes=1, fresh=3, validation=4, steps=80, seed=0)
    ga = neuro.evolution(fitness, stddev=0.2, mode="xla", seed=3)
    return ga, ga.evolve(neuro.initial_population(model, 12, seed=0), generations=generations, **evolve)


@pytest.mark.slow
def test_fresh_starts_are_bit_identical_across_batches_chunks_and_resume(tmp_path):
    _, whole = fresh_run(6)
    _, batched = fresh_run(6, batch_size=5, chunk=2)
    for result in (batched,):
        np.testing.assert_array_equal(result.population, whole.population)
        np.testing.assert_array_equal(result.fitness, whole.fitness)
        np.testing.assert_array_equal(result.history["best"], whole.history["best"])
        assert result.best_fitness == whole.best_fitness
    path = str(tmp_path / "run.npz")
    ga, _ = fresh_run(3, callbacks=[evo.callbacks.Checkpoint(path, every=3)])
    resumed = ga.evolve(generations=6, resume_from=path)
    np.testing.assert_array_equal(resumed.population, whole.population)
    np.testing.assert_array_equal(resumed.history["best"][-3:], whole.history["best"][-3:])
    assert resumed.best_fitness == whole.best_fitness


@pytest.mark.slow
def test_fresh_starts_change_every_generation_and_the_best_is_judged_on_validation():
    ga, result = fresh_run(5)
    fitness = ga.fitness

    def key(g):
        return rng.fold_in(rng.fold_in(rng.key(3), tf.constant(g)), FITNESS_DRAW)

    first, second = fitness.generation_starts(key(1)).numpy(), fitness.generation_starts(key(2)).numpy()
    np.testing.assert_array_equal(first[:1], fitness.start.numpy())  # the fixed start is kept
    assert not np.array_equal(first[1:], second[1:])
    assert np.all(np.abs(first) <= 0.05)
    # the best so far holds its validation score, not a lucky generation's
    assert result.best_fitness == float(fitness.validate(tf.constant(result.best[None]))[0])
    judged = tf.function(fitness.validate, jit_compile=True)
    assert result.best_fitness == float(judged(tf.constant(result.best[None]))[0])


def test_ga_balances_the_pole_on_fixed_starts():
    model = neuro.mlp(4, [8], 1)
    fitness = control.Control(model, cartpole.CartPole(), episodes=3, seed=0)
    ga = neuro.evolution(fitness, stddev=0.1, mode="graph", seed=0)
    result = ga.evolve(neuro.initial_population(model, 64, seed=0), generations=10,
                       callbacks=[evo.callbacks.EarlyStopping(target=500)])
    assert result.best_fitness == 500 and result.stopped_early and result.generations <= 10
    assert result.history["best"][0] < 500  # the first population had no such policy
    # the same program as the generation's (a chaotic system amplifies another compiler's rounding)
    returns = tf.function(fitness.returns, autograph=False)
    assert returns(result.best[None]).numpy().tolist() == [[500.0, 500.0, 500.0]]


def test_bad_control_settings_get_clear_errors():
    model = neuro.mlp(4, [8], 1)
    with pytest.raises(ValueError, match="at least one episode per generation"):
        control.Control(model, cartpole.CartPole(), episodes=0, fresh=0)
    with pytest.raises(ValueError, match="validation >= 1"):
        control.Control(model, cartpole.CartPole(), fresh=2, validation=0)
    with pytest.raises(ValueError, match=r"2 actions, so a policy gives 2 outputs \(or 1"):
        control.Control(neuro.mlp(4, [8], 3), cartpole.CartPole())


@pytest.mark.slow
def test_course_defaults_meet_gymnasium_thresholds():
    """The course's defaults (``lessons.neuroevolution.DEFAULTS``) judged in Gymnasium over its 100 seeded episodes,
    one GA seed per task (a minute or more on 2 cores; ``lessons.neuroevolution.judge_seeds`` runs more seeds)."""
    from course_lib.lessons.neuroevolution import judge_seeds

    for task, seeds in ((cartpole.CartPole(), [1]), (acrobot.Acrobot(), [0])):
        for run in judge_seeds(task, seeds):
            assert run.mean >= task.threshold, (task.gym_id, run.seed, run.mean)
