"""Lesson 04's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

The probe (``records.probe``) ran in one process on an otherwise idle H100: its training step is
Linear(1024, 4096) → ReLU → Linear(4096, 1024) on a batch of 256 (tools/gpu-runner/probe.py,
``training_step``), so every tensor it holds has a size known here, each a multiple of 512 bytes
except the loss (4 bytes, one 512-byte block)."""

from claim_kinds import Claim, Unshown

MiB = 2**20
SOLUTIONS = "solutions/04_memory.ipynb"


def _on_the_h100(records, name):
    record = records.record(name)
    assert record["device"]["name"] == "NVIDIA H100 80GB HBM3", record["device"]["name"]  # the SXM5 board
    assert record["result"].get("device", "cuda:0").startswith("cuda"), record["result"]["device"]
    return record["result"]


# ------------------------------------------------------------------ section 1: the three numbers


def _segments_larger_than_blocks(records):
    rows = {
        int(size): block_and_segment for size, block_and_segment in records.probe["allocator"].items() if size.isdigit()
    }
    assert rows[1] == [512, 2 * MiB], rows[1]  # one byte: a 512-byte block of a 2 MiB segment
    assert all(segment >= block for block, segment in rows.values()), rows
    assert sum(segment > block for block, segment in rows.values()) >= len(rows) // 2, rows


def _context_a_few_hundred_mb(records):
    context = records.probe["context bytes (total - free, nothing allocated)"]
    assert 100e6 <= context < 1e9, context  # 552 MB on the H100


def _non_tensor_bytes(records):
    """What the probe's step held beyond its tensors after the forward pass and after the backward pass."""
    step = records.probe["training step"]
    model, x = step["model"], step["batch"] - step["model"]
    assert x == 256 * 1024 * 4, x
    forward_tensors = step["batch"] + 256 * 4096 * 4 + 256 * 1024 * 4 + 512  # ReLU's output, the output, the loss
    backward_tensors = 2 * model + x + 512  # weights, gradients, x, the loss
    return step["forward"] - forward_tensors, step["backward"] - backward_tensors


def _cublas_workspace_32_mib(records):
    assert records.probe["torch"].startswith("2.11"), records.probe["torch"]
    after_forward, after_backward = _non_tensor_bytes(records)
    assert after_backward - after_forward == 32 * MiB, (after_forward, after_backward)  # the backward thread's


def _two_workspaces_65_mib(records):
    _after_forward, after_backward = _non_tensor_bytes(records)
    assert after_backward == 65 * MiB, after_backward
    # and they stay: with every tensor gone, after an out-of-memory error, 65 MiB is still allocated
    assert records.probe["errors"]["allocated after out of memory"] == 65 * MiB


def _del_then_empty_cache(records):
    allocator = records.probe["allocator"]
    assert allocator["after del, before empty_cache"] == [0, True]  # allocated 0, reserved > 0
    assert allocator["after empty_cache"] == [0, 0]  # allocated 0, reserved 0


def _used_above_reserved_by_the_context(records):
    assert records.probe["allocator"]["after empty_cache"][1] == 0
    assert records.probe["context bytes (total - free, nothing allocated)"] > 0


# ------------------------------------------------------------------ section 5: out of memory


def _out_of_memory_error(records):
    assert records.probe["errors"]["out of memory"]["type"] == "OutOfMemoryError"


def _out_of_memory_message(records):
    message = records.probe["errors"]["out of memory"]["message"]
    for words in (
        "Tried to allocate",
        "has a total capacity of",
        "is free",
        "Including non-PyTorch memory, this process has",
        "is allocated by PyTorch",
        "is reserved by PyTorch but unallocated",
    ):
        assert words in message, (words, message)


# ------------------------------------------------------------------ section 8: peak memory against the batch


def _estimate_range(records):
    result = _on_the_h100(records, "04_batch")
    ratios = [
        counted / estimate
        for counted, estimate in zip(result["bytes"]["peak, live tensors"], result["bytes"]["estimate"])
    ]
    assert round(100 * (1 - min(ratios))) == 9, ratios
    assert round(100 * (max(ratios) - 1)) == 21, ratios


def _allocator_same_or_higher(records):
    result = _on_the_h100(records, "04_batch")
    counted, allocator = result["bytes"]["peak, live tensors"], result["bytes"]["peak, CUDA allocator"]
    assert all(a >= c for a, c in zip(allocator, counted)), (counted, allocator)


def _allocator_peak_at_1024(records):
    result = _on_the_h100(records, "04_batch")
    counted, allocator = result["bytes"]["peak, live tensors"], result["bytes"]["peak, CUDA allocator"]
    differences = {batch: a - c for batch, a, c in zip(result["batches"], allocator, counted)}
    assert all(0 <= d < 512 for batch, d in differences.items() if batch <= 512), differences
    assert differences[1024] == 1_049_596, differences
    assert round(100 * differences[1024] / counted[result["batches"].index(1024)], 1) == 3.7
    # what the last Linear's bias gradient, grad.sum(0) over a (1024, 128) float32 gradient, takes by Reduce.cuh's
    # setReduceConfig on 132 SMs: output vectors of 4, blocks of 32 × 4 threads, 1024 / 4 = 256 values per thread,
    # so 16 blocks per output and a global buffer of 4 B × 128 outputs × 16 × 32 × 4 = 1 MiB, with 4 bytes of
    # semaphores (a 512-byte block); and the loss, 4 bytes in a 512-byte block. At batch 512 there are 128 values
    # per thread, under the 256 that split a reduction across blocks: only the loss's 508.
    assert differences[1024] == MiB + 512 + 508 and differences[512] == 508, differences


def _largest_batch_found(records):
    result = _on_the_h100(records, "04_batch")
    assert result["budget"] == 8 * 2**30 and result["budget_applied"] == "allocator", result["budget"]
    assert result["largest_batch"] == 382_634, result["largest_batch"]
    assert result["returned_to_baseline"] is True


def _budget_limits_the_process(records):
    assert _on_the_h100(records, "04_batch")["budget_applied"] == "allocator"


# ------------------------------------------------------------------ section 9: checkpointing


def _checkpoint_memory_falls(records):
    result = _on_the_h100(records, "04_checkpoint")
    assert result["every"] == [1, 2, 4, 8]
    for series in ("checkpoint every k-th block, live tensors", "checkpoint every k-th block, CUDA allocator"):
        peaks = result["peak_bytes"][series]
        assert peaks == sorted(peaks) and len(set(peaks)) == len(peaks), (series, peaks)
    assert (
        result["peak_bytes"]["checkpoint every k-th block, live tensors"][0]
        < result["peak_bytes"]["no checkpointing, live tensors"][0]
    )


def _checkpoint_times(records):
    result = _on_the_h100(records, "04_checkpoint")
    assert result["batch"] == 512
    every_k, none = result["ms_per_step"]["checkpoint every k-th block"], result["ms_per_step"]["no checkpointing"][0]
    assert round(every_k[0] / none, 1) == 2.5, every_k[0] / none  # every block: 2.5× longer
    assert any(later > earlier for earlier, later in zip(every_k[1:], every_k[2:])), every_k  # not falling steadily
    assert every_k[3] / none > 0.9 * every_k[0] / none, every_k  # k = 8 nearly as costly as k = 1


def _checkpoint_far_more_than_a_third(records):
    result = _on_the_h100(records, "04_checkpoint")
    every_k, none = result["ms_per_step"]["checkpoint every k-th block"], result["ms_per_step"]["no checkpointing"][0]
    assert every_k[0] / none - 1 > 3 * (1 / 3), every_k[0] / none  # it added 154%, against a third


def _checkpoint_in_between(records):
    result = _on_the_h100(records, "04_checkpoint")
    memory = result["peak_bytes"]["checkpoint every k-th block, live tensors"]
    time = result["ms_per_step"]["checkpoint every k-th block"]
    memory_none = result["peak_bytes"]["no checkpointing, live tensors"][0]
    time_none = result["ms_per_step"]["no checkpointing"][0]
    for k in (1, 2):  # k = 2 and k = 4
        assert memory[0] < memory[k] < memory_none, memory
        assert time_none < time[k] < time[0], time


# ------------------------------------------------------------------ section 10: the timeline


def _phases(result, label):
    return [(begin, end) for begin, end, name in result["phases"] if name == label]


def _timeline_at_default_settings(records):
    record = records.record("04_timeline")
    assert record["settings"] == {"batch": 512, "optimizer_name": "Adam"}, record["settings"]
    result = _on_the_h100(records, "04_timeline")
    assert "CUDA allocator" in result["bytes"] and "live tensors" in result["bytes"]


def _forward_climbs_backward_falls(records):
    result = _on_the_h100(records, "04_timeline")
    live = result["bytes"]["live tensors"]
    for begin, end in _phases(result, "forward"):
        assert all(b >= a for a, b in zip(live[begin:end], live[begin + 1 : end])), live[begin:end]
    for begin, end in _phases(result, "backward"):
        assert live[end - 1] < max(live[begin:end]) and live[end - 1] < live[begin], live[begin:end]


def _adam_state_after_step_1(records):
    result = _on_the_h100(records, "04_timeline")
    live, parameters = result["bytes"]["live tensors"], result["parameters"]
    end_of_step_1 = _phases(result, "optimizer")[0][1] - 1
    assert live[end_of_step_1] - parameters == 2 * parameters, (live[end_of_step_1], parameters)


def _peak_near_end_of_forward(records):
    result = _on_the_h100(records, "04_timeline")
    live = result["bytes"]["live tensors"]
    for (f_begin, f_end), (b_begin, b_end) in zip(_phases(result, "forward"), _phases(result, "backward")):
        step = live[f_begin:b_end]
        at = f_begin + step.index(max(step))
        assert f_end - 2 <= at <= b_begin + (b_end - b_begin) // 5, (at, f_end, b_begin, b_end)


# ------------------------------------------------------------------ other lessons' records


def _smaller_batches_use_the_gpu_less_well(records):
    samples_per_s = _on_the_h100(records, "03_throughput")["samples_per_s"]["cuda:0"]
    assert samples_per_s == sorted(samples_per_s), samples_per_s


def _bfloat16_arithmetic_faster(records):
    tflops = _on_the_h100(records, "05_matmul")["tflops"]
    assert tflops["bfloat16"][-1] > 2 * tflops["float32"][-1], (tflops["bfloat16"][-1], tflops["float32"][-1])


def _freed_blocks_stay_reserved(records):
    assert records.probe["allocator"]["after del, before empty_cache"] == [0, True]


# ------------------------------------------------------------------ third review: more of section 1, 11 and the quiz


def _rounds_to_512(records):
    """The probe's one-tensor rows: each block is the request rounded up to the next multiple of 512 bytes."""
    rows = {int(size): block for size, (block, _segment) in records.probe["allocator"].items() if size.isdigit()}
    assert rows and all(block == -(-size // 512) * 512 for size, block in rows.items()), rows
    assert records.probe["allocator"]["1000 x 4000 B"][0] == 1000 * 4096  # 4000 bytes take a 4096-byte block


def _allocator_rounding_and_workspaces(records):
    _rounds_to_512(records)
    _two_workspaces_65_mib(records)


def _tensor_rises_and_falls(records):
    allocator = records.probe["allocator"]
    assert allocator["1000 x 4000 B"][0] > 0  # allocated rises with the tensors
    _del_then_empty_cache(records)  # falls at del; reserved stays until empty_cache


def _item_waits_every_step(records):
    """07_slow_loop as written: per step, three copies without non_blocking (each a wait) and one more wait, the
    .item() (the fourth), beside the profiler's own as it stops."""
    record = records.record("07_slow_loop")
    _on_the_h100(records, "07_slow_loop")
    result = record["result"]
    steps = result["profiled_samples"] // 8
    syncs, copies = result["counts"]["syncs"][0], result["counts"][".to calls"][0]
    assert copies == 3 * steps and syncs - copies - 1 == steps, (syncs, copies, steps)


CLAIMS = [
    Claim(
        "Its caching allocator takes memory from the driver in large segments and carves tensors out of them.",
        _segments_larger_than_blocks,
    ),
    Claim(
        "reserved + the CUDA context (a few hundred MB per process, for kernels and libraries)",
        _context_a_few_hundred_mb,
    ),
    Claim(
        "PyTorch takes one from the same allocator for each thread and stream that multiplies, and keeps it — "
        "32 MiB on an H100 with torch 2.11.",
        _cublas_workspace_32_mib,
    ),
    Claim(
        "The backward pass runs on a thread of its own, so a first forward and backward pass can take two "
        "(there, it added 65 MiB). empty_cache() does not return them.",
        _two_workspaces_65_mib,
    ),
    Claim(
        "On a GPU, del brings allocated back and leaves reserved where it was; empty_cache() then brings reserved "
        "down.",
        _del_then_empty_cache,
    ),
    Claim('"Used on the GPU" stays above reserved by the CUDA context', _used_above_reserved_by_the_context),
    Claim(
        "When an allocation does not fit on an NVIDIA GPU, PyTorch raises torch.OutOfMemoryError", _out_of_memory_error
    ),
    Claim(
        "The message says how much was requested, how much the GPU has and how much of it is free, how much the "
        'process uses "including non-PyTorch memory", how much PyTorch has allocated, and how much it has reserved '
        "but not allocated",
        _out_of_memory_message,
    ),
    Claim(
        "counted here and, at its default settings, as an H100 SXM's allocator measured them",
        _timeline_at_default_settings,
    ),
    Claim("On CUDA the budget really limits the process", _budget_limits_the_process),
    Claim(
        "The counted peak lands near the estimate — from 9% below it to 21% above it in an H100 SXM's run",
        _estimate_range,
    ),
    Claim("On CUDA the allocator's peak is the same or higher", _allocator_same_or_higher),
    Claim(
        "In the H100 SXM's run the two peaks were within 512 bytes of each other up to batch 512; at batch 1024 the "
        "allocator's was 1,049,596 bytes (3.7%) higher — to the byte what the last layer's bias gradient, a sum over "
        "1,024 rows, takes for its partial sums and counters by Reduce.cuh's rules (1 MiB and a 512-byte block), and "
        "the loss's 4 bytes rounded up to 512.",
        _allocator_peak_at_1024,
    ),
    Claim("found 382,634 within 8 GiB in the H100 SXM's run", _largest_batch_found),
    Claim(
        "Accumulation costs time — smaller batches use the GPU less well (lesson 03)",
        _smaller_batches_use_the_gpu_less_well,
    ),
    Claim(
        "checkpointing every block adds about a third to the step's arithmetic, and can add far more to its time "
        "(section 9)",
        _checkpoint_far_more_than_a_third,
    ),
    Claim("speeds up the arithmetic on tensor cores", _bfloat16_arithmetic_faster),
    Claim("Memory falls as more blocks are checkpointed (k smaller)", _checkpoint_memory_falls),
    Claim(
        "on an H100 SXM at batch 512, checkpointing every block made the step 2.5× longer, and time did not fall "
        "steadily with k — checkpointing only the last block (k = 8) cost nearly as much.",
        _checkpoint_times,
    ),
    Claim(
        "Between the ends lies the trade: checkpoint every second or fourth block and keep part of the saving for "
        "part of the cost.",
        _checkpoint_in_between,
    ),
    Claim(
        "On CUDA the allocator's memory_allocated is drawn beside the ledger's count.", _timeline_at_default_settings
    ),
    Claim(
        "Each forward pass climbs as layers save activations; each backward pass falls as it frees them",
        _forward_climbs_backward_falls,
    ),
    Claim(
        "With Adam, memory at the end of step 1 is higher than at its start by twice the parameters",
        _adam_state_after_step_1,
    ),
    Claim(
        "The peak is near the end of each forward pass (or the start of backward), when all activations are live",
        _peak_near_end_of_forward,
    ),
    Claim("allocated counts tensors (and cuBLAS's workspaces)", _two_workspaces_65_mib),
    Claim(
        "on a simulated GPU whose cache keeps freed blocks reserved, as CUDA's does",
        _freed_blocks_stay_reserved,
        where=SOLUTIONS,
    ),
    # third review
    Claim(
        "When a tensor is freed, its block goes back to PyTorch's cache, not to the driver", _freed_blocks_stay_reserved
    ),
    Claim("bytes of live tensors, and cuBLAS's workspaces (below)", _two_workspaces_65_mib),
    Claim(
        "hands the unused cached segments back to the driver: reserved drops towards allocated", _del_then_empty_cache
    ),
    Claim("on one, allocated rises and falls with the tensor", _tensor_rises_and_falls),  # the code's print,
    Claim("while reserved stays until empty_cache()", _del_then_empty_cache),  # in two string literals
    Claim(
        "without the allocator's rounding or the scratch memory kernels take (cuBLAS's workspaces, for one)",
        _allocator_rounding_and_workspaces,
    ),
    Claim("It rounds every block up to a multiple of 512 bytes.", _rounds_to_512),
    Claim("it synchronises with the GPU every call (lesson 02)", _item_waits_every_step),
    Claim("empty_cache() returns unused cache", _del_then_empty_cache),
    Claim("PyTorch's caching allocator keeps the freed block for reuse", _freed_blocks_stay_reserved),
    Claim("Adam's two states per parameter appear at the end of step 1.", _adam_state_after_step_1),
    Claim(
        "which keeps freed blocks for reuse, so that reserved stays up when allocated falls",
        _freed_blocks_stay_reserved,
        where=SOLUTIONS,
    ),
    Claim("an allocation past the card's size raises torch.OutOfMemoryError", _out_of_memory_error, where=SOLUTIONS),
]

UNSHOWN = [
    Unshown(
        "Asking the GPU driver for memory (cudaMalloc) is slow and synchronises the device, so PyTorch asks rarely.",
        "no record times cudaMalloc; the CUDA runtime's documentation and the allocator's source say it",
    ),
    Unshown(
        "before the allocator reports out of memory, it returns its unused segments to the driver and tries "
        "again on its own",
        "the probe's out-of-memory error asked for twice the card, which no retry can give: "
        "the retry is in CUDACachingAllocator.cpp (malloc → release_cached_blocks), not in a record",
    ),
    Unshown(
        "NCCL (lesson 06) takes the buffers it communicates through from the driver itself",
        "the H100 run had one GPU and its lesson 06 panels ran gloo between host processes: no NCCL "
        "communicator was made, so no record holds its buffers",
    ),
    Unshown(
        "The allocator's expandable_segments:True option lets a segment grow in place instead, which avoids most "
        "of that waste.",
        "the H100 run used the default settings; no record has expandable segments on",
    ),
    Unshown(
        "in 2.9.1 the new name did not switch this option on for CUDA",
        "a torch 2.9.1 bug (pytorch/pytorch#183387); the H100 run used torch 2.11",
    ),
    Unshown("Apple's torch.mps reports what is allocated now", "an Apple GPU's API: no record comes from a Mac"),
    Unshown(
        "before it allocates, MPS refuses a request that would take it past 1.7 times Metal's recommended maximum",
        "MPSAllocator.h (default_high_watermark_ratio 1.7) and MPSAllocator.mm (alloc_buffer_block's check); no "
        "record comes from a Mac (the simulated Mac's MetalAllocator follows them: tests/unit/simulated/test_mps.py)",
    ),
    Unshown(
        "the T4 reports about 14.7 GiB, and its context takes a few hundred MiB of that",
        "a T4's figures; the shipped records are an H100 SXM's",
    ),
    Unshown(
        "It caps what PyTorch's caching allocator may reserve, as a share of the memory the GPU reports — not "
        "the CUDA context, nor other processes.",
        "torch/cuda/memory.py set_per_process_memory_fraction and the allocator's source; the 04_batch record "
        "shows the budget applied, not what the fraction is of",
    ),
    Unshown(
        "And by default it does not cut a cached block of its large pool (for tensors over 1 MiB) when 1 MiB or "
        "less would be left, and counts the whole block as allocated",
        "CUDACachingAllocator.cpp should_split (gpulab.simulated's allocator models it); in the shipped records "
        "no peak shows such a block: the 04_batch peaks differ by rounding and a reduction's scratch only",
    ),
    Unshown(
        "It counts what kernels take from it for themselves, no tensor the ledger sees",
        "the general rule is the allocator's and the kernels' source (Reduce.cuh, CublasHandlePool.cpp); the "
        "records show two instances, claimed with their own sentences (65 MiB of workspaces, 1 MiB of partial "
        "sums at batch 1024)",
    ),
    Unshown(
        "Checkpointing every block adds one forward pass of the whole model, about a third of a training step's "
        "arithmetic, so a model big enough that arithmetic is the step takes about a third longer.",
        "arithmetic counted, not measured: the only checkpointing record is the small model, whose step is "
        "fixed costs (the next sentence)",
    ),
    Unshown(
        "Mixed precision halves the activations",
        "bytes per element (2 against 4); the 05_step record's model is "
        "dominated by its weights and shows the whole step's peak, not the activations",
    ),
    Unshown(
        "The CUDA allocator can record every allocation and free with the Python stack that made it",
        "the H100 run executed the snapshot cell (nbval-lessons.log) but kept no snapshot",
    ),
    # third review
    Unshown(
        "It frees no tensor — a tensor you still reference keeps its memory",
        "the probe calls empty_cache() with no tensor alive (its 65 MiB that stay are cuBLAS's workspaces, claimed "
        "above); CUDACachingAllocator.cpp's emptyCache releases only unallocated segments",
    ),
    Unshown("in a training loop it only costs time", "no record times empty_cache()"),
    Unshown(
        "A long run with tensors of changing sizes (variable sequence lengths, say) can leave reserved memory cut "
        "into pieces too small for the next large tensor",
        "no record fragments the cache: the probe's out-of-memory error asked for twice the card (its wording is "
        "claimed in section 5), not for a block that the free pieces could not hold",
    ),
    Unshown(
        "This small model's step is mostly fixed costs per operation, and checkpointing adds operations of its own",
        "04_checkpoint times whole steps at one batch; no record profiles them",
    ),
    Unshown("With SGD there is none; with momentum, one copy.", "04_timeline ran at its default settings, Adam only"),
    Unshown(
        "what other libraries in the process took from the driver (NCCL's buffers)",
        "the H100 run had one GPU and its lesson 06 panels ran gloo between host processes: no NCCL "
        "communicator was made, so no record holds its buffers",
    ),
    Unshown(
        "Set expandable_segments:True before CUDA starts to avoid fragmentation.",
        "the H100 run used the default settings; no record has expandable segments on",
    ),
    Unshown(
        "Mixed precision shrinks the activations, not the 16 bytes, and adds a 16-bit copy of each weight.",
        "bytes per element and autocast's casts; the 05_step record holds a whole step's peak, not what it is made of",
    ),
    Unshown(
        "reserved is unchanged",
        "the probe records reserved after del only as more than 0 ([0, true]), not its value before and after",
    ),
]
