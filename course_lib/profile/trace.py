"""Reading a TensorFlow profiler trace (``.xplane.pb``) into plain Python events.

The profiler writes one ``XSpace`` protobuf per capture under ``LOGDIR/plugins/profile/RUN/HOST.xplane.pb``.
TensorFlow ships the protobuf classes that parse it (``tensorflow.tsl.profiler.protobuf.xplane_pb2``), so
no server, viewer or network is needed: each plane (the host CPU, each GPU) holds lines (one per thread or
stream), each line holds events with a start, a duration and named statistics. ``read`` flattens them into
``Event`` records, finds each event's nesting depth on its line and the steps marked with
``tf.profiler.experimental.Trace(name, step_num=i, _r=1)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class ProfileError(ValueError):
    """A trace that cannot be read or analysed; the message names the problem and the fix."""


HOST_PLANE = "/host:CPU"
DEVICE_PREFIX = "/device:"


@dataclass
class Event:
    """One traced event. Times in microseconds from the start of the trace."""

    plane: str
    thread: str
    name: str
    start_us: float
    duration_us: float
    stats: dict = field(default_factory=dict)
    display: str = ""
    depth: int = 0
    parent: int = -1  # index in Trace.events of the innermost event enclosing this one on its line

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us

    @property
    def on_device(self) -> bool:
        return self.plane.startswith(DEVICE_PREFIX)


@dataclass
class Step:
    """A step marked in the trace: its number and its span in microseconds from the start of the trace."""

    number: int
    start_us: float
    end_us: float
    thread: str

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us


@dataclass
class Trace:
    """Every event of one capture, in time order per thread, and the marked steps."""

    path: Path
    events: list[Event]
    steps: list[Step]

    @property
    def threads(self) -> list[tuple[str, str]]:
        """(plane, thread) pairs in the order of the trace, the step thread first."""
        seen = dict.fromkeys((e.plane, e.thread) for e in self.events)
        main = [(HOST_PLANE, s.thread) for s in self.steps[:1]]
        return main + [t for t in seen if t not in main]

    def in_step(self, step: Step) -> list[Event]:
        """The events that overlap ``step``."""
        return [e for e in self.events if e.end_us > step.start_us and e.start_us < step.end_us]

    def require_steps(self) -> list[Step]:
        """The steps, or a clear error when the trace marks none."""
        if not self.steps:
            raise ProfileError(
                f"the trace {self.path} marks no steps: wrap each step in "
                "tf.profiler.experimental.Trace('step', step_num=i, _r=1) while profiling, "
                "or capture it with course_lib.profile.capture(fn, steps=N), which does")
        return self.steps


def find_xplane(logdir: str | Path) -> Path:
    """The newest ``.xplane.pb`` under ``logdir`` (a log folder, or the file itself)."""
    logdir = Path(logdir)
    if logdir.is_file():
        return logdir
    if not logdir.exists():
        raise ProfileError(f"no log folder {logdir}: profile into it first "
                           "(course_lib.profile.capture(fn, logdir=...), or tf.profiler.experimental.start)")
    files = sorted(logdir.glob("**/*.xplane.pb"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise ProfileError(f"{logdir} holds no .xplane.pb trace: the profiler writes one under "
                           "plugins/profile/ when tf.profiler.experimental.stop() runs; profile into this "
                           "folder first")
    return files[-1]


def _stat_value(stat, names: dict):
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return names.get(stat.ref_value, "")
    if kind == "bytes_value":
        return len(stat.bytes_value)
    return getattr(stat, kind) if kind else None


def _nest(events: list[Event], first: int) -> None:
    """Set depth and parent of the events ``events[first:]`` of one line (sorted by start, longest first)."""
    stack: list[int] = []
    for i in range(first, len(events)):
        e = events[i]
        while stack and events[stack[-1]].end_us <= e.start_us:
            stack.pop()
        e.depth, e.parent = len(stack), (stack[-1] if stack else -1)
        stack.append(i)


def read(logdir: str | Path) -> Trace:
    """Read the newest trace under ``logdir`` (or the ``.xplane.pb`` file given) into a ``Trace``."""
    from google.protobuf.message import DecodeError
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = find_xplane(logdir)
    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(path.read_bytes())
    except DecodeError as exc:  # not a protobuf, or a truncated one
        raise ProfileError(f"{path} is not a profiler trace ({type(exc).__name__}: {exc}); "
                           "profile again, and let tf.profiler.experimental.stop() finish writing") from None
    raw = []
    for plane in space.planes:
        if plane.name != HOST_PLANE and not plane.name.startswith(DEVICE_PREFIX):
            continue  # metadata planes: HLO protos, the task environment
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            thread = line.display_name or line.name
            for ev in line.events:
                md = plane.event_metadata[ev.metadata_id]
                stats = {stat_names.get(s.metadata_id, ""): _stat_value(s, stat_names)
                         for s in list(md.stats) + list(ev.stats)}
                start_ns = line.timestamp_ns + ev.offset_ps / 1e3
                raw.append((plane.name, thread, md.name, start_ns, ev.duration_ps / 1e6, stats, md.display_name))
    if not raw:
        raise ProfileError(f"the trace {path} holds no events: was anything run while the profiler was on?")
    t0 = min(r[3] for r in raw)
    raw.sort(key=lambda r: (r[0], r[1], r[3], -r[4]))
    events: list[Event] = []
    line_start = 0
    for i, (plane, thread, name, start_ns, dur_us, stats, display) in enumerate(raw):
        if i and raw[i - 1][:2] != (plane, thread):
            _nest(events, line_start)
            line_start = len(events)
        events.append(Event(plane, thread, name, (start_ns - t0) / 1e3, dur_us, stats, display))
    _nest(events, line_start)
    steps = sorted((Step(int(e.stats["step_num"]), e.start_us, e.end_us, e.thread)
                    for e in events if "step_num" in e.stats and e.plane == HOST_PLANE),
                   key=lambda s: s.start_us)
    return Trace(path, events, steps)
