"""The exercise pipeline: assign, and a grader that hostile submissions cannot fool, hang or crash.

Most tests grade a tiny lesson written here (no torch in its kernel, so each grade takes
seconds); the last ones grade the real lesson 01.
"""

import copy
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gpulab import course, distributed, grading, sandbox

from conftest import ROOT, code_cell, notebook, simulates

TIMEOUT = "4"
SANDBOXED = not sandbox.unavailable()
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason=sandbox.unavailable())


def role_cell(source, role=None):
    return code_cell(source, {"gpulab": role} if role else None)


def tiny_lesson():
    """Four exercises with one to two checks each; the answer region is marked as in the course."""
    def exercise(name, answer, checks, canaries=()):
        cells = [role_cell(answer, {"answer": name})]
        for number, (points, source) in enumerate(checks):
            cells.append(role_cell(source, {"check": f"{name}-{number}", "exercise": name, "points": points}))
        for number, source in enumerate(canaries):      # the instructor's: they must fail
            cells.append(role_cell(source, {"canary": f"{name}-must-fail-{number}", "exercise": name}))
        return cells

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# tiny"},
        role_cell("import math"),
        *exercise("add", "def add(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION",
                  [(1, "assert add(1, 2) == 3, f'expected 3, got {add(1, 2)}'"),
                   (2, "assert add('a', 'b') == 'ab'\n### BEGIN HIDDEN TESTS\nassert add(2.5, 0.5) == 3.0\n### END HIDDEN TESTS")],
                  ["assert add(1, 2) == 4"]),
        *exercise("square", "def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION",
                  [(2, "assert square(3) == 9, f'expected 9, got {square(3)}'")]),
        *exercise("root", "def root(x):\n    ### BEGIN SOLUTION\n    return math.sqrt(x)\n    ### END SOLUTION",
                  [(1, "assert math.isclose(root(9), 3)")]),
        *exercise("const", "### BEGIN SOLUTION\nANSWER = 42\n### END SOLUTION",
                  [(1, "assert ANSWER == 42, f'expected 42, got {ANSWER}'")]),
    ]
    return notebook(cells, gpulab={"lesson": "01_devices"})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("solutions")
    course.write_notebook(tiny_lesson(), folder / "01_devices.ipynb")
    return folder


def grade(path, tiny, **kwargs):
    return grading.grade(path, timeout=float(TIMEOUT), solutions=tiny, sandboxed=SANDBOXED, **kwargs)


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
    notebook["cells"] = [c for c in notebook["cells"] if "canary" not in c["metadata"].get("gpulab", {})]
    for cell in notebook["cells"]:
        if grading.answer_id(cell):
            cell["source"] = grading.strip_solutions(cell["source"])
        elif grading.check_role(cell):
            cell["source"] = grading.strip_hidden_tests(cell["source"])
    return notebook


def run_grade(path, *extra, cwd=None, timeout=TIMEOUT, solutions=None, env=None):
    where = (["--solutions", str(solutions)] if solutions else []) + ([] if SANDBOXED else ["--no-sandbox"])
    done = subprocess.run([sys.executable, "-m", "gpulab", "grade", str(path), "--timeout", timeout, *where, *extra],
                          capture_output=True, text=True, cwd=cwd, timeout=600, env=dict(os.environ, **(env or {})))
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
    done = run_grade(path, "--json", str(output), cwd=tmp_path, solutions=tiny)
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert report["total"] == report["max"] == 7
    assert "total: 7 / 7" in done.stdout


def test_the_unsolved_exercise_scores_zero(tiny, tmp_path):
    report = grade(submit(tmp_path), tiny)
    assert report.total == 0 and report.max_total == 7
    assert all(c.outcome == "error" and "NotImplementedError" in c.message for c in report.checks)
    # The top-level stub fails in the answer cell itself, and the message says so.
    assert by_check(report)["const-0"].message.startswith("your answer cell failed (NotImplementedError")


@pytest.fixture(scope="module", params=[True, False], ids=["forked", "started"])
def hostile(tiny, tmp_path_factory, request):
    """One submission that does every bad thing at once, one exercise each: graded by kernels forked
    from a zygote (the default on Linux) and by kernels started one by one (elsewhere)."""
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
    start = time.monotonic()
    report = grade(path, tiny, fork=request.param)
    elapsed = time.monotonic() - start
    after = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    temp_after = {p.name for p in Path(tempfile.gettempdir()).glob("gpulab-grade-*")}
    return {"report": report, "unchanged": before == after, "new_temp": temp_after - temp_before, "elapsed": elapsed}


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
    report = grade(submit(tmp_path, answers), tiny)
    check = by_check(report)["square-0"]
    assert check.points == 0 and check.outcome == "error" and "no squares today" in check.message
    assert report.total == 5


def test_a_wrong_answer_fails_with_the_checks_message(tiny, tmp_path):
    report = grade(submit(tmp_path, dict(CORRECT, const="ANSWER = 41")), tiny)
    check = by_check(report)["const-0"]
    assert check.outcome == "failed" and "expected 42, got 41" in check.message


def test_hidden_tests_count(tiny, tmp_path):
    # Passes the visible checks (ints and strings) but not the hidden one (floats).
    answers = dict(CORRECT, add="def add(a, b):\n    return a + b if not isinstance(a, float) else 0")
    report = grade(submit(tmp_path, answers), tiny)
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
    report = grade(submit(tmp_path, answers, shuffle_and_damage), tiny)
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
    done = run_grade(path, "--exercise", "square", "--json", str(output), solutions=tiny)
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert [e["id"] for e in report["exercises"]] == ["square"] and report["total"] == report["max"] == 2
    refused = run_grade(path, "--exercise", "cube", solutions=tiny)
    assert refused.returncode == 2 and "no exercise cube" in refused.stderr


def test_exercises_graded_side_by_side_share_the_cores(tiny, tmp_path, monkeypatch):
    # Two kernels at once on four cores: two threads each, so torch's parallel ops never wait for
    # a thread the OS parked. The answer reads what its kernel was given.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    answer = "import os\nANSWER = 42 if os.environ.get('OMP_NUM_THREADS') == '2' else os.environ.get('OMP_NUM_THREADS')"
    report = grade(submit(tmp_path, {**CORRECT, "const": answer}), tiny, workers=2)
    assert by_check(report)["const-0"].outcome == "passed", by_check(report)["const-0"].message
    alone = grade(submit(tmp_path, {**CORRECT, "const": answer.replace("'2'", "'4'")}), tiny, workers=2, only=["const"])
    assert by_check(alone)["const-0"].outcome == "passed", by_check(alone)["const-0"].message


def test_every_canary_fails_with_its_message_whatever_its_values():
    import random

    import numpy  # noqa: F401 -- loaded, so that the canaries that use numpy and torch take those paths
    import torch  # noqa: F401

    rng = random.Random(14)
    for number in range(3000):
        source, message = grading._canary(number, rng)
        with pytest.raises(AssertionError) as failure:
            exec(source, {})
        assert str(failure.value) == message and message.startswith("expected")


def test_an_instructors_canary_catches_an_answer_that_equals_anything(tiny, tmp_path):
    exercise = grading.make_exercise(tiny_lesson(), "exercises/01_devices.ipynb")
    assert not [c for c in exercise["cells"] if "canary" in c["metadata"].get("gpulab", {})], "students never see them"
    answers = dict(CORRECT, add="class Anything:\n    def __eq__(self, other):\n        return True\n"
                                "def add(a, b):\n    return Anything()")
    report = grade(submit(tmp_path, answers), tiny)
    assert {e: p for e, (p, _) in report.by_exercise().items()} == {"add": 0, "square": 2, "root": 1, "const": 1}
    assert any(note.startswith("exercise 'add' scores 0: a check that must fail passed") for note in report.notes)


def test_the_grader_finishes_within_its_budget(hostile):
    # Per exercise: its cells' timeouts, plus a fixed margin (kernel start, a stuck cell's interrupt).
    cells = len([c for c in tiny_lesson()["cells"] if c["cell_type"] == "code"])
    assert hostile["elapsed"] < float(TIMEOUT) * cells + 60


# ------------------------------------------------------------------ hostile answers, one kind each


LIMIT = sandbox.Limits().memory_bytes
MARKER = "gpulab-test-outlives-" + os.urandom(4).hex()

# student → {exercise: answer}: each submission attacks all four exercises, one way each
ATTACKS = {
    "hooks": {
        # An exception handler that swallows every error: IPython then shows no traceback.
        "add": "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\ndef add(a, b):\n    return 0",
        # Every later cell becomes `pass`: every check 'passes'.
        "square": "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\ndef square(x):\n    return 0",
        # Every assert removed from the cells that follow.
        "root": ("import ast\nclass NoAssert(ast.NodeTransformer):\n    def visit_Assert(self, node):\n"
                 "        return ast.Pass()\nget_ipython().ast_transformers.append(NoAssert())\n"
                 "def root(x):\n    return 0"),
        # No traceback shown, ever.
        "const": "get_ipython()._showtraceback = lambda *a, **k: None\nANSWER = 41",
    },
    "unrendered": {
        "add": "def add(a, b):\n    raise ExceptionGroup('nothing here', [ValueError('no')])",
        "square": ("class Quiet(Exception):\n    def _render_traceback_(self):\n        raise RuntimeError('cannot')\n"
                   "def square(x):\n    raise Quiet()"),
        # What a check calls, patched to agree with anything.
        "root": "import math\nmath.isclose = lambda *a, **k: True\ndef root(x):\n    return -1",
        "const": "import builtins\nbuiltins.isinstance = lambda *a: True\nANSWER = 41",
    },
    "greedy": {
        # A file larger than the limit (sparse: nothing is really written if the limit fails).
        "add": (f"try:\n    with open('big', 'wb') as handle:\n        handle.seek({sandbox.Limits().file_bytes})\n"
                "        handle.write(b'x')\n    def add(a, b):\n        return 0\nexcept OSError:\n"
                "    def add(a, b):\n        return a + b"),
        "square": ("import os\nfor _ in range(400):\n    if os.fork() == 0:\n        import time\n"
                   "        time.sleep(600)\n        os._exit(0)\ndef square(x):\n    return x * x"),
        "root": ("import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)  # "
                 + MARKER + "'], start_new_session=True)\ndef root(x):\n    return x ** 0.5"),
        "const": f"ANSWER = len(bytearray({LIMIT} + 2**30))",
    },
}


def _reach(hidden, read_only):
    """An answer that tries to change every target and to see the hidden ones; right only if it could not."""
    return ("import os\nreached = []\n"
            f"for target in {[str(t) for t in hidden + read_only]!r}:\n"
            "    try:\n        with open(target, 'a') as handle:\n            handle.write('# changed')\n"
            "        reached.append(target)\n    except OSError:\n"
            f"        if target in {[str(t) for t in hidden]!r} and os.path.exists(target):\n"
            "            reached.append(target)\nANSWER = 42 if not reached else reached")


@pytest.fixture(scope="module")
def attacked(tiny, tmp_path_factory):
    """A class of hostile submissions graded at once, as a folder, two kernels at a time."""
    import gpulab

    folder = tmp_path_factory.mktemp("class")
    for student, answers in ATTACKS.items():
        (folder / student).mkdir()
        submit(folder / student, answers, name="01_devices.ipynb")
    (folder / "reacher").mkdir()
    hidden = [tiny / "01_devices.ipynb", ROOT / "solutions", folder / "reacher" / "01_devices.ipynb",
              ROOT / "pyproject.toml", ROOT / "tests" / "answers"]
    read_only = [Path(gpulab.__file__).with_name("grading.py"), Path(gpulab.__file__)]
    guarded = hidden + read_only
    submit(folder / "reacher", dict(CORRECT, const=_reach(hidden, read_only)), name="01_devices.ipynb")
    (folder / "broken.ipynb").write_text('{"cells": [')
    watched = [*folder.rglob("*.ipynb"), *(path for path in guarded if path.is_file())]
    hashes = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in watched}
    out = tmp_path_factory.mktemp("gradebook")
    start = time.monotonic()
    done = run_grade(folder, "--csv", str(out / "grades.csv"), "--jobs", "2", solutions=tiny)
    elapsed = time.monotonic() - start
    reports = {p.stem.split("__")[0]: json.loads(p.read_text()) for p in (out / "grades").glob("*.json")}
    changed = [path for path, digest in hashes.items() if hashlib.sha256(path.read_bytes()).hexdigest() != digest]
    return {"done": done, "reports": reports, "csv": (out / "grades.csv").read_text() if done.returncode == 0 else "",
            "changed": changed, "elapsed": elapsed}


def points(report):
    return {e["id"]: e["points"] for e in report["exercises"]}


@needs_sandbox
def test_ipython_hooks_and_unrendered_exceptions_score_nothing(attacked):
    assert attacked["done"].returncode == 0, attacked["done"].stderr
    assert points(attacked["reports"]["hooks"]) == {"add": 0, "square": 0, "root": 0, "const": 0}
    assert points(attacked["reports"]["unrendered"]) == {"add": 0, "square": 0, "root": 0, "const": 0}


@needs_sandbox
def test_tampering_that_makes_checks_pass_is_caught_by_canaries_and_said(attacked):
    hooks, unrendered = attacked["reports"]["hooks"], attacked["reports"]["unrendered"]
    for report, exercise in ((hooks, "square"), (hooks, "root"), (unrendered, "root")):
        assert any(note.startswith(f"exercise '{exercise}' scores 0: a check that must fail") for note in report["notes"]), \
            report["notes"]
    checks = {c["check"]: c for e in hooks["exercises"] for c in e["checks"]}
    assert checks["square-0"]["outcome"] == "tampered"


@needs_sandbox
def test_limits_hold_and_nothing_a_submission_starts_outlives_it(attacked):
    report = attacked["reports"]["greedy"]
    assert points(report) == {"add": 3, "square": 0, "root": 1, "const": 0}, report
    checks = {c["check"]: c for e in report["exercises"] for c in e["checks"]}
    assert "MemoryError" in checks["const-0"]["message"]
    assert "BlockingIOError" in checks["square-0"]["message"], checks["square-0"]
    assert not [cmd for _, cmd in distributed.other_processes("cmdline") if MARKER.encode() in cmd]


@needs_sandbox
def test_a_submission_cannot_reach_the_grader_its_report_or_the_solutions(attacked):
    assert points(attacked["reports"]["reacher"])["const"] == 1, attacked["reports"]["reacher"]
    assert attacked["changed"] == []
    assert not (Path(grading.__file__).parent / "solutions").exists(), "the solutions do not ship in the package"


@needs_sandbox
def test_a_class_becomes_one_gradebook_and_a_report_per_student(attacked):
    rows = list(csv.DictReader(io.StringIO(attacked["csv"])))
    assert [r["student"] for r in rows] == ["broken", "greedy", "hooks", "reacher", "unrendered"]
    assert list(rows[0]) == ["student", "submission", "lesson", "add", "square", "root", "const", "total", "max",
                             "status"]
    by_student = {r["student"]: r for r in rows}
    assert by_student["greedy"]["total"] == "4" and by_student["greedy"]["max"] == "7"
    assert by_student["greedy"]["add"] == "3" and by_student["greedy"]["lesson"] == "01_devices"
    assert "invalid JSON" in by_student["broken"]["status"] and by_student["broken"]["total"] == ""
    assert "scores 0" in by_student["hooks"]["status"]
    assert set(attacked["reports"]) == {"greedy", "hooks", "reacher", "unrendered"}
    assert "grading" in attacked["done"].stderr, "a progress bar"


@needs_sandbox
def test_a_stopped_kernel_costs_its_timeout_and_nothing_more(tiny, tmp_path):
    answers = dict(CORRECT, add="import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)")
    start = time.monotonic()
    report = grade(submit(tmp_path, answers), tiny)
    assert time.monotonic() - start < 3 * float(TIMEOUT) + 30
    assert {e: p for e, (p, _) in report.by_exercise().items()} == {"add": 0, "square": 2, "root": 1, "const": 1}


WHERE = [pytest.param(True, marks=needs_sandbox, id="sandboxed"), pytest.param(False, id="no-sandbox")]


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "started"])
@pytest.mark.parametrize("sandboxed", WHERE)
@pytest.mark.parametrize("length", [49, 200], ids=["macos-length", "longer"])
def test_the_grader_works_wherever_the_temporary_folder_is(tiny, tmp_path, monkeypatch, sandboxed, fork, length):
    # A kernel's sockets live in the temporary folder, and a Unix socket's path holds 104 to 108 bytes.
    # macOS's TMPDIR, /var/folders/xx/…/T/, is 49 bytes long; the kernel's folders add more.
    deep = tmp_path / "T"
    while len(str(deep)) < length:
        deep = deep / ("d" * min(40, length - len(str(deep)) - 1 or 1))
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    report = grading.grade(submit(tmp_path, CORRECT), timeout=float(TIMEOUT), solutions=tiny, sandboxed=sandboxed,
                           fork=fork)
    assert report.total == report.max_total == 7, report.table()
    assert list(deep.iterdir()) == []


@pytest.mark.parametrize("sandboxed", WHERE)
def test_a_zygotes_kernels_start_alone_whatever_the_one_before_left(tmp_path, sandboxed):
    # Files in /tmp and /dev/shm, processes that left the kernel's session, changes to imported modules:
    # none of it reaches the next kernel.
    # (bubblewrap's /dev/shm may not be writable at all; where it is, what is left there goes too)
    leave = ("import math, os, subprocess, sys\nopen('left', 'w').write('x')\ntry:\n"
             "    open('/dev/shm/left', 'w').write('x')\nexcept OSError:\n    pass\n"
             "math.pi = 3\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)  # " + MARKER + "'],"
             " start_new_session=True)")
    # What the zygote imported is frozen out of the kernels' garbage collections (gc.freeze): a gc.collect() in
    # an answer walks the kernel's own objects, not torch's hundreds of thousands.
    check = ("import gc, math, os\nassert not os.path.exists('left'), os.listdir('.')\nassert math.pi > 3.14\n"
             "assert not os.path.exists('/dev/shm/left') or not " + repr(sandboxed) + "\n"
             "assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()")
    with sandbox.Zygote(tmp_path / "zygote", sandboxed=sandboxed, slot=7, preload=()) as zygote:
        for _ in range(2):
            with zygote.kernel() as kernel:
                assert kernel.execute(check, 30).status == "ok", kernel.execute(check, 30)
                assert kernel.execute(leave, 30).status == "ok"
            assert not [cmd for _, cmd in distributed.other_processes("cmdline") if MARKER.encode() in cmd]
        with zygote.kernel() as kernel:
            assert kernel.execute("import os\nos._exit(3)", 30).status == "died"
            assert not kernel.alive
        with zygote.kernel() as kernel:                  # a kernel that died leaves the zygote working
            assert kernel.execute("x = 1", 30).status == "ok"
        if not sandboxed:                                # one that removed its folder ends the zygote, and says so
            with zygote.kernel() as kernel:
                assert kernel.execute("import os, shutil\nshutil.rmtree(os.getcwd())", 30).status == "ok"
            assert not zygote.alive
    if not sandboxed:
        Path("/dev/shm/left").unlink(missing_ok=True)
    assert not (tmp_path / "zygote").exists()


def test_without_a_sandbox_the_grader_says_so_and_goes_on_only_when_told(tiny, tmp_path):
    path = submit(tmp_path, CORRECT)
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))          # no bwrap on this PATH
    refused = subprocess.run([sys.executable, "-m", "gpulab", "grade", str(path), "--solutions", str(tiny)],
                             capture_output=True, text=True, env=env, timeout=600)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "no sandbox" in refused.stderr and "--no-sandbox" in refused.stderr
    graded = subprocess.run([sys.executable, "-m", "gpulab", "grade", str(path), "--solutions", str(tiny),
                             "--no-sandbox", "--timeout", TIMEOUT], capture_output=True, text=True, env=env, timeout=600)
    assert graded.returncode == 0, graded.stderr
    assert "total: 7 / 7" in graded.stdout and "graded without a sandbox" in graded.stdout


def _notebook_text(change):
    notebook = _exercise_of_tiny()
    change(notebook)
    return json.dumps(notebook)


def _set(path, value):
    def change(notebook):
        target = notebook
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


@pytest.mark.parametrize("name, change, reason", [
    ("01_devices.ipynb", _set(["metadata"], None), "its metadata is null"),
    ("01_devices.ipynb", _set(["metadata", "gpulab"], "01_devices"), "its gpulab metadata is a str"),
    ("01_devices.ipynb", _set(["cells", 2, "metadata"], ["answer"]), "cell 3's metadata is a list"),
    ("01_devices.ipynb", _set(["cells", 2, "metadata", "gpulab"], "add"), "cell 3's gpulab metadata is a str"),
    ("01_devices.ipynb", _set(["cells", 2, "source"], [1, 2, 3]), "cell 3's source is a list, not text"),
    ("01_devices.ipynb", _set(["cells", 2, "metadata", "gpulab", "answer"], 7), "cell 3's answer id is a int"),
    ("01_devices.ipynb", _set(["cells"], {"0": 1}), "no list of cells"),
    ("01_devices.ipynb", _set(["metadata", "gpulab", "lesson"], "02_copying"),
     "metadata says lesson 02_copying, its file name 01_devices"),
    ("homework.ipynb", _set(["metadata", "gpulab", "lesson"], "09_nothing"), "no solution notebook for lesson '09_nothing'"),
    ("homework.ipynb", _set(["metadata", "gpulab", "lesson"], "../../etc/passwd"), "names no lesson"),
])
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
    path.write_text(_notebook_text(lambda notebook: None))              # its metadata says 01_devices
    done = run_grade(path, "--lesson", "02_copying", solutions=tiny)
    assert done.returncode == 2 and "metadata says lesson 01_devices, but --lesson says 02_copying" in done.stderr


def test_every_exercise_and_solution_notebook_carries_its_lesson():
    for folder in ("exercises", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            assert course.read_notebook(path)["metadata"].get("gpulab", {}).get("lesson") == path.stem, path


# Canvas, Moodle (its folder's name, then the file's), Blackboard, a second download, and a name with no lesson in it.
LMS_NAMES = ["doe_jane_12345_6789012_{lesson}.ipynb", "Jane Doe_4821_assignsubmission_file_/{lesson}.ipynb",
             "Assignment_doejane_attempt_2026-11-25-10-00-00_{lesson}-1.ipynb", "{lesson} (2).ipynb",
             "0123_submission.ipynb"]


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


def test_no_solutions_no_grading(tmp_path):
    done = run_grade(ROOT / "exercises" / "01_devices.ipynb", solutions=tmp_path / "nowhere")
    assert done.returncode == 2 and "no such folder" in done.stderr


def test_a_missing_file_exits_2(tmp_path):
    done = run_grade(tmp_path / "nothing.ipynb")
    assert done.returncode == 2 and "no such file" in done.stderr


# ------------------------------------------------------------------ the real lessons


@pytest.mark.parametrize("name", [path.name for path in sorted((ROOT / "exercises").glob("*.ipynb"))])
def test_untouched_exercises_score_zero(name, tmp_path, monkeypatch):
    # That every solution scores full marks is checked in tests/e2e/test_answers.py, on a busy machine.
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


def test_patched_reaches_every_name_an_answer_took_and_puts_them_back():
    import torch
    from torch import save as store

    namespace = {"store": store, "save": torch.save, "other": len}
    calls = []
    with grading.patched(torch, "save", lambda *args, **kwargs: calls.append(args[1]), namespace) as real:
        namespace["store"](1, "a")
        namespace["save"](1, "b")
        torch.save(1, "c")
        torch.serialization.save(1, "d")            # the same function, under its own module
        assert namespace["other"] is len
    assert calls == ["a", "b", "c", "d"]
    assert torch.save is real and torch.serialization.save is real
    assert namespace == {"store": real, "save": real, "other": len}


def test_patched_leaves_the_name_its_replacement_calls_the_original_by():
    import io

    import torch

    # A check script's own `real_save = torch.save`, called by its replacement: swapping it would recurse for ever.
    script = {"torch": torch, "written": []}
    exec("real_save = torch.save\ndef watched(obj, f):\n    written.append(f)\n    return real_save(obj, f)", script)
    with grading.patched(torch, "save", script["watched"], script):
        torch.save(1, io.BytesIO())
    assert len(script["written"]) == 1 and script["real_save"] is torch.save


def test_recorded_time_fn_can_call_instead_of_timing():
    ran = []
    with grading.recorded_time_fn(run=False) as calls:
        from gpulab import timing

        result = timing.time_fn(lambda: ran.append(1), device="cuda:0", bytes_moved=8)
    assert ran == [1] and len(calls) == 1
    assert result.clock == "not timed" and result.bytes_moved == 8 and result.device == "cuda:0"


@simulates
def test_the_graders_kernels_see_a_simulated_machine_and_checks_run_on_a_simulated_gpu(tmp_path):
    """GPULAB_SIMULATE reaches the grader's (sandboxed) kernels, and a check's SimulatedGPU works inside
    the sandbox, where no compiler or cache can be written: the grader hands its kernels the built guard."""
    def cells():
        answer = "import torch\n\ndef count():\n    ### BEGIN SOLUTION\n    return torch.cuda.device_count()\n    ### END SOLUTION"
        checks = [(1, "assert count() == 2, f'expected the 2 simulated GPUs, got {count()}'"),
                  (1, "from gpulab.simulated import SimulatedGPU\nwith SimulatedGPU() as gpu:\n"
                      "    y = torch.ones(3).to('cuda') * 2\nassert y.device.type == 'cuda' and y.sum().item() == 6\n"
                      "assert [c.nbytes for c in gpu.copies] == [12], gpu.copies")]
        made = [{"cell_type": "markdown", "metadata": {}, "source": "# simulated"}, role_cell(answer, {"answer": "count"})]
        made += [role_cell(source, {"check": f"count-{i}", "exercise": "count", "points": points})
                 for i, (points, source) in enumerate(checks)]
        return notebook(made, gpulab={"lesson": "01_devices"})

    solutions = tmp_path / "solutions"
    solutions.mkdir()
    course.write_notebook(cells(), solutions / "01_devices.ipynb")
    submission = tmp_path / "01_devices.ipynb"
    course.write_notebook(cells(), submission)
    where = ["--solutions", str(solutions)] + ([] if SANDBOXED else ["--no-sandbox"])
    results = {}
    for machine in ("2xt4", None):
        env = {k: v for k, v in os.environ.items() if k != "GPULAB_SIMULATE"}
        if machine:
            env["GPULAB_SIMULATE"] = machine
        report = tmp_path / f"{machine}.json"
        done = subprocess.run([sys.executable, "-m", "gpulab", "grade", str(submission), "--timeout", "120",
                               "--json", str(report), *where], capture_output=True, text=True, timeout=600, env=env)
        assert report.exists(), done.stderr[-2000:]
        results[machine] = {c["check"]: c["points"] for e in json.loads(report.read_text())["exercises"]
                            for c in e["checks"]}
    assert results["2xt4"] == {"count-0": 1, "count-1": 1}
    assert results[None] == {"count-0": 0, "count-1": 1}      # no machine outside; the check's own inside


def test_a_simulated_gpu_counts_synchronize_however_it_was_imported():
    import __main__

    import torch
    from torch.cuda import synchronize as wait

    from gpulab.simulated import SimulatedGPU

    __main__.gpulab_test_wait = wait                     # as a notebook's globals would hold it
    try:
        with SimulatedGPU() as gpu:
            __main__.gpulab_test_wait()
            torch.cuda.synchronize()
        assert gpu.syncs == 2
        assert __main__.gpulab_test_wait is wait
    finally:
        del __main__.gpulab_test_wait


def _with_setup(tiny_folder, folder, setup):
    """The tiny lesson's solutions with ``setup`` in place of its setup cell, written under ``folder``."""
    lesson = tiny_lesson()
    lesson["cells"][1] = role_cell(setup)
    course.write_notebook(lesson, folder / "01_devices.ipynb")
    return folder


def test_a_setup_that_fails_before_the_answer_ran_is_graded_again_and_then_said(tiny, tmp_path):
    """Many kernels starting at once (a CUDA build of torch on 16 cores) can fail a setup or a start that has
    nothing to do with the answer: the exercise is graded once more; a setup that fails twice is reported as such."""
    tries = tmp_path / "tries"
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    _with_setup(tiny, flaky, f"import math, pathlib\np = pathlib.Path({str(tries)!r})\n"
                             "p.write_text(p.read_text() + 'x' if p.exists() else 'x')\n"
                             "assert len(p.read_text()) > 1, 'the first try fails'")
    submission = submit(tmp_path, CORRECT)
    report = grading.grade(submission, timeout=float(TIMEOUT), solutions=flaky, sandboxed=False, only=["const"])
    assert report.total == report.max_total == 1 and tries.read_text() == "xx"

    broken = tmp_path / "broken"
    broken.mkdir()
    _with_setup(tiny, broken, f"import pathlib\np = pathlib.Path({str(tries)!r})\np.write_text(p.read_text() + 'y')\n"
                              "raise RuntimeError('no GPU today')")
    report = grading.grade(submission, timeout=float(TIMEOUT), solutions=broken, sandboxed=False, only=["const"])
    assert report.total == 0 and tries.read_text() == "xxyy"
    [check] = report.checks
    assert check.outcome == "error" and "setup did not run" in check.message and "no GPU today" in check.message
