"""Exercises from solutions, and a grader that runs the instructor's checks on a student's answers.

A solution notebook (``solutions/NN_name.ipynb``) is the source. Its cells carry roles in
their metadata, under the key ``gpulab``:

- an **answer** cell, ``{"answer": "ID"}``, holds the solution between ``### BEGIN SOLUTION``
  and ``### END SOLUTION``;
- **check** cells, ``{"check": "ID-a", "exercise": "ID", "points": 2}``, hold asserts; lines
  between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` are for the grader only;
- **canary** cells, ``{"canary": "ID-x", "exercise": "ID"}``, are checks that must fail (an
  instructor's own, beside the grader's): one that passes shows a kernel tampered with.

:func:`make_exercise` replaces each solution with a stub and drops the hidden tests and canaries.
:func:`grade` takes a student's answer cells (matched by ID, never by position), and runs each
exercise — setup cells, the student's answer, the instructor's checks, canaries among them — in a
fresh kernel inside a sandbox (:mod:`gpulab.sandbox`), so that a hang, a crash or a hostile
answer costs only that exercise. A check passes only when its cell's execute reply says ``ok``.
:func:`grade_many` grades a class.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import re
import secrets
import signal
import sys
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import course
from .checks import TimedCall, patched, recorded_time_fn  # check cells' old import path

__all__ = [
    "CheckResult", "Report", "SubmissionError", "TimedCall", "assign", "grade", "grade_many", "kill_processes_mentioning",
    "lesson_in_name", "load_submission", "make_exercise", "patched", "recorded_time_fn", "solution_path",
    "solutions_folder", "submissions_in",
]

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
MESSAGE_LIMIT = 300


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


# ---------------------------------------------------------------- assign


def make_exercise(solution: dict, relative_path: str) -> dict:
    """The student's notebook for ``relative_path`` (``exercises/NN_name.ipynb``) from a solution notebook."""
    notebook = copy.deepcopy(solution)
    notebook["metadata"].pop("widgets", None)
    notebook["cells"] = [cell for cell in notebook["cells"] if "canary" not in _role(cell)]   # the grader's alone
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


def _problem(notebook) -> str:
    """Why ``notebook`` (read from JSON) is not a notebook the grader can use, or "" if it is."""
    if not isinstance(notebook, dict) or "nbformat" not in notebook:
        return "not a Jupyter notebook (no nbformat field)"
    if notebook.get("nbformat") != 4:
        return (f"notebook format {notebook.get('nbformat')} is not supported; "
                "open it in Jupyter and save it (format 4)")
    if not isinstance(notebook.get("metadata", {}), dict):
        return f"its metadata is {_kind(notebook['metadata'])}, not a mapping"
    role = notebook.get("metadata", {}).get("gpulab", {})
    if not isinstance(role, dict):
        return f"its gpulab metadata is {_kind(role)}, not a mapping"
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        return "not a Jupyter notebook (it has no list of cells)"
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            return f"cell {number} is malformed (not a cell)"
        if not isinstance(cell.get("metadata", {}), dict):
            return f"cell {number}'s metadata is {_kind(cell['metadata'])}, not a mapping"
        role = cell.get("metadata", {}).get("gpulab", {})
        if not isinstance(role, dict):
            return f"cell {number}'s gpulab metadata is {_kind(role)}, not a mapping"
        source = cell.get("source", "")
        if not (isinstance(source, str) or (isinstance(source, list) and all(isinstance(s, str) for s in source))):
            return f"cell {number}'s source is {_kind(source)}, not text"
        for key in ("answer", "check", "exercise", "canary"):
            if key in role and not isinstance(role[key], str):
                return f"cell {number}'s {key} id is {_kind(role[key])}, not text"
    return ""


def _kind(value) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def load_submission(path: Path) -> dict:
    """Read a submitted notebook, or raise :class:`SubmissionError` with a one-line reason."""
    path = Path(path)
    try:
        if not path.is_file():
            raise SubmissionError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
        text = path.read_text(encoding="utf-8")
    except SubmissionError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"{path}: cannot be read as text ({exc.__class__.__name__})") from None
    if not text.strip():
        raise SubmissionError(f"{path}: the file is empty")
    try:
        notebook = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        raise SubmissionError(f"{path}: not a notebook (invalid JSON{f' at line {line}' if line else ''})") from None
    problem = _problem(notebook)
    if problem:
        raise SubmissionError(f"{path}: {problem}")
    return notebook


def solutions_folder(explicit: Path | str | None = None) -> Path:
    """Where the instructor's notebooks are: ``explicit`` (``--solutions DIR``), else the checkout's solutions/.

    The solutions never ship in the package: a self-learner has them in the repository, and an
    instructor grades with a private copy whose hidden tests no student has seen.
    """
    if explicit is not None:
        folder = Path(explicit)
        if not folder.is_dir():
            raise SubmissionError(f"--solutions {folder}: no such folder")
        return folder
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "solutions").is_dir():
        return checkout / "solutions"
    raise SubmissionError("no solutions to grade with: gpulab does not ship them; pass --solutions DIR "
                          "(your copy of the course's solutions/ folder)")


def solution_path(lesson: str, solutions: Path | str | None = None) -> Path:
    """The instructor's notebook for ``lesson`` (e.g. ``01_devices``)."""
    folder = solutions_folder(solutions)
    path = folder / f"{lesson}.ipynb"
    if not LESSON_NAME.fullmatch(lesson) or not path.is_file():
        raise SubmissionError(f"no solution notebook for lesson {lesson!r} in {folder}")
    return path


LESSON_NAME = re.compile(r"\d\d_[a-z0-9_]+")


def lesson_in_name(name: str, lessons: list[str]) -> str | None:
    """The lesson a file's name gives, or None: the one lesson whose name it holds, as learning-management
    systems keep it among their own words ("doe_jane_12345_04_memory.ipynb", "04_memory (2).ipynb"); or else
    the lesson whose number it starts with ("04.ipynb")."""
    held = [lesson for lesson in lessons if re.search(rf"(?<![0-9A-Za-z]){re.escape(lesson)}(?![0-9A-Za-z])", name)]
    if len(held) == 1:
        return held[0]
    if held:
        return None
    match = re.match(r"(\d\d)(?!\d)", name)
    numbered = [lesson for lesson in lessons if match and lesson.startswith(match.group(1))]
    return numbered[0] if len(numbered) == 1 else None


def _lesson_of(submission: dict, path: Path, chosen: str | None, folder: Path) -> str:
    """The lesson to grade ``path`` as: ``chosen`` (``--lesson``), its metadata, or its file name — never
    one of them silently over another that disagrees."""
    said = submission.get("metadata", {}).get("gpulab", {}).get("lesson")
    if said is not None and not (isinstance(said, str) and LESSON_NAME.fullmatch(said)):
        raise SubmissionError(f"{path}: its metadata names no lesson one can grade ({str(said)[:40]!r})")
    named = lesson_in_name(path.name, sorted({p.stem for p in folder.glob("*.ipynb")} | set(course.LESSONS)))
    if chosen is not None:
        if said is not None and said != chosen:
            raise SubmissionError(f"{path}: its metadata says lesson {said}, but --lesson says {chosen}")
        return chosen
    if said is not None:
        if named is not None and named != said:
            raise SubmissionError(f"{path}: its metadata says lesson {said}, its file name {named}; "
                                  "pass --lesson to say which")
        return said
    if named is not None:
        return named
    raise SubmissionError(f"{path}: cannot tell which lesson this is; pass --lesson NN_name")


# ---------------------------------------------------------------- reports


@dataclasses.dataclass
class CheckResult:
    exercise: str
    check: str
    points: float
    max_points: float
    outcome: str  # passed, failed, error, timeout, not run, tampered
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


# ---------------------------------------------------------------- canaries

# Tampering that makes a failing assertion pass — an IPython hook, a patched torch.allclose or
# isinstance, a kernel that replies "ok" to everything — also makes a check pass that the grader
# knows must fail. Such canary cells run among an exercise's checks, after the answer, each with
# fresh random names and values; one that does not fail with its own message scores the exercise 0.
# An instructor adds canaries of an exercise's own in the solution notebook: cells with
# {"canary": ID, "exercise": ID} (tagged raises-exception, so that nbval expects them to fail).
_CANARIES = (
    "{a} = {x}\nassert {a} == {y}, f'expected {y}, got {{{a}}}'",
    "import math\n{a} = {x}.5\nassert math.isclose({a}, {y}.25), f'expected about {y}.25, got {{{a}}}'",
    "{a} = {x}\nassert isinstance({a}, str), f'expected a str, got {{{a}!r}}'",
    "import sys\n{b} = sys.modules.get('torch')\n{a} = [{x}.0]\nif {b} is not None:\n"
    "    assert {b}.allclose({b}.tensor({a}), {b}.tensor([{y}.5])), f'expected [{y}.5], got {{{a}}}'\n"
    "else:\n    assert {a} == [{y}.5], f'expected [{y}.5], got {{{a}}}'",
    "import sys\n{b} = sys.modules.get('numpy')\n{a} = {x}.0\nif {b} is not None:\n"
    "    assert {b}.isclose({a}, {y}.5), f'expected {y}.5, got {{{a}}}'\n"
    "else:\n    assert abs({a} - {y}.5) < 0.5, f'expected {y}.5, got {{{a}}}'",
)
_WORDS = ("result", "value", "got", "out", "total", "measured", "size", "count", "expected", "seen")


def _canary(kind: int, rng) -> tuple[str, str]:
    """(source, message): a cell that looks like a check and must fail with AssertionError(message)."""
    while True:
        a = b = ""
        while a == b:
            a, b = (f"_{rng.choice(_WORDS)}{rng.randint(0, 999)}" for _ in "ab")
        x = rng.randint(2, 10**5)
        y = x + rng.randint(x // 5 + 1, x + 999)        # far apart for every tolerance: rtol 1e-5 and beyond
        source = _CANARIES[kind % len(_CANARIES)].format(a=a, b=b, x=x, y=y)
        try:                                # the message it fails with, here, in a Python nobody tampered with
            exec(compile(source, "<canary>", "exec"), {"__builtins__": __builtins__})
        except AssertionError as failure:
            return source, str(failure)


# ---------------------------------------------------------------- grading one exercise


@dataclasses.dataclass
class _Cell:
    kind: str          # setup, answer, check, canary
    key: str           # check id, answer:ID, canary:ID
    source: str
    nonce: str = ""


def _plan(solution: dict, exercise: str, answer_source: str, rng) -> list[_Cell]:
    """The cells that grade ``exercise``: the setup, the student's answer, its checks, canaries among them."""
    cells, checks = [], []
    for cell in solution["cells"]:
        if cell.get("cell_type") != "code":
            continue
        role = _role(cell)
        if (answer := answer_id(cell)) is not None:
            if answer == exercise:
                cells.append(_Cell("answer", f"answer:{exercise}", answer_source))
        elif "check" in role:
            if role.get("exercise") == exercise:
                checks.append(_Cell("check", role["check"], course.cell_source(cell)))
        elif "canary" in role:
            if role.get("exercise") == exercise:
                checks.append(_Cell("canary", f"canary:{role['canary']}", course.cell_source(cell)))
        elif not checks:
            cells.append(_Cell("setup", "", course.cell_source(cell)))
    kinds = list(range(len(_CANARIES)))
    rng.shuffle(kinds)
    for kind in kinds:                       # anywhere after the first check: each gap is as likely
        source, nonce = _canary(kind, rng)
        checks.insert(rng.randint(1, len(checks)), _Cell("canary", "canary", source, nonce))
    return cells + checks


def _grade_exercise(solution: dict, exercise: str, answer_source: str, timeout: float, folder: Path,
                    threads: int, slot: int, sandboxed: bool, limits, zygote=None) -> dict:
    """{key: {"outcome", "message"}} for the answer and every check, and "tampered" if a canary passed."""
    import random

    rng = random.Random(secrets.randbits(64))
    plan = _plan(solution, exercise, answer_source, rng)
    # A kernel that does not start, or a setup that does not run, is the machine's doing, not the answer's
    # (nothing of it has run yet): on a busy machine (many kernels importing a CUDA build of torch at once) it
    # happens. Such an exercise is graded once more in a fresh kernel.
    for _ in range(2):
        results = _grade_once(plan, timeout, folder, threads, slot, sandboxed, limits, zygote)
        if "kernel" not in results:
            break
    return results


def _grade_once(plan: list, timeout: float, folder: Path, threads: int, slot: int, sandboxed: bool, limits,
                zygote) -> dict:
    from . import sandbox

    results: dict[str, dict] = {}
    try:
        if zygote is not None:
            kernel = zygote().kernel(start_timeout=max(60.0, timeout))
        else:
            kernel = sandbox.Kernel(folder, sandboxed=sandboxed, limits=limits, threads=threads, slot=slot,
                                    start_timeout=max(60.0, timeout))
    except sandbox.KernelDied as died:
        return {"kernel": {"outcome": "error", "message": str(died)}}
    with kernel:
        for cell in plan:
            if not kernel.alive:
                break
            reply = kernel.execute(cell.source, timeout)
            if cell.kind == "canary":
                if (why := _canary_broken(reply, cell.nonce, kernel.alive)):
                    results["tampered"] = {"outcome": "tampered", "message": (
                        f"a check that must fail {why}: something in the answer changed how checks run")}
                    break
                continue
            if cell.kind == "setup":
                if reply.status != "ok":
                    why = _verdict(reply, timeout).get("message", reply.status)
                    return {"kernel": {"outcome": "error", "message": (
                        f"the exercise's setup did not run before your answer ({why}); not your answer's doing: "
                        "grade it again")[:MESSAGE_LIMIT]}}
                continue
            results[cell.key] = _verdict(reply, timeout)
    return results


def _canary_broken(reply, message: str, alive: bool) -> str:
    """How a canary's reply shows tampering ("" if it failed as it must; a dead kernel shows nothing).

    The grader's canaries must fail with their own AssertionError; an instructor's (no message) with any error.
    """
    if reply.status == "ok":
        return "passed"
    if reply.status == "timeout" and alive:
        return "did not finish"
    if reply.status == "error" and message and (reply.ename != "AssertionError" or message not in reply.evalue):
        return f"raised {reply.ename} instead of its own AssertionError"
    return ""


def _verdict(reply, timeout: float) -> dict:
    if reply.status == "ok":
        return {"outcome": "passed"}
    if reply.status == "timeout":
        return {"outcome": "timeout", "message": f"Timeout of {timeout:g} seconds exceeded"}
    if reply.status == "died":
        return {"outcome": "error", "message": reply.evalue}
    message = f"{reply.ename}: {reply.evalue}".rstrip(": ")[:MESSAGE_LIMIT]
    return {"outcome": "failed" if reply.ename == "AssertionError" else "error", "message": message}


def _report(path: Path, lesson: str, parts: dict, solution: dict, outcomes: dict, notes: list[str]) -> Report:
    checks = []
    for exercise, part in parts.items():
        outcome = outcomes.get(exercise, {})
        tampered = outcome.get("tampered")
        if tampered:
            notes.append(f"exercise {exercise!r} scores 0: {tampered['message']}")
        for index in part["checks"]:
            role = check_role(solution["cells"][index])
            result = outcome.get(role["check"]) or outcome.get("kernel") or {"outcome": "not run",
                                                                             "message": "never reached"}
            passed = result["outcome"] == "passed" and not tampered
            message = "" if passed else result.get("message", "")
            if tampered and result["outcome"] == "passed":
                result, message = tampered, tampered["message"]
            answer = outcome.get(f"answer:{exercise}")
            if not passed and not tampered and answer and answer["outcome"] != "passed":
                # The check failed because the answer cell itself did: say so first.
                message = f"your answer cell failed ({answer['message']}); then {message}"[:MESSAGE_LIMIT]
            checks.append(CheckResult(exercise, role["check"], role["points"] if passed else 0, role["points"],
                                      result["outcome"], message))
    return Report(str(path), lesson, checks, notes)


# ---------------------------------------------------------------- grading submissions


@dataclasses.dataclass
class _Submission:
    path: Path
    lesson: str = ""
    solution: dict | None = None
    parts: dict = dataclasses.field(default_factory=dict)
    answers: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)
    error: str = ""
    outcomes: dict = dataclasses.field(default_factory=dict)


def _prepare(path: Path, lesson: str | None, only: list[str] | None, folder: Path, solutions: dict) -> _Submission:
    item = _Submission(Path(path))
    try:
        submission = load_submission(item.path)
        item.lesson = _lesson_of(submission, item.path, lesson, folder)
        if item.lesson not in solutions:
            source = solution_path(item.lesson, folder)
            notebook = load_submission(source)
            solutions[item.lesson] = (notebook, exercises(notebook))
        item.solution, parts = solutions[item.lesson]
    except SubmissionError as exc:
        item.error = str(exc)
        return item
    except ValueError as exc:                  # the instructor's notebook breaks a rule of roles
        item.error = f"the solution notebook for {item.lesson}: {exc}"
        return item
    if only:
        unknown = sorted(set(only) - set(parts))
        if unknown:
            item.error = f"lesson {item.lesson} has no exercise {', '.join(unknown)} (it has {', '.join(parts)})"
            return item
        parts = {exercise: part for exercise, part in parts.items() if exercise in only}
    item.parts = parts
    for exercise in parts:
        found = [c for c in submission["cells"] if answer_id(c) == exercise]
        if found:
            item.answers[exercise] = course.cell_source(found[0])
        else:
            item.notes.append(f"no answer cell for exercise {exercise!r} (deleted, or its metadata removed?)")
            item.answers[exercise] = "\n".join(STUB)
    return item


def grade_many(paths: list[Path], *, timeout: float = 30.0, lesson: str | None = None, jobs: int | None = None,
               only: list[str] | dict | None = None, solutions: Path | str | None = None, sandboxed: bool = True,
               limits=None, progress: bool = False, fork: bool | None = None) -> list[Report | SubmissionError]:
    """Grade submissions, each exercise in a kernel of its own, ``jobs`` kernels at a time.

    ``only`` names the exercises to grade (default: all): a list for every submission, or a dict
    from a submission's path to its own list.

    With ``fork`` (the default where :func:`sandbox.can_fork`) each of the ``jobs`` sandboxes is a
    :class:`sandbox.Zygote` that imports torch once and forks a fresh kernel for each exercise;
    without, every kernel starts Python anew in a sandbox of its own.

    Returns, in the order given, a :class:`Report` for each submission, or the
    :class:`SubmissionError` that says why it could not be graded. Raises :class:`SubmissionError`
    when nothing can be graded (no solutions; no sandbox while ``sandboxed``).
    """
    from . import sandbox

    folder = solutions_folder(solutions)
    if sandboxed and sandbox.unavailable():
        raise SubmissionError(f"{sandbox.unavailable()}; pass --no-sandbox to grade without one "
                              "(only to check your own work: nothing then stops a submission reaching the grader)")
    limits = limits or sandbox.Limits(cpu_s=int(max(60, timeout * 20)))
    cache: dict = {}
    items = [_prepare(path, lesson, only.get(path) if isinstance(only, dict) else only, folder, cache)
             for path in paths]
    tasks = [(item, exercise) for item in items if not item.error for exercise in item.parts]
    cores = os.cpu_count() or 1
    jobs = max(1, min(jobs or cores, len(tasks) or 1))
    threads = max(1, cores // jobs)
    slots = list(range(jobs))
    lock = threading.Lock()
    fork = sandbox.can_fork() if fork is None else fork
    zygotes: dict[int, sandbox.Zygote] = {}
    # What the kernels would import first: torch, where a solution does (each exercise's setup does), and
    # torch._dynamo, which torch imports at the first call that goes through a torch function or dispatch
    # mode (seconds: gpulab's simulated GPUs are such modes).
    uses_torch = any(re.search(r"^\s*(import|from)\s+torch\b", course.cell_source(cell), re.M)
                     for notebook, _ in cache.values() for cell in notebook["cells"] if cell.get("cell_type") == "code")
    preload = ("torch", "torch._dynamo") if uses_torch else ()

    def zygote_of(slot: int):
        def made() -> sandbox.Zygote:
            zygote = zygotes.get(slot)
            if zygote is not None and not zygote.alive:
                zygote.close()
                zygote = None
            if zygote is None:
                zygote = zygotes[slot] = sandbox.Zygote(Path(workdir) / f"slot-{slot}", sandboxed=sandboxed,
                                                        limits=limits, threads=threads, slot=slot,
                                                        preload=preload, start_timeout=max(120.0, timeout))
            return zygote
        return made if fork else None
    bar = None
    if progress and tasks:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), desc="grading", unit="exercise", file=sys.stderr)

    def run(task):
        item, exercise = task
        with lock:
            slot = slots.pop()
        try:
            return _grade_exercise(item.solution, exercise, item.answers[exercise], timeout, Path(workdir) /
                                   f"{uuid.uuid4().hex[:12]}-{exercise}", threads, slot, sandboxed, limits,
                                   zygote_of(slot))
        finally:
            with lock:
                slots.append(slot)
            if bar is not None:
                bar.update()

    with tempfile.TemporaryDirectory(prefix="gpulab-grade-") as workdir:
        os.chmod(workdir, 0o711)               # each kernel's user reaches its own folder, and only that
        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for (item, exercise), outcome in zip(tasks, pool.map(run, tasks)):
                    item.outcomes[exercise] = outcome
        finally:
            for zygote in zygotes.values():
                zygote.close()
    if bar is not None:
        bar.close()
    notes = [] if sandboxed else ["graded without a sandbox (--no-sandbox)"]
    return [SubmissionError(item.error) if item.error else
            _report(item.path, item.lesson, item.parts, item.solution, item.outcomes, item.notes + notes)
            for item in items]


def grade(submission_path: Path, *, timeout: float = 30.0, lesson: str | None = None, workers: int = 2,
          only: list[str] | None = None, solutions: Path | str | None = None, sandboxed: bool = True,
          fork: bool | None = None) -> Report:
    """Grade one submitted exercise notebook; raise :class:`SubmissionError` if it cannot be graded.

    ``only`` names the exercises to grade (default: all), e.g. to regrade one of them.
    """
    cores = os.cpu_count() or 1
    [result] = grade_many([Path(submission_path)], timeout=timeout, lesson=lesson, only=only, solutions=solutions,
                          sandboxed=sandboxed, jobs=max(1, min(workers, cores)), fork=fork)
    if isinstance(result, SubmissionError):
        raise result
    return result


def submissions_in(paths: list[Path]) -> list[tuple[str, Path]]:
    """(student, path) for every notebook named or found in the folders named, as an LMS exports them.

    In a folder, a notebook inside a subfolder belongs to the student the subfolder is named after
    (Moodle: one folder per student); one directly inside is named by its file (Canvas).
    """
    found = []
    for path in map(Path, paths):
        if path.is_dir():
            for notebook in sorted(path.rglob("*.ipynb")):
                relative = notebook.relative_to(path)
                if ".ipynb_checkpoints" in relative.parts:
                    continue
                found.append((relative.parts[0] if len(relative.parts) > 1 else notebook.stem, notebook))
        else:
            found.append((path.stem, path))
    return found


def kill_processes_mentioning(marker: str) -> None:
    """End every process but this one whose command line names ``marker`` (a kernel left in a temporary folder)."""
    from .distributed import other_processes

    for pid, cmdline in other_processes("cmdline"):
        if marker in cmdline.replace(b"\0", b" ").decode(errors="ignore"):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
