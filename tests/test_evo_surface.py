"""The engine's declared face: code outside ``course_lib/evo`` and the notebooks a learner copies from use
only what ``evo.__all__`` and ``evo.EXTENSION_MODULES`` declare, and docs/engine.md's "The public surface"
lists exactly those names."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from course_lib import evo

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_lib"
DECLARED = set(evo.__all__) | set(evo.EXTENSION_MODULES)
MODULES = {name for name in evo.__all__ if name[0].islower()}  # modules whose submodules are theirs too


def allowed(path: str) -> bool:
    """Whether ``path`` (after ``course_lib.evo.``; "" for the package) is declared."""
    return path == "" or path in DECLARED or path.split(".")[0] in MODULES


def undeclared_imports(source: str) -> list[str]:
    """What ``source`` imports from the engine beyond its declared face."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("course_lib.evo"):
            path = node.module.removeprefix("course_lib.evo").lstrip(".")
            names = [f"{path}.{a.name}".lstrip(".") for a in node.names] if path == "" else [path]
            bad += [name for name in names if not allowed(name)]
        elif isinstance(node, ast.Import):
            bad += [a.name.removeprefix("course_lib.evo.") for a in node.names if a.name.startswith("course_lib.evo.")
                    and not allowed(a.name.removeprefix("course_lib.evo."))]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "evo" \
                and node.attr[0].islower() and node.attr not in DECLARED:
            bad.append(node.attr)
    return bad


def test_the_reader_finds_what_it_checks():
    source = ("from course_lib.evo import engine, rng\nfrom course_lib.evo.ops import permutation\n"
              "import course_lib.evo.executors\nx = evo.bitpack.pack(y)\nz = evo.Model")
    assert undeclared_imports(source) == ["engine", "executors", "bitpack"]
    assert not undeclared_imports("from course_lib import evo\nfrom course_lib.evo.neuro import mlp\n"
                                  "evo.inspect.program")


def test_nothing_outside_the_engine_imports_its_insides():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "evo") in path.parents:
            continue
        bad = undeclared_imports(path.read_text(encoding="utf-8"))
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert not found, f"modules outside course_lib/evo import what the engine does not declare: {found}"


def notebook_code(path: Path) -> str:
    """A notebook's code cells as one Python source, IPython's ``%`` and ``!`` lines left out."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = [line for c in cells if c["cell_type"] == "code" for line in "".join(c["source"]).splitlines()]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def test_no_notebook_reaches_into_the_engine():
    found = {}
    for path in sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("exercises/*.ipynb"),
                        *ROOT.glob("solutions/*.ipynb")]):
        bad = undeclared_imports(notebook_code(path))
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert not found, f"notebooks use what the engine does not declare: {found}"


def test_the_guide_lists_the_declared_face():
    guide = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    section = guide.split("## The public surface", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`evo\.([a-z_.0-9]+|[A-Z]\w+)`", section))
    assert listed == DECLARED, (f"docs/engine.md's public surface lists {sorted(listed - DECLARED)} beyond the "
                                f"declared face and leaves out {sorted(DECLARED - listed)}")
