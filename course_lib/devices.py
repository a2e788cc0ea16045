"""Devices: what TensorFlow sees, where it runs each operation, and how to get more devices.

Lecture 03 calls this module; lectures 05 and 13 use ``virtual_cpus`` to get several
devices on a machine with one CPU. Start-up order matters, and is the reason most of
these helpers exist:

* Virtual devices are fixed when TensorFlow's runtime starts, which happens at the
  first operation, tensor or logical-device listing. ``virtual_cpus(n)`` therefore has
  to run before any other TensorFlow code; called again with the same ``n`` it is a
  no-op, and called too late it raises ``DeviceSetupError`` saying what to do.
* Placement logging is written by TensorFlow's C++ runtime to the process's stderr (not
  to the notebook), and only when switched on before the runtime starts. ``placement_log``
  runs a snippet in a fresh Python process and returns the log as text.
* ``CUDA_VISIBLE_DEVICES`` is read once, when CUDA starts, so it too is shown in a
  fresh process.
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import sys
import textwrap
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from course_lib import kernels, processes
from course_lib.arguments import short_device_name as short_name
from course_lib.arguments import whole
from course_lib.virtual_devices import DeviceSetupError, virtual_cpus, virtual_gpus

__all__ = [
    "DeviceSetupError", "short_name", "device_table", "virtual_cpus", "virtual_gpus", "where",
    "missing_device", "soft_placement", "impossible_placement_error", "memory_growth",
    "PlacementLog", "placement_log", "physical_devices_with", "copy_devices",
    "copy_variants", "shares_buffer", "Transfers", "transfer_moves", "transfer_costs",
]


def device_table() -> list[dict]:
    """Physical devices (the hardware TF found) then logical devices (what ops run on).

    Listing logical devices starts the runtime, after which virtual devices are fixed.
    """
    rows = [{"kind": "physical", "type": d.device_type, "name": d.name}
            for d in tf.config.list_physical_devices()]
    rows += [{"kind": "logical", "type": d.device_type, "name": d.name}
             for d in tf.config.list_logical_devices()]
    return rows


def where(tensor) -> str:
    """The device a tensor lives on, short form (``CPU:1``): proof of where an op ran."""
    if not hasattr(tensor, "device"):
        raise TypeError(f"expected a tensor, got {type(tensor).__name__}")
    return short_name(tensor.device)


def missing_device(device_type: str = "GPU") -> str:
    """A device name that does not exist here, e.g. ``/GPU:0`` on a machine without GPUs."""
    return f"/{device_type}:{len(tf.config.list_logical_devices(device_type))}"


@contextlib.contextmanager
def soft_placement(enabled: bool):
    """Turn soft placement on or off inside the block, then restore it.

    With soft placement on (TensorFlow's default) an op pinned to a device that does not
    exist, or that has no kernel for it, silently runs somewhere else; off, it raises.
    """
    before = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(bool(enabled))
    try:
        yield
    finally:
        tf.config.set_soft_device_placement(before)


def impossible_placement_error(device: str | None = None) -> str:
    """Run a matmul pinned to ``device`` (a missing GPU by default) with soft placement off;
    return the error TensorFlow raises, as ``Type: message``."""
    device = device or missing_device("GPU")
    a = tf.ones([2, 2])
    with soft_placement(False):
        try:
            with tf.device(device):
                tf.matmul(a, a).numpy()
        except (tf.errors.InvalidArgumentError, RuntimeError, ValueError) as exc:
            message = getattr(exc, "message", str(exc))
            return f"{type(exc).__name__}: {message.strip()}"
    raise DeviceSetupError(f"the placement on {device} was possible after all; pick a device that "
                           "does not exist on this machine")


def memory_growth() -> list[str]:
    """Let every GPU allocate memory as needed instead of taking (nearly) all of it at start.

    Returns the GPUs changed (none on a CPU-only machine). Like virtual devices, it must be
    set before the runtime starts.
    """
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError as exc:
            raise DeviceSetupError(f"cannot change memory growth of {gpu.name}: {exc}. Call "
                                   "devices.memory_growth() before any other TensorFlow code.") from None
    return [g.name for g in gpus]


# ---------------------------------------------------------------------------------------
# Fresh processes: placement logs and CUDA_VISIBLE_DEVICES
# ---------------------------------------------------------------------------------------

_LOG_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ (\w+)\.cc:\d+\] (.*)$")
_PLACED = re.compile(r"^(\S+): \((\w+)\): (\S+)$")
_EXECUTED = re.compile(r"^Executing op (\S+) in device (\S+)$")


def _op_name(name: str) -> str:
    name = kernels.op_of(name)  # a oneDNN kernel's name shows its op
    function = re.match(r"^__inference_(.+?)_\d+$", name)
    return f"function {function.group(1)}" if function else f"op {name}"


@dataclass
class PlacementLog:
    """Where each operation of a snippet ran, parsed from TensorFlow's placement log.

    ``lines``: one per eager op or function call, in order, with the ops inside a
    function indented under it the first time it runs; ``output``: what the snippet printed.
    """

    lines: list[str]
    output: str

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _parse_placement(stderr: str) -> list[str]:
    lines, pending = [], []
    for raw in stderr.splitlines():
        match = _LOG_LINE.match(raw.strip())
        if not match:
            continue
        source, message = match.groups()
        placed, executed = _PLACED.match(message), _EXECUTED.match(message)
        if source == "placer" and placed:
            pending.append(placed.groups())
        elif source == "execute" and executed:
            name, device = _op_name(executed.group(1)), short_name(executed.group(2))
            lines.append(f"{name} -> {device}")
            if name.startswith("function"):
                lines += [f"    {node} ({kind}) -> {short_name(dev)}" for node, kind, dev in pending
                          if kind not in ("_Arg", "_Retval")]
            pending = []
    return lines


def placement_log(source: str, *, virtual_cpus: int | None = None, timeout: float = 180) -> PlacementLog:
    """Run ``source`` in a fresh process with device placement logging on; return the log.

    The snippet sees ``tf`` (TensorFlow) and, with ``virtual_cpus=n``, ``n`` logical CPUs.
    Logging is switched on before the runtime starts, which is the only time it takes
    effect for every op.
    """
    split = f"devices.virtual_cpus({int(virtual_cpus)})" if virtual_cpus else ""
    program = (f"import tensorflow as tf\nfrom course_lib import devices\n"
               f"tf.debugging.set_log_device_placement(True)\n{split}\n{textwrap.dedent(source)}\n")
    proc = processes.run(source=program, env={"TF_CPP_MIN_LOG_LEVEL": "0"}, timeout=timeout)
    output = "".join(line for line in proc.stdout.splitlines(keepends=True)
                     if not _PLACED.match(line.strip()))  # the runtime also prints placements to stdout
    return PlacementLog(_parse_placement(proc.stderr), output)


def physical_devices_with(cuda_visible_devices: str, timeout: float = 180) -> list[str]:
    """The physical devices a fresh TensorFlow process sees with this ``CUDA_VISIBLE_DEVICES``.

    ``""`` or ``"-1"`` hides every GPU, ``"1"`` shows only the second one (renumbered GPU:0),
    ``"0,1"`` the first two. CUDA reads the variable once, at start-up, hence a new process.
    """
    return processes.run(source="import tensorflow as tf\nresult = [d.name for d in tf.config.list_physical_devices()]",
                         env={"CUDA_VISIBLE_DEVICES": str(cuda_visible_devices), "TF_CPP_MIN_LOG_LEVEL": "3"},
                         timeout=timeout).result


# ---------------------------------------------------------------------------------------
# The cost of moving data between devices
# ---------------------------------------------------------------------------------------

def copy_devices() -> tuple[str, str]:
    """The two devices the copy demo uses: a GPU and the CPU where there is a GPU, two
    logical CPUs where ``virtual_cpus`` made them, else the one CPU twice."""
    gpus = tf.config.list_logical_devices("GPU")
    cpus = tf.config.list_logical_devices("CPU")
    if gpus:
        return gpus[0].name, cpus[0].name
    return cpus[0].name, cpus[min(1, len(cpus) - 1)].name


def copy_variants(steps: int = 10,
                  devices: tuple[str, str] | None = None) -> dict[str, Callable[..., Callable[[], Any]]]:
    """Widget builders: ``steps`` cheap updates of a tensor, with or without moving it; knob: ``megabytes``.

    * "stay on one device": every step runs where the data already is;
    * "hop between devices": each step runs on the other device, so the tensor must be
      there first: across PCIe between a GPU and the CPU, a copy; between two logical CPUs
      of one process, which share the host's memory, TensorFlow hands over the same buffer
      and copies nothing (``shares_buffer``);
    * "round trip through NumPy": each step's result is pulled to a NumPy array and
      pushed back, two real copies plus a wait for the device to finish.
    """
    whole("steps", steps, 1)
    home, away = devices or copy_devices()

    def data(megabytes):
        if not isinstance(megabytes, (int, float)) or megabytes <= 0:
            raise ValueError(f"megabytes must be a positive number, got {megabytes!r}")
        with tf.device(home):
            return tf.ones([int(megabytes * 2**20) // 4])

    def steps_on(device_of_step, update):
        """A builder whose run makes ``steps`` updates, step i on ``device_of_step(i)``."""
        def build(megabytes):
            x0 = data(megabytes)

            def run():
                x = x0
                for i in range(steps):
                    with tf.device(device_of_step(i)):
                        x = update(x)
                return x
            return run
        return build

    return {"stay on one device": steps_on(lambda i: home, lambda x: x * 0.999),
            "hop between devices": steps_on(lambda i: away if i % 2 == 0 else home, lambda x: x * 0.999),
            "round trip through NumPy": steps_on(lambda i: home, lambda x: tf.constant((x * 0.999).numpy()))}


def _address(tensor) -> int:
    """Where a tensor's bytes start in host memory (``np.asarray`` views a CPU tensor's buffer)."""
    return np.asarray(tensor).ctypes.data


def shares_buffer(tensor, device: str) -> tuple[str, bool]:
    """Make ``tensor`` available on ``device`` (``tf.identity`` there); return where the result
    lives and whether it is the same buffer in memory.

    Two CPU devices of one process use the same host memory, so TensorFlow hands the buffer
    over instead of copying it: the answer is True. A GPU has its own memory: always a copy.
    """
    with tf.device(device):
        moved = tf.identity(tensor)
    on_cpus = all(tf.DeviceSpec.from_string(t.device).device_type == "CPU" for t in (tensor, moved))
    return short_name(moved.device), on_cpus and _address(moved) == _address(tensor)


# how far a copy's time must grow beyond (or fall short of) the bytes' growth to be called faster (or less): a
# small copy's time moves between runs by more than one run's interval holds (docs/performance.md, "Figures
# behind the code's choices")
FAR = 4


@dataclass(repr=False)
class Transfers:
    """How long each way of moving a tensor took at two sizes, and what that says.

    ``rows``: one dict per move with ``move``, ``sizes_mb``, ``seconds`` (median per size) and, where timed
    here, ``times`` (every timed call, per size). A move copies the bytes when its time grows with the size; a
    hand-over does not.
    """

    rows: list[dict]
    gpu: bool

    def copies(self, row: dict) -> bool:
        """Whether the time grew more than the square root of the growth in bytes: between a
        constant time (nothing copied) and a proportional one (every byte copied)."""
        (small, large), (t_small, t_large) = row["sizes_mb"], row["seconds"]
        return t_large / t_small > (large / small) ** 0.5

    @staticmethod
    def rates(row: dict) -> tuple[float, float]:
        """The GB/s a copy moved at each of the two sizes (bytes over median time)."""
        return tuple(mb * 2**20 / seconds / 1e9 for mb, seconds in zip(row["sizes_mb"], row["seconds"]))

    @staticmethod
    def growth_interval(row: dict) -> tuple[float, float]:
        """The 95% interval of the large size's time over the small's, from each size's timed calls (a row with
        medians alone gives their ratio): how the time grew is read from it, not from two medians, so a re-run
        that moves the medians a little does not turn "in proportion" into "faster"."""
        from course_lib import bench

        small, large = row.get("times") or [[seconds] for seconds in row["seconds"]]
        return bench.ratio_interval(large, small, paired=False)

    def summary(self) -> list[dict]:
        """One dict of display strings per move: both times, whether bytes were copied, the rate at each size."""
        def cell(seconds):
            return f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"

        out = []
        for r in self.rows:
            (small, large), (t_small, t_large) = r["sizes_mb"], r["seconds"]
            copies = self.copies(r)
            out.append({"move": r["move"], f"{small:g} MiB": cell(t_small), f"{large:g} MiB": cell(t_large),
                        "bytes copied": "yes" if copies else "no",
                        **{f"GB/s at {mb:g} MiB": f"{rate:.3g}" if copies else ""
                           for mb, rate in zip(r["sizes_mb"], self.rates(r))}})
        return out

    def table(self) -> str:
        """The summary as an HTML table."""
        from course_lib import tables
        return tables.table(self.summary())

    def _repr_html_(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        from course_lib import tables
        return tables.text_table_of(self.summary())

    def verdicts(self):
        """One sentence per move, read from the timings (Markdown in a notebook). For a copy it gives the rate
        at both sizes and says whether the time grew in proportion to the bytes (within a factor of 2 of their
        growth), faster (the larger copy moved fewer bytes per second, by more than a factor of ``FAR``) or
        slower (a cost per call weighs on the small size), so no rate is carried to a size it was not measured
        at; where the growth's interval (``growth_interval``) reaches past a factor of 2, or lies between 2 and
        ``FAR``, it says the run cannot tell or does not call it."""
        from course_lib import bench

        out = []
        for r in self.rows:
            (small, large), (t_small, t_large) = r["sizes_mb"], r["seconds"]
            growth, bytes_growth = t_large / t_small, large / small
            said = f"{growth:.3g}x the time for {bytes_growth:g}x the bytes"
            if not self.copies(r):
                out.append(f"{r['move']}: {said}, so no bytes are copied: the time is the call, not the data")
                continue
            rate_small, rate_large = self.rates(r)
            low, high = self.growth_interval(r)
            lo, hi = low / bytes_growth, high / bytes_growth  # the growth against the bytes'
            if lo > FAR:
                how = "the time grew faster than the bytes, so a rate read at one size does not hold at another"
            elif hi < 1 / FAR:
                how = "the time grew less than the bytes: a cost per call weighs on the small copy"
            elif lo >= 1 / 2 and hi <= 2:
                how = "the time grew about in proportion to the bytes"
            elif lo > 2 or hi < 1 / 2:
                how = (f"the time grew {lo:.2g}-{hi:.2g}x as fast as the bytes (95% interval): "
                       f"{'more' if lo > 2 else 'less'} than in proportion, but within the factor of {FAR} this "
                       "course asks of a copy's growth, since a small copy's time moves between runs, so this run "
                       "does not call it")
            else:
                ways = " or ".join(way for way, reached in (("less than", lo < 1 / 2),
                                                           ("in proportion to", True),
                                                           ("faster than", hi > 2)) if reached)
                how = (f"the time grew {low:.3g}-{high:.3g}x (95% interval), so this run cannot tell whether it grew "
                       f"{ways} the bytes")
            out.append(f"{r['move']}: a copy, {said}: {rate_small:.3g} GB/s at {small:g} MiB, {rate_large:.3g} GB/s "
                       f"at {large:g} MiB; {how}")
        if not self.gpu:
            out.append("no GPU on this machine: the host-to-GPU and GPU-to-host copies are not measured")
        return bench.Verdicts(out)


def transfer_moves(megabytes: float, cpus: list[str], gpus: list[str]) -> dict[str, Callable[[], Any]]:
    """One call per way of moving a ``megabytes`` tensor, each waiting for its move, so its time is the move's."""
    with tf.device(cpus[0]):
        x = tf.ones([int(megabytes * 2**20) // 4])
    array = x.numpy()
    out = {}
    if len(cpus) > 1:
        def hop():
            with tf.device(cpus[1]):
                return where(tf.identity(x))  # CPU work is synchronous: done when it returns
        out[f"{short_name(cpus[0])} -> {short_name(cpus[1])} (tf.identity)"] = hop
    out["tensor -> NumPy (.numpy())"] = lambda: x.numpy().shape
    out["NumPy -> tensor (tf.constant)"] = lambda: where(tf.constant(array))
    if gpus:
        with tf.device(gpus[0]):
            on_gpu = tf.identity(x)

        def to_gpu():
            with tf.device(gpus[0]):
                return tf.identity(x)[:1].numpy()  # reading one element waits for the copy
        out[f"host -> {short_name(gpus[0])}"] = to_gpu
        out[f"{short_name(gpus[0])} -> host (.numpy())"] = lambda: on_gpu.numpy().shape
    return out


def transfer_costs(sizes_mb: tuple[float, float] = (1, 64), *, repeats: int = 5) -> Transfers:
    """Time each way of moving a float32 tensor at two sizes: between two logical CPUs (when
    there are two), from a tensor to NumPy and back, and between the host and the first GPU
    (when there is one). Each timed call moves the tensor once and forces nothing else."""
    from course_lib import bench

    if len(sizes_mb) != 2 or not all(isinstance(m, (int, float)) and m > 0 for m in sizes_mb) \
            or sizes_mb[0] >= sizes_mb[1]:
        raise ValueError(f"sizes_mb must be two sizes in MiB, small then large, got {sizes_mb!r}")
    cpus = [d.name for d in tf.config.list_logical_devices("CPU")]
    gpus = [d.name for d in tf.config.list_logical_devices("GPU")]

    timings: dict[str, list[list[float]]] = {}
    for mb in sizes_mb:
        for name, fn in transfer_moves(mb, cpus, gpus).items():
            timings.setdefault(name, []).append(bench.measure(fn, name=name, repeats=repeats).times_s)
    rows = [{"move": name, "sizes_mb": list(sizes_mb), "seconds": [statistics.median(t) for t in times],
             "times": times} for name, times in timings.items()]
    return Transfers(rows, gpu=bool(gpus))


class NativeLog:
    """What TensorFlow's C++ runtime writes to standard error (file descriptor 2) from ``start`` on, copied
    as it passes: every write still reaches standard error, and ``text`` returns them all so far.

    Some log lines appear only on some machines (with oneDNN on, for instance) and only once a process, at
    the first graph that triggers them; a notebook starts the log in its first cell so a later cell can
    explain a line only where this run wrote it.
    """

    def __init__(self, read_fd: int, out_fd: int):
        self._chunks: list[bytes] = []
        self._lock = threading.Lock()
        self._out = out_fd
        self._thread = threading.Thread(target=self._copy, args=(read_fd,), daemon=True, name="native-log")
        self._thread.start()

    @classmethod
    def start(cls) -> "NativeLog":
        """Route file descriptor 2 through a pipe whose reader copies each write to the real standard error
        and keeps it."""
        read_fd, write_fd = os.pipe()
        sys.stderr.flush()
        out_fd = os.dup(2)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        return cls(read_fd, out_fd)

    def _copy(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            while data := pipe.read(65536):
                os.write(self._out, data)
                with self._lock:
                    self._chunks.append(data)

    def text(self) -> str:
        """Everything written to standard error since ``start``, as text."""
        with self._lock:
            return b"".join(self._chunks).decode(errors="replace")

    def stop(self) -> str:
        """Give file descriptor 2 back to the real standard error, wait for the copy to drain, and return
        ``text``."""
        sys.stderr.flush()
        os.dup2(self._out, 2)  # the pipe's last writer closes, so the copying thread reads its end
        self._thread.join(timeout=5)
        os.close(self._out)
        return self.text()
