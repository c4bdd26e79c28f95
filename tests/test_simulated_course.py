"""The whole course on a simulated T4 and on a simulated node of four H100s (``GPULAB_SIMULATE``).

For each machine, as a reader with that GPU would run it:

- every lesson and every solution notebook under nbval, in kernels on the simulated machine; each
  cell's output is read, and a cell that says the machine lacks hardware it has fails
  (tests/nbval_outputs.py);
- every lesson's panels recorded as ``gpulab bench`` records them, in the kernel that ran the
  lesson: each named panel's GPU path runs and its figure is drawn;
- every solution graded (full marks) and every exercise notebook graded (zero) by the real
  grader, its kernels on the same simulated machine.

Both machines' notebooks run at once, each in a pytest of its own, started as soon as the session's
tests are collected (tests/conftest.py), so that they run beside the rest of the suite; this process
grades when the module's tests come.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpulab import figures, grading, sandbox

from conftest import ROOT
from nbval_outputs import contradictions, text_of

MACHINES = ("t4", "4xh100")
# The runs take about 15 minutes on two cores: `make test-simulated` runs them (GPULAB_SIMULATED_COURSE=1).
ENABLED = os.environ.get("GPULAB_SIMULATED_COURSE") == "1"
whole_course = pytest.mark.skipif(not ENABLED, reason="the whole course on simulated GPUs runs with make test-simulated")
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
        assert contradictions(line, needed - 1) == [], line          # true on a machine without them
        assert contradictions(line, needed) == [line], line           # false on one with them
    innocent = ("one GPU: NCCL runs one process per GPU, and this lesson runs 2 or more processes",
                "cuda:0  Tesla T4 (simulated)  14.7 GiB", "NCCL gives no GPU per process to share")
    for line in innocent:
        assert contradictions(line, 4) == [], line


def test_the_text_of_outputs_is_what_a_reader_sees():
    outputs = [{"output_type": "stream", "name": "stdout", "text": "a line\n"},
               {"output_type": "display_data", "data": {"text/html": "<b>x</b> &lt; y", "text/plain": "<HTML>"}},
               {"output_type": "display_data", "data": {"text/plain": "VBox()",
                                                         "application/vnd.jupyter.widget-view+json": {}}},
               {"output_type": "error", "ename": "RuntimeError", "evalue": "boom", "traceback": []}]
    assert text_of(outputs) == "a line\n x  < yRuntimeError: boom"


def notebooks(folder: str) -> list:
    return sorted((ROOT / folder).glob("*.ipynb"))


_started: dict = {}      # machine → (folder, its nbval process), once started
_scratch: list = []


def start_notebook_runs() -> None:
    """Start each machine's nbval, once. tests/conftest.py calls this as soon as the session's tests are
    collected: the notebooks then run beside the rest of the suite, on the time its waits leave idle."""
    if _started:
        return
    root = Path(tempfile.mkdtemp(prefix="simulated-course-"))
    _scratch.append(root)
    for machine in MACHINES:
        folder = root / machine
        folder.mkdir()
        env = {**os.environ, "GPULAB_SIMULATE": machine, "GPULAB_NBVAL_OUTPUTS": str(folder / "outputs"),
               "GPULAB_NBVAL_BENCH": str(folder / "bench"), "GPULAB_PANEL_LIMIT_S": str(PANEL_LIMIT_S),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))}
        with (folder / "nbval.log").open("w") as out:
            _started[machine] = (folder, subprocess.Popen(
                [sys.executable, "-m", "pytest", "-p", "nbval_outputs", "-q", "--no-header", "--durations=15",
                 "-p", "no:cacheprovider", "notebooks", "solutions"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT))


def stop_notebook_runs() -> None:
    """End what is still running and remove the scratch folder (also called at the session's end)."""
    for _, run in _started.values():
        if run.poll() is None:
            run.kill()
            run.wait()
    while _scratch:
        shutil.rmtree(_scratch.pop(), ignore_errors=True)


@pytest.fixture(scope="module")
def runs():
    """{machine: (returncode, log, outputs folder, panels folder, reports)}: each machine's nbval (started
    when the session began, or now), and every solution and exercise notebook graded here on one machine,
    then the other, while they run."""
    start_notebook_runs()
    results = {}
    try:
        for machine in MACHINES:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("GPULAB_SIMULATE", machine)        # the grader's kernels run on the simulated machine
                results[machine] = grading.grade_many(notebooks("solutions") + notebooks("exercises"), timeout=120,
                                                      sandboxed=SANDBOXED)
        found = {}
        for machine, (folder, run) in _started.items():
            returncode = run.wait(timeout=2400)
            found[machine] = (returncode, (folder / "nbval.log").read_text(), folder / "outputs", folder / "bench",
                              results[machine])
        yield found
    finally:
        stop_notebook_runs()


@whole_course
@pytest.mark.parametrize("machine", MACHINES)
def test_every_solution_scores_full_marks_and_every_exercise_zero_on_a_simulated_machine(machine, runs):
    *_, reports = runs[machine]
    graded = {}
    for path, report in zip(notebooks("solutions") + notebooks("exercises"), reports):
        assert isinstance(report, grading.Report), f"{path}: {report}"
        graded[f"{path.parent.name}/{path.name}"] = report
    wrong = [f"{name}: {report.total:g} / {report.max_total:g}\n{report.table()}" for name, report in graded.items()
             if report.total != (report.max_total if name.startswith("solutions/") else 0)]
    assert not wrong, f"on a simulated {machine}:\n" + "\n\n".join(wrong)


@whole_course
@pytest.mark.parametrize("machine", MACHINES)
def test_every_notebook_runs_and_says_what_the_machine_has(machine, runs):
    returncode, log, outputs, *_ = runs[machine]
    assert returncode == 0, f"nbval on a simulated {machine}:\n{log[-8000:]}"
    assert sorted(path.stem for path in (outputs / "notebooks").glob("*.txt")) == [p.stem for p in notebooks("notebooks")]
    assert sorted(path.stem for path in (outputs / "solutions").glob("*.txt")) == [p.stem for p in notebooks("solutions")]


@whole_course
@pytest.mark.parametrize("machine", MACHINES)
def test_every_panel_runs_its_gpu_path_and_draws_its_figure(machine, runs):
    *_, panels, _ = runs[machine]
    recorded = {}
    for lesson in notebooks("notebooks"):
        found = json.loads((panels / f"{lesson.stem}.json").read_text())
        assert "error" not in found, f"{lesson.stem}'s panels on a simulated {machine}: {found['error']}"
        recorded.update(found["panels"])
        for status in found["statuses"]:
            assert status.startswith("✓"), f"a panel of {lesson.stem} on a simulated {machine}: {status}"
    assert set(recorded) == set(figures.FOR_PANEL), f"panels recorded on a simulated {machine}"
    for name, record in recorded.items():
        assert not re.search(r"NOT RETURNED|✗|rank \d+ failed|Error", record["summary"]), f"{name} on a simulated {machine}: {record['summary']}"
        with open(record["png"], "rb") as png:
            assert png.read(8) == b"\x89PNG\r\n\x1a\n", f"{name}'s figure on a simulated {machine}"
