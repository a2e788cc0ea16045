"""How the course's Jupyter kernels keep TensorFlow's C++ log out of the notebooks.

TensorFlow's C++ runtime logs to file descriptor 2 (the absl banner, CUDA and oneDNN
start-up lines, XLA service and MLIR lines, stack traces with the machine's paths).
ipykernel forwards everything written to descriptors 1 and 2 into the notebook, so a
reader would see those lines as red blocks between the results. ``OutStream`` keeps
forwarding descriptor 1 (``tf.print`` writes there from C++) but leaves descriptor 2 to
the kernel's own stderr: the terminal of the Lab server, or the log file the lecture
runner writes under ``build/lectures/logs/``. Python's ``sys.stderr`` (tracebacks,
warnings) still reaches the notebook.

Kernels pick it up from ``ARGUMENTS`` (the papermill runner) or from a kernel config
file (``write_config``: ``make kernel`` writes one into the course's environment, the
browser test into its throw-away IPython folder). This module must not import TensorFlow.

Both also set ``GPU_ENV``: TensorFlow otherwise reserves almost all of a GPU's memory in each process,
so the second of several kernels (or test workers) sharing one GPU would find none left; with memory
growth each takes what it uses. Without a GPU the variable does nothing. A value already set wins.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ipykernel.iostream import OutStream as _IPyOutStream

SETTING = "IPKernelApp.outstream_class"
CLASS = "course_lib.kernel.OutStream"
ARGUMENTS = [f"--{SETTING}={CLASS}"]
GPU_ENV = {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}
INLINE = "module://matplotlib_inline.backend_inline"  # Jupyter's inline backend: figures become outputs
CONFIG = (f"c.{SETTING} = {CLASS!r}  # course_lib.kernel: TensorFlow's C++ log stays out of notebooks\n"
          "import os\n"
          + "".join(f"os.environ.setdefault({k!r}, {v!r})  # course_lib.kernel: GPU memory grows as used\n"
                    for k, v in GPU_ENV.items()))


class OutStream(_IPyOutStream):
    """ipykernel's stream, forwarding C-level output of stdout only (not of stderr)."""

    def __init__(self, session, pub_thread, name, *args, watchfd=True, **kwargs):
        super().__init__(session, pub_thread, name, *args, watchfd=watchfd and name != "stderr", **kwargs)


def write_config(folder: str | Path | None = None) -> Path:
    """Write ``ipython_kernel_config.py`` setting ``OutStream`` into ``folder``.

    The default folder is this environment's IPython config folder (``sys.prefix/etc/ipython``),
    which every kernel started from this environment reads, the ``python3`` kernel included.
    """
    folder = Path(folder) if folder is not None else Path(sys.prefix) / "etc" / "ipython"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ipython_kernel_config.py"
    path.write_text(CONFIG)
    return path


def logged_kernels(log) -> type:
    """A kernel manager class whose kernels write their stdout and stderr (TensorFlow's C++ log) to ``log``,
    an open file: the runner's per-lecture log, or ``os.devnull`` where nobody reads it; whose
    environment has ``GPU_ENV``; and whose figures are drawn into the notebook (``INLINE``), whatever
    backend the calling shell chose for its own scripts (``MPLBACKEND=Agg`` would leave an executed
    notebook without its charts)."""
    from jupyter_client import AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):
            env = {**GPU_ENV, **kw.pop("env", os.environ), "MPLBACKEND": INLINE}
            return await super().start_kernel(**dict(kw, env=env, stdout=log, stderr=log))

    return LoggedKernelManager
