"""Test-wide settings: two tiers of tests, and each lecture run at its fastest setting under nbval.

`make test` runs the tests not marked ``slow`` and keeps within 15 minutes on two cores; `make test-all`
runs every test. A test is marked ``slow`` when one run of it took over 7 s on a 2-core machine
(docs/performance.md, "Two tiers of tests"), unless it is the one quick check left of a contract: ask
and tell, save and resume, a reached optimum, a clear error. Under nbval, every exercise and the
lectures in ``LECTURES_IN_MAKE_TEST`` run in `make test`; the other lectures and the solutions run in
`make test-all`, and `make lectures` executes every lecture at its defaults.

nbval appends the lecture's fastest setting (``lectures.fastest``: one timed repeat, fewer untimed
steps) to the cell tagged ``parameters``, then checks every ``# NBVAL_CHECK_OUTPUT`` cell against the
committed output, which must not depend on the setting.
"""

import os
from pathlib import Path

from course_lib import lectures

os.environ.setdefault("MPLBACKEND", "Agg")  # plots render without a display
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # quieter TensorFlow logs
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")  # test workers share a GPU: each takes what it uses

_BY_PATH = {lec.path.resolve(): lec for lec in lectures.lectures()}
# the lectures whose nbval run takes under 40 s on two cores, and lecture 12, the engine's compiled
# evolution and its automatic mode
LECTURES_IN_MAKE_TEST = {"00", "01", "02", "03", "10", "12"}


def pytest_collection_modifyitems(items):
    for item in items:
        cell = getattr(item, "cell", None)  # nbval's per-cell items carry the notebook cell
        path = Path(str(item.fspath)).resolve()
        lecture = _BY_PATH.get(path)
        if cell is not None and (path.parent.name == "solutions"
                                 or (lecture is not None and lecture.number not in LECTURES_IN_MAKE_TEST)):
            item.add_marker("slow")
        if cell is None or lecture is None or "parameters" not in cell.metadata.get("tags", []):
            continue
        cell.source += "\n" + lectures.fastest_source(lecture)
