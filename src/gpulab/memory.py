"""How much memory a device has free, how large an experiment may be to fit in it, how many
bytes of tensors a piece of code makes (:class:`TensorLedger`, on any device), and how to get
back what an uncaught out-of-memory error holds (:func:`recover_from_oom`)."""

from __future__ import annotations

import math
import os
import threading
import weakref
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = [
    "TensorLedger",
    "free_bytes",
    "largest_buffer",
    "largest_square_n",
    "recover_from_oom",
    "release_pinned_memory",
]


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
        limit = (
            torch.mps.recommended_max_memory()
            if hasattr(torch.mps, "recommended_max_memory")
            else _host_available_bytes()
        )
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


def _empty_accelerator_cache() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available() and hasattr(torch.mps, "empty_cache"):
        torch.mps.empty_cache()


def _uncaught_errors() -> tuple[list[BaseException], list]:
    """The last uncaught error and its traceback, from every place that keeps them, each place emptied."""
    import sys

    errors = [getattr(sys, name, None) for name in ("last_value", "last_exc")]
    tracebacks = [getattr(sys, "last_traceback", None)]
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    shell = None
    if "IPython" in sys.modules:  # only where IPython already runs: importing it is not free
        from IPython import get_ipython

        shell = get_ipython()
    if shell is not None:
        # IPython keeps the error twice more: the failed cell's result (until the next cell ends)
        # and the traceback its formatter last printed (until the next error or %debug).
        result = getattr(shell, "last_execution_result", None)
        if result is not None and getattr(result, "error_in_exec", None) is not None:
            errors.append(result.error_in_exec)
            result.error_in_exec = None
        formatter = getattr(shell, "InteractiveTB", None)
        if formatter is not None and getattr(formatter, "tb", None) is not None:
            tracebacks.append(formatter.tb)
            formatter.tb = None
    return [error for error in errors if error is not None], [tb for tb in tracebacks if tb is not None]


def recover_from_oom() -> None:
    """Free the tensors the last uncaught error holds, collect, and give cached accelerator memory back.

    After an uncaught error Python keeps it in ``sys.last_value`` and ``sys.last_traceback``
    (and ``sys.last_exc`` on Python 3.12+); IPython also keeps it in
    ``get_ipython().last_execution_result.error_in_exec`` and its traceback in
    ``get_ipython().InteractiveTB.tb``. A traceback holds the frames the error passed through,
    and they hold their local variables: the tensors of a step that ran out of memory. This
    drops those references, clears the local variables of every frame in those tracebacks
    (and in the errors they were raised from), so that a reference kept anywhere else frees
    nothing either, then collects garbage and empties the CUDA or MPS cache.
    """
    import gc

    _clear_uncaught_frames()  # in a function of its own: no local of this one holds an error while collecting
    gc.collect()
    _empty_accelerator_cache()


def _clear_uncaught_frames() -> None:
    import traceback

    errors, tracebacks = _uncaught_errors()
    seen: set[int] = set()
    while errors:
        error = errors.pop()
        if id(error) in seen:
            continue
        seen.add(id(error))
        if error.__traceback__ is not None:
            tracebacks.append(error.__traceback__)
        errors.extend(chained for chained in (error.__cause__, error.__context__) if chained is not None)
    for tb in tracebacks:
        traceback.clear_frames(tb)  # skips frames still running, such as the caller's
        while tb is not None:
            # Before Python 3.13 a frame's f_locals is a snapshot that clearing leaves behind (IPython's traceback
            # formatter takes one); reading it again after the clear empties it.
            tb.tb_frame.f_locals  # noqa: B018 -- the read is what empties it
            tb = tb.tb_next


def _same_device(tensor_device: torch.device, wanted: torch.device) -> bool:
    """Whether a tensor on tensor_device is on wanted: the type, and the index only where wanted names one."""
    if tensor_device.type != wanted.type:
        return False
    if wanted.index is None:
        return True
    return (tensor_device.index if tensor_device.index is not None else 0) == wanted.index  # a CPU tensor says "cpu"


class TensorLedger(TorchDispatchMode):
    """Counts the bytes of tensor storage that code makes while the ledger is active, on any device.

    PyTorch's allocator statistics (``torch.cuda.max_memory_allocated``) exist only for
    accelerators; a CPU has none. The ledger sees every operation PyTorch runs while it is
    active (it is a ``TorchDispatchMode``), notes each new storage an operation returns and
    when that storage is freed, and keeps

    - ``live_bytes``: bytes of the storages made under the ledger that are still alive;
    - ``peak_bytes``: the most ``live_bytes`` has been (``reset_peak()`` starts again);
    - ``trace``: ``live_bytes`` after every allocation and every free, in order; with
      ``sample`` (e.g. ``torch.cuda.memory_allocated``), ``samples`` holds its value at the same
      moments — the allocator's view beside the ledger's;
    - ``marks``: ``(position in trace, label)`` pairs set with ``mark(label)``.

    Tensors that existed before the ledger started (a model's parameters) are not counted, nor
    are views: a view shares its base's storage, nor tensors made from Python data by
    ``torch.tensor`` (no operation makes them). ``device`` limits the count to storages on one
    device: ``"cuda"`` counts every CUDA device, ``"cuda:1"`` only that one. What it counts is
    tensor bytes, as ``memory_allocated`` does, without the allocator's rounding up, its cache,
    or memory that libraries allocate on their own.
    """

    def __init__(self, device: torch.device | str | None = None, sample: Callable[[], int] | None = None):
        super().__init__()
        probe = torch.empty(1)
        if probe.untyped_storage() is not probe.untyped_storage():
            raise RuntimeError(
                f"TensorLedger needs a storage to keep one Python object (torch {torch.__version__} does not)"
            )
        self.device = torch.device(device) if device is not None else None
        self.sample = sample
        self.live_bytes = 0
        self.peak_bytes = 0
        self.trace: list[int] = []
        self.samples: list[int] = []
        self.marks: list[tuple[int, str]] = []
        self._sizes: dict[int, int] = {}  # id of a live storage made under the ledger → its bytes
        self._lock = threading.Lock()  # frees can come from the autograd engine's threads

    def _record(self, change: int) -> None:
        with self._lock:
            self.live_bytes += change
            self.peak_bytes = max(self.peak_bytes, self.live_bytes)
            self.trace.append(self.live_bytes)
            if self.sample is not None:
                self.samples.append(int(self.sample()))

    def _freed(self, key: int) -> None:
        size = self._sizes.pop(key, None)
        if size is not None:
            self._record(-size)

    def mark(self, label: str) -> None:
        """Label this moment: the next entry of ``trace`` starts what ``label`` names."""
        self.marks.append((len(self.trace), label))

    def reset_peak(self) -> None:
        """Start the peak again from what is live now."""
        self.peak_bytes = self.live_bytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = None  # the inputs' storages, gathered once an output might be new
        for tensor in tree_leaves(out):
            if not isinstance(tensor, torch.Tensor):
                continue
            if self.device is not None and not _same_device(tensor.device, self.device):
                continue
            storage = tensor.untyped_storage()
            key = id(storage)
            if key in self._sizes or storage.nbytes() == 0:
                continue  # a storage already counted
            if inputs is None:
                inputs = {id(t.untyped_storage()) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
            if key in inputs:
                continue  # a view or an in-place result
            self._sizes[key] = storage.nbytes()
            weakref.finalize(storage, self._freed, key)
            self._record(storage.nbytes())
        return out
