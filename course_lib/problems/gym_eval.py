"""Evolved policies judged in Gymnasium, the reference environments of the field.

``episode_returns`` runs a policy (a Keras model, or a genome loaded into one with
``evo.neuro.from_genome``) for N episodes of a Gymnasium environment: episode i starts from
``reset(seed=seed + i)``, as ``gymnasium.vector`` seeds its sub-environments, and all N run side
by side with one batched policy call per step. ``solved`` compares the mean with the environment's
published reward threshold.
"""

from __future__ import annotations

import gymnasium as gym
import keras
import numpy as np

from course_lib.evo import neuro
from course_lib.problems import control


def make(env_id: str, count: int = 1) -> gym.vector.SyncVectorEnv:
    """``count`` copies of ``env_id`` as one vector environment, or a clear error for an unknown id."""
    if env_id not in gym.envs.registry:
        near = sorted(k for k in gym.envs.registry if env_id.split("-")[0].lower() in k.lower())
        raise ValueError(f"Gymnasium has no environment {env_id!r}"
                         + (f"; similar ids: {', '.join(near[:6])}" if near else
                            "; gymnasium.envs.registry lists the ids, e.g. 'CartPole-v1'"))
    return gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(count)])


def check_policy(model: keras.Model, envs: gym.vector.VectorEnv, env_id: str) -> None:
    """A clear error unless ``model`` reads the environment's observations and can choose its actions."""
    obs = envs.single_observation_space.shape
    inputs, outputs = int(model.inputs[0].shape[-1]), int(model.outputs[0].shape[-1])
    if len(obs) != 1 or inputs != obs[0]:
        raise ValueError(f"{env_id} observations have shape {obs}; this policy takes {inputs} inputs")
    space = envs.single_action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise TypeError(f"{env_id} has a {type(space).__name__} action space; these policies choose among "
                         "discrete actions")
    control.check_outputs(outputs, int(space.n), env_id)


def episode_returns(policy: keras.Model, env_id: str, episodes: int = 100, seed: int = 0, genome=None) -> np.ndarray:
    """float64 (episodes,): the return of each episode of ``env_id`` under ``policy``.

    Args:
        policy: a Keras model (observations in, action scores out, as ``control.actions_of`` reads them).
        env_id: a registered Gymnasium id, e.g. 'CartPole-v1', 'Acrobot-v1'.
        episodes: how many, each from its own seeded reset (seed, seed + 1, ...).
        genome: weights to load into ``policy`` first (``neuro.from_genome``), e.g. ``result.best``.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a whole number >= 1, got {episodes!r}")
    envs = make(env_id, episodes)
    try:
        check_policy(policy, envs, env_id)
        if genome is not None:
            neuro.from_genome(policy, genome)
        actions = int(envs.single_action_space.n)
        obs, _ = envs.reset(seed=seed)
        returns, running = np.zeros(episodes), np.ones(episodes, bool)
        while running.any():
            scores = policy(obs.astype(np.float32), training=False)
            obs, reward, terminated, truncated, _ = envs.step(np.asarray(control.actions_of(scores, actions)))
            returns += np.where(running, reward, 0.0)
            running &= ~(terminated | truncated)
        return returns
    finally:
        envs.close()


def threshold(env_id: str) -> float | None:
    """Gymnasium's published reward threshold for ``env_id`` (None if it has none)."""
    make(env_id, 1).close()
    return gym.spec(env_id).reward_threshold


def solved(returns, env_id: str) -> bool:
    """Whether the mean of ``returns`` meets ``env_id``'s reward threshold."""
    return float(np.mean(returns)) >= threshold(env_id)
