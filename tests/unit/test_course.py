"""Headers and the README's lesson table are generated from one setting."""

import json
import re
import subprocess
import sys

import pytest

import gpulab
from gpulab import course


def test_the_repository_path_is_written_in_one_place(root):
    hits = [
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file()
        and path.suffix in {".py", ".toml", ".cfg", ".yml", ".txt"}
        and not any(part.startswith(".") for part in path.relative_to(root).parts)
        and f'"{course.REPOSITORY}"' in path.read_text(encoding="utf-8", errors="ignore")
    ]
    assert hits == ["src/gpulab/course.py"]


def test_header_has_title_badge_and_a_colab_only_setup_cell():
    title, setup = course.header_cells("notebooks/01_devices.ipynb")
    assert title.startswith("# 01 · Devices: where tensors live\n")
    assert f"({course.colab_url('notebooks/01_devices.ipynb')})" in title
    assert course.colab_url("notebooks/01_devices.ipynb") == (
        f"https://colab.research.google.com/github/{course.REPOSITORY}/blob/{course.RELEASE}/notebooks/01_devices.ipynb"
    )
    assert 'if "google.colab" in sys.modules:' in setup
    assert f'"gpulab @ git+https://github.com/{course.REPOSITORY}@{course.RELEASE}"' in setup


def test_headers_name_the_release_they_were_generated_with_never_a_branch():
    assert course.RELEASE == f"v{gpulab.__version__}"
    assert re.fullmatch(r"v\d+\.\d+\.\d+", course.RELEASE), "a release is tagged vX.Y.Z (README, Releases)"
    title, setup = course.header_cells("solutions/01_devices.ipynb")
    # the one git revision each names is the tag
    assert re.findall(r"/blob/([^/]+)/", title) == [course.RELEASE]
    assert re.findall(r"git\+https://[^\s\"@]+@([^\s\"]+)", setup) == [course.RELEASE]


def test_setup_cell_does_nothing_outside_colab():
    _, setup = course.header_cells("notebooks/01_devices.ipynb")
    calls = []
    fake_subprocess = type(sys)("subprocess")
    fake_subprocess.run = lambda *a, **k: calls.append(a)
    saved = sys.modules.get("subprocess")
    try:
        sys.modules["subprocess"] = fake_subprocess
        exec(setup, {})
        assert calls == []
        sys.modules["google.colab"] = type(sys)("google.colab")
        exec(setup, {})
        assert len(calls) == 1 and calls[0][0][1:4] == ["-m", "pip", "install"]
    finally:
        sys.modules.pop("google.colab", None)
        sys.modules["subprocess"] = saved


def test_exercise_and_solution_headers_say_what_they_are():
    assert course.header_cells("exercises/01_devices.ipynb")[0].startswith(
        "# 01 · Devices: where tensors live — exercises\n"
    )
    assert "solutions/01_devices.ipynb" in course.header_cells("solutions/01_devices.ipynb")[0]
    with pytest.raises(ValueError):
        course.header_cells("notebooks/99_unknown.ipynb")


def test_sync_headers_repairs_a_notebook(tmp_path):
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "notebooks" / "01_devices.ipynb"
    stale = {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "a",
                "metadata": {"slideshow": {"slide_type": "slide"}},
                "source": ["# Old title"],
            },
            {
                "cell_type": "code",
                "id": "b",
                "metadata": {"slideshow": {"slide_type": "skip"}},
                "execution_count": None,
                "outputs": [],
                "source": ["if 'google.colab' in sys.modules: pass"],
            },
            {"cell_type": "markdown", "id": "c", "metadata": {}, "source": ["body"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(stale))
    assert course.sync_headers(tmp_path, check=True) == ["notebooks/01_devices.ipynb"]
    assert json.loads(path.read_text()) == stale  # check changes nothing
    assert course.sync_headers(tmp_path) == ["notebooks/01_devices.ipynb"]
    repaired = json.loads(path.read_text())
    assert course.header_matches(repaired, "notebooks/01_devices.ipynb")
    assert len(repaired["cells"]) == 3 and repaired["cells"][2]["source"] == ["body"]
    # the header cells keep their metadata: the slide types `gpulab slides` wrote stay
    assert [cell["metadata"] for cell in repaired["cells"][:2]] == [
        {"slideshow": {"slide_type": "slide"}},
        {"slideshow": {"slide_type": "skip"}},
    ]
    assert course.sync_headers(tmp_path) == []


def test_readme_lesson_table_is_the_generated_one(root):
    readme = (root / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- lessons:start -->\n(.*?)\n<!-- lessons:end -->", readme, re.S)
    assert match, "README.md lacks the lesson table markers"
    assert match.group(1) == course.lesson_table(root), "run `gpulab headers` to regenerate the table"
    assert course.sync_readme(root, check=True) is False


def test_every_lesson_notebook_is_in_the_course_map(root):
    for folder in course.FOLDERS:
        for path in (root / folder).glob("*.ipynb"):
            assert path.stem in course.LESSONS, path


def test_headers_check_command_passes_on_the_repository(root):
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "headers", "--check", "--root", str(root)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
