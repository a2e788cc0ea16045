"""Exercise notebooks are generated from the solutions, never edited by hand.

In ``solutions/NN_topic.ipynb`` a code cell tagged ``solution`` holds an answer; its
leading comment lines say what to write. In ``exercises/NN_topic.ipynb`` that cell
becomes a stub: the same comments, then ``raise NotImplementedError``, tagged
``raises-exception`` so the notebook still runs top to bottom. Cells tagged ``check``
(the checkers) keep their code, but their solved output is cleared, since in the
exercise they print a hint. Cells tagged ``answer`` (an explanation that gives the answer
away) stay in the solution only. Every other cell keeps the solution's executed output,
so a reader sees the set-up results before starting.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
STUB = 'raise NotImplementedError("Exercise: replace this line with your answer")'
CHECKED = "# NBVAL_CHECK_OUTPUT"
IGNORED = "# NBVAL_IGNORE_OUTPUT"


class ExerciseError(ValueError):
    """A solution notebook cannot be turned into an exercise; the message says why."""


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _instructions(source: str) -> list[str]:
    """The comment lines at the top of a solution cell: what the reader must write."""
    lines = []
    for line in source.splitlines():
        if line.startswith("#"):
            lines.append(line.replace(CHECKED, IGNORED))
        elif line.strip():
            break
    return lines


def _clear(cell) -> None:
    cell["outputs"] = []
    cell["execution_count"] = None
    cell["source"] = cell["source"].replace(CHECKED, IGNORED)


def exercise_from_solution(solution: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """The exercise notebook for one solution notebook."""
    nb = copy.deepcopy(solution)
    nb.cells = [cell for cell in nb.cells if "answer" not in _tags(cell)]
    n_solutions = 0
    for index, cell in enumerate(nb.cells):
        tags = _tags(cell)
        if "solution" in tags:
            if cell.cell_type != "code":
                raise ExerciseError(f"{name}: cell {index} is tagged 'solution' but is not a code cell")
            instructions = _instructions(cell.source)
            if not instructions:
                raise ExerciseError(f"{name}: solution cell {index} starts with no comment saying what "
                                    "to write; begin it with '# Exercise: ...'")
            n_solutions += 1
            cell.source = "\n".join(instructions + [STUB])
            cell.metadata["tags"] = [t for t in tags if t != "solution"] + ["raises-exception"]
            _clear(cell)
        elif "check" in tags:
            _clear(cell)
    if n_solutions == 0:
        raise ExerciseError(f"{name}: no cell is tagged 'solution', so there is no exercise to generate")
    return nb


def _text(nb: nbformat.NotebookNode) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _pairs(root: Path):
    for solution in sorted((root / "solutions").glob("[0-9][0-9]_*.ipynb")):
        yield solution, root / "exercises" / solution.name


def build(root: Path = ROOT) -> list[Path]:
    """Write exercises/ from solutions/; returns the files written."""
    written = []
    (root / "exercises").mkdir(exist_ok=True)
    for solution, exercise in _pairs(root):
        nb = exercise_from_solution(nbformat.read(solution, as_version=4), solution.name)
        exercise.write_text(_text(nb), encoding="utf-8")
        written.append(exercise)
    return written


def check(root: Path = ROOT) -> list[str]:
    """Problems that make exercises/ out of date with solutions/ (empty when in sync)."""
    problems = []
    expected = set()
    for solution, exercise in _pairs(root):
        expected.add(exercise.name)
        want = _text(exercise_from_solution(nbformat.read(solution, as_version=4), solution.name))
        if not exercise.exists():
            problems.append(f"exercises/{exercise.name} is missing")
        elif _text(nbformat.read(exercise, as_version=4)) != want:
            problems.append(f"exercises/{exercise.name} differs from what solutions/{solution.name} generates")
    for extra in sorted((root / "exercises").glob("*.ipynb")):
        if extra.name not in expected:
            problems.append(f"exercises/{extra.name} has no solution in solutions/")
    return problems
