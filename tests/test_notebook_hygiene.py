"""What a reader sees in the committed notebooks: no unexplained log noise, no machine's paths, the widget.

Every committed output (notebooks/, solutions/, exercises/) is read, not executed:
- no TensorFlow log line: the C++ (absl) format ``E0000 00:00:1795220252.080414  14055 file.cc:52] ...``,
  absl's "before InitializeLog" banner, or Python's ``WARNING:tensorflow:`` format. The course's kernels
  send TensorFlow's C++ log to the kernel's log file (course_lib.kernel); a lecture that wants to show a
  log line captures it and shows it as data it explains (e.g. graphs.captured_tf_warnings);
- no file-system path of the machine that executed it (home and work folders, temporary folders,
  site-packages, this checkout);
- no progress bar frozen short of its end: a tqdm bar whose last frame reads ``n/total`` with ``n < total``
  (the text a widget bar leaves behind when it was displayed before it ran), or a saved progress widget
  whose value stops short of its maximum;
- no project history in markdown cells: a lecture explains the mechanism and the measurement on the
  reader's machine, not how the code changed ("used to", "this round", "before this", an issue number,
  a commit hash); a compared old implementation is a named variant measured in the same run;
- every code cell that draws a chart (``result.plot()``, ``plotting.*``, ``plt.subplots``, a profile
  timeline) holds the chart as an image: a notebook executed where matplotlib drew off-screen (a shell's
  ``MPLBACKEND=Agg`` reaching the kernel) keeps the prose about a chart and loses the chart;
- no sentence says that nothing was measured ("no measurable difference", "cannot be told apart", "too little
  to measure") beside a ratio's interval that excludes 1: such an interval measured a difference, and the
  words must say so ("a difference too small to call"), not that there was none;
- a lecture *compares variants* when its code calls ``bench.compare`` or its outputs show a speedup
  table (the one ``bench.Comparison`` renders); such a lecture must have built and displayed a live
  ``SpeedupWidget`` when it was executed (its saved widget state holds the widget's CSS class).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from course_lib.speedup_widget import CSS_CLASS

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = sorted(p for folder in ("notebooks", "solutions", "exercises")
                   for p in (ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

TF_LOG = re.compile(
    r"^[IWEF]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w./-]+:\d+\]"       # C++/absl (and absl-py) log lines
    r"|All log messages before absl::InitializeLog\(\) is called"  # absl's start-up banner
    r"|^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):(?:tensorflow|absl):",  # Python logging's default format
    re.MULTILINE)
MACHINE_PATH = re.compile(
    r"(?<![\w.~-])/(?:work|root|home|Users|tmp|private/var|var/folders|opt/conda)/"
    r"|site-packages|dist-packages|\b[A-Za-z]:\\\\(?:Users|Windows)\\\\"
    + "|" + re.escape(str(ROOT)))
BAR_FRAME = re.compile(r"\d{1,3}%\|[^|\n\r]*\|\s*(\d+)/(\d+)")  # tqdm's "  0%|     | 0/100 [...]"
PROGRESS_MODELS = ("FloatProgressModel", "IntProgressModel")
HISTORY = re.compile(
    r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bwas )(?<!\bwere )(?<!\bbeing )\bused to\b"  # habit
    r"|\b(?:this|last|previous|earlier) round\b|\bbefore (?:this|they were)\b|\bwere rewritten\b"
    r"|\bissue #?\d+|(?<![\w&])#\d{2,}\b"                                          # issue numbers
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b",                           # commit hashes
    re.IGNORECASE)
DRAWS = re.compile(r"\.plot\(|\bplot_\w+\(|\bplotting\.\w+\(|\bplt\.(?:subplots|figure|plot)\(|\btimelines?\(")
SPEEDUP_TABLE = "<th>speedup</th>"  # bench.Comparison._repr_html_'s last column
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# words that say a run measured nothing, and the interval that follows them in the same sentence
NOTHING_MEASURED = re.compile(r"no measurable difference|(?:cannot|could not|can't) be told apart|"
                              r"too little to measure|nothing measurable|changed nothing", re.IGNORECASE)
INTERVAL = re.compile(r"interval (\d[\d.,]*)[–-](\d[\d.,]*)x")
SENTENCE_END = re.compile(r"(?<![\d.])\.(?:\s|$)|\n")


def output_texts(nb) -> list[tuple[int, str]]:
    """(cell index, text) for every textual output of every code cell; images skipped."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                found.append((index, out.text))
            elif out.output_type == "error":
                found.append((index, ANSI.sub("", "\n".join([out.ename, out.evalue, *out.traceback]))))
            else:
                for mime, value in out.get("data", {}).items():
                    if mime.startswith("text/") or mime.endswith("json"):
                        found.append((index, value if isinstance(value, str) else json.dumps(value)))
    return found


def offences(nb, pattern: re.Pattern) -> list[str]:
    bad = []
    for index, text in output_texts(nb):
        for match in pattern.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            line_end = text.find("\n", match.end())
            bad.append(f"cell {index}: {text[line_start:line_end if line_end >= 0 else None][:160]!r}")
    return bad


def frozen_bars(nb) -> list[str]:
    """Progress bars a committed notebook shows stopped short of their end: the last tqdm frame of each
    textual output (a text bar redraws itself after carriage returns; a widget bar's text/plain is the
    frame it showed when displayed), and saved progress widgets whose value is below their maximum."""
    bad = []
    for index, text in output_texts(nb):
        frames = [frame for frame in re.split(r"[\r\n]", text) if BAR_FRAME.search(frame)]
        if frames:
            done, total = map(int, BAR_FRAME.search(frames[-1]).groups())
            if done < total:
                bad.append(f"cell {index}: {frames[-1].strip()[:120]!r}")
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for model_id, model in state.items():
        values = model.get("state", {})
        if model.get("model_name") in PROGRESS_MODELS and values.get("value", 0) < values.get("max", 100):
            bad.append(f"widget {model_id}: {values.get('value')} of {values.get('max')}")
    return bad


def history_words(nb) -> list[str]:
    bad = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for match in HISTORY.finditer(cell.source):
                around = cell.source[max(0, match.start() - 50):match.end() + 30].replace("\n", " ")
                bad.append(f"cell {index}: {match.group(0)!r} in ...{around}...")
    return bad


def nothing_beside_a_difference(nb) -> list[str]:
    """Sentences that say nothing was measured while the interval they give (the first after the words, in
    the same sentence) lies clear of 1."""
    bad = []
    for index, text in output_texts(nb):
        for match in NOTHING_MEASURED.finditer(text):
            end = SENTENCE_END.search(text, match.end())
            interval = INTERVAL.search(text, match.end(), end.start() if end else len(text))
            if interval:
                lo, hi = (float(x.replace(",", "")) for x in interval.groups())
                if lo > 1 or hi < 1:
                    bad.append(f"cell {index}: {text[match.start():interval.end() + 1]!r}")
    return bad


def missing_charts(nb) -> list[str]:
    """Code cells that draw a chart but hold no image output."""
    return [f"cell {index}: {DRAWS.search(cell.source).group(0)}..." for index, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and DRAWS.search(cell.source)
            and not any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))]


def compares_variants(nb) -> bool:
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return "bench.compare(" in code or any(SPEEDUP_TABLE in text for _, text in output_texts(nb))


def shows_speedup_widget(nb) -> bool:
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return any(CSS_CLASS in model.get("state", {}).get("_dom_classes", []) for model in state.values())


def test_the_checks_catch_what_they_claim_to():
    """Each detector against real lines from earlier committed outputs, and against harmless text."""
    logs = ["E0000 00:00:1795220252.080414   14055 cuda_platform.cc:52] failed call to cuInit: INTERNAL",
            "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
            "W0000 00:00:1795220305.626220   17364 dataset.cc:997] Input of GeneratorDatasetOp::Dataset",
            "I1122 20:41:07.123456 140234 xla_bridge.py:884] Unable to initialize backend",
            "WARNING:tensorflow:5 out of the last 5 calls to <function f> triggered tf.function retracing"]
    for line in logs:
        assert TF_LOG.search("result\n" + line + "\n"), line
    for text in ["E = 0.5 J", "W1 weights: 3/4", "warning: retracing costs 173x (explained above)"]:
        assert not TF_LOG.search(text), text
    paths = ['File "/work/main/.venv/lib/python3.11/site-packages/ipykernel_launcher.py", line 18',
             "saved to /home/ada/course/build/x.json", "/tmp/ipykernel_123/456.py", str(ROOT / "build")]
    for text in paths:
        assert MACHINE_PATH.search(text), text
    for text in ["build/lectures/index.html", "/device:CPU:0", "/physical_device:GPU:0", "a 1/2 split"]:
        assert not MACHINE_PATH.search(text), text

    frozen = nbformat.v4.new_output("display_data", {
        "application/vnd.jupyter.widget-view+json": {"model_id": "m"},
        "text/plain": "evolve:   0%|          | 0/100 [00:00<?, ?gen/s]"})
    redrawn = nbformat.v4.new_output("stream", name="stderr",
                                     text="evolve:   0%|   | 0/100\revolve: 100%|###| 100/100 [00:01<00:00]\n")
    stopped = nbformat.v4.new_output("stream", name="stderr", text="evolve:  40%|#  | 40/100\n")
    bars = nbformat.v4.new_notebook()
    bars.cells = [nbformat.v4.new_code_cell("run()", outputs=[out]) for out in (frozen, redrawn, stopped)]
    assert [line.split(":")[0] for line in frozen_bars(bars)] == ["cell 0", "cell 2"]
    bars.cells = bars.cells[1:2]
    bars.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "p": {"model_name": "FloatProgressModel", "state": {"value": 0.0, "max": 100.0}},
        "q": {"model_name": "IntProgressModel", "state": {"value": 2, "max": 2}}}}}
    assert frozen_bars(bars) == ["widget p: 0.0 of 100.0"]

    story = ["The op used to sort its keys.", "It is what this round changed.", "before this change",
             "as before they were rewritten", "fixed in issue 14", "see #42", "since commit 96fd5e0",
             "see a7bd216f"]
    plain = ["The seed is used to draw the noise.", "keys are used to sort", "a 1/2 split", "colour #fff",
             "seed 1234567", "the facade 0xdeadbe", "round to 3 digits", "issues of memory bandwidth"]
    for text in story:
        assert history_words(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])), text
    for text in plain:
        assert not history_words(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])), text

    said = ["A against B: no measurable difference, 1.04x (95% interval 1.03–1.05x)",
            "- A against B: no measurable difference, 0.96x (95% interval 0.955–0.98x)\n- C: 2x faster than B",
            "the two cannot be told apart, 0.92x (95% interval 0.685–0.961x).",
            "splitting changed nothing here: 0.8x (95% interval 0.728–0.886x)"]
    fine = ["A against B: no measurable difference, 1.02x (95% interval 0.97–1.03x)",
            "A against B: a difference too small to call, 1.04x (95% interval 1.03–1.05x)",
            "no measurable difference here. The next pair: 2.1x faster (95% interval 1.9–2.3x)",
            "the runs cannot be told apart. C: 1.5x faster (95% interval 1.2–1.8x)"]
    for texts, expected in ((said, 1), (fine, 0)):
        for text in texts:
            out = nbformat.v4.new_output("stream", name="stdout", text=text + "\n")
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[out])])
            assert len(nothing_beside_a_difference(nb)) == expected, text

    image = nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
    charts = nbformat.v4.new_notebook()
    charts.cells = [nbformat.v4.new_code_cell(src, outputs=outs) for src, outs in [
        ("result.plot();", [image]), ("result.plot();", []), ("plotting.fitness_history(h);", []),
        ("fig, ax = plt.subplots(1, 2)", []), ("print(result)", []), ("plt.close(fig)", [])]]
    assert [line.split(":")[0] for line in missing_charts(charts)] == ["cell 1", "cell 2", "cell 3"]

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("r = bench.compare({'a': f, 'b': g})")]
    assert compares_variants(nb) and not shows_speedup_widget(nb)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "m": {"model_name": "VBoxModel", "state": {"_dom_classes": [CSS_CLASS]}}}}}
    assert shows_speedup_widget(nb)
    table = nbformat.v4.new_output("display_data", {"text/html": f"<table><tr>{SPEEDUP_TABLE}</tr></table>"})
    quiet = nbformat.v4.new_notebook()
    quiet.cells = [nbformat.v4.new_code_cell("helper()", outputs=[table])]
    assert compares_variants(quiet)


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.name}/{p.stem}" for p in COMMITTED])
def test_committed_outputs_show_no_tensorflow_log_and_no_machine_path(path):
    nb = nbformat.read(path, as_version=4)
    logs, paths = offences(nb, TF_LOG), offences(nb, MACHINE_PATH)
    assert not logs, (f"{path.name} shows TensorFlow log lines (re-execute it with the course runner, which "
                      f"keeps them in build/lectures/logs/):\n" + "\n".join(logs))
    assert not paths, f"{path.name} shows paths of the machine that executed it:\n" + "\n".join(paths)


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.name}/{p.stem}" for p in COMMITTED])
def test_committed_outputs_show_no_frozen_progress_bar(path):
    bars = frozen_bars(nbformat.read(path, as_version=4))
    assert not bars, (f"{path.name} shows a progress bar stopped short of its end (a widget bar displayed "
                      "before its run keeps that first frame as its text; show the finished bar or none):\n"
                      + "\n".join(bars))


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.name}/{p.stem}" for p in COMMITTED])
def test_markdown_narrates_no_project_history(path):
    found = history_words(nbformat.read(path, as_version=4))
    assert not found, (f"{path.name} narrates the project's history in markdown; teach the mechanism and the "
                       "measurement (an old implementation is a named variant measured in the same run), and "
                       "leave history to the git log:\n" + "\n".join(found))


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.name}/{p.stem}" for p in COMMITTED])
def test_no_sentence_says_nothing_was_measured_beside_an_interval_clear_of_1(path):
    found = nothing_beside_a_difference(nbformat.read(path, as_version=4))
    assert not found, (f"{path.name} says a run measured no difference beside an interval that excludes 1; "
                       "render the words from the verdict (bench.Comparison.uncalled / judged):\n" + "\n".join(found))


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_a_lecture_that_compares_variants_uses_the_widget(path):
    nb = nbformat.read(path, as_version=4)
    missing = compares_variants(nb) and not shows_speedup_widget(nb)
    assert not missing, (f"{path.name} compares variants (bench.compare or a speedup table) "
                         "but displayed no SpeedupWidget when it was executed")


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.name}/{p.stem}" for p in COMMITTED])
def test_every_chart_drawn_is_saved_in_the_notebook(path):
    missing = missing_charts(nbformat.read(path, as_version=4))
    assert not missing, (f"{path.name} draws charts that its committed outputs do not hold (was it executed "
                         "with MPLBACKEND=Agg? re-execute it with `course lectures --in-place`):\n"
                         + "\n".join(missing))
