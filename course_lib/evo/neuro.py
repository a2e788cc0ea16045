"""Neuroevolution: a population of Keras networks evolved by ``course_lib.evo`` as one program.

A genome is the flat weight vector of a Keras model made of Dense layers (each kernel,
then its bias, layer by layer). The fitnesses here never call the Keras model: they slice
the population's genomes (P, G) into per-layer weights with a population axis, (P, in, out),
and run all P networks at once with a few large products (see ``Layout.apply``), so a generation's
evaluation is a few large operations instead of P small model calls, and it compiles with
XLA inside ``evolve`` like any other fitness (and shards under a ``tf.distribute`` strategy).

``Classification`` scores networks on labelled data; control tasks (``course_lib.problems.control``)
build on ``Networks`` the same way. ``evolution`` is the GA over the weights, ``random_search`` its
baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from course_lib.evo.fitness import Fitness
from course_lib.evo.model import Model
from course_lib.evo.ops import GaussianMutation, UniformCrossover
from course_lib.evo.selection import Elitist
from course_lib.evo.symbolic import GenomeSpec, Input

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
        slots: list = []
        offset = 0
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
        # a softmax last layer gives probabilities: read its input as the logits instead
        self._logits_only = self.layout.slots[-1].activation is keras.activations.softmax

    def _logits(self, genomes, x) -> tf.Tensor:
        return self.layout.forward(genomes, x, final_activation=not self._logits_only)

    def evaluate(self, population):
        logp = tf.nn.log_softmax(self._logits(population, self.x), axis=-1)
        onehot = tf.one_hot(self.y, self.layout.outputs)  # from y as it is now: an edit of y takes effect
        return tf.reduce_mean(tf.reduce_sum(logp * onehot[None], axis=-1), axis=1)

    def accuracy(self, genomes, x=None, y=None) -> np.ndarray:
        """Fraction classified right, per genome (on ``x, y``, the fitness data by default)."""
        x = self.x if x is None else x
        y = self.y if y is None else tf.constant(np.asarray(y), tf.int32)
        guess = tf.argmax(self._logits(genomes, x), axis=-1, output_type=tf.int32)
        return tf.reduce_mean(tf.cast(guess == y[None, :], tf.float32), axis=1).numpy()

    def config(self):
        return {"weights": self.layout.size, "samples": int(self.x.shape[0])}


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
    (XLA-compiled): the baseline a GA must beat. Returns the best so far after each batch (in the
    fitness's direction; NaN scores never count, and "best" is NaN until a batch scored one)."""
    score = tf.function(fitness.__call__, jit_compile=True)
    best: float | None = None
    best_genome = None
    curve: dict[str, list] = {"evaluations": [], "best": []}
    sign = 1.0 if fitness.maximize else -1.0
    for i in range(-(-samples // batch)):
        pop = initial_population(model, batch, seed=seed + 1 + i)
        fit = score(tf.constant(pop)).numpy()
        signed = np.where(np.isnan(fit), -np.inf, sign * fit)  # NaN never wins, in either direction
        j = int(np.argmax(signed))
        if signed[j] > -np.inf and (best is None or signed[j] > sign * best):
            best, best_genome = float(fit[j]), pop[j]
        curve["evaluations"].append((i + 1) * batch)
        curve["best"].append(np.nan if best is None else best)
    return {**curve, "best_genome": best_genome}
