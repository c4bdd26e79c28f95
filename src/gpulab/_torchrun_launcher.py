"""The torchrun launcher of :func:`gpulab.distributed.torchrun`: ``python _torchrun_launcher.py``, started by path.

A Python that imports torchrun's code once, then forks a torchrun for each run it is sent (the path
of a JSON request on its stdin). The fork is the torchrun command, arguments and all, minus the two
seconds a new Python spends importing torch; and it forks its ranks (:class:`Worker`) where the
command would start a new Python for each. The launcher takes a request by renaming its file, so a
run stopped before that is withdrawn by deleting the file. Each torchrun gets a session of its own;
the launcher writes its pid to the request's pid file, and the torchrun writes its exit status to
the status file as it ends. The launcher ends when the Python that started it closes its stdin (it
exits, or is killed).

A request is ``{"argv", "env", "cwd", "log", "pid_file", "status_file"}``: torchrun's arguments, its
environment and folder, the file its output goes to, and the two files it answers in.
"""

import atexit
import io
import json
import os
import runpy
import signal
import subprocess
import sys
import time
import traceback
import warnings

# What a Python reads as it starts, before any script: where a run's environment changes one of these, its ranks
# start as new Pythons (CUDA_VISIBLE_DEVICES only on a simulated machine: see main).
AT_START = (
    "GPULAB_SIMULATE",
    "CUDA_VISIBLE_DEVICES",
    "PYTHONPATH",
    "PYTHONHOME",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "PYTHONSAFEPATH",
    "PYTHONNOUSERSITE",
)
RANKS_VARIABLE = "GPULAB_RANKS"  # gpulab.distributed.RANKS_VARIABLE: where each forked rank is noted

torch = None  # imported by main(), after the environment it started with is noted
STARTED_WITH: dict = {}  # those of AT_START this launcher started with
FORKS = False  # whether ranks are forked (torch 2.11 on) or started as new Pythons


class Worker:
    """A rank that torchrun starts as ``python -u SCRIPT ARGS``, forked from torchrun itself, which has imported
    torch: the same script, arguments, environment, session and log files, without the seconds a new Python
    takes to import torch. torchrun watches it as it watches a subprocess.Popen."""

    def __init__(self, args, env, stdout, stderr, start_new_session):
        self.args, self.returncode = args, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: "this process is multi-threaded"
            self.pid = os.fork()
        if self.pid == 0:
            run_worker(args, env, stdout, stderr, start_new_session)
        # A forked rank's /proc/PID/environ is still the launcher's, without the run's mark: the run finds its
        # ranks (and, through their sessions, what they fork) by this note instead.
        if env.get(RANKS_VARIABLE):
            with open(f"/proc/{self.pid}/stat") as stat, open(env[RANKS_VARIABLE], "a") as note:
                note.write(f"{self.pid} {stat.read().rsplit(')', 1)[1].split()[19]}\n")

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig):
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def run_worker(args, env, stdout, stderr, start_new_session):
    """In the forked rank: become ``python -u SCRIPT ARGS`` and run the script; never returns."""
    code = 1
    try:
        if start_new_session:
            os.setsid()
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd, file in ((1, stdout), (2, stderr)):
            if file is not None:
                os.dup2(file.fileno(), fd)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
        )
        os.environ.clear()
        os.environ.update(env)
        if env.get("OMP_NUM_THREADS", "").isdigit():
            torch.set_num_threads(int(env["OMP_NUM_THREADS"]))
        atexit._clear()  # torchrun's own; the script's run as it exits
        sys.argv = list(args[2:])
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[2])))  # as Python puts a script's folder first
        try:
            runpy.run_path(args[2], run_name="__main__")
            code = 0
        except SystemExit as exit:  # as Python ends on sys.exit(code)
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
            if code and not isinstance(exit.code, int):
                print(exit.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def popen(args, env=None, stdout=None, stderr=None, start_new_session=False, **other):
    """What torchrun gets for subprocess.Popen: a forked :class:`Worker` where the command is ``python -u SCRIPT``
    in the environment this launcher started with, else the command itself."""
    args = [str(a) for a in args]
    env = dict(os.environ if env is None else env)
    if (
        not FORKS
        or other
        or len(args) < 3
        or args[:2] != [sys.executable, "-u"]
        or args[2].startswith("-")
        or any(env.get(name) != value for name, value in STARTED_WITH.items())
    ):
        return subprocess.Popen(
            args, env=env, stdout=stdout, stderr=stderr, start_new_session=start_new_session, **other
        )
    return Worker(args, env, stdout, stderr, start_new_session)


def forking_popen(handler, args, env):
    return popen(args, env=env, stdout=handler._stdout, stderr=handler._stderr, start_new_session=True)


def write(path, text):
    with open(path + ".partial", "w") as file:
        file.write(text)
    os.replace(path + ".partial", path)


def run_torchrun(request, torchrun) -> None:
    """In the forked torchrun: run the ``torchrun`` command's main as the request says; never returns."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        try:
            torchrun.main(request["argv"])
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        except BaseException:
            traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            write(request["status_file"], str(code))
        finally:
            os._exit(code)


# What ranks import that torch does not: DDP's constructor imports torch._dynamo (and with it sympy), FSDP2 and DCP
# the DTensor code; about two seconds of each rank's CPU, where the launcher's one import does for all its forks.
PRELOAD = ("torch._dynamo", "torch.distributed.tensor", "torch.distributed.fsdp", "torch.distributed.checkpoint")


def preload() -> None:
    """Import :data:`PRELOAD` here, where forked ranks find it imported; a module this torch lacks is left out."""
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a rank that needs it gets the error itself, with its traceback
            pass


def main() -> None:
    global torch, STARTED_WITH, FORKS
    # Python put this file's folder (gpulab's) first on sys.path: nothing is imported from it as a top-level name.
    if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
        del sys.path[0]
    STARTED_WITH = {name: os.environ.get(name) for name in AT_START}
    if not STARTED_WITH["GPULAB_SIMULATE"]:
        # CUDA reads CUDA_VISIBLE_DEVICES when it initialises ("the number of devices can change due to changes to
        # CUDA_VISIBLE_DEVICES setting prior to CUDA initialization", torch.cuda.device_count), which a launcher
        # that forks never has (below): a forked rank sees its own value. A simulated machine reads it as Python
        # starts (gpulab.simulated.runtime.visible_devices), so there it counts.
        del STARTED_WITH["CUDA_VISIBLE_DEVICES"]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the notebook's to handle
    import torch
    import torch.distributed.run as torchrun
    from torch.distributed.elastic.multiprocessing.subprocess_handler import subprocess_handler

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # every torchrun forked here is reaped as it ends
    # Forked ranks are tested on torch 2.11, 2.13 and 2.15; on 2.6 a rank's DataLoader hung when forked.
    FORKS = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 11)
    if FORKS:
        preload()
        FORKS = not torch.cuda.is_initialized()  # a fork cannot use a CUDA its parent initialised
    subprocess_handler.SubprocessHandler._popen = forking_popen  # how torchrun starts a rank, torch 2.6 to 2.15

    for line in sys.stdin:
        path = line.strip()
        try:
            os.rename(path, path + ".taken")  # unless the run was withdrawn meanwhile
            with open(path + ".taken") as file:
                request = json.load(file)
        except (OSError, ValueError):
            continue
        pid = os.fork()
        if pid:
            write(request["pid_file"], str(pid))
            continue
        run_torchrun(request, torchrun)


if __name__ == "__main__":
    main()
