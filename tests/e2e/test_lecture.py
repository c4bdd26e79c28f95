"""Lecture mode in a real browser: a lesson presented as slides in JupyterLab, and its static deck.

The lesson (``make lecture LESSON=02``'s) is a copy with the slides ``gpulab slides`` generates. In
JupyterLab in headless Chromium the test runs all its cells, starts the slideshow (jupyterlab-slideshow's
deck button), goes through every slide with Space as a lecturer does — each slide showing exactly the
cells the generated plan puts on it — on the first question's slide picks a choice, clicks Check and sees
that choice's own explanation, and on the first panel's slide moves the slider with the mouse, clicks Run
and sees the figure change; the browser console shows no error from JupyterLab, the
extension, the widgets or gpulab.

The static deck (:func:`gpulab.slides.static_deck`) is opened from disk with every request off the
disk refused: reveal.js starts, shows as many slides as the plan has, the formula is typeset and the
figure drawn, and nothing failed to load.

Chromium is Debian's (as in tests/e2e/test_browser.py), kept off the network; without it, JupyterLab,
jupyterlab-slideshow or playwright the tests are skipped, saying why (GPULAB_REQUIRE_BROWSER=1 fails them).
"""

from __future__ import annotations

import copy
import re
import time

import jupyterlab_page
import pytest
from jupyterlab_page import ERRORS, KERNEL_IDLE, NOTEBOOK

from gpulab import course, slides

from conftest import ROOT, chromium_missing

LESSON = ROOT / "notebooks" / "02_copying.ipynb"


def _missing() -> str | None:
    return chromium_missing(("playwright", "jupyterlab", "jupyterlab_slideshow", "sphinx_revealjs"))


# The words "needs Chromium" let GPULAB_REQUIRE_BROWSER=1 turn this skip into a failure (conftest).
pytestmark = pytest.mark.skipif(
    _missing() is not None,
    reason=f"needs Chromium, JupyterLab, jupyterlab-slideshow, sphinx-revealjs and playwright: {_missing()}",
)


def _lesson_with_slides() -> dict:
    notebook = course.read_notebook(LESSON)
    slides.apply(notebook)
    return notebook


def _first_question_explanations() -> dict[str, str]:
    """The lesson's first quiz question: {choice as shown: its explanation as shown}, from the quiz as written."""
    from gpulab import quiz as quiz_module
    from gpulab.quiz import _plain

    for cell in course.read_notebook(LESSON)["cells"]:
        source = course.cell_source(cell)
        if cell["cell_type"] == "code" and "Quiz(" in source:
            namespace: dict = {}
            exec(source, namespace)
            built = next(value for value in namespace.values() if isinstance(value, quiz_module.Quiz))
            return {_plain(c.text): " ".join(_plain(c.why).split()) for c in built.questions[0].choices}
    raise AssertionError(f"{LESSON.name} has no quiz")


# ---------------------------------------------------------------- JupyterLab, started and always stopped


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab on 127.0.0.1 serving the lesson, with the slides `gpulab slides` generates."""
    home = tmp_path_factory.mktemp("lecture")
    root = home / "notebooks"
    root.mkdir()
    course.write_notebook(_lesson_with_slides(), root / LESSON.name)
    with jupyterlab_page.serve(home, root) as served:
        yield served


@pytest.fixture(scope="module")
def browser():
    with jupyterlab_page.chromium() as chromium:
        yield chromium


# ---------------------------------------------------------------- reading the page

# The cells the slideshow shows now, by their index in the notebook.
ON_SCREEN = f"""() => [...{NOTEBOOK}.querySelectorAll('.jp-Notebook .jp-Cell')]
    .map((cell, index) => cell.classList.contains('jp-deck-mod-onscreen') ? index : -1).filter(index => index >= 0)"""


def _move_the_slider(page, box) -> str:
    """Click the panel's slider track a third of the way along, as a lecturer would drag it; return the change."""
    readout = box.query_selector(".widget-readout")
    before = readout.text_content()
    track = box.query_selector(".widget-slider .noUi-base, .widget-slider")
    area = track.bounding_box()
    for fraction in (0.3, 0.1, 0.6):
        page.mouse.click(area["x"] + area["width"] * fraction, area["y"] + area["height"] / 2)
        try:
            page.wait_for_function("([el, old]) => el.textContent !== old", arg=[readout, before], timeout=3000)
            return f"slider {before} → {readout.text_content()}"
        except Exception:  # that point is the value it had: try another
            continue
    raise AssertionError(f"clicking the slider did not move it from {before}")


# ---------------------------------------------------------------- the tests


def test_a_lesson_is_shown_slide_by_slide_and_its_panel_runs_live_on_its_slide(lab, browser, tmp_path):
    plan = slides.plan(_lesson_with_slides())
    panel_slides = [number for number, slide in enumerate(plan) if slide.kind == "panel"]
    question_slides = [number for number, slide in enumerate(plan) if slide.kind == "question"]
    assert question_slides, f"{LESSON.name} has no question slide"
    why = _first_question_explanations()
    by_remote = False
    assert panel_slides, f"{LESSON.name} has no panel slide"
    started = time.monotonic()
    with jupyterlab_page.visit(browser, lab, tmp_path / "lecture.png") as (page, seen):
        jupyterlab_page.open_and_run_all(page, lab, LESSON.name)

        # The slideshow starts at the active cell: the title. (Esc, in the slideshow, stops it.)
        notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        notebook.locator(".jp-Cell").first.click()
        page.keyboard.press("Escape")
        notebook.locator("[data-command='deck:toggle']").click()
        page.wait_for_function("() => document.body.dataset.jpDeckMode === 'presenting'", timeout=30_000)

        for number, slide in enumerate(plan):
            # Space steps through the cells of a slide (the active cell, for Shift+Enter), then to the next slide.
            for _press in plan[number - 1].cells if number and not by_remote else ():
                page.keyboard.press("Space")
                page.wait_for_timeout(150)
                if page.evaluate(ON_SCREEN)[:1] != [plan[number - 1].cells[0]]:
                    break
            try:
                page.wait_for_function(f"() => ({ON_SCREEN})()[0] === {slide.cells[0]}", timeout=15_000)
            except Exception:
                raise AssertionError(
                    f"slide {number + 1} of {len(plan)} ({slide.kind}, {slide.section!r}) should start at cell "
                    f"{slide.cells[0]}; the slideshow shows cells {page.evaluate(ON_SCREEN)}"
                ) from None
            by_remote = False
            shown = page.evaluate(ON_SCREEN)
            assert shown == list(slide.cells), (
                f"slide {number + 1} of {len(plan)} ({slide.kind}, {slide.section!r}) shows cells {shown}, "
                f"the plan says {list(slide.cells)}"
            )
            if number == question_slides[0]:
                # On a question's slide: a choice picked and checked shows that choice's own explanation.
                cell = notebook.locator(".jp-Notebook .jp-Cell").nth(slide.cells[0])
                label = cell.locator(".widget-radio-box label").last
                picked = label.text_content().strip()
                label.click()
                page.wait_for_function(KERNEL_IDLE, timeout=30_000)
                cell.locator("button.jupyter-button", has_text=re.compile(r"^\s*Check\s*$")).click()
                feedback = cell.locator(".widget-hbox .widget-html").last
                page.wait_for_function(
                    "el => el.textContent.trim() !== ''", arg=feedback.element_handle(), timeout=30_000
                )
                said = " ".join(feedback.text_content().split())
                assert said.startswith(("✓ right.", "✗ not quite.")) and said.split(".", 1)[1].strip() == why[picked], (
                    f"question slide {number + 1}: {picked!r} picked, it says {said!r}; its explanation is {why[picked]!r}"
                )
                page.locator(".jp-Deck-Remote .jp-deck-mod-direction-down").click()
                by_remote = True
                continue
            if number != panel_slides[0]:
                continue
            # On the panel's slide: the slider moved with the mouse, Run clicked, a new figure.
            cell = notebook.locator(".jp-Notebook .jp-Cell").nth(slide.cells[0])
            box = cell.locator("button.jupyter-button", has_text=re.compile(r"^\s*Run\s*$")).element_handle()
            box = box.evaluate_handle("b => b.closest('.widget-hbox').parentElement").as_element()
            image = box.query_selector(".widget-output img").get_attribute("src")
            status = box.query_selector(":scope > .widget-hbox + .widget-html")
            assert "done" in status.text_content(), f"the panel shows {status.text_content()!r} before any click"
            change = _move_the_slider(page, box)
            page.wait_for_function(KERNEL_IDLE, timeout=60_000)  # the caps follow the control
            box.query_selector("button.jupyter-button >> text=Run").click()
            page.wait_for_function(
                "([el, old]) => el.textContent.includes('done') && el.closest('.widget-vbox')"
                ".querySelector('.widget-output img')?.getAttribute('src') !== old",
                arg=[status, image],
                timeout=120_000,
            )
            after = box.query_selector(".widget-output img").get_attribute("src")
            assert after != image, f"the figure did not change after {change}"
            assert page.evaluate(ON_SCREEN) == list(slide.cells), "running the panel moved the slideshow"
            # The keys belong to the panel's button now: the lecturer moves on with the on-screen remote's arrow
            # (down: the next slide of the column), which gives Space back to the slideshow.
            page.locator(".jp-Deck-Remote .jp-deck-mod-direction-down").click()
            by_remote = True

        # The last slide is the last: Space goes no further.
        for _press in range(len(plan[-1].cells) + 1):
            page.keyboard.press("Space")
            page.wait_for_timeout(150)
        assert page.evaluate(ON_SCREEN) == list(plan[-1].cells)

        assert not page.evaluate(ERRORS), "cells show errors:\n" + "\n".join(page.evaluate(ERRORS))
        errors = jupyterlab_page.browser_errors(seen, lab)
        assert not errors, f"browser errors {errors}"
        print(
            f"{LESSON.name}: {len(plan)} slides shown and a panel re-run in {time.monotonic() - started:.0f} s"
            + (f"; refused {sorted(set(seen['external']))}" if seen["external"] else "")
        )


def _executed(notebook: dict) -> dict:
    """The lesson as if it had run: every code cell with an output, each panel's a figure (a real PNG)."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4, 2))
    figure.subplots().plot([1, 2, 3], [3, 1, 2])
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    png = base64.b64encode(buffer.getvalue()).decode()
    notebook = copy.deepcopy(notebook)
    for count, cell in enumerate(c for c in notebook["cells"] if c["cell_type"] == "code"):
        source = course.cell_source(cell)
        data = {"image/png": png} if "Panel(" in source else {"text/plain": f"output {count}"}
        cell.update(
            execution_count=count + 1,
            outputs=[{"output_type": "execute_result", "execution_count": count + 1, "data": data, "metadata": {}}],
        )
    return notebook


def test_the_static_deck_of_a_lesson_works_from_disk_with_no_network(browser, tmp_path):
    notebook = _executed(course.read_notebook(LESSON))
    page_path = slides.static_deck(notebook, tmp_path / "site", name=LESSON.stem)
    plan = slides.plan(_lesson_with_slides())
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    refused, failed = [], []

    def route(route_):
        if route_.request.url.startswith("file://"):
            route_.continue_()
        else:
            refused.append(route_.request.url)
            route_.abort()

    context.route("**/*", route)
    page = context.new_page()
    console_errors = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: console_errors.append(str(error)))
    page.on("requestfailed", lambda request: failed.append(request.url))
    try:
        page.goto(page_path.as_uri())
        page.wait_for_function("() => window.Reveal?.isReady()", timeout=30_000)
        assert page.evaluate("Reveal.getTotalSlides()") == len(plan)
        seen = 1
        while not page.evaluate("Reveal.isLastSlide()"):
            page.keyboard.press("Space")  # reveal.js: the next slide, below or to the right
            seen += 1
            assert seen <= len(plan), "Space went past the plan's slides"
        assert seen == len(plan)
        page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0", timeout=30_000)
        figures = page.evaluate("[...document.querySelectorAll('.reveal img')].map(i => i.naturalWidth)")
        assert figures and all(width > 0 for width in figures), f"figures {figures}"
        assert not refused and not failed, f"the deck asked the network for {refused}, failed to load {failed}"
        assert not console_errors, console_errors
    finally:
        context.close()
