"""A GPU's memory counters on a simulated device, so that memory code can be checked on any machine.

Code that measures GPU memory calls ``torch.cuda.memory_allocated``,
``max_memory_allocated`` and ``reset_peak_memory_stats`` (or their ``torch.accelerator``
forms). On a machine without a GPU they have nothing to count; inside this simulation they
count the blocks a test allocates, exactly::

    with SimulatedMemory("cuda", total=16 * 2**30) as gpu:
        weights = gpu.allocate(2 * 2**30)          # 2 GiB, held while `weights` lives
        with MyTracker() as tracker:
            spike = gpu.allocate(2**30)
            del spike                              # freed: allocated drops, the peak stays
        tracker.peak_memory_mb                     # a correct tracker reports 3 GiB in MB

- ``allocate(nbytes)`` returns a :class:`Block`; its bytes count as allocated until the block
  is garbage (or ``free()`` is called). Past ``total`` it raises ``torch.OutOfMemoryError``
  with CUDA's wording, and nothing is allocated.
- ``torch.cuda`` and ``torch.accelerator`` (where this torch has them) report the simulated
  counters: allocated, peak, reserved, free memory; ``synchronize`` does nothing.
- By default nothing is cached: reserved equals allocated and ``empty_cache`` does nothing.
  With ``cache=True`` the blocks go through the model of PyTorch's caching allocator
  (:mod:`gpulab.simulated.allocator`), so that allocated and reserved differ as on a GPU: reserved grows by whole
  segments, and a freed block stays reserved for reuse (allocated falls, reserved does not) until
  ``empty_cache`` or an allocation that would not fit otherwise gives it back. Sizes are rounded
  as there (to 512 bytes; segments of 2 MiB, 20 MiB, or the size rounded to 2 MiB).
- On ``"cpu"`` the machine has no accelerator: ``is_available()`` is False, and the CUDA and
  accelerator memory functions raise, as on a machine without a GPU.
- Each function is replaced wherever code finds it (:func:`~.replace.everywhere`): a tracker that
  took ``from torch.cuda import memory_allocated`` before the block, in the module that enters it,
  in a notebook's globals or in any loaded module, reads the simulated counters too.

Nothing is really allocated: a block is a number of bytes.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import weakref

import torch

from ..simulated.allocator import DeviceAllocator
from .device_presence import no_gpu, presence_patches
from .replace import everywhere

__all__ = ["Block", "SimulatedMemory"]

MB = 2**20


class Block:
    """``nbytes`` of simulated device memory, allocated while this object lives."""

    def __init__(self, memory: SimulatedMemory, nbytes: int, allocation=None):
        self.nbytes = nbytes
        self._free = weakref.finalize(self, memory._release, nbytes, allocation)

    def free(self) -> None:
        """Give the bytes back now (also done when the block is garbage)."""
        self._free()


class SimulatedMemory:
    """A simulated ``"cuda"`` GPU with ``total`` bytes, or a ``"cpu"`` machine without one (see the module)."""

    def __init__(self, device: str | torch.device = "cuda", *, total: int = 16 * 2**30, cache: bool = False):
        self.device = torch.device(device)
        if self.device.type not in ("cuda", "cpu"):
            raise ValueError(f"SimulatedMemory simulates a cuda GPU or a cpu, not {self.device.type!r}")
        self.total = int(total)
        self.allocated = 0
        self.peak = 0
        self.allocations = 0
        self.failures = 0
        self._allocator = DeviceAllocator(0, self.total, 0) if cache else None
        self._stack: contextlib.ExitStack | None = None

    @property
    def reserved(self) -> int:
        """Bytes reserved from the device: what is allocated, and with ``cache=True`` the cached blocks too."""
        return self._allocator.reserved if self._allocator is not None else self.allocated

    def allocate(self, nbytes: int) -> Block:
        """Allocate ``nbytes``; raises ``torch.OutOfMemoryError`` if they do not fit."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        if self._allocator is not None:
            try:
                allocation = self._allocator.malloc(nbytes)
            except torch.OutOfMemoryError:
                self.failures += 1
                raise
            self.allocations += 1
            self._follow_allocator()
            return Block(self, nbytes, allocation)
        if self.allocated + nbytes > self.total:
            self.failures += 1
            raise torch.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {nbytes / MB:.2f} MiB. GPU 0 has a total capacity of "
                f"{self.total / 2**30:.2f} GiB of which {(self.total - self.allocated) / MB:.2f} MiB is free. "
                f"Of the allocated memory {self.allocated / MB:.2f} MiB is allocated by PyTorch (simulated)"
            )
        self.allocations += 1
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)
        return Block(self, nbytes)

    def _release(self, nbytes: int, allocation=None) -> None:
        if allocation is not None:
            self._allocator.free(allocation)
            self._follow_allocator()
        else:
            self.allocated -= nbytes

    def _follow_allocator(self) -> None:
        """With ``cache=True``, ``allocated`` and ``peak`` are the allocator's (rounded) counts."""
        stat = self._allocator.stats()["allocated_bytes"]["all"]
        self.allocated, self.peak = stat["current"], stat["peak"]

    def _cached_patches(self) -> dict:
        """The memory functions of a GPU whose blocks go through the caching allocator."""
        allocator = self._allocator

        def counter(read):
            return lambda device=None, *args, **kwargs: read()

        def stat(name, field):
            return counter(lambda: allocator.stats()[name]["all"][field])

        def reset_peak(device=None, *args, **kwargs):
            allocator.reset_peak_stats()
            self._follow_allocator()

        def empty_cache(*args, **kwargs):
            allocator.empty_cache()

        def flat_stats():
            # as torch/cuda/memory.py memory_stats flattens memory_stats_as_nested_dict: keys joined by ".", sorted
            flat = []

            def add(prefix, value):
                if isinstance(value, dict):
                    for key, inner in value.items():
                        add(f"{prefix}.{key}" if prefix else key, inner)
                else:
                    flat.append((prefix, value))

            add("", allocator.stats())
            return collections.OrderedDict(sorted(flat))

        free_and_total = counter(allocator.mem_get_info)
        return {
            "memory_allocated": stat("allocated_bytes", "current"),
            "max_memory_allocated": stat("allocated_bytes", "peak"),
            "memory_reserved": stat("reserved_bytes", "current"),
            "max_memory_reserved": stat("reserved_bytes", "peak"),
            "reset_peak_memory_stats": reset_peak,
            "reset_max_memory_allocated": reset_peak,
            "empty_cache": empty_cache,
            "synchronize": lambda *args, **kwargs: None,
            "memory_stats": counter(flat_stats),
            "mem_get_info": free_and_total,
            "get_memory_info": free_and_total,
        }

    def _patches(self) -> dict:
        gpu = self.device.type == "cuda"
        memory = self

        def counter(read):
            return lambda device=None, *args, **kwargs: read()

        def reset_peak(device=None, *args, **kwargs):
            memory.peak = memory.allocated

        allocated, peak = counter(lambda: memory.allocated), counter(lambda: memory.peak)
        free_and_total = counter(lambda: (memory.total - memory.allocated, memory.total))
        memory_functions = {
            "memory_allocated": allocated,
            "max_memory_allocated": peak,
            "memory_reserved": allocated,
            "max_memory_reserved": peak,
            "reset_peak_memory_stats": reset_peak,
            "reset_max_memory_allocated": reset_peak,
            "empty_cache": lambda *args, **kwargs: None,
            "synchronize": lambda *args, **kwargs: None,
            "memory_stats": counter(
                lambda: {
                    "allocated_bytes.all.current": memory.allocated,
                    "allocated_bytes.all.peak": memory.peak,
                    "reserved_bytes.all.current": memory.allocated,
                }
            ),
            "mem_get_info": free_and_total,
            "get_memory_info": free_and_total,
        }
        if self._allocator is not None:
            memory_functions = self._cached_patches()
        if not gpu:  # a machine without a GPU: every memory function refuses, as there
            memory_functions = dict.fromkeys(memory_functions, no_gpu)
        patches = presence_patches(gpu)
        patches[torch.cuda].update({name: f for name, f in memory_functions.items() if name != "get_memory_info"})
        for module in (
            getattr(torch.cuda, "memory", None),
            getattr(torch, "accelerator", None),
            getattr(getattr(torch, "accelerator", None), "memory", None),
        ):
            if module is not None:
                # only what this torch has: code that looks for a function must find what it would find
                patches.setdefault(module, {}).update(
                    {name: f for name, f in memory_functions.items() if hasattr(module, name)}
                )
        return patches

    def __enter__(self) -> SimulatedMemory:
        namespace = sys._getframe(1).f_globals  # the module entering the block: names it took before
        stack = contextlib.ExitStack()
        for owner, functions in self._patches().items():
            for name, replacement in functions.items():
                # is_available is simulated even where this torch's accelerator lacks it
                stack.enter_context(
                    everywhere(owner, name, replacement, namespace, main=True, create=name == "is_available")
                )
        self._stack = stack
        return self

    def __exit__(self, *exc_info) -> None:
        stack, self._stack = self._stack, None
        stack.close()
