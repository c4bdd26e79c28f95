"""Running a script on several processes with ``torchrun``, from a notebook, on any machine.

A training function cannot be handed to worker processes from a notebook: a worker started by
``torch.multiprocessing.spawn`` imports the function by name, and a notebook's ``__main__`` is not
a file it can import. So a lesson writes its script to a file and starts it with
``torchrun`` — exactly as on a cluster — through :func:`torchrun`, which

- chooses how many threads each process gets, so that N processes share the cores fairly;
- streams every rank's output into the notebook as it comes, each line marked with its rank;
- gives back what rank 0 handed to :func:`save_result`, and every rank's log;
- raises :class:`RankFailed` with the failing rank's traceback when a rank fails, and
  :class:`DistributedTimeout` when the ranks do not finish in time (a hang);
- leaves nothing running: on success, failure, timeout or an interrupt, every process it
  started is ended, its workers included (torchrun starts each in a session of its own);
- starts fast: a small Python (``_torchrun_launcher.py``, run by path) that has loaded torchrun's code
  once forks a fresh torchrun for every run (the ``torchrun`` command's own ``main``, with the same
  arguments), and from torch 2.11 on that torchrun forks each rank where it would start
  ``python -u SCRIPT ARGS`` (same script, arguments, environment, session and log files), so neither
  waits the seconds a new Python takes to import torch. Nothing has touched a GPU before those forks, as CUDA requires.

Inside the script, :func:`init_process_group` joins the group with the backend the hardware
allows (NCCL where every process has a CUDA GPU of its own, gloo on CPU processes otherwise) and
returns the device the rank computes on.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from . import _processes

__all__ = [
    "DistributedError",
    "DistributedTimeout",
    "RankFailed",
    "Run",
    "backend_for",
    "finish",
    "init_process_group",
    "remove_scratch_folder",
    "report_progress",
    "save_result",
    "scratch_folder",
    "startup_s",
    "torchrun",
]

RESULT_VARIABLE = "GPULAB_RESULT"
PROGRESS_VARIABLE = "GPULAB_PROGRESS"
BACKEND_VARIABLE = "GPULAB_BACKEND"
MARK_VARIABLE = "GPULAB_RUN"  # every process a run starts inherits it: how the leftovers are found
RANKS_VARIABLE = "GPULAB_RANKS"  # where torchrun notes each rank it forks ("pid start-time" a line)
# Run by path, each a Python of its own: the launcher that forks a torchrun for every run, and the janitor that
# removes a killed Python's scratch folder.
_LAUNCHER_SCRIPT = Path(__file__).with_name("_torchrun_launcher.py")
_JANITOR = Path(__file__).with_name("_scratch_janitor.py")


class DistributedError(RuntimeError):
    """A run of ranks that did not end well."""


class RankFailed(DistributedError):
    """A rank raised, or was killed; the message holds its traceback."""


class DistributedTimeout(DistributedError):
    """The ranks did not finish in time: usually a rank waits in a collective another never joins."""


def backend_for(nproc: int) -> str:
    """``"nccl"`` when each of ``nproc`` processes on this machine can have a CUDA GPU of its own, else ``"gloo"``.

    NCCL needs one GPU per process: two ranks on the same GPU fail to start. gloo runs anywhere,
    on CPU tensors.
    """
    import torch
    import torch.distributed as dist

    cuda_ok = torch.cuda.is_available() and torch.cuda.device_count() >= nproc and dist.is_nccl_available()
    return "nccl" if cuda_ok else "gloo"


def init_process_group(timeout_s: float = 60.0):
    """In a script started by torchrun: join the process group; return the device this rank computes on.

    The backend is NCCL when this machine has a CUDA GPU for every local process (each process then
    uses ``cuda:LOCAL_RANK``), and gloo on the CPU otherwise. A collective that waits longer than
    ``timeout_s`` for the other ranks fails instead of hanging: gloo raises in the waiting call,
    NCCL's watchdog thread aborts the process (``init_process_group``'s docstring in
    torch/distributed/distributed_c10d.py). The timeout is the default group's: a group made with
    ``dist.new_group`` takes its own ``timeout=``, or the backend's default (10 minutes for NCCL, 30 for gloo).
    """
    import torch
    import torch.distributed as dist

    local_rank, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    backend = os.environ.get(BACKEND_VARIABLE) or backend_for(local_world)
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    # device_id: NCCL sets its communicator up for this GPU at once, and barrier() knows the rank's GPU
    # (torch/distributed/distributed_c10d.py: without it, every barrier warns that it guesses).
    dist.init_process_group(
        backend, timeout=timedelta(seconds=timeout_s), device_id=device if backend == "nccl" else None
    )
    return device


def finish() -> None:
    """End a script's rank: wait for the other ranks, leave the process group, and exit at once.

    A Python that has used DDP over gloo can abort in its last moments, after its work is done
    ("terminate called without an active exception": about one run in ten on a 2-core machine),
    when gloo's threads and DDP's objects are torn down while the interpreter shuts down. Exiting
    with ``os._exit`` right after ``destroy_process_group`` skips that shutdown, and the second it
    takes once DDP has imported ``torch._dynamo``. Call it last: nothing after it runs.
    """
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def startup_s(nproc: int) -> float:
    """About how long a run of ``nproc`` processes takes beyond its work: starting, joining the group, ending.

    A rough model for a panel's time estimate, fitted to lesson 06's panels on a 2-core machine (their
    runs of 2 processes take 2 to 3.5 s). Where Python cannot fork (macOS, Windows) each process also
    imports torch itself, side by side, and a run takes about as long again.
    """
    return 0.6 + 0.9 * nproc


def save_result(value: Any) -> None:
    """On rank 0, hand ``value`` (anything :mod:`json` can write) back to the notebook that started the run.

    Started from :func:`torchrun`, the value becomes ``run.result``; started by hand, it is printed.
    Other ranks' calls do nothing.
    """
    if int(os.environ.get("RANK", "0")) != 0:
        return
    path = os.environ.get(RESULT_VARIABLE)
    if not path:
        print("result:", json.dumps(value))
        return
    partial = f"{path}.partial"
    with open(partial, "w") as file:
        json.dump(value, file)
    os.replace(partial, path)


def report_progress(done: int, total: int) -> None:
    """On rank 0, tell the notebook how far the run is (a panel's progress bar follows it)."""
    path = os.environ.get(PROGRESS_VARIABLE)
    if path and int(os.environ.get("RANK", "0")) == 0:
        with open(path, "a") as file:
            file.write(f"{int(done)} {int(total)}\n")


_SCRATCH: Path | None = None


def scratch_folder() -> Path:
    """A private temporary folder for this Python's scripts and run logs, removed when Python exits.

    Lessons write their scripts here (``%%writefile {scripts}/train.py``), so nothing is left
    beside the notebook.
    """
    global _SCRATCH
    if _SCRATCH is None or not _SCRATCH.is_dir():
        _remove_orphans()
        _SCRATCH = Path(tempfile.mkdtemp(prefix=f"gpulab-scripts-{os.getpid()}-"))
        atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
        # A kernel that is killed runs no atexit: a small process of its own removes the folder then.
        subprocess.Popen(
            [sys.executable, "-I", "-S", str(_JANITOR), str(_SCRATCH), str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    return _SCRATCH


def remove_scratch_folder() -> None:
    """Remove this Python's scratch folder now, with everything in it (the next use makes a new one)."""
    global _SCRATCH
    if _SCRATCH is not None:
        shutil.rmtree(_SCRATCH, ignore_errors=True)
        _SCRATCH = None


def _remove_orphans() -> None:
    """Remove the scratch folders of Pythons that are gone without cleaning up (a kernel that was killed)."""
    for folder in Path(tempfile.gettempdir()).glob("gpulab-scripts-*-*"):
        try:
            os.kill(int(folder.name.split("-")[2]), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (ValueError, OSError):
            continue


@dataclass
class Run:
    """What a :func:`torchrun` run left: its command, exit status, time, each rank's log, rank 0's result."""

    command: list[str]
    nproc: int
    backend: str
    threads: int
    returncode: int
    seconds: float
    logs: dict[int, str] = field(default_factory=dict)
    result: Any = None
    errors: dict[int, str] = field(default_factory=dict)  # what each rank wrote to stderr
    launcher: str = ""  # torchrun's own output

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def failure(self) -> str:
        """Why the run failed: the traceback of the rank torchrun names as the root cause, or its own report."""
        if self.ok:
            return ""
        root = re.search(r"Root Cause.*?rank\s*:\s*(\d+)", self.launcher, re.S)
        order = sorted(self.errors, key=lambda rank: (root is None or rank != int(root.group(1)), rank))
        for rank in order:
            lines = [_unprefixed(line) for line in self.errors[rank].splitlines()]
            starts = [i for i, line in enumerate(lines) if line.startswith("Traceback")]
            if starts:
                return f"rank {rank} failed:\n" + "\n".join(lines[starts[0] :])
        return f"torchrun exited with status {self.returncode}:\n" + _tail(self.launcher, 25)


def _unprefixed(line: str) -> str:
    """A log line without the ``[rankN]: `` torch puts before every line of an uncaught exception."""
    if line.startswith("[rank") and "]: " in line[:16]:
        return line.split("]: ", 1)[1]
    return line


def _forked_ranks(note: Path) -> list[int]:
    """The ranks torchrun forked (noted in ``note``, RANKS_VARIABLE) that still run: the same pid, started when noted."""
    alive = []
    for line in _read(note).splitlines():
        pid, started = line.split()
        fields = _processes.stat_fields(int(pid))
        if fields and fields[19] == started and fields[0] not in ("Z", "X"):
            alive.append(int(pid))
    return alive


_LAUNCHER: subprocess.Popen | None = None


def _launcher() -> subprocess.Popen | None:
    """This Python's launcher, started on first use; None off Linux, where the torchrun command runs instead.

    (Windows cannot fork; on macOS a forked process may crash where the parent had started the
    system's frameworks.)
    """
    global _LAUNCHER
    if not sys.platform.startswith("linux"):
        return None
    if _LAUNCHER is None or _LAUNCHER.poll() is not None:
        log = open(scratch_folder() / "launcher.log", "ab")
        _LAUNCHER = subprocess.Popen(
            [sys.executable, str(_LAUNCHER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        atexit.register(_end_launcher, _LAUNCHER)
    return _LAUNCHER


def _end_launcher(launcher: subprocess.Popen) -> None:
    launcher.stdin.close()  # its loop ends: it exits
    try:
        launcher.wait(timeout=2)
    except subprocess.TimeoutExpired:
        launcher.kill()
        launcher.wait()


class _Forked:
    """A torchrun forked by the launcher, watched like a :class:`subprocess.Popen`."""

    def __init__(self, launcher: subprocess.Popen, folder: Path, argv: list[str], env: dict, log: Path):
        self.launcher, self.returncode = launcher, None
        self.pid_file, self.status_file = folder / "torchrun.pid", folder / "torchrun.status"
        self.request = folder / "request.json"
        self.request.write_text(
            json.dumps(
                {
                    "argv": argv,
                    "env": env,
                    "cwd": os.getcwd(),
                    "log": str(log),
                    "pid_file": str(self.pid_file),
                    "status_file": str(self.status_file),
                }
            )
        )
        try:
            os.write(launcher.stdin.fileno(), f"{self.request}\n".encode())  # one short write: all or nothing
        except BrokenPipeError:
            pass  # the launcher has ended: poll() says so

    def withdraw(self) -> bool:
        """Take back a request the launcher has not taken yet; False once it has (its pid comes in a moment)."""
        try:
            self.request.unlink()
        except FileNotFoundError:
            return False
        self.returncode = -signal.SIGTERM
        return True

    @property
    def pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text())
        except (OSError, ValueError):
            return None

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        pid = self.pid
        if pid is None:
            if self.launcher.poll() is not None:  # the launcher ended before it forked this run
                self.returncode = -1
                with open(self.status_file.with_name("torchrun.log"), "a") as log:
                    log.write(
                        f"gpulab's torchrun launcher ended (status {self.launcher.returncode}) before it "
                        f"started torchrun:\n{_tail(_read(scratch_folder() / 'launcher.log'), 20)}\n"
                    )
            return self.returncode
        try:
            os.kill(pid, 0)
            return None
        except ProcessLookupError:
            pass
        try:
            self.returncode = int(self.status_file.read_text())
        except (OSError, ValueError):
            self.returncode = -signal.SIGKILL  # it ended without a word: killed
        return self.returncode

    def wait(self) -> int:
        while self.poll() is None:
            time.sleep(0.02)
        return self.returncode


def _stop(process: subprocess.Popen | _Forked, mark: str, ranks: Path, grace_s: float = 3.0) -> None:
    """End the torchrun process and every process it started, gently first (workers may be mid-write): those
    that carry ``mark`` in their environment, and the ranks noted in ``ranks`` with their sessions."""
    if process is None:  # it failed to start
        return
    if isinstance(process, _Forked) and process.pid is None and process.poll() is None:
        if process.withdraw():  # never started
            return
        while process.pid is None and process.launcher.poll() is None:
            time.sleep(0.01)  # taken: forked in a moment

    def left():
        return set(_processes.processes_marked(MARK_VARIABLE, mark)) | set(_forked_ranks(ranks))

    def signal_all(sig):
        targets = left()
        forked = set(_forked_ranks(ranks))
        for group in ([process.pid] if process.pid is not None else []) + sorted(forked):
            try:
                os.killpg(group, sig)
            except OSError:
                pass
        for pid in targets:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        signalled.update(targets)
        return targets

    signalled: set = set()
    if not signal_all(signal.SIGTERM) and process.poll() is not None:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and (process.poll() is None or left()):
        time.sleep(0.05)
    for _ in range(20):  # a worker may start a process while it is being stopped
        if not signal_all(signal.SIGKILL) and process.poll() is not None:
            break
        time.sleep(0.05)
    process.wait()
    # A killed process may take a moment to go (a CUDA build of torch has gigabytes to unmap); while it does,
    # its /proc environment already reads empty. Gone means gone, or a zombie left for its parent to reap.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_processes.running(pid) for pid in signalled):
        time.sleep(0.02)


class _LogTail:
    """Reads what every rank wrote to its log files since the last look; prints complete lines."""

    def __init__(self, folder: Path, echo: bool):
        self.folder, self.echo = folder, echo
        self.offsets: dict[Path, int] = {}
        self.partial: dict[Path, str] = {}
        self.text: dict[int, list[str]] = {}
        self.errors: dict[int, list[str]] = {}

    def poll(self, final: bool = False) -> None:
        for path in sorted(self.folder.glob("**/attempt_*/*/std*.log")):
            rank = int(path.parent.name)
            try:
                with open(path, "rb") as file:
                    file.seek(self.offsets.get(path, 0))
                    data = file.read()
            except OSError:
                continue
            self.offsets[path] = self.offsets.get(path, 0) + len(data)
            pending = self.partial.get(path, "") + data.decode(errors="replace")
            *lines, rest = pending.split("\n")
            if final and rest:
                lines, rest = lines + [rest], ""
            self.partial[path] = rest
            for line in lines:
                self.text.setdefault(rank, []).append(line)
                if path.name == "stderr.log":
                    self.errors.setdefault(rank, []).append(line)
                if self.echo:
                    print(f"[rank {rank}] {_unprefixed(line)}", flush=True)

    def logs(self, errors_only: bool = False) -> dict[int, str]:
        return {rank: "\n".join(lines) for rank, lines in sorted((self.errors if errors_only else self.text).items())}


def torchrun(
    script: str | os.PathLike,
    nproc: int = 2,
    *,
    args: tuple | list = (),
    timeout_s: float = 60.0,
    threads: int | None = None,
    backend: str | None = None,
    echo: bool = True,
    check: bool = True,
    progress: Callable[[int, int], None] | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run ``torchrun --standalone --nproc_per_node=nproc script *args`` and wait for it, at most ``timeout_s``.

    - ``threads``: torch threads per process (default: the cores shared out, at least 1);
    - ``backend``: what :func:`init_process_group` in the script uses (default: :func:`backend_for`);
    - ``echo``: print each rank's output as it comes, ``[rank k]`` before each line;
    - ``check``: raise :class:`RankFailed` if a rank fails (else return the failed :class:`Run`);
    - ``progress``: called with (done, total) as rank 0 calls :func:`report_progress`.

    Raises :class:`DistributedTimeout` after ``timeout_s``. Whatever happens — an interrupt
    included — every process the run started has ended when this returns or raises.
    """
    script = Path(script)
    if not script.is_file():
        raise FileNotFoundError(f"no script {script}: write it first (e.g. with %%writefile)")
    if nproc < 1:
        raise ValueError(f"nproc must be at least 1, got {nproc}")
    threads = threads or max(1, (os.cpu_count() or 1) // nproc)
    backend = backend or backend_for(nproc)
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=scratch_folder()))
    mark = uuid.uuid4().hex
    result_path, progress_path = folder / "result.json", folder / "progress"
    visible = ["torchrun", "--standalone", f"--nproc_per_node={nproc}", str(script), *map(str, args)]
    arguments = [
        "--standalone",
        f"--nproc_per_node={nproc}",
        "--monitor-interval=0.05",
        f"--log-dir={folder / 'logs'}",
        "--redirects=3",
        str(script),
        *map(str, args),
    ]
    command = [sys.executable, "-m", "torch.distributed.run", *arguments]
    run_env = dict(os.environ, **(env or {}))
    run_env.update(
        {
            MARK_VARIABLE: mark,
            RESULT_VARIABLE: str(result_path),
            PROGRESS_VARIABLE: str(progress_path),
            BACKEND_VARIABLE: backend,
            RANKS_VARIABLE: str(folder / "ranks"),
            "OMP_NUM_THREADS": str(threads),
            "PYTHONUNBUFFERED": "1",
        }
    )
    if echo:
        print(f"$ {' '.join(visible)}    ({backend}, {threads} thread{'s' * (threads != 1)} per process)", flush=True)
    tail = _LogTail(folder / "logs", echo)
    launcher_log = open(folder / "torchrun.log", "w+")
    start = time.monotonic()
    seen_progress, interrupted, process = 0, False, None
    try:
        launcher = _launcher()
        if launcher is not None:
            process = _Forked(launcher, folder, arguments, run_env, folder / "torchrun.log")
        else:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=launcher_log,
                stderr=subprocess.STDOUT,
                env=run_env,
                start_new_session=True,
            )
        while process.poll() is None:
            if time.monotonic() - start > timeout_s:
                tail.poll(final=True)
                raise DistributedTimeout(
                    f"the {nproc} ranks did not finish within {timeout_s:g} s and were stopped. A rank waiting for a "
                    "collective (all_reduce, barrier, …) that another rank never calls waits for ever (over NCCL, at "
                    "the first line that needs the result, not at the call): check that every rank makes the same "
                    "collective calls in the same order." + _last_lines(tail.logs())
                )
            tail.poll()
            if progress is not None and progress_path.exists():
                steps = progress_path.read_text().splitlines()
                for line in steps[seen_progress:]:
                    done, total = map(int, line.split())
                    progress(done, total)
                seen_progress = len(steps)
            time.sleep(0.05)
        tail.poll(final=True)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        _stop(process, mark, folder / "ranks")
        launcher_log.seek(0)
        launcher_text = launcher_log.read()
        launcher_log.close()
        result = json.loads(result_path.read_text()) if result_path.exists() else None
        shutil.rmtree(folder, ignore_errors=True)
        if interrupted:
            print(f"interrupted: the {nproc} ranks were stopped", flush=True)
    run = Run(
        visible,
        nproc,
        backend,
        threads,
        process.returncode,
        time.monotonic() - start,
        tail.logs(),
        result,
        tail.logs(errors_only=True),
        launcher_text,
    )
    if check and not run.ok:
        raise RankFailed(run.failure())
    return run


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _last_lines(logs: dict[int, str]) -> str:
    shown = [f"rank {rank}, last lines:\n{_tail(text, 5)}" for rank, text in logs.items() if text.strip()]
    return ("\n" + "\n".join(shown)) if shown else ""
