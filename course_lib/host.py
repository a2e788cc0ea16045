"""The machine a number was measured on: CPU model and the features that decide TensorFlow's kernels,
the cores this process may use, versions, devices and whether oneDNN is on. Every table names it, because
speedups are the machine's, not the code's.
"""

from __future__ import annotations

import os
import platform
from typing import Mapping

import numpy as np

__all__ = ["machine", "machine_summary", "onednn_enabled", "usable_cores"]


_CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
_MACHINE: dict | None = None


def _cpu_model_and_flags() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), []
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model in ("", platform.machine(), platform.processor()):
                    model = value.strip()
                elif key in ("flags", "Features") and not flags:
                    present = set(value.split())
                    flags = [f for f in _CPU_FLAGS if f in present]
    except OSError:
        pass
    return model, flags


def onednn_enabled() -> bool | None:
    """Whether this TensorFlow runs its CPU kernels through oneDNN: it depends on the wheel, the processor's
    features and ``TF_ENABLE_ONEDNN_OPTS``, so it is read from the running TensorFlow (None when it cannot
    tell)."""
    try:  # the wheel's own answer; a private module, so it may move
        from tensorflow.python.util import _pywrap_util_port
        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        flag = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
        return None if flag is None else flag.strip().lower() in ("1", "true")


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system reports one (a container or
    ``taskset`` can allow fewer than the machine has, and TensorFlow sizes its thread pools to them),
    else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this system (macOS, Windows)
        return os.cpu_count() or 1


def machine() -> dict:
    """What the numbers were measured on: CPU model and features, cores, versions, devices."""
    global _MACHINE
    if _MACHINE is None:
        import tensorflow as tf

        model, flags = _cpu_model_and_flags()
        _MACHINE = {
            "cpu": model,
            "cpu_flags": flags,
            "cores": usable_cores(),
            "python": platform.python_version(),
            "tensorflow": tf.__version__,
            "numpy": np.__version__,
            "devices": [d.name for d in tf.config.list_logical_devices()],
            "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
            "gpu_details": _gpu_details(tf),
            "cuda_build": _build_info(tf, "cuda_version"),
            "cudnn_build": _build_info(tf, "cudnn_version"),
            "onednn": {True: "on", False: "off", None: "unknown"}[onednn_enabled()],
        }
    return dict(_MACHINE)


def _build_info(tf, key: str) -> str:
    """A version TensorFlow was built with (``tf.sysconfig.get_build_info``), or why there is none."""
    info = tf.sysconfig.get_build_info()
    return str(info[key]) if info.get(key) else ("none (a CPU-only build)" if not info.get("is_cuda_build")
                                                  else "unknown")


def _gpu_details(tf) -> list[str]:
    """Each GPU's name, memory and compute capability; empty without one (then nothing is queried)."""
    gpus = tf.config.list_physical_devices("GPU")
    memory = []
    if gpus:
        import subprocess

        try:
            memory = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader"],
                                    check=False, capture_output=True, text=True, timeout=10).stdout.split("\n")
        except (OSError, subprocess.SubprocessError):
            memory = []
    out = []
    for i, gpu in enumerate(gpus):
        details = tf.config.experimental.get_device_details(gpu)
        cc = ".".join(map(str, details.get("compute_capability", ()))) or "?"
        mem = memory[i].strip() if i < len(memory) and memory[i].strip() else "memory unknown"
        out.append(f"{gpu.name}: {details.get('device_name', '?')}, {mem}, compute capability {cc}")
    return out


def machine_summary(info: Mapping | None = None) -> str:
    """One line naming the machine, for captions and tables."""
    info = info or machine()
    if not info:
        return "machine unknown"
    gpus = info.get("gpus") or []
    accel = f"{len(gpus)} GPU(s)" if gpus else "no GPU"
    flags = "/".join(f.upper() for f in info.get("cpu_flags", []) if f in ("avx2", "fma", "avx512f"))
    cores = info.get("cores", "?")
    return (f"{info.get('cpu', '?')} ({cores} core{'' if cores == 1 else 's'}{', ' + flags if flags else ''}), "
            f"{accel}, TF {info.get('tensorflow', '?')}")
