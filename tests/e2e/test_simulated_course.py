"""The whole course on a simulated T4, a simulated node of four H100s and a simulated Mac (``GPULAB_SIMULATE``).

For each machine, as a reader with that GPU would run it:

- every lesson notebook under nbval, in kernels on the simulated machine; each cell's output is read,
  and a cell that says the machine lacks hardware it has fails (tests/nbval_outputs.py);
- every lesson's panels recorded as ``gpulab bench`` records them, in the kernel that ran the
  lesson: each named panel's GPU path runs and its figure is drawn;
- every solution graded (full marks) and every exercise notebook graded (zero) by ``gpulab grade``,
  its kernels on the same simulated machine: every cell of every solution runs there, each exercise in a
  fresh kernel; the solutions handed in renamed, as learning-management systems rename files.

The T4 is Colab's GPU: its share runs on Colab's stack, in .venv-colab (tests/e2e/test_colab.py), where make
test has installed it, else in this Python; the four H100s' and the Mac's in this Python. The machines run at once, each
a background thread that runs those steps one after another in
processes of their own. They start as soon as the session's tests are collected, and this module's
tests run last (tests/conftest.py), so the course runs beside the rest of the suite.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import torch

from gpulab import figures
from gpulab.grading import sandbox

from background import Run, Runs
from conftest import COLAB_PYTHON, ROOT, colab_installed, simulates
from nbval_outputs import contradictions, text_of

pytestmark = simulates

MACHINES = ("t4", "4xh100", "mps")
# A simulated GPU's speed is this CPU's: panels run the same code with smaller settings, sooner.
PANEL_LIMIT_S = 5
SANDBOXED = not sandbox.unavailable()


def test_a_line_that_says_hardware_is_missing_is_read_against_the_machine():
    lines = {
        "Needs a CUDA GPU — this machine has none. On one, a 64 MiB copy …": 1,
        "needs a CUDA GPU — this machine has cpu; the timeline in section 8 shows the same steps": 1,
        "Needs an accelerator — this machine has none.": 1,
        "1 CUDA GPU: two GPUs needed for the GPU version; the CPU-process analogue instead": 2,
        "this demonstration needs 2 GPUs": 2,
        "no CUDA GPUs: the lesson runs gloo on CPU processes": 1,
    }
    for line, needed in lines.items():
        assert contradictions(line, needed - 1) == [], line  # true on a machine without them
        assert contradictions(line, needed) == [line], line  # false on one with them
    innocent = (
        "one GPU: NCCL runs one process per GPU, and this lesson runs 2 or more processes",
        "cuda:0  Tesla T4 (simulated)  14.7 GiB",
        "NCCL gives no GPU per process to share",
    )
    for line in innocent:
        assert contradictions(line, 4) == [], line
    # A Mac: one GPU, no CUDA GPU. What CUDA alone has may be missing; an accelerator may not.
    assert contradictions("Needs a CUDA GPU — this machine has none. On one, …", 1, cuda=0) == []
    assert contradictions("no CUDA GPUs: the lesson runs gloo on CPU processes", 1, cuda=0) == []
    for line in ("Needs an accelerator — this machine has none.", "Needs a GPU — this machine has none"):
        assert contradictions(line, 1, cuda=0) == [line], line


def test_the_text_of_outputs_is_what_a_reader_sees():
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "a line\n"},
        {"output_type": "display_data", "data": {"text/html": "<b>x</b> &lt; y", "text/plain": "<HTML>"}},
        {
            "output_type": "display_data",
            "data": {"text/plain": "VBox()", "application/vnd.jupyter.widget-view+json": {}},
        },
        {"output_type": "error", "ename": "RuntimeError", "evalue": "boom", "traceback": []},
    ]
    assert text_of(outputs) == "a line\n x  < yRuntimeError: boom"


def notebooks(folder: str) -> list:
    return sorted((ROOT / folder).glob("*.ipynb"))


# How learning-management systems name what students hand in: Canvas (name, ids, the file's name) and
# Moodle (a folder per student, the file's name after its own words). The solutions are graded so named.
LMS_NAMES = {
    "t4": "doe_jane_{number}_late_{lesson}-1.ipynb",
    "4xh100": "Jane Doe_{number}_assignsubmission_file_/{lesson} (2).ipynb",
    # Blackboard: the assignment, the student, the attempt's time, then the file's name
    "mps": "Lesson {number}_jdoe_attempt_2026-12-07-10-31-07_{lesson}.ipynb",
}


def renamed_solutions(folder: Path, machine: str) -> Path:
    """The solutions copied into ``folder`` as a learning-management system names them."""
    for number, solution in enumerate(notebooks("solutions"), start=4821):
        target = folder / LMS_NAMES[machine].format(number=number, lesson=solution.stem)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(solution, target)
    return folder


_runs = Runs()  # machine → its Run, once started


def course_run(machine: str, folder: Path) -> Run:
    """One machine's share of the course, in the background: nbval on every lesson, then ``gpulab grade`` (the
    instructors' command) on the solutions and on the exercise notebooks. The grading runs every cell of every
    solution on the machine, each exercise in a fresh kernel, so nbval does not run them again. The T4 is
    Colab's GPU: its share runs on Colab's stack (.venv-colab) where that is installed."""
    python = str(COLAB_PYTHON) if machine == "t4" and colab_installed() else sys.executable
    env = {
        **os.environ,
        "GPULAB_SIMULATE": machine,
        "GPULAB_NBVAL_OUTPUTS": str(folder / "outputs"),
        "GPULAB_NBVAL_BENCH": str(folder / "bench"),
        "GPULAB_PANEL_LIMIT_S": str(PANEL_LIMIT_S),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")])),
    }
    steps = {
        "nbval": [
            python,
            "-m",
            "pytest",
            "-p",
            "nbval_outputs",
            "-q",
            "--no-header",
            "--durations=15",
            "-p",
            "no:cacheprovider",
            "notebooks",
        ],
        **{
            f"grade-{kind}": [
                python,
                "-m",
                "gpulab",
                "grade",
                "--jobs",
                "1",
                # a hang guard, not a speed limit: a compiling check (09's torch.compile) took over 120 s while
                # three simulated machines, Colab's stack and the suite shared two cores
                "--timeout",
                "300",
                "--csv",
                str(folder / f"{kind}.csv"),
                *([] if SANDBOXED else ["--no-sandbox"]),
                str(where),
            ]
            for kind, where in (
                ("solutions", renamed_solutions(folder / "class", machine)),
                ("exercises", ROOT / "exercises"),
            )
        },
    }
    run = Run(f"simulated-{machine}", folder, steps, env)
    run.python = python
    return run


def start_runs() -> None:
    """Start each machine's run, once. tests/conftest.py calls this as soon as the session's tests are
    collected, and puts this module's tests last: the course runs beside the rest of the suite."""
    if _runs.started or torch.cuda.is_available():  # beside a real GPU its tests skip (simulates)
        return
    root = _runs.folder("simulated-course-")
    for machine in MACHINES:
        (root / machine).mkdir()
        _runs.started[machine] = course_run(machine, root / machine)


def stop_runs() -> None:
    """End what is still running and remove the scratch folder (also called at the session's end)."""
    _runs.stop()


@pytest.fixture(scope="module")
def runs():
    """{machine: its finished Run}: started when the session's tests were collected (or now)."""
    start_runs()
    try:
        yield _runs.wait(timeout=2400)
    finally:
        stop_runs()


@pytest.mark.parametrize("machine", MACHINES)
def test_every_solution_scores_full_marks_and_every_exercise_zero_on_a_simulated_machine(machine, runs):
    run = runs[machine]
    wrong = []
    for kind in ("solutions", "exercises"):
        step = f"grade-{kind}"
        assert run.returncodes.get(step) == 0, f"gpulab grade {kind} on a simulated {machine}:\n{run.log(step)[-4000:]}"
        # The solutions were handed in renamed (LMS_NAMES): each report says which lesson it graded.
        reports = {
            report["lesson"] if kind == "solutions" else path.stem: report
            for path in (run.folder / kind).glob("*.json")
            for report in [json.loads(path.read_text())]
        }
        assert sorted(reports) == [p.stem for p in notebooks(kind)], (
            f"{kind} graded on a simulated {machine}:\n{run.log(step)[-4000:]}"
        )
        for name, report in reports.items():
            if report["total"] != (report["max"] if kind == "solutions" else 0):
                checks = "\n".join(
                    f"  {c['exercise']}/{c['check']}: {c['points']:g}/{c['max_points']:g} {c['message']}"
                    for exercise in report["exercises"]
                    for c in exercise["checks"]
                )
                wrong.append(f"{kind}/{name}: {report['total']:g} / {report['max']:g}\n{checks}")
    assert not wrong, f"on a simulated {machine}:\n" + "\n\n".join(wrong)


@pytest.mark.parametrize("machine", MACHINES)
def test_every_notebook_runs_and_says_what_the_machine_has(machine, runs):
    run = runs[machine]
    outputs = run.folder / "outputs"
    assert run.returncodes.get("nbval") == 0, f"nbval on a simulated {machine}:\n{run.log('nbval')[-8000:]}"
    assert sorted(path.stem for path in (outputs / "notebooks").glob("*.txt")) == [
        p.stem for p in notebooks("notebooks")
    ]


@pytest.mark.parametrize("machine", MACHINES)
def test_every_panel_runs_its_gpu_path_and_draws_its_figure(machine, runs):
    panels = runs[machine].folder / "bench"
    recorded = {}
    for lesson in notebooks("notebooks"):
        found = json.loads((panels / f"{lesson.stem}.json").read_text())
        assert "error" not in found, f"{lesson.stem}'s panels on a simulated {machine}: {found['error']}"
        recorded.update(found["panels"])
        for status in found["statuses"]:
            assert status.startswith("✓"), f"a panel of {lesson.stem} on a simulated {machine}: {status}"
    assert set(recorded) == set(figures.PANELS), f"panels recorded on a simulated {machine}"
    for name, record in recorded.items():
        assert not re.search(r"NOT RETURNED|✗|rank \d+ failed|Error", record["summary"]), (
            f"{name} on a simulated {machine}: {record['summary']}"
        )
        with open(record["png"], "rb") as png:
            assert png.read(8) == b"\x89PNG\r\n\x1a\n", f"{name}'s figure on a simulated {machine}"
