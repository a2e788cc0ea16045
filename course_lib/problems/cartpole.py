"""Cart-pole (Gymnasium's ``CartPole-v1``) as TensorFlow ops, vectorised over any leading axes.

The classic Barto, Sutton and Anderson (1983) cart with a hinged pole: push the cart left
(action 0) or right (action 1) with a fixed force, keep the pole within 12 degrees of upright
and the cart within 2.4 m of the centre. Explicit Euler steps of ``TAU`` seconds, one reward per
step (the failing step included), at most 500 steps: the equations, constants and limits of
Gymnasium's environment, which the tests step side by side with this one.

Being plain tensor code, a step for 4096 policies times 8 episodes is one batch of elementwise
ops, and a whole episode is one ``tf.while_loop`` (``problems.control.rollout``) that XLA
compiles with the policy network inside.
"""

from __future__ import annotations

import math

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


def step(state: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
    """The state (..., 4) one step later, after action 1 (push right) or 0 (push left), shape (...)."""
    x, x_dot, theta, theta_dot = tf.unstack(state, axis=-1)
    force = tf.where(tf.cast(action, tf.bool), FORCE, -FORCE)
    cos, sin = tf.cos(theta), tf.sin(theta)
    temp = (force + _POLE_MOMENT * theta_dot * theta_dot * sin) / _TOTAL_MASS
    theta_acc = (GRAVITY * sin - cos * temp) / (HALF_LENGTH * (4.0 / 3.0 - POLE_MASS * cos * cos / _TOTAL_MASS))
    x_acc = temp - _POLE_MOMENT * theta_acc * cos / _TOTAL_MASS
    return tf.stack([x + TAU * x_dot, x_dot + TAU * x_acc,
                     theta + TAU * theta_dot, theta_dot + TAU * theta_acc], axis=-1)


def failed(state: tf.Tensor) -> tf.Tensor:
    """bool (...): the pole fell past 12 degrees or the cart left the track."""
    return (tf.abs(state[..., 0]) > POSITION_LIMIT) | (tf.abs(state[..., 2]) > ANGLE_LIMIT)


class CartPole:
    """The task for ``problems.control``: states are observations; two actions; +1 per step."""

    name, gym_id = "cart-pole", "CartPole-v1"
    state_size = observation_size = 4
    actions = 2
    steps = 500
    threshold = 475.0   # Gymnasium's reward threshold: mean return over 100 consecutive episodes

    def start(self, uniform: tf.Tensor) -> tf.Tensor:
        """Start states from uniform [0, 1) draws (..., 4): each variable in [-0.05, 0.05], as Gymnasium's reset."""
        return -0.05 + 0.1 * uniform

    def observe(self, state):
        return state

    def step(self, state, action):
        return step(state, action)

    def terminated(self, state):
        return failed(state)

    def reward(self, state, terminated):
        return tf.ones_like(state[..., 0])
