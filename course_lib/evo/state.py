"""The run's state, and that state as a checkpoint.

``State`` is what one generation hands to the next on one device (or one replica). A checkpoint
holds its fields by name, as NumPy arrays for ``np.savez``, with the generation, the history, the
mode and the identity of the run that wrote it; a field that is a structure (the selection's state,
``Selection.initial_state``) is held part by part, ``<name>.<part>`` (``selection_state.ideal``), and
one that holds nothing writes nothing. ``arrays`` writes the fields; ``read`` reads them back with a
shape and dtype check per array; a replicated run also stacks each replica's fields under
``replica_<name>``. ``evolve`` on one device, the replicated run and ask/tell all save, check
and resume through this module, so a field added to ``State`` is saved and restored by one edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf


class State(NamedTuple):
    """What one generation hands to the next on one device (or one replica): a tf.nest structure."""

    population: tf.Tensor  # the genes as stored (uint32 words when bit-packed)
    fitness: tf.Tensor  # float32 (rows,), or (rows, M + 1) for a MultiObjective fitness
    best: tf.Tensor  # the best genome so far, stored form
    best_fitness: tf.Tensor  # float32 scalar
    stale: tf.Tensor  # int32: generations since best_fitness last improved
    selection: Any  # a tf.nest structure: what the selection carries to the next generation (``initial_state``)


# a field's name in a checkpoint (the selection's state was saved as "selection_state" before State
# named it; the name stays)
SAVED_AS = {**{field: field for field in State._fields}, "selection": "selection_state"}
# the fields a resumed run reads: the population is the checkpoint's genes, scored again on resume
CARRIED = ("best", "best_fitness", "stale", "selection")
REPLICA = "replica_"


def named(value, name: str) -> list[tuple[str, Any]]:
    """(checkpoint name, array) of each leaf of the tf.nest structure ``value``, in ``tf.nest.flatten``'s
    order: a single array is ``name``; a NamedTuple's or dict's parts are ``name.<part>``, a tuple's
    ``name.<index>``; an empty structure has none."""
    if isinstance(value, dict):
        parts: Any = sorted(value.items())  # tf.nest's order
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        parts = zip(value._fields, value)
    elif isinstance(value, (tuple, list)):
        parts = enumerate(value)
    else:
        return [(name, value)]
    return [leaf for part, v in parts for leaf in named(v, f"{name}.{part}")]


def arrays(state: State) -> dict[str, np.ndarray]:
    """The state's fields as NumPy arrays by their checkpoint names; population and best as the model's
    Input holds genes (unpacked), which is what a checkpoint and a ``Result`` hold."""
    return {name: np.asarray(leaf) for field, value in zip(State._fields, state)
            for name, leaf in named(value, SAVED_AS[field])}


def per_replica(stacked: State) -> dict[str, np.ndarray]:
    """Every replica's carried fields, stacked along a first axis, by ``replica_<name>``."""
    return {name: np.asarray(leaf) for field in CARRIED
            for name, leaf in named(getattr(stacked, field), REPLICA + SAVED_AS[field])}


def read(saved: dict, like: State, fields: tuple[str, ...] = CARRIED, replica: int | None = None) -> dict:
    """``fields`` of a checkpoint's arrays ``saved`` (replica ``replica``'s, where given) as tensors in the
    structures, shapes and dtypes of ``like``'s fields (tensors or ``tf.TensorSpec``s, genes unpacked).

    An array the checkpoint lacks, or one of another shape or dtype, is a clear error; so is a structure
    the checkpoint holds as one array (an older engine saved the selection's state so). A field that holds
    nothing (a selection that carries no state) reads nothing.
    """
    out = {}
    for field in fields:
        want = getattr(like, field)
        prefix = SAVED_AS[field] if replica is None else REPLICA + SAVED_AS[field]
        leaves = named(want, prefix)
        missing = [name for name, _ in leaves if name not in saved]
        if missing and prefix in saved:
            raise ValueError(f"this checkpoint holds {prefix} as one array, as an older version of the engine "
                             f"saved it; this run reads it by name ({', '.join(name for name, _ in leaves)}): start "
                             "the run again instead of resuming it")
        if missing:
            raise ValueError(f"this checkpoint holds no {missing[0]} (an older version of the engine wrote it); "
                             "start the run again instead of resuming it")
        out[field] = tf.nest.pack_sequence_as(want, [_leaf(saved, name, spec, replica) for name, spec in leaves])
    return out


def _leaf(saved: dict, name: str, want, replica: int | None) -> tf.Tensor:
    """The checkpoint's array ``name`` (replica ``replica``'s) as a tensor, checked against ``want``'s
    shape and dtype."""
    shape, dtype = tuple(want.shape), tf.as_dtype(want.dtype)
    value = np.asarray(saved[name])
    if replica is not None:
        if value.ndim == 0 or value.shape[0] <= replica:
            raise ValueError(f"the checkpoint's {name} holds no replica {replica}; resume with the executor "
                             "that wrote it")
        value = value[replica]
    if value.shape != shape or value.dtype != dtype.as_numpy_dtype:
        raise ValueError(f"the checkpoint's {name} is {value.dtype}{list(value.shape)}, this run's "
                         f"{dtype.name}{list(shape)}; resume with the model and population that wrote it")
    return tf.constant(value)


def check_identity(saved: dict, mine: str) -> None:
    """A clear error unless ``saved`` was written by this run (``Model.signature``: the model's ops and
    parameters, fitness, selection, seed, population size and executor)."""
    theirs = str(saved.get("signature", ""))
    if theirs != mine:
        raise ValueError("the checkpoint was written by a different model or run (ops and their parameters, "
                         "fitness, selection, seed, population size or executor differ):\n"
                         f"{theirs}\nthis model:\n{mine}")


def checkpoint(fields: dict, generation: int, history: dict, keys: Sequence[str], mode: str, signature: str) -> dict:
    """A checkpoint's contents: the state's ``fields`` (``arrays``), the generation reached, the history's
    columns ``keys`` as rows, the mode and the run's identity."""
    return {**fields, "generation": np.int64(generation),
            "history": np.array([history[k] for k in keys], np.float64).reshape(len(keys), -1),
            "mode": np.str_(mode), "signature": np.str_(signature)}


def resumed(saved: dict, keys: Sequence[str]) -> tuple[int, dict]:
    """(the generation, the history by column) a checkpoint holds."""
    return int(saved["generation"]), {k: saved["history"][i].tolist() for i, k in enumerate(keys)}
