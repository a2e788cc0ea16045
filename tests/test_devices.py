import os

import numpy as np
import pytest
import tensorflow as tf

from course_lib import devices, processes

NO_GPU = not tf.config.list_physical_devices("GPU")


def child(source: str) -> dict:
    """Run ``source`` in a fresh Python (virtual devices need a runtime that has not started); what it
    leaves in ``result``."""
    return processes.run(source=source, env={"TF_CPP_MIN_LOG_LEVEL": "3"}).result


def test_short_name():
    assert devices.short_name("/job:localhost/replica:0/task:0/device:CPU:1") == "CPU:1"
    assert devices.short_name("/device:GPU:0") == "GPU:0"
    assert devices.short_name("/physical_device:CPU:0") == "CPU:0"
    assert devices.short_name("") == ""


def test_device_table_lists_physical_then_logical():
    rows = devices.device_table()
    assert rows[0] == {"kind": "physical", "type": "CPU", "name": "/physical_device:CPU:0"}
    assert {"kind": "logical", "type": "CPU", "name": "/device:CPU:0"} in rows


def test_where_and_soft_placement():
    with tf.device("/CPU:0"):
        x = tf.ones([2]) * 2
    assert devices.where(x) == "CPU:0"
    with pytest.raises(TypeError, match="expected a tensor"):
        devices.where([1, 2])
    before = tf.config.get_soft_device_placement()
    with devices.soft_placement(True), tf.device(devices.missing_device("GPU")):
        y = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))
    assert devices.where(y) in ("CPU:0", "GPU:0")
    assert tf.config.get_soft_device_placement() == before


def test_impossible_placement_raises_with_soft_placement_off():
    before = tf.config.get_soft_device_placement()
    message = devices.impossible_placement_error()
    assert message.startswith("InvalidArgumentError: Could not satisfy device specification")
    assert devices.missing_device("GPU").lstrip("/") in message
    assert tf.config.get_soft_device_placement() == before
    with pytest.raises(devices.DeviceSetupError, match="was possible after all"):
        devices.impossible_placement_error("/CPU:0")


def test_virtual_cpus_rejects_bad_counts():
    with pytest.raises(ValueError, match="whole number >= 1, got 0"):
        devices.virtual_cpus(0)
    with pytest.raises(ValueError, match="memory_limit_mb"):
        devices.virtual_gpus(2, memory_limit_mb=0)


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU to split")
def test_virtual_gpus_without_a_gpu_says_so():
    with pytest.raises(devices.DeviceSetupError, match="no physical GPU to split"):
        devices.virtual_gpus(2, memory_limit_mb=512)


@pytest.mark.skipif(not NO_GPU, reason="CPU-only expectations")
def test_memory_growth_changes_nothing_without_gpus():
    assert devices.memory_growth() == []


@pytest.mark.slow
def test_virtual_cpus_in_a_fresh_process_are_idempotent():
    out = child("""
        from course_lib import devices, processes
        first = devices.virtual_cpus(3)
        again = devices.virtual_cpus(3)
        try:
            devices.virtual_cpus(2)
            error = None
        except devices.DeviceSetupError as exc:
            error = str(exc)
        import tensorflow as tf
        with tf.device("/CPU:2"):
            x = tf.ones([2]) + 1
        result = {"first": first, "again": again, "error": error, "where": devices.where(x)}
    """)
    assert out["first"] == out["again"] == ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"]
    assert out["where"] == "CPU:2"
    assert out["error"].startswith("TensorFlow is already running with 3 logical CPU device(s) "
                                   "(CPU:0, CPU:1, CPU:2), so it cannot be split into 2 now")
    assert "call devices.virtual_cpus(2) before any other TensorFlow code" in out["error"]


@pytest.mark.slow
def test_virtual_cpus_after_tensorflow_already_started():
    out = child("""
        import tensorflow as tf
        from course_lib import devices, processes
        tf.constant(1.0) + 1.0  # the runtime starts here, with one CPU
        try:
            devices.virtual_cpus(4)
            error = None
        except devices.DeviceSetupError as exc:
            error = str(exc)
        result = {"error": error, "one": devices.virtual_cpus(1)}
    """)
    assert "already running with 1 logical CPU device(s) (CPU:0), so it cannot be split into 4" in out["error"]
    assert "Restart the kernel or process and call devices.virtual_cpus(4)" in out["error"]
    assert out["one"] == ["/device:CPU:0"]  # asking for what is already there is fine


def test_placement_log_shows_eager_ops_and_function_graphs():
    log = devices.placement_log("""
        a = tf.constant([[1.0, 2.0]])
        with tf.device("/CPU:1"):
            b = tf.matmul(a, a, transpose_b=True)

        @tf.function
        def f(x):
            return tf.reduce_sum(x * 2.0)

        print(f(a).numpy())
    """, virtual_cpus=2)
    assert "op MatMul -> CPU:1" in log.lines
    assert "function f -> CPU:0" in log.lines
    assert "    mul (Mul) -> CPU:0" in log.lines
    assert not any("_Arg" in line or "_Retval" in line for line in log.lines)
    assert log.output == "6.0\n"
    assert str(log).splitlines() == log.lines


@pytest.mark.slow
def test_cuda_visible_devices_in_a_child_process():
    seen = devices.physical_devices_with("")
    assert "/physical_device:CPU:0" in seen
    assert not any("GPU" in name for name in seen)


def test_copy_variants_compute_the_same_thing():
    variants = devices.copy_variants(steps=3, devices=("/CPU:0", "/CPU:0"))
    assert list(variants) == ["stay on one device", "hop between devices", "round trip through NumPy"]
    results = [build(megabytes=0.01)() for build in variants.values()]
    for r in results:
        assert r.shape == (int(0.01 * 2**20) // 4,)
        np.testing.assert_allclose(np.asarray(r), 0.999**3, rtol=1e-6)
    with pytest.raises(ValueError, match="megabytes must be a positive number"):
        variants["stay on one device"](megabytes=0)
    with pytest.raises(ValueError, match="steps must be"):
        devices.copy_variants(steps=0)


def test_copy_devices_are_existing_devices():
    home, away = devices.copy_devices()
    names = [d.name for d in tf.config.list_logical_devices()]
    assert home in names and away in names


@pytest.mark.slow
def test_two_logical_cpus_share_the_buffer_and_numpy_copies():
    out = child("""
        from course_lib import devices, processes
        devices.virtual_cpus(2)
        import numpy as np, tensorflow as tf
        x = tf.ones([1000])
        device, same = devices.shares_buffer(x, "/CPU:1")
        with tf.device("/CPU:1"):
            computed = x * 2.0  # a new result gets its own buffer
        result = {"device": device, "same": same,
                  "numpy_same": bool(np.shares_memory(x.numpy(), np.asarray(x))),
                  "computed_same": np.asarray(computed).ctypes.data == np.asarray(x).ctypes.data}
    """)
    assert out == {"device": "CPU:1", "same": True, "numpy_same": False, "computed_same": False}


def test_transfers_read_a_copy_from_time_growing_with_size():
    t = devices.Transfers([{"move": "hand-over", "sizes_mb": [1, 64], "seconds": [1e-5, 1.2e-5]},
                           {"move": "copy", "sizes_mb": [1, 64], "seconds": [1e-4, 6.4e-3]}], gpu=False)
    assert [t.copies(r) for r in t.rows] == [False, True]
    text = str(t.verdicts())
    assert "hand-over: 1.2x the time for 64x the bytes, so no bytes are copied" in text
    assert ("copy: a copy, 64x the time for 64x the bytes: 10.5 GB/s at 1 MiB, 10.5 GB/s at 64 MiB; the time grew "
            "about in proportion to the bytes") in text
    assert "no GPU on this machine" in text
    assert "<td>no</td>" in t.table() and "<td>yes</td>" in t.table()
    lines = repr(t).splitlines()
    assert lines[0].split() == ["move", "1", "MiB", "64", "MiB", "bytes", "copied", "GB/s", "at", "1", "MiB", "GB/s",
                                "at", "64", "MiB"]
    assert lines[1].split()[-1] == "no" and lines[2].split()[-3:] == ["yes", "10.5", "10.5"]


@pytest.mark.parametrize("seconds, how", [
    ([4.1e-5, 1.59e-2], "the time grew faster than the bytes, so a rate read at one size does not hold at another"),
    ([1e-3, 1.2e-2], "the time grew less than the bytes: a cost per call weighs on the small copy"),
])
def test_a_copy_whose_time_does_not_follow_the_bytes_says_so_with_both_rates(seconds, how):
    t = devices.Transfers([{"move": "copy", "sizes_mb": [1, 64], "seconds": seconds}], gpu=True)
    (line,) = str(t.verdicts()).splitlines()
    rate_small, rate_large = (mb * 2**20 / s / 1e9 for mb, s in zip([1, 64], seconds))
    assert f": {rate_small:.3g} GB/s at 1 MiB, {rate_large:.3g} GB/s at 64 MiB; {how}" in line
    assert "no GPU" not in line


@pytest.mark.parametrize("large, how", [
    ([3.0e-2, 3.1e-2, 3.2e-2, 3.3e-2, 3.4e-2], "the time grew faster than the bytes"),
    # 2.8x the bytes' growth, every call: more than in proportion, short of the factor that is called
    ([1.6e-2, 1.7e-2, 1.8e-2, 1.9e-2, 2.0e-2], "as fast as the bytes (95% interval): more than in proportion, but "
                                               "within the factor of 4 this course asks"),
    ([6.0e-3, 6.2e-3, 6.4e-3, 6.6e-3, 6.8e-3], "the time grew about in proportion to the bytes"),
    # the median 2.1x the bytes' growth, but calls at 1.4x: the interval reaches into proportion
    ([9.0e-3, 1.0e-2, 1.34e-2, 1.4e-2, 1.5e-2], "so this run cannot tell whether it grew in proportion to or faster "
                                                "than the bytes"),
])
def test_a_copy_reads_its_growth_from_the_calls_not_from_two_medians(large, how):
    small = [9.6e-5, 9.8e-5, 1e-4, 1.02e-4, 1.04e-4]
    row = {"move": "copy", "sizes_mb": [1, 64], "seconds": [1e-4, sorted(large)[2]], "times": [small, large]}
    low, high = devices.Transfers.growth_interval(row)
    assert low <= large[2] / 1e-4 <= high
    (line,) = str(devices.Transfers([row], gpu=True).verdicts()).splitlines()
    assert how in line
    assert ("cannot tell" in line) == (low <= 2 * 64 < high)
    assert ("does not call it" in line) == (2 * 64 < low <= devices.FAR * 64)


def test_transfer_moves_name_each_move_and_each_call_moves_the_tensor():
    moves = devices.transfer_moves(0.01, ["/device:CPU:0", "/device:CPU:0"], [])
    assert list(moves) == ["CPU:0 -> CPU:0 (tf.identity)", "tensor -> NumPy (.numpy())",
                           "NumPy -> tensor (tf.constant)"]
    n = int(0.01 * 2**20) // 4
    assert moves["CPU:0 -> CPU:0 (tf.identity)"]() == "CPU:0"
    assert moves["tensor -> NumPy (.numpy())"]() == (n,)
    assert moves["NumPy -> tensor (tf.constant)"]() == "CPU:0"
    assert list(devices.transfer_moves(0.01, ["/device:CPU:0"], [])) == ["tensor -> NumPy (.numpy())",
                                                                          "NumPy -> tensor (tf.constant)"]


def test_transfer_costs_time_every_move_at_both_sizes():
    t = devices.transfer_costs((0.01, 0.1), repeats=1)
    names = [r["move"] for r in t.rows]
    assert "tensor -> NumPy (.numpy())" in names and "NumPy -> tensor (tf.constant)" in names
    assert all(len(r["seconds"]) == 2 and min(r["seconds"]) > 0 for r in t.rows)
    assert all([len(times) for times in r["times"]] == [1, 1] for r in t.rows)
    assert t.gpu == (not NO_GPU) and any("GPU" in n for n in names) == t.gpu
    with pytest.raises(ValueError, match="small then large"):
        devices.transfer_costs((64, 1))


def test_the_native_log_keeps_what_reaches_standard_error_and_passes_it_on(capfd):
    log = devices.NativeLog.start()
    os.write(2, b"I0000 util.cc:1] a C++ log line\n")
    text = log.stop()
    assert text == "I0000 util.cc:1] a C++ log line\n"
    assert "a C++ log line" in capfd.readouterr().err, "the line still reaches standard error"
    os.write(2, b"after stop\n")
    assert "after stop" not in log.text()
