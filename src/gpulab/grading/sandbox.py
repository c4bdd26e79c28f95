"""A Jupyter kernel for untrusted code — a student's answers — inside a sandbox.

On Linux the sandbox is bubblewrap (``bwrap``): the kernel sees a read-only view of the system,
of Python and of gpulab, and nothing else of the machine (no home folders, no /tmp, no other
submissions, no solutions); its own writable scratch folder as ``/tmp``; no network; a PID
namespace of its own, so every process it starts ends with it; and limits on memory (address
data), processes and CPU time. Run as root, the kernel also gives up root: it runs as an
unprivileged user id of its own, which is what makes the process limit count.

Without a sandbox (``sandboxed=False``: a student checking their own work on a laptop) the same
kernel runs as a plain child process, with the same clean environment and limits.

The grader talks to the kernel over Unix sockets in the scratch folder, on the shell and control
channels only: what the kernel prints goes nowhere, and a verdict comes from the execute reply.
Nothing the kernel sends is trusted beyond that; see the grader's canaries.

Starting Python, IPython's kernel and torch costs seconds, more than most exercises take to
grade. A :class:`Zygote` pays it once: a sandbox whose first process imports them and then, on
Linux, forks a fresh kernel for each exercise. It stays root with nothing but the right to change
user, and each kernel gives that up before it runs anything; when a kernel is done, every process
of its user is killed and its files are removed before the next one starts. Kernels of one zygote
run one after another, each alone in the sandbox.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import time
import uuid
from functools import lru_cache
from pathlib import Path

from .. import _processes

__all__ = ["ExecuteResult", "Kernel", "KernelDied", "Limits", "Zygote", "can_fork", "unavailable"]

INSIDE = "/tmp"  # where the scratch folder appears inside the sandbox
UID_BASE = 61000  # run as root, kernel k runs as user UID_BASE + k % 1000
MAX_MESSAGE = 16 * 2**20  # bytes of one message from the kernel
# A Unix socket's path holds at most 104 (macOS) to 108 (Linux) bytes. A folder whose sockets
# would be longer than this is reached through a short link in /tmp.
SOCKET_PATH_LIMIT = 100


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one kernel may use. ``cpu_s`` is per process; the grader's clock bounds the wall time."""

    # Each process's data (heap and private writable mappings: what tensors on the host take). Not
    # its address space: CUDA reserves far more of that than it ever uses.
    memory_bytes: int = 6 * 2**30
    processes: int = 256  # processes and threads of the kernel's user
    cpu_s: int = 900
    file_bytes: int = 2 * 2**30  # the largest file it may write


class KernelDied(RuntimeError):
    """The kernel ended (or was ended) before it replied."""


@dataclasses.dataclass
class ExecuteResult:
    status: str  # ok, error, timeout, died
    ename: str = ""
    evalue: str = ""


# Run by path, each the first process of a sandbox: a kernel's, which drops root, sets the limits and becomes the
# kernel; and a zygote's, which forks the kernels. And the script that says where a kernel's Python finds modules.
KERNEL_ENTRY = Path(__file__).with_name("kernel_entry.py")
ZYGOTE = Path(__file__).with_name("zygote.py")
KERNEL_SYS_PATH = Path(__file__).with_name("kernel_sys_path.py")


@lru_cache(maxsize=1)
def unavailable() -> str:
    """Why no sandbox can be made here ("" when one can): one line for the grader to print."""
    if not sys.platform.startswith("linux"):
        return f"no sandbox on {sys.platform}: bubblewrap runs on Linux only"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "no sandbox: bubblewrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)"
    probe = subprocess.run(_bwrap_args(Path("/"), UID_BASE) + ["/bin/true"], capture_output=True, text=True)
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or [f"it exited with status {probe.returncode}"])[-1]
        return f"no sandbox: bubblewrap cannot start here ({reason})"
    return ""


@lru_cache(maxsize=1)
def _python_paths() -> tuple[str, ...]:
    """The folders a kernel's Python reads: its prefixes and every folder on a clean sys.path."""
    printed = subprocess.run(
        [sys.executable, str(KERNEL_SYS_PATH)], capture_output=True, text=True, env=_clean_env(), cwd="/", check=True
    ).stdout
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        str(Path(sys.executable).parent),
        str(Path(os.path.realpath(sys.executable)).parent.parent),
    }
    for entry in json.loads(printed):
        path = Path(entry)
        paths.add(str(path if path.is_dir() else path.parent))
    existing = sorted(p for p in paths if Path(p).exists())
    # A folder inside another one on the list comes with it.
    return tuple(p for p in existing if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in existing))


SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _bwrap_args(scratch: Path, uid: int) -> list[str]:
    args = [
        "bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
    ]
    if os.geteuid() == 0:
        # Root may map mounts without a user namespace; the entry process needs these two to drop root.
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    mounts = [p for p in SYSTEM if os.path.lexists(p)]
    made: set[str] = {"/"}
    for path in mounts:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
        made.add(path)
    if scratch != Path("/"):
        # The scratch folder first: Python may live under /tmp too (a checkout there), and then
        # its folders are mounted inside this one instead of being hidden by it.
        args += ["--bind", str(scratch), INSIDE]
        made.add(INSIDE)
    for path in _python_paths() if scratch != Path("/") else ():
        if any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts):
            continue
        for parent in reversed(Path(path).parents):  # readable by the kernel's user on the way down
            if str(parent) not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", path, path]
    cache = _simulation_cache() if scratch != Path("/") else None
    if cache is not None and not any(str(cache).startswith(m.rstrip("/") + "/") for m in mounts):
        for parent in reversed(cache.parents):
            if str(parent) not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", str(cache), str(cache)]
    args += ["--ro-bind-try", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev"]
    for device in sorted(Path("/dev").glob("nvidia*")):  # the GPUs, where there are
        args += ["--dev-bind", str(device), str(device)]
    if scratch != Path("/"):
        # The sandbox's own name resolves to its loopback, the only network it has: gloo and torchrun
        # look their host up, and a name that needs DNS would wait for a server it cannot reach.
        hosts = scratch.with_name(scratch.name + ".hosts")
        hosts.write_text("127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n")
        args += ["--ro-bind", str(hosts), "/etc/hosts", "--chdir", INSIDE]
    return args


def _clean_env(threads: int = 1, home: str = INSIDE) -> dict[str, str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "USER": "student",
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    # PYTHONPATH is part of how this Python finds its packages (tools/gpu-runner/run.sh installs the
    # suite's that way): a kernel without it could not import ipykernel or gpulab.
    for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "PYTHONPATH", "TZ", "GPULAB_SIMULATE"):
        if name in os.environ:
            env[name] = os.environ[name]
    if home != INSIDE:
        # Without a sandbox, the kernel's temporary files go in its own folder, removed with it: a killed
        # kernel cleans up nothing (lesson 06's scripts folder, say), and /tmp is the machine's.
        env["TMPDIR"] = home
    cache = _simulation_cache()
    if cache is not None:
        env["GPULAB_SIMULATION_CACHE"] = str(cache)
    return env


@lru_cache(maxsize=1)
def _simulation_cache() -> Path | None:
    """The folder with the simulated GPUs' compiled library, built here if needed (kernels read it:
    a check that runs code on a simulated GPU must not need a compiler inside the sandbox)."""
    from ..simulated import native

    try:
        library = native.build()
    except (OSError, RuntimeError):
        return None
    return None if library is None else library.parent


def can_fork() -> bool:
    """Whether kernels may be forked from a :class:`Zygote` here: Linux. (macOS forbids much after a
    fork in a process that has loaded its system frameworks, as torch does; kernels are started
    one by one there.)"""
    return sys.platform.startswith("linux")


def _short(folder: Path) -> tuple[Path, Path | None]:
    """``folder`` itself, or a short link to it in /tmp when its sockets' paths would be too long
    (a deep TMPDIR: macOS's is /var/folders/…/T/). Returns (folder to use, link to remove later)."""
    if len(str(folder)) + 32 <= SOCKET_PATH_LIMIT:
        return folder, None
    for _ in range(100):
        link = Path("/tmp") / f"gpulab-{secrets.token_hex(4)}"
        try:
            os.symlink(folder, link)
        except FileExistsError:
            continue
        return link, link
    raise OSError(f"no short link could be made in /tmp for {folder}")


class _Started:
    """A kernel that is a child process of the grader (bubblewrap's, when sandboxed)."""

    def __init__(self, command: list[str], cwd: Path, env: dict):
        self.popen = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def poll(self) -> int | None:
        return self.popen.poll()

    def kill(self) -> None:
        _processes.end_group(self.popen)


class Zygote:
    """A sandbox (or, unsandboxed, a process) that imports Python's kernel and ``preload`` once and
    forks a kernel for each :meth:`kernel`, in the folder ``scratch``, removed by :meth:`close`.

    Kernels of one zygote run one at a time: ending one ends every process of its user and empties
    the sandbox's /tmp and /dev/shm. ``slot`` picks the user, as for :class:`Kernel`.
    """

    def __init__(
        self,
        scratch: Path,
        *,
        sandboxed: bool,
        limits: Limits = Limits(),
        threads: int = 1,
        slot: int = 0,
        preload: tuple[str, ...] = ("torch",),
        start_timeout: float = 120.0,
    ):
        import threading

        self.scratch, self.sandboxed, self.limits = Path(scratch), sandboxed, limits
        self.uid = UID_BASE + slot % 1000
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.home = self.scratch / "home"  # the kernels' folder: /tmp itself, when sandboxed
        self.inside = INSIDE if sandboxed else str(self.home)
        self.home.mkdir(exist_ok=True)
        config = {
            "uid": self.uid if sandboxed else -1,
            "preload": list(preload),
            "limits": [limits.memory_bytes, limits.processes, limits.cpu_s, limits.file_bytes],
        }
        command = [sys.executable, "-s", str(ZYGOTE), json.dumps(config)]
        if sandboxed:
            if os.geteuid() == 0:
                os.chown(self.home, self.uid, self.uid)
            command = _bwrap_args(self.home, self.uid) + command
        self.process = subprocess.Popen(
            command,
            cwd=self.home,
            env=_clean_env(threads, self.inside),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._events: dict[str, dict] = {}
        self._started: list[int] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.current: int | None = None
        if self._wait("ready", None, time.monotonic() + start_timeout) is None:
            self.close()
            raise KernelDied("the sandbox did not start")
        # What bubblewrap made in /tmp before Python started: the folders it mounts Python on where Python
        # lives under /tmp. They stay when a kernel's files go (removing one would unmount what is on it).
        self._mounts = {entry.name for entry in self.home.iterdir()}

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._changed:
                if "started" in event:
                    self._started.append(event["started"])
                for kind in ("ready", "exited", "ended"):
                    if kind in event:
                        self._events[kind if kind == "ready" else f"{kind}:{event[kind]}"] = event
                self._changed.notify_all()
        with self._changed:
            self._events["gone"] = {}
            self._changed.notify_all()

    def _wait(self, kind: str, pid: int | None, deadline: float) -> dict | None:
        key = kind if pid is None else f"{kind}:{pid}"
        with self._changed:
            while key not in self._events and "gone" not in self._events:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)
            return self._events.get(key)

    def _send(self, **command) -> None:
        try:
            self.process.stdin.write((json.dumps(command) + "\n").encode())
            self.process.stdin.flush()
        except (OSError, ValueError):
            pass  # gone: the wait that follows says so

    @property
    def alive(self) -> bool:
        return self.process.poll() is None and "gone" not in self._events

    def kernel(self, start_timeout: float = 60.0) -> Kernel:
        """A fresh kernel; the one before it must be closed."""
        if self.current is not None:
            raise RuntimeError("a zygote's kernels run one at a time: close the last one first")
        return Kernel(
            self.scratch, sandboxed=self.sandboxed, limits=self.limits, zygote=self, start_timeout=start_timeout
        )

    def _spawn(self, connection: str) -> _Forked:
        self._send(spawn=connection, cwd=self.inside)
        deadline = time.monotonic() + 30
        with self._changed:
            while not self._started and "gone" not in self._events and time.monotonic() < deadline:
                self._changed.wait(deadline - time.monotonic())
            if not self._started:
                raise KernelDied("the sandbox could not start a kernel")
            self.current = self._started.pop(0)
        return _Forked(self, self.current)

    def _status(self, pid: int) -> int | None:
        event = self._events.get(f"exited:{pid}")
        if event is not None:
            return event["status"]
        return None if self.alive else -signal.SIGKILL

    def _end(self, pid: int) -> None:
        self._send(end=pid)
        if self._wait("ended", pid, time.monotonic() + 60) is None and self.alive:
            self._stop()  # it did not answer: the sandbox goes, and its kernels
        if not self.sandboxed:
            _processes.kill_processes_working_in(str(self.home))
        if not self.home.is_dir():
            # Gone (without a sandbox an answer can remove its own folder): this zygote's kernels would have
            # nowhere to start, so it ends, and the grader makes another.
            self._stop()
            self.current = None
            return
        for entry in list(self.home.iterdir()):
            if entry.name in self._mounts:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        self.current = None

    def _stop(self) -> None:
        _processes.end_group(self.process)

    def close(self) -> None:
        """End the sandbox and every kernel in it; remove the scratch folder."""
        try:
            self.process.stdin.close()  # it ends its kernels, and then itself
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self._stop()
        if not self.sandboxed:
            _processes.kill_processes_working_in(str(self.home))
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.home.with_name(self.home.name + ".hosts").unlink(missing_ok=True)

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Forked:
    """A kernel forked by a :class:`Zygote`."""

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote, self.pid, self.ended = zygote, pid, False

    def poll(self) -> int | None:
        return -signal.SIGKILL if self.ended else self.zygote._status(self.pid)

    def kill(self) -> None:
        if not self.ended:
            self.ended = True
            self.zygote._end(self.pid)


class Kernel:
    """An IPython kernel in ``scratch`` (a folder of its own, removed by :meth:`close`), sandboxed or not.

    ``slot`` picks the unprivileged user of a sandboxed kernel run as root: kernels that run at
    the same time need different slots, so that each one's process limit is its own. With a
    ``zygote`` the kernel is forked by it, in its sandbox, and ``scratch`` is the zygote's.
    """

    def __init__(
        self,
        scratch: Path,
        *,
        sandboxed: bool,
        limits: Limits = Limits(),
        threads: int = 1,
        slot: int = 0,
        start_timeout: float = 60.0,
        zygote: Zygote | None = None,
    ):
        import zmq
        from jupyter_client import BlockingKernelClient

        self.zygote = zygote
        self.scratch, self.sandboxed = Path(scratch) if zygote is None else zygote.home, sandboxed
        self.scratch.mkdir(parents=True, exist_ok=True)
        uid = UID_BASE + slot % 1000
        self.sockets, self.link = _short(self.scratch)
        inside = INSIDE if sandboxed else str(self.sockets)
        info = {
            "transport": "ipc",
            "signature_scheme": "hmac-sha256",
            "key": secrets.token_hex(16),
            "kernel_name": "python3",
            "shell_port": 1,
            "iopub_port": 2,
            "stdin_port": 3,
            "control_port": 4,
            "hb_port": 5,
        }
        socket_name = f"kernel-{uuid.uuid4().hex[:8]}"
        (self.scratch / f"{socket_name}.json").write_text(json.dumps(dict(info, ip=f"{inside}/{socket_name}")))
        connection = f"{inside}/{socket_name}.json"
        # jupyter_client 7 (Colab's) wants a zmq.asyncio.Context, 8 a plain one: ask the client which.
        context_class = BlockingKernelClient.class_traits()["context"].klass
        self.context = context_class() if isinstance(context_class, type) else zmq.Context()
        try:
            if zygote is not None:
                self.process = zygote._spawn(connection)
            else:
                kernel = [
                    sys.executable,
                    "-m",
                    "ipykernel_launcher",
                    "-f",
                    connection,
                    "--quiet",
                    "--HistoryManager.enabled=False",
                ]
                command = [
                    sys.executable,
                    "-I",
                    "-S",
                    str(KERNEL_ENTRY),
                    str(uid if sandboxed else -1),
                    str(limits.memory_bytes),
                    str(limits.processes),
                    str(limits.cpu_s),
                    str(limits.file_bytes),
                    *kernel,
                ]
                if sandboxed:
                    if os.geteuid() == 0:
                        os.chown(self.scratch, uid, uid)
                    command = _bwrap_args(self.scratch, uid) + command
                self.process = _Started(command, self.scratch, _clean_env(threads, inside))
        except BaseException:
            self.context.destroy(linger=0)
            self._remove_link()
            raise
        # A kernel may send anything: a message too large to be a reply closes the connection
        # instead of filling the grader's memory.
        self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        self.client = BlockingKernelClient(context=self.context)
        self.client.load_connection_info(dict(info, ip=str(self.sockets / socket_name)))
        self.client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=True)
        try:
            self._reply(self.client.kernel_info(), time.monotonic() + start_timeout)
        except (TimeoutError, KernelDied):
            self.close()
            raise KernelDied("the kernel did not start") from None

    def _reply(self, msg_id: str, deadline: float, channel: str = "shell") -> dict:
        get = self.client.get_shell_msg if channel == "shell" else self.client.get_control_msg
        while True:
            if (status := self.process.poll()) is not None:
                raise KernelDied(f"the kernel died (exit status {status})")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            try:
                message = get(timeout=min(left, 0.25))
            except queue.Empty:
                continue
            if message.get("parent_header", {}).get("msg_id") == msg_id:
                return message

    def execute(self, code: str, timeout: float) -> ExecuteResult:
        """Run ``code``; the verdict is the execute reply's status (``timeout`` if none came in time)."""
        msg_id = self.client.execute(code, silent=False, store_history=False, allow_stdin=False, stop_on_error=False)
        try:
            content = self._reply(msg_id, time.monotonic() + timeout)["content"]
        except TimeoutError:
            self._interrupt(msg_id)
            return ExecuteResult("timeout")
        except KernelDied as died:
            return ExecuteResult("died", "KernelDied", str(died))
        status = content.get("status")
        if status == "ok":
            return ExecuteResult("ok")
        return ExecuteResult("error", _text(content.get("ename"), 80) or "Error", _text(content.get("evalue"), 300))

    def _interrupt(self, msg_id: str) -> None:
        """Interrupt a cell that ran out of time; a kernel that does not stop is ended."""
        self.client.control_channel.send(self.client.session.msg("interrupt_request", {}))
        try:
            self._reply(msg_id, time.monotonic() + 5)
        except (TimeoutError, KernelDied):
            self.kill()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.kill()

    def close(self) -> None:
        """End the kernel and everything it started; remove the scratch folder."""
        self.kill()
        self.client.stop_channels()
        self.context.destroy(linger=0)
        self._remove_link()
        if self.zygote is not None:
            return  # the zygote has ended its processes and emptied its folder
        if not self.sandboxed:
            _processes.kill_processes_working_in(str(self.scratch))
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch.with_name(self.scratch.name + ".hosts").unlink(missing_ok=True)

    def _remove_link(self) -> None:
        if self.link is not None:
            self.link.unlink(missing_ok=True)

    def __enter__(self) -> Kernel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _text(value, limit: int) -> str:
    """One line of at most ``limit`` characters from what the kernel sent (it may send anything)."""
    text = value if isinstance(value, str) else ""
    text = " ".join(text.split())
    return text[:limit]
