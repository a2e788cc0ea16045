"""The check for values a rendered sentence lacks: it finds each kind of gap, passes whole sentences, and
finds nothing in any committed notebook, solution or exercise."""

from pathlib import Path

import nbformat
import pytest

from course_lib import rendered_text

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = sorted(p for folder in ("notebooks", "solutions", "exercises")
                   for p in (ROOT / folder).glob("[0-9][0-9]_*.ipynb"))

GAPS = [
    ("the eager MatMul on the calling thread, the graph's on , the executor's thread pool", "an empty value"),
    ("The op type that took the most time: ``, 44% of it.", "an empty name"),
    ("XLA is **nanx faster** here", "a figure missing"),
    ("a copy moved inf GB/s", "a figure missing"),
    ("the ratio is nan, so", "nan where a figure belongs"),
    ("the leader is None.", "None where a value belongs"),
    ("the {name} kernel ran on {thread!r}", "an unfilled placeholder"),
    ("the kernels ran on a, , b", "an empty value"),
    ("a sentence with a { left open", "unmatched braces"),
]
WHOLE = [
    "the eager MatMul on the calling thread, the graph's on tf_Compute, the executor's thread pool",
    "`None` is what the function returns; `nan` scores never win; `{}` is an empty dict",
    "tensor -> NumPy (.numpy()): a copy, 392x the time for 64x the bytes",
    "crowding inf marks the ends of a front; 1.8x faster (95% interval 1.6-2.0x)",
]


@pytest.mark.parametrize("text, problem", GAPS)
def test_each_gap_is_found_in_markdown(text, problem):
    assert problem in [p for p, _ in rendered_text.blanks_in_text(text, "markdown")]


@pytest.mark.parametrize("text", WHOLE)
def test_whole_sentences_pass(text):
    assert rendered_text.blanks_in_text(text, "markdown") == []


def test_printed_text_is_checked_only_for_gaps_no_printed_value_makes():
    printed = "x: float32[None]\n{'a': 1}\ndef f(): return ()\ncrowding inf\n"
    assert rendered_text.blanks_in_text(printed, "printed") == []
    assert rendered_text.blanks_in_text("graph ran on , pool\n", "printed")
    assert rendered_text.blanks_in_text("speed-up: nanx\n", "printed")


def test_blanks_name_the_notebook_and_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("the graph's on , here: source is not output"),
                nbformat.v4.new_code_cell("Markdown(text)", outputs=[nbformat.v4.new_output(
                    "display_data", data={"text/markdown": "the graph's on , the pool", "text/plain": "<Markdown>"})]),
                nbformat.v4.new_code_cell("print(x)", outputs=[nbformat.v4.new_output(
                    "stream", name="stdout", text="XLA: nanx faster\n")])]
    path = tmp_path / "99_example.ipynb"
    nbformat.write(nb, str(path))
    found = rendered_text.blanks(path)
    assert [(b.cell, b.problem) for b in found] == [(1, "an empty value"), (2, "a figure missing")]
    assert str(found[0]).startswith(f"{tmp_path.name}/99_example.ipynb cell 1: an empty value")


@pytest.mark.parametrize("notebook", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_committed_notebook_renders_a_blank(notebook):
    assert [str(b) for b in rendered_text.blanks(notebook)] == []


def test_the_runner_fails_a_lecture_that_rendered_a_blank(tmp_path):
    from course_lib import lectures

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("Markdown(text)", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/markdown": "the graph's on , the pool"})])]
    path = tmp_path / "01_example.ipynb"
    nbformat.write(nb, str(path))
    assert lectures._blanks_error(path).startswith("1 rendered value(s) missing: ")
    nb.cells[0].outputs[0]["data"]["text/markdown"] = "the graph's on tf_Compute, the pool"
    nbformat.write(nb, str(path))
    assert lectures._blanks_error(path) is None
