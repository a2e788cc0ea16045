"""Where XLA's CPU time goes in lecture 07's two workloads, read from measurements and HLO.

The fused elementwise chain: timing a loop of one operation per element against the chain's loop over
the same vector, compiled alike, separates what the loop pays for its memory traffic from what it pays
for its arithmetic. The random bits: the HLO shows what XLA makes of the one ``rng-bit-generator``
instruction (Philox) that TensorFlow hands it, counted per 32-bit word the loop writes.
"""

from __future__ import annotations

from collections import Counter

import tensorflow as tf

from course_lib import bench, xla

ONE_OP, CHAIN = "one operation per element", "the chain"
# Philox-4x32-10 (TensorFlow's stateless generator): 10 rounds, each two 32 x 32-bit products, per block
# of four 32-bit words.
PHILOX_MULTIPLIES_PER_WORD = 10 * 2 / 4


def one_op(x):
    """One multiply-add per element: a loop that reads and writes the vector once, with almost no arithmetic."""
    return x * 0.9 + 0.1


def arithmetic_or_memory(n: int, *, repeats: int = 5) -> bench.Comparison:
    """The XLA-compiled chain against an XLA-compiled one-operation loop on the same ``n`` floats, in turns.

    Both loops read one vector and write one, so a chain that takes much longer than the one-operation
    loop spends its time on arithmetic, not on memory traffic."""
    x = xla.workload_input(n)
    fns = {ONE_OP: xla.jit(one_op), CHAIN: xla.jit(xla.elementwise_chain)}
    return bench.compare({name: (lambda f=f: f(x)) for name, f in fns.items()}, baseline=ONE_OP,
                         repeats=repeats, in_turns=True, title=f"XLA loops over {n:,} floats",
                         params={"n": n})


def _root_fusion(text: str) -> Counter:
    """The operations inside the fusion the entry computation returns (the loop that writes the output)."""
    comps = xla.parse_hlo(text)
    root = comps["ENTRY"][-1]
    if root.opcode != "fusion" or root.calls not in comps:
        raise ValueError(f"expected the entry computation to return a fusion, got {root.opcode!r}")
    return Counter(i.opcode for i in comps[root.calls] if i.opcode not in ("parameter", "constant"))


def generator_expansion(n: int = 1000) -> dict:
    """What XLA makes of ``xla.random_bits`` on this machine's backend, for ``n`` words.

    Returns the generator instructions TensorFlow hands XLA (``before``: ``rng-bit-generator`` among
    them, with its algorithm), and ``per_word``: the operations of the optimised loop that writes the
    ``n`` words, each run once per word."""
    args = xla.workload_args("random bits", n)
    before = xla.hlo(xla.random_bits, *args, stage="hlo")
    after = xla.hlo(xla.random_bits, *args, stage="optimized_hlo")
    algorithms = sorted({line.split("algorithm=")[1].split(",")[0].split()[0]
                         for line in before.splitlines() if "rng-bit-generator(" in line and "algorithm=" in line})
    return {"generators": xla.hlo_ops(before)["rng-bit-generator"], "algorithms": algorithms,
            "per_word": _root_fusion(after)}


def graph_generator_ops(n: int = 1000) -> Counter:
    """The ops of ``xla.random_bits`` as a plain graph: the generator is one kernel, TensorFlow's own."""
    fn = tf.function(xla.random_bits).get_concrete_function(*xla.workload_args("random bits", n))
    return Counter(op.type for op in fn.graph.get_operations() if op.type not in ("Placeholder", "Identity",
                                                                                     "Const", "NoOp"))
