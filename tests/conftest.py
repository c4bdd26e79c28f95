import importlib
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none")
# A simulated machine refuses to start beside a real GPU (gpulab.simulated.install): tests that start one run where
# there is none, CI among them. The reason must not say "needs a CUDA GPU" (GPULAB_REQUIRE_CUDA fails those).
simulates = pytest.mark.skipif(torch.cuda.is_available(), reason="simulated machines refuse to run beside a real GPU")

# Where a machine must run everything, a skip for want of it is a failure: the GPU runner sets
# GPULAB_REQUIRE_CUDA=1 (make test-gpu), CI sets GPULAB_REQUIRE_BROWSER=1 and GPULAB_REQUIRE_SANDBOX=1
# (.ci/run); GPULAB_REQUIRE_COLAB=1 requires the Colab lane.
REQUIRED = {
    "GPULAB_REQUIRE_CUDA": "needs a CUDA GPU",
    "GPULAB_REQUIRE_BROWSER": "needs Chromium",
    "GPULAB_REQUIRE_SANDBOX": "no sandbox",
    "GPULAB_REQUIRE_COLAB": "needs Colab's stack",
}

# Colab's stack (constraints-colab.txt on Python 3.13), which make test installs where a Python 3.13 is.
COLAB_VENV = ROOT / ".venv-colab"
COLAB_PYTHON = COLAB_VENV / "bin" / "python"


# Debian's Chromium, started headless and kept off the network, for the tests that read pages as a reader does
# (tests/e2e/test_browser.py, tests/e2e/test_site.py); playwright is only the Python driver for it.
CHROMIUM = os.environ.get("GPULAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--disable-default-apps",
]


def chromium_missing(modules=("playwright",)) -> str | None:
    """Why the browser tests cannot run here (None when they can): no Chromium, or a module not installed."""
    if not pathlib.Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set GPULAB_CHROMIUM)"
    for module in modules:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed here (pip install -e '.[dev]')"
    return None


def colab_installed() -> bool:
    return (COLAB_VENV / ".installed").exists() and COLAB_PYTHON.exists()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        reason = str(report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr)
        for variable, words in REQUIRED.items():
            if os.environ.get(variable) == "1" and words in reason:
                report.outcome = "failed"
                report.longrepr = f"{variable}=1, so this may not be skipped: {reason}"


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT


KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def code_cell(source: str, metadata: dict | None = None) -> dict:
    """A fresh, unexecuted code cell."""
    return {"cell_type": "code", "execution_count": None, "metadata": metadata or {}, "outputs": [], "source": source}


def notebook(cells: list, **metadata) -> dict:
    """A format 4.5 notebook around ``cells``, with the plain python3 kernelspec and ``metadata``."""
    return {"cells": cells, "metadata": {**metadata, "kernelspec": KERNELSPEC}, "nbformat": 4, "nbformat_minor": 5}


def copy_work_tree(where: pathlib.Path) -> None:
    """This work tree's tracked and untracked files as they are now, without what git ignores (the venvs, build
    outputs, caches), copied to ``where``: what a commit of the work tree would hold."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for relative in filter(None, listed.split("\0")):
        source = ROOT / relative
        if source.is_file():  # a file deleted but not yet committed is listed and left out
            (where / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / relative)


# Notebooks and graders must clean up after themselves: any gpulab-* entry that appears in the
# temporary folder during the run, and is still there at the end, fails the run.
_TEMP = pathlib.Path(tempfile.gettempdir())
_TEMP_BEFORE = {p.name for p in _TEMP.glob("gpulab-*")}


# A kernel that nbval or Jupyter kills runs no atexit; gpulab.distributed's janitor removes its
# scratch folder a moment later, so the last notebook's folder gets a few seconds to go.
CLEANUP_GRACE_S = 10


def _left_behind() -> list[str]:
    return sorted({p.name for p in _TEMP.glob("gpulab-*")} - _TEMP_BEFORE)


def _course_test(item) -> bool:
    return item.nodeid.startswith(
        ("tests/e2e/test_simulated_course.py::test_every", "tests/e2e/test_colab.py::test_on_colabs_stack")
    )


def _grades_answers(item) -> bool:
    return item.nodeid.startswith("tests/e2e/test_answers.py::")


def _runs_in_the_colab_lane(item) -> bool:
    """A lesson or solution under nbval, which the Colab lane runs in .venv-colab (tests/e2e/test_colab.py)."""
    return item.nodeid.startswith(("notebooks/", "solutions/")) and item.nodeid.count("::Cell ") == 1


def pytest_collection_modifyitems(session, config, items):
    # Where the Colab lane runs, its nbval of every lesson and solution is the run of them: this Python
    # does not run them a second time.
    if colab_installed() and any(
        item.nodeid.startswith("tests/e2e/test_colab.py::test_on_colabs_stack") for item in items
    ):
        twice = [item for item in items if _runs_in_the_colab_lane(item)]
        if twice:
            config.hook.pytest_deselected(items=twice)
            items[:] = [item for item in items if not _runs_in_the_colab_lane(item)]
    # The simulated course's tests read runs that take most of the session: they come last, so the
    # rest of the suite runs while those runs do, on the core the runs keep off (tests/background.py). Just
    # before them, the answers' grading (tests/e2e/test_answers.py), which keeps both cores busy itself (two
    # kernels at a time): run first, it took both cores from the suite's other tests and the runs alike, and
    # the other tests then ran one at a time beside a core idle once the runs were done.
    order = {"rest": [], "answers": [], "course": []}
    for item in items:
        kind = "course" if _course_test(item) else "answers" if _grades_answers(item) else "rest"
        order[kind].append(item)
    items[:] = order["rest"] + order["answers"] + order["course"]


def pytest_collection_finish(session):
    # ...and the runs start now.
    if session.config.option.collectonly:
        return
    for module in ("test_simulated_course", "test_colab"):
        if any(_course_test(item) and item.nodeid.startswith(f"tests/e2e/{module}.py") for item in session.items):
            importlib.import_module(module).start_runs()
    if "background" in sys.modules and any(runs.started for runs in sys.modules["background"]._ALL):
        sys.modules["background"].hold()  # the suite's tests on a core of their own, the runs on the rest


def pytest_runtest_setup(item):
    # The answers' grading and the course's tests may use every core (tests/background.py).
    if "background" in sys.modules and (_grades_answers(item) or _course_test(item)):
        sys.modules["background"].release()


def pytest_terminal_summary(terminalreporter):
    # What each background run's steps took: where the suite's time goes.
    for module in ("test_simulated_course", "test_colab"):
        if module not in sys.modules:
            continue
        for run in sys.modules[module]._runs.started.values():
            steps = ", ".join(f"{step} {seconds:.0f} s" for step, seconds in run.seconds.items())
            terminalreporter.write_line(f"background run {run.name}: {steps or 'no step finished'}")


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the run's controller looks once every worker is done
    for module in ("test_simulated_course", "test_colab"):
        if module in sys.modules:
            sys.modules[module].stop_runs()
    deadline = time.monotonic() + CLEANUP_GRACE_S
    while (left := _left_behind()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"FAILED: the run left {left} in {_TEMP}: clean up after yourself", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
