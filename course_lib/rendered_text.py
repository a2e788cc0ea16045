"""The text an executed notebook rendered, read for values that never got filled in.

A lecture's sentences are rendered from its measurements, so a value that is missing on some machine
(no kernel found, an empty list, a division by zero) shows up as a blank or a placeholder in the text: "the
graph's on , the executor's pool", "nanx faster", "the leader is None", a ``{name}`` left unformatted.
``blanks`` reads what a reader sees (markdown outputs and printed text, not code or tables of data) and
names each such spot; ``course lectures`` runs it after every execution and the tests over every
committed notebook.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

# Words after which a value belongs; followed straight by punctuation, the value is missing.
_BEFORE_VALUE = r"(?:on|of|by|at|to|is|are|was|were|from|than|took|named|called|reads|leader)"
_EMPTY_VALUE = re.compile(rf"(?<![\w`.])(?:{_BEFORE_VALUE})[ \t]+[,.;)](?=\s|$)", re.MULTILINE)
_FIGURE_MISSING = re.compile(r"(?<![\w.])[-+]?(?:nan|inf)(?:x\b|%| ?[mµun]?s\b| ?(?:GB|MB|kB)/s\b)", re.IGNORECASE)
# Markdown is prose through and through: an empty code span, a bare nan, None or {placeholder} is a gap.
PROSE_CHECKS = {
    "an empty value": re.compile(_EMPTY_VALUE.pattern + r"|,[ \t]*,", re.MULTILINE),
    "an empty name": re.compile(r"``|\*\*\*\*|\[\]\("),
    "a figure missing": _FIGURE_MISSING,
    "nan where a figure belongs": re.compile(r"(?<![\w.`])[-+]?nan(?![\w`])", re.IGNORECASE),
    "None where a value belongs": re.compile(r"(?<![\w`'\"])None(?![\w`'\"])"),
    "an unfilled placeholder": re.compile(r"\{[A-Za-z_][\w.]*(?:\[[^\]]*\])*(?:![rsa])?(?::[^{}]*)?\}"),
}
# Printed text mixes sentences with reprs, tables and source code: only gaps no printed value makes.
PRINTED_CHECKS = {"an empty value": _EMPTY_VALUE, "a figure missing": _FIGURE_MISSING}
_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
_MARKUP = re.compile(r"<[^>]+>")  # HTML inside a markdown output is not prose


@dataclass(frozen=True)
class Blank:
    """One spot where a rendered sentence lacks its value: which cell, what is wrong, the text around it."""

    notebook: str
    cell: int
    problem: str
    context: str

    def __str__(self) -> str:
        return f"{self.notebook} cell {self.cell}: {self.problem}: ...{self.context}..."


def rendered(cell) -> list[tuple[str, str]]:
    """(kind, text) for what a code cell's outputs show a reader: ``"markdown"``, or ``"printed"`` (stdout).
    Stdout outputs in a row are one text, as a reader sees them: how a print's pieces were split between
    outputs depends on when the kernel flushed."""
    texts: list[tuple[str, str]] = []
    printing = False  # whether the output before was stdout too
    for out in cell.get("outputs", []):
        stdout = out.get("output_type") == "stream" and out.get("name") == "stdout"
        if stdout and printing:
            texts[-1] = ("printed", texts[-1][1] + out.get("text", ""))
        elif stdout:
            texts.append(("printed", out.get("text", "")))
        elif out.get("output_type") in ("display_data", "execute_result") and "text/markdown" in out.get("data", {}):
            texts.append(("markdown", out["data"]["text/markdown"]))
        printing = stdout
    return texts


def blanks_in_text(text: str, kind: str = "markdown") -> list[tuple[str, str]]:
    """(problem, context) for every missing value in one rendered text; in markdown, code spans and markup
    are left out (a named value stays a word, an empty span stays empty)."""
    if kind == "markdown":
        text = _MARKUP.sub(" ", _CODE.sub(lambda m: "`x`" if m.group(0).strip("`") else m.group(0), text))
    found = []
    for problem, pattern in (PROSE_CHECKS if kind == "markdown" else PRINTED_CHECKS).items():
        for m in pattern.finditer(text):
            found.append((problem, text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")))
    if kind == "markdown" and text.count("{") != text.count("}"):
        found.append(("unmatched braces", text[:80].replace("\n", " ")))
    return found


def blanks(notebook: str | Path) -> list[Blank]:
    """Every missing value in what an executed notebook renders, in cell order."""
    nb = nbformat.read(str(notebook), as_version=4)
    name = f"{Path(notebook).parent.name}/{Path(notebook).name}"
    return [Blank(name, i, problem, context)
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for kind, text in rendered(cell) for problem, context in blanks_in_text(text, kind)]
