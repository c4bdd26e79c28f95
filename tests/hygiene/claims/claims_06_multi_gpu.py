"""Lesson 06's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

The machine had one GPU, and NCCL needs one per process: its three lesson 06 records (06_allreduce,
06_gradients, 06_throughput) are gloo between processes on its 16-core host. A claim may say what they
show — that gloo ran on the host, and a CPU's figures — and never quotes them as the GPU's or NCCL's.
"""

import math

from claim_kinds import Claim, Unshown

SOLUTIONS = "solutions/06_multi_gpu.ipynb"
RECORDS_06 = ("06_allreduce", "06_gradients", "06_throughput")


def _one_gpu_machine(record):
    """The record comes from the H100 SXM machine, which had one GPU and a 16-core Xeon host."""
    from gpulab import reference

    assert reference.gpu_label(record) == "H100 SXM", record["device"]
    gpus = [d for d in record["devices"] if d["type"] == "cuda"]
    cpus = [d for d in record["devices"] if d["type"] == "cpu"]
    assert len(gpus) == 1 and len(cpus) == 1, record["devices"]
    assert "Xeon" in cpus[0]["name"] and cpus[0]["cores"] == 16, cpus[0]
    return cpus[0]


def _ran_gloo_on_the_host(records):
    """Every lesson 06 record: gloo between CPU processes, on the one-GPU H100 SXM machine."""
    for name in RECORDS_06:
        record = records.record(name)
        _one_gpu_machine(record)
        assert (record["result"]["backend"], record["result"]["device"]) == ("gloo", "cpu"), (
            name,
            record["result"]["backend"],
            record["result"]["device"],
        )


def _described_as_the_hosts(records):
    """What gpulab.reference.describe says of each lesson 06 record: gloo on the host, of a machine with the GPU."""
    from gpulab import reference

    _ran_gloo_on_the_host(records)
    for name in RECORDS_06:
        assert reference.describe(name).startswith(
            "reference: gloo between processes on the host (Intel(R) Xeon(R) Processor, 16 cores) of a machine with "
            "NVIDIA H100 80GB HBM3 (H100 SXM"
        ), reference.describe(name)


def _two_processes_on_the_xeon_lose(records):
    record = records.record("06_throughput")
    _one_gpu_machine(record)
    result = record["result"]
    assert (result["backend"], result["device"], result["cores"]) == ("gloo", "cpu", 16)
    assert (result["width"], result["batch"], result["processes"]) == (512, 256, [1, 2])
    one, two = result["samples_per_s"]["DDP"]
    assert round(two / one, 2) == 0.63, two / one


def _pinned_copy_on_pcie_5(records):
    # 54 GB/s from pinned memory: more than PCIe 4.0 ×16 carries in theory (31.5), less than PCIe 5.0 ×16 (63).
    from gpulab import reference

    record = records.record("02_bandwidth")
    assert reference.gpu_label(record) == "H100 SXM" and record["result"]["device"] == "cuda:0"
    pinned = max(record["result"]["gbps"]["host→device pinned"])
    assert round(pinned) == 54, pinned
    assert reference.PCIE_X16_GBPS["PCIe 4.0 ×16"] < pinned < reference.PCIE_X16_GBPS["PCIe 5.0 ×16"] == 63.0


def _ddp_gradients_within_rounding(records):
    result = records.result("06_gradients")
    assert (result["backend"], result["device"]) == ("gloo", "cpu")
    ddp = max(result["max_abs_difference"]["DDP, all-reduced"])
    alone = max(result["max_abs_difference"]["rank 0's share alone"])
    eps = 2.0**-23 * result["largest_gradient"]
    assert 1e-9 <= ddp <= 4 * eps and round(math.log10(ddp)) in (-8, -7), (ddp, eps)  # "about 10⁻⁸"
    assert alone > 1e6 * ddp, (alone, ddp)  # "far off"


def _gloo_alpha_and_bandwidth(records):
    result = records.result("06_allreduce")
    assert (result["backend"], result["device"]) == ("gloo", "cpu")
    for name, fit in result["fit"].items():
        assert 10e-6 <= fit["alpha_s"] < 10e-3, (name, fit)  # tens of µs to milliseconds
        assert 1 <= max(result["busbw_gbps"][name]) < 10, result["busbw_gbps"][name]  # a few GB/s


def _as_drawn(result):
    """``result`` with its series as plain lists. A figure draws every point; a claim about its labels compares
    none, so drawing them reads none (a record's series remember which points a check read)."""
    return {
        key: {name: list(list.__iter__(v)) if isinstance(v, list) else v for name, v in value.items()}
        if isinstance(value, dict)
        else value
        for key, value in result.items()
    }


def _the_legend_says_gloo_on_the_host(records):
    """Each lesson 06 figure, drawn with the record's own result, labels the reference gloo on the host."""
    from gpulab import figures, plots

    _ran_gloo_on_the_host(records)
    for name, draw in (
        ("06_allreduce", figures.allreduce),
        ("06_gradients", figures.ddp_gradients),
        ("06_throughput", figures.ddp_throughput),
    ):
        for backend, device in (("gloo", "cpu"), ("nccl", "cuda:0")):  # a reader on CPUs, and on GPUs
            figure = plots.new_figure((11, 3.6))
            draw(dict(_as_drawn(records.result(name)), backend=backend, device=device), figure)
            labels = [
                line.get_label()
                for ax in figure.axes
                for line in ax.get_lines()
                if (line.get_gid() or "").startswith("reference|")
            ]
            assert labels, name
            for label in labels:
                assert label.endswith(" · gloo on the 16-core host of the H100 SXM machine (reference)"), label
                assert "H100 SXM (reference)" not in label and "nccl" not in label.lower(), label


# ---- third review: what the gloo records show of the curves (no GPU in them) ---------------------------------------


def _rank_0_alone_far_off(records):
    result = records.result("06_gradients")
    assert (result["backend"], result["device"]) == ("gloo", "cpu")
    ddp = max(result["max_abs_difference"]["DDP, all-reduced"])
    alone = result["max_abs_difference"]["rank 0's share alone"]
    assert min(alone) > 1e5 * max(ddp, 1e-12) and max(alone) > 0.1 * result["largest_gradient"], (alone, ddp)


def _flat_then_rising(records):
    """06_allreduce (gloo, 2 host processes): below α/β bytes the times stay within 2× of each other; above it they
    rise with the size, the largest several times α. Read from the points the record does not mark within noise
    (4 KiB is: it took over 1.25× the time of 64 KiB)."""
    result = records.result("06_allreduce")
    assert (result["backend"], result["device"]) == ("gloo", "cpu")
    for name in result["seconds"]:
        fit = result["fit"][name]
        knee = fit["alpha_s"] / fit["beta_s_per_byte"]
        sizes, seconds = records.clean("06_allreduce", "seconds", name)
        flat = [t for size, t in zip(sizes, seconds) if size < knee]
        rising = [t for size, t in zip(sizes, seconds) if size >= knee]
        assert len(flat) >= 3 and max(flat) < 2 * min(flat), (knee, flat)
        assert rising == sorted(rising) and rising[-1] > 10 * fit["alpha_s"], (knee, rising)


def _bus_bandwidth_climbs_and_flattens(records):
    result = records.result("06_allreduce")
    assert (result["backend"], result["device"]) == ("gloo", "cpu")
    for name, every_size in result["busbw_gbps"].items():
        n = int(name.split()[0])
        bound = 1e-9 / result["fit"][name]["beta_s_per_byte"] * 2 * (n - 1) / n
        # the bus bandwidth is S / t: none from a time the record marks within noise (4 KiB)
        timed = set(records.clean("06_allreduce", "seconds", name)[0])
        busbw = [b for size, b in zip(result["sizes"], every_size) if size in timed]
        assert len(busbw) >= 3, (name, timed)
        assert busbw == sorted(busbw), busbw  # climbs with size
        assert busbw[-1] / busbw[-2] < 1.05 and 0.8 * bound < busbw[-1] < bound, (busbw, bound)  # and flattens


CLAIMS = [
    Claim(
        "Everywhere else — a laptop, a CPU runtime, a machine with one GPU — they run the same code over "
        "gloo, PyTorch's CPU backend, with one process per rank",
        _ran_gloo_on_the_host,
    ),
    Claim(
        "one GPU: NCCL runs one process per GPU, and this lesson runs 2 or more processes, so it runs gloo",
        _ran_gloo_on_the_host,
    ),
    Claim(
        "its link to the host, PCIe 5.0 ×16, 63 GB/s per direction in theory (the H100 SXM of the course's "
        "records copied 54 GB/s from pinned host memory to the GPU, lesson 02)",
        _pinned_copy_on_pcie_5,
    ),
    Claim("over gloo, α of tens of microseconds to milliseconds, and a few GB/s", _gloo_alpha_and_bandwidth),
    Claim("DDP's gradients differ from one process's by about 10⁻⁸ — float32 rounding", _ddp_gradients_within_rounding),
    Claim(
        "on the 16-core Xeon host of the H100 SXM machine (the reference drawn beside yours, gloo between host "
        "processes, no GPU), 2 processes over gloo at width 512 and batch 256 trained 0.63× as many samples per "
        "second as one.",
        _two_processes_on_the_xeon_lose,
    ),
    Claim(
        "Where the reference result names a backend (processes on that host, as lesson 06's gloo), the label "
        "says it and whose host it was",
        _the_legend_says_gloo_on_the_host,
        where="src/gpulab/plots.py",
    ),
    Claim(
        "lesson 06's three records are gloo between processes on that machine's host CPU, not NCCL between GPUs",
        _described_as_the_hosts,
        where="README.md",
    ),
    # third review
    Claim(
        "Rank 0's own gradient, before the all-reduce, is far off: it saw only its share of the batch.",
        _rank_0_alone_far_off,
    ),
    Claim("DDP's gradients equal one process's, to float32 rounding.", _ddp_gradients_within_rounding),
    Claim("The left curves are flat, then rise: the flat part is α, the rising part β·S.", _flat_then_rising),
    Claim(
        "The bus bandwidth climbs with size towards 1/β · 2(n − 1)/n and flattens", _bus_bandwidth_climbs_and_flattens
    ),
]

_ONE_GPU = (
    "the H100 SXM machine had one GPU, so lesson 06 ran gloo between host processes there; no record "
    "holds NCCL or two GPUs"
)

UNSHOWN = [
    Unshown(
        "At every forward call it copies the model from GPU 0 to the others, splits the batch, runs the "
        "copies in threads, gathers the outputs on GPU 0",
        _ONE_GPU + " (nn.DataParallel needs two)",
    ),
    Unshown(
        "NCCL needs a GPU per process: two processes on one GPU fail where NCCL sets up their communicator, "
        'with "Duplicate GPU detected" — inside init_process_group when it is given device_id=',
        _ONE_GPU + "; the source is torch/distributed/distributed_c10d.py (device_id: the communicator is "
        "formed at once) and NCCL's init; the simulated node raises the same error at the same place "
        "(gpulab/simulated/nccl.py)",
    ),
    Unshown(
        "Nothing has used a GPU before those forks, which is what CUDA asks of a forked process.",
        "CUDA's rule for fork; the H100 run's torchrun ranks ran gloo on the host, and no record holds a fork",
    ),
    Unshown(
        "Over NCCL, all_reduce returns as soon as the work is queued on the GPU, and rank 0 waits at the first "
        "line that needs the result",
        _ONE_GPU,
    ),
    Unshown("gloo raises in the waiting call, NCCL's watchdog thread aborts the process", _ONE_GPU),
    Unshown(
        "Except where the switches add: on GPUs joined by NVSwitches (an 8-GPU H100 or H200 SXM board), NCCL's "
        "NVLS algorithm lets the switches do the additions",
        _ONE_GPU + "; the source is nccl-tests "
        "doc/PERFORMANCE.md (the 2(n − 1)/n factor holds for algorithms of sends and receives) and the "
        "published 8×H200 run (NVLS from 2 MiB up)",
    ),
    Unshown(
        "For scale: NVLink 4 moves 450 GB/s per direction per H100 SXM",
        "NVIDIA's H100 data sheet (900 GB/s "
        "both directions); the machine had one GPU, so no NVLink traffic was measured",
    ),
    Unshown("On GPUs with NVLink, expect α of tens of microseconds and hundreds of GB/s", _ONE_GPU),
    Unshown(
        "The long-dashed lines are published bus bandwidths of 8 H200 SXM GPUs over NVLink 4 (stas00's "
        "ml-engineering), not this machine's: 220 GB/s at 16 MiB messages and 482 GB/s at 16 GiB",
        "a published measurement (gpulab.reference.PUBLISHED, allreduce-8xh200-*, with its source), not a record",
    ),
    Unshown(
        "above NVLink 4's 450 GB/s, because from 2 MiB up NCCL chose NVLS, and the NVSwitches did the additions",
        "what the published source (stas00/ml-engineering, all-reduce-8xH200.md) says of its run",
    ),
    Unshown(
        "On GPUs, NCCL runs on its own CUDA streams and links, beside the computation — but its kernels "
        "occupy SMs and memory bandwidth too",
        _ONE_GPU,
    ),
    Unshown(
        "On GPUs this needs no processes at all: kernel launches return at once, so one Python thread keeps "
        "two GPUs busy",
        _ONE_GPU + " (section 9 needs two GPUs)",
    ),
    Unshown(
        "bus bandwidth S/t · 2(n − 1)/n compares with link speeds — unless the switches add, as with NCCL's NVLS",
        _ONE_GPU,
    ),
    Unshown("NCCL refuses two ranks on one device", _ONE_GPU),
    Unshown(
        "(torch.load would otherwise put them where they were saved from: rank 0's GPU)",
        "torch.load's map_location semantics; the exercise's checks run gloo on the CPU everywhere, and no "
        "record holds a checkpoint loaded across GPUs",
        where=SOLUTIONS,
    ),
    # third review
    Unshown("Where there are two or more CUDA GPUs, the scripts use NCCL, one GPU per process.", _ONE_GPU),
    Unshown("(the same code NCCL runs on GPUs)", _ONE_GPU),
    Unshown("and GPU 0 needs more memory than the rest", _ONE_GPU + " (nn.DataParallel needs two)"),
    Unshown("the backend moves the data: NCCL between CUDA GPUs (NVLink, PCIe, InfiniBand)", _ONE_GPU),
    Unshown("gloo waits here for every rank; NCCL queues it on the GPU and returns", _ONE_GPU),
    Unshown(".item() waits for the GPU: where an NCCL rank waits", _ONE_GPU),
    Unshown("and on a GPU machine with several GPUs, this script runs unchanged with NCCL", _ONE_GPU),
    Unshown(
        "on CUDA the DataLoader pins the batches (pin_memory=True) and .to(device, non_blocking=True) copies them "
        "without waiting (lessons 02 and 03)",
        "ddp_train.py ran over gloo on the host in the H100 run (nbval), so it copied nothing to the GPU; lessons 02 "
        "and 03 hold their own pinned, non_blocking copies to their records",
    ),
    Unshown(
        "a number added to a tensor is no copy",
        "ddp_train.py ran on the host in the H100 run; no record counts its copies on a GPU",
    ),
    Unshown(
        "NCCL picks its algorithm (ring, tree, NVLS) and protocol by message size and topology",
        _ONE_GPU + "; NCCL's documentation (NCCL_ALGO, NCCL_PROTO)",
    ),
    Unshown(
        "With more processes, α grows (more steps in the ring) while the bus bandwidth, if the links are not "
        "shared, stays about the same.",
        "06_allreduce ran 2 processes only (gloo, on the host)",
    ),
    Unshown(
        "DDP gets close when a step's computation is long next to its all-reduce — a wide layer, a large batch per "
        "process.",
        "06_throughput holds one setting (width 512, batch 256, gloo on the host), where 2 processes "
        "lost (claimed): no record shows DDP near N×",
    ),
    Unshown(
        "Close to 2× where the two devices (or cores) are really separate",
        "no record of section 9: the H100 machine had one GPU, and the CPU analogue's output was not kept",
    ),
    Unshown("launches return at once: both GPUs work together", _ONE_GPU + " (section 9 needs two GPUs)"),
    Unshown(
        "a checkpoint saved from cuda:0 loads onto cuda:0 in every process — 8 copies on one GPU",
        _ONE_GPU + "; torch.load's map_location semantics (torch/serialization.py)",
    ),
    Unshown("NCCL between GPUs (one per process)", _ONE_GPU),
    Unshown(
        "over NCCL, the call returns once the work is queued, and rank 0 waits where it first needs the result",
        _ONE_GPU,
    ),
]
