"""The course in a real JupyterLab: the lectures' live speedup widgets, solution 00, `make lab`.

papermill and nbval run the notebooks without a browser; this test proves that they also work
where the reader uses them. It starts Lab on 127.0.0.1 (token on, free port, throw-away settings
and runtime folders, the course's kernel config; see tests/lab.py), drives it with Playwright in
the system's headless Chromium (installed with apt-get when missing and we are root; never
downloaded by Playwright), runs every cell with Run > Run All Cells, then presses every widget's Run button,
checks that its chart and table change, and saves screenshots under build/screenshots/. It also
checks that no TensorFlow log line reaches a cell's output in Lab. It skips only where Chromium is
absent and cannot be installed.

Which lectures: every lecture whose committed run displayed a speedup widget qualifies, but running
them all in a browser takes longer than the suite can afford on two cores. So `make test-all` checks
lecture 00 in full (controls, sizes, variants), and `make test-browser` sets
COURSE_BROWSER_LECTURES=all to check every other widget lecture too (a comma-separated list of numbers,
e.g. 04,12, checks those). They run at their fastest setting (``lectures.fastest``, injected after the
parameters cell as papermill would). After Run All has run every cell, clean-up cells included, their
check presses each widget's Run in turn with the first variant only, which is the cheapest run that still
redraws both chart and table: a widget whose inputs a later cell deleted fails there, as it would for a
reader.

Notebooks run from copies with their outputs stripped, so everything checked was produced live
and Lab's autosave never touches the committed notebooks.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import lab
import nbformat
import psutil
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect, sync_playwright
from test_notebook_hygiene import TF_LOG

from course_lib import lectures
from course_lib.speedup_widget import CSS_CLASS

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LECTURE, SOLUTION = "00_welcome_and_setup.ipynb", "solutions/00_welcome_and_setup.ipynb"
WIDGET = f".{CSS_CLASS}"  # the SpeedupWidget's outer box


def widget_lectures() -> list[Path]:
    """Lectures whose committed run displayed a speedup widget (a Run button in the saved widget state)."""
    found = []
    for lec in lectures.lectures():
        state = nbformat.read(lec.path, as_version=4).metadata.get("widgets", {})
        models = state.get("application/vnd.jupyter.widget-state+json", {}).get("state", {}).values()
        if any(m.get("model_name") == "ButtonModel" and m.get("state", {}).get("description") == "Run"
               for m in models):
            found.append(lec.path)
    return found


def chosen(found: list[Path], spec: str) -> list[Path]:
    """The widget lectures this run checks besides lecture 00 (see the module's docstring)."""
    others = [p for p in found if p.name != LECTURE]
    if spec == "all":
        return others
    wanted = {n.strip().zfill(2) for n in spec.split(",") if n.strip()}
    return [p for p in others if p.name[:2] in wanted]


OTHERS = chosen(widget_lectures(), os.environ.get("COURSE_BROWSER_LECTURES", ""))

# JavaScript run in the page; `window.jupyterapp` exists because the server runs with
# --expose-app-in-browser, so the checks read Lab's notebook model rather than guess from pixels.
JS_NOTEBOOK_READY = """path => {
    const nb = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = nb && nb.context && nb.context.path === path && nb.sessionContext.session
        && nb.sessionContext.session.kernel;
    return !!kernel && kernel.status === 'idle';
}"""
JS_ALL_RAN = """() => {
    const nb = window.jupyterapp.shell.currentWidget, cells = nb.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
        const c = cells.get(i);
        if (c.type === 'code' && !c.executionCount) return false;
    }
    return nb.sessionContext.session.kernel.status === 'idle';
}"""
JS_CODE_CELLS = """() => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells, found = [];
    for (let i = 0; i < cells.length; i++) {
        const c = cells.get(i);
        if (c.type !== 'code') continue;
        const outputs = [];
        for (let j = 0; j < c.outputs.length; j++) outputs.push(c.outputs.get(j).toJSON());
        found.push({index: i, tags: c.getMetadata('tags') || [], outputs});
    }
    return found;
}"""
JS_KERNEL_PRINT = """async code => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const future = kernel.requestExecute({code, store_history: false});
    let text = '';
    future.onIOPub = msg => {
        if (msg.header.msg_type === 'stream') text += msg.content.text;
        if (msg.header.msg_type === 'error') text += `${msg.content.ename}: ${msg.content.evalue}`;
    };
    await future.done;
    return text;
}"""


# -- set-up: Chromium, the browser, one Lab for the notebooks ---------------------------------------

def _apt_get(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=120", *args], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


@pytest.fixture(scope="session")
def chromium() -> Path:
    """The system's Chromium, installed from the distribution's packages when missing."""
    if not CHROMIUM.exists():
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            pytest.skip(f"browser test skipped: {CHROMIUM} is missing and cannot be installed here "
                        "(needs root and apt-get); install it with `apt-get install -y chromium`")
        done = _apt_get("install", "-y", "--no-install-recommends", "chromium")
        if done.returncode != 0:  # package lists missing or stale
            _apt_get("update")
            done = _apt_get("install", "-y", "--no-install-recommends", "chromium")
        if done.returncode != 0 or not CHROMIUM.exists():
            pytest.skip(f"browser test skipped: `apt-get install chromium` failed: {done.stderr.strip()[-500:]}")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium):
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield browser
        finally:
            browser.close()


def stripped_copy(src: Path, dest: Path, fastest: bool) -> None:
    """``src`` without outputs at ``dest``; with ``fastest``, the lecture's fastest setting
    (``lectures.fastest_source``, what nbval runs too) in a cell after its parameters cell."""
    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("widgets", None)
    if fastest:
        (lecture,) = [lec for lec in lectures.lectures() if lec.path.name == src.name]
        at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(lectures.fastest_source(lecture)))
    dest.parent.mkdir(exist_ok=True)
    nbformat.write(nb, dest)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Lab serving stripped copies of lecture 00, solution 00 and the other widget lectures this run checks."""
    root = tmp_path_factory.mktemp("lab-root")
    stripped_copy(ROOT / "notebooks" / LECTURE, root / LECTURE, fastest=False)
    stripped_copy(ROOT / SOLUTION, root / SOLUTION, fastest=False)
    for path in OTHERS:
        stripped_copy(path, root / path.name, fastest=True)
    # The kernel should see what a reader's kernel sees: conftest's headless Agg backend would
    # hide inline figures.
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    # Every cell stays in the page, so a widget far down can be found and pressed.
    settings = {**lab.QUIET_SETTINGS, "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}}
    with lab.running(root, env=env, settings=settings, expose_app=True) as srv:
        yield srv
    assert not lab.is_listening(int(srv.url.rsplit(":", 1)[1].strip("/"))), "Lab still listens after stop"


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        yield page
    finally:
        try:  # free the kernel's memory and cores for the next test
            page.evaluate("() => window.jupyterapp && window.jupyterapp.serviceManager.sessions.shutdownAll()")
        except PlaywrightError:
            pass
        context.close()


# -- helpers -------------------------------------------------------------------------------------------

def open_and_run_all(page: Page, server: lab.Server, path: str, timeout_s: float = 600) -> list[dict]:
    """Open ``path`` in Lab, run all cells from the Run menu, wait for the kernel; return the code cells.

    ``timeout_s`` only catches a hang: the slow tier runs beside other tests on few cores, where a lecture
    takes several times its quiet papermill time (lecture 00 took over 90 s on Python 3.13 in CI).

    Fails on a cell that raised, a widget Lab could not display, or a TensorFlow log line in an output.
    """
    page.goto(server.link(f"lab/workspaces/{Path(path).stem}-{secrets.token_hex(4)}/tree/{path}"))  # fresh workspace
    page.wait_for_function(JS_NOTEBOOK_READY, arg=path, timeout=60_000)
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # room for the widget
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    page.wait_for_function(JS_ALL_RAN, timeout=timeout_s * 1000, polling=250)
    cells = page.evaluate(JS_CODE_CELLS)
    errors = [f"cell {c['index']}: {o['ename']}: {o['evalue']}"
              for c in cells for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, "cells raised in Lab:\n" + "\n".join(errors)
    assert page.get_by_text("Error displaying widget").count() == 0
    logs = [f"cell {c['index']}: {line[:120]}" for c in cells for o in c["outputs"] if o["output_type"] == "stream"
            for line in o["text"].splitlines() if TF_LOG.search(line)]
    assert not logs, "TensorFlow log lines reached the notebook in Lab:\n" + "\n".join(logs)
    return cells


def shoot(page: Page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    page.screenshot(path=str(path))
    return path


# -- the tests -------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(60, func_only=True)
def test_lab_server_answers_with_token_and_stops(tmp_path):
    """tests/lab.py alone (no browser needed): token enforced, settings written, nothing left listening."""
    with pytest.raises(FileNotFoundError, match="not a folder"):
        with lab.running(tmp_path / "missing"):
            pass
    with pytest.raises(ValueError, match="should look like"):
        lab.write_settings(tmp_path, {"no-plugin-name": {}})
    with lab.running(tmp_path) as srv:
        port = int(srv.url.rsplit(":", 1)[1].strip("/"))
        assert srv.url.startswith("http://127.0.0.1:") and lab.is_listening(port)
        assert json.loads(srv.get("api/status"))["kernels"] == 0
        with pytest.raises(urllib.error.HTTPError, match="403"):
            urllib.request.urlopen(srv.url + "api/status", timeout=10)  # no token, no answer
        notification = json.loads(srv.get("lab/api/settings/@jupyterlab/apputils-extension:notification"))
        assert notification["settings"]["fetchNews"] == "false"
    assert srv.process.poll() is not None and not lab.is_listening(port)


@pytest.mark.slow
@pytest.mark.timeout(900, func_only=True)
def test_lecture_00_widget_runs_in_lab(page, server):
    open_and_run_all(page, server, LECTURE)

    widget = page.locator(WIDGET)
    expect(widget).to_have_count(1)
    table, chart = widget.locator(".widget-html-content table"), widget.locator(".widget-output img")
    progress = widget.locator(".widget-hprogress")
    expect(table.locator("tr")).to_have_count(5)  # header + NumPy, TF eager, tf.function, XLA from run(n=N)
    expect(progress.locator(".widget-label")).to_have_text("done")
    assert chart.evaluate("img => img.naturalWidth") > 0, "the widget's chart is empty"
    table_before, chart_before = table.inner_html(), chart.get_attribute("src")

    # Use the controls as a reader would: drop XLA, one size smaller, Run.
    widget.locator(".widget-checkbox", has_text="XLA").locator("input").uncheck()
    slider = widget.locator(".widget-slider")
    slider.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowLeft")
    expect(slider.locator(".widget-readout")).to_have_text("1000000")
    widget.locator("button.widget-button", has_text="Run").click()

    expect(table.locator("tr")).to_have_count(4, timeout=180_000)  # header + three variants
    expect(progress.locator(".widget-label")).to_have_text("done", timeout=180_000)
    expect(widget.locator("button.widget-button")).to_be_enabled()
    assert progress.locator(".progress-bar").evaluate("b => b.style.width") == "100%"
    assert "XLA" not in table.inner_html() and table.inner_html() != table_before
    assert chart.get_attribute("src") != chart_before, "Run did not redraw the chart"
    assert chart.evaluate("img => img.naturalWidth") > 0
    # The kernel measured what the controls said.
    measured = page.evaluate(JS_KERNEL_PRINT, "print(widget.result.names, widget.result.params)")
    assert measured.strip() == "['NumPy', 'TF eager', 'tf.function'] {'n': 1000000}", measured

    widget.evaluate("box => box.scrollIntoView({block: 'start'})")
    page.mouse.move(0, 0)  # no hover highlight in the picture
    shoot(page, "lecture00.png")


def run_again_with_first_variant(page: Page, widget, label: str) -> None:
    """Press ``widget``'s Run with its first variant only, as a reader would after Run All; its table
    and chart must redraw and it must show no error."""
    widget.scroll_into_view_if_needed()
    table, chart = widget.locator(".widget-html-content table"), widget.locator(".widget-output img")
    progress = widget.locator(".widget-hprogress .widget-label")
    table_before = table.inner_html() if table.count() else None
    chart_before = chart.get_attribute("src") if chart.count() else None
    boxes = widget.locator(".widget-checkbox input")
    for i in range(1, boxes.count()):
        boxes.nth(i).uncheck()
    widget.locator("button.widget-button", has_text="Run").click()
    expect(progress).to_have_text("done", timeout=180_000)
    expect(table.locator("tr")).to_have_count(2, timeout=30_000)  # header + the first variant
    assert "What to do" not in widget.inner_text(), f"{label}: {widget.inner_text()}"
    assert table.inner_html() != table_before, f"{label}: Run did not redraw the table"
    expect(chart, f"{label}: the widget shows no chart").to_have_count(1, timeout=30_000)
    if chart_before is not None:  # the chart is drawn after the table: wait for it
        expect(chart, f"{label}: Run did not redraw the chart").not_to_have_attribute("src", chart_before,
                                                                                      timeout=30_000)
    assert chart.evaluate("img => img.naturalWidth") > 0, f"{label}: the chart is empty"


@pytest.mark.timeout(900, func_only=True)
@pytest.mark.parametrize("lecture", OTHERS, ids=[p.stem for p in OTHERS])
def test_widget_lecture_runs_all_then_every_run_redraws(page, server, lecture):
    """Run All to the end (so every later cell, a clean-up among them, has run), then press every
    widget's Run in turn with its first variant only: each chart and table changes, no widget errs."""
    open_and_run_all(page, server, lecture.name)
    widgets = page.locator(WIDGET)
    expect(widgets.first).to_be_visible()
    for i in range(widgets.count()):
        run_again_with_first_variant(page, widgets.nth(i), f"{lecture.stem}, widget {i + 1} of {widgets.count()}")
    widgets.first.evaluate("box => box.scrollIntoView({block: 'start'})")
    page.mouse.move(0, 0)
    shoot(page, f"{lecture.stem}.png")


@pytest.mark.slow
@pytest.mark.timeout(900, func_only=True)
def test_solution_00_checkers_pass_in_lab(page, server):
    cells = open_and_run_all(page, server, SOLUTION)
    checks = [c for c in cells if "check" in c["tags"]]
    assert len(checks) >= 2, f"expected at least two checker cells, found {len(checks)}"
    for c in checks:
        text = "".join(o.get("text", "") for o in c["outputs"] if o["output_type"] == "stream")
        assert "✓" in text and "✗" not in text, f"checker in cell {c['index']} printed: {text!r}"
    passed = page.locator(".jp-CodeCell").filter(has=page.locator(".jp-OutputArea-output", has_text="✓"))
    expect(passed).to_have_count(len(checks))  # what the reader sees, not only the model
    passed.last.scroll_into_view_if_needed()
    shoot(page, "solution00.png")


@pytest.mark.slow
@pytest.mark.timeout(120, func_only=True)
def test_make_lab_serves_the_course(page, tmp_path):
    """`make lab` as the README runs it (bootstrap skipped: -o the venv stamp; BIN = this interpreter's)."""
    port, token = lab.free_port(), secrets.token_hex(24)
    env = lab.isolated_env(tmp_path, token)
    env.update(JUPYTER_PORT=str(port), JUPYTER_PORT_RETRIES="0")  # `make kernel` registers into tmp_path/data
    args = "--no-browser" + (" --allow-root" if os.geteuid() == 0 else "")
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed", "lab",
           f"BIN={Path(sys.executable).parent}", f"LAB_ARGS={args}"]
    log = tmp_path / "make-lab.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    url, started = f"http://127.0.0.1:{port}/", []
    try:
        lab.wait_until_ready(process, url, token, timeout=90, log=log)
        started = psutil.Process(process.pid).children(recursive=True)
        assert any("jupyter" in " ".join(p.cmdline()) for p in started), "make lab started no Jupyter"
        srv = lab.Server(url, token, process, log)
        assert b"JupyterLab" in srv.get("lab")
        served = {item["name"] for item in json.loads(srv.get("api/contents"))["content"]}
        assert LECTURE in served, f"make lab does not serve notebooks/: {sorted(served)}"
        assert "tf-perf-course" in json.loads(srv.get("api/kernelspecs"))["kernelspecs"]
        page.goto(srv.link("lab"))
        expect(page.locator(".jp-DirListing-itemText", has_text=LECTURE)).to_be_visible(timeout=60_000)
        shoot(page, "make_lab.png")
    finally:
        lab.stop(process)
    assert not lab.is_listening(port), f"port {port} still answers after make lab was stopped"
    assert not [p for p in started if p.is_running()], "make lab left processes behind"
