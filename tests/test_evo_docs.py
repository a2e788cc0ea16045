"""docs/engine.md names only what exists: every ``evo.<module>.<Name>`` it writes, and every
``<module>.<name>`` of an engine module in backticks, resolves to an attribute of the engine."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

from course_lib import evo

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "engine.md"
MODULES = {m.name for m in pkgutil.iter_modules(evo.__path__)}
# engine modules whose names the guide also gives to variables (``model.compile``, ``result.history``): written
# bare, only their classes (``selection.Tournament``) are read as the module's
VARIABLES = {"model", "result", "selection", "population", "fitness", "callbacks"}
QUALIFIED = re.compile(r"\bevo\.((?:[a-z_0-9]+\.)*[A-Za-z_][A-Za-z_0-9]*)")
IN_CODE = re.compile(r"`(?:engine\.evolve\()?([a-z_0-9]+(?:\.[A-Za-z_][A-Za-z_0-9]*)+)")


def resolve(dotted: str):
    """The engine's object named ``dotted`` (after ``evo.``), importing submodules on the way."""
    obj = evo
    for part in dotted.split("."):
        if not hasattr(obj, part):
            importlib.import_module(f"{obj.__name__}.{part}")
        obj = getattr(obj, part)
    return obj


def named_in(text: str) -> set[str]:
    names = set(QUALIFIED.findall(text))
    for name in IN_CODE.findall(text):
        first, last = name.split(".")[0], name.split(".")[-1]
        if first in MODULES and (first not in VARIABLES or last[0].isupper()):
            names.add(name)
    return names


def test_the_reader_finds_the_names_it_checks():
    text = ("`evo.ops.TwoOpt`, `sharding.Replicated(strategy)`, `distributed.Policy`, `model.compile`, "
            "`selection.Tournament`, `tf.function`")
    # distributed is no engine module; model is a variable here
    assert named_in(text) == {"ops.TwoOpt", "sharding.Replicated", "selection.Tournament"}


def test_every_engine_name_the_guide_writes_resolves():
    missing = []
    for name in sorted(named_in(GUIDE.read_text(encoding="utf-8"))):
        try:
            resolve(name)
        except (AttributeError, ImportError) as error:
            missing.append(f"{name}: {error}")
    assert not missing, "docs/engine.md names what the engine does not have:\n" + "\n".join(missing)


def test_the_guide_names_no_module_the_engine_lacks():
    text = GUIDE.read_text(encoding="utf-8")
    dotted = set(re.findall(r"`([a-z_]+)\.[A-Z][A-Za-z]+", text))
    foreign = {"tf", "np", "keras", "evo", "model", "self", "strategy", "cls", "typing", "tools"}
    unknown = sorted(dotted - MODULES - foreign)
    assert not unknown, f"docs/engine.md writes classes of modules the engine does not have: {unknown}"
