"""Lesson 08's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

No H100 run of lesson 08 was recorded: there is no ``08_collectives`` or ``08_sharding`` record, and the run's
logs hold nothing of this lesson. A claim here is shown by what the H100 SXM run recorded for other lessons —
the GPU's memory as torch reported it (every record's ``device``), the probe's Adam step (``records.probe``,
the memory of one float32 Adam step of a known MLP), and lesson 06's gloo records, which show what
``gpulab.distributed`` chose on that one-GPU machine — and never quotes a figure as lesson 08's. The rest is
``UNSHOWN``: NCCL, several GPUs, a T4, and every timing of this lesson's scripts on a GPU.
"""

from claim_kinds import Claim, Unshown

RECORDS_06 = ("06_allreduce", "06_gradients", "06_throughput")


def _h100_memory_bytes(records):
    """The memory torch reported for the H100 SXM of the course's records (the same in every record)."""
    from gpulab import reference

    record = records.record("04_batch")
    assert reference.gpu_label(record) == "H100 SXM", record["device"]
    memory = record["device"]["total_memory_bytes"]
    assert all(records.record(name)["device"]["total_memory_bytes"] == memory for name in RECORDS_06)
    assert records.probe["mem_get_info total"] == memory
    return memory


def _seven_billion_does_not_fit(records):
    needed = 16 * 7e9  # 112 GB: 16 bytes per parameter
    assert round(needed / 1e9) == 112
    assert _h100_memory_bytes(records) < needed


def _gpt2_xl_fits(records):
    needed = 16 * 1.5e9  # 24 GB
    assert round(needed / 1e9) == 24
    assert needed < _h100_memory_bytes(records) / 2  # with room to spare for activations


def _fourteen_h100s(records):
    needed = 16 * 70e9  # 1,120 GB
    memory = _h100_memory_bytes(records)
    assert 13 * memory < needed <= 14 * memory, (needed, memory)


def _zero_stages_on_eight_h100s(records):
    """7B parameters on 8 ranks, the lesson's zero_bytes_per_rank: every ZeRO stage fits one H100 SXM, DDP does not,
    and ZeRO-3 leaves the most room."""
    P, N = 7e9, 8
    per_rank = {"DDP": 16 * P, "ZeRO-1": 4 * P + 12 * P / N, "ZeRO-2": 2 * P + 14 * P / N, "ZeRO-3": 16 * P / N}
    memory = _h100_memory_bytes(records)
    assert per_rank["DDP"] > memory, per_rank
    assert all(per_rank[stage] < memory for stage in ("ZeRO-1", "ZeRO-2", "ZeRO-3")), per_rank
    assert min(per_rank, key=per_rank.get) == "ZeRO-3"


def _probe_step(records):
    """The probe's float32 Adam step on the H100 SXM: Linear(1024, 4096) → ReLU → Linear(4096, 1024), batch 256
    (tools/gpu-runner/probe.py, training_step): memory_allocated after each phase."""
    step = records.probe["training step"]
    parameters = 1024 * 4096 + 4096 + 4096 * 1024 + 1024
    return step, parameters


def _adam_two_float32_moments(records):
    step, parameters = _probe_step(records)
    # optimizer.step() added exactly Adam's two moments: 2 × 4 bytes per parameter, nothing else
    assert step["step"] - step["backward"] == 2 * 4 * parameters, (step, parameters)


def _sixteen_bytes_per_parameter(records):
    """4 bytes of parameter, 4 of gradient (backward), 8 of moments (step): 16 bytes per parameter on the H100,
    beside the batch, the loss and cuBLAS's two workspaces (65 MiB, lesson 04's claims)."""
    step, parameters = _probe_step(records)
    assert step["model"] == 4 * parameters, step
    batch = step["batch"] - step["model"]
    assert batch == 256 * 1024 * 4
    workspaces = 65 * 2**20
    gradients = step["backward"] - step["model"] - batch - 512 - workspaces  # the loss: one 512-byte block
    assert gradients == 4 * parameters, (gradients, parameters)
    moments = step["step"] - step["backward"]
    assert (step["model"] + gradients + moments) / parameters == 16


def _one_gpu_ran_gloo(records):
    """gpulab.distributed, which lesson 08's scripts use too, chose gloo between CPU processes on the H100 SXM
    machine, which had one GPU (lesson 06's records)."""
    from gpulab import reference

    for name in RECORDS_06:
        record = records.record(name)
        assert reference.gpu_label(record) == "H100 SXM"
        assert [d["type"] for d in record["devices"]].count("cuda") == 1, record["devices"]
        assert (record["result"]["backend"], record["result"]["device"]) == ("gloo", "cpu"), name


def _gloo_a_few_gbps(records):
    """Lesson 06's all-reduce over gloo between 2 processes on the H100 machine's 16-core host: at most a few GB/s
    of bus bandwidth. (All-gather and reduce-scatter were not recorded.)"""
    result = records.result("06_allreduce")
    assert (result["backend"], result["device"]) == ("gloo", "cpu")
    for busbw in result["busbw_gbps"].values():
        assert 1 <= max(busbw) < 10, busbw


CLAIMS = [
    Claim("A 7B model needs 112 GB: more than one H100 SXM has.", _seven_billion_does_not_fit),
    Claim("a 7B model | 7 billion | 112 GB | does not fit", _seven_billion_does_not_fit),
    Claim("GPT-2 XL | 1.5 billion | 24 GB | fits", _gpt2_xl_fits),
    Claim("does not fit: 14 H100s' memory", _fourteen_h100s),
    Claim(
        "On eight H100 SXMs (80 GB each) every ZeRO stage fits where DDP does not, and ZeRO-3 leaves the most room",
        _zero_stages_on_eight_h100s,
    ),
    Claim("Adam's two moments, exp_avg and exp_avg_sq, each one float32 per parameter.", _adam_two_float32_moments),
    Claim("In float32 that is 4 + 4 + 4 + 4 = 16 bytes per parameter.", _sixteen_bytes_per_parameter),
    Claim(
        "one GPU: NCCL runs one process per GPU, and sharding needs 2 or more, so the scripts run gloo",
        _one_gpu_ran_gloo,
    ),
    Claim(
        "Every byte over gloo is also CPU work, on the cores that compute: a few GB/s at most",
        _gloo_a_few_gbps,
    ),
]

_NO_RECORD = "no H100 run of lesson 08 was recorded (no 08_collectives or 08_sharding record)"
_ONE_GPU = (
    _NO_RECORD + "; the H100 SXM machine had one GPU, so this lesson would have run gloo between host processes "
    "there, and no record holds NCCL or two GPUs"
)

UNSHOWN = [
    Unshown(
        "As in lesson 06, the scripts use NCCL where every process has a CUDA GPU of its own, and gloo on CPU "
        "processes everywhere else",
        _ONE_GPU + " (lesson 06's records show the gloo half: claimed above)",
    ),
    Unshown("no CUDA GPUs: the scripts run gloo on CPU processes (the same code NCCL runs on GPUs)", _ONE_GPU),
    Unshown(
        "on a CUDA GPU from the allocator, elsewhere by adding up the tensors",
        _NO_RECORD + ": section 1's cell did not run on a GPU",
    ),
    Unshown(
        "On a GPU the allocator holds more than the tensors the count adds up: the batch, the workspaces cuBLAS "
        "takes at its first matrix multiplications, and each block rounded up (lesson 04).",
        _NO_RECORD + "; lesson 04's claims and the probe (records.probe) show the H100's allocator holding cuBLAS's "
        "two workspaces (65 MiB, torch 2.11) and rounding blocks up to 512 bytes, for another cell",
    ),
    Unshown(
        "of the batch, cuBLAS's workspaces and rounding",
        _NO_RECORD + ": the line the same cell prints on a GPU",
    ),
    Unshown(
        "On CUDA GPUs, the allocator's line for DDP sits one gradient's worth above its tensors from 2 ranks on",
        _NO_RECORD + "; DDP's reducer allocates its buckets beside the gradients unless gradient_as_bucket_view "
        "(torch/nn/parallel/distributed.py, its docstring); shown here only on the simulated node",
    ),
    Unshown(
        "24 GB | fits | does not fit",
        "the T4's column: its data sheet's 16 GB (gpulab.reference.KNOWN_GPUS); no T4 was recorded",
    ),
    Unshown(
        "DDP cannot help: it copies all of it to every GPU.",
        _ONE_GPU + " (DDP's copy per GPU is lesson 06's, shown there only over gloo on the host)",
    ),
    Unshown("This is how NCCL's ring all-reduce works", _ONE_GPU + "; NCCL's own documentation"),
    Unshown(
        "numbers of ranks with the link's own speed (NVIDIA's nccl-tests, doc/PERFORMANCE.md)",
        "the definition of bus bandwidth, from nccl-tests' doc/PERFORMANCE.md; " + _ONE_GPU,
    ),
    Unshown(
        'alpha, beta = (30e-6, 1 / 50e9) if backend == "nccl" else (1e-3, 1 / 1.5e9)',
        "rough figures for the panel's time estimate, not a measurement; " + _ONE_GPU,
    ),
    Unshown(
        "where NCCL over NVLink reaches hundreds (the long-dashed lines: published all-reduce figures of 8 H200s)",
        "published all-reduce bus bandwidths of 8 H200 SXM GPUs over NVLink (gpulab.reference.PUBLISHED, "
        "allreduce-8xh200-16mib and -16gib: 219.89 and 482.26 GB/s), which the panel draws, labelled; " + _ONE_GPU,
    ),
    Unshown(
        "On eight 16 GB T4s only ZeRO-3 fits, with 2 GB left per GPU.",
        "the T4's data sheet (16 GB, gpulab.reference.KNOWN_GPUS) and the lesson's arithmetic; no T4 was recorded",
    ),
    Unshown(
        "On CUDA GPUs it also draws what the allocator holds after the step, above what it held before the model "
        "was made, and the line under the figure gives each strategy's peak, which includes the activations and the "
        "blocks being all-gathered.",
        _ONE_GPU,
    ),
    Unshown(
        "where the backend runs rings, as NCCL does on GPUs, the three climb towards the same level, and an "
        "all-gather plus a reduce-scatter take as long as an all-reduce.",
        _ONE_GPU + "; the ring's factors are nccl-tests' doc/PERFORMANCE.md",
    ),
    Unshown("on GPUs the next block's all-gather overlaps the current block's compute", _ONE_GPU),
    Unshown(
        "on GPUs with NVLink, FSDP overlaps the next block's all-gather with the current block's compute, and large "
        "models lose little.",
        _ONE_GPU,
    ),
    Unshown(
        "the default is 10 minutes for NCCL and 30 for gloo",
        "torch's defaults (init_process_group's docstring in torch/distributed/distributed_c10d.py); " + _ONE_GPU,
    ),
    Unshown("gloo says it timed out waiting; NCCL's watchdog aborts the process", _ONE_GPU),
    Unshown(
        "On a cluster, with the default timeout, that is 10 minutes of GPUs doing nothing before any error.",
        _ONE_GPU + "; NCCL's default timeout from torch's source",
    ),
]
