"""Finding and ending processes: what lesson 06's runs (:mod:`gpulab.distributed`) and the grader share.

Processes are found through ``/proc`` — by a mark in their environment, by a word in their command
line, by the folder they work in — and none is found where there is no ``/proc`` (macOS,
Windows). Ending one never raises: a process that is gone already is what was wanted.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "end_group",
    "kill_processes_mentioning",
    "kill_processes_working_in",
    "other_processes",
    "processes_marked",
    "running",
    "stat_fields",
]


def other_processes(part: str) -> Iterator[tuple[int, bytes]]:
    """(pid, bytes) of ``/proc/PID/<part>`` (``cmdline``, ``environ``, ``stat``) for every readable process but
    this one. Nothing where there is no /proc (macOS, Windows).
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            yield int(entry.name), (entry / part).read_bytes()
        except OSError:
            continue


def processes_marked(variable: str, value: str) -> list[int]:
    """The processes (other than this one) whose environment carries ``variable=value``."""
    needle = f"{variable}={value}".encode()
    return [pid for pid, environ in other_processes("environ") if needle in environ.split(b"\0")]


def stat_fields(pid: int) -> list[str]:
    """``/proc/PID/stat``'s fields after the command's name (state first, start time at 19); [] once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def running(pid: int) -> bool:
    """Whether ``pid`` still runs: gone, or a zombie left for its parent to reap, is not running."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def end_group(process: subprocess.Popen) -> None:
    """Kill a process started in a session of its own, and everything in its process group; wait for it."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
    process.wait()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def kill_processes_mentioning(marker: str) -> None:
    """End every process but this one whose command line names ``marker`` (a kernel left in a temporary folder)."""
    for pid, cmdline in other_processes("cmdline"):
        if marker in cmdline.replace(b"\0", b" ").decode(errors="ignore"):
            _kill(pid)


def kill_processes_working_in(folder: str) -> None:
    """End every process but this one whose working folder is ``folder`` or inside it (what a kernel started)."""
    for pid, _ in other_processes("stat"):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == folder or cwd.startswith(folder + "/"):
            _kill(pid)
