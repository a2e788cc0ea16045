import json
import sys
import types

import pytest

from course_lib import bench, checks, plotting


@pytest.fixture
def lecture_97(monkeypatch):
    """A lecture of two exercises, registered for one test."""
    monkeypatch.setitem(sys.modules, "course_lib.checks.lecture_97", types.ModuleType("lecture_97"))

    @checks.exercise("97", 1, "square", "look at powers", "multiply x by itself", "x times x is 9 here")
    def square(y, x):
        if y != x * x:  # raised, not asserted: pytest would rewrite an assert's message in a test module
            raise AssertionError(f"{y} is not the square of {x}")

    @checks.exercise("97", 2, "anything", "h")
    def anything(z):
        pass

    yield
    for key in [k for k in checks._REGISTRY if k[0] == "97"]:
        del checks._REGISTRY[key]


def test_grade_steps_through_the_hints_and_reports(lecture_97, tmp_path, monkeypatch, capsys):
    report = tmp_path / "report.jsonl"
    monkeypatch.setenv(checks.REPORT_ENV, str(report))
    x = 3
    first = checks.grade("97", 1, lambda: dict(y=6, x=x))
    assert not first and first.status == checks.WRONG
    assert first.message == ("✗ 97.1 square: not yet. 6 is not the square of 3 "
                             "Hint 1 of 3: look at powers (try again for a narrower hint)")
    assert "Hint 2 of 3: multiply x by itself" in checks.grade("97", 1, lambda: dict(y=7, x=x)).message
    assert "Hint 3 of 3: x times x is 9 here" in checks.grade("97", 1, lambda: dict(y=8, x=x)).message
    assert "Hint 3 of 3" in checks.grade("97", 1, lambda: dict(y=8, x=x)).message  # the last hint stays
    assert checks.grade("97", 1, lambda: dict(y=9, x=x)).message == "✓ 97.1 square: correct."
    assert "raised KeyError" in checks.grade("97", 1, lambda: dict(y={}["k"], x=x)).message

    def stub():
        raise NotImplementedError("Exercise: replace this line with your answer")

    unanswered = checks.grade("97", 2, stub)
    assert unanswered.status == checks.UNANSWERED and "not answered yet. h" in unanswered.message
    assert "not answered yet (name 'missing' is not defined)" in checks.grade(
        "97", 2, lambda: dict(z=missing)).message  # noqa: F821
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(e["exercise"], e["status"]) for e in lines][-4:] == [("97.1", "✓"), ("97.1", "✗"), ("97.2", "…"),
                                                                   ("97.2", "…")]
    assert "✓ 97.1 square: correct." in capsys.readouterr().out


def test_summary_and_failure(lecture_97, capsys):
    assert checks.summary("97").splitlines() == ["… 97.1   square (its check cell has not run)",
                                                 "… 97.2   anything (its check cell has not run)", "score: 0 of 2"]
    checks.grade("97", 1, lambda: dict(y=8, x=3))
    assert checks.summary("97").splitlines()[0] == "✗ 97.1   square"  # wrong, not "has not run"
    checks.grade("97", 1, lambda: dict(y=9, x=3))
    checks.grade("97", 2, lambda: dict(z=0))
    assert checks.summary("97").endswith("score: 2 of 2")
    assert checks.failure("97", 1, y=9, x=3) is None
    assert checks.failure("97", 1, y=8, x=3) == "8 is not the square of 3"


def test_registry_errors(lecture_97):
    with pytest.raises(ValueError, match="needs at least one hint"):
        checks.exercise("97", 3, "no hints")
    with pytest.raises(ValueError, match="lecture 97 has no exercise 5"):
        checks.get("97", 5)
    with pytest.raises(ValueError, match="no exercises for lecture '96'"):
        checks.exercises_of("96")


@pytest.mark.parametrize("lecture", [f"{n:02d}" for n in range(8)])
def test_course_lectures_have_graded_exercises_with_hints_in_steps(lecture):
    exercises = checks.exercises_of(lecture)
    assert len(exercises) >= 3
    for ex in exercises:
        assert len(ex.hints) >= 2, f"{ex.key} needs a hint that says where to look and a narrower one"


def test_figures_draw():
    c = bench.compare({"a": lambda: sum(range(1000)), "b": lambda: 1}, repeats=2, title="t")
    ax = plotting.speedup_bars(c)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    ax = plotting.timeline([{"lane": "t1", "label": "read", "start": 0, "end": 1},
                            {"lane": "t2", "label": "map", "start": 0.5, "end": 2}])
    assert len(ax.collections) == 2
    ax = plotting.fitness_history({"best": [1, 2, 3], "mean": [0, 1, 2], "std": [1, 1, 1]})
    assert len(ax.lines) == 2
    ax = plotting.throughput_bars(["x", "y"], [10.0, 100.0], unit="img/s", log=True)
    assert ax.get_xscale() == "log"
