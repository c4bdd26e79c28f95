"""The CUDA runtime a simulated machine answers with: the bindings ``torch.cuda`` calls.

A torch built without CUDA lacks the ``torch._C._cuda_*`` functions and classes that the Python
of ``torch.cuda`` and ``torch.accelerator`` is written against (their stubs are in
``torch/_C/__init__.pyi``; ``torch.cuda._is_compiled()`` is ``hasattr(torch._C,
"_cuda_getDeviceCount")``). This module provides them, so that PyTorch's own Python runs on top:
``torch.cuda.memory_summary`` formats the simulated allocator's stats, ``torch.cuda.Stream``
derives from the simulated stream class, ``is_bf16_supported`` reads the simulated capability.

Each binding keeps the signature of the torch in use: where a stub exists, the installed
function takes exactly the stub's parameters (see :func:`_bind`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import os
import pathlib
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

from .allocator import DeviceAllocator
from .machines import GPUSpec

__all__ = ["Machine", "machine"]

CUDA_TYPE = 1  # c10::DeviceType::CUDA, as Stream objects carry it

_machine: Machine | None = None


def machine() -> Machine | None:
    """The simulated machine of this process, or None."""
    return _machine


class Machine:
    """The state of a simulated node: its GPUs, their allocators, streams and what watches them."""

    def __init__(self, name: str, specs: list[GPUSpec], guard, *, replace: bool = False):
        self.name = name
        self.device_type = specs[0].device_type  # "cuda", or "mps" for a Mac
        self.guard = guard
        self.replace = replace  # a CUDA build without a GPU: its own guard and hooks give way
        if self.device_type == "mps":
            from . import mps

            self.specs = specs
            self.install_mac()
            self.allocators = [mps.MetalAllocator(specs[0])]
        else:
            self.specs = specs = visible_devices(specs)
            # the C++ side counts only the GPUs CUDA_VISIBLE_DEVICES shows
            if not guard.gpulab_install(len(specs), int(replace)):
                raise RuntimeError("this torch's own CUDA device guard is in place: a simulated machine cannot be")
            self.allocators = [
                DeviceAllocator(i, spec.total_memory, spec.context_bytes) for i, spec in enumerate(specs)
            ]
        self.sync_debug_mode = 0  # torch.cuda.set_sync_debug_mode: 0 off, 1 warn, 2 error
        self.init_pid: int | None = None  # the process that initialised CUDA (a fork of it may not use it)
        self.streams = _Streams()
        self.active = False
        self.cudnn_benchmark_limit = 10
        self._local = threading.local()

    def install_mac(self) -> None:
        """A Mac's C++ side: the MPS guard and hooks, and pinned memory as this torch's MPS makes it."""
        from . import mps

        if not self.guard.gpulab_install_mps(1, int(mps.pinned_memory_is_on_mps())):
            raise RuntimeError("this torch has an MPS device guard of its own: a simulated Mac cannot be")

    @property
    def device_count(self) -> int:
        return len(self.specs)

    def current_device(self) -> int:
        return 0 if self.device_type == "mps" else int(self.guard.gpulab_get_device())

    def set_current_device(self, index: int) -> None:
        self.check_index(index)
        if self.device_type != "mps":
            self.guard.gpulab_set_device(int(index))

    def check_index(self, index: int) -> int:
        if index is None or index < 0:
            return self.current_device()
        if index >= self.device_count:
            if self.device_type == "mps":  # not MPS's own words: a Mac has one GPU, and asking for another is an error
                raise RuntimeError(f"Invalid device index {index}: an Apple GPU is device 0, the only one")
            raise cuda_error("invalid device ordinal", "cudaErrorInvalidDevice")
        return int(index)

    # -- what set_sync_debug_mode sees

    @contextlib.contextmanager
    def quiet(self):
        """Inside: no operation counts as synchronising (gpulab's own reads, as printing's many small ones)."""
        before = getattr(self._local, "quiet", False)
        self._local.quiet = True
        try:
            yield
        finally:
            self._local.quiet = before

    def synchronizing(self, what: str) -> None:
        """An operation that makes the host wait for the GPU, as ``c10::cuda::warn_or_error_on_sync`` sees it."""
        if getattr(self._local, "quiet", False):
            return
        if self.sync_debug_mode == 2:
            raise RuntimeError("called a synchronizing CUDA operation")
        if self.sync_debug_mode == 1:
            warnings.warn("called a synchronizing CUDA operation", UserWarning, stacklevel=4)


def visible_devices(specs: list[GPUSpec]) -> list[GPUSpec]:
    """The GPUs of the node that ``CUDA_VISIBLE_DEVICES`` lets this process see, renumbered from 0.

    As the CUDA driver reads it (CUDA C Programming Guide, "CUDA Environment Variables"; PyTorch
    models it in torch/cuda/__init__.py ``_parse_visible_devices``): a comma-separated list of
    ordinals, each read as strtoul reads it; the list ends at the first entry that is not a valid
    ordinal of this node; a repeated ordinal hides every GPU; an empty value hides them all.
    GPU-/MIG- UUIDs are not simulated: such an entry ends the list.
    """
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(specs)
    chosen: list[int] = []
    for entry in value.split(","):
        match = re.match(r"\s*\+?(\d+)", entry)
        if match is None or int(match.group(1)) >= len(specs):
            break
        if int(match.group(1)) in chosen:
            return []
        chosen.append(int(match.group(1)))
    return [specs[i] for i in chosen]


def cuda_error(text: str, name: str) -> torch.AcceleratorError:
    """The error ``C10_CUDA_CHECK`` raises for a failed CUDA call (what cudaGetErrorString says is ``text``).

    c10/cuda/CUDAException.cpp ``c10_cuda_check_implementation``: "CUDA error: " + the error string +
    ``get_cuda_error_help`` + ``get_cuda_async_error_suffix`` + a newline + the device-side assertion
    note (c10/cuda/CUDAMiscFunctions.cpp; the declarations are in torch/include/c10/cuda/
    CUDAMiscFunctions.h, and a CUDA build defines TORCH_USE_CUDA_DSA: CUDADeviceAssertionHost.h).
    Before torch 2.8, which added ``torch.AcceleratorError`` (a RuntimeError), it is a RuntimeError.
    """
    if name == "cudaErrorInvalidDevice":
        help_text = "\nGPU device may be out of range, do you have enough GPUs?"
    else:
        help_text = (
            f"\nSearch for `{name}' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
            " for more information."
        )
    suffix = "\nFor more detailed error information, run with CUDA_LOG_FILE=stderr"
    error_class = getattr(torch, "AcceleratorError", RuntimeError)
    return error_class(
        f"CUDA error: {text}{help_text}{suffix}\nDevice-side assertion tracking was not enabled by user."
    )


class _Streams:
    """Stream ids and each host thread's current stream per device, as CUDA keeps them."""

    def __init__(self):
        self.next_id = 1
        self.local = threading.local()

    def current(self, index: int) -> int:
        return getattr(self.local, "current", {}).get(index, 0)

    def set_current(self, index: int, stream_id: int) -> None:
        if not hasattr(self.local, "current"):
            self.local.current = {}
        self.local.current[index] = stream_id

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id


# ----------------------------------------------------------------- signatures from the stubs


@functools.lru_cache(maxsize=1)
def _stub_functions() -> dict[str, ast.FunctionDef]:
    path = pathlib.Path(torch.__file__).parent / "_C" / "__init__.pyi"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return {}
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def stub_signature(name: str) -> inspect.Signature | None:
    """The signature ``torch/_C/__init__.pyi`` gives ``torch._C.<name>``, or None where it gives none."""
    node = _stub_functions().get(name)
    if node is None:
        return None
    params = []
    positional = node.args.posonlyargs + node.args.args
    defaults = [None] * (len(positional) - len(node.args.defaults)) + list(node.args.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = (
            inspect.Parameter.POSITIONAL_ONLY
            if i < len(node.args.posonlyargs)
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        value = inspect.Parameter.empty if default is None else _Optional
        params.append(inspect.Parameter(arg.arg, kind, default=value))
    for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults):
        value = inspect.Parameter.empty if default is None else _Optional
        params.append(inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY, default=value))
    return inspect.Signature(params)


class _OptionalType:
    def __repr__(self):
        return "..."


_Optional = _OptionalType()  # a stub's "= ...": the real default is the binding's own


def _eval_frame_off():
    """Turn Dynamo's frame hook off where Dynamo is loaded, returning what to restore; None elsewhere.

    Where Dynamo traces a binding (the prologue it writes for a stream guard calls torch.accelerator's), it cannot
    trace ``set_eval_frame``: the graph breaks there, before the user's code, which it then traces as usual. Its
    warning that it cannot is silenced (see below): it is about the simulation, not the reader's code."""
    if "torch._dynamo" not in sys.modules:
        return None
    return torch._C._dynamo.eval_frame.set_eval_frame(None)


warnings.filterwarnings(
    "ignore", message=r"Dynamo does not know how to trace the builtin `torch\._C\._dynamo\.eval_frame\.set_eval_frame"
)


def _eval_frame_restore(prior) -> None:
    if prior is not None:
        torch._C._dynamo.eval_frame.set_eval_frame(prior)


def _bind(name: str, impl: Callable) -> Callable:
    """``impl`` as ``torch._C.<name>``: called with the stub's parameters, passing on those it was given.

    Where the torch in use has a stub for ``name``, the function takes exactly its parameters
    (positionally or by name, as the stub says) and refuses others with a TypeError, as the real
    binding does; ``impl`` gets them by name and supplies its own defaults.
    """
    signature = stub_signature(name)

    if signature is None:
        impl.__name__ = name
        return impl

    @functools.wraps(impl)
    def binding(*args, **kwargs):
        # A guard of torch.compile's code may call a binding (Dynamo's stream guards ask torch.accelerator for
        # the current stream): the binding's own Python must then not be run through Dynamo's frame hook, which
        # would evaluate the guard again, and again. A C binding runs no Python frames; this one turns the hook off.
        prior = _eval_frame_off()
        try:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as error:
                raise TypeError(f"{name}(): {error}") from None
            return impl(**{key: value for key, value in bound.arguments.items() if value is not _Optional})
        finally:
            _eval_frame_restore(prior)

    binding.__name__ = name
    binding.__qualname__ = name
    binding.__signature__ = signature
    del binding.__wrapped__
    return binding


# ----------------------------------------------------------------- device properties


class _CudaDeviceProperties:
    """What ``torch.cuda.get_device_properties`` returns on the real card."""

    def __init__(self, spec: GPUSpec, index: int):
        self.name = spec.name
        self.major, self.minor = spec.major, spec.minor
        self.multi_processor_count = spec.multi_processor_count
        self.total_memory = spec.total_memory
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.max_threads_per_multi_processor = spec.max_threads_per_multi_processor
        self.gcnArchName = spec.name  # what an H100 reported (torch 2.11.0+cu130)
        self.warp_size = 32
        self.uuid = f"5d3c1e2a-{index:04x}-4c6b-9e0f-{spec.key.encode().hex():0>12.12}"
        self.L2_cache_size = spec.L2_cache_size
        self.clock_rate = spec.clock_rate
        self.memory_clock_rate = spec.memory_clock_rate
        self.memory_bus_width = spec.memory_bus_width
        self.shared_memory_per_block = spec.shared_memory_per_block
        self.shared_memory_per_block_optin = spec.shared_memory_per_block_optin
        self.shared_memory_per_multiprocessor = spec.shared_memory_per_multiprocessor
        self.regs_per_multiprocessor = spec.regs_per_multiprocessor
        self.max_threads_per_block = 1024
        self.pci_bus_id, self.pci_device_id, self.pci_domain_id = 0x18 + index, 0, 0

    def __repr__(self) -> str:
        # torch/csrc/cuda/Module.cpp, the __repr__ of _CudaDeviceProperties
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, multi_processor_count={self.multi_processor_count}, "
            f"uuid={self.uuid}, pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
            f"pci_domain_id={self.pci_domain_id}, L2_cache_size={self.L2_cache_size // 2**20}MB)"
        )


# ----------------------------------------------------------------- streams and events


def _raw_stream(stream_id: int) -> int:
    """The cudaStream_t a stream id stands for: 0 (the legacy default stream) or a made-up handle."""
    return 0 if stream_id == 0 else 0x5000_0000 + stream_id


def _stream_base():
    class _CudaStreamBase(torch._C.Stream):
        """A CUDA stream on a simulated GPU. Work runs when it is queued, so every stream is always idle."""

        def __new__(
            cls, priority: int = 0, stream_id: int = 0, device_index: int = 0, device_type: int = 0, stream_ptr: int = 0
        ):
            # torch/csrc/cuda/Stream.cpp, THCPStream_pynew: with none of id, index and type given, a new
            # stream on the current device; otherwise the stream they name.
            if not (stream_id or device_index or device_type):
                stream_id, device_index = _machine.streams.new_id(), _machine.current_device()
            self = super().__new__(cls, stream_id=stream_id, device_index=device_index, device_type=CUDA_TYPE)
            self._priority = min(0, max(-5, int(priority)))
            return self

        @property
        def cuda_stream(self) -> int:
            return _raw_stream(self.stream_id)

        @property
        def priority(self) -> int:
            return getattr(self, "_priority", 0)

        def query(self) -> bool:
            return True

        def synchronize(self) -> None:
            _machine.synchronizing("stream synchronize")

        def priority_range(self) -> tuple[int, int]:
            return (0, -5)

    return _CudaStreamBase


class _CudaEventBase:
    """A CUDA event on a simulated GPU: it records the host's clock, since work runs as it is queued.

    ``elapsed_time`` is therefore the host time between the two records, in milliseconds; the
    errors are the real ones (``torch/csrc/cuda/Event.cpp``, ``at::cuda::CUDAEvent``).
    """

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, external: bool = False
    ):
        self = object.__new__(cls)
        self._enable_timing, self._blocking, self._interprocess = (
            bool(enable_timing),
            bool(blocking),
            bool(interprocess),
        )
        self._recorded_s: float | None = None
        self._device_index: int | None = None
        return self

    @classmethod
    def from_ipc_handle(cls, device, ipc_handle: bytes):
        raise RuntimeError("IPC events are not simulated")

    @property
    def device(self):
        return None if self._device_index is None else torch.device("cuda", self._device_index)

    @property
    def cuda_event(self) -> int:
        return 0 if self._recorded_s is None else id(self)

    def record(self, stream=None) -> None:
        index = _machine.current_device() if stream is None else stream.device_index
        if self._device_index is not None and self._device_index != index:
            raise RuntimeError(f"Event device {self._device_index} does not match recording stream's device {index}.")
        self._device_index = index
        self._recorded_s = time.perf_counter()

    def wait(self, stream=None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, other) -> float:
        if not (self._enable_timing and other._enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._recorded_s is None or other._recorded_s is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return (other._recorded_s - self._recorded_s) * 1e3

    def ipc_handle(self) -> bytes:
        if not self._interprocess:
            raise RuntimeError("Event must be created with interprocess=True to get an IPC handle.")
        return id(self).to_bytes(64, "little")


# ----------------------------------------------------------------- the CUDA runtime library


class _CudaRT:
    """``torch.cuda.cudart()``: the few runtime calls Python makes directly."""

    class cudaError(int):
        success = 0

    @staticmethod
    def cudaMemGetInfo(device: int) -> tuple[int, int]:
        return _allocator(device).mem_get_info()

    @staticmethod
    def cudaGetErrorString(error) -> str:
        return "no error" if int(error) == 0 else f"CUDA error {int(error)}"

    @staticmethod
    def cudaProfilerStart() -> int:
        return 0

    @staticmethod
    def cudaProfilerStop() -> int:
        return 0

    @staticmethod
    def cudaHostRegister(ptr: int, size: int, flags: int) -> int:
        return 0

    @staticmethod
    def cudaHostUnregister(ptr: int) -> int:
        return 0

    @staticmethod
    def cudaStreamCreate(ptr: int) -> int:
        return 0

    @staticmethod
    def cudaStreamDestroy(stream: int) -> int:
        return 0


# ----------------------------------------------------------------- the bindings


def _index(device) -> int:
    node = _machine
    if isinstance(device, torch.device):
        device = device.index
    return node.check_index(-1 if device is None else int(device))


def _cuda_init() -> None:
    node = _machine
    if node.device_count == 0:  # c10/cuda/CUDAFunctions.cpp, device_count_ensure_non_zero
        raise RuntimeError("No CUDA GPUs are available")
    node.init_pid = os.getpid()
    import torch.cuda

    # THCPModule_initExtension sets these on torch.cuda: one generator per device, and the properties reader.
    torch.cuda.default_generators = tuple(torch.Generator() for _ in range(node.device_count))
    for index, generator in enumerate(torch.cuda.default_generators):
        generator.manual_seed(torch.initial_seed() + index * 0)
    torch.cuda._get_device_properties = _get_device_properties


@functools.cache
def _properties(index: int) -> _CudaDeviceProperties:
    return _CudaDeviceProperties(_machine.specs[index], index)


def _get_device_properties(device=None) -> _CudaDeviceProperties:
    index = _index(device)
    return _properties(index)


def _in_bad_fork() -> bool:
    node = _machine
    return node is not None and node.init_pid is not None and node.init_pid != os.getpid()


def _sync_mode(warn_level) -> None:
    if isinstance(warn_level, str):
        levels = {"default": 0, "warn": 1, "error": 2}
        if warn_level not in levels:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        warn_level = levels[warn_level]
    _machine.sync_debug_mode = int(warn_level)


def _settle() -> None:
    """Give back the blocks whose last tensor died while the allocator was busy (see tensors._release):
    every counter is read after them, as a GPU's allocator frees at once."""
    tensors = sys.modules.get(f"{__package__}.tensors")
    if tensors is not None:
        tensors.drain_frees()


def _allocator(device):
    _settle()
    return _machine.allocators[_index(device)]


def _memory_stats(device) -> dict:
    return _allocator(device).stats()


def _snapshot(mempool_id=None) -> dict:
    _settle()
    segments, traces = [], []
    for allocator in _machine.allocators:
        part = allocator.snapshot()
        segments += part["segments"]
        traces += part["device_traces"]
    return {"segments": segments, "device_traces": traces, "allocator_settings": {}, "external_annotations": []}


def _record_history(enabled=None, context=None, stacks="all", max_entries=1, **ignored) -> None:
    on = bool(enabled) and enabled != "None"
    for allocator in _machine.allocators:
        allocator.record_history(on, max_entries=int(max_entries or 1))


def _record_history_legacy(
    enabled, record_context=True, record_context_cpp=False, trace_alloc_max_entries=1, **ignored
) -> None:
    for allocator in _machine.allocators:
        allocator.record_history(bool(enabled), max_entries=int(trace_alloc_max_entries or 1))


def _set_fraction(fraction, device) -> None:
    fraction = float(fraction)
    if not 0 <= fraction <= 1:
        raise ValueError(f"invalid fraction: {fraction}. Please set within [0, 1].")
    _allocator(device).fraction = fraction


def _set_stream(stream_id, device_index, device_type) -> None:
    _machine.streams.set_current(_index(device_index), int(stream_id))


def _current_stream(device) -> tuple:
    index = _index(device)
    return (_machine.streams.current(index), index, CUDA_TYPE)


def _empty_cache() -> None:
    _settle()
    for allocator in _machine.allocators:
        allocator.empty_cache()


def _exchange(device) -> int:
    previous = _machine.current_device()
    if device is not None and int(device) >= 0:
        _machine.set_current_device(int(device))
    return previous


def _not_simulated(name: str, what: str) -> type:
    """A class in the place of a binding for what is not simulated: making one raises."""

    def refuse(*args, **kwargs):
        raise RuntimeError(f"{what} are not simulated on a simulated GPU ({name})")

    return type(name, (object,), {"__new__": refuse, "__init__": refuse})


def cuda_bindings() -> dict[str, Any]:
    """``{name: object}`` to set on ``torch._C``: the functions and classes a CUDA build has there."""
    node = _machine
    functions = {
        "_cuda_getDeviceCount": lambda: node.device_count,
        "_cuda_init": _cuda_init,
        "_cuda_isInBadFork": _in_bad_fork,
        "_cuda_getDevice": node.current_device,
        "_cuda_setDevice": lambda device: node.set_current_device(_index(device)),
        "_cuda_exchangeDevice": _exchange,
        "_cuda_maybeExchangeDevice": _exchange,
        "_cuda_getArchFlags": lambda: "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
        "_cuda_getCompiledVersion": lambda: 12080,
        "_cuda_synchronize": lambda: None,  # everything queued has run already
        "_cuda_ipc_collect": lambda: None,
        "_cuda_sleep": lambda cycles: None,
        "_cuda_canDeviceAccessPeer": lambda device, peer_device: _index(device) != _index(peer_device),
        "_cuda_set_sync_debug_mode": _sync_mode,
        "_cuda_get_sync_debug_mode": lambda: node.sync_debug_mode,
        "_cuda_getCurrentStream": _current_stream,
        "_cuda_getDefaultStream": lambda device: (0, _index(device), CUDA_TYPE),
        "_cuda_getCurrentRawStream": lambda device: _raw_stream(_machine.streams.current(_index(device))),
        "_cuda_isCurrentStreamCapturing": lambda: False,
        "_cuda_getCurrentBlasHandle": lambda: 0,
        "_cuda_getCurrentSolverHandle": lambda: 0,
        "_cuda_get_cudnn_benchmark_limit": lambda: node.cudnn_benchmark_limit,
        "_cuda_set_cudnn_benchmark_limit": lambda arg: setattr(node, "cudnn_benchmark_limit", int(arg)),
        "_cuda_setStream": _set_stream,
        "_cuda_memoryStats": _memory_stats,
        "_cuda_resetPeakMemoryStats": lambda device: _allocator(device).reset_peak_stats(),
        "_cuda_resetAccumulatedMemoryStats": lambda device: _allocator(device).reset_accumulated_stats(),
        "_cuda_emptyCache": _empty_cache,
        "_cuda_setMemoryFraction": _set_fraction,
        "_cuda_getMemoryFraction": lambda device: _allocator(device).fraction,
        "_cuda_memorySnapshot": _snapshot,
        "_cuda_record_memory_history": _record_history,
        "_cuda_record_memory_history_legacy": _record_history_legacy,
        "_cuda_isHistoryEnabled": lambda: any(a.history_enabled for a in node.allocators),
        "_cuda_getAllocatorBackend": lambda: "native",
        "_cuda_hostMemoryStats": lambda: {},
        "_cuda_resetAccumulatedHostMemoryStats": lambda: None,
        "_cuda_resetPeakHostMemoryStats": lambda: None,
        "_cuda_get_conv_benchmark_empty_cache": lambda: True,
    }
    bindings: dict[str, Any] = {name: _bind(name, impl) for name, impl in functions.items()}
    bindings["_CudaDeviceProperties"] = _CudaDeviceProperties
    bindings["_CudaStreamBase"] = _stream_base()
    bindings["_CudaEventBase"] = _CudaEventBase
    bindings["_cudart"] = _CudaRT
    bindings["_cuda_getDeviceProperties"] = _get_device_properties
    bindings["_has_cuda"] = True  # torch.backends.cuda.is_built(): a CUDA build
    # torch/cuda/graphs.py imports these from torch._C, and defines stand-ins for them only where
    # _CudaStreamBase is missing: without them `import torch.cuda` fails under the start-up hook.
    # CUDA graphs are not simulated: making one raises.
    bindings["_CUDAGraph"] = _not_simulated("_CUDAGraph", "CUDA graphs")
    bindings["_graph_pool_handle"] = _not_simulated("_graph_pool_handle", "CUDA graphs")
    # torch/_inductor/cudagraph_trees.py imports these where torch.backends.cuda.is_built() (torch._dynamo.reset()
    # imports it): the allocator state CUDA graph trees checkpoint, which is not simulated either.
    bindings["_cuda_CUDAAllocator_AllocatorState"] = _not_simulated(
        "_cuda_CUDAAllocator_AllocatorState", "CUDA graph memory pools"
    )
    if not hasattr(torch._C, "_set_cached_tensors_enabled"):
        bindings["_set_cached_tensors_enabled"] = _bind("_set_cached_tensors_enabled", lambda enabled: None)
    return bindings


def accelerator_bindings() -> dict[str, Any]:
    """``torch._C._accelerator_*``: what ``torch.accelerator`` asks when CUDA is the accelerator."""
    node = _machine

    def get_stream(device_index):
        import torch.cuda

        return torch.cuda.current_stream(_index(device_index))

    def set_stream(Stream):  # the stub's name for it (torch/_C/__init__.pyi)
        _set_stream(Stream.stream_id, Stream.device_index, Stream.device_type)

    # The stubs name these parameters device_index (torch/_C/__init__.pyi): the binding passes them by that name.
    def exchange(device_index):
        return _exchange(device_index)

    def device_stats(device_index):
        return _memory_stats(device_index)

    def capability(device_index):
        props = _properties(_index(device_index))
        dtypes = {
            torch.float32,
            torch.float64,
            torch.float16,
            torch.int8,
            torch.int16,
            torch.int32,
            torch.int64,
            torch.uint8,
            torch.bool,
            torch.complex64,
            torch.complex128,
            torch.bfloat16,
        }
        if (props.major, props.minor) >= (8, 9):
            dtypes |= {torch.float8_e4m3fn, torch.float8_e5m2}
        return {"supported_dtypes": sorted(dtypes, key=str)}

    functions = {
        "_accelerator_getAccelerator": lambda: torch.device("cuda"),
        "_accelerator_getDeviceIndex": node.current_device,
        "_accelerator_setDeviceIndex": lambda device_index: node.set_current_device(_index(device_index)),
        "_accelerator_exchangeDevice": exchange,
        "_accelerator_maybeExchangeDevice": exchange,
        "_accelerator_getDeviceCapability": capability,
        "_accelerator_getStream": get_stream,
        "_accelerator_setStream": set_stream,
        "_accelerator_synchronizeDevice": lambda device_index: None,
        "_accelerator_isAllocatorInitialized": lambda: True,
        "_accelerator_emptyCache": _empty_cache,
        "_accelerator_emptyHostCache": lambda: None,
        "_accelerator_getDeviceStats": device_stats,
        "_accelerator_resetAccumulatedStats": lambda device_index: _allocator(device_index).reset_accumulated_stats(),
        "_accelerator_resetPeakStats": lambda device_index: _allocator(device_index).reset_peak_stats(),
        "_accelerator_getMemoryInfo": lambda device_index: _allocator(device_index).mem_get_info(),
        "_accelerator_hooks_device_count": lambda: node.device_count,
        "_accelerator_deviceCount": lambda: node.device_count,  # torch 2.6's name for it
        "_accelerator_hooks_get_current_device": node.current_device,
        "_accelerator_hooks_set_current_device": lambda device_index: node.set_current_device(device_index),
        "_accelerator_hooks_exchange_device": exchange,
        "_accelerator_hooks_maybe_exchange_device": exchange,
        "_get_accelerator": lambda check=False: torch.device("cuda"),
    }
    return {
        name: _bind(name, impl)
        for name, impl in functions.items()
        if hasattr(torch._C, name) or stub_signature(name) is not None
    }
