"""The first process of a zygote's sandbox: ``python -s zygote.py CONFIG``, started by path.

:class:`gpulab.grading.sandbox.Zygote` starts it. ``CONFIG`` is a JSON object with ``uid`` (-1: stay
this user), ``limits`` (memory, processes, CPU seconds, file bytes) and ``preload`` (modules to
import before any kernel exists). It reads commands from its stdin, a JSON object a line —
``{"spawn": CONNECTION_FILE, "cwd": FOLDER}`` and ``{"end": PID}`` — and writes events to its
stdout: ``{"ready": PID}``, ``{"started": PID}``, ``{"exited": PID, "status": N}``, ``{"ended": PID}``.
Each kernel it forks gives up root and takes the limits before it runs anything; ending one ends
every process of its user.
"""

import gc
import json
import os
import resource
import select
import shutil
import signal
import sys
import time


def say(**event) -> None:
    os.write(sys.stdout.fileno(), (json.dumps(event) + "\n").encode())


def become_kernel(connection: str, cwd: str, uid: int, limits: list[int]) -> None:
    """In the forked child: a session of its own, no root, the limits; then the kernel. Never returns."""
    from ipykernel import kernelapp

    memory, processes, cpu, largest = limits
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    mine = processes
    if uid >= 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    else:
        mine += sum(1 for p in os.listdir("/proc") if p.isdigit() and os.stat("/proc/" + p).st_uid == os.getuid())
    for limit, value in (
        (resource.RLIMIT_DATA, memory),
        (resource.RLIMIT_NPROC, mine),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, largest),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))
    os.chdir(cwd)
    sys.argv = ["ipykernel_launcher", "-f", connection, "--quiet", "--HistoryManager.enabled=False"]
    kernelapp.launch_new_instance()


def alive(user: int) -> list[int]:
    """The processes of ``user`` here that still run (zombies are dead: init reaps them)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        try:
            with open("/proc/" + name + "/status") as handle:
                fields = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue
        if fields.get("State", "").strip()[:1] in ("Z", "X"):
            continue
        if str(user) in fields.get("Uid", "").split():
            found.append(int(name))
    return found


def clear_shared_memory() -> None:
    for name in os.listdir("/dev/shm"):
        path = os.path.join("/dev/shm", name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def end_everything(kernel: int, uid: int) -> None:
    """Every process of the kernel's user here, whoever started it and whatever it became.

    This process may not signal them (it keeps no right but changing user): a helper that becomes the
    user does, with kill(-1), which reaches every process it may signal in this PID namespace, and
    removes the user's files from /dev/shm, which outlives kernels as /tmp does (the grader empties
    /tmp). A process could stop one helper; then another one goes, until none is left.
    """
    if uid < 0:
        try:
            os.killpg(kernel, signal.SIGKILL)
        except OSError:
            pass
    else:
        for _ in range(100):
            helper = os.fork()
            if helper == 0:
                try:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                    for _ in range(3):
                        try:
                            os.kill(-1, signal.SIGKILL)
                        except OSError:
                            pass
                        time.sleep(0.002)
                    clear_shared_memory()
                finally:
                    os._exit(0)
            os.waitpid(helper, 0)
            if not alive(uid):
                break
    try:
        os.waitpid(kernel, 0)
    except ChildProcessError:
        pass  # reaped already: it ended by itself


def main(config: dict) -> None:
    # Python put this file's folder (the grader's) first on sys.path: nothing is imported from it by a bare name.
    if sys.path and os.path.realpath(sys.path[0]) == os.path.dirname(os.path.realpath(__file__)):
        del sys.path[0]
    os.chdir("/")
    uid, limits = config["uid"], config["limits"]
    import ipykernel.kernelapp  # noqa: F401 -- once, here: every kernel forked from this process has it

    home = os.environ.get("TMPDIR", "/tmp")
    handing_over = uid >= 0 and os.geteuid() == 0
    made_before = set(os.listdir(home)) if handing_over else set()
    for name in config["preload"]:
        try:
            __import__(name)
        except Exception:
            pass  # a kernel that needs it then fails as a fresh one would
    if handing_over:
        # What the preload made in the sandbox's /tmp is the kernels': importing torch._dynamo makes Inductor's
        # cache folder there (/tmp/torchinductor_USER), which a kernel could not write into if root kept it.
        for name in set(os.listdir(home)) - made_before:
            for folder, _, files in os.walk(os.path.join(home, name)):
                for path in [folder, *(os.path.join(folder, file) for file in files)]:
                    try:
                        os.lchown(path, uid, uid)
                    except OSError:
                        pass  # then a kernel that writes there fails, as without this
    # What was imported here lives as long as any kernel: its garbage collections need not walk it (torch and
    # torch._dynamo are some 280,000 objects; a gc.collect() in an answer took a third of a second or more).
    gc.collect()
    gc.freeze()
    commands = sys.stdin.fileno()
    kernels = {}
    say(ready=os.getpid())
    pending = b""
    while True:
        readable, _, _ = select.select([commands], [], [], 0.1)
        while kernels:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if kernels.pop(pid, None) is not None:
                say(exited=pid, status=os.waitstatus_to_exitcode(status))
        if not readable:
            continue
        data = os.read(commands, 65536)
        if not data:
            break  # the grader is done, or gone
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            command = json.loads(line)
            if "spawn" in command:
                pid = os.fork()
                if pid == 0:
                    try:
                        become_kernel(command["spawn"], command["cwd"], uid, limits)
                    finally:
                        os._exit(1)
                kernels[pid] = True
                say(started=pid)
            elif "end" in command:
                pid = command["end"]
                end_everything(pid, uid)
                kernels.pop(pid, None)
                say(ended=pid)
    for pid in list(kernels):
        end_everything(pid, uid)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
