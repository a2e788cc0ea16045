"""``course bench precision``: float32, bfloat16 and float16 matmuls at several sizes and one convolution,
timed in turns in this process; the matmul per dtype in fresh processes with oneDNN on and off; a training
step under ``mixed_bfloat16`` against float32 at a narrow and a wide width (the code lives in
``course_lib.precision``)."""

from __future__ import annotations

from course_lib import bench, precision, tables
from course_lib.benchmarks.command import Report, command


@command(
    "precision", repeats=7, quick={"sizes": "128,512", "conv_size": 16, "process_n": 256, "widths": "32,256",
                                   "repeats": 5},
    options={
        "--sizes": dict(default="256,1024,2048", help="comma-separated matmul sizes"),
        "--conv-size": dict(type=int, default=32, help="the convolution's image side"),
        "--process-n": dict(type=int, default=1024, help="matmul size for the oneDNN on/off processes"),
        "--widths": dict(default="32,1024", help="comma-separated MLP widths for the training step"),
        "--no-processes": dict(action="store_true", help="skip the oneDNN on/off processes"),
    })
def bench_precision(args) -> Report:
    """``course bench precision``: dtypes in turns, oneDNN on and off in fresh processes, mixed_bfloat16 steps."""
    features = precision.cpu_features()
    results = precision.dtype_sweep([int(s) for s in args.sizes.split(",")], args.conv_size, repeats=args.repeats)
    rows = precision.sweep_rows(results)
    for result in results:
        print(result, end="\n\n")
        print(precision.dtype_sentence(result, features=features), end="\n\n")
    process_rows = []
    if not args.no_processes:
        fresh = precision.onednn_comparison(args.process_n, repeats=args.repeats)
        results.append(fresh)
        print(fresh, end="\n\n")
        rates = precision.gflops(fresh, fresh.params["flops"])
        process_rows = [{"variant": name, "GFLOP/s": round(rates[name], 1),
                         "against float32, oneDNN on": fresh.judged(name) if name != fresh.baseline else "baseline"}
                        for name in fresh.names]
    variants = precision.step_variants()
    for width in (int(s) for s in args.widths.split(",")):
        step = bench.compare({name: build(width) for name, build in variants.items()}, repeats=args.repeats,
                             title=f"training step, MLP width {width}", params={"width": width})
        results.append(step)
        print(step, end="\n\n")
    step_rows = [{"width": r.params["width"], "float32 step (ms)": round(r["float32"].median_s * 1e3, 3),
                  "mixed_bfloat16 step (ms)": round(r["mixed_bfloat16"].median_s * 1e3, 3),
                  "mixed_bfloat16 against float32": r.judged("mixed_bfloat16")} for r in results if "width" in r.params]
    for table in (rows, process_rows, step_rows):
        if table:
            print(tables.text_table_of(table), end="\n\n")
    return Report(results, {"rows": rows, "process_rows": process_rows, "step_rows": step_rows,
                                  "features": features})
