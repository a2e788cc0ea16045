"""Control tasks as fitnesses: every policy of a population run for whole episodes in one compiled loop.

A task (``problems.cartpole.CartPole``, ``problems.acrobot.Acrobot``) gives its dynamics as
TensorFlow ops: ``start`` (uniform draws to start states), ``observe``, ``step``, ``terminated``,
``reward``, and ``actions``, ``steps``. ``rollout`` runs any number of episodes at once as one
``tf.while_loop``; ``Control`` scores a population of networks (``evo.neuro``) on episodes from
three kinds of start:

* fixed starts (``episodes``), drawn once: every policy of every generation meets the same ones;
* fresh starts (``fresh``), drawn anew every generation from the generation's key
  (``evo.rng``: a pure function of seed and generation, so batched, chunked, resumed and
  replicated runs draw the same), so a policy cannot be selected for luck with a few starts;
* validation starts (``validation``), fixed, which judge the best so far when fresh starts are on.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from course_lib.evo import neuro, rng


def actions_of(outputs: tf.Tensor, actions: int) -> tf.Tensor:
    """int32 actions (...) from network outputs (..., n): the largest of ``actions`` outputs, or for
    two actions and one output, action 1 where it is positive."""
    if outputs.shape[-1] == 1 and actions == 2:
        return tf.cast(outputs[..., 0] > 0, tf.int32)
    return tf.argmax(outputs, axis=-1, output_type=tf.int32)


def check_outputs(outputs: int, actions: int, what: str) -> None:
    """A clear error unless a network with ``outputs`` units can choose among ``actions`` actions."""
    if outputs != actions and not (outputs == 1 and actions == 2):
        fits = f"{actions} outputs" + (" (or 1: action 1 where it is positive)" if actions == 2 else "")
        raise ValueError(f"{what} has {actions} actions, so a policy gives {fits}; this one gives {outputs}")


def rollout(task, policy: Callable[[tf.Tensor], tf.Tensor], start, steps: int | None = None, record: bool = False):
    """Every episode in ``start`` (..., state) for at most ``steps`` steps (the task's by default), at once.

    ``policy`` maps observations (..., observation) to int actions (...). Returns the returns
    (float32, (...)); the loop ends when every episode has ended, and an ended episode's state stays
    frozen. With ``record=True`` also the states (steps + 1, ..., state).
    """
    steps = task.steps if steps is None else steps
    start = tf.convert_to_tensor(start, tf.float32)
    if start.shape.rank is None or start.shape.rank < 1 or start.shape[-1] != task.state_size:
        raise ValueError(f"{task.name} states have {task.state_size} variables on the last axis, "
                         f"got shape {tuple(start.shape)}")
    alive = tf.ones(start.shape[:-1], tf.bool)
    returns = tf.zeros(start.shape[:-1], tf.float32)
    trace = [tf.TensorArray(tf.float32, size=steps + 1, element_shape=start.shape).write(0, start)] if record else []

    def body(t, state, alive, returns, trace):
        moved = task.step(state, policy(task.observe(state)))
        ended = task.terminated(moved)
        returns += tf.where(alive, task.reward(moved, ended), 0.0)
        state = tf.where(alive[..., None], moved, state)
        return t + 1, state, alive & ~ended, returns, [ta.write(t + 1, state) for ta in trace]

    t, state, alive, returns, trace = tf.while_loop(
        lambda t, s, alive, r, tr: (t < steps) & tf.reduce_any(alive), body,
        (tf.constant(0), start, alive, returns, trace))
    if not record:
        return returns
    # the steps the loop did not run (every episode had ended) repeat the last state
    rest = tf.broadcast_to(state, (steps - t, *start.shape))
    return returns, tf.concat([trace[0].gather(tf.range(t + 1)), rest], axis=0)


def starts(task, count: int, seed) -> np.ndarray:
    """float32 (count, state) start states drawn with NumPy from ``seed`` (an int or a sequence of ints)."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"a number of starts must be a whole number >= 0, got {count!r}")
    uniform = np.random.default_rng(seed).random((count, task.state_size), dtype=np.float32)
    return np.asarray(task.start(tf.constant(uniform)), np.float32)


class Control(neuro.Networks):
    """Mean return of each policy network over its episodes of ``task`` (maximise).

    Args:
        model: the policy, a Keras model of Dense layers: the task's observations in, one output per
            action (the largest chooses), or one output for a two-action task.
        task: the dynamics (``problems.cartpole.CartPole()``, ``problems.acrobot.Acrobot()``).
        episodes: fixed starts, the same for every policy in every generation.
        fresh: starts drawn anew every generation, shared by the generation's policies (0: none).
        validation: fixed starts that judge the best so far when ``fresh`` > 0 (and score
            ``evaluate`` when ``episodes`` is 0).
        steps: the episode's length limit, the task's by default.
        seed: draws the fixed and validation starts.
    """

    def __init__(self, model: keras.Model, task, episodes: int = 4, fresh: int = 0, validation: int = 32,
                 steps: int | None = None, seed: int = 0):
        super().__init__(model)
        if self.layout.inputs != task.observation_size:
            raise ValueError(f"a {task.name} policy reads the {task.observation_size} observations; this model "
                             f"takes {self.layout.inputs} inputs")
        check_outputs(self.layout.outputs, task.actions, task.name)
        steps = task.steps if steps is None else steps
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a whole number >= 1, got {steps!r}")
        if episodes + fresh < 1:
            raise ValueError("a policy needs at least one episode per generation: episodes (fixed) or fresh >= 1")
        if fresh and validation < 1:
            raise ValueError("with fresh starts the best so far is judged on validation starts: validation >= 1")
        self.task, self.episodes, self.fresh, self.steps, self.seed = task, episodes, fresh, steps, seed
        self.per_generation = fresh > 0
        self.start = tf.constant(starts(task, episodes, [seed, 0]))
        self.validation = tf.constant(starts(task, validation, [seed, 1]))

    def policy(self, genomes) -> Callable[[tf.Tensor], tf.Tensor]:
        """Observations (P, E, obs) -> actions (P, E), for all P genomes; weights sliced once."""
        weights = self.layout.weights(self.layout.genomes(genomes))
        return lambda obs: actions_of(self.layout.apply(weights, obs), self.task.actions)

    def returns(self, genomes, start=None) -> tf.Tensor:
        """float32 (P, E): each genome's return in each episode (``start`` (E, state), default the fixed starts)."""
        g = self.layout.genomes(genomes)
        start = self.start if start is None else tf.convert_to_tensor(start, tf.float32)
        states = tf.broadcast_to(start[None], (g.shape[0], *start.shape))
        return rollout(self.task, self.policy(g), states, self.steps)

    def evaluate(self, population):
        return tf.reduce_mean(self.returns(population, self.start if self.episodes else self.validation), axis=1)

    def generation_starts(self, key: tf.Tensor) -> tf.Tensor:
        """The fixed starts, then ``fresh`` starts drawn from ``key`` (the same in every batch of rows)."""
        drawn = self.task.start(rng.uniform(key, rng.Rows.all(1), (self.fresh, self.task.state_size))[0])
        return tf.concat([self.start, drawn], axis=0)

    def evaluate_generation(self, population, key):
        return tf.reduce_mean(self.returns(population, self.generation_starts(key)), axis=1)

    def validate(self, genomes):
        return tf.reduce_mean(self.returns(genomes, self.validation), axis=1)

    def trajectory(self, genome, start) -> tuple[float, np.ndarray]:
        """One episode of one genome from ``start`` (state,): its return and states (steps + 1, state)."""
        g = self.layout.genomes(np.asarray(genome, np.float32)[None])
        states = tf.reshape(tf.convert_to_tensor(start, tf.float32), (1, 1, self.task.state_size))
        ret, trace = rollout(self.task, self.policy(g), states, self.steps, record=True)
        return float(ret[0, 0]), trace[:, 0, 0].numpy()

    def config(self):
        out = {"task": self.task.gym_id, "weights": self.layout.size, "episodes": self.episodes}
        if self.fresh:
            out |= {"fresh": self.fresh, "validation": int(self.validation.shape[0])}
        return out | {"steps": self.steps, "seed": self.seed}


def per_individual_returns(model: keras.Model, task, genomes, start, steps: int | None = None) -> np.ndarray:
    """The slow reference for ``Control.returns``: each genome loaded into the Keras model, one model
    call per step (all episodes of that genome in one batch), stepping until all have ended."""
    steps = task.steps if steps is None else steps
    start = tf.convert_to_tensor(start, tf.float32)
    out = []
    for g in np.asarray(genomes, np.float32):
        net = neuro.from_genome(model, g)
        state, alive, ret = start, tf.ones(start.shape[0], tf.bool), tf.zeros(start.shape[0])
        for _ in range(steps):
            action = actions_of(net(task.observe(state), training=False), task.actions)
            moved = task.step(state, action)
            ended = task.terminated(moved)
            ret += tf.where(alive, task.reward(moved, ended), 0.0)
            state = tf.where(alive[:, None], moved, state)
            alive &= ~ended
            if not bool(tf.reduce_any(alive)):
                break
        out.append(ret.numpy())
    return np.stack(out)
