"""Exercises grade answers, not phrasings.

For every lesson, ``tests/answers/answers_NN_name.py`` holds answers the way students write them:
``RIGHT`` ones must score full marks, and each ``WRONG`` one must lose exactly the checks that
name its fault, no more and no fewer. They are graded by the real grader (``gpulab.grading``),
each exercise in its own kernel, several students' answers at a time: submission k holds the
k-th case of every exercise, and the solution where an exercise has fewer cases.

The last test grades the solutions, and the wrong answers marked for it, while another process
keeps a core busy: no check may hinge on how fast the machine is.
"""

from __future__ import annotations

import copy
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab import course, grading, sandbox

from conftest import ROOT

ANSWERS = ROOT / "tests" / "answers"
# The answers test the exercises, not the sandbox (tests/test_grading.py does): graded in one where there is one.
SANDBOXED = not sandbox.unavailable()
LESSONS = sorted(path.stem for path in (ROOT / "solutions").glob("*.ipynb"))


def cases_of(stem: str):
    """{exercise: [(kind, name, source, checks it must fail)]}, right answers first."""
    spec = importlib.util.spec_from_file_location(f"answers_{stem}", ANSWERS / f"answers_{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = {}
    for exercise, answers in module.RIGHT.items():
        cases.setdefault(exercise, []).extend(("right", name, source.strip(), set(), False) for name, source in answers)
    for exercise, answers in module.WRONG.items():
        cases.setdefault(exercise, []).extend(("wrong", name, source.strip(), set(fails), under_load)
                                              for name, source, fails, under_load in answers)
    return cases


def solution_answers(stem: str) -> dict[str, str]:
    notebook = course.read_notebook(ROOT / "solutions" / f"{stem}.ipynb")
    return {grading.answer_id(cell): course.cell_source(cell) for cell in notebook["cells"] if grading.answer_id(cell)}


def submission(stem: str, answers: dict[str, str], path: Path) -> Path:
    """The lesson's exercise notebook with ``answers`` (exercise → source) in its answer cells."""
    notebook = copy.deepcopy(course.read_notebook(ROOT / "exercises" / f"{stem}.ipynb"))
    for cell in notebook["cells"]:
        exercise = grading.answer_id(cell)
        if exercise in answers:
            cell["source"] = answers[exercise]
    course.write_notebook(notebook, path)
    return path


def rounds(stem: str) -> int:
    return max((len(cases) for cases in cases_of(stem).values()), default=0)


def failed_checks(report) -> dict[str, dict[str, str]]:
    failed: dict[str, dict[str, str]] = {}
    for check in report.checks:
        failed.setdefault(check.exercise, {})
        if check.outcome != "passed":
            failed[check.exercise][check.check] = f"{check.outcome}: {check.message}"
    return failed


def test_every_exercise_has_right_and_wrong_answers():
    for stem in LESSONS:
        cases = cases_of(stem)
        exercises = set(solution_answers(stem))
        assert set(cases) == exercises, f"{stem}: answer cases for {sorted(cases)}, exercises {sorted(exercises)}"
        for exercise, answers in cases.items():
            kinds = [kind for kind, *_ in answers]
            assert kinds.count("right") >= 2 and kinds.count("wrong") >= 1, f"{stem} {exercise}: {kinds}"


ROUNDS = [(stem, k) for stem in LESSONS for k in range(rounds(stem))]


def round_of(stem: str, number: int) -> tuple[dict[str, str], dict[str, tuple[str, set]]]:
    """The answers of submission ``number`` (the solution where an exercise has fewer cases), and what
    each exercise graded in it must fail."""
    answers, expected = dict(solution_answers(stem)), {}
    for exercise, exercise_cases in cases_of(stem).items():
        if number < len(exercise_cases):
            kind, name, source, fails, _ = exercise_cases[number]
            answers[exercise] = source
            expected[exercise] = (f"{kind} answer '{name}'", fails)
    return answers, expected


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every round of every lesson, graded together as a class's submissions are (a call per lesson and
    set of exercises), so that the grader keeps its kernels busy. Exercises whose cases are used up are not graded again: the solution's full
    marks are checked below."""
    folder = tmp_path_factory.mktemp("answers")
    by_lesson: dict[str, list] = {}
    for stem, number in ROUNDS:
        answers, expected = round_of(stem, number)
        by_lesson.setdefault(stem, []).append((number, submission(stem, answers, folder / f"{stem}-{number}.ipynb"),
                                               sorted(expected)))
    reports = {}
    for stem, submissions in by_lesson.items():
        # grade_many grades one set of exercises: a round's exercises are graded as their own submission
        for only in {tuple(only) for _, _, only in submissions}:
            chosen = [(number, path) for number, path, exercises in submissions if tuple(exercises) == only]
            found = grading.grade_many([path for _, path in chosen], timeout=60, lesson=stem, only=list(only),
                                       sandboxed=SANDBOXED)
            reports.update({(stem, number): report for (number, _), report in zip(chosen, found)})
    return reports


@pytest.mark.parametrize("stem, number", ROUNDS)
def test_answers_score_what_they_deserve(stem, number, graded):
    _, expected = round_of(stem, number)
    report = graded[(stem, number)]
    assert isinstance(report, grading.Report), f"{stem}, submission {number}: {report}"
    failed = failed_checks(report)
    wrong = {exercise: (what, sorted(fails), failed.get(exercise, {}))
             for exercise, (what, fails) in expected.items() if set(failed.get(exercise, {})) != fails}
    assert not wrong, "\n".join(f"{exercise}, {what}: should fail {fails}, failed {got}"
                                for exercise, (what, fails, got) in wrong.items())


def test_grades_do_not_depend_on_a_quiet_machine(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        for stem in LESSONS:
            wrong_answers, expected = dict(solution_answers(stem)), {}
            for exercise, exercise_cases in cases_of(stem).items():
                marked = [case for case in exercise_cases if case[4]]
                if marked:
                    _, name, source, fails, _ = marked[0]
                    wrong_answers[exercise], expected[exercise] = source, fails
            wrong = submission(stem, wrong_answers, tmp_path / f"{stem}-wrong.ipynb")
            solution, graded_wrong = grading.grade_many([ROOT / "solutions" / f"{stem}.ipynb", wrong], timeout=60,
                                                        lesson=stem, sandboxed=SANDBOXED)
            assert solution.total == solution.max_total, f"{stem}, graded under load:\n{solution.table()}"
            failed = failed_checks(graded_wrong)
            for exercise in set(failed) - set(expected):
                assert not failed[exercise], f"{stem} {exercise} holds the solution's answer, graded under load: {failed[exercise]}"
            for exercise, fails in expected.items():
                assert set(failed[exercise]) == fails, (
                    f"{stem} {exercise}, graded under load: should fail {sorted(fails)}, failed {failed[exercise]}")
    finally:
        busy.kill()
        busy.wait()
