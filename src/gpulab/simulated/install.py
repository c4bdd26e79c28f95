"""Switching a simulated machine on in this process, and off again.

:func:`start` works at two moments. From the start-up hook (``GPULAB_SIMULATE``), the CUDA
bindings go onto ``torch._C`` as soon as it is loaded, before ``torch.cuda`` is imported, so
``torch.cuda`` is built as on a CUDA build (its ``Stream`` derives from the simulated stream
class); the rest follows once ``import torch`` has finished. From a running program (the
checks' :class:`~gpulab.checks.transfers.TransferRecorder`), both happen at once, and the names
``torch.cuda`` bound at import time are set again. :func:`stop` puts back what was there.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from . import machines, native, runtime

__all__ = ["resume", "running", "start", "stop"]

_saved: list[tuple[Any, str, Any]] = []  # (object, attribute, value before): what stop() puts back
_MISSING = object()
_libraries: dict = {}  # dispatch key ("CUDA", "MPS") → the torch.library.Library objects holding its kernels


def running() -> runtime.Machine | None:
    """The simulated machine switched on in this process, or None."""
    machine = runtime.machine()
    return machine if machine is not None and machine.active else None


def _set(target, name: str, value) -> None:
    _saved.append((target, name, getattr(target, name, _MISSING)))
    setattr(target, name, value)


class _Environment:
    """``os.environ`` as attributes, so that :func:`_set` keeps and :func:`stop` restores a variable."""

    def __getattr__(self, name: str):
        return os.environ[name] if name in os.environ else _MISSING

    def __setattr__(self, name: str, value) -> None:
        os.environ[name] = value

    def __delattr__(self, name: str) -> None:
        os.environ.pop(name, None)


# Triton's NVIDIA driver, asked whether it can run (torch.cuda.is_available(): yes, here), loads libcuda,
# which a simulated GPU has not; its assertion then stops Inductor even compiling for the CPU
# (torch/_inductor/runtime/autotune_cache.py asks Triton for its backend's hash whenever CUDA is there).
# Naming a backend no Triton has makes Triton raise the RuntimeError Inductor expects where there is none.
TRITON_BACKEND = "gpulab-simulated-gpu"


def _no_triton() -> bool:
    """``torch.utils._triton.has_triton`` on a simulated GPU: no device here can run a compiled Triton kernel."""
    return False


_build: tuple[bool, int] | None = None  # (this torch is built with CUDA, the GPUs it finds), as first seen


def real_cuda(torch_module) -> tuple[bool, int]:
    """Whether this torch is built with CUDA, and how many GPUs it finds, before any simulation."""
    global _build
    if _build is None:
        built = bool(getattr(torch_module._C, "_has_cuda", False))
        _build = (built, int(torch_module._C._cuda_getDeviceCount()) if built else 0)
    return _build


def _refuse_real_gpus(torch_module) -> bool:
    """Raises where this torch has GPUs of its own; True on a CUDA build without any (as Colab's CPU runtime)."""
    built, gpus = real_cuda(torch_module)
    if gpus:
        raise RuntimeError(f"this machine has {gpus} CUDA GPU(s): a simulated machine would hide them")
    return built


def start_runtime(name: str, torch_module) -> runtime.Machine:
    """The first half: the machine and the CUDA bindings on ``torch._C`` (safe while torch is importing)."""
    if running() is not None:
        if running().name != name:
            raise RuntimeError(f"a simulated {running().name} is already running in this process")
        return running()
    specs = machines.parse(name)
    cuda_build = _refuse_real_gpus(torch_module)
    guard = native.load()
    runtime._properties.cache_clear()
    node = runtime.Machine(name, specs, guard, replace=cuda_build)
    _activate(node, torch_module)
    return node


def _activate(node: runtime.Machine, torch_module) -> None:
    """Make ``node`` this process's machine, and put its bindings on ``torch._C``."""
    runtime._machine = node
    node.active = True
    if node.device_type == "mps":
        from . import mps

        bindings = {**mps.bindings(node), **mps.accelerator_bindings(node)}
    else:
        bindings = {**runtime.cuda_bindings(), **runtime.accelerator_bindings()}
    for key, value in bindings.items():
        _set(torch_module._C, key, value)


def _register_kernels(torch_module, key: str) -> None:
    """Once per process and dispatch key: tensors made for the simulated device reach the simulation.

    The fallback takes every operation that reaches the key with no simulated operand; the kernels are for
    operations that reach it with a simulated tensor (torch.tensor(..., device="cuda") copies with the Python
    key excluded) and have a composite kernel the fallback would not replace.
    """
    from . import tensors

    if key in _libraries:
        return
    library, kernels = torch_module.library.Library("_", "IMPL"), torch_module.library.Library("aten", "IMPL")
    library.fallback(tensors._factory, key)
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": a CUDA build's own
        warnings.simplefilter("ignore")
        for name, impl in tensors.cuda_kernels().items():
            kernels.impl(name, impl, key)
    _libraries[key] = (library, kernels)


def finish(torch_module) -> None:
    """The second half, once ``import torch`` is done: tensors, files, torch.distributed, the profiler."""
    if runtime.machine().device_type == "mps":
        _finish_mps(torch_module)
        return
    import torch.cuda

    from . import nccl, profiler, serialization

    # Names torch.cuda bound when it was imported (all of them exist on a CUDA build from the start).
    _set(torch.cuda, "_cudart", torch_module._C._cudart)
    _set(torch.cuda, "_is_in_bad_fork", torch_module._C._cuda_isInBadFork)
    _set(torch.cuda, "_initialized", False)
    _set(torch.cuda, "_cached_device_count", None)  # torch caches the count once CUDA is initialised
    checked = getattr(torch.cuda, "_check_bf16_tensor_supported", None)
    if hasattr(checked, "cache_clear"):
        checked.cache_clear()
    _set(torch.cuda, "_CudaDeviceProperties", torch_module._C._CudaDeviceProperties)
    _set(torch.cuda, "_exchange_device", torch_module._C._cuda_exchangeDevice)
    _set(torch.cuda, "_maybe_exchange_device", torch_module._C._cuda_maybeExchangeDevice)
    _set(_Environment(), "TRITON_DEFAULT_BACKEND", TRITON_BACKEND)
    # Older Tritons (3.6, Colab's) read no TRITON_DEFAULT_BACKEND: torch is told there is no Triton for a GPU, before
    # Inductor's modules import the answer (torch/utils/_triton.py's has_triton).
    import torch.utils._triton

    _set(torch.utils._triton, "has_triton", _no_triton)
    if not issubclass(torch.cuda.Stream, torch_module._C._CudaStreamBase):
        _reload_streams(torch_module)
    _register_kernels(torch_module, "CUDA")
    serialization.install()
    for target, name, value in nccl.patches() + profiler.patches():
        _set(target, name, value)


def _finish_mps(torch_module) -> None:
    """A simulated Mac's second half: tensors made for ``mps`` reach the simulation, and saved ones load."""
    from . import serialization

    _forget_mps_answers()  # answered False before the machine was switched on
    _register_kernels(torch_module, "MPS")
    serialization.install()


def _reload_streams(torch_module) -> None:
    import importlib

    import torch.cuda.streams

    streams = importlib.reload(torch.cuda.streams)
    for name in ("Stream", "Event", "ExternalStream"):
        _set(torch.cuda, name, getattr(streams, name))


def start(name: str) -> runtime.Machine:
    """Switch on the simulated machine ``name`` (``t4``, ``4xh100`` …) in this running process."""
    import torch

    node = start_runtime(name, torch)
    finish(torch)
    return node


def resume(node: runtime.Machine) -> runtime.Machine:
    """Switch a simulated Mac that :func:`stop` switched off on again, as it was (its memory counters kept).

    An exercise check (:class:`~gpulab.checks.transfers.TransferRecorder`) runs its block on a simulated CUDA
    GPU: on a simulated Mac it switches the Mac off for the block, as a real Mac's MPS gives way to CUDA
    where both are there (``at::getAccelerator`` asks CUDA first), and on again after it.
    """
    import torch

    if running() is not None:
        raise RuntimeError(f"a simulated {running().name} is already running in this process")
    if node.device_type != "mps":
        raise ValueError("only a simulated Mac is resumed; start a CUDA machine again with start()")
    node.install_mac()
    _activate(node, torch)
    _finish_mps(torch)
    return node


def stop() -> None:
    """Switch the simulated machine off: ``torch.cuda`` says there is no GPU again.

    Tensors already on a simulated GPU keep working; new ones cannot be made.
    """
    node = runtime.machine()
    if node is None or not node.active:
        return
    node.active = False
    if node.device_type == "mps":
        node.guard.gpulab_install_mps(0, 0)
    else:
        node.guard.gpulab_install(0, int(node.replace))
    while _saved:
        target, name, value = _saved.pop()
        if value is _MISSING:
            delattr(target, name)
        else:
            setattr(target, name, value)
    if node.device_type == "mps":
        _forget_mps_answers()


def _forget_mps_answers() -> None:
    """torch.backends.mps caches its answers (functools.lru_cache): asked again, they are asked anew."""
    import torch.backends.mps

    for cached in (torch.backends.mps.is_available, torch.backends.mps.is_macos_or_newer):
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()
