"""A simulated Apple GPU: what ``torch.mps`` and ``torch.backends.mps`` call, on a Linux build of torch.

A torch built for Linux has MPS's Python bindings (``torch._C._mps_*``, from torch/csrc/mps/Module.cpp)
but no Metal behind them: ``torch.backends.mps.is_available()`` is False and the rest refuse. With
``GPULAB_SIMULATE=mps`` (``mps-m1``, ``mps-m3-max``: :data:`gpulab.simulated.machines.MACS`) this
module answers them for a Mac of that kind, and ``guard.cpp`` makes MPS the accelerator PyTorch's
C++ sees; tensors on ``mps`` are the same wrapper subclass as a simulated CUDA GPU's
(:mod:`.tensors`), holding real values computed on the CPU.

What follows MPS's own source (each tested in tests/unit/simulated/test_mps.py):

- memory (:class:`MetalAllocator`): ``aten/src/ATen/mps/MPSAllocator.mm``, ``MPSHeapAllocatorImpl``.
  ``current_allocated_memory`` counts the buffers tensors hold, ``driver_allocated_memory`` also
  the freed buffers the allocator keeps for reuse (until ``empty_cache``, or an allocation that
  would not fit otherwise); the limit is the high watermark ratio (1.7 unless
  ``PYTORCH_MPS_HIGH_WATERMARK_RATIO`` or ``set_per_process_memory_fraction`` sets another; 0:
  none) times ``recommended_max_memory``; beyond it, MPS's out-of-memory error;
- float64: refused as MPS refuses it (``TypeError``, "Cannot convert a MPS Tensor to float64 dtype
  as the MPS framework doesn't support float64. Please use float32 instead.");
- ``pin_memory()``: as the installed torch's MPS build does (:func:`pinned_memory_is_on_mps`);
- ``torch.mps.synchronize``, ``torch.mps.Event`` (host time between records, as for the simulated
  CUDA events), ``torch.mps.manual_seed``;
- ``torch.profiler`` records the CPU only, as on a Mac: there is no ``ProfilerActivity.MPS``, and
  the MPS allocator reports nothing to the profiler, so memory columns count host memory alone.

What is not simulated: speed (the CPU's pace), unified memory's sharing with the host (a real
Mac's CPU tensors and GPU tensors take from one memory; here the simulated limit counts GPU
tensors only), the heaps' layout (each buffer is its own heap, rounded to 16 KiB pages), Metal
shaders (``torch.mps.compile_shader``), ``torch.mps.profiler``'s signposts, and which operations
MPS lacks kernels for beyond float64 (most run on MPS; a few fall back to the CPU where
``PYTORCH_ENABLE_MPS_FALLBACK=1`` or raise ``NotImplementedError``), nor the words of MPS's own kernels for
operands on two devices (the simulation raises TensorIterator's "Expected all tensors to be on the same
device …", as on CUDA; some MPS kernels say it otherwise, as "Placeholder storage has not been allocated on
MPS device!"), nor the profiler's rows (a simulated GPU's work appears as a ``PythonSubclass`` row, see
:mod:`gpulab.simulated`).
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from .allocator import _Stat, format_size
from .machines import MacSpec

__all__ = ["MetalAllocator", "bindings", "pinned_memory_is_on_mps"]

PAGE = 16 * 2**10  # Apple silicon's page: Metal's heap buffers are aligned to it
LARGE_HEAP = 32 * 2**20  # kLargeHeap (MPSAllocator.h): a cached buffer up to this much larger is reused as it is
DEFAULT_HIGH_WATERMARK_RATIO = 1.7  # MPSAllocator.h, default_high_watermark_ratio
HIGH_WATERMARK_UPPER_BOUND = 2.0  # default_high_watermark_upper_bound
BASE_ADDRESS = 0x1_4000_0000  # where the fake buffer addresses start
MPS_TYPE = 13  # c10::DeviceType::MPS (c10/core/DeviceType.h), as Stream objects carry it


class _Buffer:
    __slots__ = ("address", "size", "requested_size")

    def __init__(self, address: int, size: int, requested_size: int):
        self.address, self.size, self.requested_size = address, size, requested_size


class MetalAllocator:
    """The MPS heap allocator's counters and limit (``MPSHeapAllocatorImpl``), for one simulated Mac.

    ``malloc`` hands out a buffer (a cached one of the right size where there is one, as
    ``get_free_buffer`` does), ``free`` returns it to the cache; ``empty_cache`` releases the cache.
    """

    device_index = 0

    def __init__(self, spec: MacSpec):
        self.spec = spec
        self.allocated = _Stat()  # m_current_allocated_memory: the buffers tensors hold
        self.reserved = _Stat()  # m_total_allocated_memory: those and the cached ones
        self.cached: list[_Buffer] = []  # freed buffers kept for reuse, smallest first
        self.next_address = BASE_ADDRESS
        ratio = os.environ.get("PYTORCH_MPS_HIGH_WATERMARK_RATIO")
        self.set_high_watermark_ratio(float(ratio) if ratio else DEFAULT_HIGH_WATERMARK_RATIO)

    @property
    def in_use(self) -> int:
        return self.allocated.current

    # -- what torch.mps reads

    @property
    def driver_allocated(self) -> int:
        """current_allocated_size(): what the Metal driver has given the process, cached buffers included."""
        return self.reserved.current

    @property
    def max_allowed(self) -> int | None:
        """m_max_total_allowed_size, or None where the ratio is 0 (no limit)."""
        if self.high_watermark_ratio == 0.0:
            return None
        return int(self.high_watermark_ratio * self.spec.recommended_max_memory)

    def set_high_watermark_ratio(self, ratio: float) -> None:
        # MPSHeapAllocatorImpl::setHighWatermarkRatio
        if not 0.0 <= ratio <= HIGH_WATERMARK_UPPER_BOUND:
            raise RuntimeError(f"invalid high watermark ratio {ratio:g}")
        self.high_watermark_ratio = ratio

    # -- allocations

    @staticmethod
    def allocation_size(nbytes: int) -> int:
        """heapBufferSizeAndAlignWithLength, aligned: whole 16 KiB pages."""
        return max(PAGE, -(-nbytes // PAGE) * PAGE)

    def malloc(self, nbytes: int, stream: int = 0) -> _Buffer | None:
        if nbytes == 0:
            return None  # MPSAllocator::allocate gives a null pointer for 0 bytes
        size = self.allocation_size(nbytes)
        limit = self.max_allowed
        for i, buffer in enumerate(self.cached):  # get_free_buffer: the smallest cached one that fits
            if buffer.size >= size and buffer.size <= size + LARGE_HEAP:
                if limit is not None and self.driver_allocated + size > limit:
                    break
                del self.cached[i]
                buffer.requested_size = nbytes
                return self._hand_out(buffer)
        if limit is not None and self.driver_allocated + size > limit:
            self.empty_cache()  # release_cached_buffers, and try again
        if limit is not None and self.driver_allocated + size > limit:
            self._raise_oom(size)
        buffer = _Buffer(self.next_address, size, nbytes)
        self.next_address += size
        self.reserved.increase(size)
        return self._hand_out(buffer)

    def _hand_out(self, buffer: _Buffer) -> _Buffer:
        self.allocated.increase(buffer.size)
        return buffer

    def free(self, buffer: _Buffer | None) -> None:
        if buffer is None:
            return
        self.allocated.decrease(buffer.size)
        self.cached.append(buffer)
        self.cached.sort(key=lambda b: b.size)

    def empty_cache(self) -> None:
        for buffer in self.cached:
            self.reserved.decrease(buffer.size)
        self.cached.clear()

    def _raise_oom(self, size: int) -> None:
        # MPSHeapAllocatorImpl::alloc_buffer_block. "MPS allocated" is the heaps' total (m_total_allocated_memory),
        # "other allocations" what the driver holds besides (MPSGraph's own buffers: none here).
        raise _oom_error(
            f"MPS backend out of memory (MPS allocated: {format_size(self.driver_allocated)}, other allocations: "
            f"{format_size(0)}, max allowed: {format_size(self.max_allowed)}). Tried to allocate {format_size(size)} "
            f"on {_pool()} pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory "
            "allocations (may cause system failure)."
        )

    # -- what torch.accelerator's memory functions read

    def stats(self) -> dict:
        """The nested dict torch's binding makes of ``MPSHeapAllocatorImpl::getDeviceStats``: c10's DeviceStats,
        with allocated_bytes and reserved_bytes filled in (the only two it sets)."""
        import dataclasses

        def array(stat=None):
            empty = dataclasses.asdict(_Stat())
            return {"all": dataclasses.asdict(stat) if stat else empty, "small_pool": empty, "large_pool": empty}

        result: dict = {name: array() for name in ("allocation", "segment", "active", "inactive_split")}
        result.update(allocated_bytes=array(self.allocated), reserved_bytes=array(self.reserved))
        result.update({name: array() for name in ("active_bytes", "inactive_split_bytes", "requested_bytes")})
        return result

    def reset_peak_stats(self) -> None:
        for stat in (self.allocated, self.reserved):
            stat.peak = stat.current

    def reset_accumulated_stats(self) -> None:
        for stat in (self.allocated, self.reserved):
            stat.allocated = stat.freed = 0

    def mem_get_info(self) -> tuple[int, int]:
        total = self.spec.recommended_max_memory
        return max(total - self.driver_allocated, 0), total


def _oom_error(message: str) -> Exception:
    """MPS's allocator raises with a plain TORCH_CHECK (MPSAllocator.mm, ``alloc_buffer_block``): a RuntimeError,
    not the torch.OutOfMemoryError of CUDA (huggingface/accelerate#4226 shows it so with torch 2.14)."""
    return RuntimeError(message)


def _pool() -> str:
    """The pool an ordinary tensor's buffer comes from: private before torch 2.13; from 2.13 every buffer is in
    unified memory (PR #175818; 2.13's MPSAllocator.h has only shared pools)."""
    from . import native

    return "shared" if native._torch_version(native._torch_dir()) >= (2, 13) else "private"


FLOAT64_MESSAGE = (
    "Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
    "Please use float32 instead."
)


def refuse_dtype(dtype) -> None:
    """MPS's refusal of a dtype it has no Metal type for (aten/src/ATen/native/mps/OperationUtils.mm,
    ``getMPSScalarType`` / Copy.mm), raised before anything is allocated."""
    if dtype in (torch.float64, torch.complex128):
        raise TypeError(FLOAT64_MESSAGE)


def accelerator_memory_api() -> bool:
    """Whether the installed torch's MPS allocator answers ``torch.accelerator``'s memory functions
    (``memory_allocated``, ``max_memory_allocated`` …): where its header (shipped with every wheel,
    torch/include/ATen/mps/MPSAllocator.h) declares ``getDeviceStats``. Elsewhere the binding is torch's own,
    which finds no MPS allocator on this build and raises, as a Mac's torch of that version refuses them."""
    from . import native

    header = native._torch_dir() / "include" / "ATen" / "mps" / "MPSAllocator.h"
    return header.exists() and "getDeviceStats" in header.read_text(errors="replace")


def pinned_memory_is_on_mps() -> bool:
    """Whether ``pin_memory()`` on a Mac gives a tensor on ``mps:0`` with the installed torch.

    Before torch 2.14, MPS's pinned-memory allocator is its shared allocator (aten/src/ATen/mps/MPSHooks.mm,
    ``getPinnedMemoryAllocator``: ``getIMPSAllocator(true)``), whose buffers' DataPtr names the MPS device
    (MPSAllocator.mm, ``MPSAllocator::allocate``). What torch then does with such memory is the installed
    torch's own code, run unchanged here: ``Tensor.pin_memory()`` (aten/src/ATen/native/Memory.cpp,
    ``_pin_memory``) sets it as a CPU tensor's storage, which ``set_`` refuses ("Attempted to set the storage
    of a tensor on device "cpu" to a storage on different device "mps:0""); from 2.7
    ``torch.empty(..., pin_memory=True)`` (EmptyTensor.cpp, ``GetCPUAllocatorMaybePinned``, PR #146687) takes
    it as it is, so the tensor says ``mps:0`` (issue #181374); 2.6 has no pinned allocator for MPS there
    ("Need to provide pin_memory allocator to use pin memory."). PR #181720, first in 2.14 (merged after
    2.13's branch cut), gives pinned memory a CPU DataPtr backed by a shared Metal buffer: a pinned CPU tensor.
    """
    from . import native

    return native._torch_version(native._torch_dir()) < (2, 14)  # read before torch has its __version__


class _Events:
    """MPS events by id (MPSEvent.mm's MPSEventPool): each records the host's clock."""

    def __init__(self):
        self.next_id = 1
        self.timing: dict[int, bool] = {}
        self.recorded: dict[int, float] = {}

    def acquire(self, enable_timing: bool) -> int:
        event_id, self.next_id = self.next_id, self.next_id + 1
        self.timing[event_id] = bool(enable_timing)
        return event_id

    def release(self, event_id: int) -> None:
        self.timing.pop(event_id, None)
        self.recorded.pop(event_id, None)

    def record(self, event_id: int) -> None:
        self.recorded[event_id] = time.perf_counter()

    def elapsed(self, start_event_id: int, end_event_id: int) -> float:
        # MPSEventPool::elapsedTime
        start, end = start_event_id, end_event_id
        if not (self.timing.get(start) and self.timing.get(end)):
            raise RuntimeError("Events were not created with argument 'enable_timing=True'")
        if start not in self.recorded or end not in self.recorded:
            raise RuntimeError("Events were not recorded before calculating elapsed time")
        return (self.recorded[end] - self.recorded[start]) * 1e3


def bindings(node) -> dict[str, Any]:
    """``{name: object}`` to set on ``torch._C``: what ``torch.mps``, ``torch.backends.mps`` and
    ``torch.accelerator`` call, answering for the simulated Mac ``node``."""
    from .runtime import _bind

    spec: MacSpec = node.specs[0]
    allocator: MetalAllocator = node.allocators[0]
    events = _Events()
    generators = []

    def default_generator():
        if not generators:
            generators.append(torch._C.Generator())  # the simulated GPU draws from a CPU generator
        return generators[0]

    def set_fraction(fraction):
        allocator.set_high_watermark_ratio(float(fraction))

    def empty_cache():
        from .runtime import _settle

        _settle()
        allocator.empty_cache()

    def settled(read):
        def reader(*args, **kwargs):
            from .runtime import _settle

            _settle()
            return read(*args, **kwargs)

        return reader

    functions = {
        "_mps_is_available": lambda: node.active,
        "_mps_is_on_macos_or_newer": lambda major, minor: True,
        "_mps_get_name": lambda: spec.name,
        "_mps_get_core_count": lambda: spec.gpu_cores,
        "_mps_deviceSynchronize": lambda: None,  # everything queued has run already
        "_mps_emptyCache": empty_cache,
        "_mps_setMemoryFraction": set_fraction,
        "_mps_currentAllocatedMemory": settled(lambda: allocator.in_use),
        "_mps_driverAllocatedMemory": settled(lambda: allocator.driver_allocated),
        "_mps_recommendedMaxMemory": lambda: spec.recommended_max_memory,
        "_mps_maxBufferLength": lambda: spec.recommended_max_memory,
        "_mps_get_default_generator": default_generator,
        "_mps_is_in_bad_fork": lambda: False,
        "_mps_acquireEvent": events.acquire,
        "_mps_releaseEvent": events.release,
        "_mps_recordEvent": events.record,
        "_mps_waitForEvent": lambda event_id: None,
        "_mps_synchronizeEvent": lambda event_id: None,
        "_mps_queryEvent": lambda event_id: True,
        "_mps_elapsedTimeOfEvents": events.elapsed,
        "_mps_profilerStartTrace": lambda mode, wait_until_completed: None,
        "_mps_profilerStopTrace": lambda: None,
        "_mps_isCaptureEnabled": lambda: False,
        "_mps_isCapturing": lambda: False,
    }
    result: dict[str, Any] = {name: _bind(name, impl) for name, impl in functions.items()}
    result["_has_mps"] = True  # torch.backends.mps.is_built()
    return result


def accelerator_bindings(node) -> dict[str, Any]:
    """``torch._C._accelerator_*`` where MPS is the accelerator: one device, index 0."""
    from .runtime import _bind

    allocator: MetalAllocator = node.allocators[0]

    def check(device_index=None):
        if device_index not in (None, -1, 0):
            raise RuntimeError(f"Invalid device index {device_index}: an Apple GPU is device 0, the only one")
        return 0

    def stream(device_index):
        check(device_index)
        return torch.Stream(stream_id=0, device_index=0, device_type=MPS_TYPE)

    functions = {
        "_accelerator_getAccelerator": lambda: torch.device("mps"),
        "_accelerator_getDeviceIndex": lambda: 0,
        "_accelerator_setDeviceIndex": lambda device_index: check(device_index) and None,
        "_accelerator_exchangeDevice": lambda device_index: check(device_index),
        "_accelerator_maybeExchangeDevice": lambda device_index: check(device_index),
        "_accelerator_getStream": stream,
        "_accelerator_setStream": lambda Stream: None,
        "_accelerator_synchronizeDevice": lambda device_index: None,
        "_accelerator_isAllocatorInitialized": lambda: True,
        "_accelerator_emptyCache": lambda: allocator.empty_cache(),
        "_accelerator_emptyHostCache": lambda: None,
        "_accelerator_hooks_device_count": lambda: 1,
        "_accelerator_deviceCount": lambda: 1,
        "_accelerator_hooks_get_current_device": lambda: 0,
        "_accelerator_hooks_set_current_device": lambda device_index: check(device_index) and None,
        "_accelerator_hooks_exchange_device": lambda device_index: check(device_index),
        "_accelerator_hooks_maybe_exchange_device": lambda device_index: check(device_index),
        "_get_accelerator": lambda check=False: torch.device("mps"),
    }
    if accelerator_memory_api():
        functions.update(
            {
                "_accelerator_getDeviceStats": lambda device_index: allocator.stats(),
                "_accelerator_resetAccumulatedStats": lambda device_index: allocator.reset_accumulated_stats(),
                "_accelerator_resetPeakStats": lambda device_index: allocator.reset_peak_stats(),
            }
        )
    from .runtime import stub_signature

    return {
        name: _bind(name, impl)
        for name, impl in functions.items()
        if hasattr(torch._C, name) or stub_signature(name) is not None
    }
