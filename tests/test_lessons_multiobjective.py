"""course_lib.lessons.multiobjective: the hypervolume a front of a given size can reach, and its sentence; the
comparison beside pymoo read from its row."""

import itertools
import types

import numpy as np
import pytest

from course_lib import evo
from course_lib.lessons import multiobjective as lesson
from course_lib.problems import multiobjective as mo

SIGNS = (-1.0, -1.0)


def _problem(points: np.ndarray, reference=(1.1, 1.1)):
    """A two-objective problem whose true front is exactly ``points``."""
    return types.SimpleNamespace(name="made up", reference=reference, front=lambda n: points)


def _hypervolume(points, reference=(1.1, 1.1)) -> float:
    return float(evo.pareto.hypervolume(np.asarray(points, np.float32), reference, SIGNS))


def test_best_hypervolume_is_the_best_subset_of_the_sampled_front():
    f1 = np.sort(np.random.default_rng(0).random(9))
    front = np.stack([f1, 1 - np.sqrt(f1)], 1)
    problem = _problem(front)
    for size in (1, 2, 3, 9, 12):
        brute = max(_hypervolume(front[list(c)]) for c in itertools.combinations(range(9), min(size, 9)))
        assert lesson.best_hypervolume(problem, size, samples=9) == pytest.approx(brute, rel=1e-5)


def test_best_hypervolume_beats_even_spacing_and_stays_below_the_whole_front():
    zdt1 = mo.zdt(1)
    best = lesson.best_hypervolume(zdt1, 100)
    assert zdt1.hypervolume(zdt1.front(100)) < best < zdt1.true_hypervolume


def test_best_hypervolume_refuses_what_it_cannot_compute():
    with pytest.raises(ValueError, match="two objectives; DTLZ2 has 3"):
        lesson.best_hypervolume(mo.dtlz2(), 10)
    with pytest.raises(ValueError, match="at least 1 point"):
        lesson.best_hypervolume(mo.zdt(1), 0)


def test_front_verdicts_read_the_found_front_against_the_best_of_its_size():
    zdt1 = mo.zdt(1)
    found = zdt1.front(50)
    front = type("Front", (), {"hypervolume": zdt1.hypervolume(found), "__len__": lambda self: 50})()
    result = types.SimpleNamespace(front=front, generations=7)
    text = str(lesson.front_verdicts({"ZDT1": (zdt1, result)}))
    best = lesson.best_hypervolume(zdt1, 50)
    assert f"hypervolume {zdt1.hypervolume(found):.4f} against {best:.4f}, the most any 50 points" in text
    assert f"the whole front's is {zdt1.true_hypervolume:.4f})." in text


def beside_row(**changes):
    row = {"problem": "DTLZ2", "objectives": 3, "population": 92, "generations": 250, "seeds": 7,
           "engine IGD": 1.2e-3, "engine gen/s": 2000.0, "pymoo IGD": 1.1e-3, "pymoo gen/s": 150.0,
           "IGD engine / pymoo": 1.2e-3 / 1.1e-3, "95% interval": "0.93–1.24", "verdict": "not told apart by 7 seeds",
           "speed engine / pymoo": 2000 / 150}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


@pytest.mark.parametrize("changes, says", [
    ({}, "(95% interval 0.93–1.24x over the seeds): the interval holds 1: these seeds do not tell the two apart"),
    ({"95% interval": "1.05-1.3", "verdict": "pymoo lower"}, "pymoo's IGD is lower beyond what the seeds' spread"),
    ({"95% interval": "0.6-0.9", "verdict": "engine lower"}, "the engine's IGD is lower beyond what the seeds' spread"),
    ({"95% interval": "", "verdict": "too few seeds (under 5)", "seeds": 2}, "2 seeds are too few for an interval"),
    ({"pymoo IGD": None, "pymoo gen/s": None, "IGD engine / pymoo": None, "95% interval": None, "verdict": None,
      "speed engine / pymoo": None}, "pymoo is not installed here"),
])
def test_the_comparison_beside_pymoo_is_read_from_its_row(changes, says):
    text = str(lesson.beside_pymoo_verdicts(beside_row(**changes)))
    assert says in text
    assert "median IGD 0.0012" in text or "median IGD is 0.0012" in text
    assert "seeds 0-" in text


def test_the_many_objective_race_reads_each_ratio_as_one_seeds_and_ranks_nothing():
    def run(igd):
        return types.SimpleNamespace(front=types.SimpleNamespace(igd=igd), population=np.zeros((92, 12)),
                                     generations=40)

    race = {3: (None, {"NSGA-II": run(0.08), "NSGA-III": run(0.04)})}
    sentences = lesson.race_verdicts(race, seed=7).sentences
    assert sentences[0] == ("3 objectives (population 92, 40 generations): IGD 0.0800 with NSGA-II and 0.0400 with "
                            "NSGA-III, 2.00 times NSGA-III's.")
    assert "seed 7" in sentences[-1] and "not which ends lower in general" in sentences[-1]
    assert not any("better" in s or "lower than" in s for s in sentences)
