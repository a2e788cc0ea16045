"""course_lib.problems against Gymnasium: the TensorFlow cart-pole and acrobot step like Gymnasium's
CartPole-v1 and Acrobot-v1 from Gymnasium's own resets, policies run in Gymnasium with its seeding,
and bad environment ids or policies that do not fit get clear errors."""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from course_lib.evo import neuro
from course_lib.problems import acrobot, cartpole, control, gym_eval


def gym_transitions(task, steps: int, seed: int = 0):
    """(states, actions, next states, terminated, next observations) of random actions in Gymnasium,
    episode after episode from ``reset(seed=...)``, until ``steps`` transitions. Each action is kept
    with probability 0.9, so the acrobot gathers the energy to reach its goal now and then."""
    env, rng = gym.make(task.gym_id), np.random.default_rng(seed)
    out = {k: [] for k in ("s", "a", "n", "t", "o")}
    episode, a = 0, 0
    while len(out["s"]) < steps:
        env.reset(seed=seed + episode)
        episode, done = episode + 1, False
        while not done:
            a = a if rng.random() < 0.9 else int(rng.integers(task.actions))
            out["s"].append(np.array(env.unwrapped.state, np.float64))
            obs, _, terminated, truncated, _ = env.step(a)
            done = terminated or truncated
            for k, v in (("a", a), ("n", np.array(env.unwrapped.state, np.float64)), ("t", terminated), ("o", obs)):
                out[k].append(v)
    return [np.array(out[k]) for k in ("s", "a", "n", "t", "o")]


@pytest.mark.parametrize("task", [cartpole.CartPole(), acrobot.Acrobot()], ids=lambda t: t.gym_id)
def test_dynamics_step_like_gymnasium_to_float32_rounding(task):
    s, a, n, t, o = gym_transitions(task, 4000)
    assert len(s) >= 4000 and t.any() and not t.all()
    moved = task.step(tf.constant(s, tf.float32), tf.constant(a))
    np.testing.assert_allclose(moved.numpy(), n, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(task.terminated(moved).numpy(), t)
    np.testing.assert_allclose(task.observe(moved).numpy(), o, rtol=2e-6, atol=2e-6)
    env = gym.make(task.gym_id)
    assert env.spec.max_episode_steps == task.steps and env.spec.reward_threshold == task.threshold
    assert env.observation_space.shape == (task.observation_size,) and env.action_space.n == task.actions


@pytest.mark.parametrize("task", [cartpole.CartPole(), acrobot.Acrobot()], ids=lambda t: t.gym_id)
def test_compiled_episodes_return_what_gymnasium_returns(task):
    """Whole episodes of one fixed policy from Gymnasium's resets: the same returns (short episodes,
    before rounding differences can grow in these chaotic systems)."""
    model = neuro.mlp(task.observation_size, [4], task.actions, seed=3)
    fitness = control.Control(model, task, episodes=1, steps=task.steps)
    genome = neuro.to_genome(model)
    envs = [gym.make(task.gym_id) for _ in range(8)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    starts = np.stack([env.unwrapped.state for env in envs]).astype(np.float32)
    ours = fitness.returns(genome[None], starts).numpy()[0]
    theirs = gym_eval.episode_returns(model, task.gym_id, episodes=8, seed=0)
    np.testing.assert_array_equal(ours, theirs)


def test_episode_returns_loads_a_genome_and_seeds_each_episode():
    model = neuro.mlp(4, [8], 1, seed=0)
    genome = neuro.initial_population(model, 1, seed=5)[0]
    first = gym_eval.episode_returns(model, "CartPole-v1", episodes=5, seed=7, genome=genome)
    again = gym_eval.episode_returns(neuro.mlp(4, [8], 1, seed=1), "CartPole-v1", episodes=5, seed=7, genome=genome)
    np.testing.assert_array_equal(first, again)
    alone = gym_eval.episode_returns(model, "CartPole-v1", episodes=1, seed=9)
    assert alone[0] == first[2]  # episode i is reset(seed=seed + i)
    assert gym_eval.threshold("CartPole-v1") == 475 and not gym_eval.solved([20.0, 30.0], "CartPole-v1")


def test_unknown_environment_and_ill_fitting_policies_get_clear_errors():
    with pytest.raises(ValueError, match=r"no environment 'CartPole-v9'.*CartPole-v1"):
        gym_eval.episode_returns(neuro.mlp(4, [8], 1), "CartPole-v9")
    with pytest.raises(ValueError, match=r"observations have shape \(6,\); this policy takes 4 inputs"):
        gym_eval.episode_returns(neuro.mlp(4, [8], 3), "Acrobot-v1")
    with pytest.raises(ValueError, match=r"3 actions, so a policy gives 3 outputs; this one gives 2"):
        gym_eval.episode_returns(neuro.mlp(6, [8], 2), "Acrobot-v1")
    with pytest.raises(TypeError, match="Box action space"):
        gym_eval.episode_returns(neuro.mlp(3, [8], 1), "Pendulum-v1")
    with pytest.raises(ValueError, match=r"acrobot policy reads the 6 observations"):
        control.Control(neuro.mlp(4, [8], 3), acrobot.Acrobot())
