"""The runner: each exercise in a fresh kernel, answers matched by ID, canaries among the checks, and a
submission that does bad things costing only its own points.

Most tests grade the tiny lesson (tiny_lesson.py); the last ones grade the real lessons.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gpulab import course, grading
from gpulab.grading import notebooks, runner

from conftest import ROOT, notebook, simulates
from tiny_lesson import (
    CORRECT,
    SANDBOXED,
    TIMEOUT,
    by_check,
    grade,
    role_cell,
    run_grade,
    submit,
    tiny_lesson,
    tiny_solutions,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_solutions(tmp_path_factory)


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
        "add": "def add(a, b) return a + b",  # syntax error
        "square": "while True:\n    pass",  # never finishes
        "root": "import os\nos._exit(1)",  # kills its kernel
        "const": "print('x' * 5_000_000)\nANSWER = 42",  # huge output, but right
    }
    path = submit(folder, answers)
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    # The grader's scratch folder goes into a temporary folder of this grading's own: what is left there, and what
    # still runs there, is this grading's, whatever else grades on the machine (make test's background runs do).
    scratch, usual = tempfile.mkdtemp(prefix="gpulab-hostile-"), tempfile.tempdir
    tempfile.tempdir = scratch
    try:
        start = time.monotonic()
        report = grade(path, tiny, fork=request.param)
        elapsed = time.monotonic() - start
        left = {p.name for p in Path(scratch).iterdir()}
    finally:
        tempfile.tempdir = usual
    after = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    yield {"report": report, "unchanged": before == after, "new_temp": left, "scratch": scratch, "elapsed": elapsed}
    shutil.rmtree(scratch, ignore_errors=True)


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
        if hostile["scratch"] in cmdline:
            leftovers.append(cmdline)
    assert leftovers == []


def test_the_grader_finishes_within_its_budget(hostile):
    # Per exercise: its cells' timeouts, plus a fixed margin (kernel start, a stuck cell's interrupt).
    cells = len([c for c in tiny_lesson()["cells"] if c["cell_type"] == "code"])
    assert hostile["elapsed"] < float(TIMEOUT) * cells + 60


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
    def shuffle_and_damage(made):
        cells = made["cells"]
        answer_cells = [c for c in cells if notebooks.answer_id(c)]
        for cell in answer_cells:
            cells.remove(cell)
        cells.extend(reversed(answer_cells))  # reordered, at the end
        cells[:] = [c for c in cells if notebooks.answer_id(c) != "root"]  # one deleted
        for cell in cells:
            if notebooks.answer_id(cell) == "square":
                cell["metadata"] = {}  # one stripped of its id
            if notebooks.check_role(cell):
                cell["source"] = "assert True"  # checks edited

    answers = dict(CORRECT, const="ANSWER = 41")
    report = grade(submit(tmp_path, answers, shuffle_and_damage), tiny)
    points = {e: p for e, (p, _) in report.by_exercise().items()}
    assert points == {"add": 3, "square": 0, "root": 0, "const": 0}
    assert any("'root'" in note for note in report.notes) and any("'square'" in note for note in report.notes)


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
        source, message = runner._canary(number, rng)
        with pytest.raises(AssertionError) as failure:
            exec(source, {})
        assert str(failure.value) == message and message.startswith("expected")


def test_an_instructors_canary_catches_an_answer_that_equals_anything(tiny, tmp_path):
    answers = dict(
        CORRECT,
        add="class Anything:\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Anything()",
    )
    report = grade(submit(tmp_path, answers), tiny)
    assert {e: p for e, (p, _) in report.by_exercise().items()} == {"add": 0, "square": 2, "root": 1, "const": 1}
    assert any(note.startswith("exercise 'add' scores 0: a check that must fail passed") for note in report.notes)


def _with_setup(folder, setup):
    """The tiny lesson's solutions with ``setup`` in place of its setup cell, written under ``folder``."""
    lesson = tiny_lesson()
    lesson["cells"][1] = role_cell(setup)
    course.write_notebook(lesson, folder / "01_devices.ipynb")
    return folder


def test_a_setup_that_fails_before_the_answer_ran_is_graded_again_and_then_said(tmp_path):
    """Many kernels starting at once (a CUDA build of torch on 16 cores) can fail a setup or a start that has
    nothing to do with the answer: the exercise is graded once more; a setup that fails twice is reported as such."""
    tries = tmp_path / "tries"
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    _with_setup(
        flaky,
        f"import math, pathlib\np = pathlib.Path({str(tries)!r})\n"
        "p.write_text(p.read_text() + 'x' if p.exists() else 'x')\n"
        "assert len(p.read_text()) > 1, 'the first try fails'",
    )
    submission = submit(tmp_path, CORRECT)
    report = grading.grade(submission, timeout=float(TIMEOUT), solutions=flaky, sandboxed=False, only=["const"])
    assert report.total == report.max_total == 1 and tries.read_text() == "xx"

    broken = tmp_path / "broken"
    broken.mkdir()
    _with_setup(
        broken,
        f"import pathlib\np = pathlib.Path({str(tries)!r})\np.write_text(p.read_text() + 'y')\n"
        "raise RuntimeError('no GPU today')",
    )
    report = grading.grade(submission, timeout=float(TIMEOUT), solutions=broken, sandboxed=False, only=["const"])
    assert report.total == 0 and tries.read_text() == "xxyy"
    [check] = report.checks
    assert check.outcome == "error" and "setup did not run" in check.message and "no GPU today" in check.message


# ------------------------------------------------------------------ the real lessons


@pytest.mark.parametrize("name", [path.name for path in sorted((ROOT / "exercises").glob("*.ipynb"))])
def test_untouched_exercises_score_zero(name, tmp_path, monkeypatch):
    # That every solution scores full marks is checked in tests/e2e/test_answers.py, on a busy machine.
    output = tmp_path / "report.json"
    done = run_grade(ROOT / "exercises" / name, "--json", str(output), cwd=tmp_path, timeout="60")
    assert done.returncode == 0, done.stderr
    report = json.loads(output.read_text())
    assert report["total"] == 0 and report["max"] > 0, done.stdout


@simulates
def test_the_graders_kernels_see_a_simulated_machine_and_checks_run_on_a_simulated_gpu(tmp_path):
    """GPULAB_SIMULATE reaches the grader's (sandboxed) kernels, and a check's SimulatedGPU works inside
    the sandbox, where no compiler or cache can be written: the grader hands its kernels the built guard."""

    def cells():
        answer = "import torch\n\ndef count():\n    ### BEGIN SOLUTION\n    return torch.cuda.device_count()\n    ### END SOLUTION"
        checks = [
            (1, "assert count() == 2, f'expected the 2 simulated GPUs, got {count()}'"),
            (
                1,
                "from gpulab.simulated import SimulatedGPU\nwith SimulatedGPU() as gpu:\n"
                "    y = torch.ones(3).to('cuda') * 2\nassert y.device.type == 'cuda' and y.sum().item() == 6\n"
                "assert [c.nbytes for c in gpu.copies] == [12], gpu.copies",
            ),
        ]
        made = [
            {"cell_type": "markdown", "metadata": {}, "source": "# simulated"},
            role_cell(answer, {"answer": "count"}),
        ]
        made += [
            role_cell(source, {"check": f"count-{i}", "exercise": "count", "points": points})
            for i, (points, source) in enumerate(checks)
        ]
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
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "gpulab",
                "grade",
                str(submission),
                "--timeout",
                "120",
                "--json",
                str(report),
                *where,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        assert report.exists(), done.stderr[-2000:]
        results[machine] = {
            c["check"]: c["points"] for e in json.loads(report.read_text())["exercises"] for c in e["checks"]
        }
    assert results["2xt4"] == {"count-0": 1, "count-1": 1}
    assert results[None] == {"count-0": 0, "count-1": 1}  # no machine outside; the check's own inside


def test_a_simulated_gpu_counts_synchronize_however_it_was_imported():
    import torch
    from torch.cuda import synchronize as wait

    import __main__
    from gpulab.simulated import SimulatedGPU

    __main__.gpulab_test_wait = wait  # as a notebook's globals would hold it
    try:
        with SimulatedGPU() as gpu:
            __main__.gpulab_test_wait()
            torch.cuda.synchronize()
        assert gpu.syncs == 2
        assert __main__.gpulab_test_wait is wait
    finally:
        del __main__.gpulab_test_wait
