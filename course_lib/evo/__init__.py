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

``evo.neuro`` (networks as genomes) uses Keras, so it is imported when first asked for: the engine
itself imports TensorFlow and NumPy only, and adds no Keras module to those ``import tensorflow``
loads (which, with Keras installed, include Keras itself: TensorFlow imports it).
"""

import importlib

from course_lib.evo import callbacks, fitness, inspect, nsga3, ops, pareto, population, saving, selection
from course_lib.evo.ask_tell import AskTell
from course_lib.evo.model import Model, load_model
from course_lib.evo.result import Result
from course_lib.evo.saving import save_model
from course_lib.evo.symbolic import Input

__all__ = ["Input", "Model", "Result", "AskTell", "load_model", "save_model", "ops", "fitness", "selection",
           "population", "callbacks", "saving", "neuro", "nsga3", "pareto", "inspect"]

# what code outside the engine may import besides ``__all__``: the modules an extension is written with
# (docs/engine.md, "The public surface"); tests/test_evo_surface.py holds every module of course_lib to them
EXTENSION_MODULES = ("rng", "fastmath", "fusion", "knobs", "sharding", "ops.base", "ops.permutation")


def __getattr__(name):
    if name == "neuro":  # PEP 562: imported only by a program that uses neuroevolution
        return importlib.import_module(f"{__name__}.neuro")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
