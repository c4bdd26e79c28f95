"""The Gradescope autograder: built by ``gpulab autograder``, unpacked as Gradescope unpacks it, its
``setup.sh`` and ``run_autograder`` run as Gradescope runs them, with ``/autograder`` under a
temporary folder, and every results.json checked against Gradescope's format."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import jsonschema
import pytest

from gpulab import course
from gpulab.grading import gradescope, notebooks, sandbox

from conftest import ROOT

LESSON = "01_devices"
SANDBOXED = not sandbox.unavailable()

# Gradescope's results.json ("Autograder Specifications: Output Format"): a score or per-test scores,
# each test with its name, score, max_score, output and one of four visibilities.
VISIBILITY = {"enum": list(gradescope.VISIBILITIES)}
SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "name": {"type": "string"},
                    "number": {"type": "string"},
                    "output": {"type": "string"},
                    "tags": {"type": "array"},
                    "visibility": VISIBILITY,
                    "extra_data": {"type": "object"},
                },
                "required": ["name", "score", "max_score", "output", "visibility"],
                "additionalProperties": False,
            },
        },
    },
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
    "additionalProperties": False,
}


def _python(folder: Path) -> Path:
    """A Python of its own, as an image's would be: a venv that sees this environment's packages through a
    .pth file (so nothing is downloaded) while anything installed into it stays in it."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    site = Path(
        subprocess.run(
            [str(folder / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "this-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return folder / "bin"


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """An autograder unpacked into ROOT/source, and setup.sh run, as Gradescope builds its image."""
    base = tmp_path_factory.mktemp("gradescope")
    archive = base / "autograder.zip"
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "autograder", LESSON, "--gradescope", str(archive)],
        capture_output=True,
        text=True,
        cwd=base,
    )
    assert done.returncode == 0, done.stderr
    root = base / "autograder"
    with zipfile.ZipFile(archive) as unpacked:
        unpacked.extractall(root / "source")
        for info in unpacked.infolist():  # zipfile keeps no modes: as Gradescope's unzip does
            mode = info.external_attr >> 16
            if mode:
                os.chmod(root / "source" / info.filename, mode & 0o777)
    bin_folder = _python(base / "python")
    env = {
        "PATH": f"{bin_folder}:/usr/bin:/bin",
        "HOME": str(base),
        "LANG": "C.UTF-8",
        "GPULAB_PIP_OPTIONS": "--no-index",
        "GPULAB_AUTOGRADER_ROOT": str(root),
    }
    versions = (
        "import importlib.metadata as m; print([m.version(d) for d in ('torch', 'ipykernel', 'ipywidgets', 'ipython')])"
    )
    before = subprocess.run(
        [str(bin_folder / "python3"), "-c", versions], capture_output=True, text=True, env=env
    ).stdout
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")],
        capture_output=True,
        text=True,
        env=env,
        cwd=root / "source",
        timeout=600,
    )
    after = subprocess.run(
        [str(bin_folder / "python3"), "-c", versions], capture_output=True, text=True, env=env
    ).stdout
    where = subprocess.run(
        [str(bin_folder / "python3"), "-c", "import gpulab; print(gpulab.__file__)"],
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    return {
        "root": root,
        "env": env,
        "setup": setup,
        "before": before,
        "after": after,
        "gpulab": where,
        "archive": archive,
    }


def autograde(image, files: dict[str, bytes], *, sandboxed: bool = True) -> dict:
    """Run run_autograder on a submission of ``files`` (name → content); its results.json."""
    root = image["root"]
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    (root / "submission").mkdir()
    for name, content in files.items():
        (root / "submission" / name).write_bytes(content)
    env = dict(image["env"])
    if not sandboxed:  # a container where bubblewrap cannot be found
        env["PATH"] = env["PATH"].split(":")[0]  # the image's Python alone
    done = subprocess.run(
        ["/bin/bash", str(root / "source" / "run_autograder")],
        capture_output=True,
        text=True,
        env=env,
        cwd=root / "source",
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(found, SCHEMA)
    return found


def notebook_bytes(notebook: dict) -> bytes:
    return (json.dumps(notebook, indent=1) + "\n").encode()


def test_setup_installs_gpulab_and_changes_no_torch_nor_jupyter(image):
    assert image["setup"].returncode == 0, image["setup"].stdout + image["setup"].stderr
    assert "gpulab autograder ready" in image["setup"].stdout
    assert image["before"] == image["after"] and image["before"].strip()
    assert Path(image["gpulab"]).is_relative_to(image["root"] / "source" / "lib")


def test_the_zip_holds_gpulab_with_the_scripts_its_sandbox_and_lesson_06_run_by_path(image):
    with zipfile.ZipFile(image["archive"]) as archive:
        names = set(archive.namelist())
    for script in (
        "grading/zygote.py",
        "grading/kernel_entry.py",
        "grading/kernel_sys_path.py",
        "_torchrun_launcher.py",
        "_scratch_janitor.py",
        "grading/gradescope.py",
    ):
        assert f"lib/gpulab/{script}" in names, script
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    run = (image["root"] / "source" / "run_autograder").read_text()
    assert "python3 -m gpulab.grading.gradescope run" in run


def test_the_zip_holds_the_checks_and_no_solution():
    solution = course.read_notebook(ROOT / "solutions" / f"{LESSON}.ipynb")
    checks = gradescope.checks_notebook(solution)
    text = json.dumps(checks)
    assert notebooks.BEGIN_SOLUTION not in text and notebooks.BEGIN_HIDDEN in text
    for cell in solution["cells"]:
        if notebooks.answer_id(cell):
            body = course.cell_source(cell).split(notebooks.BEGIN_SOLUTION)[1].split(notebooks.END_SOLUTION)[0]
            assert body.strip() and body.strip() not in text
    assert [notebooks.check_role(c) for c in checks["cells"] if notebooks.check_role(c)] == [
        notebooks.check_role(c) for c in solution["cells"] if notebooks.check_role(c)
    ]


@pytest.mark.skipif(not SANDBOXED, reason=sandbox.unavailable())
def test_a_solution_scores_full_marks_and_hidden_checks_show_when_published(image):
    found = autograde(image, {f"{LESSON}.ipynb": (ROOT / "solutions" / f"{LESSON}.ipynb").read_bytes()})
    assert found["tests"] and all(t["score"] == t["max_score"] > 0 for t in found["tests"]), found
    assert found["score"] == sum(t["max_score"] for t in found["tests"])
    checks = course.read_notebook(image["root"] / "source" / "checks" / f"{LESSON}.ipynb")
    hidden = {
        notebooks.check_role(c)["check"]
        for c in checks["cells"]
        if notebooks.check_role(c) and notebooks.BEGIN_HIDDEN in course.cell_source(c)
    }
    assert hidden
    for test in found["tests"]:
        check = test["name"].split(" · ")[1]
        assert test["visibility"] == ("after_published" if check in hidden else "visible"), test
    assert "without a sandbox" not in found["output"]


def test_an_untouched_exercise_notebook_scores_zero_and_without_a_sandbox_it_says_so(image):
    found = autograde(
        image,
        {"doe_jane_4821_01_devices.ipynb": (ROOT / "exercises" / f"{LESSON}.ipynb").read_bytes()},
        sandboxed=False,
    )
    assert found["score"] == 0 and found["tests"] and all(t["score"] == 0 for t in found["tests"])
    assert any("NotImplementedError" in t["output"] for t in found["tests"])
    assert "graded without a sandbox" in found["output"]


@pytest.mark.skipif(not SANDBOXED, reason=sandbox.unavailable())
def test_a_hostile_submission_cannot_pass_its_checks_nor_read_them(image):
    notebook = copy.deepcopy(course.read_notebook(ROOT / "solutions" / f"{LESSON}.ipynb"))
    checks_file = image["root"] / "source" / "checks" / f"{LESSON}.ipynb"
    for cell in notebook["cells"]:
        if notebooks.answer_id(cell) == "agnostic":  # every later cell becomes `pass`
            cell["source"] = "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])"
        elif notebooks.answer_id(cell) == "best-device":  # right, unless it can read the checks
            cell["source"] = (
                f"import os\nassert not os.path.exists({str(checks_file)!r})\n\n"
                "def pick_device():\n    if torch.accelerator.is_available():\n"
                "        return torch.accelerator.current_accelerator()\n    return torch.device('cpu')"
            )
    found = autograde(image, {"mine.ipynb": notebook_bytes(notebook)})
    by_exercise = {}
    for test in found["tests"]:
        by_exercise.setdefault(test["name"].split(" · ")[0], []).append(test)
    assert all(t["score"] == 0 for t in by_exercise["agnostic"]), by_exercise["agnostic"]
    assert "a check that must fail" in found["output"]
    assert all(t["score"] == t["max_score"] for t in by_exercise["best-device"]), by_exercise["best-device"]


@pytest.mark.parametrize(
    "files, reason",
    [
        ({"broken.ipynb": b'{"cells": ['}, "not a notebook"),
        ({"notes.txt": b"hello"}, "no notebook"),
        ({"02_copying.ipynb": (ROOT / "exercises" / "02_copying.ipynb").read_bytes()}, "02_copying"),
    ],
)
def test_a_notebook_that_cannot_be_graded_gets_a_line_that_says_why(image, files, reason):
    found = autograde(image, files, sandboxed=False)
    assert found["score"] == 0 and found["tests"] == []
    assert found["output"].startswith("This notebook could not be graded") and reason in found["output"], found


def test_an_unknown_lesson_or_visibility_is_refused_in_one_line(tmp_path):
    for extra in (["09_nothing"], [LESSON, "--hidden-visibility", "sometimes"]):
        done = subprocess.run(
            [sys.executable, "-m", "gpulab", "autograder", *extra, "--gradescope", str(tmp_path / "a.zip")],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2 and ("09_nothing" in done.stderr or "sometimes" in done.stderr), done.stderr
    assert not (tmp_path / "a.zip").exists()
