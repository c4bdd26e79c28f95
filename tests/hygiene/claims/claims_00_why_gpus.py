"""Lesson 00's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py).

Each check asserts the sentence's figures at the sentence's rounding. The 00_amdahl panel ran on the
H100 machine's 16-core host, not on its GPU: the lesson quotes no GPU figure from it."""

from claim_kinds import Claim, Unshown

SOLUTIONS = "solutions/00_why_gpus.ipynb"
KiB, MiB = 2**10, 2**20


def _h100_sxm(records, name="00_roofline"):
    """The record ran on the H100 SXM board: the 80 GB HBM3 part (the PCIe card is HBM2e), 700 W."""
    record = records.record(name)
    assert "H100 80GB HBM3" in record["device"]["name"], record["device"]["name"]
    assert "700W" in records.log("smi.txt")
    return record["result"]


def _floor_s(seconds):
    # as the lesson's summary line and the figure take it: the median of the three smallest sizes
    return sorted(seconds[:3])[1]


# ---------------------------------------------------------------- §1, what a GPU is made of


def _sms(records):
    _h100_sxm(records)
    assert records.probe["properties"]["multi_processor_count"] == 132


def _threads_per_sm(records):
    properties = records.probe["properties"]  # the H100's part; the A100's and T4's are data sheets
    assert properties["max_threads_per_multi_processor"] == 2048
    assert properties["max_threads_per_multi_processor"] // properties["warp_size"] == 64


def _shared_per_sm(records):
    # the 228 KB of shared memory per SM (the 256 KB of L1 and shared together is the data sheet's)
    assert records.probe["properties"]["shared_memory_per_multiprocessor"] == 228 * KiB


def _l2(records):
    assert records.probe["properties"]["L2_cache_size"] == 50 * MiB
    assert records.record("00_roofline")["device"]["l2_cache_bytes"] == 50 * MiB


def _hbm_bandwidth(records):
    device = records.record("00_roofline")["device"]  # memory clock × 2 × bus width, as the lesson's cell prints
    assert "HBM3" in device["name"] and "HBM3" in records.probe["name"], device["name"]  # the H100's memory is HBM
    assert round(device["peak_memory_gbps"] / 1e3, 2) == 3.35, device["peak_memory_gbps"]


def _float32_arithmetic(records):
    properties = records.probe["properties"]
    assert properties["multi_processor_count"] == 132 and properties["clock_rate"] == 1_980_000  # kHz
    assert round(132 * 128 * 2 * properties["clock_rate"] * 1e3 / 1e12) == 67


# ---------------------------------------------------------------- §1, measured beside the data sheet


def _percent(measured, sheet, expected):
    assert round(100 * measured / sheet) == expected, (measured, sheet)


def _float32_ceiling(records):
    ceiling = _h100_sxm(records)["ceilings"]["cuda:0"]["float32"] / 1e3
    assert round(ceiling, 1) == 50.4, ceiling
    _percent(ceiling, 67, 75)
    misc = records.probe["misc"]  # TF32 was off, as by default
    assert misc["matmul allow_tf32"] is False and misc["float32_matmul_precision"] == "highest"


def _tf32_ceiling(records):
    result = records.result("05_matmul")
    assert result["sizes"][-1] == 4096
    measured = result["tflops"]["tf32"][-1]
    assert round(measured) == 394, measured
    _percent(measured, 495, 80)


def _bfloat16_ceiling(records):
    ceiling = _h100_sxm(records)["ceilings"]["cuda:0"]["bfloat16"] / 1e3
    assert round(ceiling) == 768, ceiling
    _percent(ceiling, 989, 78)


def _copy_ceiling(records):
    gbps = _h100_sxm(records)["ceilings"]["cuda:0"]["copy_gbps"]
    assert f"{gbps:,.0f}" == "2,954", gbps
    _percent(gbps, 3350, 88)


def _pinned_link(records):
    assert "PCIe 5.0 ×16" in records.log("README.md")
    best = max(records.result("02_bandwidth")["gbps"]["host→device pinned"])
    assert round(best) == 54, best
    _percent(best, 63, 86)


def _where_the_ceilings_come_from(records):
    result = _h100_sxm(records)
    ceilings = result["ceilings"]["cuda:0"]
    assert ceilings["float32"] >= max(result["gflops"]["cuda:0"])  # the best any multiply reached
    # TF32's best, at n = 4096, over the points its record does not mark within noise (n = 64 to 256 are)
    sizes, tf32 = records.clean("05_matmul", "tflops", "tf32")
    assert sizes[-1] == records.result("05_matmul")["sizes"][-1] == 4096 and tf32[-1] == max(tf32), (sizes, tf32)
    # the copy: 256 MiB, since two such buffers fit (the lesson's copy_bytes)
    assert records.record("00_roofline")["device"]["total_memory_bytes"] > 2 * 256 * MiB


# ---------------------------------------------------------------- §3, the regimes and the roofline


def _launch_floor_10_us(records):
    _h100_sxm(records, "00_overhead")
    floor = _floor_s(records.result("00_overhead")["seconds"]["cuda:0"])
    assert round(floor * 1e6) == 10, floor


def _tf32_defaults(records):
    misc = records.probe["misc"]
    assert misc["matmul allow_tf32"] is False and misc["float32_matmul_precision"] == "highest"


def _cudnn_tf32_default(records):
    assert records.probe["misc"]["cudnn.allow_tf32"] is True


def _tf32_eight_times(records):
    tflops = records.result("05_matmul")["tflops"]
    assert round(tflops["tf32"][-1] / tflops["float32"][-1]) == 8, (tflops["tf32"][-1], tflops["float32"][-1])


def _float32_reference(records):
    result = _h100_sxm(records)
    assert result["dtype"] == "float32" and "cuda:0" in result["gflops"] and "cuda:0" in result["ceilings"]


def _no_16_bit_points(records):
    record = records.record("00_roofline")
    assert record["settings"]["precision"] == "float32" and record["result"]["dtype"] == "float32"


def _l2_of_the_h100(records):
    assert records.probe["properties"]["L2_cache_size"] == 50 * MiB


def _past_the_data_sheet_in_l2(records):
    result = _h100_sxm(records, "00_overhead")
    rates = {n: 2 * n / s / 1e9 for n, s in zip(result["sizes"], result["seconds"]["cuda:0"])}
    assert max(gbps for n, gbps in rates.items() if n <= 50 * MiB) > 3350, rates


def _floors(records):
    result = _h100_sxm(records, "00_overhead")
    record = records.record("00_overhead")
    cpu = next(device for device in record["devices"] if device["device"] == "cpu")
    assert cpu["cores"] == 16 and "Xeon" in cpu["name"]
    gpu_floor, cpu_floor = _floor_s(result["seconds"]["cuda:0"]), _floor_s(result["seconds"]["cpu"])
    assert round(gpu_floor * 1e6, 1) == 10.3 and round(cpu_floor * 1e6, 1) == 5.9, (gpu_floor, cpu_floor)
    # on its floor up to 16 MiB: below twice the floor there, above it at the next size
    times = dict(zip(result["sizes"], result["seconds"]["cuda:0"]))
    assert all(s <= 2 * gpu_floor for n, s in times.items() if n <= 16 * MiB)
    assert times[64 * MiB] > 2 * gpu_floor


def _gpu_floor_not_lower(records):
    result = records.result("00_overhead")
    gpu, cpu = result["seconds"]["cuda:0"], result["seconds"]["cpu"]
    assert _floor_s(gpu) >= _floor_s(cpu)
    largest = result["sizes"][-1]
    assert 2 * largest / gpu[-1] > 3 * (2 * largest / cpu[-1])  # far higher bandwidth


def _overhead_reference(records):
    _h100_sxm(records, "00_overhead")
    assert set(records.result("00_overhead")["seconds"]) == {"cpu", "cuda:0"}


# ---------------------------------------------------------------- §4, timing


def _fifty_ms_is_ten_on_h100(records):
    # gpulab.timing.matmul_n_for(0.05): n from the rate of a 512×512 float32 product, in steps of 256;
    # the product of that n then runs near the float32 roof.
    result = records.result("05_matmul")
    rate_512 = result["tflops"]["float32"][result["sizes"].index(512)] * 1e12
    n = int((0.05 * rate_512 / 2) ** (1 / 3)) // 256 * 256
    seconds = 2 * n**3 / (_h100_sxm(records)["ceilings"]["cuda:0"]["float32"] * 1e9)
    assert round(seconds * 1e3, -1) == 10, (n, seconds)


# ---------------------------------------------------------------- added: the run, the registers, the regimes

_LESSONS = (
    "00_amdahl",
    "00_overhead",
    "00_roofline",
    "01_matmul",
    "02_bandwidth",
    "02_sync",
    "03_placement",
    "03_throughput",
    "05_matmul",
)


def _the_course_h100(records):
    # every record the lesson quotes ran on the H100 SXM board under torch 2.11
    for name in _LESSONS:
        record = records.record(name)
        assert record["torch"].startswith("2.11.") and "H100 80GB HBM3" in record["device"]["name"], (
            name,
            record["torch"],
        )
    assert records.probe["torch"].startswith("2.11.")


def _warps_of_32(records):
    assert records.probe["properties"]["warp_size"] == 32


def _registers(records):
    # 65,536 32-bit registers per SM
    assert records.probe["properties"]["regs_per_multiprocessor"] * 4 == 256 * KiB


def _large_beats_small(records):
    # the float32 rate of a 512×512 product, against the largest the panels measured
    result = records.result("05_matmul")
    at_512 = result["tflops"]["float32"][result["sizes"].index(512)]
    assert max(result["tflops"]["float32"]) / at_512 > 3, (at_512, max(result["tflops"]["float32"]))
    assert _h100_sxm(records)["ceilings"]["cuda:0"]["float32"] / 1e3 / at_512 > 3


def _below_the_sheet(records):
    from gpulab.reference import known_gpu

    record = records.record("00_roofline")
    sheet = known_gpu(
        record["device"]["name"],
        memory_bytes=record["device"]["total_memory_bytes"],
        multiprocessors=record["device"]["multiprocessors"],
    )
    assert sheet is not None and sheet.name == "H100 SXM"
    ceilings = record["result"]["ceilings"]["cuda:0"]
    assert ceilings["float32"] / 1e3 < sheet.float32_tflops and ceilings["bfloat16"] / 1e3 < sheet.tensor_tflops
    assert ceilings["copy_gbps"] < sheet.memory_gbps
    assert records.result("05_matmul")["tflops"]["tf32"][-1] < sheet.tensor_tflops / 2  # TF32: half of bfloat16's
    assert max(records.result("02_bandwidth")["gbps"]["host→device pinned"]) < 63


def _roof(result):
    ceilings = result["ceilings"]["cuda:0"]
    flat = ceilings[result["dtype"]]
    return [min(flat, ceilings["copy_gbps"] * i) for i in result["intensity"]]


def _points_under_the_roof(records):
    result = _h100_sxm(records)
    points = result["gflops"]["cuda:0"]
    assert all(p <= r for p, r in zip(points, _roof(result))), list(zip(points, _roof(result)))


def _points_rise_then_bend(records):
    result = _h100_sxm(records)
    ceilings, points, intensity = result["ceilings"]["cuda:0"], result["gflops"]["cuda:0"], result["intensity"]
    ridge = ceilings["float32"] / ceilings["copy_gbps"]
    assert all(b > a for a, b in zip(points, points[1:])), points
    steps = list(zip(intensity, points, intensity[1:], points[1:]))
    below = [p1 / p0 for i0, p0, i1, p1 in steps if i1 < ridge]
    above = [p1 / p0 for i0, p0, i1, p1 in steps if i0 > ridge]
    assert below and all(g > 2.5 for g in below), below  # 4× the intensity: well over 2.5× the rate
    assert above and all(g < 1.6 for g in above), above  # past the ridge: it levels off
    assert points[-1] < ceilings["float32"]


def _tensor_core_roof(records):
    ceilings = _h100_sxm(records)["ceilings"]["cuda:0"]
    assert ceilings["bfloat16"] / ceilings["float32"] > 10, ceilings


def _weights_past_l2(records):
    result = _h100_sxm(records)
    assert result["width"] == 4096 and result["dtype"] == "float32"
    weight_bytes = 4096 * 4096 * 4
    assert weight_bytes == 64 * MiB > records.probe["properties"]["L2_cache_size"]
    # batch 1 reads the weights once: its rate stays under the memory roof, as reading them from HBM would
    ceilings = result["ceilings"]["cuda:0"]
    assert result["gflops"]["cuda:0"][0] < ceilings["copy_gbps"] * result["intensity"][0]


def _flat_floor(records):
    result = _h100_sxm(records, "00_overhead")
    small = [s for n, s in zip(result["sizes"], result["seconds"]["cuda:0"]) if n <= 16 * MiB]
    assert max(small) / min(small) < 1.1, small


def _memory_bound_past_the_floor(records):
    result = _h100_sxm(records, "00_overhead")
    largest, seconds = result["sizes"][-1], result["seconds"]["cuda:0"][-1]
    assert largest == 64 * MiB > records.probe["properties"]["L2_cache_size"]
    gbps = 2 * largest / seconds / 1e9
    assert 0.9 < gbps / result_copy(records) <= 1.0, gbps


def result_copy(records):
    return records.result("00_roofline")["ceilings"]["cuda:0"]["copy_gbps"]


def _batch_1_intensity(records):
    result = records.result("00_roofline")
    assert result["batches"][0] == 1 and round(result["intensity"][0], 1) == 0.5
    ceilings = result["ceilings"]["cuda:0"]
    assert result["intensity"][0] < ceilings["float32"] / ceilings["copy_gbps"] / 10  # far below the ridge


def _microseconds_anywhere(records):
    result = _h100_sxm(records, "00_overhead")
    for device in ("cpu", "cuda:0"):
        assert 1e-6 < _floor_s(result["seconds"][device]) < 100e-6, device


# ---------------------------------------------------------------- Summary


def _summary_link(records):
    gbps = records.result("02_bandwidth")["gbps"]
    assert round(max(gbps["host→device pinned"])) == 54
    pageable = max(max(gbps["host→device pageable"]), max(gbps["device→host pageable"]))
    assert round(pageable) == 14, pageable


CLAIMS = [
    Claim("an H100 SXM has 132 of them", _sms),
    Claim("holds up to 2,048 threads at once — 64 warps — on an A100 or H100", _threads_per_sm),
    Claim("256 KB on an H100, up to 228 KB of it shared", _shared_per_sm),
    Claim("All SMs share an L2 cache (50 MiB on an H100)", _l2),
    Claim("on the A100, H100 and H200 (3.35 TB/s on an H100 SXM)", _hbm_bandwidth),
    Claim("132 SMs × 128 lanes × 2 FLOPs × 1.98 GHz ≈ 67 TFLOP/s of float32 for an H100 SXM", _float32_arithmetic),
    Claim("| float32 matrix multiply, TF32 off (the default) | 67 TFLOP/s | 50.4 TFLOP/s | 75% |", _float32_ceiling),
    Claim("| float32 matrix multiply, TF32 allowed | 495 TFLOP/s | 394 TFLOP/s | 80% |", _tf32_ceiling),
    Claim("| bfloat16 matrix multiply | 989 TFLOP/s | 768 TFLOP/s | 78% |", _bfloat16_ceiling),
    Claim("| copy within its memory, bytes read plus written | 3,350 GB/s | 2,954 GB/s | 88% |", _copy_ceiling),
    Claim("| host to device over PCIe 5.0 ×16, pinned memory | 63 GB/s | 54 GB/s | 86% |", _pinned_link),
    Claim(
        "The matrix rates are the best the roofline panel below reached over square sizes up to 8192 (TF32: "
        "lesson 05's panel, n = 4096), the copy is 256 MiB",
        _where_the_ceilings_come_from,
    ),
    Claim(
        "Python, PyTorch's dispatch, launching a kernel: microseconds in all, about 10 a call on an H100 SXM",
        _launch_floor_10_us,
    ),
    Claim(
        "they use TF32 tensor cores only when asked (torch.backends.cuda.matmul.allow_tf32 is False, "
        'torch.get_float32_matmul_precision() is "highest")',
        _tf32_defaults,
    ),
    Claim(
        "cuDNN may use TF32 for float32 convolutions unless told not to (torch.backends.cudnn.allow_tf32 is True "
        "by default)",
        _cudnn_tf32_default,
    ),
    Claim(
        "the same float32 matrices run on the tensor cores in TF32, about 8 times faster on the H100 SXM",
        _tf32_eight_times,
    ),
    Claim("In float32, an H100 SXM's measured roof and points are drawn beside it, dashed", _float32_reference),
    Claim("In 16-bit the recorded run has no points (it swept float32)", _no_16_bit_points),
    Claim("50 MiB on an H100 or H200", _l2_of_the_h100),
    Claim("so up to that size the GB/s can pass the data sheet's memory bandwidth", _past_the_data_sheet_in_l2),
    Claim(
        "A GPU's floor is no lower than the CPU's — the kernel launch comes on top of the same Python and "
        "dispatch — but its bandwidth is far higher.",
        _gpu_floor_not_lower,
    ),
    Claim(
        "An H100 SXM's floor was 10.3 µs a call, its 16-core Xeon host's 5.9 µs, and the H100 stayed on its "
        "floor up to 16 MiB.",
        _floors,
    ),
    Claim(
        "Without an accelerator, the dashed curve is that H100 SXM's, measured, beside your CPU's.", _overhead_reference
    ),
    Claim("so there it is less: about 10 ms on an H100 SXM.", _fifty_ms_is_ten_on_h100),
    Claim(
        "An H100 SXM measured about 54 GB/s from pinned host memory and at best 14 GB/s from ordinary, "
        "pageable memory (lesson 02).",
        _summary_link,
    ),
    Claim("lesson 00 measured about 10 µs a call on its H100 SXM", _launch_floor_10_us, where=SOLUTIONS),
    Claim(
        "The course's own H100 SXM (torch 2.11, the records that readers without a GPU see beside their results) "
        "measured",
        _the_course_h100,
    ),
    Claim("runs its threads in warps of 32", _warps_of_32),
    Claim("has 256 KB of registers", _registers),
    Claim("A large GPU multiplies large matrices # several times faster than small ones", _large_beats_small),
    Claim("No device reaches its data sheet.", _below_the_sheet),
    Claim("They stay at or below the roof.", _points_under_the_roof),
    Claim("The points rise with the batch while the layer is memory-bound", _points_rise_then_bend),
    Claim("then bend near the ridge and level off under the flat part, compute-bound", _points_rise_then_bend),
    Claim("On a GPU with tensor cores the flat part of the roof rises many times over", _tensor_core_roof),
    Claim("The weight matrix is 64 MiB or more", _weights_past_l2),
    Claim("so each call there really reads it from memory", _weights_past_l2),
    Claim("For small tensors the time per call is flat: the floor.", _flat_floor),
    Claim(
        "Beyond it the time grows with the size and the bandwidth approaches what memory gives: memory-bound.",
        _memory_bound_past_the_floor,
    ),
    Claim("about 0.5 FLOP/B in float32, far below any GPU's ridge", _batch_1_intensity),
    Claim("each call costs microseconds of Python, dispatch and launch whatever the device", _microseconds_anywhere),
]

DATA_SHEET = "a data sheet's figure; no shipped record measured it"
UNSHOWN = [
    Unshown("and 1,024 (32 warps) on a T4", "no T4 ran: the T4's data sheet (compute capability 7.5)"),
    Unshown(
        "128 per SM on an H100",
        "the Hopper architecture's figure; torch's device properties do not report lanes per SM",
    ),
    Unshown("and 96 KB on a T4, up to 64 KB of it shared", "no T4 ran: the Turing tuning guide's figures"),
    Unshown(
        "GDDR on the T4, L4 and L40S — datacentre cards too — and on gaming cards (320 GB/s on a T4)",
        "no such card ran: the cards' data sheets",
    ),
    Unshown(
        "on paper 16 GB/s each way for a T4 on PCIe 3.0 ×16, 63 GB/s for an H100 or H200 SXM on PCIe 5.0 ×16",
        "the PCIe specification's rate (the measured 54 GB/s is a Claim of the table)",
    ),
    Unshown(
        "Its tensor cores reach 989 TFLOP/s in bfloat16 — fifteen times more.",
        DATA_SHEET + " (the measured 768 TFLOP/s is a Claim of the table)",
    ),
    Unshown("has 51 and 756 TFLOP/s and 2.0 TB/s of HBM2e", "no H100 PCIe ran: NVIDIA's H100 data sheet"),
    Unshown(
        "| float32 matrix multiply, TF32 allowed | 495 TFLOP/s",
        "the data-sheet column (989 with sparsity, halved); the measured column is a Claim",
    ),
    Unshown("RTX 4090's L2 holds 72 MiB and an L40S's 96 MiB", "no such card ran: Ada's data sheets"),
    Unshown("(on an H100 SXM, from 67 to 989 TFLOP/s on the data sheet)", DATA_SHEET),
    Unshown(
        "in bfloat16, an H100 SXM's and an A100 SXM's from stas00's ml-engineering",
        "published measurements, labelled as such in the figure",
    ),
    Unshown("(4 MiB on a T4, 40 MiB on an A100", "no T4 or A100 ran: their data sheets"),
    Unshown(
        "published copy bandwidths within an H100 PCIe's and a T4's memory",
        "published measurements (chsasank/device-benchmarks), labelled as such",
    ),
    Unshown(
        "the GPU notes the time when it reaches it, to about half a microsecond",
        "the CUDA runtime's documentation of cudaEventElapsedTime; no record measures the resolution",
    ),
    Unshown(
        "every launch then waits for its kernel, and the error surfaces at its own line",
        "PyTorch's notes, CUDA semantics, 'Asynchronous execution'; the H100 run raised no kernel error",
    ),
    Unshown(
        "An H100 SXM has a bfloat16 ridge point of about 295 FLOP/B", "the data sheet's 989 TFLOP/s over 3.35 TB/s"
    ),
    Unshown(
        "clear cases of each regime on an H100 SXM's data sheet (67 TFLOP/s float32, 3.35 TB/s)",
        DATA_SHEET,
        where=SOLUTIONS,
    ),
    Unshown("an A100 SXM 80 GB: 19.5 TFLOP/s, 2.039 TB/s", "no A100 ran: its data sheet", where=SOLUTIONS),
    # added: the parts of claimed sentences that are other GPUs' data sheets, and what no record times
    Unshown("64 warps — on an A100", "no A100 ran: compute capability 8.0's figure (the H100's 2,048 is the Claim)"),
    Unshown(
        "256 KB on an H100",
        "the data sheet's L1 and shared memory together; the probe reports only the 228 KiB "
        "that can be shared (the Claim)",
    ),
    Unshown("which takes hundreds of cycles", "NVIDIA's CUDA programming guide; no record measures memory latency"),
    Unshown(
        "HBM, stacked beside the chip, on the A100",
        "the A100's and H200's memory: their data sheets (the H100's HBM3 and 3.35 TB/s are the Claim)",
    ),
    Unshown(
        "twenty times slower than a T4's GDDR6, fifty to eighty times slower than HBM",
        "data sheets over the PCIe specification: 320/16, and 3,350 to 4,800 GB/s over 63",
    ),
    Unshown("the same chip with 114 SMs enabled and a lower clock", "no H100 PCIe ran: NVIDIA's H100 data sheet"),
    Unshown(
        "larger than the L2 cache of every GPU in the table above",
        "the T4's, A100's and H200's L2 are their data "
        "sheets'; the H100's 50 MiB (probe) is the Claim on the 64 MiB matrix",
    ),
    Unshown(
        "On a GPU whose L2 holds the float32 weights, such as an RTX 4090, the small batches can rise above the "
        "memory roof",
        "no RTX 4090 ran; the H100's points stay under its roof (a Claim)",
    ),
    Unshown(
        "or H200) stays there from one call to the next",
        "no H200 ran: its data sheet (the H100's L2 passing 3,350 GB/s is the Claim)",
    ),
    Unshown(
        "A kernel that fails — an index out of range in an embedding, say — is reported by a later call",
        "PyTorch's notes, CUDA semantics, 'Asynchronous execution'; the H100 run raised no kernel error",
    ),
    Unshown(
        "kernels are usually loaded lazily, at their first use",
        "CUDA's lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2); no record times first calls",
    ),
    Unshown(
        "unless torch.backends.cudnn.benchmark = True (off by default)",
        "PyTorch's documentation; the probe did not record cudnn.benchmark",
    ),
    Unshown(
        "on a GPU, whose clocks and caches change from run to run, a training loop rarely sees it",
        "the records keep each timing's median only, not its samples or minimum",
    ),
    Unshown(
        "for a string of small kernels, the event time is roughly the time to launch them",
        "CUDA's event semantics; no record times events around small kernels",
    ),
    Unshown(
        "asking earlier is an error",
        "CUDA's cudaEventElapsedTime (cudaErrorNotReady); the probe recorded only "
        "the error of events made without enable_timing",
    ),
    Unshown(
        "on paper 16 GB/s each way on a T4's PCIe 3.0 ×16, 63 GB/s on an H100 SXM's PCIe 5.0 ×16",
        "the PCIe specification's rates (the measured 54 GB/s is the Claim that follows)",
    ),
    Unshown(
        "3.8 µs of bytes on an H100 SXM",
        "12 MiB over the data sheet's 3.35 TB/s, a made-up case for the checks",
        where=SOLUTIONS,
    ),
    Unshown("H100 SXM: ridge 20 FLOP/B", "the data sheet's 67 TFLOP/s over 3.35 TB/s", where=SOLUTIONS),
    Unshown("A100 SXM 80 GB (40 GB: 1.555 TB/s): ridge 9.6", "no A100 ran: its data sheets", where=SOLUTIONS),
]
