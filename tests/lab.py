"""Start and stop a private JupyterLab server, for tests that drive the course in a real Lab.

``running(root)`` starts ``jupyter lab`` on 127.0.0.1 at a free port with a token,
with its own settings, workspaces, config, data and runtime folders (so neither the user's
Lab set-up nor ours leaks into the other), waits until it answers, and stops it and
every process it started (kernels included) however the ``with`` block ends.
``wait_until_ready`` and ``stop`` work on any server process, ``make lab`` included.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

import psutil  # ships with ipykernel; lists the kernels a server started in their own sessions

from course_lib import kernel

# No network in the course's machines: Lab must not ask for news or updates (a toast would
# also cover part of every screenshot).
QUIET_SETTINGS = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}


@dataclass
class Server:
    """A running Lab: its base URL (``http://127.0.0.1:PORT/``), token and process."""

    url: str
    token: str
    process: subprocess.Popen
    log: Path

    def link(self, path: str = "lab") -> str:
        """The URL of ``path`` (e.g. ``lab/tree/00_welcome.ipynb``) with the token."""
        return f"{self.url}{path}?token={self.token}"

    def get(self, path: str, timeout: float = 10) -> bytes:
        """GET ``path`` with the token in the header; raises on HTTP errors."""
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def write_settings(folder: Path, settings: Mapping[str, Mapping]) -> None:
    """Write user settings (``{"@pkg/ext:plugin": {...}}``) the way Lab stores them."""
    for plugin_id, values in settings.items():
        package, _, plugin = plugin_id.rpartition(":")
        if not package or not plugin:
            raise ValueError(f"setting key {plugin_id!r} should look like '@jupyterlab/pkg-extension:plugin'")
        path = folder / package / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def isolated_env(folder: Path, token: str, base: Mapping[str, str] | None = None,
                 settings: Mapping[str, Mapping] = QUIET_SETTINGS) -> dict[str, str]:
    """Environment for a Lab whose settings, workspaces, config, data and runtime files live in ``folder``.

    Its kernels read the course's kernel config (``course_lib.kernel``) from the IPython folder there.

    Kernels and extensions installed in the Python environment (``sys.prefix``), the widget
    extension among them, are still found; the user's own (``jupyter --paths``) are not.
    """
    env = dict(os.environ if base is None else base)
    for var, sub in [("JUPYTERLAB_SETTINGS_DIR", "settings"), ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                     ("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")]:
        (folder / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(folder / sub)
    write_settings(folder / "settings", settings)
    kernel.write_config(folder / "ipython" / "profile_default")  # as `make kernel` sets up the course's kernels
    env["JUPYTER_TOKEN"] = token  # in the environment, not on a command line `ps` shows
    return env


def wait_until_ready(process: subprocess.Popen, url: str, token: str, timeout: float = 90,
                     log: Path | None = None) -> None:
    """Poll ``url``/api/status until the server answers; fail early if the process dies."""
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url + "api/status", headers={"Authorization": f"token {token}"})
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the Lab server exited with code {process.returncode} before answering"
                               + _tail(log))
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Lab server at {url} did not answer within {timeout:.0f} s" + _tail(log))
        time.sleep(0.3)


def stop(process: subprocess.Popen, timeout: float = 20) -> None:
    """Stop ``process`` (started with ``start_new_session=True``) and everything it started.

    SIGTERM to its process group lets Jupyter shut its kernels down cleanly; kernels run in
    sessions of their own, so any that outlive the server are then killed one by one.
    """
    try:
        family = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    if process.poll() is None:
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait(5)
    for p in family:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=5)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


@contextmanager
def running(root: str | Path, *, env: Mapping[str, str] | None = None,
            settings: Mapping[str, Mapping] = QUIET_SETTINGS, expose_app: bool = False,
            timeout: float = 90) -> Iterator[Server]:
    """A Lab serving ``root`` for the duration of the ``with`` block.

    ``expose_app`` sets ``window.jupyterapp`` in the page, so a browser test can read the
    notebook model (outputs, execution counts) instead of guessing from the DOM.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"cannot serve {root}: not a folder")
    with tempfile.TemporaryDirectory(prefix="course-lab-") as tmp:
        folder, token, port = Path(tmp), secrets.token_hex(24), free_port()
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}"]
        if expose_app:
            cmd.append("--expose-app-in-browser")
        if os.geteuid() == 0:  # containers and CI runners; Jupyter refuses root without it
            cmd.append("--allow-root")
        log = folder / "server.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(cmd, env=isolated_env(folder, token, env, settings), cwd=root,
                                       stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}/"
            wait_until_ready(process, url, token, timeout, log)
            yield Server(url, token, process, log)
        finally:
            stop(process)


def _tail(log: Path | None, lines: int = 20) -> str:
    if log is None or not log.exists():
        return ""
    text = log.read_text(errors="replace").splitlines()[-lines:]
    return "; its log ends:\n" + "\n".join(text)
