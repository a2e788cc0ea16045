"""``course check``: grade a learner's exercise notebook without touching it.

The notebook is read into memory and executed top to bottom with nbclient in a scratch folder,
which lets the answer cells tagged ``raises-exception`` fail (an unanswered stub raises) while
any other failing cell means the notebook cannot run. Each check cell calls ``checks.grade``,
which appends its verdict to the file named by ``COURSE_CHECK_REPORT``; the report is read back
into a table with one row per registered exercise and a score.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from course_lib import checks, kernel
from course_lib.exercises import ROOT

KERNEL = "python3"  # the interpreter running `course`; it has course_lib installed
_NAME = re.compile(r"^(\d\d)_\w+\.ipynb$")


class GradingError(ValueError):
    """The notebook cannot be graded (not a course exercise notebook, or it does not run); says why."""


@dataclass
class Row:
    key: str
    title: str
    status: str
    detail: str

    @property
    def passed(self) -> bool:
        return self.status == checks.PASSED


@dataclass
class Report:
    path: Path
    lecture: str
    rows: list[Row]

    @property
    def score(self) -> int:
        return sum(r.passed for r in self.rows)

    @property
    def ok(self) -> bool:
        return self.score == len(self.rows)

    def table(self) -> str:
        width = max(len(r.title) for r in self.rows)
        lines = [f"{self.path} (lecture {self.lecture})"]
        lines += [f"{r.status} {r.key:<6} {r.title:<{width}}  {r.detail}" for r in self.rows]
        lines.append(f"score: {self.score} of {len(self.rows)}")
        return "\n".join(lines)


EXERCISES = ROOT / "exercises"


def lecture_of(path: Path, exercises_dir: Path = EXERCISES) -> str:
    """The lecture number of a course exercise notebook (or a copy of one); a clear error otherwise."""
    known = sorted(p.name for p in exercises_dir.glob("[0-9][0-9]_*.ipynb"))
    if path.suffix != ".ipynb" or path.name not in known:
        raise GradingError(f"{path} is not one of the course's exercise notebooks: grade exercises/NN_topic.ipynb "
                           f"or a copy with the same name ({', '.join(known[:3])}, ...)")
    if not path.is_file():
        raise GradingError(f"{path}: no such file")
    return _NAME.match(path.name).group(1)


@contextlib.contextmanager
def _environment(**values: str):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _execute(nb: nbformat.NotebookNode, folder: Path, report: Path, timeout: int) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    quiet = open(os.devnull, "wb")  # the kernel's TensorFlow C++ log: the learner's terminal shows only the grades
    client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": str(folder)}},
                            extra_arguments=kernel.ARGUMENTS, kernel_manager_class=kernel.logged_kernels(quiet))
    with quiet, _environment(**{checks.REPORT_ENV: str(report)},
                      TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "1")):
        try:
            client.execute()
        except CellExecutionError as exc:
            index = next((i for i, c in enumerate(nb.cells) for o in c.get("outputs", [])
                          if o.get("output_type") == "error"
                          and "raises-exception" not in c.metadata.get("tags", [])), None)
            where = f"cell {index}" if index is not None else "a cell"
            raise GradingError(f"the notebook cannot run: {where} failed with {exc.ename}: {exc.evalue}. "
                               "Fix that cell (only answer cells may raise), then check again") from None
        except (CellTimeoutError, DeadKernelError) as exc:
            raise GradingError(f"the notebook cannot run: {type(exc).__name__}: {exc}") from None


def _results(report: Path) -> dict[str, dict]:
    found = {}
    if report.exists():
        for line in report.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            found[entry["exercise"]] = entry  # a check cell run twice: the last verdict counts
    return found


def grade_notebook(path: str | os.PathLike, *, timeout: int = 600, exercises_dir: Path = EXERCISES) -> Report:
    """Execute a copy of the exercise notebook at ``path`` and grade every exercise of its lecture
    (``exercises_dir`` holds the notebooks it may be a copy of)."""
    path = Path(path)
    lecture = lecture_of(path, exercises_dir)
    try:
        exercises = checks.exercises_of(lecture)
    except ValueError as exc:
        raise GradingError(f"{path}: {exc}") from None
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # JSON or schema errors
        raise GradingError(f"{path} is not a readable notebook: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="course-check-") as scratch:  # the kernel's working folder
        report = Path(scratch) / "report.jsonl"
        _execute(nb, Path(scratch), report, timeout)  # nb is an in-memory copy: the file is never written
        results = _results(report)
    rows = []
    for ex in exercises:
        entry = results.get(ex.key)
        if entry is None:
            rows.append(Row(ex.key, ex.title, checks.UNANSWERED, "its check cell did not run"))
            continue
        prefix = f"{entry['status']} {ex.key} {ex.title}: "
        detail = entry["message"][len(prefix):] if entry["message"].startswith(prefix) else entry["message"]
        rows.append(Row(ex.key, ex.title, entry["status"], detail))
    return Report(path, lecture, rows)
