"""Each lecture through the course's own papermill runner, with its fastest setting.

nbval runs the committed notebooks at their defaults; this runs them the way ``make lectures``
does, with a parameter injected, so a lecture that ignores its parameters cell, or breaks at
a size other than its default, fails here.
"""

import nbformat
import pytest

from course_lib import lectures

ALL = lectures.lectures()
FASTEST = {"REPEATS": "1"}  # one timed repeat; lectures that time nothing get shorter runs instead
OTHERS = {"14": {"TSP_GENERATIONS": "100", "KNAPSACK_GENERATIONS": "50", "CONTINUOUS_GENERATIONS": "100"}}


@pytest.mark.parametrize("lecture", ALL, ids=[lec.stem for lec in ALL])
def test_lecture_runs_under_papermill_with_its_fastest_setting(lecture, tmp_path):
    params = OTHERS.get(lecture.number, FASTEST)
    (outcome,) = lectures.run([lecture.number], params, output_dir=tmp_path, progress=False)
    assert outcome.ok, outcome.error
    assert outcome.params == {name: int(value) for name, value in params.items()}
    executed = nbformat.read(outcome.output, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    assert all(f"{name} = {value}" in injected[0].source for name, value in params.items())
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    assert lectures.key_results(outcome.output), f"{lecture.stem} shows no cell tagged key-result"
