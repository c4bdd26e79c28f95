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
  counters: allocated, peak, reserved (equal to allocated), free memory; ``synchronize`` and
  ``empty_cache`` do nothing.
- On ``"cpu"`` the machine has no accelerator: ``is_available()`` is False, and the CUDA and
  accelerator memory functions raise, as on a machine without a GPU.

Nothing is really allocated: a block is a number of bytes.
"""

from __future__ import annotations

import contextlib
import weakref
from unittest import mock

import torch

from .queue import _no_gpu, presence_patches

__all__ = ["Block", "SimulatedMemory"]

MB = 2**20


class Block:
    """``nbytes`` of simulated device memory, allocated while this object lives."""

    def __init__(self, memory: "SimulatedMemory", nbytes: int):
        self.nbytes = nbytes
        self._free = weakref.finalize(self, memory._release, nbytes)

    def free(self) -> None:
        """Give the bytes back now (also done when the block is garbage)."""
        self._free()


class SimulatedMemory:
    """A simulated ``"cuda"`` GPU with ``total`` bytes, or a ``"cpu"`` machine without one (see the module)."""

    def __init__(self, device: str | torch.device = "cuda", *, total: int = 16 * 2**30):
        self.device = torch.device(device)
        if self.device.type not in ("cuda", "cpu"):
            raise ValueError(f"SimulatedMemory simulates a cuda GPU or a cpu, not {self.device.type!r}")
        self.total = int(total)
        self.allocated = 0
        self.peak = 0
        self.allocations = 0
        self.failures = 0
        self._stack: contextlib.ExitStack | None = None

    def allocate(self, nbytes: int) -> Block:
        """Allocate ``nbytes``; raises ``torch.OutOfMemoryError`` if they do not fit."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        if self.allocated + nbytes > self.total:
            self.failures += 1
            raise torch.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {nbytes / MB:.2f} MiB. GPU 0 has a total capacity of "
                f"{self.total / 2**30:.2f} GiB of which {(self.total - self.allocated) / MB:.2f} MiB is free. "
                f"Of the allocated memory {self.allocated / MB:.2f} MiB is allocated by PyTorch (simulated)")
        self.allocations += 1
        self.allocated += nbytes
        self.peak = max(self.peak, self.allocated)
        return Block(self, nbytes)

    def _release(self, nbytes: int) -> None:
        self.allocated -= nbytes

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
            "memory_allocated": allocated, "max_memory_allocated": peak, "memory_reserved": allocated,
            "max_memory_reserved": peak, "reset_peak_memory_stats": reset_peak, "reset_max_memory_allocated": reset_peak,
            "empty_cache": lambda *args, **kwargs: None, "synchronize": lambda *args, **kwargs: None,
            "memory_stats": counter(lambda: {"allocated_bytes.all.current": memory.allocated,
                                             "allocated_bytes.all.peak": memory.peak,
                                             "reserved_bytes.all.current": memory.allocated}),
            "mem_get_info": free_and_total, "get_memory_info": free_and_total,
        }
        if not gpu:    # a machine without a GPU: every memory function refuses, as there
            memory_functions = dict.fromkeys(memory_functions, _no_gpu)
        patches = presence_patches(gpu)
        patches[torch.cuda].update({name: f for name, f in memory_functions.items() if name != "get_memory_info"})
        for module in (getattr(torch.cuda, "memory", None), getattr(torch, "accelerator", None),
                       getattr(getattr(torch, "accelerator", None), "memory", None)):
            if module is not None:
                # only what this torch has: code that looks for a function must find what it would find
                patches.setdefault(module, {}).update(
                    {name: f for name, f in memory_functions.items() if hasattr(module, name)})
        return patches

    def __enter__(self) -> "SimulatedMemory":
        stack = contextlib.ExitStack()
        for target, names in self._patches().items():
            for name, value in names.items():
                stack.enter_context(mock.patch.object(target, name, value, create=name in ("is_available",)))
        self._stack = stack
        return self

    def __exit__(self, *exc_info) -> None:
        stack, self._stack = self._stack, None
        stack.close()
