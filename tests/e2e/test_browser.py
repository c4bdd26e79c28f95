"""Every lesson in a real browser: JupyterLab 4 in headless Chromium, used as a reader uses it.

For each notebook in notebooks/, the test opens a copy in JupyterLab, runs all cells from the Run
menu and then checks, in the page, that every experiment panel rendered as widgets, finished and
shows a plot; that a control changed in the browser and a click on Run take the status through
running back to done and change the plot; that every quiz question says right for exactly one
choice and not quite for the others, each with the explanation of the choice picked; and that no
cell shows an error and the browser console shows none from JupyterLab, the widgets or gpulab.
Panels and questions are found by what they render — a Run button beside a progress bar, a Check
button under radio buttons — so a new lesson is covered without touching this file.

An exercise notebook (exercises/) is opened too, its first exercise run up to its answer: its hint
button shows the hints one click at a time, as the solution notebook writes them.

Chromium is Debian's (/usr/bin/chromium, or the path in GPULAB_CHROMIUM), started headless and
kept off the network; the page may reach only the local JupyterLab. Without Chromium, JupyterLab
or playwright the tests are skipped, saying why; with GPULAB_REQUIRE_BROWSER=1 (CI sets it) that
skip is a failure.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from gpulab import course
from gpulab._processes import kill_processes_mentioning

from conftest import CHROMIUM, CHROMIUM_FLAGS, ROOT, chromium_missing

LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# Its first exercise has three hints.
HINTED = ROOT / "exercises" / "00_why_gpus.ipynb"


def _missing() -> str | None:
    return chromium_missing(("playwright", "jupyterlab"))


# The words "needs Chromium" let GPULAB_REQUIRE_BROWSER=1 turn this skip into a failure (conftest).
pytestmark = pytest.mark.skipif(
    _missing() is not None, reason=f"needs Chromium, JupyterLab and playwright: {_missing()}"
)


# ---------------------------------------------------------------- JupyterLab, started and always stopped


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on 127.0.0.1 serving copies of the lessons, with folders of its own."""
    home = tmp_path_factory.mktemp("jupyterlab")
    root = home / "notebooks"
    root.mkdir()
    (home / "tmp").mkdir()
    for lesson in LESSONS:
        shutil.copy(lesson, root / lesson.name)
    (root / "exercises").mkdir()
    shutil.copy(HINTED, root / "exercises" / HINTED.name)
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


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


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

# A panel: the box around a Run button, its status line and its plot.
PANELS = f"""() => [...{NOTEBOOK}.querySelectorAll('button.jupyter-button')]
    .filter(b => b.textContent.trim() === 'Run' && b.closest('.widget-hbox')?.querySelector('.widget-hprogress'))
    .map(b => {{
        const row = b.closest('.widget-hbox'), box = row.parentElement;
        const image = box.querySelector('.widget-output img');
        return {{status: row.nextElementSibling?.textContent ?? '', image: image ? image.src : null,
                title: box.querySelector('.widget-html b')?.textContent ?? ''}};
    }})"""

# A question: the box around a Check button, its choices and its feedback.
QUESTIONS = f"""() => [...{NOTEBOOK}.querySelectorAll('button.jupyter-button')]
    .filter(b => b.textContent.trim() === 'Check')
    .map(b => {{
        const box = b.closest('.widget-hbox').parentElement;
        return {{prompt: box.querySelector('.widget-html')?.textContent ?? '',
                choices: box.querySelectorAll('.widget-radio-box label').length}};
    }})"""


def _panel_box(page, index):
    return page.evaluate_handle(f"""() => [...{NOTEBOOK}.querySelectorAll('button.jupyter-button')]
        .filter(b => b.textContent.trim() === 'Run' && b.closest('.widget-hbox')?.querySelector('.widget-hprogress'))
        [{index}].closest('.widget-hbox').parentElement""")


def _watch(element_handle):
    """From now on, count the element's changes (window.__changes) and keep every text it showed
    (window.__seen), also texts that came and went before the observer's callback ran."""
    element_handle.evaluate("""el => {
        window.__seen = [];
        window.__changes = 0;
        window.__watch?.disconnect();
        window.__watch = new MutationObserver(records => {
            window.__changes += records.length;
            for (const record of records) {
                for (const node of record.addedNodes) window.__seen.push(node.textContent);
                if (record.type === 'characterData') window.__seen.push(record.target.textContent);
            }
            window.__seen.push(el.textContent);
        });
        window.__watch.observe(el, {subtree: true, childList: true, characterData: true});
    }""")


def _change_a_control(page, box) -> str:
    """Move the panel's first slider one step down (or up, at its lowest); else pick another option."""
    slider = box.query_selector("[role=slider]")
    if slider is not None:
        readout = box.query_selector(".widget-readout")
        before = readout.text_content()
        slider.focus()
        for key in ("ArrowLeft", "ArrowRight"):
            page.keyboard.press(key)
            try:
                page.wait_for_function("([el, old]) => el.textContent !== old", arg=[readout, before], timeout=3000)
                return f"slider {before} → {readout.text_content()}"
            except Exception:  # at the end of its range: try the other way
                continue
    select = box.query_selector("select")
    if select is not None:
        options = [o.get_attribute("value") for o in select.query_selector_all("option")]
        current = select.evaluate("el => el.value")
        choice = next(o for o in options if o != current)
        select.select_option(choice)
        return f"dropdown {current} → {choice}"
    raise AssertionError("the panel has no slider or dropdown to change")


def _kernel_ready(lab, notebook: str) -> bool:
    """Whether the server has a kernel for ``notebook``, started and idle."""
    with urllib.request.urlopen(f"{lab['url']}/api/sessions?token={lab['token']}", timeout=5) as response:
        sessions = json.load(response)
    return any(
        s.get("path", "").endswith(notebook) and (s.get("kernel") or {}).get("execution_state") == "idle"
        for s in sessions
    )


# A cell's error: JupyterLab shows a traceback as stderr text, so it is told from a warning by its words.
ERRORS = f"""() => [...({NOTEBOOK}?.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]') ?? [])]
    .map(e => e.textContent)
    .filter(t => /Traceback \\(most recent call last\\)|^\\s*\\w+(Error|Exception)\\b/m.test(t))
    .map(t => t.slice(0, 500))"""


def _until(page, condition, *, timeout_s: float, what: str) -> None:
    """Wait for ``condition()``; fail at once, saying why, if JupyterLab opens a dialog or a cell fails
    (Run All stops at a failing cell, so the rest would never run)."""
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


def _is_local(url: str, lab) -> bool:
    return url.startswith(lab["url"]) or url.startswith(lab["url"].replace("http", "ws"))


def _plain(text: str) -> str:
    """Text as the page shows it: no backticks, one space between words."""
    return " ".join(text.replace("`", "").split())


def _made_by(source: str, name: str) -> list:
    """The ``gpulab.quiz`` objects called ``name`` (Quiz, Hints) that a cell's source makes when it runs."""
    import gpulab.quiz

    made, kind = [], getattr(gpulab.quiz, name)

    class Recording(kind):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gpulab.quiz, name, Recording)
        exec(source, {})
    return made


def _quiz_as_written(lesson) -> list[dict[str, str]]:
    """For each question of the lesson's quiz, {choice as shown: its explanation as shown}."""
    for cell in course.read_notebook(lesson)["cells"]:
        if cell["cell_type"] == "code" and "Quiz(" in course.cell_source(cell):
            (quiz,) = _made_by(course.cell_source(cell), "Quiz")
            return [{_plain(c.text): _plain(c.why) for c in q.choices} for q in quiz.questions]
    return []


# ---------------------------------------------------------------- the test


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_a_lesson_runs_and_its_panels_and_quiz_work_in_the_browser(lab, browser, lesson, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    # Only the local JupyterLab may be reached; anything else (the Colab badge image) is refused.
    external: list[str] = []

    def route(route_):
        if _is_local(route_.request.url, lab):
            route_.continue_()
        else:
            external.append(route_.request.url)
            route_.abort()

    context.route("**/*", route)
    page = context.new_page()
    console_errors, page_errors = [], []
    page.on(
        "console", lambda m: console_errors.append((m.text, m.location.get("url", ""))) if m.type == "error" else None
    )
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    try:
        page.goto(f"{lab['url']}/lab/tree/{lesson.name}?reset&token={lab['token']}")  # reset: no other tabs
        page.wait_for_selector(".jp-Notebook", timeout=90_000)
        _until(
            page,
            lambda: _kernel_ready(lab, lesson.name) and page.evaluate(KERNEL_IDLE),
            timeout_s=90,
            what="the notebook's kernel",
        )
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        _until(page, lambda: page.evaluate(ALL_RAN), timeout_s=240, what="every cell to run")
        _until(page, lambda: page.evaluate(KERNEL_IDLE), timeout_s=60, what="the kernel to be idle")

        # No cell shows an error, and every widget rendered as a widget.
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        assert not page.evaluate(ERRORS), f"{lesson.name}: cells show errors:\n" + "\n".join(page.evaluate(ERRORS))
        outputs = " ".join(notebook.locator(".jp-OutputArea-output").all_text_contents())
        for failure in ("Error displaying widget", "Loading widget", "VBox(children="):
            assert failure not in outputs, f"{lesson.name}: an output shows {failure!r} instead of a widget"

        # Every panel ran with its defaults, ended "done" and shows a plot.
        panels = page.evaluate(PANELS)
        assert panels, f"{lesson.name}: no experiment panel found"
        for panel in panels:
            assert "done" in panel["status"] and panel["image"], (
                f"{lesson.name}: {panel['title']!r} shows {panel['status']!r}"
            )

        # A control changed in the browser and a click on Run: running, then done, with a new plot.
        for index, panel in enumerate(panels):
            box = _panel_box(page, index).as_element()
            box.scroll_into_view_if_needed()
            change = _change_a_control(page, box)
            page.wait_for_function(KERNEL_IDLE, timeout=60_000)  # the caps follow the control
            status = box.query_selector(":scope > .widget-hbox + .widget-html")
            _watch(status)
            box.query_selector("button.jupyter-button >> text=Run").click()
            page.wait_for_function(
                """el => window.__seen.some(t => t.includes('running'))
                                       && el.textContent.includes('done')""",
                arg=status,
                timeout=120_000,
            )
            image = box.query_selector(".widget-output img").get_attribute("src")
            assert image != panel["image"], f"{lesson.name}: {panel['title']!r}: the plot did not change after {change}"

        # Every question: exactly one choice is right, the others are not, each pick shows that choice's own
        # explanation, and code is shown as code.
        questions = page.evaluate(QUESTIONS)
        assert questions, f"{lesson.name}: no quiz question found"
        written = _quiz_as_written(lesson)
        assert len(questions) == len(written), (
            f"{lesson.name}: {len(questions)} questions shown, {len(written)} written"
        )
        for number, question in enumerate(questions):
            assert "`" not in question["prompt"], f"{lesson.name}: question {number + 1} shows raw backticks"
            check = notebook.locator("button.jupyter-button", has_text=re.compile(r"^\s*Check\s*$")).nth(number)
            check.scroll_into_view_if_needed()
            box = check.locator("xpath=ancestor::*[contains(@class, 'widget-hbox')][1]/..")
            feedback = check.locator("xpath=following-sibling::*[1]").element_handle()
            verdicts, explanations = [], []
            for choice in range(question["choices"]):
                label = box.locator(".widget-radio-box label").nth(choice)
                picked = _plain(label.text_content())
                label.click()
                page.wait_for_function(KERNEL_IDLE, timeout=30_000)
                _watch(feedback)
                check.click()
                # The quiz clears the feedback before it answers, so even the same verdict twice is a change.
                page.wait_for_function(
                    "el => window.__changes > 0 && el.textContent.trim() !== ''", arg=feedback, timeout=30_000
                )
                said = _plain(feedback.text_content())
                verdicts.append(said[:1])
                explanations.append(said.split(".", 1)[-1].strip())  # after "✓ right." or "✗ not quite."
                assert explanations[-1] == written[number].get(picked), (
                    f"{lesson.name}: question {number + 1}, {picked!r} picked: it says {said!r}, "
                    f"its explanation is {written[number].get(picked)!r}"
                )
            assert sorted(verdicts) == ["✓"] + ["✗"] * (len(verdicts) - 1), (
                f"{lesson.name}: question {number + 1} ({question['prompt'][:60]}…) answered {verdicts}"
            )
            assert len(set(explanations)) == len(explanations), (
                f"{lesson.name}: question {number + 1} gives the same explanation for different choices"
            )

        # The console: no error from JupyterLab, the widgets or gpulab; refused external resources are noted.
        ours = [(text, url) for text, url in console_errors if not url or _is_local(url, lab)]
        assert not ours and not page_errors, f"{lesson.name}: browser errors {ours} {page_errors}"
        if external:
            print(f"{lesson.name}: refused {len(external)} request(s) that need the internet: {sorted(set(external))}")
    except Exception:
        page.screenshot(path=str(tmp_path / f"{lesson.stem}.png"), full_page=True)
        print(f"the page as it was: {tmp_path / f'{lesson.stem}.png'}")
        raise
    finally:
        context.close()


# A hints widget: the box around a button that offers a hint, and the text above it.
HINT_BOX = f"""() => [...{NOTEBOOK}.querySelectorAll('button.jupyter-button')]
    .filter(b => /hint/i.test(b.textContent))
    .map(b => b.closest('.widget-vbox'))[0]"""


def _hints_as_written(exercise) -> list[str]:
    """The hints of the notebook's first hints cell, as the page shows them."""
    for cell in course.read_notebook(exercise)["cells"]:
        if cell.get("metadata", {}).get("gpulab", {}).get("hints"):
            (hints,) = _made_by(course.cell_source(cell), "Hints")
            return [_plain(hint) for hint in hints.hints]
    return []


def test_an_exercise_s_hints_are_revealed_one_click_at_a_time_in_the_browser(lab, browser, tmp_path):
    written = _hints_as_written(HINTED)
    assert len(written) == 3, f"{HINTED.name}'s first exercise should have three hints to click through: {written}"
    notebook_path = f"exercises/{HINTED.name}"
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.route("**/*", lambda route_: route_.continue_() if _is_local(route_.request.url, lab) else route_.abort())
    page = context.new_page()
    console_errors, page_errors = [], []
    page.on(
        "console", lambda m: console_errors.append((m.text, m.location.get("url", ""))) if m.type == "error" else None
    )
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    try:
        page.goto(f"{lab['url']}/lab/tree/{notebook_path}?reset&token={lab['token']}")
        page.wait_for_selector(".jp-Notebook", timeout=90_000)
        _until(
            page,
            lambda: _kernel_ready(lab, notebook_path) and page.evaluate(KERNEL_IDLE),
            timeout_s=90,
            what="the notebook's kernel",
        )
        # Select the first exercise's answer cell, the one below its hints, and run everything above it.
        cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
        sources = [cells.nth(i).locator(".jp-InputArea").text_content() for i in range(cells.count())]
        first = next(i for i, text in enumerate(sources) if "Hints([" in text)
        cells.nth(first + 1).locator(".jp-InputPrompt").click()
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Above Selected Cell$")).click()
        _until(page, lambda: page.evaluate(HINT_BOX) is not None, timeout_s=120, what="the hints to show")
        _until(page, lambda: page.evaluate(KERNEL_IDLE), timeout_s=60, what="the kernel to be idle")

        box = page.evaluate_handle(HINT_BOX).as_element()
        box.scroll_into_view_if_needed()
        button, text = box.query_selector("button.jupyter-button"), box.query_selector(".widget-html")
        assert _plain(text.text_content()) == "", f"a hint shows before any click: {text.text_content()!r}"
        for shown in range(1, len(written) + 1):
            assert _plain(button.text_content()) == f"Show a hint ({shown} of {len(written)})"
            assert button.is_enabled()
            button.click()
            page.wait_for_function(
                "([el, n]) => (el.textContent.match(/Hint \\d of/g) || []).length >= n",
                arg=[text, shown],
                timeout=30_000,
            )
            now = _plain(text.text_content())
            for number, hint in enumerate(written, start=1):
                assert (f"Hint {number} of {len(written)}. {hint}" in now) == (number <= shown), (
                    f"after {shown} click(s), hint {number} {'is missing' if number <= shown else 'shows early'}: {now!r}"
                )
        assert _plain(button.text_content()) == f"All {len(written)} hints shown" and not button.is_enabled()

        assert not page.evaluate(ERRORS), "cells show errors:\n" + "\n".join(page.evaluate(ERRORS))
        ours = [(text, url) for text, url in console_errors if not url or _is_local(url, lab)]
        assert not ours and not page_errors, f"browser errors {ours} {page_errors}"
    except Exception:
        page.screenshot(path=str(tmp_path / "hints.png"), full_page=True)
        print(f"the page as it was: {tmp_path / 'hints.png'}")
        raise
    finally:
        context.close()
