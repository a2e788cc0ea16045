"""Neuroevolution: a population of Keras networks evolved by ``course_lib.evo`` as one program.

A genome is the flat weight vector of a Keras model made of Dense layers (each kernel,
then its bias, layer by layer). The fitnesses here never call the Keras model: they slice
the population's genomes (P, G) into per-layer weights with a population axis, (P, in, out),
and run all P networks at once with a few large products (see ``Layout.apply``), so a generation's
evaluation is a few large operations instead of P small model calls, and it compiles with
XLA inside ``evolve`` like any other fitness (and shards under a ``tf.distribute`` strategy).

Two problems: digit classification (``Classification``, against Keras ``fit`` on the same
architecture) and cart-pole balancing (``CartPole``, episodes simulated by
``course_lib.evo.cartpole`` inside the compiled generation; random search is the baseline).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from course_lib import bench
from course_lib import digits as course_digits
from course_lib.evo import cartpole
from course_lib.evo import callbacks as cb_lib
from course_lib.evo.fitness import Fitness
from course_lib.evo.graph import GenomeSpec, Input
from course_lib.evo.model import Model
from course_lib.evo.ops import GaussianMutation, UniformCrossover
from course_lib.evo.selection import Elitist


# -- the genome ------------------------------------------------------------------------------

@dataclass(frozen=True)
class DenseSlot:
    """Where one Dense layer's weights sit in the genome, and what it applies."""

    name: str
    inputs: int
    units: int
    offset: int            # first gene of the kernel (inputs x units, row-major); the bias follows
    use_bias: bool
    activation: Callable

    @property
    def size(self) -> int:
        return self.inputs * self.units + (self.units if self.use_bias else 0)


class Layout:
    """The genome of a Keras model: its Dense layers' slots, in the order they run."""

    def __init__(self, model: keras.Model):
        if not isinstance(model, keras.Model):
            raise TypeError(f"a genome layout needs a keras.Model, got {type(model).__name__}")
        if not model.built:
            raise ValueError("the Keras model has no weights yet: give it an input shape "
                             "(keras.Input(shape=...) as its first layer) or call it once")
        layers = [layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
        others = [f"{layer.name} ({type(layer).__name__})" for layer in layers
                  if not isinstance(layer, keras.layers.Dense)]
        if others:
            raise ValueError(f"a genome holds Dense layers only; this model also has {', '.join(others)}. "
                             "Build the network from keras.layers.Dense (activation= covers the nonlinearity)")
        if not layers:
            raise ValueError("the model has no Dense layer, so its genome would be empty")
        slots, offset = [], 0
        for layer in layers:
            inputs, units = (int(d) for d in layer.kernel.shape)
            if slots and inputs != slots[-1].units:
                raise ValueError(f"layer {layer.name} takes {inputs} features but the layer before gives "
                                 f"{slots[-1].units}: a genome holds a chain of Dense layers")
            slots.append(DenseSlot(layer.name, inputs, units, offset, layer.use_bias, layer.activation))
            offset += slots[-1].size
        self.model, self.slots, self.layers, self.size = model, slots, layers, offset

    @property
    def inputs(self) -> int:
        return self.slots[0].inputs

    @property
    def outputs(self) -> int:
        return self.slots[-1].units

    @property
    def spec(self) -> GenomeSpec:
        return GenomeSpec((self.size,), tf.float32)

    def genomes(self, genomes) -> tf.Tensor:
        """``genomes`` as float32 (P, size), or a clear error for the wrong length."""
        g = tf.convert_to_tensor(genomes, tf.float32)
        if g.shape.rank != 2 or g.shape[1] != self.size:
            raise ValueError(f"genomes for this model are float vectors of {self.size} weights, a population "
                             f"has shape (individuals, {self.size}); got shape {tuple(g.shape)}")
        return g

    def weights(self, genomes: tf.Tensor) -> list[tuple[tf.Tensor, tf.Tensor | None]]:
        """Per layer: kernels (P, inputs, units) and biases (P, units) or None, sliced from (P, size)."""
        out = []
        for s in self.slots:
            end = s.offset + s.inputs * s.units
            kernel = tf.reshape(genomes[:, s.offset:end], (-1, s.inputs, s.units))
            out.append((kernel, genomes[:, end:end + s.units] if s.use_bias else None))
        return out

    def forward(self, genomes, x, *, final_activation: bool = True) -> tf.Tensor:
        """Outputs (P, B, outputs) of all P networks: ``x`` is (B, inputs), shared, or (P, B, inputs)."""
        return self.apply(self.weights(self.genomes(genomes)), x, final_activation=final_activation)

    def apply(self, weights, x, *, final_activation: bool = True) -> tf.Tensor:
        """``forward`` with the weights already sliced (``weights(genomes)``), e.g. once before a loop.

        Inside, activations are feature-major, (P, features, B): for a batch shared by the whole
        population the first layer is then one wide matrix product, all P kernels stacked
        (P * units, inputs) times the batch (inputs, B), with no transpose of the large result;
        later layers are batched products, one small matrix per network.
        """
        h = tf.convert_to_tensor(x, tf.float32)
        if h.shape.rank not in (2, 3) or h.shape[-1] != self.inputs:
            raise ValueError(f"inputs must have shape (batch, {self.inputs}) or (individuals, batch, "
                             f"{self.inputs}), got {tuple(h.shape)}")
        last = len(self.slots) - 1
        for i, ((kernel, bias), s) in enumerate(zip(weights, self.slots)):
            if i == 0 and h.shape.rank == 2:
                stacked = tf.reshape(tf.transpose(kernel, (0, 2, 1)), (-1, s.inputs))
                h = tf.reshape(tf.matmul(stacked, h, transpose_b=True), (-1, s.units, h.shape[0]))
            else:
                h = _product(kernel, h, i == 0)
            if bias is not None:
                h += bias[:, :, None]
            if i == last:
                h = tf.transpose(h, (0, 2, 1))
                return s.activation(h) if final_activation else h
            if s.activation in _ACROSS_FEATURES:
                h = tf.transpose(s.activation(tf.transpose(h, (0, 2, 1))), (0, 2, 1))
            else:
                h = s.activation(h)


# Layers at most this wide on input are computed as a sum of broadcast products (see _product).
NARROW = 8


def _product(kernel: tf.Tensor, h: tf.Tensor, batch_major: bool) -> tf.Tensor:
    """Every network's layer product, (P, inputs, units) with (P, inputs, B) -> (P, units, B).

    A batched matmul of tiny matrices runs as a loop of tiny library calls. For a narrow layer
    (a cart-pole policy's 4 or 8 inputs) the sum over inputs of broadcast products is plain
    elementwise work, which XLA fuses into one loop over the population and the batch; with
    wider inputs the matmul wins. ``batch_major``: ``h`` is (P, B, inputs).
    """
    if kernel.shape[1] > NARROW:
        return tf.matmul(kernel, h, transpose_a=True, transpose_b=batch_major)
    if batch_major:
        h = tf.transpose(h, (0, 2, 1))
    return tf.add_n([kernel[:, i, :, None] * h[:, i, None, :] for i in range(kernel.shape[1])])


# activations that mix a layer's features (all others act on each value alone)
_ACROSS_FEATURES = (keras.activations.softmax, keras.activations.log_softmax)


def to_genome(model: keras.Model) -> np.ndarray:
    """The model's weights as one float32 vector (kernel then bias, layer by layer)."""
    layout = Layout(model)
    parts = []
    for layer in layout.layers:
        parts.append(np.asarray(layer.kernel.numpy(), np.float32).ravel())
        if layer.use_bias:
            parts.append(np.asarray(layer.bias.numpy(), np.float32).ravel())
    return np.concatenate(parts)


def from_genome(model: keras.Model, genome) -> keras.Model:
    """Load ``genome`` (one vector) into the model's weights, exactly; returns the model."""
    layout = Layout(model)
    g = np.asarray(genome, np.float32)
    if g.shape != (layout.size,):
        raise ValueError(f"this model's genome has {layout.size} weights (shape ({layout.size},)), got shape "
                         f"{g.shape}; a genome from a model with other layer sizes does not fit")
    for layer, s in zip(layout.layers, layout.slots):
        end = s.offset + s.inputs * s.units
        layer.kernel.assign(g[s.offset:end].reshape(s.inputs, s.units))
        if s.use_bias:
            layer.bias.assign(g[end:end + s.units])
    return model


def initial_population(model: keras.Model, n: int, seed: int = 0) -> np.ndarray:
    """float32 (n, size): each layer's weights uniform in ±sqrt(6 / (inputs + units)) (Glorot's range).

    Biases get the same range as their kernel, so the first networks already differ in them.
    """
    layout = Layout(model)
    limit = np.concatenate([np.full(s.size, np.sqrt(6.0 / (s.inputs + s.units)), np.float32)
                            for s in layout.slots])
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1.0, 1.0, (n, layout.size)) * limit).astype(np.float32)


def per_individual(model: keras.Model, genomes, x) -> np.ndarray:
    """The slow reference: load each genome into the Keras model and call it, one at a time."""
    outs = [model(x, training=False).numpy() for _ in _each_loaded(model, genomes)]
    return np.stack(outs)


def _each_loaded(model: keras.Model, genomes):
    for g in np.asarray(genomes, np.float32):
        yield from_genome(model, g)


def mlp(inputs: int, hidden: Sequence[int], outputs: int, activation: str = "tanh",
        output_activation: str | None = None, seed: int = 0) -> keras.Sequential:
    """A small Dense network, e.g. ``mlp(64, [16], 10)`` for the digits, ``mlp(4, [8], 1)`` for cart-pole."""
    widths = [*hidden, outputs]
    layers = [keras.layers.Dense(units, activation=activation if i < len(hidden) else output_activation,
                                 kernel_initializer=keras.initializers.GlorotUniform(seed=seed * 1000 + i))
              for i, units in enumerate(widths)]
    return keras.Sequential([keras.Input(shape=(inputs,)), *layers])


# -- fitnesses ----------------------------------------------------------------------------------

class Networks(Fitness):
    """Base of the fitnesses whose genomes are the weights of ``model`` (see ``Layout``)."""

    def __init__(self, model: keras.Model):
        self.layout = Layout(model)

    def check(self, spec: GenomeSpec) -> None:
        if spec.shape != (self.layout.size,) or not spec.dtype.is_floating:
            raise ValueError(f"{type(self).__name__} scores the {self.layout.size} weights of its Keras model: "
                             f"use evo.Input(shape=({self.layout.size},), dtype='float32'), got genomes {spec}")


class Classification(Networks):
    """Mean log-likelihood of the true class over ``x, y`` (maximise; 0 is perfect).

    The model's last layer gives class scores (logits); with a softmax last activation, its
    input is read as the logits. The log-likelihood, unlike accuracy, rewards every small step towards the
    right class, which gives selection something to work with from the first generation.
    """

    def __init__(self, model: keras.Model, x, y):
        super().__init__(model)
        x, y = np.asarray(x, np.float32), np.asarray(y)
        if x.ndim != 2 or x.shape[1] != self.layout.inputs or y.shape != (x.shape[0],):
            raise ValueError(f"Classification needs x (samples, {self.layout.inputs}) and labels y (samples,), "
                             f"got {x.shape} and {y.shape}")
        if y.min() < 0 or y.max() >= self.layout.outputs:
            raise ValueError(f"labels must be in 0..{self.layout.outputs - 1} (one per output unit), "
                             f"got {y.min()}..{y.max()}")
        self.x, self.y = tf.constant(x), tf.constant(y, tf.int32)
        self._onehot = tf.one_hot(self.y, self.layout.outputs)
        # a softmax last layer gives probabilities: read its input as the logits instead
        self._logits_only = self.layout.slots[-1].activation is keras.activations.softmax

    def _logits(self, genomes, x) -> tf.Tensor:
        return self.layout.forward(genomes, x, final_activation=not self._logits_only)

    def evaluate(self, population):
        logp = tf.nn.log_softmax(self._logits(population, self.x), axis=-1)
        return tf.reduce_mean(tf.reduce_sum(logp * self._onehot[None], axis=-1), axis=1)

    def accuracy(self, genomes, x=None, y=None) -> np.ndarray:
        """Fraction classified right, per genome (on ``x, y``, the fitness data by default)."""
        x = self.x if x is None else x
        y = self.y if y is None else tf.constant(np.asarray(y), tf.int32)
        guess = tf.argmax(self._logits(genomes, x), axis=-1, output_type=tf.int32)
        return tf.reduce_mean(tf.cast(guess == y[None, :], tf.float32), axis=1).numpy()

    def config(self):
        return {"weights": self.layout.size, "samples": int(self.x.shape[0])}


class CartPole(Networks):
    """Mean return over ``episodes`` cart-pole episodes of at most ``steps`` steps (maximise).

    The network sees the state (x, x_dot, theta, theta_dot) and pushes right when its one
    output is positive (or, with two outputs, when the second is larger). Every individual
    starts from the same ``episodes`` states (drawn once from ``seed``), so differences in
    fitness come from the policies, not from luckier starts.
    """

    def __init__(self, model: keras.Model, episodes: int = 4, steps: int = 500, seed: int = 0):
        super().__init__(model)
        if self.layout.inputs != 4 or self.layout.outputs not in (1, 2):
            raise ValueError(f"a cart-pole policy takes the 4 state variables and gives 1 or 2 outputs; this "
                             f"model maps {self.layout.inputs} inputs to {self.layout.outputs} outputs")
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a whole number >= 1, got {steps!r}")
        self.episodes, self.steps, self.seed = episodes, steps, seed
        self.start = tf.constant(cartpole.initial_states(episodes, seed))

    def policy(self, genomes) -> Callable[[tf.Tensor], tf.Tensor]:
        """States (P, E, 4) -> pushes right (P, E), for all P genomes; weights sliced once."""
        weights = self.layout.weights(self.layout.genomes(genomes))

        def push_right(states):
            out = self.layout.apply(weights, states)
            return out[..., 0] > 0 if self.layout.outputs == 1 else out[..., 1] > out[..., 0]

        return push_right

    def returns(self, genomes, start=None) -> tf.Tensor:
        """float32 (P, E): steps survived by each genome in each episode (``start`` (E, 4), default ours)."""
        g = self.layout.genomes(genomes)
        start = self.start if start is None else tf.convert_to_tensor(start, tf.float32)
        states = tf.broadcast_to(start[None], (g.shape[0], *start.shape))
        return cartpole.rollout(self.policy(g), states, self.steps)

    def evaluate(self, population):
        return tf.reduce_mean(self.returns(population), axis=1)

    def trajectory(self, genome, start) -> tuple[float, np.ndarray]:
        """One episode of one genome from ``start`` (4,): its return and states (steps + 1, 4)."""
        g = self.layout.genomes(np.asarray(genome, np.float32)[None])
        states = tf.reshape(tf.convert_to_tensor(start, tf.float32), (1, 1, 4))
        ret, trace = cartpole.rollout(self.policy(g), states, self.steps, record=True)
        return float(ret[0, 0]), trace[:, 0, 0].numpy()

    def config(self):
        return {"weights": self.layout.size, "episodes": self.episodes, "steps": self.steps, "seed": self.seed}


def per_individual_returns(model: keras.Model, genomes, start, steps: int = 500) -> np.ndarray:
    """The slow reference for ``CartPole.returns``: each genome loaded into the Keras model, one
    model call per step (all episodes of that genome in one batch), stepping until all have failed."""
    layout = Layout(model)
    start = tf.convert_to_tensor(start, tf.float32)
    out = []
    for net in _each_loaded(model, genomes):
        state, alive, ret = start, tf.ones(start.shape[0], tf.bool), tf.zeros(start.shape[0])
        for _ in range(steps):
            y = net(state, training=False)
            push = y[:, 0] > 0 if layout.outputs == 1 else y[:, 1] > y[:, 0]
            state = tf.where(alive[:, None], cartpole.step(state, push), state)
            ret += tf.cast(alive, tf.float32)
            alive &= ~cartpole.failed(state)
            if not bool(tf.reduce_any(alive)):
                break
        out.append(ret.numpy())
    return np.stack(out)


# -- evolving -----------------------------------------------------------------------------------

def evolution(fitness: Networks, stddev: float = 0.05, crossover: bool = True, mode: str = "xla",
              seed: int = 0) -> Model:
    """A GA over ``fitness``'s weights: uniform crossover, Gaussian mutation of every weight,
    and mu + lambda selection (``Elitist``), so the best network is never lost."""
    genome = Input(shape=(fitness.layout.size,), dtype="float32", name="weights")
    x = UniformCrossover()(genome) if crossover else genome
    x = GaussianMutation(stddev=stddev)(x)
    model = Model(genome, x, name="neuroevolution")
    model.compile(fitness=fitness, selection=Elitist(), mode=mode, seed=seed)
    return model


def evaluations(n: int, generations: int) -> int:
    """Networks evaluated by a GA of ``n`` individuals after ``generations``: the first population,
    then ``n`` children per generation."""
    return n * (generations + 1)


def random_search(fitness: Networks, model: keras.Model, samples: int, batch: int, seed: int = 0) -> dict:
    """Best of ``samples`` networks drawn like the GA's first population, scored ``batch`` at a time
    (XLA-compiled): the baseline a GA must beat. Returns the best so far after each batch."""
    score = tf.function(fitness.__call__, jit_compile=True)
    best, best_genome, curve = -np.inf, None, {"evaluations": [], "best": []}
    sign = 1.0 if fitness.maximize else -1.0
    for i in range(-(-samples // batch)):
        pop = initial_population(model, batch, seed=seed + 1 + i)
        fit = score(tf.constant(pop)).numpy()
        j = int(np.argmax(sign * fit))
        if sign * fit[j] > sign * best:
            best, best_genome = float(fit[j]), pop[j]
        curve["evaluations"].append((i + 1) * batch)
        curve["best"].append(best)
    return {**curve, "best_genome": best_genome}


# -- classification: the GA against gradient descent ---------------------------------------------

def digits(test_fraction: float = 0.25, seed: int = 0):
    """The course's 8x8 digits (``course_lib.digits``, 1,797 images, as lecture 06) as flat float32
    pixels in [0, 1], split at random: x_train, y_train, x_test, y_test."""
    pixels, labels = course_digits.load()
    x = (pixels.reshape(len(pixels), -1) / 16.0).astype(np.float32)
    y = labels.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
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


class _Clock(cb_lib.Callback):
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


def ga_curve(model: Model, fitness: Classification, population, generations: int, x_test, y_test,
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
    curve = Curve(name, ("epoch (a forward and backward pass over the training set)",
                        "epochs (each a forward and backward pass over the training set)"), [], [], [])
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


def policy_variants(fitness: CartPole, model: keras.Model) -> dict[str, Callable]:
    """Like ``speed_variants`` for whole cart-pole episodes from ``fitness``'s starts."""
    def keras_calls(population: int):
        genomes = initial_population(model, population)
        return lambda: per_individual_returns(model, genomes, fitness.start, fitness.steps)

    def batched(jit: bool):
        returns = tf.function(fitness.returns, jit_compile=jit, autograph=False)

        def build(population: int):
            genomes = tf.constant(initial_population(model, population))
            return lambda: returns(genomes)
        return build

    return {PER_INDIVIDUAL: keras_calls, GRAPH: batched(False), XLA: batched(True)}


def policy_steps(fitness: CartPole, model: keras.Model, population: int) -> float:
    """Steps of still-running episodes that ``policy_variants(...)[v](population)`` simulates."""
    return float(tf.reduce_sum(fitness.returns(initial_population(model, population))))


def rates(comparison: bench.Comparison) -> dict[str, float]:
    """Work per second for each variant of a comparison made by ``bench_neuro`` (networks or steps)."""
    return {t.name: comparison.params["work"] / t.median_s for t in comparison.timings}


def _sizes_at_least_two(args) -> str | None:
    return None if all(n >= 2 for n in args.sizes) else f"population sizes must be >= 2, got {args.sizes}"


@bench.command("neuro", repeats=3, check=_sizes_at_least_two,
               quick={"sizes": [64, 256], "episodes": 2, "steps": 100},
               options={"--sizes": dict(type=int, nargs="+", default=[64, 256, 1024, 4096], help="population sizes"),
                        "--keras-max": dict(type=int, default=64,
                                            help="largest population timed with per-individual Keras calls (their "
                                                 "time grows linearly; a rate per network does not depend on the "
                                                 "population)"),
                        "--episodes": dict(type=int, default=4), "--steps": dict(type=int, default=500)})
def bench_neuro(args) -> list:
    """``course bench neuro``: networks/s and policy steps/s for each population size, batched and
    compiled against a Keras call per network, in one run."""
    classifier, policy = mlp(64, [16], 10), mlp(4, [8], 1)
    x = digits()[0][:256]
    cart = CartPole(policy, episodes=args.episodes, steps=args.steps)
    comparisons = []
    for n in args.sizes:
        chosen = [v for v in (PER_INDIVIDUAL, GRAPH, XLA) if v != PER_INDIVIDUAL or n <= args.keras_max]
        builders = speed_variants(classifier, x)
        c = bench.compare({v: builders[v](n) for v in chosen}, repeats=args.repeats, number=1,
                          title=f"{n} networks 64-16-10 on {len(x)} digits",
                          params={"population": n, "work": n, "unit": "networks/s"})
        comparisons.append(c)
        builders = policy_variants(cart, policy)
        c = bench.compare({v: builders[v](n) for v in chosen}, repeats=args.repeats, number=1,
                          title=f"{n} policies 4-8-1, {args.episodes} episodes of up to {args.steps} steps",
                          params={"population": n, "work": policy_steps(cart, policy, n), "unit": "policy steps/s"})
        comparisons.append(c)
    for c in comparisons:
        rate = ", ".join(f"{name} {value:.3g}" for name, value in rates(c).items())
        print(f"{c.title}: {c.params['unit']}: {rate}")
    return comparisons


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
