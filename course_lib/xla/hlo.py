"""What XLA compiles, before and after optimisation: a function's HLO text (``hlo``), read into
instructions and counted (``parse_hlo``, ``hlo_ops``, ``count_fusions``, ``fused_ops``, ``describe``), and
what a failing compilation says (``compile_error``, ``unsupported_ops``)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import tensorflow as tf

from course_lib import bench

STAGES = ("hlo", "optimized_hlo")


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
    compiled = fn if is_jit(fn) else jit(fn)
    return compiled.experimental_get_compiler_ir(*args)(stage=stage)


def is_jit(fn) -> bool:
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
