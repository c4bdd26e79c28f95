"""Exercises from solutions, and a grader that runs the instructor's checks with nbval.

A solution notebook (``solutions/NN_name.ipynb``) is the source. Its cells carry roles in
their metadata, under the key ``gpulab``:

- an **answer** cell, ``{"answer": "ID"}``, holds the solution between ``### BEGIN SOLUTION``
  and ``### END SOLUTION``;
- **check** cells, ``{"check": "ID-a", "exercise": "ID", "points": 2}``, hold asserts; lines
  between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` are for the grader only.

:func:`make_exercise` replaces each solution with a stub and drops the hidden tests.
:func:`grade` takes a student's answer cells (matched by ID, never by position), puts them
into the instructor's notebook with its full checks, and runs each exercise in a fresh kernel
under nbval, so that a hang or a crash in one exercise costs only that exercise.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path

from . import course
from ._nbval_report import MESSAGE_LIMIT

__all__ = [
    "CheckResult", "Report", "SubmissionError", "TimedCall", "assign", "grade", "kill_processes_mentioning",
    "load_submission", "make_exercise", "recorded_time_fn", "solution_path",
]

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


class SubmissionError(Exception):
    """The submission cannot be read as a notebook; the message says why, in one line."""


# ---------------------------------------------------------------- notebook roles and text


def _role(cell: dict) -> dict:
    role = cell.get("metadata", {}).get("gpulab", {})
    return role if isinstance(role, dict) else {}


def answer_id(cell: dict) -> str | None:
    return _role(cell).get("answer") if cell.get("cell_type") == "code" else None


def check_role(cell: dict) -> dict | None:
    role = _role(cell)
    return role if cell.get("cell_type") == "code" and "check" in role else None


def _replace_regions(source: str, begin: str, end: str, replacement: tuple[str, ...]) -> str:
    out, inside = [], False
    for line in source.splitlines():
        marker = line.strip()
        if marker == begin:
            if inside:
                raise ValueError(f"nested {begin!r}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out += [indent + r for r in replacement]
        elif marker == end:
            if not inside:
                raise ValueError(f"{end!r} without {begin!r}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{begin!r} without {end!r}")
    return "\n".join(out)


def strip_solutions(source: str) -> str:
    """Each solution region becomes ``# YOUR CODE HERE`` + ``raise NotImplementedError()``."""
    return _replace_regions(source, BEGIN_SOLUTION, END_SOLUTION, STUB)


def strip_hidden_tests(source: str) -> str:
    """Hidden-test regions are removed, markers included."""
    return _replace_regions(source, BEGIN_HIDDEN, END_HIDDEN, ())


def exercises(notebook: dict) -> dict[str, dict]:
    """Exercise ID → its answer cell index and check cells, in notebook order."""
    found: dict[str, dict] = {}
    for index, cell in enumerate(notebook["cells"]):
        if (exercise := answer_id(cell)) is not None:
            if exercise in found and found[exercise]["answer"] is not None:
                raise ValueError(f"exercise {exercise!r} has two answer cells")
            found.setdefault(exercise, {"answer": None, "checks": []})["answer"] = index
        elif (role := check_role(cell)) is not None:
            exercise = role.get("exercise")
            points = role.get("points")
            if not isinstance(points, (int, float)) or points <= 0:
                raise ValueError(f"check {role['check']!r} needs positive points")
            found.setdefault(exercise, {"answer": None, "checks": []})["checks"].append(index)
    for exercise, parts in found.items():
        if parts["answer"] is None or not parts["checks"]:
            raise ValueError(f"exercise {exercise!r} needs one answer cell and at least one check cell")
    return found


# ---------------------------------------------------------------- helpers for check cells


@dataclasses.dataclass
class TimedCall:
    """One call to ``gpulab.time_fn``: the function it timed and the keywords it was given."""

    fn: object
    kwargs: dict


@contextlib.contextmanager
def recorded_time_fn(namespace: dict | None = None, *, run: bool = True):
    """Record every call to ``gpulab.time_fn`` made inside the block, however it was imported.

    Yields the list of :class:`TimedCall`. ``namespace`` (a check passes ``globals()``) is
    searched for names bound to ``time_fn`` by ``from gpulab import time_fn``. With
    ``run=False`` the timed function is called once instead of being timed, and a Timing with
    no real measurement is returned: for checks on a simulated GPU, where nothing can be timed.
    """
    from unittest import mock

    import gpulab

    from . import timing

    real = timing.time_fn
    gpulab.time_fn  # noqa: B018 -- resolve the lazy attribute now, so the patch below restores it
    calls: list[TimedCall] = []

    def spy(fn, **kwargs):
        calls.append(TimedCall(fn, kwargs))
        if run:
            return real(fn, **kwargs)
        fn()
        return timing.Timing(samples_s=(1e-3,), calls_per_sample=1, device=str(kwargs.get("device")),
                             clock="not timed", flops=kwargs.get("flops"), bytes_moved=kwargs.get("bytes_moved"))

    # Only the names bound to time_fn are swapped and put back: the check's other variables stay.
    bound = [name for name, value in (namespace or {}).items() if value is real]
    with mock.patch.object(gpulab, "time_fn", spy), mock.patch.object(timing, "time_fn", spy):
        for name in bound:
            namespace[name] = spy
        try:
            yield calls
        finally:
            for name in bound:
                namespace[name] = real


# ---------------------------------------------------------------- assign


def make_exercise(solution: dict, relative_path: str) -> dict:
    """The student's notebook for ``relative_path`` (``exercises/NN_name.ipynb``) from a solution notebook."""
    notebook = copy.deepcopy(solution)
    notebook["metadata"].pop("widgets", None)
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
            if answer_id(cell) is not None:
                cell["source"] = course._lines(strip_solutions(course.cell_source(cell)))
            elif check_role(cell) is not None:
                cell["source"] = course._lines(strip_hidden_tests(course.cell_source(cell)))
        elif BEGIN_SOLUTION in course.cell_source(cell):
            cell["source"] = course._lines(strip_solutions(course.cell_source(cell)))
    title, setup = course.header_cells(relative_path)
    notebook["cells"][0]["source"] = course._lines(title)
    notebook["cells"][1]["source"] = course._lines(setup)
    return notebook


def assign(root: Path, check: bool = False) -> list[str]:
    """Write ``exercises/X.ipynb`` for every ``solutions/X.ipynb``; return those that changed.

    With ``check``, write nothing and only report the exercises that are out of date.
    """
    root = Path(root)
    changed = []
    for solution_file in sorted((root / "solutions").glob("*.ipynb")):
        relative = f"exercises/{solution_file.name}"
        target = root / relative
        notebook = make_exercise(course.read_notebook(solution_file), relative)
        text = json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        changed.append(relative)
        if not check:
            target.parent.mkdir(exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return changed


# ---------------------------------------------------------------- submissions


def load_submission(path: Path) -> dict:
    """Read a submitted notebook, or raise :class:`SubmissionError` with a one-line reason."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SubmissionError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: cannot be read as text ({exc.__class__.__name__})") from None
    if not text.strip():
        raise SubmissionError(f"{path}: the file is empty")
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{path}: not a notebook (invalid JSON at line {exc.lineno})") from None
    if not isinstance(notebook, dict) or "nbformat" not in notebook:
        raise SubmissionError(f"{path}: not a Jupyter notebook (no nbformat field)")
    if notebook.get("nbformat") != 4:
        raise SubmissionError(
            f"{path}: notebook format {notebook.get('nbformat')} is not supported; "
            "open it in Jupyter and save it (format 4)")
    cells = notebook.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and "cell_type" in c for c in cells):
        raise SubmissionError(f"{path}: not a Jupyter notebook (its cells are malformed)")
    return notebook


def solution_path(lesson: str) -> Path:
    """The instructor's notebook for ``lesson`` (e.g. ``01_devices``), found through the package."""
    folder = os.environ.get("GPULAB_SOLUTIONS")
    base = Path(folder) if folder else Path(str(resources.files("gpulab").joinpath("solutions")))
    path = base / f"{lesson}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(f"no solution notebook for lesson {lesson!r} in {base}")
    return path


def _lesson_of(submission: dict, path: Path) -> str:
    lesson = submission.get("metadata", {}).get("gpulab", {}).get("lesson")
    if isinstance(lesson, str) and lesson in course.LESSONS:
        return lesson
    match = re.match(r"(\d\d)", path.name)  # a renamed download such as "01_devices (2).ipynb"
    candidates = [stem for stem in course.LESSONS if match and stem.startswith(match.group(1))]
    if len(candidates) == 1:
        return candidates[0]
    raise SubmissionError(f"{path}: cannot tell which lesson this is; pass --lesson NN_name")


# ---------------------------------------------------------------- grading


@dataclasses.dataclass
class CheckResult:
    exercise: str
    check: str
    points: float
    max_points: float
    outcome: str  # passed, failed, error, timeout, not run
    message: str = ""


@dataclasses.dataclass
class Report:
    submission: str
    lesson: str
    checks: list[CheckResult]
    notes: list[str]

    @property
    def total(self) -> float:
        return sum(c.points for c in self.checks)

    @property
    def max_total(self) -> float:
        return sum(c.max_points for c in self.checks)

    def by_exercise(self) -> dict[str, tuple[float, float]]:
        scores: dict[str, tuple[float, float]] = {}
        for c in self.checks:
            points, maximum = scores.get(c.exercise, (0, 0))
            scores[c.exercise] = (points + c.points, maximum + c.max_points)
        return scores

    def as_dict(self) -> dict:
        return {
            "submission": self.submission,
            "lesson": self.lesson,
            "total": self.total,
            "max": self.max_total,
            "exercises": [
                {"id": exercise, "points": points, "max": maximum,
                 "checks": [dataclasses.asdict(c) for c in self.checks if c.exercise == exercise]}
                for exercise, (points, maximum) in self.by_exercise().items()
            ],
            "notes": self.notes,
        }

    def table(self) -> str:
        rows = [("exercise", "check", "points", "max", "why not")]
        for c in self.checks:
            rows.append((c.exercise, c.check, f"{c.points:g}", f"{c.max_points:g}",
                         "" if c.outcome == "passed" else f"{c.outcome}: {c.message}".rstrip(": ")))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(value.ljust(width) for value, width in zip(r[:4], widths)) + "  " + r[4] for r in rows]
        lines.insert(1, "-" * len(lines[0]))
        lines.append(f"total: {self.total:g} / {self.max_total:g}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _run_notebook(solution: dict, exercise: str, answer_source: str) -> dict:
    """The instructor's notebook with only ``exercise``'s answer (the student's) and checks."""
    notebook = copy.deepcopy(solution)
    notebook["metadata"].pop("widgets", None)
    kept = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        if answer_id(cell) is not None:
            if answer_id(cell) != exercise:
                continue
            cell["source"] = answer_source
        elif (role := check_role(cell)) is not None and role.get("exercise") != exercise:
            continue
        kept.append(cell)
    notebook["cells"] = kept
    return notebook


def kill_processes_mentioning(marker: str) -> None:
    """End every process but this one whose command line names ``marker`` (a kernel left in a temporary folder)."""
    from .distributed import other_processes

    for pid, cmdline in other_processes("cmdline"):
        if marker in cmdline.replace(b"\0", b" ").decode(errors="ignore"):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# pytest, started so that a grading starts fast: nbval reads notebooks with nbformat, whose schema
# validation imports jsonschema, which builds an RFC 3987 parser at import when rfc3987_syntax is
# installed (a second per exercise). Notebooks hold no IRIs to check, so it is left out.
_PYTEST = "import sys; sys.modules['rfc3987_syntax'] = None; import pytest; sys.exit(pytest.main(sys.argv[1:]))"


def _grade_exercise(solution: dict, exercise: str, answer_source: str, timeout: float, workdir: Path,
                    threads: int = 1) -> dict:
    folder = workdir / exercise
    (folder / "runtime").mkdir(parents=True)
    (folder / "tmp").mkdir()
    notebook_path = folder / "graded.ipynb"
    notebook = _run_notebook(solution, exercise, answer_source)
    course.write_notebook(notebook, notebook_path)
    (folder / "pytest.ini").write_text("[pytest]\n")
    results = folder / "results.json"
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", GPULAB_GRADE_RESULTS=str(results), JUPYTER_RUNTIME_DIR=str(folder / "runtime"),
               IPYTHONDIR=str(folder / "ipython"), MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1",
               JUPYTER_PLATFORM_DIRS="1", TMPDIR=str(folder / "tmp"))  # what a submission writes goes with it
    # Exercises are graded side by side: each kernel gets its share of the cores. More threads
    # than cores make every parallel torch op wait for a thread the OS has parked, and a check
    # that runs thousands of them (a timing loop) then takes minutes instead of a second.
    env.setdefault("OMP_NUM_THREADS", str(threads))
    command = [sys.executable, "-c", _PYTEST, "-q", "-c", str(folder / "pytest.ini"), "--rootdir", str(folder),
               "-p", "no:cacheprovider", "-p", "nbval", "-p", "gpulab._nbval_report", "--nbval-lax",
               "--nbval-current-env", f"--nbval-cell-timeout={timeout:g}", str(notebook_path)]
    cells = len(notebook["cells"])
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        process.wait(timeout=timeout * cells + 120)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        kill_processes_mentioning(str(folder))
    return json.loads(results.read_text()) if results.exists() else {}


def grade(submission_path: Path, *, timeout: float = 30.0, lesson: str | None = None, workers: int = 2,
          only: list[str] | None = None) -> Report:
    """Grade a submitted exercise notebook; raise :class:`SubmissionError` if it cannot be read.

    ``only`` names the exercises to grade (default: all), e.g. to regrade one of them.
    """
    submission_path = Path(submission_path)
    submission = load_submission(submission_path)
    lesson = lesson or _lesson_of(submission, submission_path)
    solution = course.read_notebook(solution_path(lesson))
    parts = exercises(solution)
    if only:
        unknown = sorted(set(only) - set(parts))
        if unknown:
            raise SubmissionError(f"lesson {lesson} has no exercise {', '.join(unknown)} (it has {', '.join(parts)})")
        parts = {exercise: part for exercise, part in parts.items() if exercise in only}
    notes, answers = [], {}
    for exercise, part in parts.items():
        found = [c for c in submission["cells"] if answer_id(c) == exercise]
        if found:
            answers[exercise] = course.cell_source(found[0])
        else:
            notes.append(f"no answer cell for exercise {exercise!r} (deleted, or its metadata removed?)")
            answers[exercise] = "\n".join(STUB)

    cores = os.cpu_count() or 1
    side_by_side = max(1, min(workers, cores, len(parts)))
    with tempfile.TemporaryDirectory(prefix="gpulab-grade-") as workdir:
        with ThreadPoolExecutor(max_workers=side_by_side) as pool:
            futures = {exercise: pool.submit(_grade_exercise, solution, exercise, answers[exercise],
                                             timeout, Path(workdir), max(1, cores // side_by_side))
                       for exercise in parts}
            outcomes = {exercise: future.result() for exercise, future in futures.items()}

    checks = []
    for exercise, part in parts.items():
        for index in part["checks"]:
            role = check_role(solution["cells"][index])
            result = outcomes[exercise].get(role["check"], {"outcome": "not run", "message": "never reached"})
            passed = result["outcome"] == "passed"
            message = "" if passed else result.get("message", "")
            answer = outcomes[exercise].get(f"answer:{exercise}")
            if not passed and answer and answer["outcome"] != "passed":
                # The check failed because the answer cell itself did: say so first.
                message = f"your answer cell failed ({answer['message']}); then {message}"[:MESSAGE_LIMIT]
            checks.append(CheckResult(exercise, role["check"], role["points"] if passed else 0, role["points"],
                                      result["outcome"], message))
    return Report(str(submission_path), lesson, checks, notes)
