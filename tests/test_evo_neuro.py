"""course_lib.evo.neuro and evo.cartpole: batched networks equal Keras one by one, the genome round
trip is exact, the cart-pole step equals a NumPy transcription of the equations, a small GA balances
the pole for the whole episode, and bad genomes or layers get clear errors."""

import math
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo, processes
from course_lib.evo import cartpole, neuro


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
    x, y, _, _ = neuro.digits()
    x, y = x[:50], y[:50]
    fitness = neuro.Classification(model, x, y)
    genomes = neuro.initial_population(model, 3, seed=2)
    logits = keras_one_by_one(model, genomes, x)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(fitness(genomes).numpy(), logp[:, np.arange(50), y].mean(1), rtol=1e-5)
    np.testing.assert_allclose(fitness.accuracy(genomes), (logits.argmax(-1) == y).mean(1), atol=1e-7)


def numpy_step(s, push_right):
    """The cart-pole equations (Barto, Sutton and Anderson 1983, as gym writes them), in float64."""
    g, mc, mp, l, f, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    x, v, th, w = s.T
    force = np.where(push_right, f, -f)
    tmp = (force + mp * l * w ** 2 * np.sin(th)) / (mc + mp)
    alpha = (g * np.sin(th) - np.cos(th) * tmp) / (l * (4 / 3 - mp * np.cos(th) ** 2 / (mc + mp)))
    acc = tmp - mp * l * alpha * np.cos(th) / (mc + mp)
    return np.stack([x + tau * v, v + tau * acc, th + tau * w, w + tau * alpha], axis=1)


def test_cartpole_step_and_termination_equal_a_numpy_reference():
    rng = np.random.default_rng(0)
    s = rng.uniform([-2.4, -2, -0.2, -2], [2.4, 2, 0.2, 2], (200, 4)).astype(np.float32)
    push = rng.random(200) < 0.5
    np.testing.assert_allclose(cartpole.step(tf.constant(s), tf.constant(push)).numpy(),
                               numpy_step(s.astype(np.float64), push), rtol=1e-5, atol=1e-6)
    edge = np.array([[2.41, 0, 0, 0], [2.39, 0, 0, 0], [0, 0, math.radians(12.1), 0],
                     [0, 0, -math.radians(11.9), 0]], np.float32)
    assert cartpole.failed(tf.constant(edge)).numpy().tolist() == [True, False, True, False]


def test_rollout_counts_steps_until_failure_like_a_python_loop():
    start = cartpole.initial_states(3, seed=1)
    always_right = lambda s: tf.ones(s.shape[:-1], tf.bool)  # noqa: E731
    returns, trace = cartpole.rollout(always_right, start, steps=100, record=True)
    for e in range(3):
        s, n = start[e:e + 1].astype(np.float64), 0
        while n < 100:
            s, n = numpy_step(s, np.array([True])), n + 1
            if abs(s[0, 0]) > 2.4 or abs(s[0, 2]) > math.radians(12):
                break
        assert returns[e].numpy() == n
        np.testing.assert_allclose(trace[n, e].numpy(), s[0], rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(trace[-1, e].numpy(), trace[n, e].numpy())  # frozen after failing
    assert trace.shape == (101, 3, 4)


def test_batched_returns_equal_keras_policy_one_by_one():
    model = net(4, 8, 1)
    fitness = neuro.CartPole(model, episodes=3, steps=100)
    genomes = neuro.initial_population(model, 4, seed=4)
    np.testing.assert_array_equal(fitness.returns(genomes).numpy(),
                                  neuro.per_individual_returns(model, genomes, fitness.start, 100))


def test_ga_balances_the_pole_for_the_whole_episode():
    model = net(4, 8, 1)
    fitness = neuro.CartPole(model, episodes=3, steps=500, seed=0)
    ga = neuro.evolution(fitness, stddev=0.1, mode="graph", seed=0)
    result = ga.evolve(neuro.initial_population(model, 64, seed=0), generations=10,
                       callbacks=[evo.callbacks.EarlyStopping(target=500)])
    assert result.best_fitness == 500 and result.stopped_early and result.generations <= 10
    assert result.history["best"][0] < 500  # the first population had no such policy
    # the same program as the generation's (a chaotic system amplifies another compiler's rounding)
    returns = tf.function(fitness.returns, autograph=False)
    assert returns(result.best[None]).numpy().tolist() == [[500.0, 500.0, 500.0]]


def test_bad_genomes_and_layers_get_clear_errors():
    model = net(4, 8, 1)
    with pytest.raises(ValueError, match=r"49 weights.*shape \(50,\)"):
        neuro.from_genome(model, np.zeros(50, np.float32))
    with pytest.raises(ValueError, match=r"float vectors of 49 weights"):
        neuro.CartPole(model).returns(np.zeros((3, 48), np.float32))
    ga_input = evo.Input(shape=(48,), dtype="float32")
    ga = evo.Model(ga_input, evo.ops.GaussianMutation(0.1)(ga_input))
    with pytest.raises(ValueError, match=r"Input\(shape=\(49,\), dtype='float32'\)"):
        ga.compile(fitness=neuro.CartPole(model), selection=evo.selection.Elitist())
    conv = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(2, 3), keras.layers.Flatten(),
                             keras.layers.Dense(10)])
    with pytest.raises(ValueError, match=r"Dense layers only.*Conv2D.*Flatten"):
        neuro.to_genome(conv)
    with pytest.raises(ValueError, match="cart-pole policy takes the 4 state variables"):
        neuro.CartPole(net(64, 16, 10))


def test_neuroevolution_under_mirrored_strategy_on_two_virtual_cpus():
    source = """
        import tensorflow as tf
        from course_lib import devices, distribute
        from course_lib.evo import neuro
        strategy = distribute.make_strategy("mirrored", devices.virtual_cpus(2))
        model = neuro.mlp(4, [4], 1)
        fitness = neuro.CartPole(model, episodes=1, steps=50)
        ga = neuro.evolution(fitness, stddev=0.1, crossover=False, mode="graph", seed=0)
        run = ga.evolve(neuro.initial_population(model, 8, seed=0), generations=2, strategy=strategy)
        check = float(tf.function(fitness.__call__, autograph=False)(run.best[None]).numpy()[0])
        result = {"best": run.best_fitness, "check": check, "shape": list(run.population.shape)}
    """
    out = processes.run(source=textwrap.dedent(source), env={"TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=200).result
    assert out["best"] == out["check"] and out["best"] >= 1 and out["shape"] == [8, 25]
