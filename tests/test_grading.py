"""`course check`: grading a learner's notebook in a scratch kernel, never touching the file."""

import sys
import types

import nbformat
import pytest

from course_lib import checks, cli, grading
from course_lib.exercises import ROOT

SETUP = '''
import sys, types
from course_lib import checks

sys.modules.setdefault("course_lib.checks.lecture_98", types.ModuleType("lecture_98"))  # a lecture of its own

@checks.exercise("98", 1, "double it", "look at x", "twice x")
def _double(y, x):
    assert y == 2 * x, f"{y} is not twice {x}"

@checks.exercise("98", 2, "name it", "look at the title", "two letters")
def _name(s):
    assert s == "tf", "that is not the library's short name"

@checks.exercise("98", 3, "never checked", "h1", "h2")
def _never(z):
    pass

x = 3
'''


def code(source, *tags):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    return cell


def notebook(folder, *cells, name="98_synthetic.ipynb"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [code(SETUP), *cells]
    path = folder / name
    nbformat.write(nb, path)
    return path


@pytest.fixture
def lecture_98(monkeypatch):
    """The synthetic lecture's exercises, registered here as its notebook registers them in the kernel."""
    monkeypatch.setitem(sys.modules, "course_lib.checks.lecture_98", types.ModuleType("lecture_98"))
    exec(SETUP, {})
    yield
    for key in [k for k in checks._REGISTRY if k[0] == "98"]:
        del checks._REGISTRY[key]


def test_answered_wrong_and_unanswered_rows(tmp_path, lecture_98):
    path = notebook(tmp_path,
                    code("y = 6", "raises-exception"),
                    code('checks.grade("98", 1, lambda: dict(y=y, x=x))', "check"),
                    code('raise NotImplementedError("Exercise")', "raises-exception"),  # a stub left as it is
                    code('checks.grade("98", 2, lambda: dict(s=s))', "check"),
                    code('s = "np"'),
                    code('checks.grade("98", 2, lambda: dict(s=s))', "check"),  # run again: the last verdict counts
                    code('checks.summary("98")', "check"))
    before = path.read_bytes()
    report = grading.grade_notebook(path, exercises_dir=tmp_path)
    assert path.read_bytes() == before  # graded in a scratch copy
    assert [(r.key, r.status) for r in report.rows] == [("98.1", "✓"), ("98.2", "✗"), ("98.3", "…")]
    assert report.rows[1].detail.startswith(
        "not yet. that is not the library's short name Hint 1 of 2: look at the title")
    assert report.rows[2].detail == "its check cell did not run"
    assert (report.score, report.ok) == (1, False)
    table = report.table()
    assert "✗ 98.2   name it" in table and table.endswith("score: 1 of 3")


def test_all_passed(tmp_path, lecture_98):
    path = notebook(tmp_path,
                    code('y, s, z = 6, "tf", 0', "raises-exception"),
                    *[code(f'checks.grade("98", {k}, lambda: dict({arg}))', "check")
                      for k, arg in [(1, "y=y, x=x"), (2, "s=s"), (3, "z=z")]])
    report = grading.grade_notebook(path, exercises_dir=tmp_path)
    assert report.ok and report.score == 3


def test_a_notebook_that_cannot_run_is_named(tmp_path, lecture_98):
    path = notebook(tmp_path, code("1 / 0"), code('checks.grade("98", 1, lambda: dict(y=y, x=x))', "check"))
    with pytest.raises(grading.GradingError, match=r"cannot run: cell 1 failed with ZeroDivisionError"):
        grading.grade_notebook(path, exercises_dir=tmp_path)


def test_paths_that_are_not_course_notebooks(tmp_path, lecture_98):
    with pytest.raises(grading.GradingError, match="is not one of the course's exercise notebooks"):
        grading.grade_notebook(tmp_path / "homework.ipynb", exercises_dir=tmp_path)
    notebook(tmp_path)
    with pytest.raises(grading.GradingError, match="no such file"):
        grading.grade_notebook(tmp_path / "copy" / "98_synthetic.ipynb", exercises_dir=tmp_path)
    (tmp_path / "98_synthetic.ipynb").write_text("{not json")
    with pytest.raises(grading.GradingError, match="is not a readable notebook"):
        grading.grade_notebook(tmp_path / "98_synthetic.ipynb", exercises_dir=tmp_path)
    (tmp_path / "99_unknown.ipynb").write_text("{}")
    with pytest.raises(grading.GradingError, match="no exercises for lecture '99'"):
        grading.grade_notebook(tmp_path / "99_unknown.ipynb", exercises_dir=tmp_path)


@pytest.mark.slow
def test_course_check_on_lecture_00(capsys):
    solution = ROOT / "solutions" / "00_welcome_and_setup.ipynb"
    exercise = ROOT / "exercises" / "00_welcome_and_setup.ipynb"
    before = exercise.read_bytes()
    assert cli.main(["check", str(solution)]) == 0
    out = capsys.readouterr().out
    assert out.count("✓ 00.") == 3 and out.rstrip().endswith("score: 3 of 3")
    assert cli.main(["check", str(exercise)]) == 1
    out = capsys.readouterr().out
    assert out.count("… 00.") == 3 and "not answered yet" in out and out.rstrip().endswith("score: 0 of 3")
    assert exercise.read_bytes() == before
    assert cli.main(["check", "README.md"]) == 2
    assert "is not one of the course's exercise notebooks" in capsys.readouterr().err
