"""The one piece of the simulation written in C++: ``guard.cpp``, CUDA's device guard and hooks.

A torch built without CUDA registers neither a device guard for CUDA (asked to pick a device for
``.to("cuda")`` and by the autograd engine) nor CUDA hooks (asked whether CUDA is there at all,
and which host memory is pinned). ``guard.cpp`` provides both. It is compiled once per torch
installation with the system's C++ compiler (two or three seconds) and cached in
``$GPULAB_SIMULATION_CACHE``, or ``~/.cache/gpulab``; where neither can be written it is compiled
into a temporary folder that is removed as soon as the library is loaded.

:func:`build` works without importing torch (the grader builds the library before it starts its
sandboxed kernels, and hands them the cache read-only). On a torch built with CUDA the real guard
and hooks are replaced only where that torch finds no GPU (a CUDA build on a CPU machine, as in
Colab's CPU runtime); where it finds one, no machine is simulated.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

__all__ = ["build", "cache_dirs", "load", "prepare"]

_SOURCE = pathlib.Path(__file__).with_name("guard.cpp")
_library: ctypes.CDLL | None = None


def cache_dirs() -> list[pathlib.Path]:
    """Where a built library is looked for and kept, in order."""
    dirs = []
    if os.environ.get("GPULAB_SIMULATION_CACHE"):
        dirs.append(pathlib.Path(os.environ["GPULAB_SIMULATION_CACHE"]))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(pathlib.Path(base) / "gpulab")
    return dirs


def _torch_dir() -> pathlib.Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise RuntimeError("the simulated GPUs need torch, and it is not installed")
    return pathlib.Path(spec.origin).parent


def _torch_version(torch_dir: pathlib.Path) -> tuple[int, int]:
    text = (torch_dir / "version.py").read_text()
    match = re.search(r"__version__\s*=\s*['\"](\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _library_name(torch_dir: pathlib.Path) -> str:
    stamp = f"{torch_dir}:{(torch_dir / 'version.py').read_text()}"
    digest = hashlib.sha256(_SOURCE.read_bytes() + stamp.encode()).hexdigest()[:16]
    return f"simulated-cuda-{digest}{sysconfig.get_config_var('SHLIB_SUFFIX') or '.so'}"


def _cxx_standard(torch_dir: pathlib.Path) -> str:
    """The C++ standard this torch builds its extensions with (torch/utils/cpp_extension.py): its headers
    need it (torch 2.15's use C++20's std::construct_at; 2.6's build with C++17)."""
    source = torch_dir / "utils" / "cpp_extension.py"
    text = source.read_text(errors="replace") if source.exists() else ""
    return "c++20" if "'-std=c++20'" in text else "c++17"


def _compile(target: pathlib.Path, torch_dir: pathlib.Path) -> None:
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if compiler is None:
        raise RuntimeError(
            "the simulated GPUs need a C++ compiler (g++ or clang++) to build their device guard, "
            "and none is on PATH: install one (macOS: xcode-select --install; Debian or Ubuntu: "
            "apt install g++) or name it in CXX"
        )
    # PyTorch's Linux wheels use the C++11 ABI from 2.7 on (manylinux_2_28); 2.6's do not.
    cxx11_abi = int(_torch_version(torch_dir) >= (2, 7))
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    command = [
        compiler,
        "-shared",
        "-fPIC",
        "-O1",
        f"-std={_cxx_standard(torch_dir)}",
        f"-D_GLIBCXX_USE_CXX11_ABI={cxx11_abi}",
        f"-I{torch_dir / 'include'}",
        str(_SOURCE),
        f"-L{torch_dir / 'lib'}",
        "-lc10",
        "-ltorch_cpu",
        f"-Wl,-rpath,{torch_dir / 'lib'}",
        "-o",
        str(partial),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"building the simulated GPUs' device guard failed:\n{done.stderr[-2000:]}")
    os.replace(partial, target)  # atomic: another process building the same file sees a whole one


def build() -> pathlib.Path | None:
    """The cached library, built if needed; None where no cache folder can be written."""
    torch_dir = _torch_dir()
    name = _library_name(torch_dir)
    for folder in cache_dirs():
        if (folder / name).exists():
            return folder / name
    for folder in cache_dirs():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _compile(folder / name, torch_dir)
        except OSError:
            continue
        return folder / name
    return None


def load() -> ctypes.CDLL:
    """The library, loaded (it registers nothing until ``gpulab_install`` is called)."""
    global _library
    if _library is not None:
        return _library
    path = build()
    if path is not None:
        _library = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        return _library
    with tempfile.TemporaryDirectory(prefix="gpulab-guard-") as scratch:  # nowhere to cache it
        path = pathlib.Path(scratch) / _library_name(_torch_dir())
        _compile(path, _torch_dir())
        _library = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return _library


def prepare(replace: bool = False) -> bool:
    """Register the device guard with no GPU yet; False where that cannot be done (a CUDA build, no compiler).

    The autograd engine counts CUDA devices once per process, at its first backward: a process
    that may switch a simulated machine on later (an exercise check's ``TransferRecorder``) calls this
    first, so that the engine, whenever it starts, has room for the machine's GPUs. torch keeps
    saying there is no GPU until a machine is switched on. ``replace``: this torch is built with
    CUDA and finds no GPU, and its own guard, which has nothing to do, gives way.
    """
    try:
        return bool(load().gpulab_prepare(int(replace)))
    except (OSError, RuntimeError):
        return False


if __name__ == "__main__":  # python -m gpulab.simulated.native: build the cache ahead of time
    print(build() or "no cache folder could be written", file=sys.stderr)
