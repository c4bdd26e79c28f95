"""The notebooks the grader reads: roles of cells, exercises made from solutions, submissions.

A solution notebook (``solutions/NN_name.ipynb``) is the source. Its cells carry roles in
their metadata, under the key ``gpulab``:

- an **answer** cell, ``{"answer": "ID"}``, holds the solution between ``### BEGIN SOLUTION``
  and ``### END SOLUTION``;
- **check** cells, ``{"check": "ID-a", "exercise": "ID", "points": 2}``, hold asserts; lines
  between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` are for the grader only;
- **canary** cells, ``{"canary": "ID-x", "exercise": "ID"}``, are checks that must fail (an
  instructor's own, beside the grader's): one that passes shows a kernel tampered with;
- a **hints** cell, ``{"hints": "ID"}``, just above the answer cell, shows the exercise's hints
  (``gpulab.quiz.Hints``): it is for the student, kept as it is in the exercise, and nothing a
  grade depends on.

:func:`make_exercise` replaces each solution with a stub and drops the hidden tests and canaries;
:func:`assign` writes ``exercises/`` from ``solutions/``. :func:`load_submission` reads a student's
notebook, or says in one line why it cannot; :func:`lesson_of` tells which lesson it is.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from .. import course

__all__ = [
    "BEGIN_HIDDEN",
    "BEGIN_SOLUTION",
    "END_HIDDEN",
    "END_SOLUTION",
    "LESSON_NAME",
    "STUB",
    "SubmissionError",
    "answer_id",
    "assign",
    "cell_role",
    "check_role",
    "exercises",
    "hints_id",
    "lesson_in_name",
    "lesson_of",
    "load_submission",
    "make_exercise",
    "solution_path",
    "solutions_folder",
    "strip_hidden_tests",
    "strip_solutions",
    "submissions_in",
]

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


class SubmissionError(Exception):
    """The submission cannot be read as a notebook; the message says why, in one line."""


def cell_role(cell: dict) -> dict:
    """The cell's ``gpulab`` metadata ({} when it has none, or when it is not a mapping)."""
    role = cell.get("metadata", {}).get("gpulab", {})
    return role if isinstance(role, dict) else {}


def answer_id(cell: dict) -> str | None:
    """The exercise a code cell answers, or None."""
    return cell_role(cell).get("answer") if cell.get("cell_type") == "code" else None


def hints_id(cell: dict) -> str | None:
    """The exercise whose hints a code cell shows, or None."""
    return cell_role(cell).get("hints") if cell.get("cell_type") == "code" else None


def check_role(cell: dict) -> dict | None:
    """A check cell's role (``check``, ``exercise``, ``points``), or None for any other cell."""
    role = cell_role(cell)
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


def make_exercise(solution: dict, relative_path: str) -> dict:
    """The student's notebook for ``relative_path`` (``exercises/NN_name.ipynb``) from a solution notebook."""
    notebook = copy.deepcopy(solution)
    notebook["metadata"].pop("widgets", None)
    notebook["cells"] = [cell for cell in notebook["cells"] if "canary" not in cell_role(cell)]  # the grader's alone
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


def _problem(notebook) -> str:
    """Why ``notebook`` (read from JSON) is not a notebook the grader can use, or "" if it is."""
    if not isinstance(notebook, dict) or "nbformat" not in notebook:
        return "not a Jupyter notebook (no nbformat field)"
    if notebook.get("nbformat") != 4:
        return f"notebook format {notebook.get('nbformat')} is not supported; open it in Jupyter and save it (format 4)"
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
        for key in ("answer", "check", "exercise", "canary", "hints"):
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
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "pyproject.toml").is_file() and (checkout / "solutions").is_dir():
        return checkout / "solutions"
    raise SubmissionError(
        "no solutions to grade with: gpulab does not ship them; pass --solutions DIR "
        "(your copy of the course's solutions/ folder)"
    )


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


def lesson_of(submission: dict, path: Path, chosen: str | None, folder: Path) -> str:
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
            raise SubmissionError(
                f"{path}: its metadata says lesson {said}, its file name {named}; pass --lesson to say which"
            )
        return said
    if named is not None:
        return named
    raise SubmissionError(f"{path}: cannot tell which lesson this is; pass --lesson NN_name")


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
