"""``course bench fit``: lecture 19's measurements at chosen sizes. One epoch of ``fit`` for each
``steps_per_execution`` and ``jit_compile`` setting at a small and a wide width, ``run_eagerly``, the four
ways to run a forward pass at one row and at a large batch, ``tf.recompute_grad``'s time, and a training
step's peak memory against the batch in fresh processes (the models live in ``course_lib.fitting``)."""

from __future__ import annotations

from course_lib import bench, fitting, tables
from course_lib.benchmarks.command import Report, command


def _sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip()]


@command(
    "fit", repeats=5,
    quick={"steps": 16, "wide_steps": 4, "eager_steps": 2, "large_predict": 256, "memory_batches": "256,1024",
           "memory_depth": 4, "repeats": 2},
    options={
        "--width": dict(type=int, default=32, help="units per hidden layer of the small model"),
        "--wide-width": dict(type=int, default=1024, help="a width where each step's arithmetic dominates"),
        "--steps": dict(type=int, default=128, help="batches per timed epoch at --width"),
        "--wide-steps": dict(type=int, default=16, help="batches per timed epoch at --wide-width"),
        "--batch": dict(type=int, default=64, help="rows per batch"),
        "--eager-steps": dict(type=int, default=8, help="batches per epoch for run_eagerly"),
        "--large-predict": dict(type=int, default=4096, help="rows of the large predict batch"),
        "--memory-batches": dict(default="512,1024,2048,4096", help="comma-separated batch sizes for memory"),
        "--memory-width": dict(type=int, default=256, help="units per layer of the memory model"),
        "--memory-depth": dict(type=int, default=8, help="layers of the memory model"),
    })
def bench_fit(args) -> Report:
    """``course bench fit``: fit settings, run_eagerly, predict against a call, recompute_grad, peak memory."""
    results = []
    small_variants = fitting.fit_variants(batch=args.batch)
    small = bench.compare({n: b(width=args.width, steps=args.steps) for n, b in small_variants.items()},
                          baseline="steps_per_execution=1", repeats=args.repeats,
                          title=f"fit, width {args.width}: one epoch of {args.steps} batches of {args.batch}",
                          params={"width": args.width, "steps": args.steps, "batch": args.batch})
    wide_names = ["steps_per_execution=1", "steps_per_execution=64", "steps_per_execution=64, XLA"]
    wide = bench.compare({n: small_variants[n](width=args.wide_width, steps=args.wide_steps) for n in wide_names},
                         baseline="steps_per_execution=1", repeats=args.repeats,
                         title=f"fit, width {args.wide_width}: one epoch of {args.wide_steps} batches of {args.batch}",
                         params={"width": args.wide_width, "steps": args.wide_steps, "batch": args.batch})
    eager_variants = fitting.fit_variants(fitting.EAGER_SETTINGS, batch=args.batch)
    eager = bench.compare({n: b(width=args.width, steps=args.eager_steps) for n, b in eager_variants.items()},
                          baseline="compiled (steps_per_execution=1)", repeats=args.repeats,
                          title=f"fit, width {args.width}: compiled against run_eagerly, {args.eager_steps} batches",
                          params={"width": args.width, "steps": args.eager_steps, "batch": args.batch})
    feeding = bench.compare(fitting.input_variants(width=args.width, steps=args.steps, batch=args.batch),
                            repeats=args.repeats,
                            title=f"fit, width {args.width}: arrays against a dataset built once, {args.steps} "
                                  f"batches of {args.batch}",
                            params={"width": args.width, "steps": args.steps, "batch": args.batch})
    results += [feeding, small, wide, eager]
    serving = fitting.predict_variants(fitting.mlp(args.width))
    for rows in (1, args.large_predict):
        results.append(bench.compare({n: b(batch=rows) for n, b in serving.items()}, baseline="model.predict(x)",
                                     repeats=args.repeats, title=f"forward pass of {rows:,} row(s), width {args.width}",
                                     params={"rows": rows, "width": args.width}))
    batches = _sizes(args.memory_batches)
    top = batches[-1]
    results.append(bench.compare(fitting.recompute_variants(top, args.memory_width, args.memory_depth),
                                 baseline="plain", repeats=args.repeats,
                                 title=f"training step at batch {top}, width {args.memory_width}, "
                                       f"depth {args.memory_depth}",
                                 params={"batch": top, "width": args.memory_width, "depth": args.memory_depth}))
    for result in results:
        print(result, end="\n\n")
    shape = dict(width=args.memory_width, depth=args.memory_depth)
    cases = [dict(batch=b, **shape) for b in batches] + [dict(batch=top, recompute=True, **shape),
                                                          dict(batch=top, policy="mixed_bfloat16", **shape)]
    peaks = fitting.step_peaks(cases)
    print(tables.text_table_of(fitting.memory_rows(peaks)))
    print(fitting.memory_sentence(peaks))
    print(fitting.auto_sentence(fitting.auto_steps_per_execution()))
    print(fitting.gpu_sentence(fitting.jit_auto()))
    return Report(results, {"memory": peaks, "jit_auto": fitting.jit_auto(),
                                  "auto_steps_per_execution": fitting.auto_steps_per_execution()})
