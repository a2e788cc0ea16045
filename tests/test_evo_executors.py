"""course_lib.evo.executors: the engine's executors and their programs implement the documented protocols."""

import tensorflow as tf

from course_lib import evo
from course_lib.evo import executors, sharding


def model():
    inputs = evo.Input(shape=(16,), dtype="int32")
    m = evo.Model(inputs, evo.ops.BitFlipMutation(rate=1 / 16)(inputs))
    m.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph", seed=0)
    return m


def test_one_device_and_its_program_follow_the_protocols():
    one = executors.OneDevice()
    assert isinstance(one, executors.Executor) and one.replicas == 1
    program = one.program(model(), "graph", False, 8, None, 4)
    assert isinstance(program, executors.Program)
    state = program.start(evo.population.random_integers((8, 16), 0, 2, seed=0))
    state, rows, stopped = program.run(state, 0, 3, *executors.no_limits(1.0))
    assert rows.shape == (3, len(executors.STATS)) and not stopped
    # Tournament carries no state: nothing of the selection's is saved
    assert set(program.arrays(state)) == {"population", "fitness", "best", "best_fitness", "stale"}


def test_replicated_and_its_program_follow_the_protocols():
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    replicated = sharding.Replicated(strategy, sharding.policy("global", 10, 1))
    assert isinstance(replicated, executors.Executor) and replicated.replicas == 1
    assert isinstance(replicated.program(model(), "graph", False, 8, None, 4), executors.Program)
