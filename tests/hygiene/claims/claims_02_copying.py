"""Lesson 02's sentences about what a GPU does, and the H100 SXM records that show them
(see tests/hygiene/test_lessons_agree_with_records.py)."""

from gpulab.timing import apart

from claim_kinds import Claim, Unshown

MiB = 2**20
SOLUTIONS = "solutions/02_copying.ipynb"
CUDA_DOCS = "CUDA's documentation (API synchronization behavior); no record shows it"
MPS_SOURCE = (
    "no Mac record: PyTorch's source (aten/src/ATen/mps/MPSHooks.mm, native/Memory.cpp), issue #181374, PR #181720; "
    "the simulated Mac runs the installed torch's own code on it (tests/unit/simulated/test_mps.py)"
)
SOURCE = (
    "PyTorch's source (aten/src/ATen/native/cuda/Copy.cu, copy_kernel_cuda → c10::cuda::memcpy_and_sync), not a "
    "measurement: no record times a copy queued behind kernels"
)


def _bandwidth(records):
    return records.result("02_bandwidth")


def _at(result, name, nbytes):
    return result["gbps"][name][result["sizes"].index(nbytes)]


def _seconds(result, name, nbytes):
    """How long one copy of ``nbytes`` took, from its GB/s."""
    return nbytes / (_at(result, name, nbytes) * 1e9)


def _pinning_gain(result, nbytes):
    """A pageable host→device copy's time over pin_memory()'s and the pinned copy's together."""
    pin = result["pin_seconds"][result["sizes"].index(nbytes)]
    return _seconds(result, "host→device pageable", nbytes) / (pin + _seconds(result, "host→device pinned", nbytes))


def _h100_sxm(records, name):
    record = records.record(name)
    assert record["device"]["name"] == "NVIDIA H100 80GB HBM3" and record["device"]["type"] == "cuda", record["device"]
    assert record["result"]["device"].startswith("cuda"), "the panel ran on the host, not on the GPU"


def _pinned_54(records):
    _h100_sxm(records, "02_bandwidth")
    assert round(max(_bandwidth(records)["gbps"]["host→device pinned"])) == 54


def _pageable_peaks(records):
    result = _bandwidth(records)
    assert round(_at(result, "host→device pageable", 16 * MiB), 1) == 14.3
    assert round(_at(result, "host→device pageable", 64 * MiB), 1) == 9.4


def _best(records, name):
    return max(_clean(records, name)[1])


def _pinned_beats_pageable(records):
    assert round(_best(records, "host→device pinned")) == 54 and round(_best(records, "host→device pageable")) == 14
    assert round(_best(records, "host→device pinned") / _best(records, "host→device pageable"), 1) == 3.8
    assert round(_best(records, "device→host pinned") / _best(records, "device→host pageable"), 1) == 3.7


def _non_blocking_ahead_small(records):
    result = _bandwidth(records)
    for direction in ("host→device", "device→host"):
        smallest = result["sizes"][0]
        assert _at(result, f"{direction} pinned + non_blocking", smallest) > _at(
            result, f"{direction} pinned", smallest
        )


def _non_blocking_meets_large(records):
    result = _bandwidth(records)
    for direction in ("host→device", "device→host"):
        for nbytes in (16 * MiB, 64 * MiB):
            ratio = _at(result, f"{direction} pinned + non_blocking", nbytes) / _at(
                result, f"{direction} pinned", nbytes
            )
            assert 0.85 < ratio < 1.15, (direction, nbytes, ratio)


def _pinning_paid(records):
    result = _bandwidth(records)
    assert [round(_pinning_gain(result, n), 1) for n in (MiB, 4 * MiB, 16 * MiB)] == [2.0, 4.4, 2.2]
    pin_16 = result["pin_seconds"][result["sizes"].index(16 * MiB)]
    assert round((pin_16 + _seconds(result, "host→device pinned", 16 * MiB)) * 1e3, 1) == 0.5
    assert round(_seconds(result, "host→device pageable", 16 * MiB) * 1e3, 1) == 1.2
    assert all(_pinning_gain(result, n) < 1 for n in result["sizes"] if n < 64 * 2**10), "lost below 64 KiB"
    assert 0.95 < _pinning_gain(result, 64 * MiB) < 1.05, "tied at 64 MiB"
    assert round(result["pin_seconds"][result["sizes"].index(64 * MiB)] * 1e3, 1) == 5.9
    assert round(_seconds(result, "host→device pinned", 64 * MiB) * 1e3, 1) == 1.2


def _pinning_paid_short(records):
    result = _bandwidth(records)
    assert all(_pinning_gain(result, n) > 1.5 for n in (MiB, 4 * MiB, 16 * MiB))
    assert _pinning_gain(result, 64 * MiB) < 1.05
    assert all(_pinning_gain(result, n) < 1 for n in result["sizes"] if n < 64 * 2**10)


def _reference_curves(records):
    _h100_sxm(records, "02_bandwidth")
    result = _bandwidth(records)
    assert any(n.startswith("host→device") for n in result["gbps"]) and any(
        n.startswith("device→host") for n in result["gbps"]
    )
    assert "PCIe 5.0 ×16" in records.log("README.md")  # nvidia-smi -q on that machine: generation 5, width 16x


def _pinning_cost_recorded(records):
    result = _bandwidth(records)
    assert len(result["pin_seconds"]) == len(result["sizes"]) and "host→device pinned" in result["gbps"]


def _item_flat_logging_falls(records):
    _h100_sxm(records, "02_sync")
    per_step = records.result("02_sync")["seconds_per_step"]
    item, logged = per_step[".item() every step"], per_step["log on the device, sync once"]
    assert max(item) / min(item) < 1.1, "the .item() loop costs about the same per step"
    assert all(b <= a for a, b in zip(logged, logged[1:])), "logging on the device gets cheaper as the loop grows"


def _sync_figures(records):
    per_step = records.result("02_sync")["seconds_per_step"]
    item, logged = per_step[".item() every step"][-1], per_step["log on the device, sync once"][-1]
    assert (round(logged * 1e6), round(item * 1e6), round(item / logged, 2)) == (45, 57, 1.27)


def _block_of_512(records):
    # The probe asked the CUDA allocator for 1 byte and for 512: it handed out 512 each time.
    allocator = records.probe["allocator"]
    assert allocator["1"][0] == 512 and allocator["512"][0] == 512
    assert round(allocator["1"][0] * 1e6 / 1e9, 1) == 0.5  # a million of them: half a gigabyte


# ---------------------------------------------------------------- added


def _curves(result):
    return result["gbps"]


def _clean(records, name):
    """A curve's sizes and GB/s, less the points its record marks within noise (at 16 KiB: device→host pinned and
    both non_blocking curves)."""
    return records.clean("02_bandwidth", "gbps", name)


def _clean_curves(records):
    return {name: _clean(records, name) for name in _curves(_bandwidth(records))}


def _rise_with_size(records):
    _h100_sxm(records, "02_bandwidth")
    smallest = _bandwidth(records)["sizes"][0]
    curves = _clean_curves(records)
    best = max(max(values) for _, values in curves.values())
    for name, (sizes, values) in curves.items():
        assert sizes[0] == smallest and values[0] < 0.05 * max(values), name  # 4 KiB: all latency
        below = [g for n, g in zip(sizes, values) if n < MiB]
        assert max(below) < 0.75 * best, (name, below)  # near the link only from 1 MiB on
        assert sizes[values.index(max(values))] >= MiB, name


def _pinned_level_pageable_wander(records):
    for name, (sizes, values) in _clean_curves(records).items():
        if "pinned" in name:
            assert sizes[-2:] == [16 * MiB, 64 * MiB], (name, sizes)
            assert min(values[-2:]) > 0.85 * max(values) and max(values[-2:]) / min(values[-2:]) < 1.15, (name, values)
    pageable = _clean(records, "host→device pageable")[1]
    assert any(b < a for a, b in zip(pageable, pageable[1:])), pageable  # not monotone


def _latency_microseconds(records):
    result = _bandwidth(records)
    smallest = result["sizes"][0]
    for name, values in _curves(result).items():
        assert 1e-6 < smallest / (values[0] * 1e9) < 20e-6, name


def _about_80_percent(records):
    from gpulab.devices import HostLink

    paper = HostLink(generation=5, width=16).gbps
    assert "PCIe 5.0 ×16" in records.log("README.md")
    ratio = max(_curves(_bandwidth(records))["host→device pinned"]) / paper
    assert 0.75 < ratio < 0.9, ratio


def _pinned_at_link_rate(records):
    from gpulab.devices import HostLink

    curves = _clean_curves(records)
    pinned = max(curves["host→device pinned"][1])
    assert pinned >= max(max(v) for n, (_, v) in curves.items() if n.startswith("host→device")) * 0.99
    assert pinned > 0.85 * HostLink(generation=5, width=16).gbps and pinned > 3 * _best(records, "host→device pageable")


def _pin_memory_copies(records):
    assert records.probe["misc"]["pinned"][:2] == [False, True]  # an ordinary tensor, and pin_memory()'s
    pin = _bandwidth(records)["pin_seconds"]
    assert pin[-1] > 100 * pin[0]  # a copy: it costs by the byte


def _pinned_faster(records):
    for direction in ("host→device", "device→host"):
        pinned = dict(zip(*_clean(records, f"{direction} pinned")))
        pageable = dict(zip(*_clean(records, f"{direction} pageable")))
        assert max(pinned.values()) > 3 * max(pageable.values()), direction
        from_64_kib = [n for n in pinned if n >= 64 * 2**10 and n in pageable]
        assert len(from_64_kib) == 6, from_64_kib  # 64 KiB to 64 MiB, none within noise
        # faster by more than two unspread numbers may differ by (gpulab.timing.apart)
        assert all(pinned[n] > pageable[n] and apart(pinned[n], None, pageable[n], None) for n in from_64_kib), (
            direction
        )


def _non_blocking_same_link(records):
    _non_blocking_meets_large(records)
    for direction in ("host→device", "device→host"):
        ratio = _best(records, f"{direction} pinned + non_blocking") / _best(records, f"{direction} pinned")
        assert 0.95 < ratio < 1.05, (direction, ratio)


CLAIMS = [
    Claim("the course's H100 SXM measured 54 GB/s to the device", _pinned_54),
    Claim(
        "Beside it the figure draws, dashed, what a real link gave: an H100 SXM's copies over PCIe 5.0 ×16, "
        "in both directions.",
        _reference_curves,
    ),
    Claim(
        "The right-hand plot then compares what pin_memory() would cost here — one host memory copy — with that "
        "H100 SXM's pin_memory() and its copy from pinned memory.",
        _pinning_cost_recorded,
    ),
    Claim("an H100 SXM's pageable host→device copies reached 14.3 GB/s at 16 MiB and 9.4 at 64 MiB", _pageable_peaks),
    Claim("on an H100 SXM, 54 against 14 GB/s at best, 3.8× host→device and 3.7× device→host", _pinned_beats_pageable),
    Claim("At small sizes it can come out ahead in this experiment", _non_blocking_ahead_small),
    Claim("at large sizes the two curves meet", _non_blocking_meets_large),
    Claim(
        "On an H100 SXM, pin_memory() and the pinned copy together beat the pageable copy 2.0×, 4.4× and 2.2× at 1, "
        "4 and 16 MiB (16 MiB: 0.5 ms against 1.2 ms), lost a little below 64 KiB, and tied at 64 MiB, where pinning "
        "took 5.9 ms and the copy from pinned memory 1.2 ms.",
        _pinning_paid,
    ),
    Claim("on an H100 SXM it did at 1 to 16 MiB and did not at 64 MiB or below 64 KiB", _pinning_paid_short),
    Claim("On an H100 SXM it was repaid from 1 to 16 MiB, not at 64 MiB.", _pinning_paid_short),
    Claim(
        "on CUDA each 0-dimensional tensor takes a block of 512 bytes, half a gigabyte per million steps", _block_of_512
    ),
    Claim("On a GPU, the .item() loop costs the same per step however many steps run", _item_flat_logging_falls),
    Claim("Logging on the device gets cheaper per step as the loop grows", _item_flat_logging_falls),
    Claim("on an H100 SXM, 45 µs a step instead of 57 for this small step, 1.27×", _sync_figures),
    Claim(
        "Every curve rises with size: small copies are all latency (section 3), and only copies of a few MiB and "
        "more come near the link's bandwidth.",
        _rise_with_size,
    ),
    Claim("Pinned copies then level off; pageable ones may wander", _pinned_level_pageable_wander),
    Claim(
        "They show the shape every real transfer curve has: low while latency dominates, then bending up towards "
        "the link's rate.",
        _rise_with_size,
    ),
    Claim("is some microseconds however small the copy", _latency_microseconds),
    Claim("about 80% of it is achieved", _about_80_percent),
    Claim("returns a pinned copy of t — a copy, which costs", _pin_memory_copies),
    Claim("since the copy from pinned memory then runs at the link's full rate", _pinned_at_link_rate),
    Claim("Pinned host memory lets the copy engine read directly: faster transfers.", _pinned_faster),
    Claim("non_blocking=True frees the host, it does not speed the link up.", _non_blocking_same_link),
    Claim("Same bandwidth; the gain is overlap", _non_blocking_same_link),
]

UNSHOWN = [
    Unshown(
        "about 9–13 GB/s on PCIe 3.0 ×16 (16 GB/s on paper), the link of Colab's T4 — one T4's published "
        "bandwidthTest gave 9.7 GB/s to the device and 11.1 back",
        "a data sheet's link speed and a published T4 measurement (router-gao/cuda-demo); the course ran no T4",
    ),
    Unshown(
        "about 25 GB/s on PCIe 4.0 ×16 (32 on paper), an A100's",
        "a typical figure and the PCIe 4.0 data sheet; the course ran no A100",
    ),
    Unshown(
        "about 50 GB/s on PCIe 5.0 ×16 (63 on paper), an H100's or H200's",
        "a typical figure and the PCIe 5.0 data sheet; the H100 SXM's own 54 GB/s is the claim beside it",
    ),
    Unshown(
        "several hundred on the NVLink-C2C that joins a Grace CPU to its Hopper GPU",
        "NVIDIA's GH200 data sheet; the course ran no Grace Hopper",
    ),
    Unshown(
        "an H200 reads its HBM3e at up to 4.8 TB/s, a free T4 its GDDR6 at 320 GB/s",
        "data-sheet peaks of GPUs the course did not run",
    ),
    Unshown(
        "pageable and pinned copies of 16 MiB on an NVS 4200M over PCIe 2.0 ×16",
        "published measurements (NVIDIA's blog post), drawn as such",
    ),
    Unshown(
        "pinned copies of 32 MB on a T4 (CUDA's bandwidthTest, in router-gao/cuda-demo)",
        "a published measurement, drawn as such",
    ),
    Unshown(
        "a copy made without non_blocking is queued with cudaMemcpyAsync and followed by cudaStreamSynchronize",
        "PyTorch's source (aten/src/ATen/native/cuda/Copy.cu, copy_kernel_cuda → c10::cuda::memcpy_and_sync), "
        "not a measurement: no record times a copy queued behind kernels",
    ),
    Unshown(
        "The driver copies the data into pinned staging memory of its own before the call returns",
        "CUDA's documentation (API synchronization behavior); no record shows it",
    ),
    Unshown(
        "returns in microseconds and arrives milliseconds later; a blocking one returns when it arrives.",
        "this cell is not a panel: the H100 run kept no output of it (nbval-lessons.log holds timings only)",
    ),
    Unshown(
        "whatever the pinned memory held before (zeros here), not the product.",
        "this cell is not a panel: the H100 run kept no output of it",
    ),
    Unshown(
        "printing, boolean masking and a blocking copy to the GPU, and stays silent for v.sum(), torch.where",
        "this cell is not a panel: the H100 run kept no output of it",
    ),
    Unshown(
        "a non-blocking copy to the device from pageable memory has been reported to read its source after "
        "Python freed it (pytorch#139550, #189690)",
        "Apple's MPS, from PyTorch's issue tracker; no MPS record",
    ),
    # added
    Unshown(
        "(A T4's PCIe 3.0 link gives half the bandwidth, so it reaches half its own peak at half the size.)",
        "no T4 ran: the PCIe specification's rates",
    ),
    Unshown(
        "one copy of 1000 numbers costs about as much as one copy of a single number",
        "no record times a one-number copy: the smallest is 4 KiB, 1,024 numbers",
    ),
    Unshown(
        "the CUDA driver first copies the data, a chunk at a time, into a pinned staging buffer of its own",
        CUDA_DOCS + " (the record shows only that pageable copies are slower: a Claim)",
    ),
    Unshown("on Apple's MPS it turns pin_memory off", "torch/utils/data/dataloader.py; no MPS record"),
    Unshown(
        "it also asks the operating system to lock fresh pages, which is slower still",
        "the record times pin_memory() after a warm-up, from PyTorch's cached blocks; no first call is recorded",
    ),
    Unshown(
        "keeps freed pinned blocks (rounded up to a power of two, with no limit by default)",
        "PyTorch's source (CachingHostAllocator); the probe recorded the device allocator only",
    ),
    Unshown(
        "How big the gap is depends on the machine: it is the driver's copy through its staging buffer, and hosts "
        "with fast memory hide more of it.",
        "one host ran: no record compares machines",
    ),
    Unshown("pinned or pageable, a blocking .to() waits for every kernel queued before it", SOURCE),
    Unshown(
        "PyTorch allocates the result in pinned memory and returns before the data is there",
        "PyTorch's source (_to_copy); the probe recorded is_pinned() of a pinned tensor and of its copy on the GPU, "
        "not of a device→host result, and the H100 run kept no output of this lesson's cells",
    ),
    Unshown(
        "Apple's MPS implements these copies its own way: it does not pin a device→host result",
        "PyTorch's source (_to_copy); no MPS record",
    ),
    Unshown(
        "so the copy behind it has not run yet when the host reads",
        "this cell is not a panel: the H100 run kept no output of it",
    ),
    Unshown(
        "for a block this size that can take longer than the multiply",
        "no record times a first pin of fresh pages (the recorded pin_memory() is warm)",
    ),
    Unshown(
        "PyTorch synchronises the stream after it, so the host waits for it and for everything queued before it", SOURCE
    ),
    Unshown("the driver stages the data through pinned memory and may wait for the stream first", CUDA_DOCS),
    Unshown(
        "each step pays a launch, the kernels, a wait for the queue to drain and a copy back",
        "the 02_sync record holds each loop's time per step, not its parts",
    ),
    Unshown(
        "the GPU then trains on the wrong batch, and nothing says so",
        "no record runs the race: it follows from the stream ordering of section 6",
    ),
    Unshown(
        "and so does a blocking copy to the device, pinned or not; a non-blocking one from pageable memory may", SOURCE
    ),
    Unshown(
        "The OS may move pageable pages, so the driver stages them through its own pinned buffer: an extra copy.",
        CUDA_DOCS,
    ),
    Unshown("PyTorch follows a blocking copy with a stream synchronisation", SOURCE),
    Unshown(
        "torch.where's result has a fixed shape, so it can be queued; printing and boolean masks need the values.",
        "set_sync_debug_mode's verdicts: the H100 run kept no output of that cell",
    ),
    Unshown(
        "with a .item() every step — on a GPU, a wait every step",
        "PyTorch's CUDA semantics; 02_sync records the time per step, not the waits",
        where=SOLUTIONS,
    ),
    Unshown(
        "on a Mac before torch 2.14, MPS's pinned memory is refused",
        MPS_SOURCE,
    ),
    Unshown(
        'GPU memory as "pinned" memory: pin_memory() refuses it, torch.empty(..., pin_memory=True) returns a '
        "tensor on mps.",
        MPS_SOURCE,
    ),
    Unshown("MPS before torch 2.14 hands back an mps tensor, not pinned host memory", MPS_SOURCE),
    Unshown(
        "Before torch 2.14, what MPS hands out as pinned memory is GPU memory: t.pin_memory() raises, and from "
        "torch 2.7 torch.empty(..., pin_memory=True) returns a tensor on mps:0, not pinned host memory.",
        MPS_SOURCE,
    ),
]
