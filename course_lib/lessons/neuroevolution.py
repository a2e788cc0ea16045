"""Lecture 15's helpers: the GA against Keras ``fit`` on the digits, the speed variants of a population's
evaluation, control policies evolved with fixed or fresh starts and judged in Gymnasium, and plots.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from course_lib import bench, evo
from course_lib import digits as course_digits
from course_lib.evo.neuro import (
    Classification,
    Layout,
    evaluations,
    evolution,
    initial_population,
    mlp,
    per_individual,
)
from course_lib.problems import control, gym_eval


def digits(test_fraction: float = 0.25, seed: int = 0):
    """The course's 8x8 digits (``course_lib.digits``, 1,797 images, as lecture 06) as flat float32
    pixels in [0, 1], split at random: x_train, y_train, x_test, y_test."""
    pixels, labels = course_digits.load()
    x = (pixels.reshape(len(pixels), -1) / 16.0).astype(np.float32)
    y = labels.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = round(len(y) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


@dataclass
class Curve:
    """Test accuracy against wall time (from the call, compilation included) and evaluations."""

    name: str
    unit: tuple[str, str]      # what ``evaluations`` counts: (one, several)
    seconds: list
    evaluations: list
    accuracy: list

    def reached(self, target: float) -> int | None:
        """The index of the first point at or above ``target``, or None."""
        return next((i for i, a in enumerate(self.accuracy) if a >= target), None)

    def count(self, i: int) -> str:
        n = self.evaluations[i]
        return f"{n:,} {self.unit[0] if n == 1 else self.unit[1]}"

    def sentence(self, target: float) -> str:
        i = self.reached(target)
        if i is None:
            return (f"{self.name}: did not reach {target:.0%} test accuracy in {self.seconds[-1]:.3g} s "
                    f"({self.count(-1)}; best {max(self.accuracy):.1%})")
        return f"{self.name}: reached {target:.0%} test accuracy after {self.seconds[i]:.3g} s and {self.count(i)}"


class _Clock(evo.callbacks.Callback):
    """Records the best genome's test accuracy at every chunk end; its own time is not counted."""

    def __init__(self, curve: Curve, start: float, score: Callable[[np.ndarray], float], n: int, every: int):
        self.curve, self.start, self.score, self.n, self.every = curve, start, score, n, every
        self.paused = 0.0

    def on_chunk_end(self, run):
        now = time.perf_counter()
        self.curve.seconds.append(now - self.start - self.paused)
        self.curve.evaluations.append(evaluations(self.n, run.generation))
        self.curve.accuracy.append(self.score(run.result().best))
        self.paused += time.perf_counter() - now


def ga_curve(model: evo.Model, fitness: Classification, population, generations: int, x_test, y_test,
             every: int = 25, name: str = "GA") -> tuple[Curve, object]:
    """Evolve and record the best network's test accuracy every ``every`` generations."""
    curve = Curve(name, ("network evaluated on the training set", "networks evaluated on the training set"),
                  [], [], [])
    clock = _Clock(curve, time.perf_counter(), lambda g: float(fitness.accuracy(g[None], x_test, y_test)[0]),
                   len(population), every)
    result = model.evolve(population, generations=generations, callbacks=[clock])
    return curve, result


class _EpochClock(keras.callbacks.Callback):
    def __init__(self, curve: Curve, start: float, x_test, y_test):
        super().__init__()
        self.curve, self.start, self.x_test, self.y_test = curve, start, x_test, y_test
        self.paused = 0.0

    def on_epoch_end(self, epoch, logs=None):
        now = time.perf_counter()
        self.curve.seconds.append(now - self.start - self.paused)
        self.curve.evaluations.append(epoch + 1)
        guess = np.argmax(self.model(self.x_test, training=False).numpy(), axis=-1)
        self.curve.accuracy.append(float(np.mean(guess == self.y_test)))
        self.paused += time.perf_counter() - now


def fit_curve(model: keras.Model, x_train, y_train, x_test, y_test, epochs: int = 20, batch_size: int = 32,
              learning_rate: float = 1e-2, name: str = "Keras fit (Adam)") -> Curve:
    """Train ``model`` with gradient descent, recording test accuracy after every epoch."""
    curve = Curve(name, ("epoch", "epochs"), [], [], [])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    start = time.perf_counter()
    model.fit(x_train, y_train, epochs=epochs, batch_size=batch_size, verbose=0, shuffle=True,
              callbacks=[_EpochClock(curve, start, x_test, y_test)])
    return curve


def race_verdicts(curves: Sequence[Curve], target: float) -> bench.Verdicts:
    """Sentences read from the curves: when each reached ``target``, and how much sooner the first of
    the first two got there, in wall time."""
    sentences = [c.sentence(target) for c in curves]
    if len(curves) >= 2:
        (a, i), (b, j) = sorted(((c, c.reached(target)) for c in curves[:2]),
                                key=lambda p: p[0].seconds[p[1]] if p[1] is not None else float("inf"))
        if i is not None and j is not None:
            sentences.append(f"{a.name} reached {target:.0%} {b.seconds[j] / a.seconds[i]:.3g}x sooner in wall "
                             f"time than {b.name}")
    return bench.Verdicts(sentences)


# -- speed: one batched program against a Keras call per network ---------------------------------

PER_INDIVIDUAL = "per-individual Keras calls"
GRAPH, XLA = "one batched graph", "XLA"
GYMNASIUM = "Gymnasium vector envs"


def speed_variants(model: keras.Model, x) -> dict[str, Callable]:
    """Builders for ``SpeedupWidget`` and the bench: ``population`` -> a callable that evaluates that
    many networks (random genomes) on the batch ``x``, in each of three ways."""
    layout, x = Layout(model), tf.constant(np.asarray(x, np.float32))

    def keras_calls(population: int):
        genomes = initial_population(model, population)
        return lambda: per_individual(model, genomes, x)

    def batched(jit: bool):
        forward = tf.function(layout.forward, jit_compile=jit, autograph=False)

        def build(population: int):
            genomes = tf.constant(initial_population(model, population))
            return lambda: forward(genomes, x)
        return build

    return {PER_INDIVIDUAL: keras_calls, GRAPH: batched(False), XLA: batched(True)}


def policy_variants(fitness: control.Control, model: keras.Model) -> dict[str, Callable]:
    """Like ``speed_variants`` for whole episodes of ``fitness``'s task from its fixed starts, plus the
    reference the field uses: Gymnasium's vector environment stepping every episode in Python, with one
    compiled call of the whole population's networks per step."""
    def keras_calls(population: int):
        genomes = initial_population(model, population)
        return lambda: control.per_individual_returns(model, fitness.task, genomes, fitness.start, fitness.steps)

    def batched(jit: bool):
        returns = tf.function(fitness.returns, jit_compile=jit, autograph=False)

        def build(population: int):
            genomes = tf.constant(initial_population(model, population))
            return lambda: returns(genomes)
        return build

    def gymnasium(population: int):
        task, start = fitness.task, fitness.start.numpy()
        act = tf.function(fitness.policy(initial_population(model, population)), jit_compile=True)
        envs = gym_eval.make(task.gym_id, population * len(start))
        tiled = np.tile(start, (population, 1))

        def run():
            envs.reset(seed=0)
            for env, state in zip(envs.envs, tiled):
                env.unwrapped.state = state.astype(np.float64)
            obs = np.asarray(task.observe(tf.constant(tiled)))
            running, steps = np.ones(len(tiled), bool), 0
            while running.any() and steps < fitness.steps:
                actions = act(obs.reshape(population, len(start), -1)).numpy().ravel()
                obs, _, terminated, truncated, _ = envs.step(actions)
                running &= ~(terminated | truncated)
                steps += 1
        return run

    return {PER_INDIVIDUAL: keras_calls, GRAPH: batched(False), XLA: batched(True), GYMNASIUM: gymnasium}


def policy_steps(fitness: control.Control, model: keras.Model, population: int) -> float:
    """Steps of still-running episodes that ``policy_variants(...)[v](population)`` simulates."""
    return float(tf.reduce_sum(fitness.returns(initial_population(model, population))))


def plot_race(curves: Sequence[Curve], target: float, axes=None):
    """Test accuracy against wall time (left) and against evaluations (right, log scale), one line per
    method, with the target as a dashed line."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.2), layout="constrained")
    for c in curves:
        axes[0].plot(c.seconds, c.accuracy, marker=".", label=c.name)
        axes[1].plot(c.evaluations, c.accuracy, marker=".", label=f"{c.name}: {c.unit[1]}")
    for ax in axes:
        ax.axhline(target, color="gray", linestyle="--", linewidth=0.8)
        ax.set_ylabel("test accuracy")
    axes[0].set_xlabel("wall time from the call (s), compilation included")
    axes[1].set_xlabel("network evaluations over the training set")
    axes[1].set_xscale("log")
    axes[1].legend(fontsize="small", loc="center")
    return axes


def plot_search(ga_best: Sequence[float], n: int, random: dict, steps: int, ax=None):
    """Best return against networks evaluated: the GA (``n`` per generation, after the first ``n``)
    and random search (``random_search``'s result), with the full episode as a dashed line."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    ax.plot([evaluations(n, g + 1) for g in range(len(ga_best))], ga_best, marker=".", label="GA")
    ax.plot(random["evaluations"], random["best"], marker=".", label="random search")
    ax.axhline(steps, color="gray", linestyle="--", linewidth=0.8)
    ax.set_xlabel("networks evaluated")
    ax.set_ylabel("best mean return")
    ax.legend()
    return ax


# -- control: policies evolved with fixed or fresh starts, judged in Gymnasium ----------------------

@dataclass(frozen=True)
class Setup:
    """A control run's knobs: the policy's hidden layers, the GA's population, mutation and generations,
    and the starts each policy meets per generation (``control.Control``'s episodes, fresh, validation).
    ``target``: a validation mean at which the run stops early (None: run every generation)."""

    hidden: tuple[int, ...]
    population: int
    generations: int
    stddev: float
    episodes: int
    fresh: int
    validation: int
    target: float | None


# The course's defaults: fresh starts every generation, the best judged on 32 fixed validation starts
DEFAULTS = {
    "CartPole-v1": Setup(hidden=(8,), population=64, generations=60, stddev=0.1, episodes=0, fresh=8,
                         validation=32, target=500.0),
    "Acrobot-v1": Setup(hidden=(8,), population=64, generations=30, stddev=0.1, episodes=0, fresh=8,
                        validation=32, target=None),
}


def evolve_policy(task, seed: int = 0, mode: str = "xla", **changes):
    """Evolve a policy for ``task`` with ``DEFAULTS[task.gym_id]`` (``changes`` replace fields, e.g.
    ``fresh=0, episodes=8`` for fixed starts only). Returns (Keras policy, fitness, result)."""
    setup = DEFAULTS[task.gym_id]
    setup = Setup(**{**setup.__dict__, **changes})
    model = mlp(task.observation_size, list(setup.hidden), task.actions, seed=seed)
    fitness = control.Control(model, task, episodes=setup.episodes, fresh=setup.fresh,
                              validation=setup.validation, seed=seed)
    ga = evolution(fitness, stddev=setup.stddev, mode=mode, seed=seed)
    stop = [evo.callbacks.EarlyStopping(target=setup.target)] if setup.target is not None else []
    result = ga.evolve(initial_population(model, setup.population, seed=seed), generations=setup.generations,
                       callbacks=stop)
    return model, fitness, result


@dataclass(frozen=True)
class Judged:
    """One evolved policy judged in Gymnasium."""

    seed: int
    generations: int
    seconds: float
    returns: np.ndarray     # one per Gymnasium episode

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns))


def judge_seeds(task, seeds: Sequence[int], gym_episodes: int = 100, gym_seed: int = 1_000_000,
                **changes) -> list[Judged]:
    """For each GA seed: evolve (``evolve_policy`` with ``changes``), then run the best policy for ``gym_episodes``
    Gymnasium episodes from resets ``gym_seed``, ``gym_seed + 1``, ... (starts the GA never drew)."""
    out = []
    for seed in seeds:
        start = time.perf_counter()
        model, _, result = evolve_policy(task, seed=seed, **changes)
        seconds = time.perf_counter() - start
        returns = gym_eval.episode_returns(model, task.gym_id, gym_episodes, seed=gym_seed, genome=result.best)
        out.append(Judged(seed, result.generations, seconds, returns))
    return out


def judged_table(runs: Sequence[Judged], threshold: float) -> str:
    """A plain-text row per run: GA seed, generations, evolution time, Gymnasium mean and whether it met
    ``threshold``."""
    lines = [f"{'GA seed':>7} {'generations':>11} {'time (s)':>8} {'Gymnasium mean':>14}  meets {threshold:g}"]
    for r in runs:
        lines.append(f"{r.seed:>7} {r.generations:>11} {r.seconds:>8.1f} {r.mean:>14.1f}  "
                     f"{'yes' if r.mean >= threshold else 'no'}")
    return "\n".join(lines)
