"""Virtual devices: one physical CPU (or GPU) split into several logical ones, to run multi-device code
(``tf.distribute``) on a machine with one. They are fixed when TensorFlow's runtime starts (at the first
operation, tensor or device listing), so the split must come first; ``course_lib.processes`` makes it in a
fresh child, and ``course_lib.devices`` offers it to the lectures."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from course_lib.arguments import short_device_name, whole


class DeviceSetupError(RuntimeError):
    """Devices cannot be configured now (the runtime already started, or no such device)."""


def _split(device_type: str, n: int, memory_limit_mb: int | None) -> list[str]:
    n = whole(f"the number of virtual {device_type} devices", n, 1)
    physical = tf.config.list_physical_devices(device_type)
    if not physical:
        found = ", ".join(d.name for d in tf.config.list_physical_devices()) or "none"
        raise DeviceSetupError(f"there is no physical {device_type} to split on this machine "
                               f"(physical devices: {found})")
    config = [tf.config.LogicalDeviceConfiguration(memory_limit=memory_limit_mb) for _ in range(n)]
    want = n + len(physical) - 1  # the first device is split, any others stay whole
    try:
        tf.config.set_logical_device_configuration(physical[0], config)
    except RuntimeError:  # the runtime already started; fine if it has what we want
        have = [d.name for d in tf.config.list_logical_devices(device_type)]
        if len(have) != want:
            call = f"virtual_cpus({n})" if device_type == "CPU" else f"virtual_gpus({n}, ...)"
            raise DeviceSetupError(
                f"TensorFlow is already running with {len(have)} logical {device_type} device(s) "
                f"({', '.join(short_device_name(h) for h in have)}), so it cannot be split into {n} now: virtual "
                f"devices are fixed when the runtime starts (at the first operation, tensor or device "
                f"listing). Restart the kernel or process and call devices.{call} before any other "
                f"TensorFlow code.") from None
    return [d.name for d in tf.config.list_logical_devices(device_type)]


def virtual_cpus(n: int) -> list[str]:
    """Split the CPU into ``n`` logical devices; returns their names (``/device:CPU:0`` ...).

    Call it first, before any other TensorFlow code (it starts the runtime). Calling it
    again with the same ``n`` returns the same devices; a different ``n`` after the start
    raises ``DeviceSetupError`` with the fix. The logical CPUs share the cores and the
    memory: they are for trying multi-device code (``tf.distribute``), not for speed.
    """
    return _split("CPU", n, None)


def virtual_gpus(n: int, memory_limit_mb: int) -> list[str]:
    """Split the first GPU into ``n`` logical GPUs of ``memory_limit_mb`` each (same rules
    as ``virtual_cpus``); ``DeviceSetupError`` when there is no GPU."""
    if not isinstance(memory_limit_mb, (int, np.integer)) or memory_limit_mb < 1:
        raise ValueError(f"memory_limit_mb must be a whole number of megabytes >= 1, got {memory_limit_mb!r}")
    return _split("GPU", n, int(memory_limit_mb))
