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

__all__ = ["ExecuteResult", "Kernel", "KernelDied", "Limits", "unavailable"]

INSIDE = "/tmp"                      # where the scratch folder appears inside the sandbox
UID_BASE = 61000                     # run as root, kernel k runs as user UID_BASE + k % 1000
MAX_MESSAGE = 16 * 2**20             # bytes of one message from the kernel


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one kernel may use. ``cpu_s`` is per process; the grader's clock bounds the wall time."""

    # Each process's data (heap and private writable mappings: what tensors on the host take). Not
    # its address space: CUDA reserves far more of that than it ever uses.
    memory_bytes: int = 6 * 2**30
    processes: int = 256             # processes and threads of the kernel's user
    cpu_s: int = 900
    file_bytes: int = 2 * 2**30      # the largest file it may write


class KernelDied(RuntimeError):
    """The kernel ended (or was ended) before it replied."""


@dataclasses.dataclass
class ExecuteResult:
    status: str                      # ok, error, timeout, died
    ename: str = ""
    evalue: str = ""


# The first process in the sandbox: it drops root (when it has it), sets the limits, and becomes
# the kernel. Its arguments: uid, memory bytes, processes, CPU seconds, file bytes, then the kernel's command.
_ENTRY = """
import os, resource, sys
uid, memory, processes, cpu, largest = map(int, sys.argv[1:6])
if uid >= 0 and os.getuid() == 0:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
else:
    mine = sum(1 for p in os.listdir('/proc') if p.isdigit() and os.stat('/proc/' + p).st_uid == os.getuid())
    processes += mine
for limit, value in ((resource.RLIMIT_DATA, memory), (resource.RLIMIT_NPROC, processes),
                     (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_FSIZE, largest), (resource.RLIMIT_CORE, 0)):
    resource.setrlimit(limit, (value, value))
os.execv(sys.argv[6], sys.argv[6:])
"""


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
        reason = (probe.stderr.strip().splitlines() or ["it exited with status %d" % probe.returncode])[-1]
        return f"no sandbox: bubblewrap cannot start here ({reason})"
    return ""


@lru_cache(maxsize=1)
def _python_paths() -> tuple[str, ...]:
    """The folders a kernel's Python reads: its prefixes and every folder on a clean sys.path."""
    printed = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
                             capture_output=True, text=True, env=_clean_env(), cwd="/", check=True).stdout
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(sys.executable).parent), str(Path(os.path.realpath(sys.executable)).parent.parent)}
    for entry in json.loads(printed):
        path = Path(entry)
        paths.add(str(path if path.is_dir() else path.parent))
    existing = sorted(p for p in paths if Path(p).exists())
    # A folder inside another one on the list comes with it.
    return tuple(p for p in existing if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in existing))


SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _bwrap_args(scratch: Path, uid: int) -> list[str]:
    args = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
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
        for parent in reversed(Path(path).parents):        # readable by the kernel's user on the way down
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
    for device in sorted(Path("/dev").glob("nvidia*")):    # the GPUs, where there are
        args += ["--dev-bind", str(device), str(device)]
    if scratch != Path("/"):
        # The sandbox's own name resolves to its loopback, the only network it has: gloo and torchrun
        # look their host up, and a name that needs DNS would wait for a server it cannot reach.
        hosts = scratch.with_name(scratch.name + ".hosts")
        hosts.write_text("127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n")
        args += ["--ro-bind", str(hosts), "/etc/hosts", "--chdir", INSIDE]
    return args


def _clean_env(threads: int = 1, home: str = INSIDE) -> dict[str, str]:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": home, "USER": "student",
           "LANG": "C.UTF-8", "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "MPLBACKEND": "Agg",
           "PYTHONDONTWRITEBYTECODE": "1", "JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "TZ", "GPULAB_SIMULATE"):
        if name in os.environ:
            env[name] = os.environ[name]
    cache = _simulation_cache()
    if cache is not None:
        env["GPULAB_SIMULATION_CACHE"] = str(cache)
    return env


@lru_cache(maxsize=1)
def _simulation_cache() -> Path | None:
    """The folder with the simulated GPUs' compiled library, built here if needed (kernels read it:
    a check that runs code on a simulated GPU must not need a compiler inside the sandbox)."""
    from .simulated import native
    try:
        library = native.build()
    except (OSError, RuntimeError):
        return None
    return None if library is None else library.parent


class Kernel:
    """An IPython kernel in ``scratch`` (a folder of its own, removed by :meth:`close`), sandboxed or not.

    ``slot`` picks the unprivileged user of a sandboxed kernel run as root: kernels that run at
    the same time need different slots, so that each one's process limit is its own.
    """

    def __init__(self, scratch: Path, *, sandboxed: bool, limits: Limits = Limits(), threads: int = 1, slot: int = 0,
                 start_timeout: float = 60.0):
        import zmq
        from jupyter_client import BlockingKernelClient

        self.scratch, self.sandboxed = Path(scratch), sandboxed
        self.scratch.mkdir(parents=True, exist_ok=True)
        uid = UID_BASE + slot % 1000
        inside = INSIDE if sandboxed else str(self.scratch)
        info = {"transport": "ipc", "signature_scheme": "hmac-sha256", "key": secrets.token_hex(16),
                "kernel_name": "python3", "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4,
                "hb_port": 5}
        socket_name = f"kernel-{uuid.uuid4().hex[:8]}"
        (self.scratch / "kernel.json").write_text(json.dumps(dict(info, ip=f"{inside}/{socket_name}")))
        kernel = [sys.executable, "-m", "ipykernel_launcher", "-f", f"{inside}/kernel.json", "--quiet",
                  "--HistoryManager.enabled=False"]
        command = [sys.executable, "-I", "-S", "-c", _ENTRY, str(uid if sandboxed else -1), str(limits.memory_bytes),
                   str(limits.processes), str(limits.cpu_s), str(limits.file_bytes), *kernel]
        if sandboxed:
            if os.geteuid() == 0:
                os.chown(self.scratch, uid, uid)
            command = _bwrap_args(self.scratch, uid) + command
        self.process = subprocess.Popen(command, cwd=self.scratch, env=_clean_env(threads, inside),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        # A kernel may send anything: a message too large to be a reply closes the connection
        # instead of filling the grader's memory.
        self.context = zmq.Context()
        self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        self.client = BlockingKernelClient(context=self.context)
        self.client.load_connection_info(dict(info, ip=str(self.scratch / socket_name)))
        self.client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=True)
        try:
            self._reply(self.client.kernel_info(), time.monotonic() + start_timeout)
        except (TimeoutError, KernelDied):
            self.close()
            raise KernelDied("the kernel did not start") from None

    def _reply(self, msg_id: str, deadline: float, channel: str = "shell") -> dict:
        get = self.client.get_shell_msg if channel == "shell" else self.client.get_control_msg
        while True:
            if self.process.poll() is not None:
                raise KernelDied(f"the kernel died (exit status {self.process.returncode})")
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
        msg_id = self.client.execute(code, silent=False, store_history=False, allow_stdin=False,
                                     stop_on_error=False)
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
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass
        self.process.wait()

    def close(self) -> None:
        """End the kernel and everything it started; remove the scratch folder."""
        self.kill()
        self.client.stop_channels()
        self.context.destroy(linger=0)
        if not self.sandboxed:
            _kill_marked(str(self.scratch))
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch.with_name(self.scratch.name + ".hosts").unlink(missing_ok=True)

    def __enter__(self) -> "Kernel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _text(value, limit: int) -> str:
    """One line of at most ``limit`` characters from what the kernel sent (it may send anything)."""
    text = value if isinstance(value, str) else ""
    text = " ".join(text.split())
    return text[:limit]


def _kill_marked(folder: str) -> None:
    """Without a sandbox: end the processes still working in ``folder`` (a kernel's children)."""
    from .distributed import other_processes

    for pid, _ in other_processes("stat"):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            if cwd == folder or cwd.startswith(folder + "/"):
                os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
