"""The run's state as a checkpoint (evo/state.py): fields by name, a nested field part by part, each checked
on resume; a checkpoint of the engine's older format loads where nothing changed, and is refused, saying what to
do, where the selection's state did."""

import numpy as np
import pytest
import tensorflow as tf

from course_lib import evo
from course_lib.evo import nsga3
from course_lib.evo import state as state_lib
from course_lib.evo.state import State


def like(length=4, selection=()):
    genes = tf.zeros((6, length), tf.int32)
    return State(genes, tf.zeros(6), genes[0], tf.constant(1.5), tf.constant(2), selection)


def normalization(m=3):
    return tf.nest.map_structure(tf.constant, nsga3.initial_state(m))


def saved_from(state):
    return state_lib.checkpoint(state_lib.arrays(state), 3, {"best": [1.0, 2.0, 3.0]}, ["best"], "graph", "id")


def test_every_field_is_saved_by_its_checkpoint_name_and_read_back_with_its_dtype():
    selection = {"counts": tf.constant([1, 2], tf.int32), "normalization": normalization(2)}
    state = like(selection=selection)
    saved = saved_from(state)
    assert {"population", "fitness", "best", "best_fitness", "stale", "selection_state.counts",
            "selection_state.normalization.ideal", "selection_state.normalization.worst",
            "selection_state.normalization.extremes", "generation", "history", "mode", "signature"} == set(saved)
    back = state_lib.read(saved, state, State._fields)
    tf.nest.assert_same_structure(back["selection"], selection)
    assert isinstance(back["selection"]["normalization"], nsga3.Normalization)
    for field in State._fields:
        for got, want in zip(tf.nest.flatten(back[field]), tf.nest.flatten(getattr(state, field))):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert state_lib.resumed(saved, ["best"]) == (3, {"best": [1.0, 2.0, 3.0]})


def test_a_selection_that_carries_nothing_writes_nothing_and_loads_an_old_checkpoint():
    saved = saved_from(like())
    assert not [name for name in saved if name.startswith("selection_state")]
    assert state_lib.read(saved, like())["selection"] == ()
    saved["selection_state"] = np.zeros((0,), np.float32)  # what the engine wrote before the state had names
    assert state_lib.read(saved, like())["selection"] == ()


def test_an_old_packed_selection_state_is_refused_saying_what_to_do():
    saved = saved_from(like(selection=normalization()))
    for part in nsga3.Normalization._fields:
        del saved[f"selection_state.{part}"]
    saved["selection_state"] = np.zeros((5, 3), np.float32)  # ideal, worst and extreme points as rows of one block
    with pytest.raises(ValueError, match=r"holds selection_state as one array.*by name \(selection_state.ideal, "
                                         r"selection_state.worst, selection_state.extremes\): start the run again"):
        state_lib.read(saved, like(selection=normalization()))


def test_a_field_of_another_shape_or_dtype_is_refused_naming_it():
    saved = saved_from(like())
    with pytest.raises(ValueError, match=r"checkpoint's best is int32\[4\], this run's int32\[5\]"):
        state_lib.read(saved, like(length=5))
    saved["stale"] = np.float64(2)
    with pytest.raises(ValueError, match=r"checkpoint's stale is float64\[\], this run's int32\[\]"):
        state_lib.read(saved, like())


def test_a_missing_part_or_one_of_another_shape_is_refused_naming_it():
    saved = saved_from(like(selection=normalization()))
    del saved["selection_state.worst"]
    with pytest.raises(ValueError, match="holds no selection_state.worst"):
        state_lib.read(saved, like(selection=normalization()))
    with pytest.raises(ValueError, match=r"checkpoint's selection_state.ideal is float32\[3\], this run's "
                                         r"float32\[4\]"):
        state_lib.read(saved_from(like(selection=normalization())), like(selection=normalization(4)))


def test_replicas_are_stacked_by_name_and_each_read_back():
    replicas = [like(selection=normalization())._replace(stale=tf.constant(r), best=tf.fill((4,), r))
                for r in range(3)]
    stacked = tf.nest.map_structure(lambda *v: np.stack([t.numpy() for t in v]), *replicas)
    saved = state_lib.per_replica(stacked)
    assert set(saved) == {"replica_best", "replica_best_fitness", "replica_stale", "replica_selection_state.ideal",
                          "replica_selection_state.worst", "replica_selection_state.extremes"}
    assert saved["replica_selection_state.extremes"].shape == (3, 3, 3)
    for r in range(3):
        back = state_lib.read(saved, like(selection=normalization()), replica=r)
        assert int(back["stale"]) == r and back["best"].numpy().tolist() == [r] * 4
        assert isinstance(back["selection"], nsga3.Normalization)
    with pytest.raises(ValueError, match="holds no replica 3"):
        state_lib.read(saved, like(), replica=3)
    assert set(state_lib.per_replica(tf.nest.map_structure(lambda t: t.numpy()[None], like()))) == {
        "replica_best", "replica_best_fitness", "replica_stale"}


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


def test_evolve_resumes_an_old_checkpoint_of_a_selection_that_carries_nothing(tmp_path):
    """Before the selection's state was saved by name, every checkpoint held ``selection_state``, empty for a
    selection that carries nothing: such a checkpoint still resumes, to the uninterrupted run."""
    x = evo.Input(shape=(24,), dtype="int32")
    model = evo.Model(x, evo.ops.BitFlipMutation(rate=1 / 24)(evo.ops.UniformCrossover()(x)))
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2, elitism=1), mode="graph",
                  seed=5)
    start = evo.population.random_integers((16, 24), 0, 2, seed=1)
    path = tmp_path / "run.npz"
    model.evolve(start, generations=3, callbacks=[evo.callbacks.Checkpoint(path, every=3)])
    np.savez(path, **dict(np.load(path)), selection_state=np.zeros((0,), np.float32))  # the old format
    resumed, whole = model.evolve(generations=6, resume_from=path), model.evolve(start, generations=6)
    np.testing.assert_array_equal(resumed.population, whole.population)
    assert resumed.history == whole.history
