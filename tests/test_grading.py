"""The exercise pipeline: assign, and a grader that hostile submissions cannot fool, hang or crash.

Most tests grade a tiny lesson written here (no torch in its kernel, so each grade takes
seconds); the last ones grade the real lesson 01.
"""

import copy
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpulab import course, grading

from conftest import ROOT, code_cell, notebook

TIMEOUT = "4"


def role_cell(source, role=None):
    return code_cell(source, {"gpulab": role} if role else None)


def tiny_lesson():
    """Four exercises with one to two checks each; the answer region is marked as in the course."""
    def exercise(name, answer, checks):
        cells = [role_cell(answer, {"answer": name})]
        for number, (points, source) in enumerate(checks):
            cells.append(role_cell(source, {"check": f"{name}-{number}", "exercise": name, "points": points}))
        return cells

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# tiny"},
        role_cell("import math"),
        *exercise("add", "def add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION",
                  [(1, "assert add(1, 2) == 3, f'expected 3, got {add(1, 2)}'"),
                   (2, "assert add('a', 'b') == 'ab'\n### BEGIN HIDDEN TESTS\nassert add(2.5, 0.5) == 3.0\n### END HIDDEN TESTS")]),
        *exercise("square", "def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION",
                  [(2, "assert square(3) == 9, f'expected 9, got {square(3)}'")]),
        *exercise("root", "def root(x):\n    ### BEGIN SOLUTION\n    return math.sqrt(x)\n    ### END SOLUTION",
                  [(1, "assert root(9) == 3")]),
        *exercise("const", "### BEGIN SOLUTION\nANSWER = 42\n### END SOLUTION",
                  [(1, "assert ANSWER == 42, f'expected 42, got {ANSWER}'")]),
    ]
    return notebook(cells, gpulab={"lesson": "01_devices"})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("solutions")
    course.write_notebook(tiny_lesson(), folder / "01_devices.ipynb")
    saved = os.environ.get("GPULAB_SOLUTIONS")
    os.environ["GPULAB_SOLUTIONS"] = str(folder)
    yield folder
    if saved is None:
        del os.environ["GPULAB_SOLUTIONS"]
    else:
        os.environ["GPULAB_SOLUTIONS"] = saved


def submit(folder, answers=None, transform=None, name="submission.ipynb"):
    """The tiny lesson's exercise notebook with some answers replaced, written to ``folder``."""
    notebook = _exercise_of_tiny()
    for cell in notebook["cells"]:
        exercise = grading.answer_id(cell)
        if answers and exercise in answers:
            cell["source"] = answers[exercise]
    if transform:
        transform(notebook)
    path = Path(folder) / name
    path.write_text(json.dumps(notebook))
    return path


def _exercise_of_tiny():
    notebook = copy.deepcopy(tiny_lesson())
    for cell in notebook["cells"]:
        if grading.answer_id(cell):
            cell["source"] = grading.strip_solutions(cell["source"])
        elif grading.check_role(cell):
            cell["source"] = grading.strip_hidden_tests(cell["source"])
    return notebook


def run_grade(path, *extra, cwd=None, timeout=TIMEOUT):
    done = subprocess.run([sys.executable, "-m", "gpulab", "grade", str(path), "--timeout", timeout, *extra],
                          capture_output=True, text=True, cwd=cwd, timeout=600, env=dict(os.environ))
    return done


def scores(report_json):
    return {e["id"]: e["points"] for e in report_json["exercises"]}


CORRECT = {"add": "def add(a, b):\n    return a + b", "square": "def square(x):\n    return x ** 2",
           "root": "def root(x):\n    return x ** 0.5", "const": "ANSWER = 42"}


# ------------------------------------------------------------------ assign


def test_stripping_replaces_solutions_and_removes_hidden_tests():
    source = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"
    assert grading.strip_solutions(source) == "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert grading.strip_hidden_tests("a\n### BEGIN HIDDEN TESTS\nsecret\n### END HIDDEN TESTS\nb") == "a\nb"
    for broken in ("### BEGIN SOLUTION\nx", "### END SOLUTION", "### BEGIN SOLUTION\n### BEGIN SOLUTION"):
        with pytest.raises(ValueError):
            grading.strip_solutions(broken)


def test_exercises_are_what_assign_makes_from_solutions():
    assert grading.assign(ROOT, check=True) == [], "exercises/ is out of date: run `gpulab assign`"
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        exercise = course.read_notebook(ROOT / "exercises" / solution.name)
        text = json.dumps(exercise)
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        assert "raise NotImplementedError()" in text
        assert all(not c.get("outputs") for c in exercise["cells"])


def test_assign_writes_missing_exercises(tmp_path):
    (tmp_path / "solutions").mkdir()
    course.write_notebook(course.read_notebook(ROOT / "solutions" / "01_devices.ipynb"),
                          tmp_path / "solutions" / "01_devices.ipynb")
    assert grading.assign(tmp_path) == ["exercises/01_devices.ipynb"]
    assert grading.assign(tmp_path) == []
    assert course.header_matches(course.read_notebook(tmp_path / "exercises" / "01_devices.ipynb"),
                                 "exercises/01_devices.ipynb")


def test_every_lesson_exercise_has_an_answer_and_checks_with_points():
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        parts = grading.exercises(course.read_notebook(solution))
        assert len(parts) >= 4, f"{solution.name} has {len(parts)} exercises"


# ------------------------------------------------------------------ grading the tiny lesson


def test_a_correct_submission_scores_full_marks_from_another_directory(tiny, tmp_path):
    path = submit(tmp_path, CORRECT)
    output = tmp_path / "scores.json"
    done = run_grade(path, "--json", str(output), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert report["total"] == report["max"] == 7
    assert "total: 7 / 7" in done.stdout


def test_the_unsolved_exercise_scores_zero(tiny, tmp_path):
    report = grading.grade(submit(tmp_path), timeout=float(TIMEOUT))
    assert report.total == 0 and report.max_total == 7
    assert all(c.outcome == "error" and "NotImplementedError" in c.message for c in report.checks)
    # The top-level stub fails in the answer cell itself, and the message says so.
    assert by_check(report)["const-0"].message.startswith("your answer cell failed (NotImplementedError")


@pytest.fixture(scope="module")
def hostile(tiny, tmp_path_factory):
    """One submission that does every bad thing at once, one exercise each."""
    folder = tmp_path_factory.mktemp("hostile")
    answers = {
        "add": "def add(a, b) return a + b",                      # syntax error
        "square": "while True:\n    pass",                        # never finishes
        "root": "import os\nos._exit(1)",                         # kills its kernel
        "const": "print('x' * 5_000_000)\nANSWER = 42",           # huge output, but right
    }
    path = submit(folder, answers)
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    temp_before = {p.name for p in Path(tempfile.gettempdir()).glob("gpulab-grade-*")}
    report = grading.grade(path, timeout=float(TIMEOUT))
    after = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    temp_after = {p.name for p in Path(tempfile.gettempdir()).glob("gpulab-grade-*")}
    return {"report": report, "unchanged": before == after, "new_temp": temp_after - temp_before}


def by_check(report):
    return {c.check: c for c in report.checks}


def test_a_syntax_error_scores_zero_for_that_exercise_only(hostile):
    checks = by_check(hostile["report"])
    assert checks["add-0"].points == checks["add-1"].points == 0
    assert "SyntaxError" in checks["add-0"].message or checks["add-0"].outcome == "error"
    assert checks["const-0"].points == 1


def test_an_infinite_loop_times_out_and_the_rest_is_graded(hostile):
    checks = by_check(hostile["report"])
    assert checks["square-0"].points == 0
    assert checks["square-0"].outcome in {"timeout", "error", "not run"}
    assert checks["const-0"].outcome == "passed"


def test_a_dying_kernel_costs_only_its_exercise(hostile):
    checks = by_check(hostile["report"])
    assert checks["root-0"].points == 0 and checks["root-0"].outcome != "passed"
    assert hostile["report"].total == 1  # const, and nothing else


def test_huge_output_does_not_break_grading(hostile):
    assert by_check(hostile["report"])["const-0"].outcome == "passed"


def test_grading_never_modifies_the_submission(hostile):
    assert hostile["unchanged"]


def test_grading_leaves_no_temporary_files_or_kernels(hostile):
    assert hostile["new_temp"] == set()
    leftovers = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="ignore")
        except OSError:
            continue
        if "gpulab-grade-" in cmdline:
            leftovers.append(cmdline)
    assert leftovers == []


def test_an_exception_is_reported_with_its_message(tiny, tmp_path):
    answers = dict(CORRECT, square="def square(x):\n    raise ValueError('no squares today')")
    report = grading.grade(submit(tmp_path, answers), timeout=float(TIMEOUT))
    check = by_check(report)["square-0"]
    assert check.points == 0 and check.outcome == "error" and "no squares today" in check.message
    assert report.total == 5


def test_a_wrong_answer_fails_with_the_checks_message(tiny, tmp_path):
    report = grading.grade(submit(tmp_path, dict(CORRECT, const="ANSWER = 41")), timeout=float(TIMEOUT))
    check = by_check(report)["const-0"]
    assert check.outcome == "failed" and "expected 42, got 41" in check.message


def test_hidden_tests_count(tiny, tmp_path):
    # Passes the visible checks (ints and strings) but not the hidden one (floats).
    answers = dict(CORRECT, add="def add(a, b):\n    return a + b if not isinstance(a, float) else 0")
    report = grading.grade(submit(tmp_path, answers), timeout=float(TIMEOUT))
    assert by_check(report)["add-0"].points == 1 and by_check(report)["add-1"].points == 0


def test_answers_are_matched_by_id_not_position(tiny, tmp_path):
    def shuffle_and_damage(notebook):
        cells = notebook["cells"]
        answer_cells = [c for c in cells if grading.answer_id(c)]
        for cell in answer_cells:
            cells.remove(cell)
        cells.extend(reversed(answer_cells))                       # reordered, at the end
        cells[:] = [c for c in cells if grading.answer_id(c) != "root"]   # one deleted
        for cell in cells:
            if grading.answer_id(cell) == "square":
                cell["metadata"] = {}                              # one stripped of its id
            if grading.check_role(cell):
                cell["source"] = "assert True"                     # checks edited

    answers = dict(CORRECT, const="ANSWER = 41")
    report = grading.grade(submit(tmp_path, answers, shuffle_and_damage), timeout=float(TIMEOUT))
    points = {e: p for e, (p, _) in report.by_exercise().items()}
    assert points == {"add": 3, "square": 0, "root": 0, "const": 0}
    assert any("'root'" in note for note in report.notes) and any("'square'" in note for note in report.notes)


@pytest.mark.parametrize("content, reason", [
    ("print('hello')\n", "invalid JSON"),
    ("", "empty"),
    ('{"cells": [', "invalid JSON"),
    ('{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}', "format 3"),
    ('[1, 2, 3]', "not a Jupyter notebook"),
])
def test_unreadable_submissions_exit_2_with_one_line(tmp_path, content, reason):
    path = tmp_path / "bad.ipynb"
    path.write_text(content)
    done = run_grade(path)
    assert done.returncode == 2
    assert reason in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert path.read_text() == content


def test_one_exercise_can_be_graded_alone(tiny, tmp_path):
    path = submit(tmp_path, CORRECT)
    output = tmp_path / "one.json"
    done = run_grade(path, "--exercise", "square", "--json", str(output))
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert [e["id"] for e in report["exercises"]] == ["square"] and report["total"] == report["max"] == 2
    refused = run_grade(path, "--exercise", "cube")
    assert refused.returncode == 2 and "no exercise cube" in refused.stderr


def test_exercises_graded_side_by_side_share_the_cores(tiny, tmp_path, monkeypatch):
    # Two kernels at once on four cores: two threads each, so torch's parallel ops never wait for
    # a thread the OS parked. The answer reads what its kernel was given.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    answer = "import os\nANSWER = 42 if os.environ.get('OMP_NUM_THREADS') == '2' else os.environ.get('OMP_NUM_THREADS')"
    report = grading.grade(submit(tmp_path, {**CORRECT, "const": answer}), timeout=float(TIMEOUT), workers=2)
    assert by_check(report)["const-0"].outcome == "passed", by_check(report)["const-0"].message
    alone = grading.grade(submit(tmp_path, {**CORRECT, "const": answer.replace("'2'", "'4'")}),
                          timeout=float(TIMEOUT), workers=2, only=["const"])
    assert by_check(alone)["const-0"].outcome == "passed", by_check(alone)["const-0"].message


def test_a_missing_file_exits_2(tmp_path):
    done = run_grade(tmp_path / "nothing.ipynb")
    assert done.returncode == 2 and "no such file" in done.stderr


# ------------------------------------------------------------------ the real lessons


@pytest.mark.parametrize("name", [path.name for path in sorted((ROOT / "exercises").glob("*.ipynb"))])
def test_untouched_exercises_score_zero(name, tmp_path, monkeypatch):
    # That every solution scores full marks is checked in tests/test_answers.py, on a busy machine.
    monkeypatch.delenv("GPULAB_SOLUTIONS", raising=False)
    output = tmp_path / "report.json"
    done = run_grade(ROOT / "exercises" / name, "--json", str(output), cwd=tmp_path, timeout="60")
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert report["total"] == 0 and report["max"] > 0, done.stdout


# ------------------------------------------------------------------ helpers for check cells


def test_recorded_time_fn_sees_every_way_of_calling_it_and_leaves_the_namespace_as_it_was():
    import gpulab
    from gpulab import timing

    namespace = {"time_fn": timing.time_fn, "other": 1}
    with grading.recorded_time_fn(namespace) as calls:
        gpulab.time_fn(lambda: None, device="cpu", budget_s=0.01, flops=10)
        namespace["time_fn"](lambda: None, device="cpu", budget_s=0.01)
        timing.time_fn(lambda: None, device="cpu", budget_s=0.01)
        namespace["made_inside"] = True
    assert [call.kwargs.get("flops") for call in calls] == [10, None, None]
    assert namespace == {"time_fn": timing.time_fn, "other": 1, "made_inside": True}
    assert gpulab.time_fn is timing.time_fn


def test_recorded_time_fn_can_call_instead_of_timing():
    ran = []
    with grading.recorded_time_fn(run=False) as calls:
        from gpulab import timing

        result = timing.time_fn(lambda: ran.append(1), device="cuda:0", bytes_moved=8)
    assert ran == [1] and len(calls) == 1
    assert result.clock == "not timed" and result.bytes_moved == 8 and result.device == "cuda:0"
