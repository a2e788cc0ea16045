"""course_lib.evo: a genetic-algorithm engine in the shape of the Keras functional API,
compiled with XLA as a whole (many generations per call).

    from course_lib import evo
    inputs = evo.Input(shape=(1024,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=1 / 1024)(inputs)
    x = evo.ops.UniformCrossover()(x)
    model = evo.Model(inputs, x)
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2),
                  mode="xla", seed=0)
    result = model.evolve(evo.population.random_integers((4096, 1024), 0, 2, seed=0), generations=200)
"""

from course_lib.evo import callbacks, fitness, neuro, nsga3, ops, pareto, population, selection
from course_lib.evo.model import Model
from course_lib.evo.result import Result
from course_lib.evo.symbolic import Input

__all__ = ["Input", "Model", "Result", "ops", "fitness", "selection", "population", "callbacks", "neuro", "pareto",
           "nsga3"]
