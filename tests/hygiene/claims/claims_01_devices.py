"""Lesson 01's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

Each check asserts the sentence's figures at the sentence's rounding. The H100 run had one GPU
(``probe["device count"]``): nothing it recorded shows what happens between two GPUs, so the lesson's
sentences about ``cuda:1`` are listed as unshown, with the PyTorch source that says them."""

from gpulab.timing import crossover, expected_seconds
from gpulab.widgets import powers_of_two

from claim_kinds import Claim, Unshown

SOLUTIONS = "solutions/01_devices.ipynb"
MiB = 2**20


def _h100_sxm(records, name="01_matmul"):
    """The record ran on the H100 SXM board: the 80 GB HBM3 part (the PCIe card is HBM2e)."""
    record = records.record(name)
    assert "H100 80GB HBM3" in record["device"]["name"], record["device"]["name"]
    return record["result"]


def _gflops(result, device):
    return [2 * n**3 / s / 1e9 for n, s in zip(result["sizes"], result["seconds"][device])]


# ---------------------------------------------------------------- §1–§2, devices


def _h100_has_hbm(records):
    # the A100's and the H200's HBM are their data sheets'; the H100's board names its own
    assert "HBM3" in records.probe["name"]
    _h100_sxm(records)


def _one_device_per_operation(records):
    errors = records.probe["errors"]
    for case in ("two devices", "matmul two devices"):  # a GPU tensor with a CPU one: refused
        assert errors[case]["type"] == "RuntimeError", errors[case]
        assert "Expected all tensors to be on the same device" in errors[case]["message"], errors[case]


def _using_a_missing_device_fails(records):
    probe = records.probe
    assert probe["device count"] == 1
    error = probe["errors"]["device index"]  # torch.ones(1, device="cuda:1") on a one-GPU machine
    assert error["type"] == "AcceleratorError" and "invalid device ordinal" in error["message"], error


def _the_build_names_its_accelerator(records):
    probe = records.probe
    assert "+cu" in probe["torch"] and probe["misc"]["accelerator"] == "cuda", (probe["torch"], probe["misc"])


# ---------------------------------------------------------------- §4, moving


def _pageable_and_pinned_copies(records):
    assert "PCIe 5.0 ×16" in records.log("README.md")
    result = _h100_sxm(records, "02_bandwidth")
    pageable = [
        gbps
        for size, gbps in zip(result["sizes"], result["gbps"]["host→device pageable"])
        if 1 * MiB <= size <= 64 * MiB
    ]
    assert len(pageable) == 4 and round(min(pageable)) == 8 and round(max(pageable)) == 14, pageable
    assert round(max(result["gbps"]["host→device pinned"])) == 54


def _cuda_is_the_current_device(records):
    misc = records.probe["misc"]
    # pinned.to("cuda", non_blocking=True): made on the current device, 0 where nothing changed it
    assert misc["current_device"] == 0 and misc["device of a GPU tensor"] == "cuda:0", misc


# ---------------------------------------------------------------- §5, the mismatch error


def _cuda_mismatch_message(records):
    error = records.probe["errors"]["two devices"]  # torch.ones(2, device="cuda") + torch.ones(2)
    assert error["message"] == (
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    ), error


# ---------------------------------------------------------------- §9, the matmul panel


def _launch_costs_microseconds(records):
    result = _h100_sxm(records)
    smallest = result["seconds"]["cuda:0"][0]  # n = 32: 65,536 flops
    assert result["sizes"][0] == 32 and 1e-6 <= smallest < 100e-6, smallest
    assert 2 * 32**3 / max(_gflops(result, "cuda:0")) / 1e9 < smallest / 100  # the arithmetic is a sliver of it


def _cpu_first_then_the_gpu(records):
    result = _h100_sxm(records)
    cpu, gpu = result["seconds"]["cpu"], result["seconds"]["cuda:0"]
    slower = [n for n, c, g in zip(result["sizes"], cpu, gpu) if g > c]
    assert slower == [32, 64, 128], slower  # small n: the CPU wins
    assert crossover(result["sizes"], cpu, gpu) == 256
    assert records.probe["properties"]["multi_processor_count"] * 128 > 1000  # 128 float32 lanes per Hopper SM


def _flat_floor(records):
    result = _h100_sxm(records)
    floor = {n: s for n, s in zip(result["sizes"], result["seconds"]["cuda:0"]) if n <= 512}
    # 4,096 times the work from n = 32 to 512, under twice the time
    assert max(floor.values()) < 2 * min(floor.values()), floor


def _gpu_climbs_past_the_levelled_cpu(records):
    result = _h100_sxm(records)
    cpu, gpu = _gflops(result, "cpu"), _gflops(result, "cuda:0")
    assert all(b > a for a, b in zip(gpu, gpu[1:])), gpu
    assert cpu[-1] / cpu[-2] < 1.1 and gpu[-1] / gpu[-2] > 3, (cpu[-2:], gpu[-2:])


def _the_host_reaches_8192(records):
    record = records.record("01_matmul")
    host = next(device for device in record["devices"] if device["type"] == "cpu")
    assert host["cores"] == 16, host
    result = _h100_sxm(records)
    at_512 = {device: _gflops(result, device)[result["sizes"].index(512)] for device in result["seconds"]}
    assert round(at_512["cpu"]) == 939, at_512

    def estimate_s(gflops):  # what the lesson's matmul_seconds adds up, device by device
        return sum(expected_seconds(2 * n**3 / (gflops * 1e9), budget_s=0.1) for n in powers_of_two(32, 8192))

    total = sum(estimate_s(rate) for rate in at_512.values())
    assert round(total) == 13 and total < 15, total
    assert round(estimate_s(700)) == 15, estimate_s(700)  # the CPU alone, at about 700 GFLOP/s


def _float32_reference(records):
    record = records.record("01_matmul")
    result = _h100_sxm(records)
    assert record["settings"]["dtype_name"] == result["dtype"] == "float32"
    assert set(result["seconds"]) == {"cpu", "cuda:0"}


def _sixteen_bit_rates_in_lesson_05(records):
    _float32_reference(records)
    assert {"bfloat16", "float16"} <= set(_h100_sxm(records, "05_matmul")["tflops"])


def _bfloat16_several_times_float32(records):
    assert records.probe["capability"] >= [8, 0] and records.probe["misc"]["bf16 supported"]
    tflops = _h100_sxm(records, "05_matmul")["tflops"]
    assert tflops["bfloat16"][-1] > 3 * tflops["float32"][-1], (tflops["bfloat16"][-1], tflops["float32"][-1])


# ---------------------------------------------------------------- §10, the unsynchronised stopwatch


def _twenty_ms_is_four_on_h100(records):
    # gpulab.timing.matmul_n_for(0.02): n from the rate of a 512×512 float32 product, in steps of 256; the
    # product of that n then runs near the float32 roof.
    result = _h100_sxm(records)
    rate_512 = _gflops(result, "cuda:0")[result["sizes"].index(512)] * 1e9
    n = int((0.02 * rate_512 / 2) ** (1 / 3)) // 256 * 256
    roof = _h100_sxm(records, "00_roofline")["ceilings"]["cuda:0"]["float32"] * 1e9
    seconds = 2 * n**3 / roof
    assert round(seconds * 1e3) == 4, (n, seconds)


def _large_beats_small(records):
    # the rate of the 512×512 product the n is sized by, against larger products on the same GPU
    result = _h100_sxm(records)
    rates = dict(zip(result["sizes"], _gflops(result, "cuda:0")))
    assert rates[1024] / rates[512] > 3, rates
    assert _h100_sxm(records, "00_roofline")["ceilings"]["cuda:0"]["float32"] / rates[512] > 3


# ---------------------------------------------------------------- the quiz


def _cpu_wins_at_64(records):
    result = _h100_sxm(records)
    at_64 = result["sizes"].index(64)
    gpu_s = result["seconds"]["cuda:0"][at_64]
    assert result["seconds"]["cpu"][at_64] < gpu_s
    assert 1e-6 <= gpu_s < 100e-6 and 2 * 64**3 / (max(_gflops(result, "cuda:0")) * 1e9) < gpu_s / 2


CLAIMS = [
    Claim("HBM on an A100, H100 or H200", _h100_has_hbm),
    Claim("PyTorch runs a GPU operation only on tensors in that GPU's memory", _one_device_per_operation),
    Claim("Using a device that is not there is what fails.", _using_a_missing_device_fails),
    Claim("A build targets one kind: current_accelerator() names it", _the_build_names_its_accelerator),
    Claim(
        "an H100 SXM, on the same PCIe 5.0 ×16, measured 8 to 14 GB/s for copies of 1 to 64 MiB, and about "
        "54 GB/s from pinned memory (lesson 02)",
        _pageable_and_pinned_copies,
    ),
    Claim(
        "PyTorch puts in the current CUDA device — cuda:0 unless the program changes it — whenever a tensor is "
        "made or moved",
        _cuda_is_the_current_device,
    ),
    Claim(
        "'Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!'",
        _cuda_mismatch_message,
    ),
    Claim("the host must launch a kernel, which takes microseconds however small the job", _launch_costs_microseconds),
    Claim(
        "At small n that price dominates and the CPU wins; at large n the accelerator's thousands of cores take over.",
        _cpu_first_then_the_gpu,
    ),
    Claim(
        "The 16-core host of the course's H100 SXM measured 939 GFLOP/s at n = 512, an estimate of about 13 s, "
        "and gets there",
        _the_host_reaches_8192,
    ),
    Claim("and in float32 an H100 SXM's measured curves, dashed, in the same units", _float32_reference),
    Claim(
        "An accelerator's time stays almost flat for small n — that flat floor is the launch cost, not the arithmetic.",
        _flat_floor,
    ),
    Claim(
        "Its GFLOP/s rises steeply with n, passes the CPU at the dotted line and keeps climbing long after the CPU "
        "has levelled off.",
        _gpu_climbs_past_the_levelled_cpu,
    ),
    Claim("Below it, a GPU can make a program slower", _cpu_first_then_the_gpu),
    Claim(
        "On GPUs from the Ampere generation on (the bf16 column of the table at the top) it runs on tensor cores "
        "and is several times faster than float32",
        _bfloat16_several_times_float32,
    ),
    Claim(
        "This panel's H100 run swept float32 only (lesson 05 has the H100's 16-bit rates)",
        _sixteen_bit_rates_in_lesson_05,
    ),
    Claim("In float32 an H100 SXM's measured curves are drawn beside it, dashed.", _float32_reference),
    Claim("so there it is less: about 4 ms on an H100 SXM.", _twenty_ms_is_four_on_h100),
    Claim('"cuda" without an index is the current GPU, cuda:0 unless changed.', _cuda_is_the_current_device),
    Claim(
        "An accelerator beats the CPU only when the work is large enough to hide the launch cost",
        _cpu_first_then_the_gpu,
    ),
    Claim("At n = 64 the CPU multiplies two n×n matrices faster than a large GPU.", _cpu_wins_at_64),
    Claim("a launch costs microseconds regardless, so the GPU waits more than it computes.", _cpu_wins_at_64),
    Claim("A large GPU multiplies large matrices several # times faster than small ones", _large_beats_small),
]

DATA_SHEET = "a data sheet's figure; no shipped record measured it"
ONE_GPU = (
    "the H100 run had one GPU (probe: device count 1); PyTorch's source says it (ATen TensorConversions.cpp, "
    "ensure_has_index: a device without an index becomes the guard's current device), and the lesson's cell "
    "runs it on the simulated 4xh100"
)
UNSHOWN = [
    Unshown(
        "write code that runs unchanged on a laptop CPU, an Apple GPU, a Colab T4 or an H200",
        "no H200, T4 or Apple GPU ran; the H100 SXM ran every cell of this lesson (nbval-lessons.log)",
    ),
    Unshown("GDDR on a T4, L4 or L40S and on gaming cards", "no such card ran: the cards' data sheets"),
    Unshown("on an Apple chip, the unified memory its CPU and GPU share", "no Apple GPU ran: Apple's documentation"),
    Unshown("NVIDIA GPUs (AMD GPUs under ROCm use the same name)", "no AMD GPU ran: PyTorch's HIP notes"),
    Unshown("which says False on a Mac with a perfectly good GPU", "no Mac ran"),
    Unshown(
        "a T4 sits on PCIe 3.0 ×16, 16 GB/s, and reads its own GDDR6 memory at 320 GB/s — twenty times faster",
        "no T4 ran: its data sheet and the PCIe specification",
    ),
    Unshown(
        "an H200 SXM sits on PCIe 5.0 ×16, 63 GB/s, and reads its HBM3e at 4.8 TB/s — 76 times faster",
        "no H200 ran: its data sheet and the PCIe specification",
    ),
    Unshown(
        'So on a machine with two GPUs, .to("cuda") of a tensor on cuda:1 is not a no-op: it copies the tensor '
        "to cuda:0.",
        ONE_GPU,
    ),
    Unshown("torch.cuda.set_device(i) makes GPU i current for this thread from then on", ONE_GPU),
    Unshown(
        "CUDA_VISIBLE_DEVICES=2,3 python train.py shows it only the machine's GPUs 2 and 3, as cuda:0 and cuda:1",
        "the run had one GPU and did not set it: CUDA's documentation (environment variables)",
    ),
    Unshown(
        "CUDA numbers GPUs fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, the order nvidia-smi shows",
        "the run had one GPU: CUDA's documentation (environment variables)",
    ),
    Unshown(
        "a zero-dimensional CPU tensor such as torch.tensor(2.0)",
        "no record holds it: TensorIterator's CPU scalars (allow_cpu_scalars); shown on meta in lesson 02 and on "
        "the simulated GPUs",
    ),
    Unshown("more than a free Colab T4 (16 GB) holds", "no T4 ran: its data sheet"),
    Unshown(
        "a CPU of a few cores, such as the two virtual CPUs beside Colab's T4, stops below it",
        "no Colab run is recorded: two virtual CPUs are one core, whose float32 peak is far below 700 GFLOP/s",
    ),
    Unshown(
        "The long-dashed line is an H100 SXM's published rate in the chosen dtype (a run posted to "
        "zzc0721/torch-performance-test-data), not a measurement of this machine.",
        "a published measurement, labelled as such in the figure",
    ),
    Unshown(
        "on a T4 it is emulated and slower — there, float16 is the format its tensor cores run",
        "no T4 ran: Turing's tensor cores (compute capability 7.5) and its data sheet",
    ),
    Unshown(
        "the peaks NVIDIA's data sheets give for a T4, an A100 SXM and an H100 SXM in that dtype (in bfloat16 the "
        "T4 has none: its tensor cores run float16 only)",
        DATA_SHEET,
    ),
    Unshown(
        "on a GPU it measures only the launch",
        "the H100 run kept no cell outputs, and the simulated GPUs are not asynchronous; lesson 00's panel and "
        "PyTorch's CUDA semantics notes show it",
    ),
    Unshown("GPU calls are asynchronous", "PyTorch's notes, CUDA semantics, 'Asynchronous execution'"),
    Unshown(
        "For a move between CPU and GPU, and for a dtype change, PyTorch moves the data inside the same "
        "Parameter objects",
        "torch/nn/modules/module.py, Module._apply (param.data = ...); no record holds it",
    ),
    Unshown(
        "On a machine with an NVIDIA GPU they record on the real GPU and need no compiler.",
        "gpulab/checks/transfers.py builds nothing where torch finds a GPU; the H100 run ran every solution "
        "(records README) but did not record whether its machine had a compiler",
        where=SOLUTIONS,
    ),
    # added
    Unshown("HBM on an A100", "the A100's and H200's memory: their data sheets (the H100's HBM3 is the Claim)"),
    Unshown('with torch.cuda.device(i): for the block only; both change what "cuda" means', ONE_GPU),
    Unshown(
        "CUDA reads the variable when it starts in the process, so set it in the shell",
        "CUDA's documentation (environment variables); the run set no CUDA_VISIBLE_DEVICES",
    ),
    Unshown("torch.cuda.is_available() is False on Apple and Intel GPUs", "no Apple or Intel GPU ran"),
    Unshown(
        "Calls to an accelerator return as soon as the work is queued.",
        "PyTorch's notes, CUDA semantics, 'Asynchronous execution'; the H100 run kept no output of this cell",
    ),
    Unshown("is copied to cuda:0, the current device", ONE_GPU),
]
