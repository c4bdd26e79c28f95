"""How much memory a device has free, and how large an experiment may be to fit in it."""

from __future__ import annotations

import math
import os

import torch

__all__ = ["free_bytes", "largest_buffer", "largest_square_n", "release_pinned_memory"]


def _host_available_bytes() -> int:
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # macOS and other Unixes: assume half of physical memory is usable
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def free_bytes(device: torch.device | str) -> int:
    """Bytes that new tensors on ``device`` can still take.

    CUDA: free memory as the driver reports it (``torch.cuda.mem_get_info``) plus what
    PyTorch's caching allocator holds but is not using. MPS: the recommended working set
    minus what is allocated. CPU: the memory the OS reports as available.
    """
    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        free, _total = torch.cuda.mem_get_info(index)
        cached = torch.cuda.memory_reserved(index) - torch.cuda.memory_allocated(index)
        return free + cached
    if device.type == "mps":
        limit = torch.mps.recommended_max_memory() if hasattr(torch.mps, "recommended_max_memory") else _host_available_bytes()
        return max(limit - torch.mps.current_allocated_memory(), 0)
    if device.type == "xpu" and hasattr(torch.xpu, "mem_get_info"):
        return torch.xpu.mem_get_info(device.index or 0)[0]
    return _host_available_bytes()


def largest_square_n(
    device: torch.device | str,
    *,
    matrices: int = 3,
    dtype: torch.dtype = torch.float32,
    fraction: float = 0.5,
) -> int:
    """The largest ``n`` such that ``matrices`` n×n tensors of ``dtype`` fit in ``fraction`` of free memory.

    Sliders use it as their cap, so that no setting a reader can choose runs out of memory.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    budget = free_bytes(device) * fraction
    element_size = torch.empty((), dtype=dtype).element_size()
    return int(math.isqrt(int(budget // (matrices * element_size))))


def largest_buffer(device: torch.device | str, *, buffers: int = 1, fraction: float = 0.5) -> int:
    """The most bytes each of ``buffers`` equal tensors on ``device`` may take to fit in ``fraction`` of free memory."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if buffers < 1:
        raise ValueError(f"buffers must be at least 1, got {buffers}")
    return int(free_bytes(device) * fraction) // buffers


def release_pinned_memory() -> bool:
    """Give the pinned host memory PyTorch keeps for reuse back to the operating system.

    PyTorch's pinned-memory allocator keeps every freed block for the next request, so a sweep
    over large sizes can leave gigabytes of page-locked RAM held for the life of the kernel.
    Uses ``torch.accelerator.empty_host_cache`` (newer torch) or the CUDA binding older
    versions have; returns whether one was there to call. Without an accelerator nothing is
    pinned, and nothing is done.
    """
    import gc

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None or not accelerator.is_available():
        return False
    release = getattr(accelerator, "empty_host_cache", None) or getattr(torch._C, "_host_emptyCache", None)
    if release is None:
        return False
    gc.collect()  # tensors that are garbage but not yet collected still hold their blocks
    try:
        release()
    except RuntimeError:  # a backend whose host allocator cannot release
        return False
    return True
