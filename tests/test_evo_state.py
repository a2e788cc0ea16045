"""The run's state as a checkpoint (evo/state.py): fields by name, each checked on resume."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import state as state_lib
from course_lib.evo.state import State


def like(length=4, selection=(0,)):
    genes = tf.zeros((6, length), tf.int32)
    return State(genes, tf.zeros(6), genes[0], tf.constant(1.5), tf.constant(2), tf.zeros(selection))


def saved_from(state):
    return state_lib.checkpoint(state_lib.arrays(state), 3, {"best": [1.0, 2.0, 3.0]}, ["best"], "graph", "id")


def test_every_field_is_saved_by_its_checkpoint_name_and_read_back_with_its_dtype():
    state = like(selection=(2, 3))._replace(selection=tf.reshape(tf.range(6.0), (2, 3)))
    saved = saved_from(state)
    assert {"population", "fitness", "best", "best_fitness", "stale", "selection_state", "generation",
            "history", "mode", "signature"} == set(saved)
    back = state_lib.read(saved, state, State._fields)
    for field in State._fields:
        assert back[field].dtype == getattr(state, field).dtype
        np.testing.assert_array_equal(back[field].numpy(), getattr(state, field).numpy())
    assert state_lib.resumed(saved, ["best"]) == (3, {"best": [1.0, 2.0, 3.0]})


def test_a_field_of_another_shape_or_dtype_is_refused_naming_it():
    saved = saved_from(like())
    with pytest.raises(ValueError, match=r"checkpoint's best is int32\[4\], this run's int32\[5\]"):
        state_lib.read(saved, like(length=5))
    saved["stale"] = np.float64(2)
    with pytest.raises(ValueError, match=r"checkpoint's stale is float64\[\], this run's int32\[\]"):
        state_lib.read(saved, like())


def test_a_missing_field_is_empty_only_where_the_run_carries_nothing_in_it():
    saved = saved_from(like())
    del saved["selection_state"]
    assert state_lib.read(saved, like())["selection"].shape == (0,)
    with pytest.raises(ValueError, match="holds no selection state"):
        state_lib.read(saved, like(selection=(2, 3)))


def test_replicas_are_stacked_by_name_and_each_read_back():
    replicas = [like()._replace(stale=tf.constant(r), best=tf.fill((4,), r)) for r in range(3)]
    stacked = State(*(np.stack([getattr(s, f).numpy() for s in replicas]) for f in State._fields))
    saved = state_lib.per_replica(stacked)
    assert set(saved) == {"replica_best", "replica_best_fitness", "replica_stale", "replica_selection_state"}
    for r in range(3):
        back = state_lib.read(saved, like(), replica=r)
        assert int(back["stale"]) == r and back["best"].numpy().tolist() == [r] * 4
    with pytest.raises(ValueError, match="holds no replica 3"):
        state_lib.read(saved, like(), replica=3)


def test_another_runs_checkpoint_is_refused():
    with pytest.raises(ValueError, match="different model or run(.|\n)*mine"):
        state_lib.check_identity({"signature": np.str_("theirs")}, "mine")


@pytest.mark.parametrize("pack", [False, "auto"])
def test_evolve_refuses_a_checkpoint_whose_best_has_another_shape(tmp_path, pack):
    x = evo.Input(shape=(24,), dtype="int32")
    model = evo.Model(x, evo.ops.BitFlipMutation(rate=1 / 24)(x))
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph", seed=5,
                  pack=pack)
    path = tmp_path / "run.npz"
    model.evolve(evo.population.random_integers((16, 24), 0, 2, seed=1), generations=2,
                 callbacks=[evo.callbacks.Checkpoint(path, every=2)])
    saved = dict(np.load(path))
    saved["best"] = saved["best"][:20]
    np.savez(path, **saved)
    with pytest.raises(ValueError, match=r"checkpoint's best is int32\[20\], this run's int32\[24\]"):
        model.evolve(generations=4, resume_from=path)
