"""Where XLA's CPU time goes in lecture 07's two workloads, read from measurements and HLO.

The fused elementwise chain: timing a loop of one operation per element against the chain's loop over
the same vector, compiled alike, separates what the loop pays for its memory traffic from what it pays
for its arithmetic; timing the same one operation as a graph kernel, in the same rounds, tells whether
XLA's loop moves data as fast as TensorFlow's kernel does, and timing the copy to NumPy that forces each
result says how much of a call is not the loop at all. The random bits: the HLO shows what XLA makes
of the one ``rng-bit-generator`` instruction (Philox) that TensorFlow hands it, counted per 32-bit word
the loop writes.
"""

from __future__ import annotations

from collections import Counter

import tensorflow as tf

from course_lib import bench, xla
from course_lib.arguments import whole

ONE_OP, CHAIN = "one operation per element", "the chain"
GRAPH_ONE_OP = "one operation per element, graph"
COPY = "the copy to NumPy alone"
# Philox-4x32-10 (TensorFlow's stateless generator): 10 rounds, each two 32 x 32-bit products, per block
# of four 32-bit words.
PHILOX_MULTIPLIES_PER_WORD = 10 * 2 / 4


def one_op(x):
    """One multiply-add per element: a loop that reads and writes the vector once, with almost no arithmetic."""
    return x * 0.9 + 0.1


def arithmetic_or_memory(n: int, *, repeats: int = 5) -> bench.Comparison:
    """The XLA-compiled chain, the same one-operation function as a graph, and the copy to NumPy that
    forces every timed result, against an XLA-compiled one-operation loop on the same ``n`` floats, in turns.

    Both XLA loops read one vector and write one, so a chain that takes longer than the one-operation loop
    spends the difference on arithmetic; the graph's kernel for the one operation moves the same bytes, so
    it tells whether XLA's loop reads and writes memory as fast as TensorFlow's kernel does; ``.numpy()``
    copies a result into a new array (``bench.force``), a cost every timed call holds once."""
    x = xla.workload_input(n)
    fns = {ONE_OP: xla.jit(one_op), CHAIN: xla.jit(xla.elementwise_chain), GRAPH_ONE_OP: tf.function(one_op)}
    variants = {name: (lambda f=f: f(x)) for name, f in fns.items()}
    variants[COPY] = x.numpy
    return bench.compare(variants, baseline=ONE_OP, repeats=repeats, in_turns=True,
                         title=f"XLA loops over {n:,} floats", params={"n": n})


def _arithmetic_text(call: str, kernels: int, extra_ms: float) -> str:
    if call == "slower":
        return (f"So the chain's arithmetic costs time beyond reading and writing the vector once: "
                f"{extra_ms:.1f} ms per call.")
    if call == "faster":
        return "A loop that does more work ran faster here, so this run cannot tell what the arithmetic costs."
    if call in bench.NEGLIGIBLE:
        added = "no measurable time" if call == "no difference" else f"time {bench.TOO_SMALL}"
        return (f"So the {kernels - 1} extra operations per element add {added}: the loop's time is set by "
                "something other than its arithmetic.")
    return "This run cannot tell whether the extra operations add time."


def _memory_text(call: str, uncalled: str) -> str:
    if call == "faster":
        return "XLA's loop moved the same bytes faster than TensorFlow's kernel."
    if call == "slower":
        return ("XLA's loop moved the same bytes more slowly than TensorFlow's kernel, so memory bandwidth is not "
                "what limits it; this run does not show what does.")
    if call in bench.NEGLIGIBLE:
        return "XLA's loop moved the same bytes as fast as TensorFlow's kernel, to within what this run can call."
    return (f"Between XLA's loop and the graph's kernel this run shows {uncalled}, so it does not say which moves "
            "data faster.")


def loop_text(loops: bench.Comparison, *, kernels: int) -> str:
    """What ``arithmetic_or_memory``'s comparison shows about the fused loop of ``kernels`` operations per
    element, in sentences read from its verdicts: whether the chain's arithmetic adds time to one pass over
    the vector, whether XLA's one-operation loop moves data as fast as the graph's kernel, and how much of a
    timed call the copy to NumPy is. Each conclusion follows its own call, and the two are joined into what
    sets the loop's time only where both are called; otherwise the text says what this run cannot tell."""
    n = loops.params.get("n")
    if not isinstance(n, int) or n < 1:
        raise ValueError("the comparison names no vector length; build it with arithmetic_or_memory(n)")
    if kernels < 2:
        raise ValueError(f"kernels must be the chain's number of operations (2 or more), got {kernels}")
    if COPY not in loops.names:
        raise ValueError(f"the comparison has no {COPY!r}; build it with arithmetic_or_memory(n)")
    one_ms, chain_ms, graph_ms, copy_ms = (loops[name].median_s * 1e3 for name in (ONE_OP, CHAIN, GRAPH_ONE_OP, COPY))
    rate, graph_rate = (8 * n / ms / 1e6 for ms in (one_ms, graph_ms))
    arithmetic, memory = loops.call(CHAIN), loops.call(ONE_OP, GRAPH_ONE_OP)
    out = [f"A loop of one multiply-add per element over the same vector, compiled the same way, took "
           f"{one_ms:.1f} ms; the chain's loop of {kernels} operations took {chain_ms:.1f} ms "
           f"({loops.verdict(CHAIN)}).", _arithmetic_text(arithmetic, kernels, chain_ms - one_ms),
           f"The same one operation as a graph kernel took {graph_ms:.1f} ms: XLA's loop moved {rate:.1f} GB/s, "
           f"the graph's kernel {graph_rate:.1f} GB/s ({loops.verdict(ONE_OP, GRAPH_ONE_OP)}).",
           _memory_text(memory, loops.uncalled(ONE_OP, GRAPH_ONE_OP))]
    if arithmetic in bench.NEGLIGIBLE and memory in ("faster", *bench.NEGLIGIBLE):
        out.append(f"With both called, the fused loop costs about one pass over memory, {rate:.1f} GB/s here.")
    out.append(f"Each of these calls ends with `.numpy()`, which copies the result into a new array; alone, that copy "
               f"of one vector took {copy_ms:.1f} ms, {copy_ms / one_ms:.0%} of the one-operation loop's call. A call "
               f"pays it once, so it weighs on one pass as much as on the graph's {kernels}, and the rates above "
               "count it in.")
    return " ".join(out)


def passes_text(large: bench.Comparison, n: int, *, kernels: int) -> str:
    """What removing the graph's passes gained out of the cache: the rates at which the graph's ``kernels``
    kernels and XLA's one loop moved data on ``n`` floats (``large``: the widget's graph against
    ``jit_compile``), and whether the gain, where it is called, stays below the ``kernels``x that
    removing the passes would give if every pass cost the same."""
    whole("n", n, 1)
    whole("kernels", kernels, 2)
    graph_s, xla_s = large[xla.GRAPH].median_s, large[xla.JIT].median_s
    text = (f"Here, out of the cache, the graph's {kernels} kernels moved {kernels * 8 * n / graph_s / 1e9:.0f} GB/s "
            f"between them and XLA's one loop {8 * n / xla_s / 1e9:.1f} GB/s: removing {kernels - 1} of {kernels} "
            f"passes gained {large.judged(xla.JIT)}")
    call = large.call(xla.JIT)
    if call != "faster":
        return text + ", which this run does not call faster."
    if large.interval(xla.JIT)[1] < kernels:
        return text + (f", less than the {kernels}x it would give if every pass cost the same: one pass of XLA's "
                       "loop cost more than one of the graph's kernels. The next cell times what a pass costs.")
    return text + f", as much as the {kernels}x it would give if every pass cost the same."


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
