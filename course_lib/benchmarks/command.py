"""The skeleton every ``course bench`` command shares: its options, its JSON report with the machine, and
the registry ``course bench NAME`` looks commands up in. A benchmark module is one function decorated with
``command``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from course_lib import host
from course_lib.bench import Comparison

__all__ = ["COMMANDS", "Report", "command", "save_report"]


def save_report(comparisons: Iterable[Comparison], path: str | os.PathLike, **fields: Any) -> str:
    """Write several comparisons, the machine and any other JSON-able ``fields`` (rows of a table,
    traces, rates) as one JSON file: what every ``course bench`` command saves. Returns the path."""
    from pathlib import Path

    taken = {"machine", "comparisons"} & set(fields)
    if taken:
        raise ValueError(f"save_report writes {sorted(taken)} itself; give the other fields other names")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    report = {"machine": host.machine(), "comparisons": [c.to_dict() for c in comparisons], **fields}
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return str(path)



@dataclass
class Report:
    """What a ``course bench`` command measured: its comparisons, and any other JSON-able fields
    its readers need (``save_report`` writes them beside the comparisons)."""

    comparisons: list[Comparison] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)


# every command made by ``command``, by name: defining one registers it (``course_lib.benchmarks.commands``)
COMMANDS: dict[str, Callable[[Sequence[str] | None], int]] = {}


def command(name: str, *, options: Mapping[str, Mapping[str, Any]] | None = None,
            repeats: int | None = 5, quick: Mapping[str, Any] | None = None,
            check: Callable[[argparse.Namespace], str | None] | None = None):
    """Make ``measure(args) -> Report | list[Comparison]`` the command ``course bench NAME``.

    The decorated function takes the argument list (what ``course bench NAME`` passes on) and
    returns an exit code. Every command gets the same options and the same report:

    * ``--repeats`` (timed repeats per variant; default ``repeats``, none when ``repeats`` is None),
      ``--quick`` (the option values in ``quick``: a smoke run in seconds; options given on the
      command line still win), ``--out`` (``--json`` is the same; default ``build/bench/NAME.json``),
      and the command's own: ``options`` maps each flag to ``ArgumentParser.add_argument``'s keywords;
      ``check(args)`` returns a message for a bad combination (exit code 2 with the usage, as for a
      bad option);
    * one JSON report through ``save_report``: the command, its arguments, the machine, the
      comparisons and the report's other fields. The command prints its own tables as it goes.

    The machine is described after ``measure`` runs, so a command may set up devices first.
    """
    def decorate(measure: Callable[[argparse.Namespace], Any]) -> Callable[[Sequence[str] | None], int]:
        def parser() -> argparse.ArgumentParser:
            p = argparse.ArgumentParser(prog=f"course bench {name}", description=measure.__doc__)
            if repeats is not None:
                p.add_argument("--repeats", type=_at_least_one, default=repeats, help="timed repeats per variant")
            p.add_argument("--quick", action="store_true",
                           help="a smoke run: " + (", ".join(f"--{k.replace('_', '-')} {v}"
                                                             for k, v in (quick or {}).items()) or "as given"))
            p.add_argument("--out", "--json", dest="out", default=f"build/bench/{name.replace('-', '_')}.json",
                           help="where to write the JSON report")
            for flag, spec in (options or {}).items():
                p.add_argument(flag, **spec)
            return p

        @functools.wraps(measure)
        def main(argv: Sequence[str] | None = None) -> int:
            p = parser()
            argv = list(argv or [])
            args = p.parse_args(argv)
            if args.quick and quick:
                p.set_defaults(**quick)
                args = p.parse_args(argv)
            problem = check(args) if check is not None else None
            if problem:
                p.error(problem)
            measured = measure(args)
            report = measured if isinstance(measured, Report) else Report(list(measured))
            path = save_report(report.comparisons, args.out, command=name, args=vars(args), **report.fields)
            print(f"measured on {host.machine_summary()}; wrote {path}")
            return 0

        main.bench_command = name  # how a test tells a command built here from one that is not
        main.parser = parser
        if COMMANDS.get(name, main).__module__ != main.__module__:
            raise ValueError(f"two benchmarks are named {name!r} ({COMMANDS[name].__module__} and "
                             f"{main.__module__}); give one another name")
        COMMANDS[name] = main
        return main

    return decorate


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text}")
    return value
