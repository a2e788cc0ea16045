"""The lecture list and the papermill runner behind ``make lectures``.

``run`` executes numbered notebooks with papermill, shows progress, and on failure
names the notebook, the cell that failed and the kernel's log: TensorFlow's C++ log lines
go to ``build/lectures/logs/``, not into the notebooks (``course_lib.kernel``) nor the
terminal, which shows only progress and results; ``write_index`` gathers each lecture's
key results (cells tagged ``key-result``) into one HTML page with the machine it ran on.
``run_twice`` runs lectures twice on one machine and ``verdict_changes`` lists the rendered
verdicts (``bench.Comparison.verdict`` sentences and the verdict column of its tables) that
differ between the two runs, and which of those contradict each other: how often a reader's re-run
would contradict the text. ``explanation_changes`` does the same for every other sentence a cell renders
(Markdown and printed text, figures masked): the mechanism a cell picks from a measurement.
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import nbformat

from course_lib import bench, host

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
BUILD = ROOT / "build" / "lectures"
KERNEL = "python3"  # the interpreter running the runner; `make` installs course_lib into it


@dataclass
class Lecture:
    number: str
    stem: str
    path: Path

    @property
    def title(self) -> str:
        nb = nbformat.read(self.path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                for line in cell.source.splitlines():
                    if line.startswith("# "):
                        return line[2:].strip()
        return self.stem.replace("_", " ")


@dataclass
class Outcome:
    lecture: Lecture
    output: Path
    seconds: float
    error: str | None = None
    params: dict = field(default_factory=dict)
    log: Path | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def lectures(folder: Path = NOTEBOOKS, only: Sequence[str] | None = None) -> list[Lecture]:
    """The numbered notebooks in ``folder``, optionally only those numbered in ``only``."""
    found = [Lecture(p.name[:2], p.stem, p) for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))]
    if only:
        wanted = {str(n).zfill(2) for n in only}
        unknown = wanted - {lec.number for lec in found}
        if unknown:
            have = ", ".join(lec.number for lec in found) or "none"
            raise ValueError(f"no lecture numbered {', '.join(sorted(unknown))} in {folder}; have: {have}")
        found = [lec for lec in found if lec.number in wanted]
    return found


# What the tests run: the fastest setting that still walks every cell (one timed repeat, fewer
# steps where only timed or plotted outputs depend on them). Cells marked # NBVAL_CHECK_OUTPUT
# must print the same at this setting as at the defaults (the tests compare them), so a knob
# that changes a seeded result such a cell prints, such as its GA's generations, stays at its default.
_FASTEST_EXTRA = {
    "06": {"TRAIN_STEPS": "30", "AUTO_JIT": "False"},  # auto-clustering: tests/test_models_gan.py runs it
    "08": {"THREAD_REPEATS": "1", "TRAIN_STEPS": "100"},  # the paths agree on whatever weights they share
    "11": {"EVOFLOW_POP": "200", "EVOFLOW_GENES": "200"},  # EvoFlow's benchmark prints timings only
    "13": {"BENCH_GENERATIONS": "10"},
    "14": {"TTQ_BUDGET": "[1.0]", "KNOB_GENERATIONS": "50", "KNOB_STARTS": "2",  # each GA still compiles
           "TSP_GENERATIONS": "50", "CONTINUOUS_GENERATIONS": "50", "WIDGET_GENERATIONS": "50"},  # and runs
    # the timed policies only (a Keras call per network per step is the slow variant); Gymnasium's
    # episodes and the acrobot's run feed timed or plotted cells only
    "15": {"THROUGHPUT_POP": "8", "GYM_EPISODES": "10", "ACRO_GENERATIONS": "10"},
    "16": {"DATA_STEPS": "4"},  # still past the batches the pipeline made during its warm-up
    # the ZDT runs, the DTLZ race, the selection timing and the widget print no checked output
    "17": {"GENERATIONS": "50", "WIDGET_GENERATIONS": "2", "MANY_GENERATIONS": "10", "SELECTION_POOLS": "(256, 1024)",
           "BESIDE_PYMOO_SEEDS": "2", "BESIDE_PYMOO_SCALE": "0.04"},
}


def fastest(lecture: Lecture) -> dict[str, str]:
    """``-p NAME VALUE`` pairs for the lecture's fastest setting (see ``_FASTEST_EXTRA``)."""
    defaults = parameters_of(lecture.path)
    params = {"REPEATS": "1"} if "REPEATS" in defaults else {}
    params.update(_FASTEST_EXTRA.get(lecture.number, {}))  # a renamed knob fails in coerce_params, loudly
    return params


def fastest_source(lecture: Lecture) -> str:
    """The fastest setting as code to run after the parameters cell, as papermill injects it."""
    values = coerce_params(lecture.path, fastest(lecture))
    return "# the fastest setting (course_lib.lectures.fastest)\n" + "".join(
        f"{name} = {value!r}\n" for name, value in values.items())


def parameters_of(path: Path) -> dict[str, Any]:
    """The names and default values in a notebook's ``parameters`` cell."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            values: dict[str, Any] = {}
            exec(compile(cell.source, f"{path.name}:parameters", "exec"), {}, values)
            return values
    return {}


def coerce_params(path: Path, raw: Mapping[str, str]) -> dict[str, Any]:
    """Turn ``-p NAME VALUE`` strings into the type of the notebook's default for NAME.

    A name the notebook does not declare is an error: papermill would inject it and
    silently change nothing.
    """
    defaults = parameters_of(path)
    out = {}
    for name, value in raw.items():
        if name not in defaults:
            known = ", ".join(defaults) or "none"
            raise ValueError(f"{path.name} has no parameter {name!r}; its parameters are: {known}")
        kind = type(defaults[name])
        if kind is bool:
            out[name] = str(value).lower() in ("1", "true", "yes")
        elif kind in (int, float, str):
            try:
                out[name] = kind(value)
            except ValueError:
                raise ValueError(f"parameter {name!r} of {path.name} takes a {kind.__name__}, "
                                 f"got {value!r}") from None
        else:  # lists, tuples, dicts, None: a Python literal, e.g. -p LENGTHS "[8, 16, 32]"
            try:
                out[name] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise ValueError(f"parameter {name!r} of {path.name} takes a Python literal like "
                                 f"{defaults[name]!r}, got {value!r}") from None
    return out


def _describe_failure(exc: Exception, output: Path) -> str:
    cell = getattr(exc, "exec_count", None)
    index = getattr(exc, "cell_index", None)
    where = f"cell {index}" if index is not None else "a cell"
    if cell is not None:
        where += f" (In [{cell}])"
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    return f"{where}: {ename}: {evalue}  (executed notebook with the traceback: {output})"


def _blanks_error(executed: Path) -> str | None:
    """A rendered sentence that lacks its value fails the lecture like an error would (``rendered_text``)."""
    from course_lib import rendered_text

    found = rendered_text.blanks(executed)
    if not found:
        return None
    return f"{len(found)} rendered value(s) missing: " + "; ".join(str(b) for b in found[:5])


def run(only: Sequence[str] | None = None, params: Mapping[str, str] | None = None, *,
        output_dir: Path = BUILD, in_place: bool = False, progress: bool = True,
        folders: Sequence[Path] = (NOTEBOOKS,)) -> list[Outcome]:
    """Execute lectures with papermill; never raises for a failing notebook, reports it. A notebook that ran
    but rendered a sentence with a value missing (``rendered_text.blanks``) is reported as failed too.

    Each kernel's own output (TensorFlow's C++ log) goes to ``output_dir/logs/FOLDER-STEM.log``.
    """
    import papermill as pm
    from tqdm.auto import tqdm

    from course_lib import kernel

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # the kernels inherit it: no INFO lines in their logs

    todo = [lec for folder in folders for lec in lectures(folder, only)]
    outcomes = []
    bar = tqdm(todo, desc="lectures", unit="nb", disable=not progress)
    for lec in bar:
        bar.set_postfix_str(lec.stem)
        if in_place:
            output = lec.path
        elif lec.path.parent == NOTEBOOKS:
            output = output_dir / lec.path.name
        else:
            output = output_dir / lec.path.parent.name / lec.path.name
        output.parent.mkdir(parents=True, exist_ok=True)
        log = output_dir / "logs" / f"{lec.path.parent.name}-{lec.stem}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        try:
            p = coerce_params(lec.path, params or {})
        except ValueError as exc:  # a bad -p: nothing ran
            outcomes.append(Outcome(lec, output, 0.0, f"bad parameter: {exc}", dict(params or {})))
            bar.write(f"{lec.path.parent.name}/{lec.path.name}: FAILED\n    {outcomes[-1].error}")
            continue
        try:
            with open(log, "wb") as log_file:
                pm.execute_notebook(str(lec.path), str(output), parameters=p, kernel_name=KERNEL,
                                    cwd=str(lec.path.parent), progress_bar=False, log_output=False,
                                    extra_arguments=kernel.ARGUMENTS,
                                    kernel_manager_class=kernel.logged_kernels(log_file))
            error = _blanks_error(output)
        except Exception as exc:  # papermill wraps the cell's error; we name notebook, cell and log
            error = f"{_describe_failure(exc, output)}; kernel log: {log}"
        outcomes.append(Outcome(lec, output, time.perf_counter() - start, error, p, log))
        status = "ok" if error is None else "FAILED"
        bar.write(f"{lec.path.parent.name}/{lec.path.name}: {status} in {outcomes[-1].seconds:.0f} s"
                  + (f"\n    {error}" if error else ""))
    return outcomes


def _machine_quietly(log: Path) -> dict:
    """``host.machine()``, with the C++ log of TensorFlow's import in this process sent to ``log``,
    not the terminal."""
    log.parent.mkdir(parents=True, exist_ok=True)
    terminal = os.dup(2)
    try:
        with open(log, "ab") as fh:
            os.dup2(fh.fileno(), 2)
            try:
                return host.machine()
            finally:
                os.dup2(terminal, 2)
    finally:
        os.close(terminal)


def key_results(path: Path) -> list[str]:
    """HTML fragments of the outputs of cells tagged ``key-result``."""
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        if "key-result" not in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data:
                parts.append(f'<img src="data:image/png;base64,{data["image/png"].strip()}">')
            elif "text/html" in data:
                parts.append(data["text/html"])
            elif "text/plain" in data:
                parts.append(f"<pre>{html.escape(data['text/plain'])}</pre>")
            elif out.get("output_type") == "stream" and out.get("name") == "stdout":  # not TF's log lines
                parts.append(f"<pre>{html.escape(out.get('text', ''))}</pre>")
    return parts


def render_html(notebook: Path) -> Path:
    """The executed notebook as a standalone HTML page beside it, readable in any browser."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nbformat.read(notebook, as_version=4))
    page = notebook.with_suffix(".html")
    page.write_text(body, encoding="utf-8")
    return page


def inline_code(text: str) -> str:
    """``text`` as HTML, each `backticked` span as <code> (titles are Markdown)."""
    return "".join(f"<code>{html.escape(part)}</code>" if i % 2 else html.escape(part)
                   for i, part in enumerate(text.split("`"))) if text.count("`") % 2 == 0 else html.escape(text)


def write_index(outcomes: Sequence[Outcome], output_dir: Path = BUILD) -> Path:
    """One page: each lecture's key results and figure, the machine, links to HTML renderings of the notebooks."""
    info = _machine_quietly(output_dir / "logs" / "runner.log")
    sections = []
    for o in outcomes:
        page = render_html(o.output) if o.output.exists() else o.output
        rel = page.relative_to(output_dir) if page.is_relative_to(output_dir) else page
        status = "" if o.ok else f'<p style="color:#b00"><b>failed</b>: {html.escape(o.error)}</p>'
        body = "\n".join(key_results(o.output)) if o.output.exists() and o.ok else ""
        title = o.lecture.title
        heading = title if title.startswith(o.lecture.number) else f"{o.lecture.number} · {title}"
        sections.append(f'<section><h2>{inline_code(heading)}</h2>'
                        f'<p><a href="{html.escape(str(rel))}">executed notebook</a> · ran in {o.seconds:.0f} s'
                        f'{" with " + html.escape(str(o.params)) if o.params else ""}</p>{status}{body}</section>')
    flags = ", ".join(info.get("cpu_flags", []))
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>TensorFlow performance course: results</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}} table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px}} img{{max-width:100%}} section{{margin-bottom:2em}}</style></head>
<body><h1>TensorFlow performance course: measured on this machine</h1>
<p><b>Machine:</b> {html.escape(host.machine_summary(info))}; CPU features: {html.escape(flags)};
devices: {html.escape(", ".join(info.get("devices", [])))}; generated {time.strftime("%Y-%m-%d %H:%M")}</p>
{"".join(sections)}
</body></html>
"""
    output_dir.mkdir(parents=True, exist_ok=True)
    index = output_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


# -- Verdict stability: the same lectures, twice ------------------------------------------------------

# the sentence Comparison.verdict renders: "A: 1.9x faster than B (95% interval ...", "A against B: no measurable
# difference, 1.02x (95% interval ...", "A against B: too few rounds to judge (3; ..."
_CALLED = re.compile(r"(?P<subject>[^\n]*?): [\d.,]+x (?P<call>faster|slower) than (?P<over>[^\n]*?) \(95% interval")
_NOT_CALLED = re.compile(r"(?P<subject>[^\n]*?) against (?P<over>[^\n:]*?): "
                         r"(?P<call>no measurable difference|a difference too small to call|too close to call|"
                         r"too few rounds)(?:, | to judge \(| \()")
# a row of Comparison's HTML table, whose last column is the call against the baseline
_ROW = re.compile(r"<tr><td>(?P<name>[^<]*)</td>(?:<td>(?:<b>)?[^<]*(?:</b>)?</td>){4,5}"
                  r"<td>(?P<call>faster|slower|no difference|too small to call|too close to call|"
                  r"too few rounds)</td></tr>")
_CAPTION = re.compile(r"<caption>(?P<caption>[^<]*)</caption>")
# a measured figure inside the words before a verdict ("took 59.6 ms against the chain's 60.2 ms"): it changes
# from run to run, while what the sentence judges does not
_FIGURE = re.compile(r"\d[\d.,]*(?:\s?(?:ms|µs|us|ns|s|%|[kMGT]?B/s|GFLOP/s)|x)(?!\w)")


def _judged(m: re.Match) -> str:
    """What a verdict sentence judges, "subject | over": the subject is the part before the verdict after
    the last clause break, and measured figures in either are left out."""
    subject = re.split(r"[.;(*]\s|\*|^- ", m["subject"])[-1].strip(" -*_")
    return _FIGURE.sub("…", f"{subject} | {m['over'].strip()}")


def _verdicts_in_text(text: str) -> dict[str, str]:
    found = {_judged(m): m["call"] for m in _CALLED.finditer(text)}
    calls = {words: call for call, words in bench.CALL_WORDS.items()}
    found.update({_judged(m): calls.get(m["call"], m["call"]) for m in _NOT_CALLED.finditer(text)})
    return found


def _verdicts_in_html(text: str) -> dict[str, str]:
    found = {}
    for table in text.split("<table>")[1:]:
        caption = _CAPTION.search(table)
        for m in _ROW.finditer(table):
            found[f"{html.unescape(caption['caption']) if caption else ''} | {html.unescape(m['name'])} | table"] = \
                m["call"]
    return found


def verdicts_in(notebook: Path) -> dict[tuple[int, str], str]:
    """Every verdict an executed notebook renders: (cell index, what it judges) -> "faster", "slower" or
    "no difference". Read from Markdown, printed text and the verdict column of comparison tables."""
    nb = nbformat.read(notebook, as_version=4)
    out: dict[tuple[int, str], str] = {}
    for i, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            found = {}
            if "text/html" in data:
                found.update(_verdicts_in_html(data["text/html"]))
            for kind in ("text/markdown", "text/plain") if "text/markdown" in data else ("text/plain",):
                if kind in data and not ("text/html" in data and kind == "text/plain"):
                    found.update(_verdicts_in_text(data[kind]))
            if output.get("output_type") == "stream":
                found.update(_verdicts_in_text(output.get("text", "")))
            out.update({(i, key): call for key, call in found.items()})
    return out


@dataclass
class VerdictChange:
    """One verdict that differs between two runs of a lecture (None: the run rendered no such verdict)."""

    notebook: str
    cell: int
    judged: str
    first: str | None
    second: str | None

    @property
    def contradicts(self) -> bool:
        """Whether the second run says what the first ruled out: a difference called in one run and "no
        difference" or "too small to call" (or the other direction) in the other. A move between those two
        (both say the difference is under the least floor), to or from "too close to call", which says a re-run
        may fall either way, or a verdict one run did not render, contradicts nothing."""
        pair = {self.first, self.second}
        return pair <= {"faster", "slower", *bench.NEGLIGIBLE} and pair != set(bench.NEGLIGIBLE)

    def __str__(self) -> str:
        return (f"{self.notebook} cell {self.cell}: {self.judged}: "
                f"{self.first or '(absent)'} -> {self.second or '(absent)'}"
                + (" (contradicts)" if self.contradicts else ""))


def verdict_changes(first: Path, second: Path) -> list[VerdictChange]:
    """The verdicts that differ between two executed copies of one notebook, in cell order."""
    a, b = verdicts_in(first), verdicts_in(second)
    return [VerdictChange(Path(first).name, cell, judged, a.get((cell, judged)), b.get((cell, judged)))
            for cell, judged in sorted(set(a) | set(b)) if a.get((cell, judged)) != b.get((cell, judged))]


# -- Explanation stability: every other sentence a cell renders, twice -----------------------------------------

# a figure, masked before two runs' sentences are compared: what a sentence says must hold, not its digits
_NUMBER = re.compile(r"[-+−]?\d[\d,.]*(?:e[-+]?\d+)?")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*_(\"'])")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# a sentence that says the run could not tell: whatever a re-run finds, it contradicts nothing
_HEDGE = re.compile(r"too close\b|too few rounds|too small to call|no measurable|cannot (?:tell|say|test)|"
                    r"could not (?:tell|say|measure)|cannot be told apart|could (?:measure|call)|"
                    r"does not (?:call|show)|unsettled|none this machine could measure|either side", re.IGNORECASE)
# figures that run together ("from 3: 4, 5") and the plural a figure takes ("1 epoch", "2 epochs"): a re-run's
# other count is not another claim
_FIGURES = re.compile(r"#(?:[\s,:;–-]*#)*[\s,:;]*(?=$|[\s)])")
_PLURAL = re.compile(r"(# \w{3,}?)s\b")


def _sentences(text: str) -> list[str]:
    """The sentences of rendered prose, figures masked ("#") and spaces collapsed; list markers, lines without
    words and verdict sentences (``verdicts_in`` counts those) left out."""
    out = []
    for line in text.splitlines():
        for sentence in _SENTENCE_BREAK.split(_LIST_MARK.sub("", line).strip()):
            if not re.search(r"[A-Za-z]{2}", sentence) or _verdicts_in_text(sentence):
                continue
            masked = " ".join(_FIGURES.sub("# ", _NUMBER.sub("#", sentence)).split())
            out.append(_PLURAL.sub(r"\1", re.sub(r"# (?=[),.;:])", "#", masked)))
    return out


# a cell that prints code (a variant's source, AutoGraph's generated code): what it renders is code, not prose
_PRINTS_CODE = re.compile(r"\b(?:getsource|autograph_code|code_of|source)\(")


def explanations_in(notebook: Path) -> dict[int, list[str]]:
    """Every explanation an executed notebook renders, by cell: the sentences of its Markdown outputs and of
    the text it prints, figures masked, verdicts left out. A sentence that picks a mechanism from a
    measurement ("bound by memory", "the largest share is python") changes here when a re-run picks another.
    Cells that print code are left out: generated code may order its lines differently in a re-run, and
    code claims nothing."""
    from course_lib import rendered_text

    nb = nbformat.read(notebook, as_version=4)
    out = {i: [s for _, text in rendered_text.rendered(cell) for s in _sentences(text)]
           for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and not _PRINTS_CODE.search(cell.source)}
    return {i: sentences for i, sentences in out.items() if sentences}


@dataclass
class ExplanationChange:
    """A cell whose rendered sentences differ between two runs: those only the first run rendered, those only the
    second did (figures masked, so only what they say counts)."""

    notebook: str
    cell: int
    first: list[str]
    second: list[str]

    @property
    def changed(self) -> int:
        """How many sentences changed: each one the other run replaced or lacks."""
        return max(len(self.first), len(self.second))

    @property
    def contradicted(self) -> int:
        """How many of them one run replaced with a different claim: a sentence that is no hedge ("cannot
        tell", "too close to call") on each side. A claim replaced by a hedge, or the other way, contradicts
        nothing: the hedge says a re-run may find either. A sentence is replaced by its counterpart, the
        other run's most alike (``replacements``); of those with none, the fewer claims of either run count."""
        def claim(sentence: str) -> bool:
            return not _HEDGE.search(sentence)

        pairs = replacements(self.first, self.second)
        paired_first, paired_second = {a for a, _ in pairs}, {b for _, b in pairs}
        return (sum(claim(self.first[a]) and claim(self.second[b]) for a, b in pairs)
                + min(sum(claim(s) for i, s in enumerate(self.first) if i not in paired_first),
                      sum(claim(s) for i, s in enumerate(self.second) if i not in paired_second)))

    def __str__(self) -> str:
        lines = [f"{self.notebook} cell {self.cell}: {self.changed} sentence(s) changed"
                 + (f", {self.contradicted} to a different claim" if self.contradicted else "")]
        lines += [f"    first:  {s}" for s in self.first] + [f"    second: {s}" for s in self.second]
        return "\n".join(lines)


# how alike two sentences' words must be (difflib's ratio) for one to be read as the other's replacement: a
# re-run's sentence about the same thing keeps most of its words ("Its interval meets ..." -> "Its interval
# lies above ...", 0.4 in lecture 16), sentences about other things share a few (0.2 at most there)
REPLACEMENT_SIMILARITY = 0.35


# a sentence led by a short label and a colon ("tensor -> NumPy (.numpy()): a copy, ...") is about that label
SUBJECT_WORDS = 8


def subject(sentence: str) -> str | None:
    """The label a sentence opens with, before its first colon, where it has at most ``SUBJECT_WORDS`` words;
    None for a sentence that opens otherwise."""
    label, colon, _ = sentence.partition(": ")
    return label if colon and len(label.split()) <= SUBJECT_WORDS else None


def replacements(first: list[str], second: list[str]) -> list[tuple[int, int]]:
    """Which sentence of ``second`` replaced which of ``first``, as index pairs: the most alike pairs first
    (by their words), each sentence in one pair at most, none below ``REPLACEMENT_SIMILARITY``, and never two
    that open with different labels (``subject``): a hedge they share can make two sentences about two copies
    more alike than each is to its own re-run."""
    from difflib import SequenceMatcher

    def about_the_same(a: str, b: str) -> bool:
        return None in (subject(a), subject(b)) or subject(a) == subject(b)

    scored = sorted(((SequenceMatcher(None, a.split(), b.split()).ratio(), i, j)
                     for i, a in enumerate(first) for j, b in enumerate(second) if about_the_same(a, b)),
                    reverse=True)
    pairs: list[tuple[int, int]] = []
    for ratio, i, j in scored:
        if ratio >= REPLACEMENT_SIMILARITY and all(i != a and j != b for a, b in pairs):
            pairs.append((i, j))
    return sorted(pairs)


def explanation_changes(first: Path, second: Path) -> list[ExplanationChange]:
    """The cells whose explanations differ between two executed copies of one notebook, in cell order."""
    from collections import Counter

    a, b = explanations_in(first), explanations_in(second)
    out = []
    for cell in sorted(set(a) | set(b)):
        one, two = Counter(a.get(cell, [])), Counter(b.get(cell, []))
        if one != two:
            out.append(ExplanationChange(Path(first).name, cell, list((one - two).elements()),
                                         list((two - one).elements())))
    return out


def _sentences_counted(first: Path, second: Path) -> int:
    """How many sentences two runs of a notebook render, each counted once where both render it."""
    from collections import Counter

    a, b = explanations_in(first), explanations_in(second)
    return sum(sum((Counter(a.get(cell, [])) | Counter(b.get(cell, []))).values()) for cell in set(a) | set(b))


def run_twice(only: Sequence[str] | None = None, params: Mapping[str, str] | None = None, *,
              output_dir: Path = BUILD / "twice", in_place: bool = False, progress: bool = True
              ) -> tuple[list[Outcome], list[VerdictChange], Path]:
    """Run the lectures twice on this machine (``output_dir/run-1``, ``run-2``) and compare every verdict they
    render, and every other sentence (``explanation_changes``); writes ``output_dir/verdicts.json`` (how many
    changed, how many of those contradict, and each change; the sentences under ``explanations``).
    With ``in_place`` the second run writes over the lectures themselves, so the notebooks committed are the
    second of the two runs compared.
    Returns both runs' outcomes, the changes and that file's path; a lecture that failed in either run is
    left out of the comparison (its outcome says why)."""
    runs = [run(only, params, output_dir=output_dir / f"run-{i}", in_place=in_place and i == 2, progress=progress)
            for i in (1, 2)]
    changes, counted, explained, sentences = [], 0, [], 0
    for one, two in zip(*runs):
        if one.ok and two.ok:
            counted += len(set(verdicts_in(one.output)) | set(verdicts_in(two.output)))
            changes += verdict_changes(one.output, two.output)
            sentences += _sentences_counted(one.output, two.output)
            explained += explanation_changes(one.output, two.output)
    report = {"verdicts": counted, "changed": len(changes),
              "contradicted": sum(c.contradicts for c in changes), "lectures": [o.lecture.stem for o in runs[0]],
              "failed": [o.lecture.stem for o in runs[0] + runs[1] if not o.ok],
              "changes": [vars(c) for c in changes],
              "explanations": {"sentences": sentences, "changed": sum(c.changed for c in explained),
                               "contradicted": sum(c.contradicted for c in explained),
                               "changes": [vars(c) for c in explained]}}
    path = output_dir / "verdicts.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    return runs[0] + runs[1], changes, path
