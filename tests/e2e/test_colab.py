"""The course on Colab's stack: the environment most of its readers have.

``.venv-colab`` is Colab's runtime as its package list gives it (constraints-colab.txt on Python 3.13:
torch 2.11.0, ipywidgets 7.7.1, ipykernel 6.17.1, IPython 7.34.0, Colab's matplotlib and numpy);
make test (and make test-colab, this module alone) installs it where a Python 3.13 is, and CI requires
it (GPULAB_REQUIRE_COLAB=1). In it, beside the rest of the suite:

- every lesson and solution notebook under nbval on the CPU, as on a CPU runtime (the suite's own Python
  then leaves them out: tests/conftest.py);
- the widget and quiz tests: every panel and quiz is built from ipywidgets 7.7.1's widgets there;
- a student's self-check: ``gpulab grade NOTEBOOK --no-sandbox`` gives each solution full marks, and the
  exercise notebooks as handed out score zero.

Colab's GPU, a T4, runs the whole course in the same environment (tests/e2e/test_simulated_course.py). And
the setup cell at the top of every notebook runs as Colab runs it: with ``google.colab`` imported, in a
copy of the environment without gpulab, its ``pip install`` of the release's tag (``v`` and gpulab's
version) served from a local clone of this work tree, tagged so, whose ``main`` has moved past the tag. It
must install gpulab from the tagged commit and change nothing else: not torch, ipywidgets, IPython or
ipykernel, nor any other package Colab has.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gpulab import course

from background import Run, Runs
from conftest import COLAB_PYTHON, COLAB_VENV, ROOT, colab_installed, copy_work_tree

needs_colab = pytest.mark.skipif(
    not colab_installed(),
    reason="needs Colab's stack (.venv-colab on Python 3.13): make test installs it where a Python 3.13 is",
)
FOLDERS = ("notebooks", "solutions", "exercises")


def pins() -> dict[str, str]:
    """constraints-colab.txt: {package: version}."""
    found = {}
    for line in (ROOT / "constraints-colab.txt").read_text().splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("#")[0].strip().split("==")
            found[name.lower().replace("_", "-")] = version
    return found


def installed(python: Path) -> dict[str, str]:
    """{package: version} of what ``python``'s environment holds, as pip lists it."""
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(listed)}


@needs_colab
def test_the_colab_environment_is_colabs_stack():
    python = subprocess.run(
        [str(COLAB_PYTHON), "-c", "import sys; print(*sys.version_info[:2], sep='.')"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert python == "3.13", f".venv-colab runs Python {python}; Colab runs 3.13"
    wanted, have = pins(), installed(COLAB_PYTHON)
    for package in (
        "torch",
        "ipywidgets",
        "ipykernel",
        "ipython",
        "matplotlib",
        "numpy",
        "traitlets",
        "jupyter-client",
    ):
        assert have.get(package, "").split("+")[0] == wanted[package], (package, have.get(package), wanted[package])
    assert pins()["torch"] == "2.11.0" and pins()["ipywidgets"] == "7.7.1" and pins()["ipython"] == "7.34.0"
    assert pins()["ipykernel"] == "6.17.1"


# The runs in .venv-colab, started when the session's tests are collected (tests/conftest.py).
_runs = Runs()


def start_runs() -> None:
    if _runs.started or not colab_installed():
        return
    folder = _runs.folder("colab-course-")
    python = str(COLAB_PYTHON)
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env.pop("GPULAB_SIMULATE", None)
    pytest_args = [python, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider", "--durations=10"]
    steps = {
        "nbval": [*pytest_args, "notebooks", "solutions"],
        "widgets": [*pytest_args, "tests/unit/test_widgets.py", "tests/unit/test_quiz.py"],
        # --timeout 300, as the simulated course grades: this lane shares two busy cores with the suite, where
        # lesson 06's torchrun checks once took more than the default 30 s, and lesson 09's compiling check 120 s.
        **{
            f"self-check-{solution.stem}": [
                python,
                "-m",
                "gpulab",
                "grade",
                "--no-sandbox",
                "--timeout",
                "300",
                "--json",
                str(folder / f"{solution.stem}.json"),
                str(solution),
            ]
            for solution in sorted((ROOT / "solutions").glob("*.ipynb"))
        },
        "exercises": [
            python,
            "-m",
            "gpulab",
            "grade",
            "--no-sandbox",
            "--csv",
            str(folder / "exercises.csv"),
            str(ROOT / "exercises"),
        ],
    }
    _runs.started["colab"] = Run("colab", folder, steps, env)


def stop_runs() -> None:
    _runs.stop()


@pytest.fixture(scope="module")
def colab():
    start_runs()
    if not _runs.started:
        pytest.skip("needs Colab's stack (.venv-colab on Python 3.13): make test installs it where a Python 3.13 is")
    try:
        yield _runs.wait(timeout=2400)["colab"]
    finally:
        stop_runs()


def test_on_colabs_stack_every_lesson_and_solution_runs_on_the_cpu(colab):
    assert colab.returncodes.get("nbval") == 0, f"nbval in .venv-colab:\n{colab.log('nbval')[-8000:]}"
    # nbval makes a test of every code cell: all of them ran.
    cells = sum(
        cell["cell_type"] == "code"
        for folder in ("notebooks", "solutions")
        for path in (ROOT / folder).glob("*.ipynb")
        for cell in course.read_notebook(path)["cells"]
    )
    assert re.search(rf"\b{cells} passed\b", colab.log("nbval")), colab.log("nbval")[-2000:]


def test_on_colabs_stack_the_widget_and_quiz_tests_pass(colab):
    assert colab.returncodes.get("widgets") == 0, (
        f"widget and quiz tests in .venv-colab:\n{colab.log('widgets')[-8000:]}"
    )


def test_on_colabs_stack_a_students_self_check_grades_as_it_should(colab):
    wrong = []
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        step = f"self-check-{solution.stem}"
        if colab.returncodes.get(step) != 0:
            wrong.append(f"gpulab grade {solution.name} --no-sandbox:\n{colab.log(step)[-3000:]}")
            continue
        report = json.loads((colab.folder / f"{solution.stem}.json").read_text())
        if not (
            report["total"] == report["max"] > 0
        ) or f"total: {report['total']:g} / {report['max']:g}" not in colab.log(step):
            wrong.append(f"{solution.name}: {report['total']:g} / {report['max']:g}\n{colab.log(step)[-3000:]}")
    assert colab.returncodes.get("exercises") == 0, colab.log("exercises")[-3000:]
    rows = (colab.folder / "exercises.csv").read_text().splitlines()[1:]
    assert len(rows) == len(list((ROOT / "exercises").glob("*.ipynb"))), colab.log("exercises")[-3000:]
    for row in rows:
        if not re.search(r",0,\d+,graded without a sandbox", row):
            wrong.append(f"an exercise notebook as handed out: {row}")
    assert not wrong, "\n\n".join(wrong)


# The setup cell, as Colab runs it.


def setup_cells() -> dict[str, list[str]]:
    """{source of a setup cell: the notebooks that start with it}."""
    found: dict = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            cells = [course.cell_source(c) for c in course.read_notebook(path)["cells"] if c["cell_type"] == "code"]
            assert "google.colab" in cells[0], f"{folder}/{path.name} does not start with the setup cell"
            found.setdefault(cells[0], []).append(f"{folder}/{path.name}")
    return found


def local_repository(where: Path) -> str:
    """This work tree, its tracked and untracked files as they are now, committed to ``main`` of a repository at
    ``where`` and tagged as the release it names: the repository the setup cell's URL is redirected to. ``main``
    then moves one commit past the tag, as it does after a release, so that only the tag reaches the tagged
    commit. Returns that commit."""
    copy_work_tree(where)
    git = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@localhost",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@localhost",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    env = {**os.environ, **git}
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "work tree"],
        ["git", "tag", "-a", course.RELEASE, "-m", f"gpulab {course.RELEASE}"],
        ["git", "commit", "-q", "--allow-empty", "-m", "main after the release"],
    ):
        subprocess.run(command, cwd=where, env=env, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", f"{course.RELEASE}^{{commit}}"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


# Colab imports google.colab in every kernel before the first cell runs.
AS_COLAB = """\
import sys, types
google, colab = types.ModuleType("google"), types.ModuleType("google.colab")
google.colab = colab
sys.modules.update({"google": google, "google.colab": colab})
exec(compile(open(sys.argv[1]).read(), "setup cell", "exec"), {"__name__": "__main__"})
"""


@needs_colab
def test_the_setup_cell_installs_gpulab_as_colab_runs_it_and_changes_nothing_else(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git, to serve the repository from a local clone")
    cells = setup_cells()
    url = f"https://github.com/{course.REPOSITORY}"
    commit = local_repository(tmp_path / "repository")
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f'[url "file://{tmp_path / "repository"}"]\n\tinsteadOf = {url}\n')
    for number, (source, notebooks) in enumerate(cells.items()):
        # the release the notebooks were generated with, never a branch that moves under a class
        assert f'"gpulab @ git+{url}@{course.RELEASE}"' in source, notebooks
        # A copy of Colab's environment without gpulab: hard links (so beside .venv-colab, on its file system),
        # so that what pip adds or removes there never reaches .venv-colab (pip replaces files, never writes
        # into them).
        copies = Path(tempfile.mkdtemp(prefix=".venv-colab-copy-", dir=COLAB_VENV.parent))
        try:
            check_setup_cell(number, source, notebooks, copies / "venv", tmp_path, gitconfig, url, commit)
        finally:
            shutil.rmtree(copies, ignore_errors=True)
    assert sum(map(len, cells.values())) == sum(len(list((ROOT / f).glob("*.ipynb"))) for f in FOLDERS)


def check_setup_cell(number, source, notebooks, colab, tmp_path, gitconfig, url, commit):
    """The setup cell ``source`` (of ``notebooks``) run as Colab runs it, in a copy of .venv-colab at ``colab``."""
    subprocess.run(["cp", "-al", str(COLAB_VENV), str(colab)], check=True)
    python = colab / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "gpulab"], check=True, capture_output=True)
    for hook in (colab / "lib").glob("python3.*/site-packages/gpulab-simulate.pth"):
        hook.unlink()
    before = installed(python)
    assert "gpulab" not in before
    cell = tmp_path / f"setup-{number}.py"
    cell.write_text(source)
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("PYTHONPATH", None)
    env.pop("GPULAB_SIMULATE", None)
    ran = subprocess.run(
        [str(python), "-c", AS_COLAB, str(cell)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert ran.returncode == 0, (
        f"the setup cell of {notebooks[0]} (and {len(notebooks) - 1} more) failed:\n{ran.stderr[-4000:]}"
    )
    after = installed(python)
    assert "gpulab" in after, f"the setup cell did not install gpulab:\n{ran.stderr[-4000:]}"
    del after["gpulab"]
    changed = {p: (before.get(p), after.get(p)) for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert not changed, f"the setup cell changed Colab's packages: {changed}"
    # gpulab is installed, not linked to this work tree, and built from the commit the release's tag names.
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import gpulab, torch, ipywidgets, IPython, ipykernel; print(gpulab.__file__); print(torch.__version__)",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert Path(found[0]).is_relative_to(colab / "lib"), found
    direct = next((colab / "lib").glob("python3.*/site-packages/gpulab-*.dist-info/direct_url.json"))
    record = json.loads(direct.read_text())
    assert record["url"] == url and record["vcs_info"]["commit_id"] == commit, record
    assert record["vcs_info"].get("requested_revision") == course.RELEASE, record
    # And elsewhere (no google.colab), the same cell does nothing.
    quiet = subprocess.run([str(python), str(cell)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stdout == quiet.stderr == "", quiet
