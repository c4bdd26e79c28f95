"""The course's website (``make site``), built and read as a reader reads it: in headless Chromium, off the network.

The site is built once for the module, from this work tree, into a scratch folder (tools/site/build.py
``--out``): every lesson and every exercise notebook executed here. Then every page is opened in Chromium
served from 127.0.0.1, with every request to another host refused and recorded, and read: it loads with no
console error and no failed request, its internal links and images resolve, every image has a text alternative
that says something, its quizzes answer every pick with that choice's own explanation, its exercises' hints open
one at a time, its Colab link names the release the notebooks install, search finds a lesson, and each
lesson's static slide deck shows the plan's slides, its figures, and its quiz one question to a slide. Without
Chromium or playwright the tests are skipped, saying why; with GPULAB_REQUIRE_BROWSER=1 (CI sets it) that skip
is a failure.
"""

from __future__ import annotations

import functools
import http.server
import re
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest

import gpulab
from gpulab import course, slides

from conftest import CHROMIUM, CHROMIUM_FLAGS, ROOT, chromium_missing

pytestmark = pytest.mark.skipif(
    chromium_missing() is not None, reason=f"needs Chromium and playwright: {chromium_missing()}"
)

PAGES = [f"{folder}/{stem}" for folder in ("notebooks", "exercises") for stem in course.LESSONS]
GUIDE = ["guide/index"] + [f"guide/{path.stem}" for path in sorted((ROOT / "guide").glob("[0-9][0-9]_*.md"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built from this work tree into a scratch folder."""
    where = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "site" / "build.py"), "--out", str(where / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert built.returncode == 0, f"make site failed:\n{built.stdout[-4000:]}\n{built.stderr[-4000:]}"
    return where / "site"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def served(site):
    """The site served on 127.0.0.1, as a static host (GitHub Pages) serves it: its address."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def reader(served):
    """A Chromium page that may reach only the site, and what it saw: console errors, failed and refused requests."""
    from playwright.sync_api import sync_playwright

    seen = {"errors": [], "failed": [], "elsewhere": []}

    def route(request_route):
        url = request_route.request.url
        if url.startswith(served) or url.startswith("data:"):
            request_route.continue_()
        else:
            seen["elsewhere"].append(url)
            request_route.abort()

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = chromium.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda message: message.type == "error" and seen["errors"].append(message.text))
            page.on("pageerror", lambda error: seen["errors"].append(str(error)))
            page.on("requestfailed", lambda request: seen["failed"].append(request.url))
            page.on("response", lambda response: response.status >= 400 and seen["failed"].append(response.url))
            page.route("**/*", route)
            yield page, seen
        finally:
            chromium.close()


def visit(reader, served, path: str):
    page, seen = reader
    for found in seen.values():
        found.clear()
    page.goto(served + path)
    page.wait_for_load_state("networkidle")
    return page, seen


def test_every_lesson_and_exercise_is_a_page_and_no_solution_is(site):
    for path in ["index", "search", *PAGES, *GUIDE]:
        assert (site / f"{path}.html").is_file(), f"{path}.html is missing from the site"
    assert not (site / "solutions").exists()
    for page in site.rglob("*.html"):
        if page.relative_to(site).parts[0] == "guide":  # the instructor's guide speaks of grading with solutions/
            continue
        text = page.read_text(encoding="utf-8")
        assert "solutions/" not in text, f"{page.relative_to(site)} mentions solutions/"
    # the notebooks to download are the committed ones, without outputs, and hold no solution either
    downloads = {path.read_bytes() for path in site.glob("_downloads/*/*.ipynb")}
    assert len(downloads) == len(PAGES)
    for relative in PAGES:
        assert (ROOT / f"{relative}.ipynb").read_bytes() in downloads, f"{relative}.ipynb is not offered as committed"


@pytest.mark.parametrize("path", ["index", *PAGES, *GUIDE])
def test_a_page_loads_offline_with_no_error_and_every_link_and_image_resolves(reader, served, site, path):
    page, seen = visit(reader, served, f"{path}.html")
    assert not seen["errors"], f"console errors on {path}: {seen['errors']}"
    assert not seen["elsewhere"], f"{path} asked another host for {seen['elsewhere']}: the site must work offline"
    assert not seen["failed"], f"requests that failed on {path}: {seen['failed']}"
    # every image loaded, and says what it shows
    images = page.eval_on_selector_all(
        "article img", "els => els.map(e => ({src: e.getAttribute('src'), alt: e.alt, width: e.naturalWidth}))"
    )
    for image in images:
        assert image["width"] > 0, f"an image on {path} did not load: {image['src'][:80]}"
        alt = image["alt"].strip()
        name = Path(urllib.parse.urlparse(image["src"]).path).name
        assert alt and alt != name and alt.lower() not in {"plot", "image", "figure", "png"}, (
            f"an image on {path} has no text alternative that says what it shows: {alt!r}"
        )
    # every link within the site reaches a file of it, and its anchor an element of that page
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    for link in links:
        if not link.startswith(served):
            continue
        target = urllib.parse.urlparse(link)
        file = site / urllib.parse.unquote(target.path).lstrip("/")
        if file.is_dir():
            file = file / "index.html"
        assert file.is_file(), f"{path} links to {link}, which the site lacks"
        if target.fragment and file.suffix == ".html":
            assert re.search(rf"id=\"{re.escape(target.fragment)}\"", file.read_text(encoding="utf-8")), (
                f"{path} links to #{target.fragment} of {file.name}, which has no such element"
            )


@pytest.mark.parametrize("stem", list(course.LESSONS))
def test_every_panel_shows_its_figure_with_a_description_beside_the_h100_record(reader, served, stem):
    page, _ = visit(reader, served, f"notebooks/{stem}.html")
    panels = page.locator(".gpulab-panel")
    source = (ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8")
    assert panels.count() == source.count("gpulab.widgets.Panel("), f"{stem}: not every panel is on its page"
    for number in range(panels.count()):
        panel = panels.nth(number)
        assert panel.locator(".gpulab-error").count() == 0, panel.inner_text()
        assert "✓ done in" in panel.locator(".gpulab-status").inner_text()
        alt = panel.locator("img.gpulab-figure").get_attribute("alt")
        name = panel.get_attribute("data-panel")
        # The description names what is drawn: the run here, and whose record is drawn beside it.
        assert len(alt) > 80, alt
        record = gpulab.reference.load(name) if name else None
        if "(reference)" in alt:
            labels = {gpulab.reference.gpu_label(record), gpulab.reference.cpu_label(record)} if record else set()
            assert any(label in alt for label in labels), f"{name}: a reference is drawn, and not named: {alt}"


def _plain(text: str) -> str:
    """Text as the page shows it: no backticks, one space between words."""
    return " ".join(text.replace("`", "").split())


def _written(stem: str, name: str):
    """The ``gpulab.quiz`` object called ``name`` that the notebook makes: its Quiz, or its first Hints."""
    import gpulab.quiz

    folder = "notebooks" if name == "Quiz" else "exercises"
    made, kind = [], getattr(gpulab.quiz, name)

    class Recording(kind):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    for cell in course.read_notebook(ROOT / folder / f"{stem}.ipynb")["cells"]:
        source = course.cell_source(cell)
        if cell["cell_type"] == "code" and f"{name}(" in source:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(gpulab.quiz, name, Recording)
                exec(source, {})
            if made:
                return made[0]
    return None


def test_a_quiz_answered_wrong_then_right_says_so_and_why(reader, served):
    for stem in course.LESSONS:
        page, seen = visit(reader, served, f"notebooks/{stem}.html")
        written = _written(stem, "Quiz").questions
        questions = page.locator(".gpulab-question")
        assert questions.count() == len(written), f"{stem} shows {questions.count()} questions of {len(written)}"
        for number in range(questions.count()):
            question = questions.nth(number)
            verdicts = question.locator(".gpulab-verdict")
            assert all(not verdicts.nth(i).is_visible() for i in range(verdicts.count())), "a verdict shows unasked"
            kinds = [verdicts.nth(i).get_attribute("class").split()[-1] for i in range(verdicts.count())]
            assert kinds.count("right") == 1, f"{stem} question {number + 1}: {kinds}"
            labels = question.locator("label")
            why = {_plain(choice.text): _plain(choice.why) for choice in written[number].choices}
            # every wrong choice, then the right one: each says so, with its own explanation
            said = []
            for index in [i for i, kind in enumerate(kinds) if kind == "wrong"] + [kinds.index("right")]:
                labels.nth(index).click()
                shown = [
                    _plain(verdicts.nth(i).inner_text())
                    for i in range(verdicts.count())
                    if verdicts.nth(i).is_visible()
                ]
                mark = "✓ right." if kinds[index] == "right" else "✗ not quite."
                picked = _plain(labels.nth(index).inner_text())
                assert shown == [f"{mark} {why[picked]}"], (stem, number + 1, picked, shown)
                said.append(shown[0])
            assert len(set(said)) == len(said), f"{stem} question {number + 1}: two choices say the same"
        assert not seen["errors"], seen["errors"]


def test_an_exercise_s_hints_open_one_at_a_time(reader, served):
    for stem in course.LESSONS:
        page, seen = visit(reader, served, f"exercises/{stem}.html")
        written = [_plain(hint) for hint in _written(stem, "Hints").hints]
        hints = page.locator(".gpulab-hints").first
        summaries, texts = hints.locator("summary"), hints.locator("p")
        assert summaries.count() == texts.count() == len(written), (
            f"{stem}: {summaries.count()} hints of {len(written)}"
        )
        for opened in range(len(written) + 1):
            visible = [i for i in range(len(written)) if texts.nth(i).is_visible()]
            assert visible == list(range(opened)), f"{stem}: after {opened} opened, hints {visible} show"
            offered = [i for i in range(len(written)) if summaries.nth(i).is_visible()]
            assert offered == list(range(min(opened + 1, len(written)))), f"{stem}: after {opened}, {offered} offered"
            if opened < len(written):
                assert _plain(summaries.nth(opened).inner_text()) == f"Show a hint ({opened + 1} of {len(written)})"
                summaries.nth(opened).click()
                assert (
                    _plain(texts.nth(opened).inner_text()) == f"Hint {opened + 1} of {len(written)}. {written[opened]}"
                )
        assert not seen["errors"], seen["errors"]


def test_every_page_links_to_colab_at_the_release_and_to_its_notebook(reader, served):
    release = f"v{gpulab.__version__}"
    assert course.RELEASE == release
    for path in PAGES:
        page, _ = visit(reader, served, f"{path}.html")
        links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        colab = [link for link in links if link.startswith("https://colab.research.google.com/")]
        assert colab == [f"https://colab.research.google.com/github/{course.REPOSITORY}/blob/{release}/{path}.ipynb"]
        assert not [link for link in links if "/blob/main/" in link or "@main" in link], path
        assert any(link.endswith(f"/{Path(path).name}.ipynb") and "/_downloads/" in link for link in links), path


def test_the_index_says_what_each_lesson_teaches_and_how_long_it_takes(reader, served):
    page, _ = visit(reader, served, "index.html")
    text = page.locator("article").inner_text()
    for stem, title in course.LESSONS.items():
        number = stem.split("_", 1)[0]
        section = text.split(f"{number} · {title}", 1)
        assert len(section) == 2, f"the index lacks {number} · {title}"
        assert re.match(
            r"\s*About \d+ minutes; every cell ran here in \d+ s\. You need: .+\. You will learn to", section[1]
        )
    assert page.locator("article a[href$='guide/index.html']").count() >= 1
    assert page.locator("article a[href$='notebooks/01_devices.html']").count() >= 1
    for stem in course.LESSONS:  # and each lesson's slides, which its own page links to as well
        assert page.locator(f"article a[href$='slides/{stem}.slides.html']").count() == 1, stem


@pytest.mark.parametrize("stem", list(course.LESSONS))
def test_each_lesson_s_slides_are_a_deck_that_works_offline_with_its_figures_and_quiz(reader, served, stem):
    plan = slides.plan(course.read_notebook(ROOT / "notebooks" / f"{stem}.ipynb"))
    page, seen = visit(reader, served, f"slides/{stem}.slides.html")
    page.wait_for_function("() => window.Reveal?.isReady()", timeout=30_000)
    assert page.evaluate("Reveal.getTotalSlides()") == len(plan), f"{stem}: the deck's slides are not the plan's"
    written = _written(stem, "Quiz").questions
    kinds, asked = [], 0
    while True:
        slide = page.locator(".reveal .slides section.present:not(.stack)")
        panels, questions = slide.locator(".gpulab-panel"), slide.locator(".gpulab-question")
        kinds.append("panel" if panels.count() else "question" if questions.count() else "other")
        if panels.count():  # the panel's figure, at its defaults, with what it shows in words
            image = panels.first.locator("img.gpulab-figure")
            assert image.evaluate("i => i.naturalWidth") > 0 and len(image.get_attribute("alt")) > 80
            assert "✓ done in" in panels.first.locator(".gpulab-status").inner_text()
        if questions.count():  # one question; a pick on its slide shows that choice's own explanation
            assert questions.count() == 1, f"{stem}: a slide shows {questions.count()} questions"
            question, label = written[asked], questions.first.locator("label").last
            label.click()
            why = {_plain(choice.text): _plain(choice.why) for choice in question.choices}
            shown = _plain(questions.first.locator(".gpulab-verdict:visible").inner_text())
            assert shown.split(".", 1)[1].strip() == why[_plain(label.inner_text())], (stem, asked + 1, shown)
            asked += 1
        if page.evaluate("Reveal.isLastSlide()"):
            break
        where = page.evaluate("JSON.stringify(Reveal.getIndices())")
        page.keyboard.press("Space")  # as a lecturer goes on: the next slide, below or to the right
        page.wait_for_function("was => JSON.stringify(Reveal.getIndices()) !== was", arg=where, timeout=10_000)
        assert len(kinds) < len(plan) + 1, f"{stem}: Space went past the plan's slides"
    assert len(kinds) == len(plan)
    assert [kind for kind in kinds if kind != "other"] == [
        slide.kind for slide in plan if slide.kind in ("panel", "question")
    ], f"{stem}: the deck's panels and questions are not on the slides the plan gives them"
    assert asked == len(written)
    assert not seen["errors"] and not seen["elsewhere"] and not seen["failed"], seen


def test_search_finds_a_lesson(reader, served):
    page, seen = visit(reader, served, "search.html?q=pinned")
    page.wait_for_selector("#search-results ul.search li", timeout=20_000)
    found = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
    assert any("notebooks/02_copying.html" in link for link in found), found
    assert not seen["errors"], seen["errors"]
