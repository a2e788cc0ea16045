"""Acrobot (Gymnasium's ``Acrobot-v1``) as TensorFlow ops, vectorised over any leading axes.

Two links hang from a pivot; a motor at the joint between them applies a torque of -1, 0 or +1
(actions 0, 1, 2), and the episode ends when the free end swings above a line one link length
over the pivot: -cos(θ1) - cos(θ1 + θ2) > 1. Every step costs -1 (the reaching step 0), at most
500 steps, so the return is minus the steps taken. Only the elbow is driven, so the links must be
swung up by pumping energy in time with their motion: a policy cannot just push one way.

The equations of motion are Sutton's ("book" form), integrated with one classic Runge-Kutta step
of ``DT`` seconds, angles wrapped to [-π, π] and velocities clipped, as Gymnasium's environment
does; the tests step both side by side.
"""

from __future__ import annotations

import math

import tensorflow as tf

DT = 0.2                                   # s per step
LINK_LENGTH = 1.0                          # m, the first link (the second's length only draws the tip)
LINK_MASS = 1.0                            # kg, each link
COM = 0.5                                  # m, pivot to each link's centre of mass
MOMENT = 1.0                               # kg m², each link's moment of inertia
GRAVITY = 9.8                              # m/s²
MAX_VELOCITY = (4 * math.pi, 9 * math.pi)  # rad/s, θ1' and θ2'
TORQUES = (-1.0, 0.0, 1.0)
STATE = ("theta1", "theta2", "theta1_dot", "theta2_dot")
OBSERVATION = ("cos theta1", "sin theta1", "cos theta2", "sin theta2", "theta1_dot", "theta2_dot")


def derivatives(state: tf.Tensor, torque: tf.Tensor) -> tf.Tensor:
    """d(state)/dt (..., 4) under ``torque`` (...)."""
    t1, t2, w1, w2 = tf.unstack(state, axis=-1)
    m, l1, lc, inertia, g = LINK_MASS, LINK_LENGTH, COM, MOMENT, GRAVITY
    d1 = m * lc ** 2 + m * (l1 ** 2 + lc ** 2 + 2 * l1 * lc * tf.cos(t2)) + 2 * inertia
    d2 = m * (lc ** 2 + l1 * lc * tf.cos(t2)) + inertia
    phi2 = m * lc * g * tf.cos(t1 + t2 - math.pi / 2)
    phi1 = (-m * l1 * lc * w2 ** 2 * tf.sin(t2) - 2 * m * l1 * lc * w2 * w1 * tf.sin(t2)
            + (m * lc + m * l1) * g * tf.cos(t1 - math.pi / 2) + phi2)
    acc2 = (torque + d2 / d1 * phi1 - m * l1 * lc * w1 ** 2 * tf.sin(t2) - phi2) / (m * lc ** 2 + inertia
                                                                                     - d2 ** 2 / d1)
    acc1 = -(d2 * acc2 + phi1) / d1
    return tf.stack([w1, w2, acc1, acc2], axis=-1)


def _wrap(angle: tf.Tensor) -> tf.Tensor:
    """Into [-π, π] by one turn (a step of DT at the clipped speeds turns less than a full circle)."""
    angle = tf.where(angle > math.pi, angle - 2 * math.pi, angle)
    return tf.where(angle < -math.pi, angle + 2 * math.pi, angle)


def step(state: tf.Tensor, action: tf.Tensor) -> tf.Tensor:
    """The state (..., 4) one step later under action 0, 1 or 2 (torque -1, 0, +1), shape (...)."""
    torque = tf.gather(tf.constant(TORQUES, tf.float32), tf.cast(action, tf.int32))
    k1 = derivatives(state, torque)
    k2 = derivatives(state + DT / 2 * k1, torque)
    k3 = derivatives(state + DT / 2 * k2, torque)
    k4 = derivatives(state + DT * k3, torque)
    t1, t2, w1, w2 = tf.unstack(state + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4), axis=-1)
    return tf.stack([_wrap(t1), _wrap(t2), tf.clip_by_value(w1, -MAX_VELOCITY[0], MAX_VELOCITY[0]),
                     tf.clip_by_value(w2, -MAX_VELOCITY[1], MAX_VELOCITY[1])], axis=-1)


def reached(state: tf.Tensor) -> tf.Tensor:
    """bool (...): the free end is above the line one link length over the pivot."""
    return -tf.cos(state[..., 0]) - tf.cos(state[..., 1] + state[..., 0]) > 1.0


def observe(state: tf.Tensor) -> tf.Tensor:
    """Gymnasium's observation (..., 6): the angles' cosines and sines, then the two velocities."""
    t1, t2, w1, w2 = tf.unstack(state, axis=-1)
    return tf.stack([tf.cos(t1), tf.sin(t1), tf.cos(t2), tf.sin(t2), w1, w2], axis=-1)


class Acrobot:
    """The task for ``problems.control``: 6 observations, three actions, -1 per step until the tip is up."""

    name, gym_id = "acrobot", "Acrobot-v1"
    state_size, observation_size = 4, 6
    actions = 3
    steps = 500
    threshold = -100.0  # Gymnasium's reward threshold: mean return over 100 consecutive episodes

    def start(self, uniform: tf.Tensor) -> tf.Tensor:
        """Start states from uniform [0, 1) draws (..., 4): each variable in [-0.1, 0.1], as Gymnasium's reset."""
        return -0.1 + 0.2 * uniform

    def observe(self, state):
        return observe(state)

    def step(self, state, action):
        return step(state, action)

    def terminated(self, state):
        return reached(state)

    def reward(self, state, terminated):
        return tf.where(terminated, 0.0, -1.0)
