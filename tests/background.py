"""Runs that go on beside the rest of the suite: commands run one after another in a background thread.

tests/e2e/test_simulated_course.py (the course on simulated machines) and tests/e2e/test_colab.py (the course on
Colab's stack) start theirs as soon as the session's tests are collected (tests/conftest.py), and their
tests, which read what the runs left, come last.

Until those tests start, the runs keep off one core (:func:`cores`): the suite's own tests, one at a time, find it
free, as they would on a quiet machine, while the runs share the rest. Sharing every core, the runs slowed those
tests (a browser test, the bench, a grading) as much as themselves, and once the runs were done the suite's single-test
stretch left a core idle. When the tests that read the runs start, the runs take every core (:func:`release`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from conftest import ROOT

_ALL: list = []  # every Runs, to release their cores at once


def cores() -> set | None:
    """The cores a run may use while the suite's own tests run: all but one, where there are two or more and this
    system lets a process choose (Linux); None where it does not (every core)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    every = os.sched_getaffinity(0)
    return every - {min(every)} if len(every) >= 2 else None


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it: their thread ids (an affinity is each thread's own)."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        process = todo.pop()
        try:
            found.extend(int(thread) for thread in os.listdir(f"/proc/{process}/task"))
        except OSError:
            continue
        todo.extend(children.get(process, ()))
    return found


def release() -> None:
    """Every run may use every core from now on: what runs now, and the steps still to start."""
    if not hasattr(os, "sched_getaffinity"):
        return
    every = os.sched_getaffinity(0)
    for runs in _ALL:
        for run in runs.started.values():
            run.cores = None
            for _ in range(2):  # twice: a process started during the first walk is found in the second
                process = run.process
                for thread in _tree(process.pid) if process is not None and process.poll() is None else ():
                    try:
                        os.sched_setaffinity(thread, every)
                    except OSError:
                        pass  # it ended, or is not this user's to change: it keeps its one core


class Run:
    """``steps`` ({name: command}) run one at a time in ``folder``'s run, each logging to ``folder/<name>.log``."""

    def __init__(self, name: str, folder: Path, steps: dict, env: dict):
        self.name, self.folder, self.steps, self.env = name, folder, steps, env
        self.returncodes: dict = {}
        self.seconds: dict = {}  # step → its wall time
        self.process = None
        self.stopped = False
        self.cores = cores()
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
                if self.cores is not None:
                    try:  # as Python starts: what it starts later inherits the cores
                        os.sched_setaffinity(self.process.pid, self.cores)
                    except OSError:
                        pass
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
        _ALL.append(self)

    def folder(self, prefix: str) -> Path:
        folder = Path(tempfile.mkdtemp(prefix=prefix))
        self._scratch.append(folder)
        return folder

    def wait(self, timeout: float) -> dict:
        release()
        for run in self.started.values():
            run.wait(timeout)
        return dict(self.started)

    def stop(self) -> None:
        for run in self.started.values():
            run.stop()
        while self._scratch:
            shutil.rmtree(self._scratch.pop(), ignore_errors=True)
