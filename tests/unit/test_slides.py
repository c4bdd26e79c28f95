"""Lecture mode's slides are generated from each lesson's structure, kept in its metadata and checked."""

import copy
import html.parser
import json
import re
import shutil

import pytest

from gpulab import cli, course, slides

from conftest import ROOT, code_cell, notebook

LESSON = "notebooks/02_copying.ipynb"


def markdown(source: str, id: str | None = None) -> dict:
    cell = {"cell_type": "markdown", "metadata": {}, "source": source}
    return {"id": id, **cell} if id else cell


def lesson(*cells) -> dict:
    """A lesson as the course writes one: the generated title and setup cells, then ``cells``."""
    title, setup = course.header_cells(LESSON)
    return notebook([markdown(title), code_cell(setup), *cells])


PANEL = """def sweep(largest, progress):
    return {"sizes": [1, largest]}

bandwidth_panel = gpulab.widgets.Panel(
    sweep,
    {"largest": gpulab.widgets.log2_slider("largest", 2, 64, 16)},
    title="A made-up experiment",
)
bandwidth_panel"""

QUIZ = """from gpulab.quiz import Question, Quiz

quiz = Quiz([
    Question("Which?", [("a", "because a"), ("b", "because b")], answer=0),
    Question("And which?", [("c", "because c"), ("d", "because d")], answer=1),
])"""

# Each cell of a lesson, and the slide_type the rules give it (module docstring of gpulab.slides).
CELLS = [
    ("title", "slide"),
    ("setup", "skip"),
    (markdown("**In this lesson** you will learn to\n\n- copy"), "subslide"),
    (code_cell("import torch\nimport gpulab"), "-"),
    (markdown("## 1. Copies\n\nWhat a copy is."), "slide"),
    (code_cell("x = torch.arange(3.0)\nx.to('cpu') is x"), "-"),
    (markdown("The next idea, after the code."), "subslide"),
    (markdown("More words on it, right after the words before."), "-"),
    (code_cell("x.clone() is x"), "-"),
    (markdown("### 1.1 A subsection\n\nOne idea."), "subslide"),
    (markdown("## 2. Live experiment: bandwidth\n\nThe panel copies blocks."), "slide"),
    (code_cell("def helper():\n    return 1"), "-"),
    (code_cell(PANEL), "subslide"),
    (code_cell("bandwidth_panel.result"), "subslide"),
    (markdown("**What to look for.** The curves rise."), "subslide"),
    (code_cell("%%writefile example.py\n## not a heading: a file's content\nprint('hi')"), "-"),
    (markdown("## Check your understanding"), "slide"),
    (code_cell(QUIZ), "skip"),
    (code_cell("quiz.question(0)"), "subslide"),
    (code_cell("quiz.question(1)"), "subslide"),
    (markdown("## Exercises\n\nIn exercises/02_copying.ipynb."), "slide"),
]


def example() -> dict:
    return lesson(*[cell for cell, _ in CELLS[2:]])


def test_each_cell_gets_its_slide_type_by_the_rules():
    assert slides.slide_types(example()) == [slide_type for _, slide_type in CELLS]


def test_the_plan_has_a_title_one_slide_per_section_and_each_panel_and_question_alone():
    plan = slides.plan(example())
    assert [(slide.kind, slide.cells) for slide in plan] == [
        ("title", (0,)),
        ("intro", (2, 3)),
        ("section", (4, 5)),
        ("more", (6, 7, 8)),
        ("subsection", (9,)),
        ("section", (10, 11)),
        ("panel", (12,)),
        ("more", (13,)),
        ("more", (14, 15)),
        ("section", (16,)),
        ("question", (18,)),
        ("question", (19,)),
        ("section", (20,)),
    ]
    assert plan[6].section == "2. Live experiment: bandwidth"
    assert len(plan) == sum(t in ("slide", "subslide") for t in slides.slide_types(example()))


def test_a_quiz_shown_whole_is_one_slide_and_a_problem_the_lesson_must_fix():
    whole = lesson(markdown("## Check your understanding"), code_cell(QUIZ.replace("quiz = Quiz(", "Quiz(")))
    assert slides.slide_types(whole)[-1] == "subslide"
    [problem] = slides.problems(whole)
    assert "quiz of 2 questions in one output" in problem and "quiz.question(0)" in problem
    assert slides.problems(example()) == []
    # A quiz of one question, shown whole, is one question on one slide: nothing to fix.
    one = lesson(code_cell('from gpulab.quiz import Question, Quiz\nQuiz([Question("?", [], answer=0)])'))
    assert slides.problems(one) == []


def test_a_notebook_without_its_title_cell_is_a_problem():
    untitled = notebook([markdown("Some text"), code_cell("1 + 1")])
    assert any("title" in problem for problem in slides.problems(untitled))


def test_a_section_that_starts_mid_cell_gets_a_cell_of_its_own_and_the_text_is_unchanged():
    text = "Closing words of section 1.\n\n## 2. Second\n\nBody.\n\n```python\n## a comment, not a heading\n```\n\n## 3. Third\nEnd."
    nb = lesson(markdown(text, id="02-007"), markdown("## 4. Fourth", id="02-007-2"))
    assert slides.split_sections(nb) == ["2. Second", "3. Third"]
    parts = nb["cells"][2:5]
    assert [course.cell_source(cell) for cell in parts] == [
        "Closing words of section 1.",
        "## 2. Second\n\nBody.\n\n```python\n## a comment, not a heading\n```",
        "## 3. Third\nEnd.",
    ]
    assert "\n\n".join(course.cell_source(cell) for cell in parts) == text  # the page reads the same
    # The first part keeps the id; the new ones get ids of their own, past one the notebook already has.
    assert [cell["id"] for cell in nb["cells"][2:6]] == ["02-007", "02-007-3", "02-007-4", "02-007-2"]
    assert isinstance(parts[1]["source"], str)  # stored as the cell stored its source
    assert slides.split_sections(nb) == []  # nothing left to split
    assert [slides.slide_types(nb)[i] for i in (2, 3, 4, 5)] == ["subslide", "slide", "slide", "slide"]


def test_a_cell_stored_as_lines_is_split_into_lines():
    nb = lesson(
        {"cell_type": "markdown", "id": "x", "metadata": {}, "source": ["Intro.\n", "\n", "## 1. A\n", "Body."]}
    )
    slides.split_sections(nb)
    assert [cell["source"] for cell in nb["cells"][2:]] == [["Intro."], ["## 1. A\n", "Body."]]


def test_apply_writes_the_slide_types_and_the_deck_style_and_nothing_else():
    nb = example()
    before = copy.deepcopy(nb)
    assert slides.apply(nb) is True
    assert slides.apply(nb) is False  # the generated metadata is what it generates: no drift
    for cell, old, (_, slide_type) in zip(nb["cells"], before["cells"], CELLS):
        # A cell that continues a slide carries no key: "-" is what every tool assumes without one.
        expected = {} if slide_type == "-" else {"slideshow": {"slide_type": slide_type}}
        assert cell["metadata"] == {**old["metadata"], **expected}
        assert {k: v for k, v in cell.items() if k != "metadata"} == {k: v for k, v in old.items() if k != "metadata"}
    # the notebook's style while presented (jupyterlab-fonts' key), and nothing else of its metadata
    assert nb["metadata"] == {**before["metadata"], slides.STYLE_KEY: slides.DECK_STYLE}
    nb["metadata"][slides.STYLE_KEY] = {"styles": {}}  # edited by hand: drift, rewritten
    assert slides.apply(nb) is True and nb["metadata"][slides.STYLE_KEY] == slides.DECK_STYLE


def test_a_hand_edited_or_stale_slide_type_is_drift_and_is_rewritten():
    nb = example()
    slides.apply(nb)
    nb["cells"][5]["metadata"]["slideshow"] = {"slide_type": "fragment"}  # a continuing cell, edited by hand
    nb["cells"][12]["metadata"].pop("slideshow")  # the panel's slide, lost
    assert slides.apply(nb) is True
    assert "slideshow" not in nb["cells"][5]["metadata"]
    assert nb["cells"][12]["metadata"]["slideshow"] == {"slide_type": "subslide"}


def copy_of_the_lessons(tmp_path):
    (tmp_path / "notebooks").mkdir()
    for path in slides.lessons(ROOT):
        shutil.copy(path, tmp_path / "notebooks" / path.name)
    return tmp_path


def test_sync_slides_checks_then_writes_copies_of_the_lessons(tmp_path):
    root = copy_of_the_lessons(tmp_path)
    paths = sorted((root / "notebooks").glob("*.ipynb"))
    assert len(paths) == len(course.LESSONS)
    before = {path: path.read_bytes() for path in paths}
    for path in paths:  # as if they had none yet
        nb = course.read_notebook(path)
        for cell in nb["cells"]:
            cell["metadata"].pop("slideshow", None)
        course.write_notebook(nb, path)
    changed, _ = slides.sync_slides(root, check=True)
    assert changed == [f"notebooks/{path.name}" for path in paths]
    changed_again, _ = slides.sync_slides(root)
    assert changed_again == changed
    assert slides.sync_slides(root, check=True)[0] == []
    for path in paths:
        nb = course.read_notebook(path)
        assert course.header_matches(nb, f"notebooks/{path.name}")
        plan = slides.plan(nb)
        assert plan[0].kind == "title" and plan[0].cells == (0,)
        sections = [cell for cell in nb["cells"] if course.cell_source(cell).startswith("## ")]
        assert len([slide for slide in plan if slide.kind == "section"]) == len(sections)
        text = "\n".join(course.cell_source(cell) for cell in nb["cells"])
        assert text.count("\n## ") >= len(sections) - 1  # no heading lost, none made up
        assert sum(slide.kind == "panel" for slide in plan) == text.count("gpulab.widgets.Panel(")
        assert path.read_bytes() == before[path], f"{path.name}: regenerated from nothing, its slides differ"


def test_gpulab_slides_command_says_what_differs_and_what_the_lesson_must_change(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / LESSON
    course.write_notebook(example(), path)
    assert cli.main(["slides", "--check", "--root", str(tmp_path)]) == 1
    assert "notebooks/02_copying.ipynb: its slides differ" in capsys.readouterr().out
    assert cli.main(["slides", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "rewrote notebooks/02_copying.ipynb\n"
    assert cli.main(["slides", "--check", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""
    whole = course.read_notebook(path)
    whole["cells"][18]["source"] = QUIZ.replace("quiz = Quiz(", "Quiz(")
    course.write_notebook(whole, path)
    assert cli.main(["slides", "--check", "--root", str(tmp_path)]) == 1
    assert "quiz of 2 questions in one output" in capsys.readouterr().out


def test_the_lessons_carry_the_generated_slides():
    changed, _ = slides.sync_slides(ROOT, check=True)
    assert changed == [], f"run `gpulab slides` to regenerate the slides of {changed}"


def test_each_quiz_question_of_each_lesson_is_on_a_slide_of_its_own():
    _, problems = slides.sync_slides(ROOT, check=True)
    assert problems == {}, json.dumps(problems, indent=1, ensure_ascii=False)


# ---------------------------------------------------------------- the static deck


class _Sections(html.parser.HTMLParser):
    """The deck's slides: the <section>s with no <section> inside, and every URL the page loads."""

    def __init__(self):
        super().__init__()
        self.depth, self.leaves, self.loads, self._inner = 0, 0, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            if self._inner:
                self._inner[-1] = True
            self._inner.append(False)
        if tag in ("script", "img", "iframe") and attrs.get("src"):
            self.loads.append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            self.loads.append(attrs["href"])

    def handle_endtag(self, tag):
        if tag == "section" and not self._inner.pop():
            self.leaves += 1


def executed(nb: dict) -> dict:
    """``nb`` as if it had run: each code cell with an output, the panel's a figure (a PNG), stale slide types."""
    nb = copy.deepcopy(nb)
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    for count, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = count + 1
        data = {"image/png": png} if "Panel(" in course.cell_source(cell) else {"text/plain": f"out {count}"}
        cell["outputs"] = [
            {"output_type": "execute_result", "execution_count": count + 1, "data": data, "metadata": {}}
        ]
        cell["metadata"]["slideshow"] = {"slide_type": "fragment"}  # wrong: the deck must use the generated ones
    return nb


def test_the_static_deck_has_the_generated_slides_and_loads_nothing_from_the_network(tmp_path):
    nb = executed(example())
    nb["cells"][4]["source"] += "\n\n$$ t \\approx \\text{latency} + \\frac{\\text{bytes}}{\\text{bandwidth}} $$"
    given = copy.deepcopy(nb)
    page = slides.static_deck(nb, tmp_path / "site", name="02_copying")
    assert page == tmp_path / "site" / "02_copying.slides.html"
    assert nb == given  # the caller's notebook is left as it was
    text = page.read_text(encoding="utf-8")
    parsed = _Sections()
    parsed.feed(text)
    assert parsed.leaves == len(slides.plan(nb)) == 13
    assert parsed.loads, "the page loads reveal.js and MathJax"
    for url in (url for url in parsed.loads if not url.startswith("data:")):
        assert not re.match(r"(https?:)?//", url), f"the deck loads {url} from the network"
        assert (page.parent / url).is_file(), f"the deck loads {url}, which is not beside it"
    assert "colab-badge.svg" not in text and "Open In Colab" in text  # the badge became its link
    assert "data:image/png;base64," in text  # the panel's figure, in the page itself
    assert "skip" not in re.findall(r"data-slide-type=\"(\w+)\"", text)
    assert "google.colab" not in text  # the setup cell is left out
    assert "quiz = Quiz" not in text  # and so is the cell that holds the quiz's answers


def test_decks_in_one_folder_share_one_copy_of_reveal_js_and_mathjax(tmp_path):
    site = tmp_path / "site"
    first = slides.static_deck(executed(example()), site, name="02_copying")
    stat = (site / slides.ASSETS / "reveal" / "dist" / "reveal.js").stat()
    path = tmp_path / "01_devices.ipynb"
    path.write_text(json.dumps(executed(example())), encoding="utf-8")
    second = slides.static_deck(path, site)
    assert second.name == "01_devices.slides.html" and first.exists()
    assert (site / slides.ASSETS / "reveal" / "dist" / "reveal.js").stat().st_mtime_ns == stat.st_mtime_ns
    assert sorted(p.name for p in site.iterdir()) == sorted(
        [slides.ASSETS, "01_devices.slides.html", "02_copying.slides.html"]
    )
    with pytest.raises(ValueError, match="name"):
        slides.static_deck(executed(example()), site)
