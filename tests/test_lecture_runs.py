"""Lectures under the course's papermill runner, and the fastest setting the tests run them at.

nbval executes every lecture once at its fastest setting (conftest.py injects it); here one real
lecture goes through `course lectures` the way ``make lectures`` runs it, and every lecture is
checked to read each of its parameters, so a knob that changes nothing fails.
"""

import ast
import re

import nbformat
import pytest

from course_lib import lectures

ALL = lectures.lectures()


def test_a_lecture_runs_under_papermill_with_its_fastest_setting(tmp_path):
    (lecture,) = lectures.lectures(only=["00"])
    params = lectures.fastest(lecture)
    assert params == {"REPEATS": "1"}
    (outcome,) = lectures.run([lecture.number], params, output_dir=tmp_path, progress=False)
    assert outcome.ok, outcome.error
    assert outcome.params == {"REPEATS": 1}
    executed = nbformat.read(outcome.output, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "REPEATS = 1" in injected[0].source
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    assert lectures.key_results(outcome.output), "lecture 00 shows no cell tagged key-result"


@pytest.mark.parametrize("lecture", ALL, ids=[lec.stem for lec in ALL])
def test_every_parameter_is_read_after_the_parameters_cell(lecture):
    nb = nbformat.read(lecture.path, as_version=4)
    (index,) = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    later = "\n".join(c.source for c in nb.cells[index + 1:] if c.cell_type == "code")
    names = {node.id for node in ast.walk(ast.parse(later)) if isinstance(node, ast.Name)}
    unread = [name for name in lectures.parameters_of(lecture.path) if name not in names]
    assert unread == [], f"{lecture.stem} never reads its parameters {unread}"


@pytest.mark.parametrize("lecture", ALL, ids=[lec.stem for lec in ALL])
def test_fastest_setting_names_real_parameters(lecture):
    params = lectures.fastest(lecture)
    assert lectures.coerce_params(lecture.path, params)  # every lecture has a faster setting than its default
    assert all(re.fullmatch(r"[A-Z_]+", name) for name in params)
