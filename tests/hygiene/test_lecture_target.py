"""`make lecture LESSON=02` opens that one lesson in JupyterLab, and says how to call it when LESSON names none.

The Makefile's recipe runs here with a stand-in for .venv: its `.installed` is fresh (so nothing is installed)
and its `jupyter` prints what it was asked to start.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import ROOT


@pytest.fixture
def venv(tmp_path):
    (tmp_path / "bin").mkdir()
    jupyter = tmp_path / "bin" / "jupyter"
    jupyter.write_text('#!/bin/sh\necho "jupyter $*"\n')
    jupyter.chmod(0o755)
    (tmp_path / ".installed").touch()
    return tmp_path


def lecture(venv, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", "lecture", f"VENV={venv}", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
    )


@pytest.mark.parametrize("lesson", ["02", "02_copying"])
def test_make_lecture_opens_the_one_lesson_in_jupyterlab_and_says_how_to_present_it(venv, lesson):
    ran = lecture(venv, f"LESSON={lesson}")
    assert ran.returncode == 0, ran.stderr
    started = ran.stdout.splitlines()[-1]  # with make lab's LAB_FLAGS (--allow-root where root runs it)
    assert started.startswith("jupyter lab --ip=127.0.0.1 ") and started.endswith(" notebooks/02_copying.ipynb")
    assert "deck button" in ran.stdout and "Run All Cells" in ran.stdout


@pytest.mark.parametrize("lesson", ["", "99", "0"])  # none, no such lesson, and several (00 … 07)
def test_make_lecture_without_one_lesson_says_which_there_are_and_starts_nothing(venv, lesson):
    ran = lecture(venv, f"LESSON={lesson}")
    assert ran.returncode != 0 and "jupyter lab" not in ran.stdout
    assert "make lecture LESSON=NN" in ran.stdout and "00 01 02 03 04 05 06 07" in ran.stdout
