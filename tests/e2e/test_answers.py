"""Exercises grade answers, not phrasings.

Every exercise's task is held to what it says. Its answer cell's metadata lists the task's
constraints — each sentence (or clause) of the task that constrains an answer, quoted — and each
check cell's metadata the constraints it enforces (``"enforces"``). A constraint no check enforces
fails a test here.

For every lesson, ``tests/e2e/answers/answers_NN_name.py`` holds answers the way students write them:
``RIGHT`` ones must score full marks; each ``WRONG`` one names the constraint(s) it breaks and must
lose exactly the checks that enforce them, no more and no fewer. Every constraint has a wrong answer
that breaks it alone. They are graded by the real grader (``gpulab.grading``),
each exercise in its own kernel, several students' answers at a time: submission k holds the
k-th case of every exercise, and the solution where an exercise has fewer cases.

Three answers of every exercise are not written but made from its solution (``tests/e2e/answers/idle.py``): the
answer cell left empty, the same functions and methods raising ``NotImplementedError``, and the same
returning ``None``. None of them does the task, so each must fail every check of its exercise: a check
of a property (no copy, no sync, memory given back) that such an answer passes hands out a free point.

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

from gpulab import course, grading
from gpulab.grading import notebooks, sandbox

from conftest import ROOT

ANSWERS = ROOT / "tests" / "e2e" / "answers"
_idle = importlib.util.spec_from_file_location("idle_answers", ANSWERS / "idle.py")
idle = importlib.util.module_from_spec(_idle)
_idle.loader.exec_module(idle)
# The answers test the exercises, not the sandbox (tests/unit/grading/test_sandbox.py does): graded in one where there is one.
SANDBOXED = not sandbox.unavailable()
LESSONS = sorted(path.stem for path in (ROOT / "solutions").glob("*.ipynb"))
# A cell's limit: a hang guard, not a speed limit, as in the simulated course's grading. Every graded kernel starts
# with an empty /tmp, so each compiles from nothing: lesson 09's compiling check took over 60 s there in a CI run
# while the suite's background runs shared the machine (about 11 s on a quiet one).
TIMEOUT_S = 300


def cases_of(stem: str):
    """{exercise: [(kind, name, source, checks it must fail)]}, right answers first."""
    spec = importlib.util.spec_from_file_location(f"answers_{stem}", ANSWERS / f"answers_{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = {}
    for exercise, answers in module.RIGHT.items():
        cases.setdefault(exercise, []).extend(("right", name, source.strip(), set(), False) for name, source in answers)
    for exercise, answers in module.WRONG.items():
        enforcing = enforcers(stem).get(exercise, {})
        cases.setdefault(exercise, []).extend(
            (
                "wrong",
                name,
                source.strip(),
                set().union(*(enforcing.get(c, {f"(no check enforces {c!r})"}) for c in broken_constraints(breaks))),
                under_load,
            )
            for name, source, breaks, under_load in answers
        )
    every_check = {exercise: set(task["checks"]) for exercise, task in tasks(stem).items()}
    for exercise, source in solution_answers(stem).items():
        cases.setdefault(exercise, []).extend(
            ("idle", name, idle_source, every_check[exercise], False) for name, idle_source in idle.answers(source)
        )
    return cases


def broken_constraints(breaks) -> tuple[str, ...]:
    """What a wrong answer breaks: one constraint's id, or a tuple of them."""
    return (breaks,) if isinstance(breaks, str) else tuple(breaks)


def tasks(stem: str) -> dict[str, dict]:
    """{exercise: {"task": its task's text, "constraints": {id: quoted sentence}, "checks": {check: enforced ids}}}."""
    notebook = course.read_notebook(ROOT / "solutions" / f"{stem}.ipynb")
    found: dict[str, dict] = {}
    text: list[str] = []
    for cell in notebook["cells"]:
        role = cell.get("metadata", {}).get("gpulab", {})
        if cell["cell_type"] == "markdown":
            text.append(course.cell_source(cell))
        elif "answer" in role:
            found[role["answer"]] = {
                "task": "\n".join(text),
                "constraints": dict(role.get("constraints", {})),
                "checks": {},
            }
            text = []
        elif "check" in role:
            found.setdefault(role["exercise"], {"task": "", "constraints": {}, "checks": {}})["checks"][
                role["check"]
            ] = set(role.get("enforces", ()))
            text = []
    return found


def enforcers(stem: str) -> dict[str, dict[str, set]]:
    """{exercise: {constraint: the checks that enforce it}}."""
    found: dict[str, dict[str, set]] = {}
    for exercise, task in tasks(stem).items():
        for check, enforced in task["checks"].items():
            for constraint in enforced:
                found.setdefault(exercise, {}).setdefault(constraint, set()).add(check)
    return found


def _plain(text: str) -> str:
    """Markdown as read: no emphasis, code ticks or line breaks."""
    return " ".join(text.replace("**", "").replace("`", "").replace("*", "").split())


def solution_answers(stem: str) -> dict[str, str]:
    notebook = course.read_notebook(ROOT / "solutions" / f"{stem}.ipynb")
    return {
        notebooks.answer_id(cell): course.cell_source(cell) for cell in notebook["cells"] if notebooks.answer_id(cell)
    }


def submission(stem: str, answers: dict[str, str], path: Path) -> Path:
    """The lesson's exercise notebook with ``answers`` (exercise → source) in its answer cells."""
    notebook = copy.deepcopy(course.read_notebook(ROOT / "exercises" / f"{stem}.ipynb"))
    for cell in notebook["cells"]:
        exercise = notebooks.answer_id(cell)
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
            assert kinds.count("right") >= 3 and kinds.count("wrong") >= 1 and kinds.count("idle") == 3, (
                f"{stem} {exercise}: {kinds}"
            )


@pytest.mark.parametrize("stem", LESSONS)
def test_every_constraint_of_every_task_is_quoted_and_enforced_by_a_check(stem):
    problems = []
    for exercise, task in tasks(stem).items():
        if not task["constraints"]:
            problems.append(f"{exercise}: its answer cell lists no constraints")
        for constraint, quote in task["constraints"].items():
            if _plain(quote) not in _plain(task["task"]):
                problems.append(f"{exercise}: constraint {constraint!r} quotes {quote!r}, which its task does not say")
            if not any(constraint in enforced for enforced in task["checks"].values()):
                problems.append(f"{exercise}: no check enforces constraint {constraint!r} ({quote!r})")
        for check, enforced in task["checks"].items():
            if not enforced:
                problems.append(f"{exercise}: check {check!r} enforces no constraint")
            for unknown in sorted(enforced - set(task["constraints"])):
                problems.append(f"{exercise}: check {check!r} enforces {unknown!r}, not a constraint of the task")
    assert not problems, f"{stem}:\n" + "\n".join(problems)


@pytest.mark.parametrize("stem", LESSONS)
def test_every_constraint_has_a_wrong_answer_that_breaks_it_alone(stem):
    spec = importlib.util.spec_from_file_location(f"answers_{stem}", ANSWERS / f"answers_{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = []
    for exercise, task in tasks(stem).items():
        alone = {broken_constraints(breaks) for _, _, breaks, _ in module.WRONG.get(exercise, [])}
        for constraint in task["constraints"]:
            if (constraint,) not in alone:
                missing.append(f"{exercise}: no wrong answer breaks {constraint!r} alone")
        for breaks in alone:
            for unknown in set(breaks) - set(task["constraints"]):
                missing.append(f"{exercise}: a wrong answer breaks {unknown!r}, not a constraint of the task")
    assert not missing, f"{stem}:\n" + "\n".join(missing)


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
    """A lesson's rounds, graded when its first test asks (``-k 04_memory`` grades that lesson alone), together
    as a class's submissions are (one call), so that the grader keeps its kernels busy. Exercises whose cases are
    used up are not graded again (``only``): the solution's full marks are checked below."""
    folder = tmp_path_factory.mktemp("answers")
    reports = {}

    def of(stem: str) -> dict:
        if stem in reports:
            return reports[stem]
        submissions = []
        for number in range(rounds(stem)):
            answers, expected = round_of(stem, number)
            submissions.append((number, submission(stem, answers, folder / f"{stem}-{number}.ipynb"), sorted(expected)))
        found = grading.grade_many(
            [path for _, path, _ in submissions],
            timeout=TIMEOUT_S,
            lesson=stem,
            only={path: exercises for _, path, exercises in submissions},
            sandboxed=SANDBOXED,
        )
        reports[stem] = {number: report for (number, _, _), report in zip(submissions, found)}
        return reports[stem]

    return of


@pytest.mark.parametrize("stem, number", ROUNDS)
def test_answers_score_what_they_deserve(stem, number, graded):
    _, expected = round_of(stem, number)
    report = graded(stem)[number]
    assert isinstance(report, grading.Report), f"{stem}, submission {number}: {report}"
    failed = failed_checks(report)
    wrong = {
        exercise: (what, sorted(fails), failed.get(exercise, {}))
        for exercise, (what, fails) in expected.items()
        if set(failed.get(exercise, {})) != fails
    }
    assert not wrong, "\n".join(
        f"{exercise}, {what}: should fail {fails}, failed {got}" for exercise, (what, fails, got) in wrong.items()
    )


@pytest.mark.parametrize("stem", LESSONS)
def test_grades_do_not_depend_on_a_quiet_machine(stem, tmp_path):
    # The solution, and the wrong answers marked for it (graded alone: the rest of that submission is the
    # solution's, graded just before), while another process keeps a core busy.
    marked = {}
    for exercise, exercise_cases in cases_of(stem).items():
        chosen = [case for case in exercise_cases if case[4]]
        if chosen:
            _, name, source, fails, _ = chosen[0]
            marked[exercise] = (source, fails)
    wrong = submission(
        stem,
        dict(solution_answers(stem), **{e: source for e, (source, _) in marked.items()}),
        tmp_path / f"{stem}-wrong.ipynb",
    )
    solution_file = ROOT / "solutions" / f"{stem}.ipynb"
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        solution, *graded_wrong = grading.grade_many(
            [solution_file] + ([wrong] if marked else []),
            timeout=TIMEOUT_S,
            lesson=stem,
            only={solution_file: None, wrong: sorted(marked)},
            sandboxed=SANDBOXED,
        )
    finally:
        busy.kill()
        busy.wait()
    assert solution.total == solution.max_total, f"{stem}, graded under load:\n{solution.table()}"
    if marked:
        failed = failed_checks(graded_wrong[0])
        for exercise, (_, fails) in marked.items():
            assert set(failed[exercise]) == fails, (
                f"{stem} {exercise}, graded under load: should fail {sorted(fails)}, failed {failed[exercise]}"
            )


def solution_namespace(stem: str, exercise: str) -> dict:
    """What the solution notebook's code defines up to ``exercise``'s answer: its setup cells and that answer."""
    namespace: dict = {"__name__": f"solution_{stem}"}
    for cell in course.read_notebook(ROOT / "solutions" / f"{stem}.ipynb")["cells"]:
        role = cell.get("metadata", {}).get("gpulab", {})
        if cell["cell_type"] != "code" or "check" in role or "canary" in role:
            continue
        if "answer" in role and role["answer"] != exercise:
            continue
        source = course.cell_source(cell)
        if "google.colab" in source:
            continue  # the Colab install cell
        exec(compile(source, f"<{stem} {role.get('answer', 'setup')}>", "exec"), namespace)
        if role.get("answer") == exercise:
            return namespace
    raise KeyError(f"{stem} has no exercise {exercise!r}")


@pytest.mark.parametrize("stem", LESSONS)
def test_reference_solutions_are_right_at_their_edges(stem):
    # EDGES: {exercise: [(what, code)]}: each code runs after the solution's own answer and asserts.
    spec = importlib.util.spec_from_file_location(f"answers_{stem}", ANSWERS / f"answers_{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    edges = getattr(module, "EDGES", {})
    assert edges, f"{stem}: no edge cases for its reference solutions (EDGES in answers_{stem}.py)"
    for exercise, cases in edges.items():
        for what, code in cases:
            namespace = solution_namespace(stem, exercise)
            try:
                exec(compile(code.strip(), f"<{stem} {exercise}: {what}>", "exec"), namespace)
            except AssertionError as failure:
                raise AssertionError(
                    f"{stem} {exercise}, the reference solution at an edge ({what}): {failure}"
                ) from None
