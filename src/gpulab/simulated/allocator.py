"""A pure-Python model of PyTorch's CUDA caching allocator, to simulate a GPU's memory on a CPU.

It only counts bytes: no tensor is allocated. It follows torch 2.13's native allocator with default
settings (``max_split_size`` unlimited, no ``roundup_power2_divisions``, no expandable segments, no
garbage collection), so that ``memory_stats()``, ``_snapshot()``, ``mem_get_info()`` and the
out-of-memory error read as they would on a real GPU.

Sources: "CCA" is PyTorch's ``c10/cuda/CUDACachingAllocator.cpp`` (class ``DeviceCachingAllocator``
unless named otherwise), read in its early-2026 main, the newest copy to be had (torch 2.13's own
.cpp is not installed with the wheel); the private methods below are named after its functions. Headers are those installed with torch 2.13 (``torch/include``):
``c10/core/AllocatorConfig.h:17-25`` (sizes), ``c10/core/Allocator.h:353-381`` (Stat) and
``432-449`` (format_size), ``c10/core/CachingDeviceAllocator.h:14-71`` (DeviceStats). Their Python
side: ``torch/cuda/memory.py`` ``memory_stats`` (231-349) and ``_snapshot`` (1027-1120), and
``torch/csrc/cuda/memory_snapshot.cpp`` ``_memory_snapshot_pickled`` (the snapshot's keys).
"""

from __future__ import annotations

import dataclasses
import sys
import time

import torch

KMIN_BLOCK_SIZE = 512  # all sizes are rounded to at least 512 bytes
KSMALL_SIZE = 1 << 20  # largest "small" allocation is 1 MiB
KSMALL_BUFFER = 2 << 20  # "small" allocations are packed in 2 MiB segments
KLARGE_BUFFER = 20 << 20  # "large" allocations may be packed in 20 MiB segments
KMIN_LARGE_ALLOC = 10 << 20  # allocations between 1 and 10 MiB may use kLargeBuffer
KROUND_LARGE = 2 << 20  # round up large allocations to 2 MiB
ONE_EXA_BYTE = 1 << 60  # NativeCachingAllocator::allocate refuses this much and more
BASE_ADDRESS = 0x7F0000000000  # fake device addresses start here, 2 MiB aligned

_STAT_ARRAYS = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)
_COUNTERS = (
    "num_alloc_retries",
    "num_ooms",
    "num_sync_all_streams",
    "num_device_alloc",
    "num_device_free",
    "num_oom_rejections",
)


def round_size(size: int) -> int:
    """CCA ``round_size``: below 512 bytes → 512, else up to a multiple of 512."""
    if size < KMIN_BLOCK_SIZE:
        return KMIN_BLOCK_SIZE
    return KMIN_BLOCK_SIZE * ((size + KMIN_BLOCK_SIZE - 1) // KMIN_BLOCK_SIZE)


def get_allocation_size(size: int) -> int:
    """CCA ``get_allocation_size``: the size of the segment cudaMalloc'd for a rounded ``size``."""
    if size <= KSMALL_SIZE:
        return KSMALL_BUFFER
    if size < KMIN_LARGE_ALLOC:
        return KLARGE_BUFFER
    return KROUND_LARGE * ((size + KROUND_LARGE - 1) // KROUND_LARGE)


def format_size(size: int) -> str:
    """``c10/core/Allocator.h`` ``format_size``: std::fixed, precision 2; the bounds are inclusive."""
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1048576:
        return f"{size / 1024.0:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576.0:.2f} MiB"
    return f"{size / 1073741824.0:.2f} GiB"


@dataclasses.dataclass
class _Stat:
    """``c10/core/Allocator.h:353-381``: current, peak, allocated (total increase), freed."""

    current: int = 0
    peak: int = 0
    allocated: int = 0
    freed: int = 0

    def increase(self, amount: int) -> None:
        self.current += amount
        self.peak = max(self.current, self.peak)
        self.allocated += amount

    def decrease(self, amount: int) -> None:
        self.current -= amount
        self.freed += amount


@dataclasses.dataclass(eq=False)  # compared by identity, as the C++ Block* are
class _Block:
    """A piece of a segment, free or allocated; ``prev``/``next`` link the pieces of one segment."""

    ptr: int
    size: int
    stream: int
    small: bool  # in the small pool
    requested_size: int = 0
    allocated: bool = False
    prev: _Block | None = dataclasses.field(default=None, repr=False)
    next: _Block | None = dataclasses.field(default=None, repr=False)

    @property
    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None


class Allocation:
    """What :meth:`DeviceAllocator.malloc` returns: the block handed out, as a pointer would be."""

    def __init__(self, allocator: DeviceAllocator, block: _Block | None, requested_size: int, stream: int) -> None:
        self.allocator = allocator
        self.address = block.ptr if block else 0  # a zero-byte allocation is a null pointer
        self.size = block.size if block else 0  # rounded, as allocated_bytes counts it
        self.requested_size = requested_size
        self.stream = stream
        self._block = block  # None once freed, so that a second free is refused

    def __repr__(self) -> str:
        return (
            f"Allocation(address={self.address:#x}, size={self.size}, "
            f"requested_size={self.requested_size}, stream={self.stream})"
        )


class DeviceAllocator:
    """The caching allocator of one simulated CUDA device of ``capacity`` bytes.

    ``context_bytes`` are used on the device outside PyTorch (the CUDA context, other libraries):
    they count against cudaMalloc and in ``mem_get_info``, never in the allocator's statistics.
    """

    def __init__(self, device_index: int, capacity: int, context_bytes: int) -> None:
        self.device_index, self.capacity, self.context_bytes = device_index, capacity, context_bytes
        self._arrays = {name: {k: _Stat() for k in ("all", "small_pool", "large_pool")} for name in _STAT_ARRAYS}
        self._oversize = {"oversize_allocations": _Stat(), "oversize_segments": _Stat()}
        self._counters = dict.fromkeys(_COUNTERS, 0)
        self._free_blocks: dict[bool, list[_Block]] = {True: [], False: []}  # by "small pool"
        self._active: set[_Block] = set()
        self._next_address = BASE_ADDRESS
        self._fraction = 1.0
        self._allowed: int | None = None  # CCA allowed_memory_maximum: set only below 1.0
        self._history = False
        self._trace: list[dict] = []
        self._trace_max = 1
        self._trace_next = 0

    @property
    def allocated(self) -> int:
        return self._arrays["allocated_bytes"]["all"].current

    @property
    def reserved(self) -> int:
        return self._arrays["reserved_bytes"]["all"].current

    @property
    def fraction(self) -> float:
        return self._fraction

    @fraction.setter
    def fraction(self, fraction: float) -> None:
        # torch/cuda/memory.py:194-195 checks the range; CCA setMemoryFraction sets a limit only
        # below 1.0, so only then does the OOM message say "... allowed; ".
        if not 0 <= fraction <= 1:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        self._fraction = float(fraction)
        self._allowed = int(fraction * self.capacity) if fraction < 1.0 else None

    def mem_get_info(self) -> tuple[int, int]:
        """``cudaMemGetInfo``: (free, total); what PyTorch reserved and the context are in use."""
        return self.capacity - self.context_bytes - self.reserved, self.capacity

    def malloc(self, nbytes: int, stream: int = 0) -> Allocation:
        """CCA ``NativeCachingAllocator::allocate`` then ``DeviceCachingAllocator::malloc``."""
        if nbytes < 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        if nbytes >= ONE_EXA_BYTE:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate more than 1EB memory.")
        if nbytes == 0:  # allocate(): `if (size != 0) this->malloc(...)`: a null pointer
            return Allocation(self, None, 0, stream)
        size = round_size(nbytes)
        small = size <= KSMALL_SIZE  # get_pool
        alloc_size = get_allocation_size(size)
        block = self._get_free_block(size, small, stream)
        if block is None:
            block = self._alloc_block(alloc_size, small, stream, is_retry=False)
            # release_available_cached_blocks returns false when max_split_size is unlimited,
            # so the next step is to free every unsplit cached segment and retry.
            if block is None:
                self._release_cached_blocks()
                block = self._alloc_block(alloc_size, small, stream, is_retry=True)
            if block is None:
                self._raise_oom(size, alloc_size, stream)
        return Allocation(self, self._alloc_found_block(block, size, nbytes, stream), nbytes, stream)

    def free(self, allocation: Allocation) -> None:
        """CCA ``NativeCachingAllocator::free`` then ``DeviceCachingAllocator::free``."""
        if allocation.address == 0:  # free(nullptr) does nothing
            return
        block = allocation._block
        if allocation.allocator is not self or block is None or block not in self._active:
            raise RuntimeError(f"invalid device pointer: {allocation.address:#x}")
        allocation._block = None
        block.allocated = False
        self._change("allocation", block.small, -1)
        self._change("allocated_bytes", block.small, -block.size)
        self._record("free_requested", block.ptr, block.requested_size, block.stream)
        self._free_block(block)  # no stream uses are simulated, so no events to wait for

    def empty_cache(self) -> None:
        """CCA ``emptyCache``: ``release_cached_blocks``, freeing segments wholly unused."""
        self._release_cached_blocks()

    def stats(self) -> dict:
        """The nested dict of ``torch._C._cuda_memoryStats(device)``.

        The keys are ``DeviceStats``'s (CachingDeviceAllocator.h:14-71) as torch 2.13's
        ``memory_stats`` documents them (torch/cuda/memory.py:231-320); ``max_split_size`` is the
        unlimited size_t cast to int64, -1; there are no private pools, hence the empty dict.
        """
        result: dict = {name: self._counters[name] for name in _COUNTERS[:2]}
        result["max_split_size"] = -1
        result.update({name: self._counters[name] for name in _COUNTERS[2:]})
        for name, array in self._arrays.items():
            result[name] = {key: dataclasses.asdict(stat) for key, stat in array.items()}
        result.update({name: dataclasses.asdict(s) for name, s in self._oversize.items()})
        result["reserved_bytes_by_private_pools"] = {}
        return result

    def reset_peak_stats(self) -> None:
        """CCA ``resetPeakStats``: every peak becomes the current value."""
        for stat in self._all_stats():
            stat.peak = stat.current

    def reset_accumulated_stats(self) -> None:
        """CCA ``resetAccumulatedStats``: allocated/freed totals and the event counters to 0."""
        for stat in self._all_stats():
            stat.allocated = stat.freed = 0
        self._counters = dict.fromkeys(_COUNTERS, 0)

    def record_history(self, enabled: bool, max_entries: int = sys.maxsize) -> None:
        """CCA ``recordHistory``: a ring buffer of at least one entry; disabling clears it.

        ``max_entries`` defaults as in ``torch.cuda.memory._record_memory_history`` (memory.py:989).
        """
        self._history = enabled
        self._trace_max = max(1, max_entries)
        if not enabled:
            self._trace, self._trace_next = [], 0

    def snapshot(self) -> dict:
        """This device's part of ``torch.cuda.memory._snapshot()``.

        ``NativeCachingAllocator::snapshot`` reads the trace before the segments, and
        ``DeviceCachingAllocator::snapshot`` then records a "snapshot" entry: it shows in the next one.
        """
        trace = self._trace[self._trace_next :] + self._trace[: self._trace_next]
        blocks = [b for pool in self._free_blocks.values() for b in pool] + list(self._active)
        segments, total_active = [], 0
        for head in sorted((b for b in blocks if b.prev is None), key=lambda b: b.ptr):
            segment = {
                "device": self.device_index,
                "address": head.ptr,
                "total_size": 0,
                "allocated_size": 0,
                "active_size": 0,
                "requested_size": 0,
                "stream": head.stream,
                "segment_type": "small" if head.small else "large",
                "segment_pool_id": (0, 0),
                "is_expandable": False,
                "frames": [],
                "blocks": [],
            }
            block = head
            while block is not None:
                segment["total_size"] += block.size
                if block.allocated:  # allocated is active: no stream uses are simulated
                    segment["allocated_size"] += block.size
                    segment["active_size"] += block.size
                    segment["requested_size"] += block.requested_size
                segment["blocks"].append(
                    {
                        "address": block.ptr,
                        "size": block.size,
                        "requested_size": block.requested_size,
                        "state": "active_allocated" if block.allocated else "inactive",
                        "frames": [],
                    }
                )
                block = block.next
            total_active += segment["active_size"]
            segments.append(segment)
        self._record("snapshot", 0, total_active, 0, frames=False)
        return {"segments": segments, "device_traces": [trace]}

    # The allocator's private steps, named after CCA's.

    def _all_stats(self):
        yield from (s for array in self._arrays.values() for s in array.values())
        yield from self._oversize.values()

    def _change(self, name: str, small: bool, amount: int) -> None:
        """``for_each_selected_stat_type``: a change counts in "all" and in the block's pool."""
        for key in ("all", "small_pool" if small else "large_pool"):
            stat = self._arrays[name][key]
            stat.increase(amount) if amount > 0 else stat.decrease(-amount)

    def _get_free_block(self, size: int, small: bool, stream: int) -> _Block | None:
        """``get_free_block``: the smallest cached block of this stream that fits, lowest address
        first among equals (BlockComparatorSize). With max_split_size unlimited, its oversize
        checks never refuse a block."""
        fits = [b for b in self._free_blocks[small] if b.stream == stream and b.size >= size]
        if not fits:
            return None
        block = min(fits, key=lambda b: (b.size, b.ptr))
        self._free_blocks[small].remove(block)
        return block

    def _alloc_block(self, alloc_size: int, small: bool, stream: int, is_retry: bool):
        """``alloc_block``: a new segment, if the fraction limit and the device allow it."""
        if is_retry:
            self._counters["num_alloc_retries"] += 1
        # total_allocated_memory (what the allocator has cudaMalloc'd) + size > allowed maximum
        if self._allowed is not None and self.reserved + alloc_size > self._allowed:
            return None
        if self.reserved + self.context_bytes + alloc_size > self.capacity:  # cudaMalloc fails
            return None
        ptr = self._next_address
        self._next_address += KROUND_LARGE * -(-alloc_size // KROUND_LARGE)
        self._change("segment", small, 1)
        self._change("reserved_bytes", small, alloc_size)
        self._counters["num_device_alloc"] += 1
        self._record("segment_alloc", ptr, alloc_size, stream)
        return _Block(ptr, alloc_size, stream, small)

    def _alloc_found_block(self, block: _Block, size: int, orig_size: int, stream: int) -> _Block:
        """``should_split`` then ``alloc_found_block``: the front of the block is handed out."""
        small, remaining_size = block.small, block.size - size
        # should_split: small pool, what is left >= 512; large pool, what is left > 1 MiB
        # (and size < max_split_size, always true here).
        split = remaining_size >= KMIN_BLOCK_SIZE if small else remaining_size > KSMALL_SIZE
        already_split = block.is_split
        if split:
            remaining, block = block, _Block(block.ptr, size, stream, small)
            block.prev, block.next = remaining.prev, remaining
            if block.prev is not None:
                block.prev.next = block
            remaining.prev = block
            remaining.ptr += size
            remaining.size -= size
            self._free_blocks[small].append(remaining)
            if already_split:  # an inactive split block shrinks by size
                self._change("inactive_split_bytes", small, -size)
            else:  # a new inactive split block appears
                self._change("inactive_split_bytes", small, remaining.size)
                self._change("inactive_split", small, 1)
        elif already_split:  # an inactive split block becomes active
            self._change("inactive_split_bytes", small, -block.size)
            self._change("inactive_split", small, -1)
        block.allocated = True
        block.requested_size = orig_size
        self._record("alloc", block.ptr, orig_size, stream)
        self._active.add(block)
        for name, amount in (
            ("allocation", 1),
            ("allocated_bytes", block.size),
            ("active", 1),
            ("active_bytes", block.size),
            ("requested_bytes", orig_size),
        ):
            self._change(name, small, amount)
        return block

    def _free_block(self, block: _Block) -> None:
        """``free_block``: back into the pool, merged with free neighbours of its segment."""
        self._record("free_completed", block.ptr, block.requested_size, block.stream)
        original_size, requested_size, small = block.size, block.requested_size, block.small
        net_blocks = net_bytes = 0
        for candidate in (block.prev, block.next):
            subsumed = self._try_merge_blocks(block, candidate)
            if subsumed:
                net_blocks -= 1
                net_bytes -= subsumed
        self._active.discard(block)
        self._free_blocks[small].append(block)
        if block.is_split:
            net_blocks += 1
            net_bytes += block.size
        if net_blocks:
            self._change("inactive_split", small, net_blocks)
        if net_bytes:
            self._change("inactive_split_bytes", small, net_bytes)
        self._change("active", small, -1)
        self._change("active_bytes", small, -original_size)
        self._change("requested_bytes", small, -requested_size)

    def _try_merge_blocks(self, dst: _Block, src: _Block | None) -> int:
        """``try_merge_blocks``: ``dst`` takes in a free neighbour; returns the bytes taken in."""
        if src is None or src.allocated:
            return 0
        if dst.prev is src:  # [src dst]
            dst.ptr, dst.prev = src.ptr, src.prev
            if dst.prev is not None:
                dst.prev.next = dst
        else:  # [dst src]
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        self._free_blocks[src.small].remove(src)
        return src.size

    def _release_cached_blocks(self) -> None:
        """``release_cached_blocks``: sync (counted), then cudaFree every unsplit cached block,
        large pool first, each pool in its set's order (stream, size, address)."""
        self._counters["num_sync_all_streams"] += 1
        for small in (False, True):
            for block in sorted(self._free_blocks[small], key=lambda b: (b.stream, b.size, b.ptr)):
                if not block.is_split:
                    self._release_block(block)

    def _release_block(self, block: _Block) -> None:
        """``release_block``: cudaFree a whole segment."""
        self._counters["num_device_free"] += 1
        self._record("segment_free", block.ptr, block.size, block.stream)
        self._change("segment", block.small, -1)
        self._change("reserved_bytes", block.small, -block.size)
        self._free_blocks[block.small].remove(block)

    def _raise_oom(self, size: int, alloc_size: int, stream: int) -> None:
        """The end of CCA ``malloc`` when no block was found, with ``reportProcessMemoryInfo``'s
        line for this process (NVML counts the context and everything reserved)."""
        device_free, device_total = self.mem_get_info()
        allowed_info = f"{format_size(self._allowed)} allowed; " if self._allowed is not None else ""
        proc_info = (
            "Including non-PyTorch memory, this process has "
            f"{format_size(self.context_bytes + self.reserved)} memory in use. "
        )
        self._record("oom", device_free, size, stream)  # OOM entries carry device_free
        self._counters["num_ooms"] += 1
        allocated, reserved = self.allocated, self.reserved
        raise torch.OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {format_size(alloc_size)}. "
            f"GPU {self.device_index} has a total capacity of {format_size(device_total)} "
            f"of which {format_size(device_free)} is free. {proc_info}{allowed_info}"
            f"Of the allocated memory {format_size(allocated)} is allocated by PyTorch, "
            f"and {format_size(reserved - allocated)} is reserved by PyTorch but unallocated."
            " If reserved but unallocated memory is large try setting"
            " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid"
            " fragmentation.  See documentation for Memory Management "
            " (https://docs.pytorch.org/docs/stable/notes/cuda.html"
            "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
        )

    def _record(self, action: str, addr: int, size: int, stream: int, frames: bool = True) -> None:
        """``record_trace`` into ``TraceEntryRingBuffer``, in the form memory_snapshot.cpp gives
        it to Python: ``device_free`` replaces ``addr`` for "oom"; no stacks are simulated."""
        if not self._history:
            return
        entry = {
            "action": action,
            ("device_free" if action == "oom" else "addr"): addr,
            "size": size,
            "stream": stream,
            "compile_context": "",
            "user_metadata": "",
            "time_us": time.time_ns() // 1000,
            "pool_id": (0, 0),
        }
        if frames:  # the snapshot entry has no context, hence no frames
            entry["frames"] = []
        if len(self._trace) < self._trace_max:
            self._trace.append(entry)
        else:
            self._trace[self._trace_next] = entry
            self._trace_next = (self._trace_next + 1) % self._trace_max
