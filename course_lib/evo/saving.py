"""Models saved and loaded: the graph and every part's config in one ``.npz`` file.

``model.save(path)`` (or ``evo.save_model(model, path)``) writes the Input, each op (its registered
class name and ``get_config``), the nodes in the order the model runs them (so each op draws the same
random numbers), the outputs and, once compiled, the fitness and selection (class and ``get_config``)
with mode, seed, packing, generator and target (metrics, being Python functions, are not saved: a model
compiled with them is refused). Array values (a TSP's distances, a knapsack's weights) are stored as
arrays beside the JSON description. ``evo.load_model(path)`` rebuilds the model and compiles it as it
was, so it evolves bit-identically: this module reads the file back (``read_model``) and
``evo.model.load_model`` builds the Model of it, so the model imports its saving, not the reverse.

Ops are found by name in the op registry (``evo.ops.registry()``): a custom op loads when its
class has been defined or imported before ``load_model``, in a module or in a notebook or script
(``__main__``: define the class again in the process that loads). An op whose class is not the one
registered under its name (a ``__main__`` class named as an imported op) is refused when saving.
Fitness and selection classes are found by module and name, so a custom one loads when its module
is importable (``__main__`` included: define it again before loading). A fitness that
holds a Python function (``evo.fitness.Function``) cannot be saved: subclass ``Fitness``.
"""

from __future__ import annotations

import importlib
import json
import os
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from course_lib.evo import ops as ops_lib
from course_lib.evo.callbacks import save_checkpoint
from course_lib.evo.symbolic import Input, SymbolicTensor

FORMAT = "course_lib.evo model"
VERSION = 1


@dataclass
class SavedModel:
    """What a saved model holds: its Input and outputs, rebuilt from the stored ops, its name, and the
    ``compile`` settings it had (None when it was saved uncompiled)."""

    input: SymbolicTensor
    outputs: list[SymbolicTensor]
    name: str
    compile: dict | None


def save_model(model, path) -> None:
    """Write ``model`` (and its compile settings, if compiled) to ``path`` (an .npz file)."""
    arrays: dict[str, np.ndarray] = {}
    parts: list = []
    index: dict[int, int] = {}
    registry = ops_lib.registry()
    for node in model.nodes:
        if id(node.op) not in index:
            cls = type(node.op)
            if registry.get(cls.__name__) is not cls:
                held = registry.get(cls.__name__)
                why = "it is not registered" if held is None else \
                    f"the op registered under that name is {held.__module__}.{held.__qualname__}"
                raise ValueError(f"the op {node.op.name!r} of class {cls.__module__}.{cls.__qualname__} cannot be "
                                 f"saved by name: {why}, so load_model would not find it; give the class a name "
                                 "of its own (not starting with _) and register it (a subclass of evo.ops.Op)")
            index[id(node.op)] = len(parts)
            parts.append(node.op)
    tensors = {id(model.input): 0} | {id(node.output): i + 1 for i, node in enumerate(model.nodes)}
    spec = model.input.spec
    description = {
        "format": FORMAT, "version": VERSION, "name": model.name,
        "input": {"shape": list(spec.shape), "dtype": spec.dtype.name, "name": model.input.name},
        "ops": [{"class": type(op).__name__, "name": op.name, "config": _encode(op.get_config(), arrays, op)}
                for op in parts],
        "nodes": [{"op": index[id(node.op)], "inputs": [tensors[id(t)] for t in node.inputs]} for node in model.nodes],
        "outputs": [tensors[id(o)] for o in model.outputs],
        "compile": None,
    }
    if model.fitness is not None:
        if model.metrics:
            raise TypeError(f"the model's metrics ({', '.join(model.metrics)}) are Python functions and cannot be "
                            "saved: save it compiled without metrics, and pass metrics= to compile after loading")
        description["compile"] = {
            "fitness": _part(model.fitness, arrays), "selection": _part(model.selection, arrays),
            "mode": model.mode, "seed": model.seed, "pack": model.pack, "generator": model.generator,
            "target": model.target}
    save_checkpoint(os.fspath(path), {"evo_model": np.str_(json.dumps(description)), **arrays})


def read_model(path) -> SavedModel:
    """What ``save_model`` wrote to ``path``: the ops rebuilt and called on a new Input, and the compile
    settings with their fitness and selection rebuilt (``evo.load_model`` makes the Model of it)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no saved model at {path!r}; write one with evo.save_model(model, path)")
    try:
        with np.load(path, allow_pickle=False) as data:
            stored = {k: data[k] for k in data.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f"{path!r} is not a model saved by evo.save_model: not an .npz file, or one that is "
                         f"truncated or damaged ({type(exc).__name__}: {exc}); save the model again") from exc
    if "evo_model" not in stored:
        raise ValueError(f"{path!r} is an .npz file but not a model saved by evo.save_model (it holds "
                         f"{sorted(stored)[:5]}); an evolve checkpoint is resumed with evolve(resume_from=...)")
    try:
        description = json.loads(str(stored["evo_model"]))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path!r}: its model description is not valid JSON ({exc}); the file is damaged or was "
                         "not written by evo.save_model") from exc
    if not isinstance(description, dict):
        raise ValueError(f"{path!r}: its model description is a JSON {type(description).__name__}, not the object "
                         "evo.save_model writes; the file is damaged or was not written by it")
    if description.get("format") != FORMAT or description.get("version") != VERSION:
        raise ValueError(f"{path!r} holds format {description.get('format')!r} version "
                         f"{description.get('version')!r}; this engine reads {FORMAT!r} version {VERSION}")
    missing = [k for k in ("name", "input", "ops", "nodes", "outputs", "compile") if k not in description]
    if missing:
        raise ValueError(f"{path!r}: its model description lacks {', '.join(missing)}; the file is damaged")
    registry = ops_lib.registry()
    ops = []
    for entry in description["ops"]:
        cls = registry.get(entry["class"])
        if cls is None:
            raise ValueError(f"{path!r} uses the op {entry['class']!r}, which is not registered; define or import "
                             "its class (a subclass of evo.ops.Op) before load_model")
        ops.append(cls.from_config({**_decode(entry["config"], stored), "name": entry["name"]}))
    spec = description["input"]
    tensors = [Input(tuple(spec["shape"]), spec["dtype"], name=spec["name"])]
    for node in description["nodes"]:
        tensors.append(ops[node["op"]](*[tensors[i] for i in node["inputs"]]))
    settings = description["compile"]
    if settings is not None:
        settings = {**settings, "fitness": _built(settings["fitness"], stored),
                    "selection": _built(settings["selection"], stored)}
    return SavedModel(tensors[0], [tensors[i] for i in description["outputs"]], description["name"], settings)


def _part(part, arrays: dict) -> dict:
    cls = type(part)
    return {"module": cls.__module__, "class": cls.__qualname__, "config": _encode(part.get_config(), arrays, part)}


def _built(entry: dict, stored: dict):
    try:
        cls = getattr(importlib.import_module(entry["module"]), entry["class"])
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"the saved model's {entry['class']!r} (module {entry['module']!r}) cannot be found: "
                         "import or define it where load_model can import it") from exc
    return cls.from_config(_decode(entry["config"], stored))


def _encode(value, arrays: dict, owner):
    """JSON for ``value``: arrays (and tensors) go to ``arrays`` by reference, tuples stay tuples."""
    if isinstance(value, dict):
        return {k: _encode(v, arrays, owner) for k, v in value.items()}
    if isinstance(value, (tf.Tensor, tf.Variable)):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        name = f"array_{len(arrays)}"
        arrays[name] = value
        return {"__array__": name}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, arrays, owner) for v in value]}
    if isinstance(value, list):
        return [_encode(v, arrays, owner) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{type(owner).__name__} cannot be saved: its config holds {type(value).__name__} "
                    f"{value!r}, which is not data (a Python function or object); subclass "
                    "evo.fitness.Fitness (or evo.ops.Op) in an importable module with data-only arguments")


def _decode(value, stored: dict):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return stored[value["__array__"]]
        if set(value) == {"__tuple__"}:
            return tuple(_decode(v, stored) for v in value["__tuple__"])
        return {k: _decode(v, stored) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, stored) for v in value]
    return value
