"""The machine code XLA generates for elementwise maths on a CPU: its own vectorised code, or a call into
the C library per element, read from the LLVM IR and object files XLA dumps in a fresh process."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import tensorflow as tf

from course_lib import processes
from course_lib.xla.workloads import workload_input

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
        result = processes.run("course_lib.xla.machine_code:compiled_code_worker",
                               kwargs={"names": names, "folder": folder},
                               env={"XLA_FLAGS": f"--xla_dump_to={folder}"}, timeout=300).result
    return {r["name"]: CompiledCode(**r) for r in result}


def code_reading(code: dict[str, CompiledCode]) -> str:
    """One sentence on what ``compiled_code`` found for each function: an intrinsic LLVM implemented with
    scalar C-library calls, a library call alone, an intrinsic emitted inline, or XLA's own code."""
    def reads(c: CompiledCode) -> str:
        asked = ", ".join(f"`{i}`" for i in c.intrinsics)
        calls = ", ".join(f"`{f}`" for f in c.library_calls)
        if c.intrinsics and c.library_calls:
            vector = any(".v" in i for i in c.intrinsics)
            return (f"`{c.name}` asks LLVM for {asked}" + (" (a vector of floats at once)" if vector else "")
                    + f", and LLVM implemented it with calls to the C library's {calls}, which computes one "
                    "number per call")
        if c.library_calls:
            return f"`{c.name}` calls the C library's {calls}"
        if c.intrinsics:
            return f"`{c.name}` asks LLVM for {asked} and calls no library function: LLVM emitted it inline"
        return f"`{c.name}` is code XLA emitted itself (no intrinsic, no library call)"

    return "On this machine: " + "; ".join(reads(c) for c in code.values()) + "."

