"""Runs that go on beside the rest of the suite: commands run one after another in a background thread.

tests/e2e/test_simulated_course.py (the course on simulated machines) and tests/e2e/test_colab.py (the course on
Colab's stack) start theirs as soon as the session's tests are collected (tests/conftest.py), and their
tests, which read what the runs left, come last.

Until the answers' grading or those tests start, the runs and the suite's own tests keep to cores of their own
(:func:`hold`): the suite's tests, one at a time, the first core, with one torch thread; the runs the rest. Sharing
every core, the runs slowed the suite's tests as much as themselves, and once the runs were done those tests ran one
at a time beside an idle core; with only the runs kept off a core, a torch op of the suite's, split over two threads,
waited at each step for its thread on the runs' busy core (the panels of every lesson took 6 minutes instead of
1.5). Then everything may use every core (:func:`release`): the answers' kernels are one thread each.
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
_EVERY = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None  # the cores this Python may use
_HELD: dict = {}  # while held: {"threads": this Python's torch threads before}; "released" once released


def cores() -> set | None:
    """The cores a run may use until :func:`release`: all but the first, where there are two or more and this system
    lets a process choose (Linux); None where it does not (every core)."""
    return _EVERY - {min(_EVERY)} if _EVERY is not None and len(_EVERY) >= 2 else None


def _pin(tasks, where: set) -> None:
    for task in tasks:
        try:
            os.sched_setaffinity(task, where)
        except OSError:
            pass  # it ended, or is not this user's to change


def _threads_of_this_python() -> list[int]:
    return [int(task) for task in os.listdir(f"/proc/{os.getpid()}/task")]


def hold() -> None:
    """This Python (the suite's own tests, and what they start) keeps to the core the runs keep off, with one torch
    thread, until :func:`release`."""
    if cores() is None or _HELD:
        return  # held, or released: once each
    import torch

    _pin(_threads_of_this_python(), {min(_EVERY)})
    _HELD["threads"] = torch.get_num_threads()
    torch.set_num_threads(1)


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
    """Everything may use every core from now on: this Python, what the runs run now, and their steps still to
    start."""
    if _EVERY is None or "released" in _HELD:
        return
    if "threads" in _HELD:
        import torch

        _pin(_threads_of_this_python(), _EVERY)
        torch.set_num_threads(_HELD.pop("threads"))
    _HELD["released"] = True
    for runs in _ALL:
        for run in runs.started.values():
            for _ in range(2):  # twice: a process started during the first walk is found in the second
                process = run.process
                _pin(_tree(process.pid) if process is not None and process.poll() is None else (), _EVERY)


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
                if "released" not in _HELD and cores() is not None:
                    _pin([self.process.pid], cores())  # as Python starts: what it starts later inherits the cores
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
        for run in self.started.values():
            run.wait(timeout)
        return dict(self.started)

    def stop(self) -> None:
        for run in self.started.values():
            run.stop()
        while self._scratch:
            shutil.rmtree(self._scratch.pop(), ignore_errors=True)
