"""Lectures 08 to 14: enough exercises, every one graded in its solution notebook, hints that never hold the answer."""

import re
from pathlib import Path

import nbformat
import pytest

from course_lib import checks

ROOT = Path(__file__).resolve().parent.parent
LECTURES = [f"{n:02d}" for n in range(8, 15)]


def solution_notebook(lecture):
    return nbformat.read(next((ROOT / "solutions").glob(f"{lecture}_*.ipynb")), as_version=4)


def answer_lines(nb):
    """The code lines of the solution cells (comments and short lines left out)."""
    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            for line in cell.source.splitlines():
                line = line.strip()
                if line and not line.startswith("#") and len(line) > 12:
                    yield line


@pytest.mark.parametrize("lecture", LECTURES)
def test_every_exercise_is_graded_and_hinted_in_steps(lecture):
    exercises = checks.exercises_of(lecture)
    assert len(exercises) >= 3
    nb = solution_notebook(lecture)
    graded = [int(m) for c in nb.cells if "check" in c.metadata.get("tags", [])
              for m in re.findall(rf'checks\.grade\("{lecture}", (\d+)', c.source)]
    assert graded == [ex.number for ex in exercises]
    assert f'checks.summary("{lecture}")' in nb.cells[-1].source
    for ex in exercises:
        assert len(ex.hints) >= 2, f"{ex.key} needs a hint that says where to look and one that narrows it"


@pytest.mark.parametrize("lecture", LECTURES)
def test_no_hint_holds_a_line_of_the_answer(lecture):
    lines = list(answer_lines(solution_notebook(lecture)))
    assert lines
    for ex in checks.exercises_of(lecture):
        for hint in ex.hints:
            for line in lines:
                assert line not in hint, f"a hint of {ex.key} gives away the answer: {line!r}"
