"""Targets: every op, selection and fitness traced for the GPU and the CPU target, on any machine.

The GPU-shaped program is traced and run here on the CPU (``compile(target="gpu")``). What is pinned:
the while loops in one generation's HLO (the generations loop is one; the GPU program has no other but
the documented bounded ones), no host transfers, and the same results as the CPU target: bit for bit
where the arithmetic is integer, to rounding for floats.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import engine, executors, fusion, neuro
from course_lib.evo.ops.mutation import BlockPicks, GeneMask
from course_lib.evo.rng import Rows

N, L, GENERATIONS = 16, 32, 3

# Loops a GPU-shaped generation keeps besides the generations loop, and why (see docs/engine.md, "Targets"):
# a local search's rounds (static trip count), Fisher-Yates over every position (static trip count),
# NSGA-II's fronts (data-dependent, essential, bounded by the pool's size).
BOUNDED_LOOPS = {"TwoOpt": 1, "OrOpt": 1, "ShuffleMutation": 1, "NSGA2": 1}
STATIC_LOOPS = {"TwoOpt", "OrOpt", "ShuffleMutation"}

HOST_TRANSFER = re.compile(r"\b(send|recv|send-done|recv-done|infeed|outfeed)\(|custom_call_target=\"[^\"]*[Hh]ost")


def whiles(hlo: str) -> list[str]:
    """The while instructions of an HLO module's text."""
    return [line for line in hlo.splitlines() if re.search(r"\swhile\(", line)]


def run_program(model, population, stage: str = "hlo"):
    """(the run's arrays after GENERATIONS, the HLO of its compiled ``run`` at ``stage``)."""
    result = model.evolve(population, generations=GENERATIONS)
    (prog,) = [p for p in model._programs.values() if isinstance(p, executors.OneDeviceProgram)]
    genes = engine.checked_population(model, population)
    state = prog.start(genes)
    args = (state, tf.constant(0), tf.constant(GENERATIONS), *executors.no_limits(prog.gen.sign))
    return result, prog._run.experimental_get_compiler_ir(*args)(stage=stage)


def compiled(build, target: str, fitness, selection):
    model = build()
    model.compile(fitness=fitness, selection=selection, mode="xla", seed=3, target=target)
    return model


def int_distances(length: int) -> np.ndarray:
    """Integer distances: tour lengths are exact float sums in any order, so both targets agree bit for bit."""
    xy = np.random.default_rng(0).uniform(0, 100, (length, 2))
    return np.rint(np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1)))


def integer_sum(x):
    return tf.reduce_sum(tf.cast(x, tf.float32), axis=1)


# per kind of genome: (population, fitness, whether every number is an integer)
KINDS = {
    "binary": lambda: (evo.population.random_integers((N, L), 0, 2, seed=1), evo.fitness.OneMax(), True),
    "integer": lambda: (evo.population.random_integers((N, L), 0, 10, seed=1),
                        evo.fitness.Function(integer_sum, maximize=True), True),
    "float": lambda: (evo.population.uniform((N, L), -5.0, 5.0, seed=1), evo.fitness.Sphere(), False),
    "permutation": lambda: (evo.population.permutations(N, L, seed=1), evo.fitness.TSP(distances=int_distances(L)),
                            True),
}


def check_same(a, b, exact: bool) -> None:
    for name in ("population", "fitness", "best"):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        if exact:
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg=name)


def check_targets(build, fitness, selection, population, exact: bool, bounded: int) -> None:
    cpu, cpu_hlo = run_program(compiled(build, "cpu", fitness, selection), population)
    gpu, gpu_hlo = run_program(compiled(build, "gpu", fitness, selection), population)
    assert len(whiles(gpu_hlo)) == 1 + bounded, "\n".join(whiles(gpu_hlo))
    assert len(whiles(cpu_hlo)) >= len(whiles(gpu_hlo))
    assert not HOST_TRANSFER.search(gpu_hlo)
    check_same(cpu, gpu, exact)


OPS = sorted(name for name, cls in evo.ops.registry().items() if cls.__module__.startswith("course_lib."))


@pytest.mark.parametrize("name", OPS)
def test_every_op_compiles_for_the_gpu_target_without_loops_and_as_the_cpu_target(name):
    cls = evo.ops.registry()[name]
    population, fitness, exact = KINDS[cls.genes]()

    def build():
        inputs = evo.Input(shape=(L,), dtype=tf.convert_to_tensor(population).dtype.name)
        return evo.Model(inputs, cls.example(L)(inputs))

    check_targets(build, fitness, evo.selection.Tournament(size=2), population, exact, BOUNDED_LOOPS.get(name, 0))


def binary_model():
    inputs = evo.Input(shape=(L,), dtype="int32")
    x = evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate=4 / L)(inputs))
    return evo.Model(inputs, x)


def float_model():
    inputs = evo.Input(shape=(6,), dtype="float32")
    x = evo.ops.PolynomialMutation(-1.0, 2.0)(evo.ops.SimulatedBinaryCrossover(-1.0, 2.0)(inputs))
    return evo.Model(inputs, x)


def weighted(x, columns):
    """Objectives as integer-weighted sums of 0/1 genes: exact in float32."""
    w = np.arange(1, L + 1, dtype=np.float32)
    return tf.stack([tf.linalg.matvec(tf.cast(x, tf.float32), tf.constant(np.roll(w, 7 * k))) for k in range(columns)],
                    1)


SELECTIONS = {
    "Tournament": lambda: evo.selection.Tournament(size=2),
    "Elitist": lambda: evo.selection.Elitist(),
    "Rank": lambda: evo.selection.Rank(pressure=1.7, elitism=1),
    "NSGA2": lambda: evo.selection.NSGA2(),
}


def test_every_selection_has_a_case():
    from course_lib.evo import selection

    public = {n for n, c in vars(selection).items()
              if isinstance(c, type) and issubclass(c, selection.Selection) and c is not selection.Selection}
    assert public <= set(SELECTIONS), f"add a case for {public - set(SELECTIONS)}"


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_every_selection_compiles_for_the_gpu_target_as_the_cpu_target(name):
    population = evo.population.random_integers((N, L), 0, 2, seed=2)
    check_targets(binary_model, evo.fitness.OneMax(), SELECTIONS[name](), population, True,
                  BOUNDED_LOOPS.get(name, 0))


@pytest.mark.parametrize("objectives", [2, 3])
def test_nsga2_on_many_objectives_keeps_only_its_bounded_front_loop(objectives):
    fitness = evo.fitness.Objectives(lambda x: weighted(x, objectives), ("max",) * objectives)
    population = evo.population.random_integers((N, L), 0, 2, seed=4)
    check_targets(binary_model, fitness, evo.selection.NSGA2(), population, True, 1)


def classification():
    net = neuro.mlp(4, [3], 2, seed=0)
    x = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32)
    return neuro.Classification(net, x, (x[:, 0] > 0).astype(np.int64))


FITNESSES = {  # name: (fitness, model builder, population, exact)
    "OneMax": lambda: (evo.fitness.OneMax(), binary_model, evo.population.random_integers((N, L), 0, 2, seed=5), True),
    "Knapsack": lambda: (evo.fitness.Knapsack(weights=np.arange(1, L + 1), values=np.arange(L, 0, -1),
                                              capacity=L * 4), binary_model,
                         evo.population.random_integers((N, L), 0, 2, seed=5), True),
    "Function": lambda: (evo.fitness.Function(integer_sum, maximize=False), binary_model,
                         evo.population.random_integers((N, L), 0, 2, seed=5), True),
    "TSP": lambda: (evo.fitness.TSP(distances=int_distances(L)), lambda: op_model(evo.ops.TwoOpt(steps=2)),
                    evo.population.permutations(N, L, seed=5), True),
    "Sphere": lambda: (evo.fitness.Sphere(), float_model, evo.population.uniform((N, 6), -1.0, 2.0, seed=5), False),
    "Rastrigin": lambda: (evo.fitness.Rastrigin(), float_model, evo.population.uniform((N, 6), -1.0, 2.0, seed=5),
                          False),
    "Ackley": lambda: (evo.fitness.Ackley(), float_model, evo.population.uniform((N, 6), -1.0, 2.0, seed=5), False),
    "CosineSimilarity": lambda: (evo.fitness.CosineSimilarity(np.linspace(-1, 1, 6)), float_model,
                                 evo.population.uniform((N, 6), -1.0, 2.0, seed=5), False),
    "Objectives": lambda: (evo.fitness.Objectives(lambda x: (tf.reduce_sum(x, 1), tf.nn.relu(x[:, 0])), "min"),
                           float_model, evo.population.uniform((N, 6), -1.0, 2.0, seed=5), False),
    "Classification": lambda: (classification(), lambda: neuro_model(classification()),
                               neuro.initial_population(neuro.mlp(4, [3], 2, seed=0), N, seed=5), False),
}


def op_model(op):
    inputs = evo.Input(shape=(L,), dtype="int32")
    return evo.Model(inputs, op(inputs))


def neuro_model(fitness):
    genome = evo.Input(shape=(fitness.layout.size,), dtype="float32")
    return evo.Model(genome, evo.ops.GaussianMutation(stddev=0.05)(evo.ops.UniformCrossover()(genome)))


def test_every_fitness_has_a_case():
    from course_lib.evo import fitness

    public = {n for n, c in vars(fitness).items() if isinstance(c, type) and issubclass(c, fitness.Fitness)
              and c not in (fitness.Fitness, fitness.MultiObjective) and c.__module__ == fitness.__name__}
    assert public <= set(FITNESSES), f"add a case for {public - set(FITNESSES)}"


@pytest.mark.parametrize("name", sorted(FITNESSES))
def test_every_fitness_compiles_for_the_gpu_target_as_the_cpu_target(name):
    fitness, build, population, exact = FITNESSES[name]()
    # a constrained single objective ranks by NSGA-II's order (one bounded front loop), as does TSP's TwoOpt rounds
    bounded = {"Objectives": 1, "TSP": 1}.get(name, 0)
    check_targets(build, fitness, evo.selection.Tournament(size=2), population, exact, bounded)


def test_the_gpu_programs_remaining_loops_have_a_static_trip_count():
    """XLA (optimized HLO) knows the trip count of every loop a GPU-shaped generation keeps for a
    local search and Fisher-Yates: XLA:GPU runs those on the device, reading no condition back."""
    def build():
        inputs = evo.Input(shape=(L,), dtype="int32")
        return evo.Model(inputs, evo.ops.TwoOpt(steps=2)(evo.ops.ShuffleMutation(rate=0.5)(inputs)))

    model = compiled(build, "gpu", evo.fitness.TSP(distances=int_distances(L)), evo.selection.Tournament(size=2))
    _, hlo = run_program(model, evo.population.permutations(N, L, seed=1), stage="optimized_hlo")
    loops = whiles(hlo)
    assert len(loops) == 3, "\n".join(loops)
    assert sum("known_trip_count" in w for w in loops) == 2, "\n".join(loops)


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_rare_redraws_and_floyd_tails_give_the_same_picks_on_both_targets(target):
    """The GPU forms (every block's escape drawn and kept where it escaped; every Floyd step on every
    row) pick exactly the genes the CPU forms' loops do, at rates where both paths are taken."""
    rows, key = Rows.all(64), tf.constant([7, 11], tf.uint32)
    blocks, mask = BlockPicks(0.08), GeneMask(12 / 256, 256)
    assert blocks.escape > 0.01 and mask.sparse and len(mask.thresholds) > 4

    def picks(k):
        return blocks.words(k, rows, 96), mask.words(k, rows), mask.genes(k, rows)

    got = fusion.xla_function(fusion.targeting(target, picks))(key)
    want = fusion.xla_function(fusion.targeting("cpu", picks))(key)
    reference = picks(key)  # eager: the plain loops
    for g, w, r in zip(got, want, reference):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
        np.testing.assert_array_equal(g.numpy(), r.numpy())


def test_target_auto_follows_the_device_and_a_named_target_is_kept():
    assert fusion.resolve_target("auto", ["/job:localhost/replica:0/task:0/device:CPU:0"]) == "cpu"
    assert fusion.resolve_target("auto", ["/job:worker/task:1/device:GPU:3", "/device:CPU:0"]) == "gpu"
    assert fusion.resolve_target("auto", ["TPU:0"]) == "gpu"
    assert fusion.resolve_target("gpu", ["CPU:0"]) == "gpu"
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        binary_model().compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), target="tpu")
    model = binary_model()
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), mode="xla")
    assert executors.OneDevice().target(model) == ("gpu" if tf.config.list_logical_devices("GPU") else "cpu")
    with tf.device("/CPU:0"):
        assert executors.OneDevice().target(model) == "cpu"
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), mode="xla", target="gpu")
    assert "target='gpu'" in str(model.plan())
