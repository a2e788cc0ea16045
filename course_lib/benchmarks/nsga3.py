"""``course bench nsga3``: NSGA-III compiled whole on DTLZ1-4, beside pymoo's NSGA-III when it is installed
(the workload and its settings, after Deb and Jain: ``lessons.nsga3_race``): the median IGD over seeds of
the engine's and pymoo's final populations with generations per second of each, generations per second
against a NumPy NSGA-III at large populations, and the survivor selection alone against the pool.
"""

from __future__ import annotations

from course_lib import tables
from course_lib.benchmarks.command import Report, command
from course_lib.lessons.nsga3_race import GENERATIONS, GENES, accuracy, has_pymoo, selection_speed, speed


def _print_rows(title: str, rows: list[dict]) -> None:
    print(title)
    print(tables.text_table_of(rows, ".4g"), end="\n\n")


def _cases(text: str) -> list[tuple[int, int]]:
    if text == "all":
        return list(GENERATIONS)
    out = []
    for item in text.split(","):
        number, _, m = item.partition(":")
        if not number.isdigit() or not m.isdigit() or (int(number), int(m)) not in GENERATIONS:
            raise ValueError(f"unknown case {item!r}: give NUMBER:OBJECTIVES pairs among "
                             f"{', '.join(f'{a}:{b}' for a, b in GENERATIONS)}, or 'all'")
        out.append((int(number), int(m)))
    return out


def _seeds(text: str) -> list[int]:
    out = []
    for item in text.split(","):
        first, _, last = item.strip().partition("-")
        if not first.isdigit() or (last and not last.isdigit()) or (last and int(last) < int(first)):
            raise ValueError(f"bad seed {item!r}: give seeds (0,1,2) or ranges FIRST-LAST (0-20), comma-separated")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def _check(args) -> str | None:
    try:
        _seeds(args.seeds)
        _cases(args.cases)
    except ValueError as e:
        return str(e)
    return None


@command(
    "nsga3", repeats=3, check=_check,
    quick={"seeds": "0", "cases": "2:3", "generations_scale": 0.04, "sizes": "256", "generations": 5,
           "numpy_generations": 1, "pools": "256,512", "repeats": 1},
    options={
        "--seeds": dict(default="0-20", help="seeds of the IGD runs (the median is reported): a list, "
                                             "comma-separated, of seeds or ranges FIRST-LAST"),
        "--genes": dict(default=GENES, choices=("float32", "float64"),
                        help="the engine's gene dtype (float64: pymoo's precision; float32: the engine's default)"),
        "--cases": dict(default="all", help="DTLZ NUMBER:OBJECTIVES pairs, comma-separated, or 'all'"),
        "--generations-scale": dict(type=float, default=1.0,
                                    help="fraction of Deb and Jain's generations the IGD runs use"),
        "--keep-duplicates": dict(action="store_true",
                                  help="the engine's NSGA3() keeps duplicates (pymoo, as run here, eliminates them)"),
        "--no-pymoo": dict(action="store_true", help="leave pymoo out even when it is installed"),
        "--sizes": dict(default="1000,4096", help="populations of the generations-per-second comparison ('' for none)"),
        "--generations": dict(type=int, default=20, help="engine generations per timed call"),
        "--numpy-generations": dict(type=int, default=2,
                                    help="NumPy NSGA-III generations per timed call"),
        "--pools": dict(default="500,1000,2000,4000", help="pool sizes of the selection-alone timing ('' for none)"),
    })
def bench_nsga3(args) -> Report:
    """``course bench nsga3``: median IGD of NSGA-III on DTLZ1-4 beside pymoo's (when installed) on Deb and
    Jain's settings, generations per second against a NumPy NSGA-III, and the selection alone against the pool."""
    if not args.no_pymoo and not has_pymoo():
        print("pymoo is not installed (pip install pymoo): the engine's IGD alone\n")
    finals = accuracy(_cases(args.cases), _seeds(args.seeds), args.generations_scale,
                      not args.keep_duplicates, not args.no_pymoo, args.genes)
    _print_rows("median final IGD against the true front (Deb and Jain's settings)", finals)
    rates = speed([int(s) for s in args.sizes.split(",")], args.generations, args.repeats,
                  args.numpy_generations, not args.keep_duplicates, not args.no_pymoo, args.genes) if args.sizes else []
    if rates:
        _print_rows("generations per second, DTLZ2 with 5 objectives", rates)
    selection = selection_speed([int(s) for s in args.pools.split(",")], args.repeats) if args.pools else []
    if selection:
        _print_rows("NSGA-III selection alone, DTLZ2 with 5 objectives (half the pool kept)", selection)
    return Report([], {"final": finals, "speed": rates, "selection": selection})
