"""Runs that go on beside the rest of the suite: commands run one after another in a background thread.

tests/e2e/test_simulated_course.py (the course on simulated machines) and tests/e2e/test_colab.py (the course on
Colab's stack) start theirs as soon as the session's tests are collected (tests/conftest.py), and their
tests, which read what the runs left, come last.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from conftest import ROOT


class Run:
    """``steps`` ({name: command}) run one at a time in ``folder``'s run, each logging to ``folder/<name>.log``."""

    def __init__(self, name: str, folder: Path, steps: dict, env: dict):
        self.name, self.folder, self.steps, self.env = name, folder, steps, env
        self.returncodes: dict = {}
        self.seconds: dict = {}  # step → its wall time
        self.process = None
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        # One step at a time: each run keeps one process busy, and the rest of the suite the other core.
        for step, command in self.steps.items():
            with (self.folder / f"{step}.log").open("w") as out:
                if self.stopped:
                    return
                started = time.monotonic()
                self.process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT)
                self.returncodes[step] = self.process.wait()
                self.seconds[step] = time.monotonic() - started

    def log(self, step: str) -> str:
        path = self.folder / f"{step}.log"
        return path.read_text() if path.exists() else "(not started)"

    def wait(self, timeout: float) -> None:
        self.thread.join(timeout)

    def stop(self) -> None:
        self.stopped = True
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.thread.join(10)


class Runs:
    """A test module's runs, started once, and the scratch folders they write in: :meth:`stop` ends what is
    still running and removes the folders (tests/conftest.py also calls it at the session's end)."""

    def __init__(self):
        self.started: dict = {}
        self._scratch: list = []

    def folder(self, prefix: str) -> Path:
        folder = Path(tempfile.mkdtemp(prefix=prefix))
        self._scratch.append(folder)
        return folder

    def wait(self, timeout: float) -> dict:
        for run in self.started.values():
            run.wait(timeout)
        return dict(self.started)

    def stop(self) -> None:
        for run in self.started.values():
            run.stop()
        while self._scratch:
            shutil.rmtree(self._scratch.pop(), ignore_errors=True)
