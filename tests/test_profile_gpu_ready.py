"""The course is safe on a GPU machine: memory growth in every process it starts; doctor names the GPU build.

Runs without a GPU: it checks the settings reach each kind of process, and that the machine report has
the GPU fields (empty, or naming a CPU-only build, where there is none).
"""

import os
import runpy

from course_lib import host, kernel, processes

GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"


def test_kernels_get_memory_growth_from_their_config_and_their_manager(tmp_path):
    config = kernel.write_config(tmp_path)  # what a kernel started by Lab runs at start-up
    app = {"c": type("Config", (), {"IPKernelApp": type("App", (), {})()})()}
    saved = os.environ.pop(GROWTH, None)
    try:
        runpy.run_path(str(config), init_globals=app)
        assert os.environ[GROWTH] == "true"
    finally:
        os.environ.pop(GROWTH, None)
        if saved is not None:
            os.environ[GROWTH] = saved
    assert kernel.GPU_ENV == {GROWTH: "true"}


def test_child_processes_get_memory_growth_unless_set():
    source = f"import os\nresult = os.environ.get({GROWTH!r})"
    saved = os.environ.pop(GROWTH, None)
    try:
        assert processes.run(source=source).result == "true"
        os.environ[GROWTH] = "false"  # a reader's own setting wins
        assert processes.run(source=source).result == "false"
    finally:
        os.environ.pop(GROWTH, None)
        if saved is not None:
            os.environ[GROWTH] = saved


def test_machine_report_names_gpus_and_the_cuda_build():
    info = host.machine()
    assert isinstance(info["gpu_details"], list) and len(info["gpu_details"]) == len(info["gpus"])
    assert info["cuda_build"] and info["cudnn_build"]
