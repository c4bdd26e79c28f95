"""An autograder for Gradescope, made from a lesson's solution notebook.

``gpulab autograder 04_memory --gradescope autograder.zip`` writes the zip Gradescope asks for
(its "autograder specifications"): Gradescope unpacks it into ``/autograder/source``, runs
``setup.sh`` once as root while it builds the image, and ``run_autograder`` for each submission,
which finds the student's files in ``/autograder/submission`` and writes
``/autograder/results/results.json``. The zip holds:

- ``lib/gpulab/``: this gpulab. ``setup.sh`` makes it importable by the image's Python (a ``.pth``
  file in its site-packages) and installs what gpulab needs: torch only where none is installed
  (the CPU build: Gradescope has no GPUs), never in place of one that is.
- ``checks/LESSON.ipynb``: the solution notebook without its solutions: its setup cells, its
  checks with their hidden tests, its canaries. Only this folder's notebook is graded against;
  kernels never see it (the sandbox shows them Python and ``lib/`` only).
- ``autograder.json``: the lesson, the time limit per cell, and the visibility of hidden checks.

``run_autograder`` grades the submitted notebook as ``gpulab grade`` does — each exercise in a
fresh kernel, the same checks and canaries — and writes one Gradescope test per check: its
points, its message as output, ``visible`` for a check the students can read in their notebook,
``after_published`` (or what ``--hidden-visibility`` says) for one with hidden tests. Where the
container cannot make a sandbox (Gradescope's usually cannot run bubblewrap), the grade still
runs, and the results say so.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import stat
import sys
import time
import zipfile
from pathlib import Path

from .. import course
from . import notebooks, reports, runner, sandbox

__all__ = ["VISIBILITIES", "build", "checks_notebook", "results", "run"]

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
ROOT_VARIABLE = "GPULAB_AUTOGRADER_ROOT"  # /autograder, unless a test puts it elsewhere

AUTOGRADER = Path(__file__).with_name("autograder")  # setup.sh, run_autograder, pin_installed.py

REQUIREMENTS = [
    "torch>=2.6",
    "numpy>=1.23",
    "matplotlib>=3.7",
    "tqdm>=4.60",
    "ipywidgets>=7.7,<9",
    "ipykernel>=6",
    "jupyter_client>=7",
    "pyzmq>=24",
]


def checks_notebook(solution: dict) -> dict:
    """The solution notebook with every solution replaced by the stub students see, and nothing else
    changed: its setup cells, checks (hidden tests kept) and canaries are what grading runs."""
    notebook = copy.deepcopy(solution)
    for cell in notebook["cells"]:
        source = course.cell_source(cell)
        if notebooks.BEGIN_SOLUTION in source:
            cell["source"] = course._lines(notebooks.strip_solutions(source))
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return notebook


def build(
    lesson: str,
    target: Path,
    *,
    solutions: Path | str | None = None,
    timeout: float = 30.0,
    hidden_visibility: str = "after_published",
) -> Path:
    """Write the Gradescope autograder zip for ``lesson`` to ``target``; raise SubmissionError if the lesson
    has no solution notebook."""
    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"visibility {hidden_visibility!r}: one of {', '.join(VISIBILITIES)}")
    solution_file = notebooks.solution_path(lesson, solutions)
    solution = notebooks.load_submission(solution_file)
    notebooks.exercises(solution)  # its roles are sound, or ValueError says why
    checks = checks_notebook(solution)
    package = Path(__file__).resolve().parents[1]  # gpulab, all of it
    config = {"lesson": lesson, "timeout": timeout, "hidden_visibility": hidden_visibility}
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        scripts = [
            (name, (AUTOGRADER / name).read_text(), mode)
            for name, mode in (("setup.sh", 0o755), ("run_autograder", 0o755), ("pin_installed.py", 0o644))
        ]
        for name, text, mode in (
            *scripts,
            ("requirements.txt", "\n".join(REQUIREMENTS) + "\n", 0o644),
            ("autograder.json", json.dumps(config, indent=2) + "\n", 0o644),
            (f"checks/{lesson}.ipynb", json.dumps(checks, indent=1, ensure_ascii=False) + "\n", 0o644),
        ):
            info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".so", ".o"):
                archive.write(path, f"lib/gpulab/{path.relative_to(package).as_posix()}")
    return target


def _submitted(folder: Path, lesson: str) -> Path:
    """The notebook to grade: the only one, or the one for ``lesson`` among several."""
    found = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not found:
        names = ", ".join(sorted(p.name for p in folder.rglob("*") if p.is_file())[:5]) or "nothing"
        raise notebooks.SubmissionError(f"no notebook (.ipynb) was submitted (found: {names})")
    if len(found) == 1:
        return found[0]
    for path in found:
        try:
            said = notebooks.load_submission(path).get("metadata", {}).get("gpulab", {}).get("lesson")
        except notebooks.SubmissionError:
            said = None
        if said == lesson or notebooks.lesson_in_name(path.name, sorted(course.LESSONS)) == lesson:
            return path
    raise notebooks.SubmissionError(
        f"{len(found)} notebooks were submitted and none is lesson {lesson}'s: {', '.join(p.name for p in found)}"
    )


def _hidden_checks(checks: dict) -> set[str]:
    return {
        notebooks.check_role(cell)["check"]
        for cell in checks["cells"]
        if notebooks.check_role(cell) and notebooks.BEGIN_HIDDEN in course.cell_source(cell)
    }


def results(report, checks: dict, *, hidden_visibility: str = "after_published", elapsed_s: float = 0.0) -> dict:
    """Gradescope's results.json for a :class:`~gpulab.grading.reports.Report`, or for the
    :class:`~gpulab.grading.notebooks.SubmissionError` that says why nothing could be graded."""
    if isinstance(report, notebooks.SubmissionError):
        return {
            "score": 0,
            "execution_time": round(elapsed_s),
            "visibility": "visible",
            "output": f"This notebook could not be graded: {report}",
            "tests": [],
        }
    hidden = _hidden_checks(checks)
    tests = []
    for number, check in enumerate(report.checks, start=1):
        passed = check.points == check.max_points
        tests.append(
            {
                "name": f"{check.exercise} · {check.check}",
                "number": str(number),
                "score": check.points,
                "max_score": check.max_points,
                "status": "passed" if passed else "failed",
                "output": "✓ passed" if passed else f"{check.outcome}: {check.message}".rstrip(": "),
                "visibility": hidden_visibility if check.check in hidden else "visible",
            }
        )
    lines = [f"{report.lesson}: {report.total:g} / {report.max_total:g} points"] + list(report.notes)
    return {
        "score": report.total,
        "execution_time": round(elapsed_s),
        "visibility": "visible",
        "output": "\n".join(lines),
        "tests": tests,
    }


def run(root: Path) -> dict:
    """Grade the submission under ``root`` (Gradescope's /autograder) and write results.json there."""
    source, start = root / "source", time.monotonic()
    config = json.loads((source / "autograder.json").read_text(encoding="utf-8"))
    lesson = config["lesson"]
    checks_folder = source / "checks"
    checks = notebooks.load_submission(checks_folder / f"{lesson}.ipynb")
    why_not = sandbox.unavailable()
    try:
        path = _submitted(root / "submission", lesson)
        [report] = runner.grade_many(
            [path], timeout=config["timeout"], lesson=lesson, solutions=checks_folder, sandboxed=not why_not
        )
    except notebooks.SubmissionError as error:
        report = error
    if isinstance(report, reports.Report) and why_not:
        report.notes[:] = [note for note in report.notes if "--no-sandbox" not in note]
        report.notes.append(f"graded without a sandbox ({why_not})")
    found = results(
        report,
        checks,
        hidden_visibility=config.get("hidden_visibility", "after_published"),
        elapsed_s=time.monotonic() - start,
    )
    out = root / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(found, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulab.grading.gradescope")
    commands = parser.add_subparsers(dest="command", required=True)
    graded = commands.add_parser("run", help="grade /autograder/submission (what run_autograder does)")
    graded.add_argument("--root", default=os.environ.get(ROOT_VARIABLE, "/autograder"))
    args = parser.parse_args(argv)
    found = run(Path(args.root))
    print(found["output"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
