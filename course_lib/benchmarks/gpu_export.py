"""Export the GPU-target programs of ``course bench ga`` as HLO, for a machine with a GPU but no TensorFlow.

    python -m course_lib.benchmarks.gpu_export OUTDIR [--sizes-onemax 4096,65536] [--sizes-rastrigin 4096]

For each problem and population size the models of ``course bench ga`` are compiled with
``target="gpu"`` and their two XLA functions, ``start`` (genes -> state) and ``run`` (state, generation,
count, target, patience -> state, generations run, history, stopped, unpacked), are written as serialized
HLO protos (``NAME_start.hlo.pb.xz``, ``NAME_run.hlo.pb.xz``) with ``index.json`` describing their
parameters, captured inputs and outputs: the layout ``../shared/gpu/hlo_runner.py`` and
``gpu_engine_bench.py`` read (their README says how to run them on a lent GPU). Nothing here runs on
the GPU; tracing for the GPU target works on any machine.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.eager.polymorphic_function import compiler_ir

from course_lib import evo
from course_lib.lessons.evolution import onemax_model, rastrigin_model

GENERATIONS = 100


def export(fn, specs, base: str) -> dict:
    """Serialized HLO of tf.function ``fn`` for ``specs``, xz-compressed to ``base``.hlo.pb.xz; its description."""
    concrete = fn.get_concrete_function(*specs)
    with lzma.open(base + ".hlo.pb.xz", "wb", preset=9) as fh:
        fh.write(compiler_ir.from_concrete_function(concrete)(stage="hlo_serialized"))
    # a captured variable (a knob: the rates the program reads at run time, evo.knobs) enters the HLO as its
    # value, so the runner passes what it holds now
    variables = {id(v.handle): v for v in concrete.variables}
    captured = [np.asarray(variables[id(c)].read_value() if c.dtype == tf.resource else c)
                for c in concrete.captured_inputs]
    return {"hlo_proto": os.path.basename(base) + ".hlo.pb.xz",
            "params": [[list(s.shape), s.dtype.name] for s in tf.nest.flatten(concrete.structured_input_signature)],
            "captured": [c.tolist() for c in captured], "captured_dtypes": [c.dtype.name for c in captured],
            "outputs": [[list(s.shape), s.dtype.name] for s in tf.nest.flatten(concrete.structured_outputs)]}


def export_problem(outdir: str, name: str, length: int, n: int, make_model) -> dict:
    """One problem at one size: compile the model for the GPU target, run one generation here (to build
    the program), and export ``start`` and ``run``."""
    model = make_model(length, "xla")
    model.compile(fitness=model.fitness, selection=model.selection, mode="xla", seed=model.seed, target="gpu")
    shape = (n, length)
    population = (evo.population.random_integers(shape, 0, 2, seed=0) if name == "onemax"
                  else evo.population.uniform(shape, -5.12, 5.12, seed=0))
    prog, parts = evo.inspect.program(model, population, "xla")
    genes, packed = parts.genes, parts.packed
    if prog.target != "gpu":
        raise RuntimeError(f"the program was traced for {prog.target!r}, not the GPU target")
    base = os.path.join(outdir, f"{name}_{n}")
    meta = {"problem": name, "n": n, "length": length, "packed": packed, "generations": GENERATIONS,
            "target_shape": "gpu", "io": None}
    start = (tf.TensorSpec(shape, genes.dtype),)
    meta["start"] = export(prog._start, start, base + "_start")
    # run takes the state start returns: an evo.inspect.State whose selection part may be any structure
    state = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype),
                                  prog._start.get_concrete_function(*start).structured_outputs)
    scalar = [tf.TensorSpec((), d) for d in (tf.int32, tf.int32, tf.float32, tf.int32)]
    meta["run"] = export(prog._run, (state, *scalar), base + "_run")
    limit, patience = evo.inspect.no_limits(prog.gen.sign)
    meta["target"], meta["patience"] = float(limit.numpy()), int(patience.numpy())
    return meta


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--sizes-onemax", default="4096,65536,262144")
    parser.add_argument("--sizes-rastrigin", default="4096,65536,1048576")
    args = parser.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    index = {"tensorflow": tf.__version__, "generations": GENERATIONS, "programs": {}}
    for name, length, sizes, make in (("onemax", 1024, args.sizes_onemax, onemax_model),
                                      ("rastrigin", 100, args.sizes_rastrigin, rastrigin_model)):
        for n in (int(s) for s in sizes.split(",") if s.strip()):
            index["programs"][f"{name}_{n}"] = export_problem(args.outdir, name, length, n, make)
            print(f"exported {name} {n} x {length} (GPU target) to {args.outdir}", flush=True)
    with open(os.path.join(args.outdir, "index.json"), "w") as fh:
        json.dump(index, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
