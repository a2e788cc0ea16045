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
from course_lib.evo import engine, executors, fusion, neuro, sharding
from course_lib.evo.ops.mutation import BlockPicks, GeneMask
from course_lib.evo.rng import Rows

N, L, GENERATIONS = 16, 32, 3

# Loops a GPU-shaped generation keeps besides the generations loop, and why (see docs/engine.md, "Targets"):
# a local search's rounds (static trip count), Fisher-Yates over every position (static trip count),
# NSGA-II's fronts (data-dependent, essential, bounded by the pool's size).
# (NSGA-II ranks one objective by two sorts: no loop there.)
BOUNDED_LOOPS = {"TwoOpt": 1, "OrOpt": 1, "ShuffleMutation": 1, "SharedEdgeCrossover": 1}

HOST_TRANSFER = re.compile(r"\b(send|recv|send-done|recv-done|infeed|outfeed)\(|custom_call_target=\"[^\"]*[Hh]ost")


def whiles(hlo: str) -> list[str]:
    """The while instructions of an HLO module's text."""
    return [line for line in hlo.splitlines() if re.search(r"\swhile\(", line)]


def gpu_hlo(model, population, stage: str = "hlo") -> str:
    """The HLO of ``model``'s compiled ``run`` (GENERATIONS generations), traced for the GPU target (not
    compiled: the state it takes is computed eagerly)."""
    genes = engine.checked_population(model, population)
    packed = engine.decide_packing(model, genes)
    prog = executors.OneDevice().program(model, "xla", packed, genes.shape[0], None, GENERATIONS)
    assert prog.target == "gpu"
    state = prog.gen.start(prog.gen.stored(genes))
    args = (state, tf.constant(0), tf.constant(GENERATIONS), *executors.no_limits(prog.gen.sign))
    return prog._run.experimental_get_compiler_ir(*args)(stage=stage)


def compiled(build, fitness, selection, target: str = "gpu", mode: str = "xla"):
    model = build()
    model.compile(fitness=fitness, selection=selection, mode=mode, seed=3, target=target)
    return model


def check_loops(build, fitness, selection, population, bounded: int) -> None:
    """One generation of the GPU program: the generations loop and ``bounded`` documented loops, no host transfer."""
    hlo = gpu_hlo(compiled(build, fitness, selection), population)
    assert len(whiles(hlo)) == 1 + bounded, "\n".join(whiles(hlo))
    assert not HOST_TRANSFER.search(hlo)


def check_results(build, fitness, selection, population, exact: bool, reference: str = "xla") -> None:
    """The GPU program compiled with XLA and run here gives the CPU program's results. ``reference``: the
    CPU program's mode; "eager" saves an XLA compile where every step of the model is pinned to agree
    between modes (``test_evo_ops`` checks every op's XLA result against eager execution)."""
    gpu = compiled(build, fitness, selection).evolve(population, generations=GENERATIONS)
    cpu = compiled(build, fitness, selection, "cpu", reference).evolve(population, generations=GENERATIONS)
    for name in ("population", "fitness", "best"):
        x, y = np.asarray(getattr(gpu, name)), np.asarray(getattr(cpu, name))
        if exact:
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5, err_msg=name)


def int_distances(length: int) -> np.ndarray:
    """Integer distances: tour lengths are exact float sums in any order, so both targets agree bit for bit."""
    xy = np.random.default_rng(0).uniform(0, 100, (length, 2))
    return np.rint(np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1)))


def integer_sum(x):
    return tf.reduce_sum(tf.cast(x, tf.float32), axis=1)


# per kind of genome: (population, fitness)
KINDS = {
    "binary": lambda: (evo.population.random_integers((N, L), 0, 2, seed=1), evo.fitness.OneMax()),
    "integer": lambda: (evo.population.random_integers((N, L), 0, 10, seed=1),
                        evo.fitness.Function(integer_sum, maximize=True)),
    "float": lambda: (evo.population.uniform((N, L), -5.0, 5.0, seed=1), evo.fitness.Rastrigin()),
    "permutation": lambda: (evo.population.permutations(N, L, seed=1), evo.fitness.TSP(distances=int_distances(L))),
}
OPS = {name: cls for name, cls in evo.ops.registry().items() if cls.__module__.startswith("course_lib.")}


def chain(kind: str, packable: bool | None = None):
    """A model through every op of a kind of genome (binary also takes the integer ops' crossovers)."""
    def build():
        population, _ = KINDS[kind]()
        inputs = x = evo.Input(shape=(L,), dtype=tf.convert_to_tensor(population).dtype.name)
        for name, cls in sorted(OPS.items()):
            fits = cls.genes == kind or (kind == "integer" and cls.genes == "binary" and name != "BitFlipMutation")
            if fits and (packable is None or cls.packable == packable):
                x = cls.example(L)(x)
        return evo.Model(inputs, x)
    return build


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_compiles_for_the_gpu_target_without_loops_or_host_transfers(name):
    cls = OPS[name]
    population, fitness = KINDS[cls.genes]()

    def build():
        inputs = evo.Input(shape=(L,), dtype=tf.convert_to_tensor(population).dtype.name)
        return evo.Model(inputs, cls.example(L)(inputs))

    check_loops(build, fitness, evo.selection.Tournament(size=2), population, BOUNDED_LOOPS.get(name, 0))


@pytest.mark.parametrize("kind", ["binary", "integer", "float", pytest.param("permutation", marks=pytest.mark.slow)])
def test_every_op_gives_the_cpu_targets_results_on_the_gpu_target(kind):
    """Bit for bit for integer genes and fitness (OneMax, sums, tours with integer lengths), to rounding for floats."""
    population, fitness = KINDS[kind]()
    check_results(chain(kind), fitness, evo.selection.Tournament(size=2), population, kind != "float", "eager")


def binary_model():
    inputs = evo.Input(shape=(L,), dtype="int32")
    return evo.Model(inputs, evo.ops.UniformCrossover()(evo.ops.BitFlipMutation(rate=4 / L)(inputs)))


def float_model(length=6):
    inputs = evo.Input(shape=(length,), dtype="float32")
    return evo.Model(inputs, evo.ops.PolynomialMutation(-1.0, 2.0)(evo.ops.SimulatedBinaryCrossover(-1.0, 2.0)(inputs)))


def op_model(op):
    inputs = evo.Input(shape=(L,), dtype="int32")
    return evo.Model(inputs, op(inputs))


def weighted(x, columns):
    """Objectives as integer-weighted sums of 0/1 genes: exact in float32."""
    w = np.arange(1, L + 1, dtype=np.float32)
    return tf.stack([tf.linalg.matvec(tf.cast(x, tf.float32), tf.constant(np.roll(w, 7 * k))) for k in range(columns)],
                    1)


def floats(x):
    """Several float fitnesses in one (one compile covers them)."""
    return (evo.fitness.Sphere()(x) + evo.fitness.Ackley()(x) + evo.fitness.CosineSimilarity(np.linspace(-1, 1, 6))(x))


def classification():
    net = neuro.mlp(4, [3], 2, seed=0)
    x = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32)
    return neuro.Classification(net, x, (x[:, 0] > 0).astype(np.int64))


def neuro_model():
    genome = evo.Input(shape=(classification().layout.size,), dtype="float32")
    return evo.Model(genome, evo.ops.GaussianMutation(stddev=0.05)(evo.ops.UniformCrossover()(genome)))


def binary():
    return evo.population.random_integers((N, L), 0, 2, seed=5)


def uniform():
    return evo.population.uniform((N, 6), -1.0, 2.0, seed=5)


SELECTIONS = {
    "Tournament": lambda: evo.selection.Tournament(size=2),
    "Elitist": lambda: evo.selection.Elitist(),
    "Rank": lambda: evo.selection.Rank(pressure=1.7, elitism=1),
    "NSGA2": lambda: evo.selection.NSGA2(),
}
FITNESSES = {  # name: (fitness, model builder, population)
    "OneMax": lambda: (evo.fitness.OneMax(), binary_model, binary()),
    "Knapsack": lambda: (evo.fitness.Knapsack(weights=np.arange(1, L + 1), values=np.arange(L, 0, -1),
                                              capacity=L * 4), binary_model, binary()),
    "Function": lambda: (evo.fitness.Function(integer_sum, maximize=False), binary_model, binary()),
    "TSP": lambda: (evo.fitness.TSP(distances=int_distances(L)), lambda: op_model(evo.ops.TwoOpt(steps=2)),
                    evo.population.permutations(N, L, seed=5)),
    "Sphere": lambda: (evo.fitness.Sphere(), float_model, uniform()),
    "Rastrigin": lambda: (evo.fitness.Rastrigin(), float_model, uniform()),
    "Ackley": lambda: (evo.fitness.Ackley(), float_model, uniform()),
    "CosineSimilarity": lambda: (evo.fitness.CosineSimilarity(np.linspace(-1, 1, 6)), float_model, uniform()),
    "Objectives": lambda: (evo.fitness.Objectives(lambda x: (tf.reduce_sum(x, 1), tf.nn.relu(x[:, 0])), "min"),
                           float_model, uniform()),
    "Classification": lambda: (classification(), neuro_model,
                               neuro.initial_population(neuro.mlp(4, [3], 2, seed=0), N, seed=5)),
}


def test_every_selection_and_fitness_has_a_case():
    from course_lib.evo import fitness, selection

    def public(module, base, *bases):
        return {n for n, c in vars(module).items() if isinstance(c, type) and issubclass(c, base)
                and c not in (base, *bases) and c.__module__ == module.__name__}

    # NSGA3 needs several objectives: test_nsga3_keeps_only_its_bounded_front_loop_... covers it; Clearing
    # needs tours: test_clearing_compiles_for_the_gpu_target_... covers it
    assert public(selection, selection.Selection) <= set(SELECTIONS) | {"NSGA3", "Clearing"}
    # External holds values told from outside TensorFlow (ask/tell): no compiled evaluation to trace
    assert public(fitness, fitness.Fitness, fitness.MultiObjective) <= set(FITNESSES) | {"External"}


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_every_selection_compiles_for_the_gpu_target_without_loops_but_its_bounded_ones(name):
    check_loops(binary_model, evo.fitness.OneMax(), SELECTIONS[name](), binary(), BOUNDED_LOOPS.get(name, 0))


@pytest.mark.parametrize("objectives", [2, 3])
def test_nsga2_on_many_objectives_keeps_only_its_bounded_front_loop(objectives):
    fitness = evo.fitness.Objectives(lambda x: weighted(x, objectives), ("max",) * objectives, (-1.0,) * objectives)
    check_loops(binary_model, fitness, evo.selection.NSGA2(), binary(), 1)


@pytest.mark.slow
@pytest.mark.parametrize("objectives", [3, 5])
def test_nsga3_keeps_only_its_bounded_front_loop_and_gives_the_cpu_targets_result(objectives):
    """NSGA3 ranks fronts as NSGA2 does (the one bounded loop) and niches by one sort, with no loop;
    its integer objectives give the same selection on both targets."""
    def fitness():
        return evo.fitness.Objectives(lambda x: weighted(x, objectives), ("max",) * objectives,
                                      (-1.0,) * objectives, quality="igd",
                                      reference_front=np.eye(objectives, dtype=np.float32) * L * L)

    check_loops(binary_model, fitness(), evo.selection.NSGA3(), binary(), 1)
    check_results(binary_model, fitness(), evo.selection.NSGA3(), binary(), True)


@pytest.mark.parametrize("name", sorted(FITNESSES))
def test_every_fitness_compiles_for_the_gpu_target_without_loops_but_bounded_ones(name):
    fitness, build, population = FITNESSES[name]()
    # TSP's model has TwoOpt's rounds
    check_loops(build, fitness, evo.selection.Tournament(size=2), population, {"TSP": 1}.get(name, 0))


def test_clearing_compiles_for_the_gpu_target_with_its_one_pass_and_gives_the_cpu_targets_tours():
    population, fitness = KINDS["permutation"]()

    def build():
        inputs = evo.Input(shape=(L,), dtype="int32")
        return evo.Model(inputs, evo.ops.InversionMutation(rate=1.0)(evo.ops.OrderCrossover()(inputs)))

    # clearing visits the pool best first, each winner decided by the winners before it: one loop of P
    # steps over (P,) flags, documented in Clearing's docstring; nothing per city
    check_loops(build, fitness, evo.selection.Clearing(radius=4), population, 1)
    check_results(build, fitness, evo.selection.Clearing(radius=4), population, exact=True)


@pytest.mark.parametrize("case", ["Elitist, Knapsack"] + [pytest.param(case, marks=pytest.mark.slow) for case in (
    "Rank, float fitnesses", "NSGA2, 3 objectives", "Elitist, networks")])
def test_selections_and_fitnesses_give_the_cpu_targets_results_on_the_gpu_target(case):
    """With the ops' chains above, every selection and fitness runs on both targets; bit for bit where
    every number is an integer."""
    knapsack, _, _ = FITNESSES["Knapsack"]()
    cases = {
        "Elitist, Knapsack": (binary_model, knapsack, evo.selection.Elitist(), binary(), True),
        "Rank, float fitnesses": (float_model, evo.fitness.Function(floats, maximize=False),
                                  evo.selection.Rank(pressure=1.7, elitism=1), uniform(), False),
        "NSGA2, 3 objectives": (binary_model, evo.fitness.Objectives(lambda x: weighted(x, 3), ("max",) * 3,
                                                                     (-1.0,) * 3),
                                evo.selection.NSGA2(), binary(), True),
        "Elitist, networks": (neuro_model, *FITNESSES["Classification"]()[:1], evo.selection.Elitist(),
                              FITNESSES["Classification"]()[2], False),
    }
    build, fitness, selection, population, exact = cases[case]
    check_results(build, fitness, selection, population, exact)


def test_the_gpu_programs_remaining_loops_have_a_static_trip_count():
    """XLA (optimized HLO) knows the trip count of every loop a GPU-shaped generation keeps for a
    local search and Fisher-Yates: XLA:GPU runs those on the device, reading no condition back."""
    def build():
        inputs = evo.Input(shape=(L,), dtype="int32")
        return evo.Model(inputs, evo.ops.TwoOpt(steps=2)(evo.ops.ShuffleMutation(rate=0.5)(inputs)))

    model = compiled(build, evo.fitness.TSP(distances=int_distances(L)), evo.selection.Tournament(size=2))
    loops = whiles(gpu_hlo(model, evo.population.permutations(N, L, seed=1), stage="optimized_hlo"))
    assert len(loops) == 3, "\n".join(loops)
    assert sum("known_trip_count" in w for w in loops) == 2, "\n".join(loops)


@pytest.mark.slow
def test_rare_redraws_and_floyd_tails_give_the_same_picks_on_both_targets():
    """The GPU forms (every block's escape drawn and kept where it escaped; every Floyd step on every
    row) pick exactly the genes the CPU forms' loops do, at rates where both paths are taken."""
    rows, key = Rows.all(32), tf.constant([7, 11], tf.uint32)
    blocks, mask = BlockPicks(0.08), GeneMask(4 / 128, 128)
    assert blocks.escape > 0.01 and mask.sparse and len(mask.thresholds) > 4

    def picks(k):
        return blocks.words(k, rows, 64), mask.words(k, rows), mask.genes(k, rows)

    gpu = fusion.xla_function(fusion.targeting("gpu", picks))(key)
    cpu = fusion.xla_function(fusion.targeting("cpu", picks))(key)
    for g, c in zip(gpu, cpu):
        np.testing.assert_array_equal(g.numpy(), c.numpy())


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
    one_cpu = sharding.Replicated(tf.distribute.OneDeviceStrategy("/cpu:0"), sharding.policy("islands", 5, 1))
    assert one_cpu.target(model) == "cpu"  # a strategy's replicas' devices decide
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), mode="xla", target="gpu")
    assert "target='gpu'" in str(model.plan())


def test_memory_budget_reads_the_devices_memory_and_batches_a_gpu_run_that_does_not_fit():
    model = binary_model()
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(), mode="xla", target="gpu")
    per_row = L * engine.BYTES_PER_GENE_IN_FLIGHT
    asked = []

    def memory(target):  # a fake device: room for 100 rows at DEVICE_SHARE
        asked.append(target)
        return int(100 * per_row / engine.DEVICE_SHARE), "fake GPU"

    assert engine.batch_rows(model, None, None, 1000, "gpu", memory) == 100  # GPU target: batches by default
    assert engine.batch_rows(model, None, None, 50, "gpu", memory) is None  # fits: one batch
    assert engine.batch_rows(model, None, "device", 1000, "cpu", memory) == 100
    assert asked == ["gpu", "gpu", "cpu"]
    assert engine.batch_rows(model, None, None, 1000, "cpu", memory) is None  # CPU target: only when asked
    assert engine.batch_rows(model, None, 10 * per_row, 1000, "gpu", memory) == 10  # bytes given: those
    with pytest.raises(ValueError, match="number of bytes or 'device'"):
        engine.batch_rows(model, None, "host", 1000, "gpu", memory)
    free, source = engine.device_memory("gpu")
    assert free > 0 and source == ("GPU:0 memory" if tf.config.list_logical_devices("GPU") else
                                   "host memory (no GPU here)")
    result = model.evolve(binary(), generations=2, memory_budget="device")
    assert result.population.shape == (N, L)
