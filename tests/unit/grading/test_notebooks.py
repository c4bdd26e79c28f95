"""Notebook roles, assign, and submissions read: what the grader makes of solution and exercise notebooks,
and one line that says why a submission cannot be graded."""

import json
import shutil

import pytest

from gpulab import course, grading
from gpulab.grading import notebooks

from conftest import ROOT
from tiny_lesson import exercise_of_tiny, run_grade, tiny_lesson, tiny_solutions


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_solutions(tmp_path_factory)


def test_stripping_replaces_solutions_and_removes_hidden_tests():
    source = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"
    assert notebooks.strip_solutions(source) == "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert notebooks.strip_hidden_tests("a\n### BEGIN HIDDEN TESTS\nsecret\n### END HIDDEN TESTS\nb") == "a\nb"
    for broken in ("### BEGIN SOLUTION\nx", "### END SOLUTION", "### BEGIN SOLUTION\n### BEGIN SOLUTION"):
        with pytest.raises(ValueError):
            notebooks.strip_solutions(broken)


def test_exercises_are_what_assign_makes_from_solutions():
    assert notebooks.assign(ROOT, check=True) == [], "exercises/ is out of date: run `gpulab assign`"
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        exercise = course.read_notebook(ROOT / "exercises" / solution.name)
        text = json.dumps(exercise)
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        assert "raise NotImplementedError()" in text
        assert all(not c.get("outputs") for c in exercise["cells"])


def test_assign_writes_missing_exercises(tmp_path):
    (tmp_path / "solutions").mkdir()
    course.write_notebook(
        course.read_notebook(ROOT / "solutions" / "01_devices.ipynb"), tmp_path / "solutions" / "01_devices.ipynb"
    )
    assert notebooks.assign(tmp_path) == ["exercises/01_devices.ipynb"]
    assert notebooks.assign(tmp_path) == []
    assert course.header_matches(
        course.read_notebook(tmp_path / "exercises" / "01_devices.ipynb"), "exercises/01_devices.ipynb"
    )


def test_every_lesson_exercise_has_an_answer_and_checks_with_points():
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        parts = notebooks.exercises(course.read_notebook(solution))
        assert len(parts) >= 4, f"{solution.name} has {len(parts)} exercises"


def test_an_exercise_keeps_no_canary_and_an_exercise_without_checks_is_refused():
    made = notebooks.make_exercise(tiny_lesson(), "exercises/01_devices.ipynb")
    assert not [c for c in made["cells"] if "canary" in notebooks.cell_role(c)], "students never see them"
    assert [notebooks.answer_id(c) for c in made["cells"] if notebooks.answer_id(c)] == [
        "add",
        "square",
        "root",
        "const",
    ]
    lonely = tiny_lesson()
    lonely["cells"] = [
        c for c in lonely["cells"] if notebooks.check_role(c) is None or notebooks.check_role(c)["exercise"] != "root"
    ]
    with pytest.raises(ValueError, match="'root' needs one answer cell and at least one check cell"):
        notebooks.exercises(lonely)


@pytest.mark.parametrize(
    "content, reason",
    [
        ("print('hello')\n", "invalid JSON"),
        ("", "empty"),
        ('{"cells": [', "invalid JSON"),
        ('{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}', "format 3"),
        ("[1, 2, 3]", "not a Jupyter notebook"),
    ],
)
def test_unreadable_submissions_exit_2_with_one_line(tmp_path, content, reason):
    path = tmp_path / "bad.ipynb"
    path.write_text(content)
    done = run_grade(path)
    assert done.returncode == 2
    assert reason in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert path.read_text() == content


def _notebook_text(change):
    made = exercise_of_tiny()
    change(made)
    return json.dumps(made)


def _set(path, value):
    def change(made):
        target = made
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "name, change, reason",
    [
        ("01_devices.ipynb", _set(["metadata"], None), "its metadata is null"),
        ("01_devices.ipynb", _set(["metadata", "gpulab"], "01_devices"), "its gpulab metadata is a str"),
        ("01_devices.ipynb", _set(["cells", 2, "metadata"], ["answer"]), "cell 3's metadata is a list"),
        ("01_devices.ipynb", _set(["cells", 2, "metadata", "gpulab"], "add"), "cell 3's gpulab metadata is a str"),
        ("01_devices.ipynb", _set(["cells", 2, "source"], [1, 2, 3]), "cell 3's source is a list, not text"),
        ("01_devices.ipynb", _set(["cells", 2, "metadata", "gpulab", "answer"], 7), "cell 3's answer id is a int"),
        ("01_devices.ipynb", _set(["cells"], {"0": 1}), "no list of cells"),
        (
            "01_devices.ipynb",
            _set(["metadata", "gpulab", "lesson"], "02_copying"),
            "metadata says lesson 02_copying, its file name 01_devices",
        ),
        (
            "homework.ipynb",
            _set(["metadata", "gpulab", "lesson"], "09_nothing"),
            "no solution notebook for lesson '09_nothing'",
        ),
        ("homework.ipynb", _set(["metadata", "gpulab", "lesson"], "../../etc/passwd"), "names no lesson"),
    ],
)
def test_bad_input_exits_2_with_one_line(tiny, tmp_path, name, change, reason):
    path = tmp_path / name
    text = _notebook_text(change)
    path.write_text(text)
    done = run_grade(path, solutions=tiny)
    assert done.returncode == 2, done.stdout + done.stderr
    assert reason in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == "" and path.read_text() == text


def test_a_lesson_other_than_the_one_chosen_is_reported(tiny, tmp_path):
    path = tmp_path / "work.ipynb"
    path.write_text(_notebook_text(lambda made: None))  # its metadata says 01_devices
    done = run_grade(path, "--lesson", "02_copying", solutions=tiny)
    assert done.returncode == 2 and "metadata says lesson 01_devices, but --lesson says 02_copying" in done.stderr


def test_every_exercise_and_solution_notebook_carries_its_lesson():
    for folder in ("exercises", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            assert course.read_notebook(path)["metadata"].get("gpulab", {}).get("lesson") == path.stem, path


# Canvas, Moodle (its folder's name, then the file's), Blackboard, a second download, and a name with no lesson in it.
LMS_NAMES = [
    "doe_jane_12345_6789012_{lesson}.ipynb",
    "Jane Doe_4821_assignsubmission_file_/{lesson}.ipynb",
    "Assignment_doejane_attempt_2026-11-25-10-00-00_{lesson}-1.ipynb",
    "{lesson} (2).ipynb",
    "0123_submission.ipynb",
]


@pytest.mark.parametrize("lesson", sorted(p.stem for p in (ROOT / "exercises").glob("*.ipynb")))
def test_a_submission_renamed_by_a_learning_management_system_is_graded_as_its_lesson(lesson, tmp_path):
    # Only the lesson is asked for (an exercise that does not exist: no kernel starts); grading every lesson under
    # every name would take minutes. The simulated course grades each solution so renamed.
    paths = []
    for name in LMS_NAMES:
        path = tmp_path / name.format(lesson=lesson)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "exercises" / f"{lesson}.ipynb", path)
        paths.append(path)
    for path, result in zip(paths, grading.grade_many(paths, only=["no-such-exercise"], sandboxed=False)):
        assert isinstance(result, grading.SubmissionError), (path.name, result)
        assert f"lesson {lesson} has no exercise no-such-exercise" in str(result), (path.name, str(result))


def test_a_class_folder_gives_each_notebook_its_student(tmp_path):
    (tmp_path / "class" / "Jane Doe_4821_assignsubmission_file_").mkdir(parents=True)
    (tmp_path / "class" / "Jane Doe_4821_assignsubmission_file_" / "01_devices.ipynb").write_text("{}")
    (tmp_path / "class" / "doe_john_01_devices.ipynb").write_text("{}")
    (tmp_path / "class" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "class" / ".ipynb_checkpoints" / "x-checkpoint.ipynb").write_text("{}")
    (tmp_path / "alone.ipynb").write_text("{}")
    found = notebooks.submissions_in([tmp_path / "class", tmp_path / "alone.ipynb"])
    assert [(student, path.name) for student, path in found] == [
        ("Jane Doe_4821_assignsubmission_file_", "01_devices.ipynb"),
        ("doe_john_01_devices", "doe_john_01_devices.ipynb"),
        ("alone", "alone.ipynb"),
    ]


def test_no_solutions_no_grading(tmp_path):
    done = run_grade(ROOT / "exercises" / "01_devices.ipynb", solutions=tmp_path / "nowhere")
    assert done.returncode == 2 and "no such folder" in done.stderr


def test_a_missing_file_exits_2(tmp_path):
    done = run_grade(tmp_path / "nothing.ipynb")
    assert done.returncode == 2 and "no such file" in done.stderr


def test_without_solutions_named_the_checkouts_are_used():
    assert notebooks.solutions_folder() == ROOT / "solutions"
    assert notebooks.solution_path("01_devices") == ROOT / "solutions" / "01_devices.ipynb"


def hints_of(cell):
    """The Hints a hints cell shows, made by running it."""
    import gpulab.quiz

    made = []

    class Recording(gpulab.quiz.Hints):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gpulab.quiz, "Hints", Recording)
        exec(course.cell_source(cell), {})
    (hints,) = made
    return hints


def test_every_exercise_has_one_to_three_hints_just_above_its_answer():
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        notebook = course.read_notebook(solution)
        cells = notebook["cells"]
        hinted = [notebooks.hints_id(cell) for cell in cells if notebooks.hints_id(cell) is not None]
        parts = notebooks.exercises(notebook)
        assert sorted(hinted) == sorted(parts), f"{solution.name}: hints for {hinted}, exercises {sorted(parts)}"
        for exercise, found in parts.items():
            above = cells[found["answer"] - 1]
            assert notebooks.hints_id(above) == exercise, (
                f"{solution.name}: {exercise}'s hints are not above its answer"
            )
            assert 1 <= len(hints_of(above).hints) <= 3


def _plain_code(text: str) -> str:
    return " ".join(text.replace("`", "").replace('"', "'").split())


def test_no_hint_gives_a_line_of_the_solution():
    # A line of the solution that the task itself does not already give.
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        cells = course.read_notebook(solution)["cells"]
        hints = {notebooks.hints_id(c): hints_of(c).hints for c in cells if notebooks.hints_id(c)}
        task = []
        for cell in cells:
            if cell["cell_type"] == "markdown":
                task.append(_plain_code(course.cell_source(cell)))
            exercise = notebooks.answer_id(cell)
            if exercise is None:
                continue
            source = course.cell_source(cell)
            solved = set(source.splitlines()) - set(notebooks.strip_solutions(source).splitlines())
            lines = {
                _plain_code(line) for line in solved if len(line.strip()) >= 16 and not line.strip().startswith("#")
            }
            told = " ".join(task)
            for hint in hints[exercise]:
                given = [line for line in lines if line in _plain_code(hint) and line not in told]
                assert not given, f"{solution.name}: a hint of {exercise} gives the solution's line {given[0]!r}"
            task = []


def test_exercises_keep_the_hints_as_they_are():
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        hints = [c for c in course.read_notebook(solution)["cells"] if notebooks.hints_id(c)]
        kept = [c for c in course.read_notebook(ROOT / "exercises" / solution.name)["cells"] if notebooks.hints_id(c)]
        assert [(c["id"], course.cell_source(c), c["metadata"]) for c in kept] == [
            (c["id"], course.cell_source(c), c["metadata"]) for c in hints
        ], solution.name
