"""The one piece of the simulation written in C++: a device guard for CUDA.

A torch built without CUDA has no device guard for CUDA devices, and C++ code in PyTorch asks for
one to pick a device (``.to("cuda")`` without an index, ``DeviceGuard`` in autograd) and to count
devices (the autograd engine starts a worker thread per device). ``guard.cpp`` provides one:
the current device per host thread, as CUDA keeps it, and the simulated device count. It is
compiled once per torch version with the system's C++ compiler (a second or two) and cached in
``$GPULAB_SIMULATION_CACHE``, or ``~/.cache/gpulab``; where neither can be written it is compiled
into a temporary folder that is removed as soon as the library is loaded.

On a torch built with CUDA the real guard stays: :func:`load` never replaces it.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile

__all__ = ["load"]

_SOURCE = pathlib.Path(__file__).with_name("guard.cpp")
_library: ctypes.CDLL | None = None


def _cache_dirs() -> list[pathlib.Path]:
    dirs = []
    if os.environ.get("GPULAB_SIMULATION_CACHE"):
        dirs.append(pathlib.Path(os.environ["GPULAB_SIMULATION_CACHE"]))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    dirs.append(pathlib.Path(base) / "gpulab")
    return dirs


def _library_name(torch_dir: pathlib.Path, version: str) -> str:
    digest = hashlib.sha256(_SOURCE.read_bytes() + str(torch_dir).encode() + version.encode()).hexdigest()[:16]
    return f"simulated-cuda-guard-{digest}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _compile(target: pathlib.Path, torch_dir: pathlib.Path, cxx11_abi: bool) -> None:
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if compiler is None:
        raise RuntimeError("the simulated GPUs need a C++ compiler (g++ or clang++) to build their device guard, "
                           "and none is on PATH")
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    command = [compiler, "-shared", "-fPIC", "-O1", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={int(cxx11_abi)}",
               f"-I{torch_dir / 'include'}", str(_SOURCE), f"-L{torch_dir / 'lib'}", "-lc10", "-ltorch_cpu",
               f"-Wl,-rpath,{torch_dir / 'lib'}", "-o", str(partial)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"building the simulated GPUs' device guard failed:\n{done.stderr[-2000:]}")
    os.replace(partial, target)   # atomic: another process building the same file sees a whole one


def load(torch_module) -> ctypes.CDLL:
    """The guard library, built if needed; loading it registers nothing until ``gpulab_install``."""
    global _library
    if _library is not None:
        return _library
    torch_dir = pathlib.Path(torch_module.__file__).parent
    name = _library_name(torch_dir, torch_module.__version__)
    abi = bool(getattr(torch_module._C, "_GLIBCXX_USE_CXX11_ABI", True))
    for folder in _cache_dirs():
        if (folder / name).exists():
            _library = ctypes.CDLL(str(folder / name), mode=ctypes.RTLD_GLOBAL)
            return _library
    for folder in _cache_dirs():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _compile(folder / name, torch_dir, abi)
        except OSError:
            continue
        _library = ctypes.CDLL(str(folder / name), mode=ctypes.RTLD_GLOBAL)
        return _library
    with tempfile.TemporaryDirectory(prefix="gpulab-guard-") as scratch:   # nowhere to cache it
        _compile(pathlib.Path(scratch) / name, torch_dir, abi)
        _library = ctypes.CDLL(str(pathlib.Path(scratch) / name), mode=ctypes.RTLD_GLOBAL)
    return _library


if __name__ == "__main__":   # python -m gpulab.simulated.native: build the cache ahead of time
    import torch
    print(load(torch)._name, file=sys.stderr)
