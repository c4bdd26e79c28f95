"""A tiny lesson for the grader's tests, and how they submit and grade it.

Four exercises with one to two checks each, no torch in its kernels: each grade takes seconds.
The test modules of tests/unit/grading import what they use from here (``from tiny_lesson import ...``);
each makes its ``tiny`` fixture, the lesson's solutions folder, with :func:`tiny_solutions`.
"""

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab import course, grading
from gpulab.grading import notebooks, sandbox

from conftest import code_cell, notebook

TIMEOUT = "4"
SANDBOXED = not sandbox.unavailable()
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason=sandbox.unavailable())

CORRECT = {
    "add": "def add(a, b):\n    return a + b",
    "square": "def square(x):\n    return x ** 2",
    "root": "def root(x):\n    return x ** 0.5",
    "const": "ANSWER = 42",
}


def role_cell(source, role=None):
    return code_cell(source, {"gpulab": role} if role else None)


def tiny_lesson():
    """Four exercises with one to two checks each; the answer region is marked as in the course."""

    def exercise(name, answer, checks, canaries=()):
        cells = [role_cell(answer, {"answer": name})]
        for number, (points, source) in enumerate(checks):
            cells.append(role_cell(source, {"check": f"{name}-{number}", "exercise": name, "points": points}))
        for number, source in enumerate(canaries):  # the instructor's: they must fail
            cells.append(role_cell(source, {"canary": f"{name}-must-fail-{number}", "exercise": name}))
        return cells

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# tiny"},
        role_cell("import math"),
        *exercise(
            "add",
            "def add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION",
            [
                (1, "assert add(1, 2) == 3, f'expected 3, got {add(1, 2)}'"),
                (
                    2,
                    "assert add('a', 'b') == 'ab'\n"
                    "### BEGIN HIDDEN TESTS\nassert add(2.5, 0.5) == 3.0\n### END HIDDEN TESTS",
                ),
            ],
            ["assert add(1, 2) == 4"],
        ),
        *exercise(
            "square",
            "def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION",
            [(2, "assert square(3) == 9, f'expected 9, got {square(3)}'")],
        ),
        *exercise(
            "root",
            "def root(x):\n    ### BEGIN SOLUTION\n    return math.sqrt(x)\n    ### END SOLUTION",
            [(1, "assert math.isclose(root(9), 3)")],
        ),
        *exercise(
            "const",
            "### BEGIN SOLUTION\nANSWER = 42\n### END SOLUTION",
            [(1, "assert ANSWER == 42, f'expected 42, got {ANSWER}'")],
        ),
    ]
    return notebook(cells, gpulab={"lesson": "01_devices"})


def tiny_solutions(tmp_path_factory):
    """A solutions folder holding the tiny lesson, as lesson 01 (each test module's ``tiny`` fixture)."""
    folder = tmp_path_factory.mktemp("solutions")
    course.write_notebook(tiny_lesson(), folder / "01_devices.ipynb")
    return folder


def grade(path, tiny, **kwargs):
    return grading.grade(path, timeout=float(TIMEOUT), solutions=tiny, sandboxed=SANDBOXED, **kwargs)


def exercise_of_tiny():
    """The tiny lesson as students get it: stubs, no hidden tests, no canaries."""
    made = copy.deepcopy(tiny_lesson())
    made["cells"] = [c for c in made["cells"] if "canary" not in c["metadata"].get("gpulab", {})]
    for cell in made["cells"]:
        if notebooks.answer_id(cell):
            cell["source"] = notebooks.strip_solutions(cell["source"])
        elif notebooks.check_role(cell):
            cell["source"] = notebooks.strip_hidden_tests(cell["source"])
    return made


def submit(folder, answers=None, transform=None, name="submission.ipynb"):
    """The tiny lesson's exercise notebook with some answers replaced, written to ``folder``."""
    made = exercise_of_tiny()
    for cell in made["cells"]:
        exercise = notebooks.answer_id(cell)
        if answers and exercise in answers:
            cell["source"] = answers[exercise]
    if transform:
        transform(made)
    path = Path(folder) / name
    path.write_text(json.dumps(made))
    return path


def run_grade(path, *extra, cwd=None, timeout=TIMEOUT, solutions=None, env=None):
    """``gpulab grade PATH`` as an instructor runs it (in a sandbox where one can be made)."""
    where = (["--solutions", str(solutions)] if solutions else []) + ([] if SANDBOXED else ["--no-sandbox"])
    return subprocess.run(
        [sys.executable, "-m", "gpulab", "grade", str(path), "--timeout", timeout, *where, *extra],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env=dict(os.environ, **(env or {})),
    )


def by_check(report):
    return {c.check: c for c in report.checks}


def points(report_json):
    """Exercise → points, from a report as JSON."""
    return {e["id"]: e["points"] for e in report_json["exercises"]}
