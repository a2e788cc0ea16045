import re
from pathlib import Path

import nbformat
import pytest

from course_lib import exercises

ROOT = Path(__file__).resolve().parent.parent


def solution_nb():
    nb = nbformat.v4.new_notebook()
    setup = nbformat.v4.new_code_cell("x = 2", execution_count=1,
                                      outputs=[nbformat.v4.new_output("stream", text="set up\n")])
    answer = nbformat.v4.new_code_cell("# Exercise: square x into y\n# (use **)\ny = x ** 2", execution_count=2)
    answer.metadata["tags"] = ["solution"]
    checker = nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\ncheck()", execution_count=3,
                                        outputs=[nbformat.v4.new_output("stream", text="✓\n")])
    checker.metadata["tags"] = ["check"]
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), setup, answer, checker]
    return nb


def test_solution_cell_becomes_a_stub_that_raises():
    ex = exercises.exercise_from_solution(solution_nb())
    stub = ex.cells[2]
    assert stub.source == "# Exercise: square x into y\n# (use **)\n" + exercises.STUB
    assert stub.metadata["tags"] == ["raises-exception"]
    assert stub.outputs == [] and stub.execution_count is None
    with pytest.raises(NotImplementedError):
        exec(stub.source, {})


def test_checker_output_cleared_and_unchecked_other_outputs_kept():
    ex = exercises.exercise_from_solution(solution_nb())
    assert ex.cells[3].outputs == []
    assert ex.cells[3].source.startswith("# NBVAL_IGNORE_OUTPUT")
    assert ex.cells[1].outputs[0]["text"] == "set up\n"


def test_an_explanation_tagged_answer_stays_in_the_solution_only():
    nb = solution_nb()
    explanation = nbformat.v4.new_markdown_cell("y is 4: x squared")
    explanation.metadata["tags"] = ["answer"]
    nb.cells.append(explanation)
    ex = exercises.exercise_from_solution(nb)
    assert len(ex.cells) == 4 and all("answer" not in cell.metadata.get("tags", []) for cell in ex.cells)
    assert nb.cells[-1].source == "y is 4: x squared"


def test_bad_solutions_are_named():
    nb = solution_nb()
    nb.cells[2].source = "y = x ** 2"
    with pytest.raises(exercises.ExerciseError, match="s.ipynb: solution cell 2 starts with no comment"):
        exercises.exercise_from_solution(nb, "s.ipynb")
    nb.cells[2].metadata["tags"] = []
    with pytest.raises(exercises.ExerciseError, match="no cell is tagged 'solution'"):
        exercises.exercise_from_solution(nb, "s.ipynb")


def test_build_and_check_detect_drift(tmp_path):
    (tmp_path / "solutions").mkdir()
    nbformat.write(solution_nb(), tmp_path / "solutions" / "00_x.ipynb")
    assert exercises.check(tmp_path) == ["exercises/00_x.ipynb is missing"]
    assert [p.name for p in exercises.build(tmp_path)] == ["00_x.ipynb"]
    assert exercises.check(tmp_path) == []
    ex = nbformat.read(tmp_path / "exercises" / "00_x.ipynb", as_version=4)
    ex.cells[2].source = "y = 4"  # a hand edit
    nbformat.write(ex, tmp_path / "exercises" / "00_x.ipynb")
    assert "differs from what solutions/00_x.ipynb generates" in exercises.check(tmp_path)[0]
    nbformat.write(ex, tmp_path / "exercises" / "01_orphan.ipynb")
    assert "exercises/01_orphan.ipynb has no solution in solutions/" in exercises.check(tmp_path)


def test_repository_exercises_are_in_sync():
    assert exercises.check() == []


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_a_lectures_exercises_cell_lists_each_of_its_exercises(path):
    from course_lib import checks

    registered = checks.exercises_of(path.name[:2])
    sections = [c.source.split("## Exercises", 1)[1] for c in nbformat.read(path, as_version=4).cells
                if c.cell_type == "markdown" and re.search(r"^## Exercises", c.source, re.MULTILINE)]
    if not registered:
        return
    assert sections, f"{path.name} has exercises but no closing '## Exercises' section that lists them"
    listed = re.findall(r"^\d+\. (.+)$", sections[-1], re.MULTILINE)
    assert len(listed) == len(registered), (f"{path.name}'s Exercises cell lists {listed}; its exercises are "
                                            f"{[e.title for e in registered]}")
