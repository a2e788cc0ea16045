"""Test-wide settings; nbval runs each lecture at its fastest setting, the way papermill injects parameters.

`make test` executes every lecture once: nbval appends the lecture's fastest setting
(``lectures.fastest``: one timed repeat, fewer untimed steps) to the cell tagged ``parameters``,
then checks every ``# NBVAL_CHECK_OUTPUT`` cell against the committed output, which must not
depend on the setting. The defaults themselves run in ``make lectures``.
"""

import os
from pathlib import Path

from course_lib import lectures

os.environ.setdefault("MPLBACKEND", "Agg")  # plots render without a display
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # quieter TensorFlow logs
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")  # test workers share a GPU: each takes what it uses

_BY_PATH = {lec.path.resolve(): lec for lec in lectures.lectures()}


def pytest_collection_modifyitems(items):
    for item in items:
        cell = getattr(item, "cell", None)  # nbval's per-cell items carry the notebook cell
        lecture = _BY_PATH.get(Path(str(item.fspath)).resolve())
        if cell is None or lecture is None or "parameters" not in cell.metadata.get("tags", []):
            continue
        cell.source += "\n" + lectures.fastest_source(lecture)
