"""course_lib.evo.neuro: batched networks equal Keras one by one, the genome round trip is exact, the
classification fitness is the mean log-likelihood, bad genomes or layers get clear errors, and
networks evolve under a mirrored strategy."""

import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo, processes
from course_lib.evo import neuro
from course_lib.lessons.neuroevolution import digits
from course_lib.problems import cartpole, control


def net(*sizes, activation="tanh", output_activation=None, seed=0):
    return neuro.mlp(sizes[0], list(sizes[1:-1]), sizes[-1], activation=activation,
                     output_activation=output_activation, seed=seed)


def keras_one_by_one(model, genomes, x):
    """Each genome cut into the model's weight shapes by hand, loaded with set_weights, called."""
    shapes = [w.shape for w in model.get_weights()]
    out = []
    for i, g in enumerate(genomes):
        parts, at = [], 0
        for shape in shapes:
            size = int(np.prod(shape))
            parts.append(g[at:at + size].reshape(shape))
            at += size
        model.set_weights(parts)
        out.append(model(x if x.ndim == 2 else x[i]).numpy())
    return np.stack(out)


@pytest.mark.parametrize("sizes, activation, output_activation", [
    ((64, 16, 10), "tanh", None),                # the digits MLP: wide first layer, one matmul
    ((4, 8, 3, 2), "relu", "softmax"),           # narrow layers: sums of broadcast products
    ((12, 9, 5), "sigmoid", "softmax"),
])
def test_batched_forward_equals_keras_one_network_at_a_time(sizes, activation, output_activation):
    model = net(*sizes, activation=activation, output_activation=output_activation)
    genomes = neuro.initial_population(model, 5, seed=1)
    rng = np.random.default_rng(0)
    shared = rng.normal(size=(7, sizes[0])).astype(np.float32)
    own = rng.normal(size=(5, 7, sizes[0])).astype(np.float32)
    layout = neuro.Layout(model)
    np.testing.assert_allclose(layout.forward(genomes, shared).numpy(), keras_one_by_one(model, genomes, shared),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layout.forward(genomes, own).numpy(), keras_one_by_one(model, genomes, own),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(neuro.per_individual(model, genomes, shared),
                               keras_one_by_one(model, genomes, shared), rtol=1e-6, atol=1e-6)
    xla = tf.function(layout.forward, jit_compile=True)
    np.testing.assert_allclose(xla(genomes, shared).numpy(), layout.forward(genomes, shared).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_genome_round_trip_is_exact_and_in_keras_weight_order():
    model = net(6, 5, 3, activation="relu")
    genome = neuro.to_genome(model)
    assert genome.dtype == np.float32 and genome.shape == (6 * 5 + 5 + 5 * 3 + 3,)
    np.testing.assert_array_equal(genome, np.concatenate([w.ravel() for w in model.get_weights()]))
    other = neuro.initial_population(model, 1, seed=3)[0]
    neuro.from_genome(model, other)
    np.testing.assert_array_equal(neuro.to_genome(model), other)
    np.testing.assert_array_equal(model.get_weights()[1], other[30:35])


def test_classification_fitness_is_the_mean_log_likelihood_and_accuracy_matches_keras():
    model = net(64, 16, 10)
    x, y, _, _ = digits()
    x, y = x[:50], y[:50]
    fitness = neuro.Classification(model, x, y)
    genomes = neuro.initial_population(model, 3, seed=2)
    logits = keras_one_by_one(model, genomes, x)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(fitness(genomes).numpy(), logp[:, np.arange(50), y].mean(1), rtol=1e-5)
    np.testing.assert_allclose(fitness.accuracy(genomes), (logits.argmax(-1) == y).mean(1), atol=1e-7)


def test_bad_genomes_and_layers_get_clear_errors():
    model = net(4, 8, 1)
    with pytest.raises(ValueError, match=r"49 weights.*shape \(50,\)"):
        neuro.from_genome(model, np.zeros(50, np.float32))
    with pytest.raises(ValueError, match=r"float vectors of 49 weights"):
        control.Control(model, cartpole.CartPole()).returns(np.zeros((3, 48), np.float32))
    ga_input = evo.Input(shape=(48,), dtype="float32")
    ga = evo.Model(ga_input, evo.ops.GaussianMutation(0.1)(ga_input))
    with pytest.raises(ValueError, match=r"Input\(shape=\(49,\), dtype='float32'\)"):
        ga.compile(fitness=control.Control(model, cartpole.CartPole()), selection=evo.selection.Elitist())
    conv = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(2, 3), keras.layers.Flatten(),
                             keras.layers.Dense(10)])
    with pytest.raises(ValueError, match=r"Dense layers only.*Conv2D.*Flatten"):
        neuro.to_genome(conv)
    with pytest.raises(ValueError, match="cart-pole policy reads the 4 observations"):
        control.Control(net(64, 16, 10), cartpole.CartPole())


@pytest.mark.slow
def test_neuroevolution_under_mirrored_strategy_on_two_virtual_cpus():
    source = """
        import tensorflow as tf
        from course_lib import devices, distribute
        from course_lib.evo import neuro
        from course_lib.problems import cartpole, control
        strategy = distribute.make_strategy("mirrored", devices.virtual_cpus(2))
        model = neuro.mlp(4, [4], 1)
        fitness = control.Control(model, cartpole.CartPole(), episodes=1, fresh=2, validation=2, steps=50)
        ga = neuro.evolution(fitness, stddev=0.1, crossover=False, mode="graph", seed=0)
        run = ga.evolve(neuro.initial_population(model, 8, seed=0), generations=2, strategy=strategy)
        check = float(tf.function(fitness.__call__, autograph=False)(run.best[None]).numpy()[0])
        result = {"best": run.best_fitness, "check": check, "shape": list(run.population.shape)}
    """
    out = processes.run(source=textwrap.dedent(source), env={"TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=200).result
    assert out["best"] == out["check"] and out["best"] >= 1 and out["shape"] == [8, 25]
