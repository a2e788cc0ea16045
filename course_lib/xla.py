"""XLA on this machine: what compiling a function does, what it costs, and when it pays.

``jit_compile=True`` compiles one ``tf.function`` as a whole. Auto-clustering
(``TF_XLA_FLAGS=--tf_xla_auto_jit=2``) lets TensorFlow carve compilable clusters out
of every graph instead; the flag is read when TensorFlow starts, so it is measured in
a fresh process (``run_with_flags``, through ``course_lib.processes``), and on a CPU it also needs
``--tf_xla_cpu_global_jit`` (without it only GPU clusters are formed).

The HLO readers show what fusion does (``hlo``, ``hlo_ops``, ``describe``); the
profiler reader (``profile``, ``Trace``) counts XLA compilations, which is how
recompilation on new shapes is seen, and also lists the kernels a plain graph runs
(``graph_kernels``); the workloads are the cases where XLA wins on a CPU (a fusable
elementwise chain) and where it does not (random numbers, whose two halves are also
workloads of their own, and small graphs).
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from course_lib import bench, graphs, processes
from course_lib.evo.validation import whole

AUTO_JIT_FLAGS = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"
GRAPH, JIT, AUTO = "graph (tf.function)", "XLA (jit_compile=True)", "XLA auto-clustering"
STAGES = ("hlo", "optimized_hlo")


# -- HLO: what XLA compiles, before and after optimisation -------------------------------------

def jit(fn: Callable) -> Callable:
    """``fn`` as a ``tf.function`` compiled with XLA (a tf.function is rewrapped around its Python code)."""
    python_fn = getattr(fn, "python_function", fn)
    if not callable(python_fn):
        raise TypeError(f"expected a function to compile, got {type(fn).__name__}")
    return tf.function(python_fn, jit_compile=True)


def hlo(fn: Callable, *args, stage: str = "hlo") -> str:
    """The HLO text XLA builds for ``fn(*args)``: ``stage="hlo"`` as traced, ``"optimized_hlo"`` after
    XLA's passes (fusion among them). ``args`` are tensors or ``tf.TensorSpec``s."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose one of: {', '.join(STAGES)}")
    compiled = fn if _is_jit(fn) else jit(fn)
    return compiled.experimental_get_compiler_ir(*args)(stage=stage)


def _is_jit(fn) -> bool:
    """Whether ``fn`` is already a tf.function with jit_compile=True (kept as is, signature and all)."""
    return getattr(fn, "_jit_compile", False) is True


@contextlib.contextmanager
def native_log_held():
    """Hold what TensorFlow's C++ runtime writes to standard error (file descriptor 2) during the block.

    A failing XLA compilation logs a warning with the Python stack that created the op, file paths of the
    machine included, before Python sees the exception; the yielded list receives that text instead.
    """
    held: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield held
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            held.append(sink.read().decode(errors="replace"))


def compile_error(fn: Callable, *args) -> tf.errors.InvalidArgumentError | None:
    """Call ``fn(*args)`` (a ``jit_compile`` function expected to fail): the error XLA raised, or None if it
    compiled; TensorFlow's C++ log of the failure is held back (``native_log_held``)."""
    with native_log_held():
        try:
            bench.force(fn(*args))
        except tf.errors.InvalidArgumentError as err:
            return err
    return None


def unsupported_ops(error: Exception) -> list[str]:
    """The op types an XLA compile error names as having no XLA kernel."""
    return sorted(set(re.findall(r"No registered '(\w+)' OpKernel for XLA", str(error))))


_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.-]+)\s.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.-]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"(?:^|\s)([a-z][a-z0-9-]*)\(")


@dataclass
class Instruction:
    name: str
    opcode: str
    operands: list[str]
    calls: str | None = None
    kind: str | None = None


def _split_operands(rest: str, start: int) -> tuple[str, str]:
    """The text inside the parentheses that open at ``start``, and what follows them."""
    depth = 0
    for i in range(start, len(rest)):
        if rest[i] == "(":
            depth += 1
        elif rest[i] == ")":
            depth -= 1
            if depth == 0:
                return rest[start + 1:i], rest[i + 1:]
    return rest[start + 1:], ""


def parse_hlo(text: str) -> dict[str, list[Instruction]]:
    """The computations of an HLO module, by name; the entry computation is also under ``"ENTRY"``."""
    if "HloModule" not in text:
        raise ValueError("this is not HLO text: expected the output of hlo(fn, *args), "
                         "which starts with 'HloModule'")
    computations: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    for line in text.splitlines():
        if current is None:
            header = _HEADER.match(line)
            if header and not line.startswith("HloModule"):
                current = []
                computations[header.group(2)] = current
                if header.group(1):
                    computations["ENTRY"] = current
            continue
        if line.strip() == "}":
            current = None
            continue
        inst = _INSTRUCTION.match(line)
        if not inst:
            continue
        rest = inst.group(2)
        opcode = _OPCODE.search(rest)
        if not opcode:
            continue
        inside, after = _split_operands(rest, opcode.end() - 1)
        calls = re.search(r"calls=%?([\w.-]+)", after)
        kind = re.search(r"kind=(\w+)", after)
        current.append(Instruction(inst.group(1), opcode.group(1), re.findall(r"%([\w.-]+)", inside),
                                   calls.group(1) if calls else None, kind.group(1) if kind else None))
    if "ENTRY" not in computations:
        raise ValueError("no ENTRY computation found in the HLO text")
    return computations


def hlo_ops(text: str) -> Counter:
    """How many instructions of each opcode the entry computation runs (fused bodies count as one)."""
    return Counter(inst.opcode for inst in parse_hlo(text)["ENTRY"])


def count_fusions(text: str) -> int:
    """Fusion instructions in the entry computation: each is one loop (or kernel) doing many ops."""
    return hlo_ops(text)["fusion"]


def _fused(comps: dict[str, list[Instruction]], inst: Instruction) -> Counter:
    return Counter(i.opcode for i in comps[inst.calls] if i.opcode != "parameter")


def fused_ops(text: str) -> Counter:
    """The operations inside the entry computation's fusions, by opcode (what the fused loops compute)."""
    comps = parse_hlo(text)
    return sum((_fused(comps, i) for i in comps["ENTRY"] if i.opcode == "fusion" and i.calls in comps), Counter())


def describe(text: str) -> str:
    """The entry computation one instruction per line, without shapes and metadata; a fusion lists
    the operations it fused."""
    comps = parse_hlo(text)
    lines = []
    for inst in comps["ENTRY"]:
        line = f"{inst.name} = {inst.opcode}({', '.join(inst.operands)})"
        if inst.opcode == "fusion" and inst.calls in comps:
            fused = _fused(comps, inst)
            line += f"  [{inst.kind}: " + ", ".join(f"{op} x{n}" if n > 1 else op
                                                     for op, n in sorted(fused.items())) + "]"
        lines.append(line)
    return "\n".join(lines)


# -- The profiler: XLA compilations and time per op -------------------------------------------------

@dataclass
class Trace:
    """Events recorded by the TensorFlow profiler (read from the ``.xplane.pb`` it wrote)."""

    logdir: Path
    events: list[tuple[str, str, float]] = field(default_factory=list)  # (thread, name, seconds)

    def load(self) -> "Trace":
        from tensorflow.tsl.profiler.protobuf import xplane_pb2

        files = sorted(self.logdir.glob("plugins/profile/*/*.xplane.pb"), key=lambda p: p.stat().st_mtime)
        if not files:
            raise RuntimeError(f"the profiler wrote no trace under {self.logdir}; is this TensorFlow "
                               "build missing the profiler?")
        space = xplane_pb2.XSpace()
        space.ParseFromString(files[-1].read_bytes())
        self.events = []
        for plane in space.planes:
            names = {k: v.name for k, v in plane.event_metadata.items()}
            for line in plane.lines:
                self.events.extend((line.name, names.get(ev.metadata_id, ""), ev.duration_ps * 1e-12)
                                   for ev in line.events)
        return self

    def compilations(self) -> int:
        """How many XLA executables were compiled while the profiler ran."""
        return sum(1 for _, name, _ in self.events if name.endswith("Compiler::RunBackend"))

    def op_calls(self) -> Counter:
        """How many times each TensorFlow op type ran (``scope/name:Type`` events), kernels of a graph included."""
        return Counter(op for op, _ in self._op_events())

    def _op_events(self) -> Iterable[tuple[str, float]]:
        for _, name, seconds in self.events:
            m = re.fullmatch(r"[\w./-]+:(\w+)", name)
            if m:
                yield m.group(1), seconds

    def ops(self, top: int = 10) -> list[dict]:
        """TensorFlow ops by total time, grouped by op type (``scope/name:Type`` events)."""
        total: Counter = Counter()
        calls: Counter = Counter()
        for op, seconds in self._op_events():
            total[op] += seconds
            calls[op] += 1
        all_ops = sum(total.values()) or 1.0
        return [{"op type": op, "calls": calls[op], "total (ms)": s * 1e3, "% of op time": 100 * s / all_ops}
                for op, s in total.most_common(top)]


@contextlib.contextmanager
def profile(logdir: str | os.PathLike | None = None):
    """Run the TensorFlow profiler around a block; the yielded ``Trace`` is filled when the block ends.

    With ``logdir`` the trace is kept there for TensorBoard's Profile tab; without, a temporary
    folder is used and removed.
    """
    tmp = tempfile.TemporaryDirectory() if logdir is None else None
    path = Path(tmp.name if tmp else logdir)
    path.mkdir(parents=True, exist_ok=True)
    trace = Trace(path)
    try:
        tf.profiler.experimental.start(str(path))
    except Exception as exc:
        if tmp:
            tmp.cleanup()
        raise RuntimeError(f"could not start the TensorFlow profiler ({type(exc).__name__}: {exc}); "
                           "only one profiling session can run at a time") from exc
    finished = False
    try:
        yield trace
        finished = True
    finally:
        tf.profiler.experimental.stop()
        try:
            if finished:  # a failing block keeps its own error
                trace.load()
        finally:
            if tmp:
                tmp.cleanup()


def count_compilations(fn: Callable, calls: Iterable[Sequence]) -> int:
    """Call ``fn(*args)`` for each ``args`` in ``calls`` and count the XLA compilations they caused
    (the count replaces TensorFlow's retracing warning, which is kept out)."""
    with profile() as trace, graphs.captured_tf_warnings():
        for args in calls:
            bench.force(fn(*args))
    return trace.compilations()


def graph_kernels(fn: Callable, *args) -> Counter:
    """The kernels one call of ``tf.function(fn)(*args)`` runs, by op type: what is left of the traced graph
    after TensorFlow's graph optimiser (Grappler) rewrote it, read from the profiler."""
    graph = tf.function(getattr(fn, "python_function", fn))
    bench.force(graph(*args))  # traced and optimised before the profiled call
    with profile() as trace:
        bench.force(graph(*args))
    return trace.op_calls()


def busy_threads(fn: Callable[[], Any], *, calls: int = 10, share: float = 0.2) -> int | None:
    """How many threads of this process did at least ``share`` of the CPU time spent in ``calls`` calls of
    ``fn`` (read from Linux's per-thread counters, so other processes on the machine do not count); None
    where the system does not report them."""
    def cpu_ticks() -> dict[str, int]:
        ticks = {}
        for task in Path("/proc/self/task").glob("*"):
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # the thread ended
                continue
            ticks[task.name] = int(fields[11]) + int(fields[12])  # user and system time
        return ticks

    if not Path("/proc/self/task").is_dir():
        return None
    whole("calls", calls, 1)
    bench.force(fn())
    before = cpu_ticks()
    for _ in range(calls):
        bench.force(fn())
    used = [t - before.get(name, 0) for name, t in cpu_ticks().items()]
    total = sum(used)
    return sum(1 for t in used if t >= share * total) if total else None


def measure_and_count(fn: Callable[[], Any], *, name: str, repeats: int = 5,
                      warmup: int = 1) -> tuple[bench.Timing, int]:
    """``bench.measure`` of ``fn``, and the XLA compilations its first call caused (profiled apart,
    so the profiler does not slow the steady state)."""
    with profile() as trace:
        first = bench.measure(fn, name=name, repeats=1, warmup=0, number=1)
    timing = bench.measure(fn, name=name, repeats=repeats, warmup=warmup)
    timing.first_call_s = first.first_call_s
    return timing, trace.compilations()


# -- Recompilation on new shapes, and how to avoid it ---------------------------------------------

def masked_chain_mean(x, n):
    """Mean of ``elementwise_chain(x)`` over the first ``n`` entries: padding past ``n`` changes nothing."""
    mask = tf.range(tf.shape(x)[0]) < n
    total = tf.reduce_sum(tf.where(mask, elementwise_chain(x), tf.zeros_like(x)))
    return total / tf.cast(n, x.dtype)


def bucket(n: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds ``n`` entries."""
    for b in sorted(buckets):
        if n <= b:
            return b
    raise ValueError(f"length {n} is larger than the largest bucket {max(buckets)}; add a bigger bucket")


def pad_to_bucket(x, buckets: Sequence[int]):
    """``x`` (1-D) zero-padded to its bucket's length, and its true length as an int32 tensor."""
    x = tf.convert_to_tensor(x)
    n = int(x.shape[0])
    return tf.pad(x, [[0, bucket(n, buckets) - n]]), tf.constant(n, tf.int32)


STRATEGIES = ("a new shape per call", "input_signature with None", "pad to buckets")
BUCKETS = (256, 512, 1024, 2048)


def _recompiling_function(strategy: str, buckets: Sequence[int]):
    if strategy == "a new shape per call":
        f = tf.function(masked_chain_mean, jit_compile=True)
        return f, lambda x: f(x, tf.constant(int(x.shape[0]), tf.int32))
    if strategy == "input_signature with None":
        f = tf.function(masked_chain_mean, jit_compile=True,
                        input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.int32)])
        return f, lambda x: f(x, tf.constant(int(x.shape[0]), tf.int32))
    if strategy == "pad to buckets":
        f = tf.function(masked_chain_mean, jit_compile=True)
        return f, lambda x: f(*pad_to_bucket(x, buckets))
    raise ValueError(f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")


def recompilations(lengths: Sequence[int], strategy: str, *, buckets: Sequence[int] = BUCKETS,
                   seed: int = 0) -> dict:
    """Call a jit-compiled function on vectors of ``lengths`` with one ``strategy``; count traces and
    XLA compilations, and time the whole sequence the first time (compiling) and again (cached).
    The profiler that counts compilations runs throughout, so every pass carries its small overhead."""
    inputs = [tf.random.stateless_uniform([n], seed=(seed, i)) for i, n in enumerate(lengths)]
    fn, call = _recompiling_function(strategy, buckets)
    # Retracing is what this measures: the traces are counted below, so TensorFlow's warning about them is kept out.
    with profile() as trace, graphs.captured_tf_warnings():
        timing = bench.measure(lambda: [call(x) for x in inputs], name=strategy, repeats=3, warmup=0)
    return {"strategy": strategy, "calls": len(lengths), "distinct lengths": len(set(lengths)),
            "traces": fn.experimental_get_tracing_count(), "XLA compilations": trace.compilations(),
            "first pass (ms)": timing.first_call_s * 1e3, "cached pass (ms)": timing.median_s * 1e3}


def recompilation_table(lengths: Sequence[int], *, buckets: Sequence[int] = BUCKETS) -> list[dict]:
    """``recompilations`` for every strategy, as rows for ``bench.table``."""
    return [recompilations(lengths, s, buckets=buckets) for s in STRATEGIES]


# -- Where XLA wins and loses on a CPU ------------------------------------------------------------

def elementwise_chain(x):
    """Cheap elementwise ops, thirty as written: as separate kernels each reads and writes the whole
    tensor; fused, XLA makes one pass over memory."""
    y = x
    for _ in range(6):
        y = tf.maximum(y * 0.9 + 0.1 * x * x, -1.0)
    return y


def random_numbers(x, seed):
    """Mostly random-number generation (counter-based Philox, then a transform to a normal distribution).
    ``seed`` is a tensor argument: with a constant seed and a static shape the graph's constant folding
    could draw the numbers once, when the graph is optimised, and every call would only add them."""
    return tf.random.stateless_normal(tf.shape(x), seed=seed) * 0.1 + x


def random_bits(x, seed):
    """The first half of ``random_numbers`` alone: the generator's raw 32-bit words, one per entry of ``x``."""
    return tf.random.stateless_uniform(tf.shape(x), seed=seed, minval=None, maxval=None, dtype=tf.uint32)


def box_muller(u1, u2):
    """The second half alone: normal numbers from two vectors of uniform numbers in (0, 1], two per pair
    (a logarithm, a square root, a sine and a cosine), the transform XLA's optimised HLO of ``random_numbers``
    applies to the bits."""
    radius = tf.sqrt(-2.0 * tf.math.log(u1))
    angle = 2.0 * np.pi * u2
    return tf.concat([radius * tf.cos(angle), radius * tf.sin(angle)], axis=0)


WORKLOADS: dict[str, Callable] = {"elementwise chain": elementwise_chain, "random numbers": random_numbers,
                                  "random bits": random_bits, "Box-Muller": box_muller}
SEED = (1, 2)  # the seed the random workloads receive as an argument


def workload_input(n: int, seed: int = 0):
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a whole number of elements >= 1, got {n!r}")
    return tf.random.stateless_uniform([int(n)], seed=(seed, 0), minval=-1.0, maxval=1.0)


def workload_args(workload: str, n: int) -> tuple:
    """The arguments a workload is called with: the input vector, for the random workloads with the seed
    tensor; for Box-Muller the two vectors of uniform numbers (``n // 2`` each) it turns into ``n`` normal ones."""
    _workload(workload)
    if workload == "Box-Muller":
        half = max(int(n) // 2, 1)
        return tuple(1.0 - tf.random.stateless_uniform([half], seed=(i, 1)) for i in range(2))  # in (0, 1]
    x = workload_input(n)
    return (x, tf.constant(SEED, tf.int32)) if workload in ("random numbers", "random bits") else (x,)


def _workload(name: str) -> Callable:
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of: {', '.join(WORKLOADS)}")
    return WORKLOADS[name]


def workload_variants() -> dict[str, Callable[..., Callable]]:
    """Builders for ``SpeedupWidget``, graph and XLA: each takes ``workload`` and ``n`` and returns the
    call to time, compiled fresh (so the first call shows what tracing or compiling costs)."""

    def builder(jit_compile: bool):
        def build(workload: str = "elementwise chain", n: int = 1_000_000):
            fn = tf.function(_workload(workload), jit_compile=jit_compile)
            args = workload_args(workload, n)
            return lambda: fn(*args)
        return build

    return {GRAPH: builder(False), JIT: builder(True)}


def variant_threads(workload: str, n: int, *, calls: int = 5) -> dict[str, int | None]:
    """``busy_threads`` of the graph and the XLA variant of one workload at ``n`` elements (``workload_variants``;
    the retracing warning of building them again is kept out)."""
    with graphs.captured_tf_warnings():
        return {name: busy_threads(build(workload, n), calls=calls) for name, build in workload_variants().items()}


def speedup_widget(n_choices: Sequence[int] = (16, 10_000, 1_000_000, 16_000_000), *, repeats: int = 5):
    """The live widget comparing graph and XLA on each workload and size."""
    from course_lib.widgets import SpeedupWidget

    return SpeedupWidget(workload_variants(), sizes={"workload": list(WORKLOADS), "n": list(n_choices)},
                         baseline=GRAPH, title="XLA vs graph on this CPU", repeats=repeats)


def cache_bytes() -> int | None:
    """The largest CPU cache of this machine in bytes (the last level, usually), or None if unknown."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip().upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes) if sizes else None


def fusion_rows(results: Mapping[int, bench.Comparison], *, kernels: int) -> list[dict]:
    """Graph against XLA on the elementwise chain at each size ``n``: whether the vector fits in the largest
    cache, and the rates at which each moved data. The graph runs ``kernels`` kernels per call (``graph_kernels``),
    each reading and writing at least one vector of 4-byte floats; XLA's fused loop reads and writes one."""
    whole("kernels", kernels, 1)
    cache = cache_bytes()
    rows = []
    for n, comparison in sorted(results.items()):
        graph, fused = comparison[GRAPH].median_s, comparison[JIT].median_s
        rows.append({"n": f"{n:,}", "vector (MiB)": 4 * n / 2**20,
                     "fits in the largest cache": "unknown" if cache is None else ("yes" if 4 * n <= cache else "no"),
                     "graph (ms)": graph * 1e3, "XLA (ms)": fused * 1e3,
                     "XLA speedup": bench.ratio_text(comparison.speedup(JIT)),
                     "graph's kernels moved (GB/s)": kernels * 8 * n / graph / 1e9,
                     "XLA's loop moved (GB/s)": 8 * n / fused / 1e9})
    return rows


def break_even_calls(comparison: bench.Comparison, variant: str, over: str | None = None) -> float:
    """How many calls it takes for ``variant``'s faster steady state to pay back its slower first call
    (compilation); ``inf`` when it is not faster, 0 when its first call is not slower."""
    over = over or comparison.baseline
    a, b = comparison[variant], comparison[over]
    extra = a.first_call_s - b.first_call_s
    saving = b.median_s - a.median_s
    if extra <= 0:
        return 0.0
    return float("inf") if saving <= 0 else extra / saving


# -- The machine code XLA generates: its own code, or a call into the C library --------------------

ELEMENTWISE: dict[str, Callable] = {
    "sin(x)": tf.sin, "cos(x)": tf.cos, "exp(x)": tf.exp, "tanh(x)": tf.tanh,
    "sqrt(x²+1)": lambda v: tf.sqrt(v * v + 1.0),
}
# Single-precision functions of the C maths library that compiled code may call instead of inlining.
LIBM = ("sinf", "cosf", "tanf", "expf", "logf", "tanhf", "powf", "sqrtf", "sin", "cos", "exp", "log",
        "tanh", "pow", "sqrt")


@dataclass
class CompiledCode:
    """What XLA's CPU backend made of one elementwise function: the LLVM intrinsics its optimised IR calls
    (``llvm.sin.v8f32``: a sine of 8 floats, left to LLVM to implement) and the C-library functions the
    object code it produced links to (``sinf``: the C library's scalar sine, called once per element)."""

    name: str
    intrinsics: list[str]
    library_calls: list[str]


def compiled_code_worker(names: Sequence[str], folder: str, n: int = 1024) -> list[dict]:
    """Runs in a fresh process started with ``XLA_FLAGS=--xla_dump_to=folder``: compile each
    ``ELEMENTWISE[name]`` with XLA in turn and read the files its compilation dumped."""
    seen: set[Path] = set()
    out = []
    for name in names:
        fn = tf.function(lambda v, f=ELEMENTWISE[name]: tf.reduce_sum(f(v)), jit_compile=True)
        fn(workload_input(n))
        new = set(Path(folder).iterdir()) - seen
        seen |= new
        ir = "".join(p.read_text() for p in new if p.name.endswith("ir-with-opt.ll"))
        words = set()
        for obj in (p for p in new if p.suffix == ".o"):
            words.update(w.decode("ascii", "replace") for w in obj.read_bytes().split(b"\0"))
        intrinsics = sorted(set(re.findall(r"@(llvm\.(?:sin|cos|exp|log|tanh|sqrt|pow)\.[\w.]+)\(", ir)))
        out.append({"name": name, "intrinsics": intrinsics, "library_calls": [f for f in LIBM if f in words]})
    return out


def compiled_code(names: Sequence[str] = tuple(ELEMENTWISE)) -> dict[str, CompiledCode]:
    """Compile each ``ELEMENTWISE[name]`` with XLA in one fresh process that dumps its LLVM IR and object
    code, and report which maths functions the generated code implements itself and which it calls in the
    C library."""
    names = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in names if n not in ELEMENTWISE]
    if unknown or not names:
        raise ValueError(f"unknown function(s) {unknown or names!r}; choose from: {', '.join(ELEMENTWISE)}")
    with tempfile.TemporaryDirectory(prefix="xla-dump-") as folder:
        result = processes.run("course_lib.xla:compiled_code_worker", kwargs={"names": names, "folder": folder},
                               env={"XLA_FLAGS": f"--xla_dump_to={folder}"}, timeout=300).result
    return {r["name"]: CompiledCode(**r) for r in result}

# -- Auto-clustering, in a process started with the flags -------------------------------------------

def run_with_flags(target: str, flags: str = AUTO_JIT_FLAGS, *, timeout: float = 600, **kwargs) -> Any:
    """Run ``module:function(**kwargs)`` in a fresh Python whose TensorFlow starts with
    ``TF_XLA_FLAGS=flags`` (``processes.run``); return what it returned (anything JSON can carry)."""
    return processes.run(target, kwargs=kwargs, xla_flags=flags, timeout=timeout).result


def timing_from_dict(d: Mapping) -> bench.Timing:
    """A ``bench.Timing`` back from ``Timing.to_dict()`` (how a subprocess reports one)."""
    return bench.Timing(name=d["name"], first_call_s=d["first_call_s"], times_s=list(d["times_s"]),
                        number=d["number"])


def process_comparison(target: str, variants: Mapping[str, tuple[str, Mapping]], *, rounds: int = 1,
                       title: str = "", timeout: float = 600, **kwargs) -> bench.Comparison:
    """Compare variants that each run in a fresh process: ``name -> (TF_XLA_FLAGS, extra kwargs)``.

    When one variant needs its own process (auto-clustering is set when TensorFlow starts), the variants it
    is compared with run in fresh processes too, so no ratio sets a child process against the notebook's
    warm one. ``target`` is a ``module:function`` returning ``{"timing": Timing.to_dict(), "compilations":
    int}`` and optionally ``"start_up_s"`` (the process's first call, before the timed one; its median over the
    rounds goes to ``params["start-up (s)"]``); ``rounds`` run every variant once in turn (A, B, A, B, ...),
    so a machine that slows down hits all variants alike, and each variant's timed repeats are pooled. The
    baseline is the first variant.
    """
    if not variants:
        raise ValueError("process_comparison needs at least one variant: {name: (flags, kwargs)}")
    whole("rounds", rounds, 1)
    times: dict[str, list[float]] = {name: [] for name in variants}
    firsts: dict[str, list[float]] = {name: [] for name in variants}
    compilations: dict[str, list[int]] = {name: [] for name in variants}
    start_ups: dict[str, list[float]] = {name: [] for name in variants}
    number: dict[str, int] = {}
    for _ in range(rounds):
        for name, (flags, extra) in variants.items():
            result = run_with_flags(target, flags, timeout=timeout, **kwargs, **dict(extra))
            timing = timing_from_dict(result["timing"])
            times[name] += timing.times_s
            firsts[name].append(timing.first_call_s)
            compilations[name].append(result["compilations"])
            if "start_up_s" in result:
                start_ups[name].append(result["start_up_s"])
            number.setdefault(name, timing.number)
    timings = [bench.Timing(name, statistics.median(firsts[name]), times[name], number[name]) for name in variants]
    params = {**kwargs, "rounds": rounds, "TF_XLA_FLAGS": {n: f for n, (f, _) in variants.items()},
              "compilations": {n: max(c) for n, c in compilations.items()}}
    if all(start_ups.values()):
        params["start-up (s)"] = {n: statistics.median(s) for n, s in start_ups.items()}
    return bench.Comparison(timings, baseline=next(iter(variants)), machine=bench.machine(), title=title,
                            params=params)


START_UP_N = 16  # elements of the call that starts TensorFlow's (and XLA's) machinery in a fresh process


def auto_clustered_worker(workload: str, n: int, repeats: int = 5, jit_compile: bool = False) -> dict:
    """Runs in a fresh process: a tf.function of the workload (auto-clustered when the process started with
    the flags, or ``jit_compile``), its timing and the XLA compilations it caused at ``n`` elements.

    The function is first called once on ``START_UP_N`` elements (``start_up_s``): that first call of the
    process also pays the one-time start-up of what it uses (XLA's compiler among them), so the first call
    then timed at ``n`` holds only this shape's tracing and compiling, as in a process already running."""
    fn = tf.function(_workload(workload), jit_compile=True if jit_compile else None)
    small = workload_args(workload, START_UP_N)
    start_up = bench.measure(lambda: fn(*small), name="start-up", repeats=1, warmup=0, number=1).first_call_s
    args = workload_args(workload, n)
    timing, compilations = measure_and_count(lambda: fn(*args), name=workload, repeats=repeats)
    return {"timing": timing.to_dict(), "compilations": compilations, "start_up_s": start_up}


def jit_vs_auto(workload: str = "elementwise chain", n: int = 1_000_000, *, repeats: int = 5,
                flags: str = AUTO_JIT_FLAGS, auto: bool = True, rounds: int = 1) -> bench.Comparison:
    """The plain graph, ``jit_compile=True`` and (unless ``auto`` is False) auto-clustering on one workload,
    each in fresh processes, ``rounds`` times in turn (``process_comparison``); ``params["compilations"]``
    holds how many XLA executables each variant compiled, ``params["start-up (s)"]`` each process's first call
    (``auto_clustered_worker``)."""
    variants = {GRAPH: ("", {}), JIT: ("", {"jit_compile": True})}
    if auto:
        variants[AUTO] = (flags, {})
    return process_comparison("course_lib.xla:auto_clustered_worker", variants, rounds=rounds,
                              title=f"graph, jit_compile and auto-clustering: {workload}, n={n:,}, "
                                    f"fresh processes", workload=workload, n=n, repeats=repeats)
