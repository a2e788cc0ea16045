"""course_lib.evo as a library: an edit to a compiled model's parts takes effect on the next run or is
refused (never ignored), custom ops defined in ``__main__`` save and load, every bad file and input is a
clear error, a budget smaller than a generation says it stopped, and the engine imports no Keras module of
its own. Small populations, graph mode."""

import json
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from course_lib import evo
from course_lib.evo import rng


def onemax(selection, outputs=1, length=16):
    inputs = evo.Input(shape=(length,), dtype="int32")
    x = evo.ops.BitFlipMutation(rate=0.1)(inputs)
    children = [evo.ops.UniformCrossover()(x) for _ in range(outputs)]
    model = evo.Model(inputs, children)
    model.compile(fitness=evo.fitness.OneMax(), selection=selection, mode="graph", seed=0)
    return model


def rastrigin(fitness):
    inputs = evo.Input(shape=(4,), dtype="float32")
    model = evo.Model(inputs, evo.ops.GaussianMutation(stddev=0.5)(inputs))
    model.compile(fitness=fitness, selection=evo.selection.Tournament(size=2), mode="graph", seed=0)
    return model


def bits(n=8, length=16):
    return evo.population.random_integers((n, length), 0, 2, seed=1)


# -- the edit rule: an edit takes effect on the next run, or is refused ----------------------------------------


def test_tournament_size_edited_after_compile_takes_effect():
    sel = evo.selection.Tournament(size=2)
    model = onemax(sel)
    first = model.evolve(bits(), 8)
    sel.size = 6
    edited = model.evolve(bits(), 8)
    fresh = onemax(evo.selection.Tournament(size=6)).evolve(bits(), 8)
    np.testing.assert_array_equal(edited.population, fresh.population)
    assert not np.array_equal(edited.population, first.population)


def test_elitism_edited_after_compile_takes_effect():
    sel = evo.selection.Tournament(size=6)
    model = onemax(sel)
    model.evolve(bits(), 4)
    sel.elitism = 2
    edited = model.evolve(bits(), 8)
    fresh = onemax(evo.selection.Tournament(size=6, elitism=2)).evolve(bits(), 8)
    np.testing.assert_array_equal(edited.population, fresh.population)
    assert model.selection.pool == "both"


def test_selection_edits_are_checked_and_errors_name_the_cause():
    sel = evo.selection.Tournament(size=2)
    with pytest.raises(ValueError, match="Tournament size must be a whole number >= 1"):
        sel.size = 0
    with pytest.raises(TypeError, match="elitism must be a whole number"):
        sel.elitism = 1.5
    sel.size, sel.elitism = 9, 2  # 9 > the 8 children elitism draws the other slots from
    with pytest.raises(ValueError, match="elitism=2"):
        onemax(sel).evolve(bits(), 2)


def test_fitness_parameter_edited_after_compile_takes_effect():
    ras = evo.fitness.Rastrigin()
    model = rastrigin(ras)
    pop = np.random.default_rng(0).uniform(-3, 3, (8, 4)).astype(np.float32)
    model.evolve(pop, 5)
    ras.a = 1.0
    edited = model.evolve(pop, 5)
    fresh = rastrigin(evo.fitness.Rastrigin(a=1.0)).evolve(pop, 5)
    np.testing.assert_array_equal(edited.population, fresh.population)
    assert edited.best_fitness == pytest.approx(float(evo.fitness.Rastrigin(a=1.0)(edited.best[None])[0]), rel=1e-5)


def test_op_parameter_edited_to_a_value_its_genomes_cannot_hold_is_refused():
    inputs = evo.Input(shape=(8,), dtype="int8")
    mutation = evo.ops.RandomValueMutation(rate=0.5, low=0, high=10)
    model = evo.Model(inputs, mutation(inputs))
    model.compile(fitness=evo.fitness.Sphere(), selection=evo.selection.Tournament(size=2), mode="graph", seed=0)
    pop = np.zeros((8, 8), np.int8)
    model.evolve(pop, 2)
    mutation.high = 1000  # int8 holds up to 127: the run would wrap its draws
    with pytest.raises(ValueError, match="do not fit dtype int8"):
        model.evolve(pop, 2)
    mutation.high = -3
    with pytest.raises(ValueError, match="low < high"):
        model.evolve(pop, 2)
    mutation.high = 5  # a valid edit takes effect
    assert model.evolve(pop, 3).population.max() <= 4


def test_selection_edited_during_ask_tell_takes_effect_on_the_next_tell():
    def search(sel):
        inputs = evo.Input(shape=(16,), dtype="int32")
        model = evo.Model(inputs, evo.ops.BitFlipMutation(rate=0.1)(inputs))
        model.compile(fitness=evo.fitness.External(maximize=True), selection=sel, mode="graph", seed=0)
        return model.ask_tell(bits())

    sel = evo.selection.Tournament(size=2)
    edited, unedited = search(sel), search(evo.selection.Tournament(size=2))
    for _ in range(2):  # the first population, then a generation selected by a tournament of 2
        for s in (edited, unedited):
            s.tell(s.ask().sum(1))
    np.testing.assert_array_equal(edited.population, unedited.population)
    sel.size = 8
    for _ in range(3):
        for s in (edited, unedited):
            s.tell(s.ask().sum(1))
    assert not np.array_equal(edited.population, unedited.population)


# -- custom ops defined in __main__ (a notebook or a script) ----------------------------------------------------


MAIN_OP = """
import sys
import numpy as np
from course_lib import evo


class Complement(evo.ops.Op):
    genes = "binary"

    def __init__(self, every: int = 1, name=None):
        super().__init__(name)
        self.every = every

    def apply(self, inputs, key, rows):
        return 1 - rows.take(inputs[0])
"""


def run_script(tmp_path, name, body):
    script = tmp_path / name
    script.write_text(textwrap.dedent(MAIN_OP) + textwrap.dedent(body))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_custom_op_defined_in_main_saves_and_loads_in_the_same_and_a_fresh_process(tmp_path):
    run_script(tmp_path, "save.py", """
        inputs = evo.Input(shape=(16,), dtype="int32")
        x = evo.ops.BitFlipMutation(rate=0.1)(Complement(every=3)(inputs))
        model = evo.Model(inputs, x)
        model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph", seed=0)
        pop = evo.population.random_integers((8, 16), 0, 2, seed=1)
        model.save("model.npz")
        loaded = evo.load_model("model.npz")
        assert type(loaded.nodes[0].op) is Complement and loaded.nodes[0].op.every == 3
        first = model.evolve(pop, 5).population
        np.testing.assert_array_equal(loaded.evolve(pop, 5).population, first)
        np.save("first.npy", first)
        """)
    run_script(tmp_path, "load.py", """
        loaded = evo.load_model("model.npz")
        assert type(loaded.nodes[0].op) is Complement
        pop = evo.population.random_integers((8, 16), 0, 2, seed=1)
        np.testing.assert_array_equal(loaded.evolve(pop, 5).population, np.load("first.npy"))
        """)


def test_a_main_op_with_a_taken_name_is_refused_on_save_not_saved_as_another(tmp_path):
    out = run_script(tmp_path, "clash.py", """
        class BitFlipMutation(Complement):
            pass

        inputs = evo.Input(shape=(16,), dtype="int32")
        model = evo.Model(inputs, BitFlipMutation()(inputs))
        try:
            model.save("model.npz")
        except ValueError as exc:
            print("refused:", exc)
        """)
    assert "refused:" in out and "BitFlipMutation" in out


# -- bad files ------------------------------------------------------------------------------------------


def saved(tmp_path):
    path = tmp_path / "model.npz"
    onemax(evo.selection.Tournament(size=2)).save(path)
    return path


def test_truncated_model_file_is_a_value_error_naming_it(tmp_path):
    path = saved(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"model\.npz.*(truncated|incomplete|damaged)"):
        evo.load_model(path)


def test_model_file_whose_description_is_not_json_is_a_value_error_naming_it(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, evo_model=np.str_("not json {"))
    with pytest.raises(ValueError, match=r"bad\.npz.*not valid JSON"):
        evo.load_model(path)
    np.savez(path, evo_model=np.str_(json.dumps([1, 2])))
    with pytest.raises(ValueError, match=r"bad\.npz"):
        evo.load_model(path)


def test_model_file_with_a_damaged_member_is_a_value_error(tmp_path):
    path = saved(tmp_path)
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("extra.npy", b"\x93NUMPY garbage")
    with pytest.raises(ValueError, match=r"model\.npz"):
        evo.load_model(path)


# -- bad inputs ------------------------------------------------------------------------------------------


def test_int64_population_outside_int32_is_refused_not_wrapped():
    model = onemax(evo.selection.Tournament(size=2), length=8)
    with pytest.raises(ValueError, match=r"4294967301.*int32"):
        model.evolve(np.full((8, 8), 2**32 + 5, np.int64), 1)
    ok = model.evolve(np.ones((8, 8), np.int64), 1)  # values that fit are cast
    assert ok.population.dtype == np.int32


@pytest.mark.parametrize("kwargs, problem", [
    ({"weights": [1, np.nan, 3]}, "finite"), ({"values": [1, 2, np.inf]}, "finite"),
    ({"weights": [1, -np.inf, 3]}, "finite"), ({"penalty": -5.0}, "penalty"),
    ({"penalty": np.nan}, "penalty"), ({"capacity": np.inf}, "capacity")])
def test_knapsack_refuses_non_finite_data_and_a_negative_penalty(kwargs, problem):
    args = {"weights": [1, 2, 3], "values": [4, 5, 6], "capacity": 4.0, **kwargs}
    with pytest.raises(ValueError, match=problem):
        evo.fitness.Knapsack(**args)


def test_seed_accepts_numpy_integers():
    np.testing.assert_array_equal(rng.key(np.int64(3)).numpy(), rng.key(3).numpy())
    np.testing.assert_array_equal(rng.key(np.uint64(2**64 - 1)).numpy(), rng.key(2**64 - 1).numpy())
    model = onemax(evo.selection.Tournament(size=2))
    model.compile(fitness=evo.fitness.OneMax(), selection=evo.selection.Tournament(size=2), mode="graph",
                  seed=np.int64(3))
    assert model.seed == 3 and type(model.seed) is int
    with pytest.raises(ValueError, match="seed"):
        rng.key(np.int64(-1))
    with pytest.raises(ValueError, match="seed"):
        rng.key(3.0)


# -- budgets ---------------------------------------------------------------------------------------------


def test_budget_smaller_than_one_generation_says_it_stopped():
    n = 8
    model = onemax(evo.selection.Tournament(size=2), outputs=2)  # 2n children a generation
    stop = evo.callbacks.EarlyStopping(max_evaluations=n + 10)
    result = model.evolve(bits(n), 5, callbacks=[stop])
    assert (result.generations_run, result.stopped_early, stop.stopped_generation) == (0, True, 0)
    assert result.evaluations == n


# -- imports ---------------------------------------------------------------------------------------------


def test_the_engine_imports_no_keras_module_beyond_tensorflows():
    code = textwrap.dedent("""
        import sys
        import tensorflow
        before = set(sys.modules)
        import course_lib.evo
        from course_lib.evo import ops
        ops.registry()
        added = sorted(m for m in set(sys.modules) - before if "keras" in m.lower())
        print(added)
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
