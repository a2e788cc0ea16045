import json
import subprocess
import sys

import nbformat
import pytest

from course_lib import cli, exercises, lectures


def write_nb(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = cells
    nbformat.write(nb, path)


def tagged(src, *tags):
    cell = nbformat.v4.new_code_cell(src)
    cell.metadata["tags"] = list(tags)
    return cell


@pytest.fixture
def course(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    write_nb(folder / "00_ok.ipynb", [
        nbformat.v4.new_markdown_cell("# Zero: a fine lecture"),
        tagged("N = 3\nNAME = 'a'\nFAST = False\nSIZES = [1, 2]", "parameters"),
        nbformat.v4.new_code_cell("import os, sys\nos.write(2, b'E0000 fake.cc:1] a C++ log line\\n')\n"
                                  "os.write(1, b'C-level stdout, as tf.print writes\\n')\n"
                                  "print('Python stderr', file=sys.stderr)"),
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]);"),
        tagged("print('N is', N, NAME, FAST)", "key-result"),
    ])
    write_nb(folder / "01_broken.ipynb", [
        nbformat.v4.new_markdown_cell("# One"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("1 / 0"),
    ])
    return folder


@pytest.mark.slow
def test_runner_executes_with_parameters_and_names_failures(course, tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # ipykernel forwards no C-level output at all when it sees it
    out = tmp_path / "build"
    outcomes = lectures.run(["0", "1"], {}, output_dir=out, folders=[course], progress=False)
    ok, broken = outcomes
    assert ok.ok and not broken.ok
    assert "cell 2" in broken.error and "ZeroDivisionError" in broken.error
    assert f"kernel log: {broken.log}" in broken.error
    executed = nbformat.read(out / "notebooks" / "00_ok.ipynb", as_version=4)
    assert "N is 3 a False\n" in [o.get("text") for o in executed.cells[-1].outputs]
    # The kernel's C-level stderr (TensorFlow's C++ log) goes to the log, not into the notebook;
    # C-level stdout (tf.print) and Python's stderr still reach the reader. C-level output comes through
    # a thread of ipykernel's that reads a pipe, which the end of a cell does not wait for: on a loaded
    # machine the line can show under a later cell.
    assert ("stderr", "Python stderr\n") in {(o["name"], o["text"]) for o in executed.cells[2].outputs}
    streams = "".join(o["text"] for cell in executed.cells[2:] for o in cell.outputs if o["output_type"] == "stream")
    assert streams.count("C-level stdout, as tf.print writes\n") == 1 and "fake.cc" not in streams
    # the chart is saved in the notebook even where the caller's shell draws off-screen (conftest: Agg)
    assert any("image/png" in o.get("data", {}) for o in executed.cells[3].outputs)
    assert ok.log == out / "logs" / "notebooks-00_ok.log"
    assert "E0000 fake.cc:1] a C++ log line" in ok.log.read_text()

    (ok,) = lectures.run(["00"], {"N": "7", "FAST": "true"}, output_dir=out, folders=[course], progress=False)
    executed = nbformat.read(ok.output, as_version=4)
    assert executed.cells[-1].outputs[0]["text"] == "N is 7 a True\n"
    assert ok.params == {"N": 7, "FAST": True}

    (bad,) = lectures.run(["00"], {"M": "1"}, output_dir=out, folders=[course], progress=False)
    assert bad.error.startswith("bad parameter: 00_ok.ipynb has no parameter 'M'")

    index = lectures.write_index(outcomes, out)
    page = index.read_text()
    assert "Zero: a fine lecture" in page and "N is 7 a True" in page
    assert 'href="notebooks/00_ok.html"' in page and '.ipynb"' not in page, "the report links to HTML renderings"
    assert "N is 7 a True" in (out / "notebooks" / "00_ok.html").read_text()
    assert "failed" in page and "ZeroDivisionError" in page and "TF 2." in page


def test_bad_parameters_and_numbers_are_named(course):
    with pytest.raises(ValueError, match="00_ok.ipynb has no parameter 'M'; its parameters are: N, NAME, FAST, SIZES"):
        lectures.coerce_params(course / "00_ok.ipynb", {"M": "1"})
    with pytest.raises(ValueError, match="parameter 'N' of 00_ok.ipynb takes a int, got 'many'"):
        lectures.coerce_params(course / "00_ok.ipynb", {"N": "many"})
    assert lectures.coerce_params(course / "00_ok.ipynb", {"SIZES": "[4, 8]"}) == {"SIZES": [4, 8]}
    with pytest.raises(ValueError, match="parameter 'SIZES' of 00_ok.ipynb takes a Python literal like"):
        lectures.coerce_params(course / "00_ok.ipynb", {"SIZES": "four"})
    with pytest.raises(ValueError, match="no lecture numbered 42"):
        lectures.lectures(course, ["42"])


def test_every_lecture_has_parameters_cell_and_title():
    found = lectures.lectures()
    assert found and found[0].stem == "00_welcome_and_setup"
    for lec in found:
        assert lectures.parameters_of(lec.path), f"{lec.path.name} has no parameters cell"
        assert lec.title != lec.stem.replace("_", " "), f"{lec.path.name} has no '# Title'"


def test_cli_exit_codes(capsys):
    assert cli.main(["bench", "nope"]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err
    assert cli.main(["exercises", "check"]) == 0
    assert cli.main(["lectures", "--only", "99"]) == 2
    assert "no lecture numbered 99" in capsys.readouterr().err
    assert cli.main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cores"] >= 1 and "kernel" in report


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "course_lib.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "lectures" in out.stdout and "doctor" in out.stdout


def _executed(path, outputs_per_cell):
    """A notebook as papermill leaves it: code cells with the given outputs."""
    cells = []
    for outputs in outputs_per_cell:
        cell = nbformat.v4.new_code_cell("pass")
        cell.outputs = outputs
        cells.append(cell)
    write_nb(path, cells)
    return path


def _markdown(text):
    return nbformat.v4.new_output("display_data", data={"text/markdown": text, "text/plain": "<Markdown>"})


def _rendered(comparison):
    return nbformat.v4.new_output("execute_result", data={"text/html": comparison._repr_html_(),
                                                          "text/plain": repr(comparison)}, execution_count=1)


def _comparison(fast_s, twin_s=1.0):
    from course_lib import bench

    def t(name, center):
        return bench.Timing(name, center, [center * (1 + 0.01 * (i % 3)) for i in range(9)], 1)
    return bench.Comparison([t("naive", 1.0), t("prefetch", fast_s)], baseline="naive", title="pipeline",
                            twin=t("twin", twin_s))


def test_verdicts_are_read_back_and_only_the_changed_ones_reported(tmp_path):
    steady, flipped = _comparison(0.5), _comparison(1.0)
    sentence = "In sin(x): " + steady.verdict("prefetch", over="naive") + "; and " + \
        steady.verdict("naive", over="prefetch")
    first = _executed(tmp_path / "a.ipynb", [
        [_rendered(steady)],
        [_markdown(sentence), nbformat.v4.new_output("stream", name="stdout",
                                                      text="1 word per call: " + steady.verdict("prefetch") + "\n")],
    ])
    found = lectures.verdicts_in(first)
    assert {k: v for k, v in found.items() if k[0] == 0} == {(0, "pipeline | prefetch | table"): "faster"}
    assert {k: v for k, v in found.items() if k[0] == 1} == {
        (1, "In sin(x): prefetch | naive"): "faster", (1, "and naive | prefetch"): "slower",
        (1, "1 word per call: prefetch | naive"): "faster"}
    second = _executed(tmp_path / "b.ipynb", [
        [_rendered(flipped)],
        [_markdown("In sin(x): " + flipped.verdict("prefetch", over="naive"))],
    ])
    changes = lectures.verdict_changes(first, second)
    assert [(c.cell, c.judged, c.first, c.second) for c in changes] == [
        (0, "pipeline | prefetch | table", "faster", "no difference"),
        (1, "1 word per call: prefetch | naive", "faster", None),
        (1, "In sin(x): prefetch | naive", "faster", "no difference"),
        (1, "and naive | prefetch", "slower", None)]
    assert str(changes[0]) == "a.ipynb cell 0: pipeline | prefetch | table: faster -> no difference (contradicts)"
    assert [c.contradicts for c in changes] == [True, False, True, False]  # a verdict one run lacks: no
    assert lectures.verdict_changes(first, first) == []


def test_a_verdict_too_close_to_call_is_read_back_and_contradicts_neither_side(tmp_path):
    edge = _comparison(0.5)
    edge.timings[1].times_s = [(0.9, 1.0, 0.95)[i % 3] for i in range(9)]  # 1.06x, its interval 1.01-1.11x
    assert edge.call("prefetch") == "too close to call"
    first = _executed(tmp_path / "a.ipynb", [[_rendered(edge), _markdown("In sin(x): " + edge.verdict("prefetch"))]])
    assert lectures.verdicts_in(first) == {(0, "pipeline | prefetch | table"): "too close to call",
                                           (0, "In sin(x): prefetch | naive"): "too close to call"}
    second = _executed(tmp_path / "b.ipynb", [[_rendered(_comparison(0.5)),
                                               _markdown("In sin(x): " + _comparison(1.0).verdict("prefetch"))]])
    changes = lectures.verdict_changes(first, second)
    assert [(c.first, c.second, c.contradicts) for c in changes] == [
        ("too close to call", "no difference", False), ("too close to call", "faster", False)]


def test_a_difference_too_small_to_call_is_read_back_and_contradicts_only_a_called_difference(tmp_path):
    small = _comparison(1 / 1.03)
    assert small.call("prefetch") == "too small to call"
    first = _executed(tmp_path / "a.ipynb", [[_rendered(small), _markdown("In sin(x): " + small.verdict("prefetch"))]])
    assert set(lectures.verdicts_in(first).values()) == {"too small to call"}
    none = _executed(tmp_path / "b.ipynb", [[_rendered(_comparison(1.0)),
                                             _markdown("In sin(x): " + _comparison(1.0).verdict("prefetch"))]])
    fast = _executed(tmp_path / "c.ipynb", [[_rendered(_comparison(0.5)),
                                             _markdown("In sin(x): " + _comparison(0.5).verdict("prefetch"))]])
    assert {c.contradicts for c in lectures.verdict_changes(first, none)} == {False}  # both under the least floor
    assert {c.contradicts for c in lectures.verdict_changes(first, fast)} == {True}


def test_a_figure_in_the_words_before_a_verdict_is_not_part_of_what_it_judges(tmp_path):
    steady = _comparison(0.5)

    def lecture(name, took_ms, against_ms):
        return _executed(tmp_path / name, [[_markdown(
            f"OneMax 1,000 x 1,000 took {took_ms} ms against the chain's {against_ms} ms (2.1x; "
            + steady.verdict("prefetch", over="naive"))]])

    first, second = lecture("a.ipynb", 59.6, 60.2), lecture("b.ipynb", "61.0", "58.9")
    assert lectures.verdicts_in(first) == {(0, "prefetch | naive"): "faster"}
    sentence = "The loop took 59.6 ms against the chain's 60.2 ms: no measurable difference (1.01x"
    assert lectures._verdicts_in_text(sentence) == {"The loop took … | the chain's …": "no difference"}
    assert lectures._verdicts_in_text("OneMax 1,000 x 1,000 at 12 s: 3x faster than pymoo (95% interval") == {
        "OneMax 1,000 x 1,000 at … | pymoo": "faster"}
    assert lectures.verdict_changes(first, second) == []


def test_run_twice_compares_the_two_runs_and_writes_the_count(tmp_path, monkeypatch):
    steady, flipped = _comparison(0.5), _comparison(1.0)
    lecture = lectures.Lecture("00", "00_x", tmp_path / "00_x.ipynb")
    outputs = iter([steady, flipped])

    written_in_place = []

    def fake_run(only, params, *, output_dir, in_place, progress):
        written_in_place.append(in_place)
        output_dir.mkdir(parents=True)
        path = _executed(output_dir / "00_x.ipynb", [[_rendered(next(outputs))]])
        return [lectures.Outcome(lecture, path, 1.0)]

    monkeypatch.setattr(lectures, "run", fake_run)
    outcomes, changes, path = lectures.run_twice(["00"], output_dir=tmp_path / "twice", in_place=True,
                                                 progress=False)
    assert written_in_place == [False, True]  # the second run writes the lectures the repository commits
    assert len(outcomes) == 2 and [c.judged for c in changes] == ["pipeline | prefetch | table"]
    report = json.loads(path.read_text())
    assert (report["verdicts"], report["changed"], report["contradicted"], report["failed"]) == (1, 1, 1, [])
    assert path == tmp_path / "twice" / "verdicts.json"


def test_course_lectures_twice_prints_each_change_and_the_count(tmp_path, monkeypatch, capsys):
    report = tmp_path / "verdicts.json"
    report.write_text(json.dumps({"verdicts": 7, "changed": 1, "contradicted": 1, "failed": []}))
    change = lectures.VerdictChange("00_x.ipynb", 3, "a | b", "faster", "no difference")
    seen = []

    def fake_twice(only, params, *, in_place):
        seen.append((only, params, in_place))
        return [], [change], report

    monkeypatch.setattr(lectures, "run_twice", fake_twice)
    assert cli.main(["lectures", "--twice", "--only", "00", "-p", "N", "3"]) == 0
    out = capsys.readouterr().out
    assert seen == [(["00"], {"N": "3"}, False)]
    assert "00_x.ipynb cell 3: a | b: faster -> no difference (contradicts)" in out
    assert f"1 of 7 verdict(s) changed between the two runs, 1 of them to one the other run ruled out " \
        f"(details: {report})" in out


def test_course_lectures_twice_in_place_commits_the_second_run_then_the_solutions(tmp_path, monkeypatch, capsys):
    report = tmp_path / "verdicts.json"
    report.write_text(json.dumps({"verdicts": 2, "changed": 0, "contradicted": 0, "failed": []}))
    calls = []
    monkeypatch.setattr(lectures, "run_twice", lambda only, params, *, in_place: calls.append(("twice", in_place))
                        or ([], [], report))
    monkeypatch.setattr(lectures, "run", lambda only, params, *, in_place, folders: calls.append(
        ("run", in_place, list(folders))) or [])
    monkeypatch.setattr(exercises, "build", lambda: calls.append(("exercises",)))
    assert cli.main(["lectures", "--twice", "--in-place"]) == 0
    assert calls == [("twice", True), ("run", True, [lectures.SOLUTIONS]), ("exercises",)]
    assert "0 of 2 verdict(s) changed" in capsys.readouterr().out


def test_titles_show_backticks_as_code():
    assert lectures.inline_code("01 · `tf.function` & <graphs>") == \
        "01 · <code>tf.function</code> &amp; &lt;graphs&gt;"
    assert lectures.inline_code("an odd ` backtick") == "an odd ` backtick"


def _stdout(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def test_explanations_are_read_with_figures_masked_and_verdicts_left_out(tmp_path):
    steady = _comparison(0.5)
    path = _executed(tmp_path / "a.ipynb", [
        [_markdown("The fused loop moved 2.3 GB/s. It is bound by memory.\n\n- " + steady.verdict("prefetch")),
         _stdout("largest share: python (41.2%)\n")],
        [_rendered(steady)],
    ])
    assert lectures.explanations_in(path) == {0: ["The fused loop moved # GB/s.", "It is bound by memory.",
                                                  "largest share: python (#%)"]}


def test_a_print_split_between_outputs_reads_as_the_line_it_prints(tmp_path):
    """Under load the kernel may flush a print's pieces into two outputs; the reader sees one line."""
    one = _executed(tmp_path / "a.ipynb", [[_stdout("this process sees: ['CPU:0']\n")]])
    split = _executed(tmp_path / "b.ipynb", [[_stdout("this process sees:"), _stdout(" ['CPU:0']\n")]])
    assert lectures.explanations_in(split) == lectures.explanations_in(one) == {0: ["this process sees: ['CPU:#']"]}
    apart = _executed(tmp_path / "c.ipynb", [[_stdout("first line.\n"), _markdown("Between."), _stdout("Last.\n")]])
    assert lectures.explanations_in(apart) == {0: ["first line.", "Between.", "Last."]}


def test_cells_that_print_code_are_not_read_as_explanations(tmp_path):
    path = _executed(tmp_path / "a.ipynb", [[_stdout("nonlocal steps, n\n")], [_stdout("It is bound by memory.\n")]])
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source = "print(graphs.autograph_code(collatz))"
    nbformat.write(nb, path)
    assert lectures.explanations_in(path) == {1: ["It is bound by memory."]}
    nb.cells[0].source = "print(inspect.getsource(graphs.small_ops))"
    nbformat.write(nb, path)
    assert lectures.explanations_in(path) == {1: ["It is bound by memory."]}


def test_explanation_changes_count_changed_sentences_and_claims_that_replace_each_other(tmp_path):
    def lecture(name, share, rest, bound):
        return _executed(tmp_path / name, [
            [_markdown(f"The fix took 12.{len(share)} ms. The largest share is {share}.")],
            [_stdout(f"the rest {rest}\n")],
            [_markdown(f"Measured at {len(name)}.5 GB/s. {bound}")],
        ])

    first = lecture("a.ipynb", "python", "shrank", "This run cannot tell what bounds the loop.")
    second = lecture("bb.ipynb", "function", "shrank", "The loop is bound by memory.")
    changes = lectures.explanation_changes(first, second)
    assert [(c.cell, c.first, c.second) for c in changes] == [
        (0, ["The largest share is python."], ["The largest share is function."]),
        (2, ["This run cannot tell what bounds the loop."], ["The loop is bound by memory."])]
    # a claim replaced by another contradicts; a hedge replaced by a claim does not
    assert [(c.changed, c.contradicted) for c in changes] == [(1, 1), (1, 0)]
    assert str(changes[0]).startswith("a.ipynb cell 0: 1 sentence(s) changed, 1 to a different claim\n")
    assert lectures.explanation_changes(first, lecture("c.ipynb", "python", "shrank",
                                                       "This run cannot tell what bounds the loop.")) == []
    assert lectures._sentences_counted(first, second) == 2 + 1 + 1 + 2 + 1  # the union, cell by cell


def test_a_figures_count_and_the_plural_it_takes_are_not_another_claim(tmp_path):
    def lecture(name, text):
        return _executed(tmp_path / name, [[_stdout(text + "\n")]])

    first = lecture("a.ipynb", "Reached 85% after 0.8 s and 1 epoch. Steps from 3:")
    second = lecture("b.ipynb", "Reached 85% after 1.2 s and 2 epochs. Steps from 3: 4, 5")
    assert lectures.explanation_changes(first, second) == []
    assert lectures.explanation_changes(first, lecture("c.ipynb", "Reached 85% after 1 s and 2 generations.")) != []


@pytest.mark.parametrize("hedge", [
    "The reload and the rest are too close in one profile to say which is larger.",
    "This run does not call the gain, so it cannot test the profile's prediction.",
    "This run does not show that waiting costs a call anything.",
    "The medians shrank, a shrink that single overlapping steps leave unsettled.",
    "There was none this machine could measure.",
    "On the edge of a quarter of that floor, so a re-run may place it either side: cache.",
])
def test_a_hedge_replaced_by_a_claim_contradicts_nothing(tmp_path, hedge):
    first = _executed(tmp_path / "a.ipynb", [[_markdown(hedge)]])
    second = _executed(tmp_path / "b.ipynb", [[_markdown("The reload is the larger part of the step.")]])
    [change] = lectures.explanation_changes(first, second)
    assert (change.changed, change.contradicted) == (1, 0)


def test_run_twice_counts_the_explanations_too(tmp_path, monkeypatch):
    lecture = lectures.Lecture("00", "00_x", tmp_path / "00_x.ipynb")
    said = iter(["The rest shrank.", "The rest grew."])

    def fake_run(only, params, *, output_dir, in_place, progress):
        output_dir.mkdir(parents=True)
        path = _executed(output_dir / "00_x.ipynb", [[_markdown(f"Took 1{len(str(output_dir))} ms. {next(said)}")]])
        return [lectures.Outcome(lecture, path, 1.0)]

    monkeypatch.setattr(lectures, "run", fake_run)
    _, changes, path = lectures.run_twice(["00"], output_dir=tmp_path / "twice", progress=False)
    report = json.loads(path.read_text())
    assert changes == [] and report["changed"] == 0
    explained = report["explanations"]
    assert (explained["sentences"], explained["changed"], explained["contradicted"]) == (3, 1, 1)
    assert explained["changes"] == [{"notebook": "00_x.ipynb", "cell": 0, "first": ["The rest shrank."],
                                     "second": ["The rest grew."]}]


def test_course_lectures_twice_prints_the_explanation_count(tmp_path, monkeypatch, capsys):
    report = tmp_path / "verdicts.json"
    report.write_text(json.dumps({"verdicts": 2, "changed": 0, "contradicted": 0, "failed": [],
                                  "explanations": {"sentences": 40, "changed": 3, "contradicted": 1}}))
    monkeypatch.setattr(lectures, "run_twice", lambda only, params, *, in_place: ([], [], report))
    assert cli.main(["lectures", "--twice"]) == 0
    assert "3 of 40 explanation sentence(s) changed, 1 of them to a different claim" in capsys.readouterr().out


def test_a_verdict_from_too_few_rounds_is_read_back_and_contradicts_nothing(tmp_path):
    from course_lib import bench

    few = bench.Comparison([bench.Timing("naive", 1.0, [1.0] * 3, 1), bench.Timing("prefetch", 0.5, [0.5] * 3, 1)],
                           baseline="naive", title="pipeline")
    first = _executed(tmp_path / "a.ipynb", [[_rendered(few), _markdown("In sin(x): " + few.verdict("prefetch"))]])
    assert lectures.verdicts_in(first) == {(0, "pipeline | prefetch | table"): "too few rounds",
                                           (0, "In sin(x): prefetch | naive"): "too few rounds"}
    second = _executed(tmp_path / "b.ipynb", [[_rendered(_comparison(0.5)),
                                               _markdown("In sin(x): " + _comparison(0.5).verdict("prefetch"))]])
    assert [(c.first, c.second, c.contradicts) for c in lectures.verdict_changes(first, second)] == [
        ("too few rounds", "faster", False), ("too few rounds", "faster", False)]


def test_a_sentence_is_judged_against_the_one_that_replaced_it():
    """Lecture 16's cell 35 in two runs: each claim of the first run that the second replaced faces a hedge
    about the same thing; the first run's other claims have no counterpart, so they contradict nothing."""
    first = ["In the fixed trace the rest took # ms, #x shorter: shorter in every traced step than in any step "
             "of the first trace, so the bound's assumption failed.",
             "Of that rest, #% is `function`: running the graph.",
             "Its interval meets the traced steps' range, so this run cannot tell the two apart; it lies above "
             "every step's bound."]
    second = ["Its interval lies above every traced step's ratio: the timed calls gained more; it lies above "
              "every step's bound.",
              "In the fixed trace the rest took # ms, less by the medians, but single steps of the two traces "
              "overlap, so these few steps cannot tell whether the rest changed."]
    assert lectures.replacements(first, second) == [(0, 1), (2, 0)]
    change = lectures.ExplanationChange("16.ipynb", 35, first, second)
    assert (change.changed, change.contradicted) == (3, 0)
    # the same claim replaced by its opposite is counted, however the sentences are ordered
    grew = lectures.ExplanationChange("16.ipynb", 35, first[:2], ["Of that rest, #% is `tracing`: making the graph.",
                                                                 second[1]])
    assert grew.contradicted == 1
    assert lectures.replacements(["The loop is bound by memory."], ["Compiling took most of the run."]) == []


def test_sentences_that_open_with_different_labels_never_replace_each_other():
    """Lecture 03's cell 28 in two runs: each copy's sentence went from a claim to a hedge or back, which
    contradicts nothing; the hedge both share made each more alike to the other copy's sentence."""
    hedge = ("a copy, #x the time for #x the bytes: # GB/s at # MiB; the time grew ##x as fast as the bytes (#% "
             "interval): more than in proportion, but within the factor this course asks, so this run does not call it")
    first = [f"tensor -> NumPy (.numpy()): {hedge}",
             "NumPy -> tensor (tf.constant): a copy, #x the time for #x the bytes: # GB/s at # MiB; the time grew "
             "about in proportion to the bytes"]
    second = ["tensor -> NumPy (.numpy()): a copy, #x the time for #x the bytes: # GB/s at # MiB; the time grew "
              "faster than the bytes, so a rate read at one size does not hold at another",
              f"NumPy -> tensor (tf.constant): {hedge}"]
    assert lectures.subject(first[0]) == "tensor -> NumPy (.numpy())" and lectures.subject(hedge) is None
    assert lectures.replacements(first, second) == [(0, 0), (1, 1)]
    assert lectures.ExplanationChange("03.ipynb", 28, first, second).contradicted == 0
