"""Cart-pole as TensorFlow ops, vectorised over any leading axes (individuals, episodes).

The classic Barto, Sutton and Anderson (1983) cart with a hinged pole: push the cart left
or right with a fixed force, keep the pole within 12 degrees of upright and the cart within
2.4 m of the centre. Explicit Euler steps of ``TAU`` seconds, one reward per step survived
(the failing step included), at most ``steps`` per episode.

Being plain tensor code, a step for 4096 policies times 8 episodes is one batch of
elementwise ops, and a whole episode is one ``tf.while_loop`` that XLA compiles with the
policy network inside, so no Python runs between steps.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import tensorflow as tf

GRAVITY = 9.8            # m/s²
CART_MASS = 1.0          # kg
POLE_MASS = 0.1          # kg
HALF_LENGTH = 0.5        # m, pivot to the pole's centre of mass
FORCE = 10.0             # N, each push
TAU = 0.02               # s per step
ANGLE_LIMIT = 12 * 2 * math.pi / 360   # rad
POSITION_LIMIT = 2.4     # m
OBSERVATION = ("x", "x_dot", "theta", "theta_dot")

_TOTAL_MASS = CART_MASS + POLE_MASS
_POLE_MOMENT = POLE_MASS * HALF_LENGTH


def step(state: tf.Tensor, push_right: tf.Tensor) -> tf.Tensor:
    """The state (..., 4) one step later, after a push right (True) or left (False) of shape (...)."""
    x, x_dot, theta, theta_dot = tf.unstack(state, axis=-1)
    force = tf.where(push_right, FORCE, -FORCE)
    cos, sin = tf.cos(theta), tf.sin(theta)
    temp = (force + _POLE_MOMENT * theta_dot * theta_dot * sin) / _TOTAL_MASS
    theta_acc = (GRAVITY * sin - cos * temp) / (HALF_LENGTH * (4.0 / 3.0 - POLE_MASS * cos * cos / _TOTAL_MASS))
    x_acc = temp - _POLE_MOMENT * theta_acc * cos / _TOTAL_MASS
    return tf.stack([x + TAU * x_dot, x_dot + TAU * x_acc,
                     theta + TAU * theta_dot, theta_dot + TAU * theta_acc], axis=-1)


def failed(state: tf.Tensor) -> tf.Tensor:
    """bool (...): the pole fell past 12 degrees or the cart left the track."""
    return (tf.abs(state[..., 0]) > POSITION_LIMIT) | (tf.abs(state[..., 2]) > ANGLE_LIMIT)


def initial_states(episodes: int, seed: int = 0) -> np.ndarray:
    """float32 (episodes, 4): each variable uniform in [-0.05, 0.05], the usual start."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a whole number >= 1, got {episodes!r}")
    return np.random.default_rng(seed).uniform(-0.05, 0.05, (episodes, 4)).astype(np.float32)


Policy = Callable[[tf.Tensor], tf.Tensor]


def rollout(policy: Policy, start: tf.Tensor, steps: int = 500, record: bool = False):
    """Run every episode in ``start`` (..., 4) for at most ``steps`` steps, all at once.

    ``policy`` maps states (..., 4) to pushes right (bool, (...)). Returns the returns
    (float32, (...)): steps survived. The loop ends when every episode has failed; a failed
    episode's state stays frozen. With ``record=True`` also returns the states (steps + 1, ..., 4).
    """
    start = tf.convert_to_tensor(start, tf.float32)
    if start.shape.rank is None or start.shape.rank < 1 or start.shape[-1] != 4:
        raise ValueError(f"cart-pole states have 4 variables {OBSERVATION} on the last axis, "
                         f"got shape {tuple(start.shape)}")
    alive = tf.ones(start.shape[:-1], tf.bool)
    returns = tf.zeros(start.shape[:-1], tf.float32)
    trace = [tf.TensorArray(tf.float32, size=steps + 1, element_shape=start.shape).write(0, start)] if record else []

    def body(t, state, alive, returns, trace):
        moved = step(state, policy(state))
        state = tf.where(alive[..., None], moved, state)
        returns += tf.cast(alive, tf.float32)
        alive &= ~failed(state)
        return t + 1, state, alive, returns, [ta.write(t + 1, state) for ta in trace]

    t, state, alive, returns, trace = tf.while_loop(
        lambda t, s, alive, r, tr: (t < steps) & tf.reduce_any(alive), body,
        (tf.constant(0), start, alive, returns, trace))
    if not record:
        return returns
    # the steps the loop did not run (every episode had failed) repeat the last state
    rest = tf.broadcast_to(state, (steps - t, *start.shape))
    return returns, tf.concat([trace[0].gather(tf.range(t + 1)), rest], axis=0)
