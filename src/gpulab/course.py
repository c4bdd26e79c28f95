"""The course's map and the one place its GitHub path is written.

Every notebook starts with two generated cells: a title with an "Open in Colab" badge and
the setup cell. They are made here from :data:`REPOSITORY` and :data:`RELEASE`, never copied by
hand; ``gpulab headers`` rewrites them and the tests fail when a notebook's header differs.
The README's lesson table is generated here too.

Both name a release, never a branch: the setup cell installs the gpulab the notebook was generated
with, and the badge opens the notebook as that release has it, so a push to ``main`` changes no
student's environment in the middle of a semester.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import __version__

__all__ = [
    "LESSONS",
    "RELEASE",
    "REPOSITORY",
    "cell_source",
    "colab_url",
    "header_cells",
    "lesson_table",
    "read_notebook",
    "sync_headers",
    "sync_readme",
    "write_notebook",
]

REPOSITORY = "gpulab/gpulab"  # owner/name on GitHub
RELEASE = f"v{__version__}"  # this version's git tag (the README's Releases says how one is cut)

# file stem → title, in course order
LESSONS = {
    "00_why_gpus": "Why GPUs",
    "01_devices": "Devices: where tensors live",
    "02_copying": "Copying between devices",
    "03_models_on_gpu": "Models on the GPU",
    "04_memory": "GPU memory",
    "05_amp": "Mixed precision",
    "06_multi_gpu": "Several GPUs",
    "07_profiling": "Profiling",
    "08_sharding": "Sharding: when DDP stops fitting",
    "09_kernels": "Kernels: fusion, torch.compile, CUDA graphs, Triton",
}

FOLDERS = {"notebooks": "", "exercises": " — exercises", "solutions": " — exercises with solutions"}

BADGE = "https://colab.research.google.com/assets/colab-badge.svg"

SETUP_SOURCE = f"""\
# Setup: in Colab, install the course helpers (Colab's own torch is kept); elsewhere, nothing to do.
import sys

if "google.colab" in sys.modules:
    import subprocess

    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet",
         "gpulab @ git+https://github.com/{REPOSITORY}@{RELEASE}"],
        check=True,
    )"""


def colab_url(relative_path: str) -> str:
    """The Colab address that opens ``relative_path`` (e.g. ``notebooks/01_devices.ipynb``) as :data:`RELEASE` has it."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{RELEASE}/{relative_path}"


def _parts(relative_path: str) -> tuple[str, str]:
    path = Path(relative_path)
    folder, stem = path.parent.as_posix(), path.stem
    if folder not in FOLDERS or stem not in LESSONS or path.suffix != ".ipynb":
        raise ValueError(f"{relative_path!r} is not a course notebook (folder/NN_name.ipynb)")
    return folder, stem


def header_cells(relative_path: str) -> tuple[str, str]:
    """The sources of a notebook's first two cells: the markdown title and the setup code."""
    folder, stem = _parts(relative_path)
    number = stem.split("_", 1)[0]
    title = f"# {number} · {LESSONS[stem]}{FOLDERS[folder]}"
    badge = f"[![Open In Colab]({BADGE})]({colab_url(relative_path)})"
    return f"{title}\n\n{badge}", SETUP_SOURCE


def lesson_table(root: Path) -> str:
    """The README's lesson table: every lesson, with badges for the notebooks that exist."""
    rows = ["| # | lesson | open | exercises |", "|---|---|---|---|"]
    for stem, title in LESSONS.items():
        number = stem.split("_", 1)[0]
        lesson, exercise = f"notebooks/{stem}.ipynb", f"exercises/{stem}.ipynb"
        if (root / lesson).exists():
            name = f"[{title}]({lesson})"
            badge = f"[![Open In Colab]({BADGE})]({colab_url(lesson)})"
        else:
            name, badge = f"{title} *(in preparation)*", ""
        exercises = f"[{exercise}]({exercise})" if (root / exercise).exists() else ""
        rows.append(f"| {number} | {name} | {badge} | {exercises} |")
    return "\n".join(rows)


README_BLOCK = re.compile(r"(<!-- lessons:start -->\n)(.*?)(\n<!-- lessons:end -->)", re.S)


def sync_readme(root: Path, check: bool = False) -> bool:
    """Rewrite the lesson table in README.md; return whether it differed."""
    path = Path(root) / "README.md"
    text = path.read_text(encoding="utf-8")
    match = README_BLOCK.search(text)
    if match is None:
        raise ValueError(f"{path} lacks the <!-- lessons:start --> … <!-- lessons:end --> markers")
    table = lesson_table(Path(root))
    if match.group(2) == table:
        return False
    if not check:
        path.write_text(text[: match.start(2)] + table + text[match.end(2) :], encoding="utf-8")
    return True


def read_notebook(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_notebook(notebook: dict, path: Path) -> None:
    """Write as Jupyter does (one-space indent, sorted keys), so saving in Jupyter changes nothing."""
    text = json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    Path(path).write_text(text, encoding="utf-8")


def _lines(source: str) -> list[str]:
    return source.splitlines(keepends=True)


def cell_source(cell: dict) -> str:
    """A cell's source as one string (notebooks store it as a string or as a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def header_matches(notebook: dict, relative_path: str) -> bool:
    cells = notebook.get("cells", [])
    title, setup = header_cells(relative_path)
    return (
        len(cells) >= 2
        and cells[0]["cell_type"] == "markdown"
        and cell_source(cells[0]) == title
        and cells[1]["cell_type"] == "code"
        and cell_source(cells[1]) == setup
    )


def sync_headers(root: Path, check: bool = False) -> list[str]:
    """Make every course notebook's first two cells the generated header.

    Returns the notebooks (relative paths) that differed. With ``check``, changes nothing.
    A notebook whose first cells are not a header gets the header inserted before them.
    """
    changed = []
    for folder in FOLDERS:
        for path in sorted((root / folder).glob("*.ipynb")):
            relative = path.relative_to(root).as_posix()
            notebook = read_notebook(path)
            if header_matches(notebook, relative):
                continue
            changed.append(relative)
            if check:
                continue
            title, setup = header_cells(relative)
            cells = notebook.setdefault("cells", [])
            looks_like_header = (
                len(cells) >= 2
                and cells[0]["cell_type"] == "markdown"
                and cell_source(cells[0]).startswith("# ")
                and cells[1]["cell_type"] == "code"
                and "google.colab" in cell_source(cells[1])
            )
            # The cells' metadata is kept (a lesson's slide types, from `gpulab slides`).
            metadata = [{}, {}]
            if looks_like_header:
                metadata = [cells[0].get("metadata", {}), cells[1].get("metadata", {})]
                del cells[:2]
            cells[:0] = [
                {"cell_type": "markdown", "id": "header-title", "metadata": metadata[0], "source": _lines(title)},
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "id": "header-setup",
                    "metadata": metadata[1],
                    "outputs": [],
                    "source": _lines(setup),
                },
            ]
            write_notebook(notebook, path)
    return changed
