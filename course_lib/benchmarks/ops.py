"""``course bench ops``: per-op eager / autograph / XLA times, measured with ``course_lib.bench``
(first call apart, forced results, medians, ratios in one run); ``--module NAME`` for one op module.
"""

from __future__ import annotations

import argparse
from typing import Callable

import numpy as np
import tensorflow as tf

from course_lib import bench
from course_lib.benchmarks.command import command
from course_lib.evo import fitness, fusion, ops, population, rng
from course_lib.evo.rng import Rows
from course_lib.lessons import sorting_ops

VARIANTS = ("eager", "autograph", "xla")


def example_population(kind: str, n: int, length: int) -> tf.Tensor:
    """A population of the kind an op works on (``Op.genes``), seeded."""
    if kind == "binary":
        return population.random_integers((n, length), 0, 2, seed=1)
    if kind == "integer":
        return population.random_integers((n, length), 0, 10, seed=1)
    if kind == "float":
        return population.uniform((n, length), -5.0, 5.0, seed=1)
    return related_tours(n, length, seed=1)


def related_tours(n: int, length: int, seed: int) -> tf.Tensor:
    """``n`` tours that share most of their edges, as a memetic run's parents do (local optima of one
    instance): one random tour, each copy with ``length // 32 + 1`` random segments reversed (each breaks at
    most two edges). Random tours share almost none, the worst case of ``SharedEdgeCrossover``, whose walk
    makes one loop trip per fragment of shared edges: a table timed on them would show that case only."""
    generator = np.random.default_rng(seed)
    tours = np.tile(generator.permutation(length), (n, 1))
    for tour in tours:
        for _ in range(length // 32 + 1):
            i, j = np.sort(generator.choice(length + 1, 2, replace=False))
            tour[i:j] = tour[i:j][::-1].copy()
    return tf.constant(tours, tf.int32)


def op_cases() -> dict[str, list[tuple[str, Callable[[int], object], str]]]:
    """Per op module: (op name, factory taking the genome length, population kind), read from the
    op registry (``evo.ops.registry()``), so a new op is in the table as soon as it exists."""
    cases: dict[str, list] = {}
    for name, cls in ops.registry().items():
        module = cls.__module__.rsplit(".", 1)[-1]
        cases.setdefault(module, []).append((name, lambda n, cls=cls: example_op(cls, n), cls.genes))
    return dict(sorted(cases.items()))


def example_op(cls, n: int):
    """``cls.example(n)``; a permutation op also gets the distances of n random cities attached, as
    ``Model.compile`` attaches a TSP fitness (a local search needs them; other ops ignore them)."""
    op = cls.example(n)
    if cls.genes == "permutation":
        op.attach(fitness.TSP(coordinates=np.random.default_rng(0).uniform(0, 1, (n, 2))))
    return op


def op_variants(label: str, n: int, length: int, reference: bool = False):
    """One op of ``op_cases`` on an ``n x length`` population, as (op, population, functions).

    The functions map (population, key) to children three ways: "eager", "autograph"
    (``tf.function``) and "xla". The key is an argument, as inside ``evolve``: a constant
    key would let the graph and XLA compilers fold the random numbers away. With ``reference``,
    an op in ``sorting_ops.REFERENCES`` also gets "eager, sorting", "autograph, sorting" and
    "xla, sorting": its sort-based reference, on the same population and key.
    """
    found = {lab: (make, kind) for cases in op_cases().values() for lab, make, kind in cases}
    if label not in found:
        raise ValueError(f"unknown op {label!r}; ops are: {', '.join(found)}")
    make, kind = found[label]
    op, x = make(length), example_population(kind, n, length)
    fns = op_modes(op)
    if reference and label in sorting_ops.REFERENCES:
        fns.update({mode + sorting_ops.SUFFIX: fn for mode, fn in op_modes(sorting_ops.reference(op)).items()})
    return op, x, fns


def op_modes(op) -> dict:
    """``evolve``'s call of ``op`` eagerly, as a graph and as XLA: one function, so only how it runs differs."""
    def children(x, key):
        return op.apply([x], key, Rows.all(x.shape[0]))

    return {"eager": children, "autograph": tf.function(children), "xla": fusion.xla_function(children)}


def _shape(text: str) -> tuple[int, int]:
    try:
        n, length = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a population shape is NxL, e.g. 1024x256; got {text!r}") from None
    return n, length


def best_compiled(cmp: bench.Comparison, suffix: str = "") -> str:
    """The faster of autograph and XLA in ``cmp`` (``suffix`` ", sorting": of the sorting reference)."""
    return min((f"autograph{suffix}", f"xla{suffix}"), key=lambda name: cmp[name].median_s)


def _known_ops(args) -> str | None:
    """The modules and ops asked for exist (checked when the command runs: the registry imports every op)."""
    cases = op_cases()
    unknown = set(args.module or ()) - set(cases)
    if unknown:
        return f"unknown op module(s) {', '.join(sorted(unknown))}; modules are: {', '.join(sorted(cases))}"
    labels = [label for found in cases.values() for label, _, _ in found]
    unknown = set(args.op or ()) - set(labels)
    if unknown:
        return f"unknown op(s) {', '.join(sorted(unknown))}; ops are: {', '.join(labels)}"
    return None


@command("ops", repeats=5, check=_known_ops, quick={"shapes": [(64, 32), (256, 128)], "repeats": 3},
               options={"--module": dict(action="append", help="only these op modules (repeatable)"),
                        "--op": dict(action="append", help="only these ops (repeatable), e.g. ShuffleMutation"),
                        "--shapes": dict(nargs="+", type=_shape, metavar="NxL",
                                         default=[(256, 64), (1024, 256), (4096, 1024)],
                                         help="population shapes, e.g. 256x64 4096x1024"),
                        "--reference": dict(action=argparse.BooleanOptionalAction, default=True,
                                            help="also measure the sorting references "
                                                 f"({', '.join(sorting_ops.REFERENCES)})")})
def bench_ops(args) -> list:
    """Per-op eager / autograph (tf.function) / XLA times and speedups at a few population shapes;
    ops with a sorting reference (``lessons.sorting_ops``) are measured beside it, in the same run."""
    shapes, repeats, cases = args.shapes, args.repeats, op_cases()
    records, summary = [], []
    for module in args.module or list(cases):
        for label, _, _ in cases[module]:
            if args.op and label not in args.op:
                continue
            for n, length in shapes:
                _, x, fns = op_variants(label, n, length, reference=args.reference)
                key = rng.key(0)
                cmp = bench.compare({name: (lambda f=f: f(x, key)) for name, f in fns.items()}, baseline="eager",
                                    repeats=repeats, warmup=1, title=f"{label} on population {n} x {length}",
                                    params={"module": module, "op": label, "population": [n, length]})
                print(cmp, end="\n\n")
                records.append(cmp)
                summary.append((label, f"{n}x{length}", cmp))
    print(f"{'op':28}{'population':14}{'autograph':>11}{'xla':>9}{'xla/autograph':>15}  xla against autograph")
    for label, shape, cmp in summary:
        ratio = cmp.speedup("xla", over="autograph")
        print(f"{label:28}{shape:14}{cmp.speedup('autograph'):>10.2f}x{cmp.speedup('xla'):>8.2f}x{ratio:>14.2f}x"
              f"  {cmp.call('xla', 'autograph')}")
    referenced = [(label, shape, cmp) for label, shape, cmp in summary if "xla" + sorting_ops.SUFFIX in cmp.names]
    if referenced:
        print(f"\nsorting references, same run: best compiled mode of the op against its reference's, and each "
              f"over its own eager\n{'op':28}{'population':14}{'op/sorting':>12}{'op':>9}{'sorting':>9}")
        for label, shape, cmp in referenced:
            best, sorting = best_compiled(cmp), best_compiled(cmp, sorting_ops.SUFFIX)
            print(f"{label:28}{shape:14}{cmp.speedup(best, over=sorting):>11.2f}x{cmp.speedup(best):>8.2f}x"
                  f"{cmp.speedup(sorting, over='eager' + sorting_ops.SUFFIX):>8.2f}x")
    return records
