"""The package's layout holds: the engine (course_lib/evo) imports nothing of the course, no module imports
another module's private name, and course_lib's modules import each other without cycles."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "course_lib"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in module ``name``, at any depth."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, [alias.name for alias in node.names], node.lineno))
    return found


def course_targets(module: str, names: list[str]) -> set[str]:
    """The course_lib modules an import statement loads: the module, and each name that is a submodule."""
    if not module.startswith("course_lib"):
        return set()
    out = {module} if module in MODULES else set()
    out |= {f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES}
    return out


@pytest.mark.parametrize("name", [n for n in MODULES if n.startswith("course_lib.evo")])
def test_the_engine_imports_nothing_of_the_course(name):
    outside = [(module, line) for module, names, line in imports(name)
               if module.startswith("course_lib") and not (module + ".").startswith("course_lib.evo.")
               and not (module == "course_lib" and set(names) <= {"evo"})]
    assert not outside, f"{name} imports the course: " + ", ".join(f"{m} (line {n})" for m, n in outside)


def test_no_module_imports_a_private_name_of_another():
    found = [f"{name}:{line} takes {n} from {module}" for name in MODULES for module, names, line in imports(name)
             for n in names if n.startswith("_") and not n.startswith("__") and module.startswith("course_lib")
             and module != name]
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_course_lib_modules_import_each_other_without_cycles():
    graph = {name: set() for name in MODULES}
    for name in MODULES:
        for module, names, _ in imports(name):
            graph[name] |= course_targets(module, names) - {name}
    # a package's __init__ is loaded by every module inside it: an edge into the package is not a cycle
    # when the importer lives in it, so only edges between distinct modules (not parents) count
    for name in graph:
        graph[name] = {t for t in graph[name] if not (name + ".").startswith(t + ".")}
    cycles, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
