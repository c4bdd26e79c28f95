"""The simulated CUDA caching allocator against the behaviour of PyTorch's own.

"CCA" is PyTorch's c10/cuda/CUDACachingAllocator.cpp (class DeviceCachingAllocator unless named
otherwise); headers are those installed with torch 2.13 under torch/include.
"""

import pickle

import pytest
import torch
import torch.cuda._memory_viz as memory_viz

from gpulab.simulated.allocator import DeviceAllocator, format_size, get_allocation_size, round_size

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
ADVICE = (
    " If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    " to avoid fragmentation.  See documentation for Memory Management "
    " (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
)


def gpu(capacity=16 * GiB, context=512 * MiB):
    return DeviceAllocator(0, capacity, context)


def stat(allocator, name, pool="all", field="current"):
    return allocator.stats()[name][pool][field]


def test_sizes_are_rounded_to_512_bytes():
    """CCA round_size, c10/core/AllocatorConfig.h:19 (kMinBlockSize): below 512 → 512, else a multiple of 512."""
    assert [round_size(n) for n in (1, 511, 512, 513, 1024, 1025)] == [512, 512, 512, 1024, 1024, 1536]
    a = gpu()
    one = a.malloc(1)
    assert (one.size, one.requested_size) == (512, 1)
    assert a.malloc(513).size == 1024
    assert (a.allocated, stat(a, "requested_bytes")) == (1536, 514)


def test_small_allocation_reserves_a_2_mib_segment_in_the_small_pool():
    """CCA get_pool and get_allocation_size, AllocatorConfig.h:17,21 (kSmallBuffer, kSmallSize): <= 1 MiB is small."""
    a = gpu()
    a.malloc(MiB)
    assert a.reserved == 2 * MiB == stat(a, "reserved_bytes", "small_pool")
    assert stat(a, "segment", "small_pool") == 1 and stat(a, "segment", "large_pool") == 0
    a.malloc(MiB + 1)  # rounded above 1 MiB: large pool
    assert stat(a, "reserved_bytes", "large_pool") == 20 * MiB


def test_5_mib_reserves_a_20_mib_segment():
    """CCA get_allocation_size, CCA kLargeBuffer and AllocatorConfig.h:23 (kMinLargeAlloc): 1-10 MiB → 20 MiB."""
    a = gpu()
    a.malloc(5 * MiB)
    assert (a.reserved, a.allocated) == (20 * MiB, 5 * MiB)
    assert get_allocation_size(10 * MiB - 512) == 20 * MiB


def test_11_mib_reserves_12_mib():
    """CCA get_allocation_size, AllocatorConfig.h:25 (kRoundLarge): >= 10 MiB rounds up to 2 MiB; CCA should_split:
    the 1 MiB left is not more than kSmallSize, so the whole 12 MiB is handed out."""
    a = gpu()
    a.malloc(11 * MiB)
    assert a.reserved == 12 * MiB
    assert a.allocated == 12 * MiB and stat(a, "requested_bytes") == 11 * MiB


def test_a_freed_block_is_reused_without_a_new_segment():
    """CCA malloc: get_free_block finds the cached block before alloc_block would cudaMalloc."""
    a = gpu()
    first = a.malloc(5 * MiB)
    a.free(first)
    assert (a.allocated, a.reserved) == (0, 20 * MiB)
    again = a.malloc(5 * MiB)
    assert again.address == first.address
    assert a.reserved == 20 * MiB and a.stats()["num_device_alloc"] == 1


def test_blocks_are_split_and_merged_back():
    """CCA alloc_found_block (split, inactive_split stats) and free_block / try_merge_blocks (merge)."""
    a = gpu()
    x = a.malloc(5 * MiB)
    assert (stat(a, "inactive_split"), stat(a, "inactive_split_bytes")) == (1, 15 * MiB)
    y = a.malloc(5 * MiB)  # the 15 MiB rest shrinks to 10 MiB
    assert y.address == x.address + 5 * MiB
    assert (stat(a, "inactive_split"), stat(a, "inactive_split_bytes")) == (1, 10 * MiB)
    a.free(x)  # x's neighbour y is in use: nothing to merge with
    assert (stat(a, "inactive_split"), stat(a, "inactive_split_bytes")) == (2, 15 * MiB)
    a.free(y)  # y merges with both neighbours: one whole, unsplit segment again
    assert (stat(a, "inactive_split"), stat(a, "inactive_split_bytes")) == (0, 0)
    (segment,) = a.snapshot()["segments"]
    assert [(b["size"], b["state"]) for b in segment["blocks"]] == [(20 * MiB, "inactive")]


def test_small_pool_splits_what_large_pool_does_not():
    """CCA should_split: small pool splits when >= 512 bytes remain, large pool only when more than 1 MiB remains."""
    a = gpu()
    a.malloc(2 * MiB - 512 - 512)  # leaves 1024 bytes of the 2 MiB small segment: split
    assert a.allocated == 2 * MiB - 1024
    b = gpu()
    b.malloc(19 * MiB)  # 20 MiB segment, 1 MiB left: not split
    assert b.allocated == 20 * MiB and stat(b, "inactive_split") == 0


def test_best_fit_takes_the_smallest_block_then_the_lowest_address():
    """CCA get_free_block: lower_bound in a set ordered by BlockComparatorSize (stream, size, address)."""
    a = gpu()
    first = a.malloc(6 * MiB)  # [6 | 2 | 4 | 2 | 6 free] in one 20 MiB segment
    a.malloc(2 * MiB)
    middle = a.malloc(4 * MiB)
    a.malloc(2 * MiB)
    a.free(first)
    a.free(middle)
    three = a.malloc(3 * MiB)
    assert three.address == middle.address and three.size == 4 * MiB  # 1 MiB left: not split
    five = a.malloc(5 * MiB)  # two 6 MiB holes: the lower one
    assert five.address == first.address


def test_blocks_are_not_shared_between_streams():
    """CCA get_free_block: a cached block serves only its own stream ((*it)->stream != p.stream() → not found)."""
    a = gpu()
    a.free(a.malloc(1000, stream=0))
    a.malloc(1000, stream=7)
    assert a.reserved == 4 * MiB


def test_empty_cache_releases_only_wholly_free_segments():
    """CCA emptyCache → release_cached_blocks → release_blocks: only blocks with no prev and next are cudaFree'd."""
    a = gpu()
    held = a.malloc(5 * MiB)  # a split 20 MiB segment, partly in use
    a.free(a.malloc(30 * MiB))  # a 30 MiB segment, wholly free
    a.free(a.malloc(1000))  # a 2 MiB small segment, wholly free
    a.empty_cache()
    assert a.reserved == 20 * MiB and a.stats()["num_device_free"] == 2
    a.free(held)
    a.empty_cache()
    assert a.reserved == 0 and stat(a, "segment") == 0
    assert a.stats()["num_sync_all_streams"] == 2  # synchronize_and_free_events, once per release


def test_reset_peak_stats_sets_every_peak_to_its_current_value():
    """CCA resetPeakStats, c10/core/Allocator.h:373-375 (Stat::reset_peak)."""
    a = gpu()
    a.free(a.malloc(30 * MiB))
    assert (stat(a, "allocated_bytes", field="peak"), a.allocated) == (30 * MiB, 0)
    a.reset_peak_stats()
    assert stat(a, "allocated_bytes", field="peak") == 0
    assert stat(a, "reserved_bytes", field="peak") == 30 * MiB  # the segment is still cached


def test_reset_accumulated_stats_zeroes_totals_and_counters():
    """CCA resetAccumulatedStats, Allocator.h:368-371 (Stat::reset_accumulated)."""
    a = gpu()
    kept = a.malloc(5 * MiB)
    a.free(a.malloc(30 * MiB))
    a.empty_cache()
    a.reset_accumulated_stats()
    s = a.stats()
    assert s["allocated_bytes"]["all"] == {"current": 5 * MiB, "peak": 35 * MiB, "allocated": 0, "freed": 0}
    assert s["num_device_alloc"] == s["num_device_free"] == s["num_sync_all_streams"] == 0
    a.free(kept)
    assert stat(a, "allocated_bytes", field="freed") == 5 * MiB


def test_format_size_matches_the_cpp_pretty_printer():
    """c10/core/Allocator.h:432-449 format_size: inclusive bounds, two decimals."""
    assert format_size(0) == "0 bytes" and format_size(1024) == "1024 bytes"
    assert format_size(1025) == "1.00 KiB" and format_size(MiB) == "1024.00 KiB"
    assert format_size(20 * MiB) == "20.00 MiB" and format_size(GiB) == "1024.00 MiB"
    assert format_size(GiB + 1) == "1.00 GiB" and format_size(79_150_000_000) == "73.71 GiB"


def test_out_of_memory_raises_cudas_message_and_allocates_nothing():
    """CCA malloc: TORCH_CHECK_WITH(OutOfMemoryError, ...) after alloc_block failed twice; proc_info as
    reportProcessMemoryInfo writes it for this process; num_ooms counted; the trace gets an "oom" entry."""
    a = gpu()
    a.malloc(12 * GiB)
    a.malloc(1)  # a 2 MiB small segment holding 512 bytes
    before = a.stats()
    with pytest.raises(torch.OutOfMemoryError) as caught:
        a.malloc(4 * GiB)
    assert str(caught.value) == (
        "CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 16.00 GiB of which 3.50 GiB"
        " is free. Including non-PyTorch memory, this process has 12.50 GiB memory in use. Of the allocated memory"
        " 12.00 GiB is allocated by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated." + ADVICE
    )
    after = a.stats()
    assert after["allocated_bytes"] == before["allocated_bytes"] and after["allocation"] == before["allocation"]
    assert (after["num_ooms"], after["num_alloc_retries"]) == (1, 1)


def test_tried_to_allocate_names_the_segment_size():
    """CCA malloc: the message formats alloc_size (get_allocation_size), not the bytes asked for."""
    a = gpu(capacity=1 * GiB, context=1 * GiB - 10 * MiB)
    with pytest.raises(torch.OutOfMemoryError, match=r"Tried to allocate 20\.00 MiB\. GPU 0 .* of which 10\.00 MiB"):
        a.malloc(5 * MiB)


def test_cached_segments_are_freed_and_the_allocation_retried():
    """CCA malloc: alloc_block fails → release_cached_blocks → alloc_block(isRetry=true) counts num_alloc_retries."""
    a = gpu(capacity=2 * GiB, context=0)
    a.free(a.malloc(1 * GiB))
    grown = a.malloc(GiB + GiB // 2)  # does not fit beside the cached 1 GiB: it is cudaFree'd first
    s = a.stats()
    assert (s["num_alloc_retries"], s["num_ooms"], s["num_device_free"]) == (1, 0, 1)
    assert a.reserved == grown.size == GiB + GiB // 2


def test_out_of_memory_after_freeing_the_cache():
    """CCA malloc: the retry fails too → OutOfMemoryError; the cache stays released (its reserved bytes are gone)."""
    a = gpu(capacity=2 * GiB, context=0)
    a.free(a.malloc(1 * GiB))
    with pytest.raises(torch.OutOfMemoryError, match=r"Tried to allocate 2\.50 GiB\. .* of which 2\.00 GiB is free"):
        a.malloc(2 * GiB + GiB // 2)
    s = a.stats()
    assert (s["num_alloc_retries"], s["num_ooms"], a.reserved, a.allocated) == (1, 1, 0, 0)


def test_memory_fraction_limits_what_may_be_reserved():
    """CCA setMemoryFraction (a limit only below 1.0) and alloc_block (total_allocated_memory + size >
    allowed_memory_maximum); the message adds "<allowed> allowed; "; torch/cuda/memory.py:194-195 checks the range."""
    a = gpu()
    a.fraction = 0.25
    a.malloc(3 * GiB)
    with pytest.raises(torch.OutOfMemoryError) as caught:
        a.malloc(2 * GiB)
    assert str(caught.value) == (
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 16.00 GiB of which 12.50 GiB"
        " is free. Including non-PyTorch memory, this process has 3.50 GiB memory in use. 4.00 GiB allowed; Of the"
        " allocated memory 3.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated."
        + ADVICE
    )
    a.fraction = 1.0
    a.malloc(2 * GiB)
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5. Allowed range: 0~1"):
        a.fraction = 1.5


def test_zero_bytes_is_a_null_pointer_and_counts_nothing():
    """CCA NativeCachingAllocator::allocate (`if (size != 0) this->malloc(...)`) and ::free (`if (!ptr) return`)."""
    a = gpu()
    empty = a.malloc(0)
    assert (empty.address, empty.size) == (0, 0)
    a.free(empty)
    assert a.stats() == gpu().stats()


def test_invalid_pointers_and_exabyte_requests_are_refused():
    """CCA NativeCachingAllocator::free ("invalid device pointer: ") and ::allocate (more than 1EB)."""
    a = gpu()
    block = a.malloc(1000)
    a.free(block)
    with pytest.raises(RuntimeError, match=f"invalid device pointer: {block.address:#x}"):
        a.free(block)
    with pytest.raises(torch.OutOfMemoryError, match="Tried to allocate more than 1EB memory"):
        a.malloc(1 << 60)


def test_mem_get_info_counts_the_context_and_the_reserved_bytes():
    """cudaMemGetInfo as CCA malloc reads it for the OOM message: free excludes everything reserved."""
    a = gpu()
    a.malloc(5 * MiB)
    assert a.mem_get_info() == (16 * GiB - 512 * MiB - 20 * MiB, 16 * GiB)


def test_stats_flatten_as_torch_cuda_memory_stats_does(monkeypatch):
    """torch/cuda/memory.py:231-349 memory_stats flattens _cuda_memoryStats; the keys are DeviceStats's
    (c10/core/CachingDeviceAllocator.h:14-71) as memory_stats documents them. torch's own flattening is used."""
    a = gpu()
    a.free(a.malloc(100))
    a.malloc(3 * MiB)
    monkeypatch.setattr(torch.cuda.memory, "memory_stats_as_nested_dict", lambda device=None: a.stats())
    flat = torch.cuda.memory_stats()
    assert flat["allocated_bytes.all.current"] == 3 * MiB and flat["reserved_bytes.all.peak"] == 22 * MiB
    assert flat["requested_bytes.all.current"] == 3 * MiB and flat["requested_bytes.small_pool.freed"] == 100
    assert flat["allocation.all.allocated"] == 2 and flat["active.large_pool.current"] == 1
    assert flat["max_split_size"] == -1 and flat["oversize_allocations.peak"] == 0
    scalars = {
        "num_alloc_retries",
        "num_ooms",
        "max_split_size",
        "num_sync_all_streams",
        "num_device_alloc",
        "num_device_free",
        "num_oom_rejections",
    }
    assert len(flat) == 9 * 3 * 4 + 2 * 4 + len(scalars) and scalars <= set(flat)
    assert list(flat) == sorted(flat)


def test_snapshot_has_the_shape_of_torch_cuda_memory_snapshot():
    """memory_snapshot.cpp _memory_snapshot_pickled (keys), CCA snapshot (segments by address, sizes); the dict
    goes through torch/cuda/_memory_viz.py's segsum, which checks every segment's accounting."""
    a = gpu()
    big = a.malloc(5 * MiB)
    a.malloc(100)
    snap = a.snapshot()
    assert set(snap) == {"segments", "device_traces"} and snap["device_traces"] == [[]]
    large, small = snap["segments"]
    assert set(large) == {
        "device",
        "address",
        "total_size",
        "allocated_size",
        "active_size",
        "requested_size",
        "stream",
        "segment_type",
        "segment_pool_id",
        "is_expandable",
        "frames",
        "blocks",
    }
    assert (large["segment_type"], small["segment_type"], large["segment_pool_id"]) == ("large", "small", (0, 0))
    assert large["address"] == big.address and large["address"] % (2 * MiB) == 0 and small["address"] > big.address
    assert (large["total_size"], large["allocated_size"], large["requested_size"]) == (20 * MiB, 5 * MiB, 5 * MiB)
    assert large["blocks"] == [
        {"address": big.address, "size": 5 * MiB, "requested_size": 5 * MiB, "state": "active_allocated", "frames": []},
        {"address": big.address + 5 * MiB, "size": 15 * MiB, "requested_size": 0, "state": "inactive", "frames": []},
    ]
    assert "total_reserved: 22.0MiB" in memory_viz.segsum(snap)
    pickle.dumps(snap)  # as torch.cuda.memory._dump_snapshot writes it


def test_history_is_recorded_only_while_enabled():
    """CCA record_trace (only if record_history), recordHistory (disabling clears), TraceEntryRingBuffer (keeps the
    last max_entries), snapshot (its "snapshot" entry shows in the next one); entries as memory_snapshot.cpp has them."""
    a = gpu(capacity=1 * GiB, context=0)
    a.free(a.malloc(1000))
    a.record_history(True)
    x = a.malloc(5 * MiB)
    a.free(x)
    a.empty_cache()
    with pytest.raises(torch.OutOfMemoryError):
        a.malloc(2 * GiB)
    trace = a.snapshot()["device_traces"][0]
    assert [e["action"] for e in trace] == [
        "segment_alloc",
        "alloc",
        "free_requested",
        "free_completed",
        "segment_free",
        "segment_free",
        "oom",
    ]
    assert trace[1] == {
        "action": "alloc",
        "addr": x.address,
        "size": 5 * MiB,
        "stream": 0,
        "compile_context": "",
        "user_metadata": "",
        "time_us": trace[1]["time_us"],
        "pool_id": (0, 0),
        "frames": [],
    }
    oom = trace[-1]
    assert (oom["device_free"], oom["size"]) == (1 * GiB, 2 * GiB) and "addr" not in oom
    assert "a = cudaMalloc(" in memory_viz.trace(a.snapshot())
    assert a.snapshot()["device_traces"][0][-1]["action"] == "snapshot"
    a.record_history(False)  # clears the buffer, so that the new size is the only one
    a.record_history(True, max_entries=2)
    for _ in range(3):
        a.free(a.malloc(1000))
    assert [e["action"] for e in a.snapshot()["device_traces"][0]] == ["free_requested", "free_completed"]
    a.record_history(False)
    a.malloc(1000)
    assert a.snapshot()["device_traces"] == [[]]


def test_stats_agree_with_the_snapshot_under_random_traffic():
    """The invariants CCA keeps between its stats and its blocks (snapshot, free_block, alloc_found_block):
    reserved = sum of segments, allocated = sum of allocated blocks, inactive_split(_bytes) = free blocks of split
    segments; _memory_viz.segsum checks each segment adds up."""
    import random

    rng = random.Random(0)
    a = gpu(capacity=1 * GiB, context=100 * MiB)
    live = []
    for step in range(3000):
        if live and rng.random() < 0.45:
            a.free(live.pop(rng.randrange(len(live))))
        elif step % 500 == 499:
            a.empty_cache()
        else:
            try:
                live.append(
                    a.malloc(
                        rng.choice([rng.randrange(1, 4 * KiB), rng.randrange(1, 2 * MiB), rng.randrange(1, 64 * MiB)]),
                        stream=rng.choice([0, 0, 0, 5]),
                    )
                )
            except torch.OutOfMemoryError:
                pass
        if step % 100 == 0:
            snap, s = a.snapshot(), a.stats()
            blocks = [(seg, b) for seg in snap["segments"] for b in seg["blocks"]]
            free_split = [b for seg, b in blocks if b["state"] == "inactive" and len(seg["blocks"]) > 1]
            assert s["reserved_bytes"]["all"]["current"] == sum(seg["total_size"] for seg in snap["segments"])
            assert s["allocated_bytes"]["all"]["current"] == sum(seg["allocated_size"] for seg in snap["segments"])
            assert s["allocation"]["all"]["current"] == len(live) == sum(b["state"] != "inactive" for _, b in blocks)
            assert s["inactive_split"]["all"]["current"] == len(free_split)
            assert s["inactive_split_bytes"]["all"]["current"] == sum(b["size"] for b in free_split)
            assert s["requested_bytes"]["all"]["current"] == sum(x.requested_size for x in live)
            for name in ("reserved_bytes", "allocated_bytes", "segment"):
                pools = s[name]
                assert pools["all"]["current"] == pools["small_pool"]["current"] + pools["large_pool"]["current"]
            memory_viz.segsum(snap)
    assert a.stats()["num_ooms"] > 0  # the traffic did reach the device's limit
