"""``make site``: the course's website, built into site/ (not committed).

1. Every lesson (notebooks/) and every exercise notebook (exercises/: the students' copies, no solutions) is
   executed here, two at a time, with ``GPULAB_STATIC=1``: each panel runs at its default settings and shows
   its figure (with the H100 record beside it, as in the notebook) as an image whose text alternative says
   what it shows, and each quiz is HTML that works without a kernel. How long each took is kept.
2. Each executed copy, with a line of links under its title (Colab, at the release the notebooks install;
   the notebook as committed, to download; its lesson or its exercises), goes into build/site/source/,
   beside an index of the lessons (what each teaches, what it needs first, its time as the lesson gives it
   and how long its cells ran here) written from the notebooks themselves, and the instructor's guide (guide/).
   Each lesson's slides, with its outputs, become a reveal.js deck (gpulab.slides.static_deck) in slides/.
3. Sphinx with MyST-NB (tools/site/conf.py) renders them into site/, with Sphinx's own search; the decks go
   beside its pages.

    python tools/site/build.py [--jobs N] [--only 01_devices ...]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

import gpulab
from gpulab import course, slides

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SITE = ROOT / "site"
WORK = ROOT / "build" / "site"  # the executed notebooks, Sphinx's doctrees and MyST-NB's jupyter_execute/

FOLDERS = {"notebooks": "lesson", "exercises": "exercises"}
DECKS = "slides"  # site/slides/NN_name.slides.html: each lesson's static slide deck (gpulab.slides.static_deck)
LEARN = re.compile(r"\*\*In this lesson\*\* you will learn to\s*\n(.*)", re.S)
# Each lesson says what it needs and how long it takes, in one line: "*You need:* lesson 01. *Time:* about 40 minutes."
NEEDS = re.compile(r"\*You need:\* (.*?)\s*\*Time:\* (about \d+ minutes)")


def pages(only: list[str]) -> list[str]:
    """Every notebook the site shows, as paths relative to the repository: lessons first, then exercises."""
    found = []
    for folder in FOLDERS:
        for stem in course.LESSONS:
            if (ROOT / folder / f"{stem}.ipynb").exists() and (not only or stem in only):
                found.append(f"{folder}/{stem}.ipynb")
    return found


def execute(relative: str) -> tuple[nbformat.NotebookNode, float]:
    """The notebook ``relative``, executed in a scratch folder with ``GPULAB_STATIC=1``; and its seconds."""
    notebook = nbformat.read(ROOT / relative, as_version=4)
    with tempfile.TemporaryDirectory(prefix="gpulab-site-") as folder:
        # Over a Unix socket in the scratch folder: nothing listens on a TCP port, and ipykernel has no
        # warning to print about an unencrypted one.
        socket = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(folder) / "kernel")}})
        client = NotebookClient(
            notebook,
            config=socket,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": folder}},
            store_widget_state=False,
            # An exercise as handed out: each answer raises NotImplementedError, and its check shows it.
            allow_errors=relative.startswith("exercises/"),
        )
        started = time.monotonic()
        try:
            client.execute()
        except CellExecutionError as error:
            raise SystemExit(f"{relative} failed while the site was built:\n{error}") from None
        seconds = time.monotonic() - started
    if not relative.startswith("exercises/"):
        for number, cell in enumerate(notebook.cells):
            for output in cell.get("outputs", []):
                if "gpulab-error" in "".join(output.get("data", {}).get("text/html", "")):
                    raise SystemExit(f"{relative}: the panel in cell {number} failed while the site was built")
    return notebook, seconds


def _find(notebook, pattern: re.Pattern, relative: str) -> re.Match:
    for cell in notebook.cells:
        match = pattern.search(cell.source) if cell.cell_type == "markdown" else None
        if match:
            return match
    raise SystemExit(f"{relative} lacks the line the index is made from: {pattern.pattern}")


def learning_goals(notebook, relative: str) -> str:
    """The lesson's "In this lesson you will learn to" list, as written in it."""
    return _find(notebook, LEARN, relative).group(1).split("\n\n")[0].strip()


def needs_and_time(notebook, relative: str) -> tuple[str, str]:
    """What the lesson says a reader needs first, and how long it says it takes."""
    match = _find(notebook, NEEDS, relative)
    return match.group(1).rstrip("."), match.group(2)


def links(relative: str) -> str:
    """The line of links under a page's title."""
    folder, stem = relative.split("/")[0], Path(relative).stem
    parts = [
        f"[Open in Colab ({getattr(course, 'RELEASE', 'v0.1.0')})]({course.colab_url(relative)})",
        f"{{download}}`Download the notebook <../downloads/{relative}>`",
    ]
    other = "exercises" if folder == "notebooks" else "notebooks"
    if (ROOT / other / f"{stem}.ipynb").exists():
        parts.append(f"[{'the exercises' if other == 'exercises' else 'the lesson'}](../{other}/{stem}.ipynb)")
    if folder == "notebooks":  # the static deck is written beside Sphinx's pages, so a plain link (Sphinx skips it)
        parts.append(f'<a href="../{DECKS}/{stem}.slides.html">the slides</a>')
    return " · ".join(parts)


def page(relative: str, notebook) -> nbformat.NotebookNode:
    """The executed notebook as the site shows it: its title cell's Colab badge (an image from Colab's site,
    which an offline page cannot load) replaced by the line of links."""
    title = notebook.cells[0]
    heading = title.source.splitlines()[0]
    if not heading.startswith("# "):
        raise SystemExit(f"{relative}: its first cell is not the generated title (run gpulab headers)")
    title.source = f"{heading}\n\n{links(relative)}"
    return notebook


def index(timings: dict[str, float], notebooks: dict[str, nbformat.NotebookNode]) -> str:
    machine = f"{platform.machine()} CPU, {os.cpu_count()} cores, torch {_torch_version()}"
    lines = [
        "# gpulab: GPU computing for deep learning, with PyTorch",
        "",
        "Interactive lessons on what a GPU is, how to time it honestly, and how to use one well: devices,",
        "copying, models, memory, mixed precision, several GPUs and profiling. Every lesson runs its experiments",
        "on the reader's own hardware, behind sliders, beside the same experiments recorded on an NVIDIA H100 SXM.",
        "",
        f"These pages show each notebook as it ran on {machine}, with every panel at its default settings —",
        "open one in Colab (a free T4, or a CPU) or download it to change the settings and run it yourself.",
        f"Every notebook installs gpulab {getattr(course, 'RELEASE', 'v0.1.0')}. The quizzes work here as they do in the notebooks.",
        "",
    ]
    toc = []
    for stem, title in course.LESSONS.items():
        lesson, exercises = f"notebooks/{stem}.ipynb", f"exercises/{stem}.ipynb"
        if lesson not in notebooks:
            continue
        number = stem.split("_", 1)[0]
        needs, minutes = needs_and_time(notebooks[lesson], lesson)
        lines += [
            f"## [{number} · {title}]({lesson})",
            "",
            f"{minutes.capitalize()}; every cell ran here in {timings[lesson]:.0f} s. You need: {needs}. "
            "You will learn to",
            "",
            learning_goals(notebooks[lesson], lesson),
            "",
        ]
        more = (
            [f"[The exercises]({exercises}) (graded; their checks ran here too, unanswered)."]
            if exercises in notebooks
            else []
        )
        more.append(f'To present it: <a href="{DECKS}/{stem}.slides.html">its slides</a>, with these outputs.')
        lines += [" ".join(more), ""]
        toc += [lesson] + ([exercises] if exercises in notebooks else [])
    lines += [
        "## For instructors",
        "",
        "[The instructor's guide](guide/index.md): for each lesson its plans for a 50-minute lecture and a",
        "2-hour lab, a demo script per panel, questions for the room and the misconceptions behind each quiz",
        "choice; for the course, a day's and a semester's plan, running a class on Colab, JupyterHub or a lab's",
        "GPUs, and grading.",
        "",
    ]
    lines += ["```{toctree}", ":hidden:", ":maxdepth: 1", ""] + [Path(p).with_suffix("").as_posix() for p in toc]
    lines += ["```", "", "```{toctree}", ":hidden:", ":caption: Instructors", "", "guide/index", "```", ""]
    return "\n".join(lines)


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at once (2)")
    parser.add_argument("--only", nargs="*", default=[], help="only these lessons (stems such as 01_devices)")
    parser.add_argument("--out", type=Path, default=SITE, help="where the site goes (site/)")
    args = parser.parse_args(argv)
    site = args.out.resolve()
    work = WORK if site == SITE else site.parent / f".{site.name}-work"
    source = work / "source"

    os.environ["GPULAB_STATIC"] = "1"
    os.environ.pop("GPULAB_SIMULATE", None)  # the site shows this machine, never a simulated one
    os.environ.pop("MPLBACKEND", None)  # a figure a cell shows itself goes inline, as in Jupyter
    relatives = pages(args.only)
    shutil.rmtree(work, ignore_errors=True)
    started = time.monotonic()
    notebooks, timings = {}, {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(execute, relative): relative for relative in relatives}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            relative = futures[future]
            notebooks[relative], timings[relative] = future.result()
            print(f"[{done}/{len(relatives)}] {relative} ran in {timings[relative]:.0f} s", flush=True)

    for relative, notebook in notebooks.items():
        if relative.startswith("notebooks/"):  # its slides, with its outputs, before its title gets the links line
            slides.static_deck(notebook, work / DECKS, name=Path(relative).stem)
        target = source / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(page(relative, notebook), target)
        download = source / "downloads" / relative
        download.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / relative, download)
    (source / "index.md").write_text(index(timings, notebooks), encoding="utf-8")
    shutil.copytree(ROOT / "guide", source / "guide")  # the instructor's guide, as written (MyST)
    pages_of_guide = sorted(path.stem for path in (ROOT / "guide").glob("[0-9][0-9]_*.md"))
    with (source / "guide" / "index.md").open("a", encoding="utf-8") as guide:
        guide.write("\n```{toctree}\n:hidden:\n\n" + "\n".join(pages_of_guide) + "\n```\n")
    print(f"executed {len(notebooks)} notebooks in {time.monotonic() - started:.0f} s; rendering", flush=True)

    # Rendered inside the work folder (MyST-NB writes its jupyter_execute/ beside Sphinx's output), then moved.
    sphinx = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going", "-c", str(HERE)]
    built = subprocess.run([*sphinx, "-d", str(work / "doctrees"), str(source), str(work / "html")], cwd=ROOT)
    if built.returncode != 0:
        return built.returncode
    if (work / DECKS).exists():
        shutil.copytree(work / DECKS, work / "html" / DECKS)
    shutil.rmtree(site, ignore_errors=True)
    shutil.move(work / "html", site)
    (site / ".nojekyll").touch()  # GitHub Pages: serve _static/ and the other folders starting with "_"
    print(
        f"site/ built in {time.monotonic() - started:.0f} s (gpulab {gpulab.__version__}): open {site / 'index.html'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
