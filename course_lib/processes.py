"""Code in a fresh Python process, and its result back: the one way the course does it.

Several of TensorFlow's settings are read once, when it starts: XLA flags
(``TF_XLA_FLAGS``), thread pools and ``OMP_NUM_THREADS``, oneDNN, ``CUDA_VISIBLE_DEVICES``,
logical devices, placement logging, and the ``TF_CONFIG`` that tells a worker of
MultiWorkerMirroredStrategy where its peers are. A lecture that shows one of them runs
code in a new Python, and ``run`` (one process) and ``run_many`` (several at once, each
with its own environment) are how; ``Workers`` keeps such processes alive to time variants
in turns:

* the child runs ``module:function(*args, **kwargs)`` or a source snippet, after the
  environment variables, the XLA flags and the logical CPUs asked for are in place;
* what the function returned (or what the snippet left in a variable named ``result``)
  comes back as JSON through a file, so the child's own printing and TensorFlow's log
  lines never get in the way; its stdout and stderr come back as text too;
* a child that fails raises ``ChildError`` naming it, its exit code and the end of its
  stderr; one still running after ``timeout`` raises ``ChildTimeout``; as soon as one
  of several fails, the others are stopped;
* however it ends, every child and whatever it started is stopped before the call
  returns (each child leads its own process group: SIGTERM, then SIGKILL);
* ``Workers`` starts live processes for each variant (two by default, and as many again for the
  baseline's A/A twin), each building its callable once, then asks them in turns, round after
  round, to time a call: a variant that needs its own process is compared like any other, with
  ``bench.compare_timers``, never one process after another.

The module imports neither TensorFlow nor NumPy, so the ``course`` command stays quick.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["ChildError", "ChildTimeout", "Finished", "Workers", "process_medians", "run", "run_many"]

_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_BARRIER_S = 60.0  # how long a finished child waits for the others before exiting
_TAIL_LINES = 20


class ChildError(RuntimeError):
    """A child process failed: which one (``worker``, its index), how it ended, the end of its stderr."""

    def __init__(self, message: str, *, worker: int | None = None, returncode: int | None = None,
                 stderr_tail: str = ""):
        super().__init__(message)
        self.worker, self.returncode, self.stderr_tail = worker, returncode, stderr_tail


class ChildTimeout(ChildError, TimeoutError):
    """The children had not all finished within the timeout; all were stopped."""


@dataclass
class Finished:
    """One child that ended well: what it returned (through JSON) and what it printed."""

    result: Any
    stdout: str
    stderr: str


def run(target: str | None = None, *, source: str | None = None, args: Sequence = (),
        kwargs: Mapping | None = None, env: Mapping[str, str] | None = None, xla_flags: str | None = None,
        virtual_cpus: int | None = None, timeout: float = 300.0, grace: float = 3.0) -> Finished:
    """Run ``target`` (``"module:function"``, called with ``args`` and ``kwargs``) or ``source`` (Python
    text; its variable ``result``, if it sets one, is the result) in a fresh Python.

    ``env`` adds environment variables (``TF_CPP_MIN_LOG_LEVEL`` is 2 unless set there), ``xla_flags``
    sets ``TF_XLA_FLAGS``, ``virtual_cpus=n`` splits the CPU into ``n`` logical devices before the code
    runs. Arguments and results travel as JSON (NumPy values and tensors become lists).
    """
    return run_many(target, [{}], source=source, args=args, kwargs=kwargs, env=env, xla_flags=xla_flags,
                    virtual_cpus=virtual_cpus, timeout=timeout, grace=grace)[0]


def run_many(target: str | None, each: Sequence[Mapping[str, str]], *, source: str | None = None,
             args: Sequence = (), kwargs: Mapping | None = None, env: Mapping[str, str] | None = None,
             xla_flags: str | None = None, virtual_cpus: int | None = None, timeout: float = 300.0,
             grace: float = 3.0) -> list[Finished]:
    """``run`` in one child per entry of ``each`` at the same time, child ``i`` with ``each[i]`` added
    to its environment (the workers of one cluster: ``TF_CONFIG`` differs); their results in order.

    A child that has finished waits (up to a minute) until every child has a result before it exits,
    so a fast worker does not leave while a slower one still needs it for a collective.
    """
    spec = _spec(target, source, args, kwargs, virtual_cpus)
    what = _describe(target, source, xla_flags)
    if not each:
        raise ValueError("run_many needs one environment mapping per child, got none")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    base = _environment(env, xla_flags)
    n = len(each)
    folder = Path(tempfile.mkdtemp(prefix="course-child-"))
    (folder / "spec.json").write_text(spec)
    procs: list[subprocess.Popen] = []
    started = time.monotonic()
    try:
        for i, extra in enumerate(each):
            with open(folder / f"{i}.out", "wb") as out, open(folder / f"{i}.err", "wb") as err:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "course_lib.processes", str(folder), str(i), str(n)],
                    stdout=out, stderr=err, stdin=subprocess.DEVNULL, env={**base, **dict(extra)},
                    start_new_session=True))
        _wait(procs, folder, what, timeout, started)
        finished = []
        for i in range(n):
            result = folder / f"result-{i}.json"
            if not result.exists():
                raise ChildError(f"{_name(i, n)} running {what} exited without a result", worker=i, returncode=0,
                                 stderr_tail=_tail(folder / f"{i}.err"))
            finished.append(Finished(json.loads(result.read_text())["result"],
                                     (folder / f"{i}.out").read_text(errors="replace"),
                                     (folder / f"{i}.err").read_text(errors="replace")))
        return finished
    finally:
        _stop(procs, grace)
        shutil.rmtree(folder, ignore_errors=True)


def _environment(env: Mapping[str, str] | None, xla_flags: str | None = None) -> dict[str, str]:
    """A child's environment: the parent's, quiet TensorFlow logging, ``env``, the flags and the parent's imports."""
    base = {"TF_FORCE_GPU_ALLOW_GROWTH": "true", **os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **dict(env or {})}
    if xla_flags is not None:
        base["TF_XLA_FLAGS"] = xla_flags
    base["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [os.getcwd()])  # the parent's imports
    return base


def _describe(target: str | None, source: str | None, xla_flags: str | None) -> str:
    flags = f" with TF_XLA_FLAGS={xla_flags!r}" if xla_flags is not None else ""
    return (target if source is None else "a source snippet") + flags


def _spec(target, source, args, kwargs, virtual_cpus) -> str:
    """Check what the child is asked to do, before anything starts; the JSON it reads."""
    if (target is None) == (source is None):
        raise ValueError("give either target='module:function' or source='python code', not both or neither")
    if source is not None and (args or kwargs):
        raise ValueError("args and kwargs go to a target function; a source snippet takes none")
    if target is not None:
        _check_target(target)
    if virtual_cpus is not None and (not isinstance(virtual_cpus, int) or isinstance(virtual_cpus, bool)
                                     or virtual_cpus < 1):
        raise ValueError(f"virtual_cpus must be a whole number >= 1, got {virtual_cpus!r}")
    try:
        return json.dumps({"target": target, "source": None if source is None else textwrap.dedent(source),
                           "args": list(args), "kwargs": dict(kwargs or {}), "virtual_cpus": virtual_cpus})
    except TypeError as exc:
        raise TypeError(f"args and kwargs are sent to the child as JSON: {exc}") from None


def _check_target(target: str) -> None:
    if not isinstance(target, str) or not _TARGET.match(target):
        raise ValueError(f"target must be 'module:function' (e.g. 'course_lib.distribute:multi_worker_train'), "
                         f"got {target!r}")
    module = target.split(":")[0]
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise ValueError(f"cannot find module {module!r} for target {target!r}: the child imports it, so it must "
                         "be importable here (installed, or in a folder on sys.path)")


def _name(i: int, n: int) -> str:
    return "the child Python" if n == 1 else f"worker {i} of {n}"


def _wait(procs: Sequence[subprocess.Popen], folder: Path, what: str, timeout: float, started: float) -> None:
    """Until every child has exited with 0; raise at the first failure or at the timeout."""
    n = len(procs)
    while True:
        codes = [p.poll() for p in procs]
        for i, code in enumerate(codes):
            if code not in (None, 0):
                how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
                others = "; the other workers were stopped" if n > 1 else ""
                tail = _tail(folder / f"{i}.err")
                raise ChildError(f"{_name(i, n)} running {what} {how} after {time.monotonic() - started:.1f} s"
                                 f"{others}. End of its stderr:\n{tail}", worker=i, returncode=code,
                                 stderr_tail=tail)
        if all(code == 0 for code in codes):
            return
        if time.monotonic() - started > timeout:
            waiting = [i for i, code in enumerate(codes) if code is None]
            tail = _tail(folder / f"{waiting[0]}.err")
            if n == 1:
                message = (f"the child Python running {what} had not finished after {timeout:g} s (timeout) and "
                           f"was stopped. End of its stderr:\n{tail}")
            else:
                message = (f"workers {waiting} of {n} running {what} had not finished after {timeout:g} s "
                           f"(timeout); all were stopped. End of worker {waiting[0]}'s stderr:\n{tail}")
            raise ChildTimeout(message,
                               worker=waiting[0], stderr_tail=tail)
        time.sleep(0.02)


def _tail(path: Path, lines: int = _TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no stderr)"
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:]) or "(stderr was empty)"


def _signal_groups(procs: Sequence[subprocess.Popen], sig: int) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _stop(procs: Sequence[subprocess.Popen], grace: float) -> None:
    """End every child and anything it started: SIGTERM, then SIGKILL for whatever is left after
    ``grace`` seconds; every child is reaped."""
    _signal_groups(procs, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        for p in procs:
            p.poll()  # reaps a child that has exited, so only live processes keep its group
        if not any(_group_alive(p.pid) for p in procs):
            break
        time.sleep(0.02)
    _signal_groups(procs, signal.SIGKILL)
    for p in procs:
        p.wait()


def _jsonable(value):
    if hasattr(value, "numpy"):
        value = value.numpy()
    if hasattr(value, "tolist"):  # NumPy arrays and scalars
        return value.tolist()
    raise TypeError(f"a child's result must be JSON-able; {type(value).__name__} is not "
                    "(return numbers, strings, lists and dicts)")


def _child_main(folder: str, index: str, n_children: str) -> None:
    """The child's side: set up, run the target or the snippet, write the result, wait for the others, exit.

    Exiting with ``os._exit`` skips TensorFlow's teardown, which can hang while peers' connections close.
    """
    root, i, n = Path(folder), int(index), int(n_children)
    try:
        spec = json.loads((root / "spec.json").read_text())
        if spec["virtual_cpus"]:
            from course_lib.virtual_devices import virtual_cpus

            virtual_cpus(spec["virtual_cpus"])
        if spec["source"] is not None:
            namespace = {"__name__": "__main__"}
            exec(compile(spec["source"], "<snippet>", "exec"), namespace)
            result = namespace.get("result")
        else:
            module, name = spec["target"].split(":")
            result = getattr(importlib.import_module(module), name)(*spec["args"], **spec["kwargs"])
        tmp = root / f"result-{i}.tmp"
        tmp.write_text(json.dumps({"result": result}, default=_jsonable))
        tmp.rename(root / f"result-{i}.json")
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    deadline = time.monotonic() + _BARRIER_S
    while time.monotonic() < deadline and len(list(root.glob("result-*.json"))) < n:
        time.sleep(0.02)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# -- Live workers, timed in turns -----------------------------------------------------------------

_TWIN = "A/A"
_PER_VARIANT = "processes per variant"  # the key of a Workers comparison's params that process_medians reads


class Workers:
    """Live Pythons for each variant, each with the variant's environment, asked in turns to time its callable.

    ``target`` is ``"module:function"``; each worker calls it once with ``kwargs`` and the variant's
    own keyword arguments, and it returns the callable to time, called with each request's ``args``.
    ``variants`` maps a name to ``(env, kwargs)``: ``env`` holds the variables TensorFlow reads at
    start-up (``TF_XLA_FLAGS``, ``OMP_NUM_THREADS``, ``TF_ENABLE_ONEDNN_OPTS``), in place before the
    worker imports anything. Building may take ``start_timeout`` seconds, each later request
    ``timeout``. Use as a context manager; every process is stopped on exit.

    A process's time is partly its own, set by where its threads and its memory landed: one process of a
    program can take nearly three times as long a call as another (docs/performance.md, lecture 07). So
    each variant gets ``per_variant`` processes (two by default), asked in rotation, one a round: their
    spread then widens the variant's interval in every run, where one process a variant would move the
    whole verdict from one run to the next. The baseline gets as many again, its A/A twin, whose ratio to
    the baseline is the noise floor, process to process.

    If the callable has an ``info()`` method, ``info(name)`` returns what it says (JSON), e.g. how many
    XLA clusters its first call compiled.
    """

    def __init__(self, target: str, variants: Mapping[str, tuple[Mapping[str, str], Mapping]], *,
                 kwargs: Mapping | None = None, per_variant: int = 2, timeout: float = 300.0,
                 start_timeout: float = 600.0):
        _check_target(target)
        if not variants:
            raise ValueError("Workers needs at least one variant: {name: (env, kwargs)}")
        for what, value in (("timeout", timeout), ("start_timeout", start_timeout)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{what} must be a positive number of seconds, got {value!r}")
        if not isinstance(per_variant, int) or isinstance(per_variant, bool) or per_variant < 1:
            raise ValueError(f"per_variant must be a whole number of processes >= 1, got {per_variant!r}")
        self.names = list(variants)
        self.baseline = self.names[0]
        self.per_variant = per_variant
        self.timeout = float(timeout)
        self._folder = Path(tempfile.mkdtemp(prefix="course-workers-"))
        # one slot per process: (variant, which of its processes)
        self._procs: dict[tuple[str, int], subprocess.Popen] = {}
        self._replies: dict[tuple[str, int], int] = {}
        self._buffers: dict[tuple[str, int], bytes] = {}
        self._errs: dict[tuple[str, int], Path] = {}
        plan = {**{name: variants[name] for name in self.names}, _TWIN: variants[self.baseline]}
        self._turn = {name: 0 for name in plan}  # how many requests each variant's processes have had
        try:
            slots = [(name, j) for name in plan for j in range(per_variant)]
            for i, slot in enumerate(slots):
                env, extra = plan[slot[0]]
                spec = self._folder / f"{i}.json"
                try:
                    spec.write_text(json.dumps({"target": target, "kwargs": {**dict(kwargs or {}), **dict(extra)}}))
                except TypeError as exc:
                    raise TypeError(f"variant {slot[0]!r}: kwargs are sent to the worker as JSON: {exc}") from None
                read, write = os.pipe()
                with open(self._folder / f"{i}.out", "wb") as out, open(self._folder / f"{i}.err", "wb") as err:
                    self._procs[slot] = subprocess.Popen(
                        [sys.executable, "-m", "course_lib.processes", "--worker", str(spec), str(write)],
                        stdin=subprocess.PIPE, stdout=out, stderr=err, env=_environment(env),
                        pass_fds=(write,), start_new_session=True)
                os.close(write)
                self._replies[slot], self._buffers[slot] = read, b""
                self._errs[slot] = self._folder / f"{i}.err"
            for slot in slots:
                self._reply(slot, start_timeout)  # {"ready": true} once the callable is built
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _label(self, slot: tuple[str, int]) -> str:
        name, j = slot
        which = f" (process {j + 1} of {self.per_variant})" if self.per_variant > 1 else ""
        if name == _TWIN:
            return f"the worker for {self.baseline!r}{which}, A/A twin"
        return f"the worker for {name!r}{which}"

    def _reply(self, slot: tuple[str, int], timeout: float | None = None) -> dict:
        """The worker's next line of JSON; a worker that died or went quiet is a clear error."""
        timeout = self.timeout if timeout is None else timeout
        fd, deadline = self._replies[slot], time.monotonic() + timeout
        while b"\n" not in self._buffers[slot]:
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                tail = _tail(self._errs[slot])
                raise ChildTimeout(f"{self._label(slot)} did not answer within {timeout:g} s (timeout). "
                                   f"End of its stderr:\n{tail}", stderr_tail=tail)
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self._procs[slot].wait()
                tail = _tail(self._errs[slot])
                raise ChildError(f"{self._label(slot)} exited with code {code}. End of its stderr:\n{tail}",
                                 returncode=code, stderr_tail=tail)
            self._buffers[slot] += chunk
        line, self._buffers[slot] = self._buffers[slot].split(b"\n", 1)
        return json.loads(line)

    def _ask(self, slot: tuple[str, int], request: dict) -> dict:
        proc = self._procs[slot]
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the reply reports how the worker ended
        return self._reply(slot)

    def time(self, name: str, number: int = 1, args: Sequence = ()) -> float:
        """Seconds per call of ``name``'s callable on ``args`` (JSON), over ``number`` calls made now in the
        next of its processes: the variant's processes take requests in rotation."""
        if name not in self._turn:
            raise KeyError(f"no variant {name!r}; variants are: {', '.join(self.names)}")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError(f"number must be a whole number >= 1, got {number!r}")
        slot = (name, self._turn[name] % self.per_variant)
        self._turn[name] += 1
        return self._ask(slot, {"op": "time", "number": number, "args": list(args)})["seconds"]

    def info(self, name: str, process: int = 0) -> Any:
        """What the callable's ``info()`` in ``name``'s ``process``-th process returns (None when it has none)."""
        if (name, process) not in self._procs:
            raise KeyError(f"no process {process} of variant {name!r}; variants are: {', '.join(self.names)}, "
                           f"each with processes 0 to {self.per_variant - 1}")
        return self._ask((name, process), {"op": "info"})["info"]

    def compare(self, *, repeats: int = 7, warmup: int = 1, number: int = 1, args: Sequence = (),
                title: str = "", params: Mapping | None = None):
        """Time every variant on ``args`` in interleaved rounds, the baseline's twin among them, and compare
        them (``bench.compare_timers``): each process's first call on ``args`` (a variant's first call is
        the median of its processes'), ``warmup`` untimed rounds for each process, ``repeats`` timed
        rounds, each asking the next process of every variant."""
        from course_lib import bench

        k = self.per_variant
        # every variant's first process takes this comparison's first request, so its round r goes to
        # process r % k (what process_medians reads), whatever earlier comparisons left the rotation at
        self._turn = dict.fromkeys(self._turn, 0)
        first = {name: statistics.median(self.time(name, 1, args) for _ in range(k)) for name in self.names}
        for _ in range(k):
            self.time(_TWIN, 1, args)
        for _ in range(warmup * k):
            for name in self.names + [_TWIN]:
                self.time(name, number, args)
        timers = {name: (lambda name=name: self.time(name, number, args)) for name in self.names}
        return bench.compare_timers(timers, first, baseline=self.baseline, repeats=repeats,
                                    twin=lambda: self.time(_TWIN, number, args),
                                    numbers={name: number for name in self.names}, title=title,
                                    params={**dict(params or {}), _PER_VARIANT: k})

    def close(self) -> None:
        """Stop every worker (and whatever it started); safe to call twice."""
        procs = list(self._procs.values())
        for p in procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        _stop(procs, grace=3.0)
        for fd in self._replies.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._procs, self._replies = {}, {}
        shutil.rmtree(self._folder, ignore_errors=True)


def process_medians(comparison) -> dict[str, list[float]]:
    """Each variant's median seconds a call in each of its processes, the A/A twin's among them, from a
    comparison ``Workers.compare`` made: its rounds asked the processes in rotation (round ``r`` went to
    process ``r % k``). How far two processes of one program differ is what their pooled rounds put into
    every interval."""
    k = comparison.params.get(_PER_VARIANT)
    if not isinstance(k, int):
        raise ValueError("process_medians reads a comparison made by Workers.compare, whose params say how many "
                         f"processes each variant had ({_PER_VARIANT!r}); this one's do not")
    timings = list(comparison.timings) + ([comparison.twin] if comparison.twin is not None else [])
    return {t.name: [statistics.median(t.times_s[j::k]) for j in range(min(k, len(t.times_s)))] for t in timings}


def _worker_main(spec_path: str, reply_fd: str) -> None:
    """A live worker: build the callable, say so, then answer each request on stdin with one line of JSON."""
    out = os.fdopen(int(reply_fd), "w", buffering=1)
    try:
        spec = json.loads(Path(spec_path).read_text())
        module, name = spec["target"].split(":")
        fn = getattr(importlib.import_module(module), name)(**spec["kwargs"])
        if not callable(fn):
            raise TypeError(f"{spec['target']} must return the zero-argument callable to time, "
                            f"got {type(fn).__name__}")
        from course_lib.bench import force

        out.write(json.dumps({"ready": True}) + "\n")
        for line in sys.stdin:
            request = json.loads(line)
            if request["op"] == "time":
                start = time.perf_counter()
                for _ in range(request["number"]):
                    force(fn(*request["args"]))
                reply = {"seconds": (time.perf_counter() - start) / request["number"]}
            else:
                reply = {"info": fn.info() if hasattr(fn, "info") else None}
            out.write(json.dumps(reply, default=_jsonable) + "\n")
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        _worker_main(*sys.argv[2:4])
    else:
        _child_main(*sys.argv[1:4])
