"""Lecture mode: every lesson as slides, their boundaries generated from the lesson's own structure.

In JupyterLab, the ``jupyterlab-slideshow`` extension (``make lecture LESSON=02``) presents the notebook itself
as slides: its cells stay live, so the lecturer moves a slider on a slide, presses Run, and the room sees
the new figure. Where each slide starts is each cell's ``metadata.slideshow.slide_type``, as nbconvert and
RISE read it: ``slide`` starts a slide, ``subslide`` a slide below it (Space reaches it like any other),
``skip`` leaves the cell out, and a cell without the key continues the slide before it. Those values are
written here, never by hand: ``gpulab slides`` rewrites them and ``gpulab slides --check`` fails when a
lesson's differ (a cell added, a section moved).

The rules, cell by cell (:func:`slide_types`):

- the title cell is the first slide; the setup cell is skipped (it installs gpulab in Colab only);
- what comes before the first section (the lesson's goals, its imports) is a slide below the title;
- a markdown cell that starts with a ``## `` heading starts a slide: one slide per section (a heading
  after other text in a cell is first split into a cell of its own, :func:`split_sections`);
- within a section, a ``### `` heading, or a markdown cell after a code cell (the next idea), starts a
  slide below the section's, so a long section is a column of short slides;
- a cell that shows an experiment panel (``gpulab.widgets.Panel(...)``) is a slide of its own, and so is
  each cell that shows one quiz question (``quiz.question(0)``); the cell after either starts a new one;
- a cell that builds a quiz without showing it (``quiz = Quiz([...])``) is skipped: its source holds the
  answers.

What metadata cannot do is reported by :func:`problems` (and fails ``--check``): a quiz that shows several
questions in one output, which no slide can split.

:func:`static_deck` writes the same slides, with a notebook's executed outputs, as a reveal.js page that
needs no network: reveal.js and MathJax are copied beside it from the Python packages that ship them.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import importlib.metadata
import json
import re
import shutil
from pathlib import Path

from . import course

__all__ = [
    "Slide",
    "apply",
    "lessons",
    "plan",
    "problems",
    "slide_types",
    "split_sections",
    "static_deck",
    "sync_slides",
]

SLIDE, SUBSLIDE, CONTINUE, SKIP = "slide", "subslide", "-", "skip"

_FENCE = re.compile(r"^\s*(```|~~~)")


# ---------------------------------------------------------------- what each cell is


def _first_line(source: str) -> str:
    return next((line for line in source.splitlines() if line.strip()), "")


def _code_tree(source: str) -> ast.Module | None:
    """The cell's code, parsed, with IPython's magics and shell lines blanked (None for a cell magic or bad syntax)."""
    if source.lstrip().startswith("%%"):
        return None
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _called(node: ast.AST) -> str:
    """The name a call calls: ``Panel`` for ``gpulab.widgets.Panel(...)``."""
    function = node.func if isinstance(node, ast.Call) else None
    if isinstance(function, ast.Attribute):
        return function.attr
    if isinstance(function, ast.Name):
        return function.id
    return ""


def _kind(cells: list[dict], index: int) -> tuple[str, int]:
    """What the cell is — title, setup, section, subsection, markdown, panel, question, quiz, quiz-source or code —
    and, for a quiz, how many questions it shows."""
    cell = cells[index]
    source = course.cell_source(cell)
    first = _first_line(source)
    if cell["cell_type"] != "code":
        if index == 0 and first.startswith("# "):
            return "title", 0
        if first.startswith("## "):
            return "section", 0
        if first.startswith("### "):
            return "subsection", 0
        return "markdown", 0
    if index == 1 and "google.colab" in source:
        return "setup", 0
    tree = _code_tree(source)
    if tree is None or not tree.body:
        return "code", 0
    calls = [_called(node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    # What the cell displays: its last statement, when that is an expression not silenced by a ";".
    last = tree.body[-1]
    shown = last.value if isinstance(last, ast.Expr) and not source.rstrip().endswith(";") else None
    if "Quiz" in calls:
        return ("quiz", calls.count("Question")) if shown is not None else ("quiz-source", 0)
    if _called(shown) == "question":
        return "question", 1
    if "Panel" in calls and shown is not None:
        return "panel", 0
    return "code", 0


# ---------------------------------------------------------------- the slides


@dataclasses.dataclass(frozen=True)
class Slide:
    """One slide: what starts it, the cells it shows (their indices) and the section it belongs to."""

    kind: str  # title, intro, section, subsection, more, panel, question, quiz
    cells: tuple[int, ...]
    section: str = ""


_OWN_SLIDE = ("panel", "question", "quiz")  # a slide of its own: the next cell starts another
_TEXT = ("title", "section", "subsection", "markdown")


def _slide_plan(notebook: dict) -> tuple[list[str], list[Slide]]:
    cells = notebook.get("cells", [])
    types: list[str] = []
    slides: list[Slide] = []
    previous = None  # the kind of the last cell shown
    section = ""
    for index in range(len(cells)):
        kind, _questions = _kind(cells, index)
        if kind in ("setup", "quiz-source"):
            types.append(SKIP)
            continue
        if kind == "section":
            section = _first_line(course.cell_source(cells[index]))[3:].strip()
        if previous is None:
            starts = "title"
        elif kind in ("section", *_OWN_SLIDE):
            starts = kind
        elif previous == "title":
            starts = "intro"
        elif previous in _OWN_SLIDE:
            starts = "more"
        elif kind == "subsection":
            starts = "subsection"
        elif kind == "markdown" and previous not in _TEXT:
            starts = "more"
        else:
            starts = None
        if starts is None:
            types.append(CONTINUE)
            slides[-1] = dataclasses.replace(slides[-1], cells=(*slides[-1].cells, index))
        else:
            types.append(SLIDE if starts in ("title", "section") else SUBSLIDE)
            slides.append(Slide(starts, (index,), section))
        previous = kind
    return types, slides


def slide_types(notebook: dict) -> list[str]:
    """Each cell's ``slide_type``, in order, by the rules in this module's docstring."""
    return _slide_plan(notebook)[0]


def plan(notebook: dict) -> list[Slide]:
    """The notebook's slides, in the order Space shows them: a slideshow of it has ``len(plan(notebook))``."""
    return _slide_plan(notebook)[1]


def problems(notebook: dict) -> list[str]:
    """What the lesson itself must change for each quiz question to get a slide (metadata cannot split one
    output), or for it to have a title slide."""
    found = []
    cells = notebook.get("cells", [])
    for index in range(len(cells)):
        kind, questions = _kind(cells, index)
        if kind == "quiz" and questions > 1:
            found.append(
                f"cell {cells[index].get('id', index)} shows a quiz of {questions} questions in one output: build it with "
                "`quiz = Quiz([...])` and show each question in a cell of its own (`quiz.question(0)`, …)"
            )
    if not cells or _kind(cells, 0)[0] != "title":
        found.append("the notebook does not start with its title cell (run `gpulab headers`)")
    return found


# ---------------------------------------------------------------- writing it into the notebook


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _section_parts(source: str) -> list[str]:
    """A markdown cell's source cut before each ``## `` heading that does not start it (fenced code kept whole)."""
    parts, fenced = [[]], False
    for line in source.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("## ") and "".join(parts[-1]).strip():
            parts.append([])
        parts[-1].append(line)
    texts = ["".join(part) for part in parts]
    # The blank lines between two parts end neither: each cell ends with its last line of text.
    return [text.rstrip("\n") if number < len(texts) - 1 else text for number, text in enumerate(texts)]


def split_sections(notebook: dict) -> list[str]:
    """Give each ``## `` section a markdown cell that starts with its heading: a cell that holds a heading after
    other text is split before it (the page reads the same; a slide can start only at a cell). Return the
    headings split off. The first part keeps the cell's id and metadata; a new part's id is the cell's with
    ``-2``, ``-3``… after it."""
    cells, split = notebook.get("cells", []), []
    ids = {cell.get("id") for cell in cells}
    index = 0
    while index < len(cells):
        cell = cells[index]
        parts = _section_parts(course.cell_source(cell)) if cell["cell_type"] == "markdown" else []
        # Stored as the cell stores its source: a list of lines (as in a file), or one string (as nbformat reads it).
        as_stored = (lambda text: text) if isinstance(cell.get("source"), str) else _lines
        added = []
        for number, part in enumerate(parts[1:], 2):
            new = {"cell_type": "markdown", "metadata": {}, "source": as_stored(part)}
            if "id" in cell:
                suffix = number
                while f"{cell['id']}-{suffix}" in ids:
                    suffix += 1
                ids.add(new_id := f"{cell['id']}-{suffix}")
                new = {"id": new_id, **new}
            added.append(new)
            split.append(_first_line(part)[3:].strip())
        if added:
            cell["source"] = as_stored(parts[0])
            cells[index + 1 : index + 1] = added
        index += 1 + len(added)
    return split


# The notebook's own style while it is presented, as jupyterlab-slideshow's companion jupyterlab-fonts reads
# it from the notebook's metadata (scoped to the notebook's panel; ":root" holds rules for the panel itself, which
# the slideshow marks .jp-Deck). jupyterlab-slideshow 0.3.4 hides JupyterLab's output prompt overlay only in
# Jupyter Notebook 7 (its rule needs body[data-notebook]): in JupyterLab the overlay, left where the hidden prompt
# was, lies over the first 64 px of every output and takes a click on a quiz's Check button as "collapse".
STYLE_KEY = "@deathbeds/jupyterlab-fonts"
DECK_STYLE = {"styles": {":root": {"&.jp-Deck .jp-OutputArea-promptOverlay": {"display": "none"}}}}


def apply(notebook: dict) -> bool:
    """Split off each section that starts mid-cell (:func:`split_sections`), then write each cell's generated
    ``slide_type`` (a cell that continues a slide has none) and the notebook's style while presented
    (``DECK_STYLE``); return whether anything changed. Nothing else in the notebook is touched."""
    changed = bool(split_sections(notebook))
    metadata = notebook.setdefault("metadata", {})
    if metadata.get(STYLE_KEY) != DECK_STYLE:
        metadata[STYLE_KEY] = DECK_STYLE
        changed = True
    for cell, slide_type in zip(notebook.get("cells", []), slide_types(notebook)):
        metadata = cell.setdefault("metadata", {})
        if (
            slide_type == CONTINUE
        ):  # no key at all: "-" is the default everywhere, and its only spelling some tools read
            changed |= metadata.pop("slideshow", None) is not None
        elif metadata.get("slideshow") != {"slide_type": slide_type}:
            metadata["slideshow"] = {"slide_type": slide_type}
            changed = True
    return changed


def lessons(root: Path) -> list[Path]:
    """The notebooks lecture mode covers: the course's lessons in ``notebooks/``."""
    return [path for stem in course.LESSONS if (path := Path(root) / "notebooks" / f"{stem}.ipynb").exists()]


def sync_slides(root: Path, check: bool = False) -> tuple[list[str], dict[str, list[str]]]:
    """Make every lesson's cells and slide metadata the generated ones (:func:`apply`).

    Returns the lessons (paths relative to ``root``) that differed, and the :func:`problems` of each lesson that
    has some. With ``check``, writes nothing.
    """
    changed, found = [], {}
    for path in lessons(root):
        relative = path.relative_to(root).as_posix()
        notebook = course.read_notebook(path)
        if lesson_problems := problems(notebook):
            found[relative] = lesson_problems
        if apply(notebook):
            changed.append(relative)
            if not check:
                course.write_notebook(notebook, path)
    return changed, found


# ---------------------------------------------------------------- the static deck

ASSETS = "_slides"  # the folder beside the decks that holds reveal.js and MathJax

# reveal.js as the sphinx-revealjs package ships it (MIT), MathJax 3 as sphinx-mathjax-offline does (Apache-2.0):
# package, its folder of the library, and the files of it the deck loads.
_LIBRARIES = {
    "reveal": (
        "sphinx-revealjs",
        "sphinx_revealjs/_static/revealjs",
        ("LICENSE", "dist/reveal.css", "dist/reveal.js", "dist/theme/white.css", "dist/theme/fonts/source-sans-pro"),
    ),
    "mathjax": (
        "sphinx-mathjax-offline",
        "sphinx-mathjax-offline/static/mathjax",
        ("tex-chtml-full.js", "output/chtml/fonts/woff-v2"),
    ),
}


def _copy_libraries(out_folder: Path) -> None:
    for name, (distribution, folder, files) in _LIBRARIES.items():
        try:
            source = Path(importlib.metadata.distribution(distribution).locate_file(folder))
        except importlib.metadata.PackageNotFoundError:
            source = None
        if source is None or not source.is_dir():
            raise RuntimeError(f"the static slides need {distribution} installed: pip install -e '.[site]'")
        for relative in files:
            target = out_folder / ASSETS / name / relative
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if (source / relative).is_dir():  # a font's .woff serves every browser the deck supports
                shutil.copytree(source / relative, target, ignore=shutil.ignore_patterns("*.eot", "*.ttf", "*.otf"))
            else:
                shutil.copyfile(source / relative, target)


# nbconvert's reveal template with everything it would fetch from a CDN served from ASSETS: reveal.js as a
# plain script (no require.js, no jQuery), MathJax 3 with its own configuration (nbconvert's is MathJax 2's).
_TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}
<script>
window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\(', '\\)']], displayMath: [['$$', '$$'], ['\\[', '\\]']],
                        processEscapes: true}};
</script>
<script defer src="@ASSETS@/mathjax/tex-chtml-full.js"></script>
{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}
<style>
/* Type a lecture hall reads, small enough for a panel's code and figure; a slide taller than the screen scrolls. */
:root { --jp-content-font-size1: 17px; --jp-code-font-size: 14px; --jp-ui-font-size1: 15px; }
.reveal .slides section h1, .reveal .slides section h2, .reveal .slides section h3 { text-transform: none; }
.reveal .slides section.present { height: 100%; overflow-y: auto; }
.reveal .jp-InputArea-editor, .reveal .jp-OutputArea-output pre { overflow-x: auto; }
</style>
{%- endblock html_head_css -%}
{% block footer_js %}
<script src="@ASSETS@/reveal/dist/reveal.js"></script>
<script>
Reveal.initialize({controls: true, progress: true, hash: true, center: false, slideNumber: 'c/t',
                   transition: 'none', width: 1280, height: 800});
// reveal.js ignores its keys while an input has the focus: a quiz choice, once picked, gives Space back.
document.addEventListener('change', event => {
  if (event.target.matches('.reveal input[type=radio]')) event.target.blur();
});
</script>
{% endblock footer_js %}
""".replace("@ASSETS@", ASSETS)

# A markdown image from another site (the Colab badge) cannot load offline: a linked one becomes its link.
_REMOTE_IMAGE = re.compile(r"\[!\[([^\]]*)\]\((?:https?:)?//[^)]*\)\]\(([^)]*)\)|!\[([^\]]*)\]\((?:https?:)?//[^)]*\)")


def _offline_markdown(source: str) -> str:
    def replace(match: re.Match) -> str:
        if match.group(2) is not None:
            return f"[{match.group(1)}]({match.group(2)})"
        return html.escape(match.group(3))

    return _REMOTE_IMAGE.sub(replace, source)


def static_deck(executed_notebook, out_folder: Path, name: str | None = None) -> Path:
    """Write a lesson's slides with its outputs as ``out_folder/NAME.slides.html``; return that path.

    ``executed_notebook`` is the path of an executed notebook (NAME is its stem) or the notebook itself, as
    nbformat reads it (then pass ``name``; it is not changed). The slides are the generated ones (:func:`apply`),
    whatever metadata the notebook carries. The page loads nothing from the network: reveal.js and MathJax are
    copied into ``out_folder/_slides/`` (once, for every deck in the folder), and images from other sites (the
    Colab badge) become their links.
    """
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import SlidesExporter

    if isinstance(executed_notebook, (str, Path)):
        notebook = nbformat.read(executed_notebook, as_version=4)
        name = name or Path(executed_notebook).stem
    else:
        # A copy (the caller's stays as it is), read as from a file: each source one string.
        notebook = nbformat.reads(json.dumps(executed_notebook), as_version=4)
        if not name:
            raise ValueError("static_deck needs a name for a notebook given as an object")
    apply(notebook)
    notebook = nbformat.from_dict(notebook)  # the cells split off as nbformat's nodes too
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = _offline_markdown(cell.source)
    out_folder = Path(out_folder)
    out_folder.mkdir(parents=True, exist_ok=True)
    _copy_libraries(out_folder)
    exporter = SlidesExporter(
        extra_loaders=[DictLoader({"gpulab_deck.html.j2": _TEMPLATE})],
        template_file="gpulab_deck.html.j2",
        reveal_url_prefix=f"{ASSETS}/reveal",
        reveal_theme="white",
    )
    body, _resources = exporter.from_notebook_node(notebook, resources={"metadata": {"name": name}})
    target = out_folder / f"{name}.slides.html"
    target.write_text(body, encoding="utf-8")
    return target
