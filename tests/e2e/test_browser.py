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

import re
import shutil

import jupyterlab_page
import pytest
from jupyterlab_page import ERRORS, KERNEL_IDLE, NOTEBOOK
from jupyterlab_page import until as _until

from gpulab import course

from conftest import ROOT, chromium_missing

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


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on 127.0.0.1 serving copies of the lessons, with folders of its own."""
    home = tmp_path_factory.mktemp("jupyterlab")
    root = home / "notebooks"
    root.mkdir()
    for lesson in LESSONS:
        shutil.copy(lesson, root / lesson.name)
    (root / "exercises").mkdir()
    shutil.copy(HINTED, root / "exercises" / HINTED.name)
    with jupyterlab_page.serve(home, root) as served:
        yield served


@pytest.fixture(scope="module")
def browser():
    with jupyterlab_page.chromium() as chromium:
        yield chromium


# ---------------------------------------------------------------- reading the page

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
    # Only the local JupyterLab may be reached; anything else (the Colab badge image) is refused.
    with jupyterlab_page.visit(browser, lab, tmp_path / f"{lesson.stem}.png") as (page, seen):
        jupyterlab_page.open_and_run_all(page, lab, lesson.name)

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
        errors = jupyterlab_page.browser_errors(seen, lab)
        assert not errors, f"{lesson.name}: browser errors {errors}"
        if external := seen["external"]:
            print(f"{lesson.name}: refused {len(external)} request(s) that need the internet: {sorted(set(external))}")


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
    with jupyterlab_page.visit(browser, lab, tmp_path / "hints.png") as (page, seen):
        page.goto(f"{lab['url']}/lab/tree/{notebook_path}?reset&token={lab['token']}")
        page.wait_for_selector(".jp-Notebook", timeout=90_000)
        _until(
            page,
            lambda: jupyterlab_page.kernel_ready(lab, notebook_path) and page.evaluate(KERNEL_IDLE),
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
        assert not jupyterlab_page.browser_errors(seen, lab), (
            f"browser errors {jupyterlab_page.browser_errors(seen, lab)}"
        )
