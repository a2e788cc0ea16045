"""``course bench ops``: per-op eager / autograph / XLA times, measured with ``course_lib.bench``
(first call apart, forced results, medians, ratios in one run).

Each op module prints its own table with ``python -m course_lib.evo.ops.<module>``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

import numpy as np
import tensorflow as tf

from course_lib import bench
from course_lib.evo import fitness, fusion, ops, population, rng
from course_lib.evo.ops import permutation
from course_lib.evo.ops.base import partner_rows
from course_lib.evo.rng import Rows

VARIANTS = ("eager", "autograph", "xla")


def example_population(kind: str, n: int, length: int) -> tf.Tensor:
    """A population of the kind an op works on (``Op.genes``), seeded."""
    if kind == "binary":
        return population.random_integers((n, length), 0, 2, seed=1)
    if kind == "integer":
        return population.random_integers((n, length), 0, 10, seed=1)
    if kind == "float":
        return population.uniform((n, length), -5.0, 5.0, seed=1)
    return population.permutations(n, length, seed=1)


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


# -- the implementations that current ops replaced, measured beside them in the same run -----------


def _argsort_shuffle_index(self, key, rows, length, mutate):
    """ShuffleMutation until issue 14: sort keys are positions, random within the segment."""
    a, b = permutation.random_segment(rng.fold_in(key, 1), rows, length)
    pos = tf.range(length)[None, :]
    inside = (pos >= a) & (pos < b) & mutate
    jitter = 0.5 * rng.uniform(rng.fold_in(key, 2), rows, (length,))  # < 0.5: stays before a + 1
    keys = tf.where(inside, tf.cast(a, tf.float32) + jitter, tf.cast(pos, tf.float32))
    return tf.argsort(keys, axis=1, stable=True)


def _argsort_order_crossover(self, inputs, key, rows):
    """OrderCrossover until issue 14: the parent inverted and the kept genes ordered by argsort."""
    x = tf.cast(rows.take(inputs[0]), tf.int32)
    mate = tf.cast(partner_rows(inputs, rng.fold_in(key, 1), rows), tf.int32)
    length = x.shape[1]
    a, b = permutation.random_segment(rng.fold_in(key, 2), rows, length)
    pos = tf.range(length)[None, :]
    rotated = tf.gather(mate, (pos + b) % length, batch_dims=1)
    at = tf.gather(tf.argsort(x, axis=1, stable=True), rotated, batch_dims=1)
    keep = (at < a) | (at >= b)
    order = tf.argsort(tf.where(keep, pos, pos + length), axis=1)
    kept = tf.gather(rotated, order, batch_dims=1)
    fill = tf.gather(kept, (pos - b) % length, batch_dims=1)
    keep_parent = (pos >= a) & (pos < b)
    crossed = self.crossed(key, rows)
    if crossed is not None:
        keep_parent |= ~crossed[:, None]
    return tf.cast(tf.where(keep_parent, x, fill), inputs[0].dtype)


# op name -> (method name, the replaced method): ``op_variants(..., before=True)`` adds its three modes
BEFORE = {"ShuffleMutation": ("index", _argsort_shuffle_index),
          "OrderCrossover": ("apply", _argsort_order_crossover)}


def _before(op):
    """A copy of ``op`` (same class, same configuration) running its replaced implementation."""
    name, method = BEFORE[type(op).__name__]
    old = type(op)(**op.get_config())
    setattr(old, name, method.__get__(old))
    return old


def op_variants(label: str, n: int, length: int, before: bool = False):
    """One op of ``op_cases`` on an ``n x length`` population, as (op, population, functions).

    The functions map (population, key) to children three ways: "eager", "autograph"
    (``tf.function``) and "xla". The key is an argument, as inside ``evolve``: a constant
    key would let the graph and XLA compilers fold the random numbers away. With ``before``,
    an op in ``BEFORE`` also gets "eager, before", "autograph, before" and "xla, before": the
    implementation it replaced, on the same population and key.
    """
    found = {lab: (make, kind) for cases in op_cases().values() for lab, make, kind in cases}
    if label not in found:
        raise ValueError(f"unknown op {label!r}; ops are: {', '.join(found)}")
    make, kind = found[label]
    op, x = make(length), example_population(kind, n, length)
    fns = _modes(op)
    if before and label in BEFORE:
        fns.update({f"{mode}, before": fn for mode, fn in _modes(_before(op)).items()})
    return op, x, fns


def _modes(op) -> dict:
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
    """The faster of autograph and XLA in ``cmp`` (``suffix`` ", before": of the replaced implementation)."""
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


@bench.command("ops", repeats=5, check=_known_ops, quick={"shapes": [(64, 32), (256, 128)], "repeats": 3},
               options={"--module": dict(action="append", help="only these op modules (repeatable)"),
                        "--op": dict(action="append", help="only these ops (repeatable), e.g. ShuffleMutation"),
                        "--shapes": dict(nargs="+", type=_shape, metavar="NxL",
                                         default=[(256, 64), (1024, 256), (4096, 1024)],
                                         help="population shapes, e.g. 256x64 4096x1024"),
                        "--before": dict(action=argparse.BooleanOptionalAction, default=True,
                                         help=f"also measure the implementations replaced ({', '.join(BEFORE)})")})
def bench_ops(args) -> list:
    """Per-op eager / autograph (tf.function) / XLA times and speedups at a few population shapes;
    ops whose implementation was replaced are measured beside the one they replaced, in the same run."""
    shapes, repeats, cases = args.shapes, args.repeats, op_cases()
    records, summary = [], []
    for module in args.module or list(cases):
        for label, _, _ in cases[module]:
            if args.op and label not in args.op:
                continue
            for n, length in shapes:
                _, x, fns = op_variants(label, n, length, before=args.before)
                key = rng.key(0)
                cmp = bench.compare({name: (lambda f=f: f(x, key)) for name, f in fns.items()}, baseline="eager",
                                    repeats=repeats, warmup=1, title=f"{label} on population {n} x {length}",
                                    params={"module": module, "op": label, "population": [n, length]})
                print(cmp, end="\n\n")
                records.append(cmp)
                summary.append((label, f"{n}x{length}", cmp))
    print(f"{'op':28}{'population':14}{'autograph':>11}{'xla':>9}{'xla/autograph':>15}")
    for label, shape, cmp in summary:
        ratio = cmp.speedup("xla", over="autograph")
        verdict = ("no measurable difference" if not cmp.apart("xla", "autograph")  # quartiles overlap
                   else "XLA wins" if ratio > 1 else "XLA loses")
        print(f"{label:28}{shape:14}{cmp.speedup('autograph'):>10.2f}x{cmp.speedup('xla'):>8.2f}x{ratio:>14.2f}x"
              f"  {verdict}")
    replaced = [(label, shape, cmp) for label, shape, cmp in summary if "xla, before" in cmp.names]
    if replaced:
        print(f"\nreplaced implementations, same run: best compiled mode now against before, and each over "
              f"its own eager\n{'op':28}{'population':14}{'now/before':>12}{'now':>9}{'before':>9}")
        for label, shape, cmp in replaced:
            now, old = best_compiled(cmp), best_compiled(cmp, ", before")
            print(f"{label:28}{shape:14}{cmp.speedup(now, over=old):>11.2f}x{cmp.speedup(now):>8.2f}x"
                  f"{cmp.speedup(old, over='eager, before'):>8.2f}x")
    return records


def op_module_main(module: str, argv: list[str] | None = None) -> int:
    """``python -m course_lib.evo.ops.<module>``: the per-op table for one module."""
    argv = sys.argv[1:] if argv is None else argv
    return bench_ops(["--module", module, "--out", f"build/bench/ops_{module}.json", *argv])
