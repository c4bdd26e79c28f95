"""JupyterLab in headless Chromium, for the browser tests (test_browser.py, test_lecture.py): a server started
on 127.0.0.1 with folders of its own and always stopped, Chromium kept off the network, and what the tests read
from the page (the notebook on show, its kernel, its cells' errors).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from gpulab._processes import kill_processes_mentioning

from conftest import CHROMIUM, CHROMIUM_FLAGS

# ---------------------------------------------------------------- JupyterLab, started and always stopped


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serve(home: Path, root: Path) -> Iterator[dict]:
    """A JupyterLab on 127.0.0.1 serving ``root``, its settings, runtime and kernels' scratch under ``home``:
    ``{"url", "token", "home"}``. Stopped on leaving, with every kernel it started."""
    (home / "tmp").mkdir(exist_ok=True)
    # JupyterLab would ask whether to fetch news and check for updates from the internet, and would
    # keep cells out of the page until they are scrolled into view.
    for plugin, values in {
        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "notebook-extension/tracker": {"windowingMode": "none"},
    }.items():
        path = home / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_PLATFORM_DIRS="1",
        MPLBACKEND="Agg",
        TMPDIR=str(home / "tmp"),
    )  # what the kernels write goes with the server's folder
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")
    log = open(home / "server.log", "w")
    server = subprocess.Popen(command, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"JupyterLab did not start:\n{(home / 'server.log').read_text()[-2000:]}"
                    ) from None
                time.sleep(0.5)
        yield {"url": url, "token": token, "home": home}
    finally:
        try:  # the server stops its kernels and exits
            request = urllib.request.Request(
                f"{url}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
            )
            urllib.request.urlopen(request, timeout=10).close()
            server.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        kill_processes_mentioning(str(home))  # any kernel the server left behind
        log.close()


@contextlib.contextmanager
def chromium() -> Iterator:
    """Debian's Chromium, headless, through playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


# ---------------------------------------------------------------- reading the page

# "The kernel is idle and nothing is queued": the status bar and every code cell's prompt.
# Every query looks only inside the notebook on show (other tabs may be open).
NOTEBOOK = "document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)')"

KERNEL_IDLE = f"""() => {{
    const status = {NOTEBOOK}?.querySelector('.jp-Notebook-ExecutionIndicator');
    const queued = [...({NOTEBOOK}?.querySelectorAll('.jp-CodeCell .jp-InputPrompt') ?? [])].some(p => p.textContent.includes('*'));
    return status != null && status.getAttribute('data-status') === 'idle' && !queued;
}}"""
# "Every code cell has run": each shows an execution count.
ALL_RAN = f"""() => [...{NOTEBOOK}.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].every(p => /\\[\\d+\\]/.test(p.textContent))"""

# A cell's error: JupyterLab shows a traceback as stderr text, so it is told from a warning by its words.
ERRORS = f"""() => [...({NOTEBOOK}?.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]') ?? [])]
    .map(e => e.textContent)
    .filter(t => /Traceback \\(most recent call last\\)|^\\s*\\w+(Error|Exception)\\b/m.test(t))
    .map(t => t.slice(0, 500))"""


def kernel_ready(lab: dict, notebook: str) -> bool:
    """Whether the server has a kernel for ``notebook``, started and idle."""
    with urllib.request.urlopen(f"{lab['url']}/api/sessions?token={lab['token']}", timeout=5) as response:
        sessions = json.load(response)
    return any(
        s.get("path", "").endswith(notebook) and (s.get("kernel") or {}).get("execution_state") == "idle"
        for s in sessions
    )


def until(page, condition, *, timeout_s: float, what: str) -> None:
    """Wait for ``condition()`` (letting the page's requests through: page.wait_for_timeout, never time.sleep);
    fail at once, saying why, if JupyterLab opens a dialog or a cell fails (Run All stops at a failing cell, so
    the rest would never run)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            raise AssertionError(
                f"JupyterLab opened a dialog while waiting for {what}: {dialog.first.text_content()!r}"
            )
        errors = page.evaluate(ERRORS)
        if errors:
            raise AssertionError(f"a cell failed while waiting for {what}:\n" + "\n".join(errors))
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        page.wait_for_timeout(250)


def is_local(url: str, lab: dict) -> bool:
    return url.startswith(lab["url"]) or url.startswith(lab["url"].replace("http", "ws"))


def open_and_run_all(page, lab: dict, path: str) -> None:
    """Open ``path`` (relative to the server's root) alone, wait for its kernel, run all its cells from the Run
    menu and wait until every one has run and the kernel is idle."""
    page.goto(f"{lab['url']}/lab/tree/{path}?reset&token={lab['token']}")  # reset: no other tabs
    page.wait_for_selector(".jp-Notebook", timeout=90_000)
    name = Path(path).name
    until(page, lambda: kernel_ready(lab, name) and page.evaluate(KERNEL_IDLE), timeout_s=90, what="the kernel")
    run_all(page)


def run_all(page) -> None:
    """Run > Run All Cells, then wait until every cell has run and the kernel is idle."""
    import re

    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    until(page, lambda: page.evaluate(ALL_RAN), timeout_s=240, what="every cell to run")
    until(page, lambda: page.evaluate(KERNEL_IDLE), timeout_s=60, what="the kernel to be idle")


@contextlib.contextmanager
def visit(browser, lab: dict, screenshot: Path) -> Iterator[tuple]:
    """A page of its own that may reach only the local JupyterLab (anything else, such as the Colab badge's
    image, is refused and noted), and what it saw: ``{"console": [(text, url)], "page": [...], "external": [...]}``.
    A failure inside leaves a screenshot of the whole page at ``screenshot``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    seen: dict[str, list] = {"console": [], "page": [], "external": []}

    def route(route_):
        if is_local(route_.request.url, lab):
            route_.continue_()
        else:
            seen["external"].append(route_.request.url)
            route_.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and seen["console"].append((m.text, m.location.get("url", ""))))
    page.on("pageerror", lambda error: seen["page"].append(str(error)))
    try:
        yield page, seen
    except Exception:
        page.screenshot(path=str(screenshot), full_page=True)
        print(f"the page as it was: {screenshot}")
        raise
    finally:
        context.close()


def browser_errors(seen: dict, lab: dict) -> list:
    """The errors the page's console and scripts reported, from JupyterLab, its extensions, the widgets or gpulab
    (a refused request's error, from another host, is not one)."""
    return [(text, url) for text, url in seen["console"] if not url or is_local(url, lab)] + seen["page"]
