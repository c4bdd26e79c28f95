"""The instructor's guide (guide/) held to the course it describes.

``guide/index.md`` is the course-wide part; ``guide/NN_name.md`` is each lesson's page, with the sections
in ``LESSON_SECTIONS``. What the lessons hold, the guide must cover, read from the notebooks themselves:

- every panel of a lesson (each ``gpulab.widgets.Panel(…, plot=gpulab.figures.X, …)`` in
  ``notebooks/NN_name.ipynb``, named ``gpulab.figures.X.panel_name``) has a demo script, a ``### `NAME` …``
  heading under "Demo scripts", with each of the labelled bullets in ``DEMO_LABELS``;
- every quiz question (each ``Question(prompt, choices, answer, …)`` in the notebook) has its entry under
  "Misconceptions the quiz probes", found by its prompt: ``**Q.** prompt``, then ``Right: “choice” …`` and a
  bullet ``- “choice” — …`` for each wrong choice, quoted as the quiz words it;
- the 50-minute plan's minutes add up to 50 and the 2-hour lab's to 120.

What the guide says a GPU did is held to the records. Each page ends with "Figures from the H100 records": a
table of every figure it quotes from an H100 record (``src/gpulab/reference_results/NAME.json``), the figure
as written, the record, and a Python expression that computes it from the record (``r`` is its ``result``,
``record`` the whole record). A figure must be what its expression gives, rounded as written; a row whose
figure the page no longer quotes fails; and in every "On an H100 SXM" bullet, and every other sentence of a
page that names the H100, a number that is not part of a quoted figure (or of a data-sheet or published
figure from ``gpulab.reference``) fails. So a record re-made, or a figure edited, cannot drift silently. In
"On a T4" bullets every GB/s and TFLOP/s is a T4's data-sheet or published figure from ``gpulab.reference``.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from functools import cache
from pathlib import Path

import pytest

import gpulab
from gpulab import course, reference

from conftest import ROOT

GUIDE = ROOT / "guide"
LESSON_SECTIONS = (
    "Objectives",
    "Prerequisites",
    "50-minute plan",
    "2-hour lab plan",
    "Demo scripts",
    "Questions for the room",
    "Misconceptions the quiz probes",
    "No GPU in the room",
    "Figures from the H100 records",
)
DEMO_LABELS = ("Show", "Point at", "On a CPU", "On a T4", "On an H100 SXM")
INDEX_SECTIONS = (
    "How to use this guide",
    "A one-day course",
    "A semester",
    "Running a class on Colab",
    "Running a class on JupyterHub",
    "Running a class on a lab's GPU machines",
    "Grading with gpulab grade",
    "Grading on Gradescope",
    "When the room has no GPU",
)
PLAN_MINUTES = {"50-minute plan": 50, "2-hour lab plan": 120}


# ---------------------------------------------------------------- reading the guide


def plain(text: str) -> str:
    """Text as read: no emphasis, code ticks or line breaks."""
    return " ".join(re.sub(r"[*`]", "", text).split())


def without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.S | re.M)


def sections(text: str, level: int = 2) -> dict[str, str]:
    """Each heading of ``level`` (its text as read) → what follows it, up to the next heading of that level or higher."""
    found, name, lines = {}, None, []
    for line in without_code_blocks(text).splitlines():
        heading = re.match(r"^(#{1,6})\s+(.*)$", line)
        if heading and len(heading.group(1)) <= level:
            if name is not None:
                found[name] = "\n".join(lines)
            name, lines = (plain(heading.group(2)) if len(heading.group(1)) == level else None), []
        elif name is not None:
            lines.append(line)
    if name is not None:
        found[name] = "\n".join(lines)
    return found


def labelled(body: str) -> dict[str, str]:
    """The bullets ``- **Label:** text`` of ``body`` (text running on to the next bullet, heading or blank line)."""
    found, label = {}, None
    for line in body.splitlines():
        bullet = re.match(r"^- \*\*([^*]+?):\*\*\s*(.*)$", line)
        if bullet:
            label = bullet.group(1)
            found[label] = bullet.group(2)
        elif label is not None and line.strip() and not line.startswith(("-", "#")):
            found[label] += " " + line.strip()
        else:
            label = None
    return found


def table_rows(body: str) -> list[list[str]]:
    """The cells of each row of the Markdown tables in ``body``, header and rule rows left out."""
    rows = []
    for line in body.splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells):
            rows.pop()  # the row above the rule is the header
            continue
        rows.append(cells)
    return rows


def plan_minutes(body: str) -> list[int]:
    """The first column of a plan's table: minutes, one row per activity."""
    return [int(cells[0]) for cells in table_rows(body)]


@dataclasses.dataclass(frozen=True)
class Figure:
    """A row of "Figures from the H100 records": ``quoted`` as the page writes it, from ``record``, by ``expression``."""

    page: str
    quoted: str
    record: str
    expression: str


def figures(page: str, text: str) -> list[Figure]:
    body = sections(text).get("Figures from the H100 records", "")
    return [
        Figure(page, quoted, record.strip("`"), expression.strip("`"))
        for quoted, record, expression in table_rows(body)
    ]


NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?:e-?\d+)?(?![\w])")


def number_in(quoted: str) -> tuple[float, float]:
    """The number ``quoted`` holds (one only), and half a unit of its last digit as written: how far from it a
    value may be and still round to it."""
    found = NUMBER.findall(quoted)
    assert len(found) == 1, f"{quoted!r}: a quoted figure holds one number, not {len(found)}"
    mantissa, _, exponent = found[0].replace(",", "").partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(mantissa) * 10 ** int(exponent or 0), 0.5 * 10 ** (int(exponent or 0) - decimals)


def figure_error(figure: Figure) -> str | None:
    """Why ``figure`` is not what its record shows, or None when it is."""
    record = reference.load(figure.record)
    if record is None:
        return f"no record named {figure.record!r}"
    names = {
        "r": record["result"],
        "record": record,
        "max": max,
        "min": min,
        "sum": sum,
        "len": len,
        "abs": abs,
        "zip": zip,
        "enumerate": enumerate,
    }
    try:
        value = eval(figure.expression, {"__builtins__": {}, **names})  # noqa: S307 (the guide's own expressions)
    except Exception as error:  # noqa: BLE001 (said in the failure)
        return f"{figure.expression} raises {type(error).__name__}: {error}"
    quoted, tolerance = number_in(figure.quoted)
    if isinstance(value, str):
        return None if NUMBER.search(figure.quoted).group() in value else f"the record says {value!r}"
    if abs(value - quoted) > tolerance * (1 + 1e-9):
        return f"the record gives {value:.6g}, which is not {figure.quoted!r} rounded as written"
    return None


def data_sheet_figures() -> list[str]:
    """Figures the pages may write beside the H100 that are no record's: data sheets and published measurements."""
    texts = list(reference.PCIE_X16_GBPS)
    for gpu in reference.KNOWN_GPUS:
        texts += [
            f"{gpu.float32_tflops:g} TFLOP/s",
            f"{gpu.tensor_tflops:g} TFLOP/s",
            f"{gpu.memory_gbps:,.0f} GB/s",
            f"{gpu.memory_gbps / 1000:g} TB/s",
            f"{gpu.multiprocessors} SMs",
            gpu.memory,
            gpu.memory.rsplit(" ", 1)[0],
            gpu.link,
        ]
        texts += [f"{gpu.ridge(dtype):.0f} FLOP/B" for dtype in ("float32", *gpu.tensor_dtypes)]
    texts += [f"{gbps:.0f} GB/s" for gbps in reference.PCIE_X16_GBPS.values()]
    texts += [f"{entry.value:g} {entry.unit}" for entry in reference.PUBLISHED]
    return sorted(set(texts), key=len, reverse=True)


def t4_figures() -> list[float]:
    """The GB/s and TFLOP/s a T4's data sheet and published measurements give (gpulab.reference)."""
    [t4] = [gpu for gpu in reference.KNOWN_GPUS if gpu.name == "T4"]
    published = [entry.value for entry in reference.PUBLISHED if entry.gpu.startswith("T4")]
    return [t4.float32_tflops, t4.tensor_tflops, t4.memory_gbps, reference.PCIE_X16_GBPS[t4.link], *published]


def loose_numbers(text: str, quoted: list[str]) -> list[str]:
    """The numbers of ``text`` that are not part of a quoted figure, a data-sheet figure, code, a format's
    width (16-bit), "a multiple of 8", a version or compute capability, a rank's number, 1/β, or a lesson's,
    section's or exercise's number. Line breaks are read as spaces."""
    text = " ".join(re.sub(r"`[^`]*`|\b\d+-bit\b|\bmultiples? of \d+", " ", text).split())
    text = re.sub(r"\b(lessons?|sections?|exercises?)\s+\d+(\s*(,|and|to|–)\s*\d+)*", " ", text, flags=re.I)
    text = re.sub(r"\b(compute\s+capability|PyTorch|torch|Python)\s+\d+(\.\d+)*|\brank\s+\d+|1/β", " ", text)
    for phrase in sorted(set(quoted), key=len, reverse=True) + data_sheet_figures():
        text = re.sub(rf"(?<![\w.,]){re.escape(phrase)}(?!\w|[.,]\d)", " ", text)
    return NUMBER.findall(text)


def h100_passages(text: str) -> list[str]:
    """What a page says of the H100: its "On an H100 SXM" bullets, and every other sentence that names the H100
    (the figures table apart)."""
    page = without_code_blocks(text).split("## Figures from the H100 records")[0]
    # The quiz's own words, quoted: the lesson's claims file holds them to the records.
    page = re.sub(r"^\*\*Q\.\*\*.*$", "", page, flags=re.M)
    page = re.sub(r"^(Right: |- )“.+?”", r"\1", page, flags=re.M)
    bullets = re.findall(r"^- \*\*On an H100 SXM:\*\*.*?(?=\n\s*\n|\n- |\n#|\Z)", page, flags=re.S | re.M)
    rest = page
    for bullet in bullets:
        rest = rest.replace(bullet, " ")
    sentences = re.split(r"(?<=[.;!?])\s+|\n\s*\n|\n(?=[-|#])", rest)
    named = [
        sentence
        for sentence in sentences
        if "H100" in re.sub(r"(?i)figures from the H100 records", "", plain(sentence))
    ]
    return bullets + named


# ---------------------------------------------------------------- reading the lessons


def lessons() -> list[str]:
    return sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))


def code_cells(lesson: str) -> list[ast.Module]:
    """Every code cell of the lesson that Python can parse (cells that start with a magic are not Python)."""
    modules = []
    for cell in course.read_notebook(ROOT / "notebooks" / f"{lesson}.ipynb")["cells"]:
        source = course.cell_source(cell)
        if cell.get("cell_type") == "code" and not source.lstrip().startswith("%"):
            modules.append(ast.parse(source))
    return modules


def calls(lesson: str, name: str) -> list[ast.Call]:
    return [
        node
        for module in code_cells(lesson)
        for node in ast.walk(module)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) == name or getattr(node.func, "id", None) == name)
    ]


@cache
def panels(lesson: str) -> list[str]:
    """The registered names of the lesson's panels' figures."""
    found = []
    for call in calls(lesson, "Panel"):
        [plot] = [keyword.value for keyword in call.keywords if keyword.arg == "plot"]
        assert ast.unparse(plot).startswith("gpulab.figures."), f"{lesson}: a panel draws {ast.unparse(plot)}"
        found.append(getattr(gpulab.figures, plot.attr).panel_name)
    return found


def argument(call: ast.Call, position: int, name: str):
    if len(call.args) > position:
        return call.args[position]
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def choice_text(node) -> str:
    """A choice as the quiz words it: a string, or the first part of a (choice, explanation) pair or call."""
    if isinstance(node, (ast.Tuple, ast.List)):
        node = node.elts[0]
    elif isinstance(node, ast.Call):
        node = argument(node, 0, "text")
    return ast.literal_eval(node)


@dataclasses.dataclass(frozen=True)
class Asked:
    prompt: str
    right: str
    wrong: tuple[str, ...]


@cache
def quiz(lesson: str) -> list[Asked]:
    """The lesson's quiz questions: each prompt, its right choice and its wrong ones."""
    found = []
    for call in calls(lesson, "Question"):
        prompt = ast.literal_eval(argument(call, 0, "prompt"))
        choices = [choice_text(node) for node in argument(call, 1, "choices").elts]
        answer = ast.literal_eval(argument(call, 2, "answer"))
        found.append(Asked(prompt, choices[answer], tuple(c for i, c in enumerate(choices) if i != answer)))
    return found


def misconceptions(body: str) -> dict[str, tuple[str, list[str]]]:
    """Each entry of "Misconceptions the quiz probes": its prompt (as read) → (the right choice, the wrong ones)."""
    found = {}
    for entry in re.split(r"^\*\*Q\.\*\*", body, flags=re.M)[1:]:
        prompt, _, rest = entry.partition("\n")
        right = re.search(r"^Right: “(.+?)”", rest, flags=re.M)
        wrong = re.findall(r"^- “(.+?)” — \S", rest, flags=re.M)
        found[plain(prompt)] = (plain(right.group(1)) if right else "", [plain(choice) for choice in wrong])
    return found


def page_of(lesson: str) -> Path:
    return GUIDE / f"{lesson}.md"


def text_of(lesson: str) -> str:
    path = page_of(lesson)
    assert path.is_file(), f"no guide page for lesson {lesson}: write guide/{lesson}.md"
    return path.read_text()


ALL_FIGURES = [figure for path in sorted(GUIDE.glob("*.md")) for figure in figures(path.name, path.read_text())]


# ---------------------------------------------------------------- the tests


def test_every_lesson_has_its_guide_page_and_no_page_is_a_lesson_s_that_is_gone():
    pages = {path.stem for path in GUIDE.glob("*.md")} - {"index"}
    assert set(lessons()) == pages, (
        f"lessons without a page: {set(lessons()) - pages}; pages without a lesson: {pages - set(lessons())}"
    )
    assert set(course.LESSONS) == set(lessons())


@pytest.mark.parametrize("lesson", lessons())
def test_a_lesson_s_page_has_every_section(lesson):
    found = sections(text_of(lesson))
    for name in LESSON_SECTIONS:
        assert found.get(name, "").strip(), f"guide/{lesson}.md has no section '## {name}' (or it is empty)"
    assert text_of(lesson).startswith(f"# {lesson[:2]} · {course.LESSONS[lesson]}"), f"guide/{lesson}.md's title"


@pytest.mark.parametrize("lesson", lessons())
def test_each_panel_has_a_demo_script_that_names_it(lesson):
    scripts = sections(sections(text_of(lesson)).get("Demo scripts", ""), level=3)
    named = {re.match(r"(\w+)", heading).group(1): body for heading, body in scripts.items()}
    assert panels(lesson), f"{lesson}: no panel found in the notebook"
    assert set(named) == set(panels(lesson)), (
        f"guide/{lesson}.md's demo scripts are for {sorted(named)}; the lesson's panels are {sorted(panels(lesson))}"
    )
    for panel, body in named.items():
        bullets = labelled(body)
        for label in DEMO_LABELS:
            assert bullets.get(label, "").strip(), f"guide/{lesson}.md, demo script {panel}: no '- **{label}:**' bullet"


@pytest.mark.parametrize("lesson", lessons())
def test_each_quiz_question_has_its_misconceptions(lesson):
    entries = misconceptions(sections(text_of(lesson)).get("Misconceptions the quiz probes", ""))
    asked = quiz(lesson)
    assert asked, f"{lesson}: no quiz question found in the notebook"
    assert set(entries) == {plain(question.prompt) for question in asked}, (
        f"guide/{lesson}.md: entries for prompts the quiz does not ask: "
        f"{sorted(set(entries) - {plain(q.prompt) for q in asked})}; questions without an entry: "
        f"{sorted({plain(q.prompt) for q in asked} - set(entries))}"
    )
    for question in asked:
        right, wrong = entries[plain(question.prompt)]
        assert right == plain(question.right), (
            f"{question.prompt!r}: the right choice is “{question.right}”, not “{right}”"
        )
        assert sorted(wrong) == sorted(plain(choice) for choice in question.wrong), (
            f"{question.prompt!r}: a bullet '- “choice” — what it stands for' for each wrong choice, "
            f"as worded: {list(question.wrong)}; found {wrong}"
        )


@pytest.mark.parametrize("lesson", lessons())
@pytest.mark.parametrize("plan", PLAN_MINUTES)
def test_a_plan_s_minutes_add_up(lesson, plan):
    minutes = plan_minutes(sections(text_of(lesson)).get(plan, ""))
    assert minutes, f"guide/{lesson}.md: the {plan} has no table of minutes"
    assert sum(minutes) == PLAN_MINUTES[plan], f"guide/{lesson}.md: the {plan} adds up to {sum(minutes)} minutes"


@pytest.mark.parametrize("figure", ALL_FIGURES, ids=lambda f: f"{f.page}: {f.quoted} ({f.record})")
def test_a_figure_quoted_from_a_record_is_what_the_record_shows(figure):
    assert figure.quoted.strip() and figure.expression.strip()
    error = figure_error(figure)
    assert error is None, f"guide/{figure.page} quotes {figure.quoted!r} from {figure.record}: {error}"
    text = " ".join((GUIDE / figure.page).read_text().split("## Figures from the H100 records")[0].split())
    assert figure.quoted in text, f"guide/{figure.page} no longer quotes {figure.quoted!r}: drop its row"


@pytest.mark.parametrize("page", sorted(path.name for path in GUIDE.glob("*.md")))
def test_every_number_said_of_the_h100_is_a_figure_held_to_its_record(page):
    text = (GUIDE / page).read_text()
    quoted = [figure.quoted for figure in figures(page, text)]
    loose = {
        passage.strip()[:90]: numbers for passage in h100_passages(text) if (numbers := loose_numbers(passage, quoted))
    }
    assert not loose, (
        f"guide/{page}: numbers said of the H100 that no row of 'Figures from the H100 records' holds to a record: {loose}"
    )


@pytest.mark.parametrize("lesson", lessons())
def test_a_t4_s_bandwidth_and_flops_are_its_data_sheet_s_or_published(lesson):
    scripts = sections(sections(text_of(lesson)).get("Demo scripts", ""), level=3)
    known = t4_figures()
    for heading, body in scripts.items():
        text = re.sub(r"`[^`]*`", " ", labelled(body).get("On a T4", ""))
        for written, _unit in re.findall(r"(\d[\d,]*(?:\.\d+)?)\s*(GB/s|TFLOP/s)", text):
            value, tolerance = number_in(written)
            assert any(abs(value - figure) <= tolerance for figure in known), (
                f"guide/{lesson}.md, {heading}: a T4's {written} {_unit} is neither its data sheet's nor published "
                f"(gpulab.reference): {known}"
            )


def test_the_index_has_its_sections_and_links_every_lesson_s_page():
    text = (GUIDE / "index.md").read_text()
    found = sections(text)
    for name in INDEX_SECTIONS:
        assert found.get(name, "").strip(), f"guide/index.md has no section '## {name}' (or it is empty)"
    for lesson in lessons():
        assert f"]({lesson}.md)" in text, f"guide/index.md does not link {lesson}.md"
    day = found["A one-day course"]
    assert all(f"]({lesson}.md)" in day for lesson in lessons()), "the one-day plan leaves a lesson out"


def test_the_checks_fail_a_figure_the_record_does_not_show_and_a_number_no_figure_holds():
    pinned = 'max(r["gbps"]["host→device pinned"])'
    assert figure_error(Figure("x", "54 GB/s", "02_bandwidth", pinned)) is None
    assert figure_error(Figure("x", "55 GB/s", "02_bandwidth", pinned)) is not None
    assert figure_error(Figure("x", "54.0 GB/s", "02_bandwidth", pinned)) is not None  # 54.099…: not 54.0
    assert figure_error(Figure("x", "54 GB/s", "no_such_panel", pinned)) is not None
    largest = 'max(r["max_abs_difference"]["DDP, all-reduced"])'  # 2.98e-08
    assert figure_error(Figure("x", "3e-8", "06_gradients", largest)) is None
    assert figure_error(Figure("x", "2e-8", "06_gradients", largest)) is not None
    passage = (
        "- **On an H100 SXM:** pinned copies reached 54 GB/s against 14 GB/s pageable (lesson 02), at 3,350 GB/s HBM."
    )
    [bullet] = h100_passages(passage)
    assert loose_numbers(bullet, ["54 GB/s", "14 GB/s"]) == []
    assert loose_numbers(bullet, ["54 GB/s"]) == ["14"]
    assert sections("# t\n## A\nx\n### B\ny\n## C\nz\n") == {"A": "x\n### B\ny", "C": "z"}
    assert plan_minutes("| minutes | what |\n|---|---|\n| 10 | a |\n| 40 | b |\n") == [10, 40]
