"""GPU figures shown beside the reader's own results, each labelled as what it is.

Three kinds, kept apart:

- data-sheet peaks (:data:`KNOWN_GPUS`, :data:`SPEC_PEAK_TFLOPS`, :data:`PCIE_X16_GBPS`): what a
  vendor promises, never a measurement;
- published measurements (:data:`PUBLISHED`, :func:`published`): numbers someone measured on a
  named GPU and published, each kept with its source, the GPU and its variant, its link and the
  software, and drawn as "published", never as this course's measurement; a panel's figure names
  those it draws where it is registered (:func:`gpulab.figures.panel`);
- results recorded with ``gpulab bench`` on a real GPU: a JSON file per panel in
  ``gpulab/reference_results/``, named after the panel (``02_bandwidth.json``, the name its figure
  was registered under), read by :func:`load` (an H100 SXM's, recorded with
  tools/gpu-runner; its log is in tools/gpu-runner/records/). Where none exists :func:`load` returns None
  and lessons say so. They never show numbers that were not measured.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any

from .tables import Table

__all__ = [
    "KNOWN_GPUS",
    "KnownGPU",
    "LAUNCH_MODEL_S",
    "LINK_MODEL",
    "NOT_RECORDED",
    "PCIE_X16_GBPS",
    "PUBLISHED",
    "Published",
    "REQUIRED",
    "SPEC_PEAK_TFLOPS",
    "UNITS",
    "cpu_label",
    "describe",
    "gpu_label",
    "host_cpu",
    "known_gpu",
    "known_gpus",
    "load",
    "names",
    "published",
    "validate",
]

NOT_RECORDED = "no GPU reference recorded yet"

# What every record holds; ``gpulab bench`` writes these and more.
REQUIRED = ("device", "torch", "recorded", "command", "result")


# ---------------------------------------------------------------- well-known figures
# Shown where nothing could be measured (a CPU-only machine, no reference recorded), always
# labelled as what they are: theoretical link rates, a model, or a vendor's spec sheet.

# Theoretical bandwidth of a ×16 link, per direction, in GB/s: 16 lanes × transfer rate
# (8, 16, 32 GT/s) × 128/130 line coding / 8 bits.
PCIE_X16_GBPS = {"PCIe 3.0 ×16": 15.75, "PCIe 4.0 ×16": 31.5, "PCIe 5.0 ×16": 63.0}

# The latency-plus-bandwidth model of one host↔device copy that lesson 02 teaches, with numbers
# typical of a PCIe 4.0 ×16 link in practice (about 80% of its 31.5 GB/s).
LINK_MODEL = {"name": "PCIe 4.0 ×16", "latency_s": 10e-6, "gbps": 25.0}

# The fixed cost of one small PyTorch operation on a GPU, for the model lesson 00 draws where no GPU
# was measured: Python, PyTorch's dispatch and the kernel launch together take microseconds.
LAUNCH_MODEL_S = 5e-6


@dataclasses.dataclass(frozen=True)
class KnownGPU:
    """A GPU's figures from NVIDIA's data sheets (SXM versions; dense math, no sparsity)."""

    name: str
    multiprocessors: int
    memory: str
    memory_gbps: float  # peak memory bandwidth, GB/s
    float32_tflops: float  # FP32 on the CUDA cores (no TF32, which PyTorch leaves off for matmul)
    tensor_tflops: float  # 16-bit matrix multiply on the tensor cores
    tensor_dtypes: tuple  # the 16-bit types they run: float16 only on the T4, bfloat16 too from Ampere on
    link: str  # to the host
    driver_names: tuple = ()  # what torch.cuda.get_device_name says of this variant, without "NVIDIA "

    @property
    def memory_bytes(self) -> float:
        """The memory the data sheet gives, in bytes (its "80 GB" is 80e9)."""
        return float(self.memory.split()[0]) * 1e9

    def ridge(self, dtype: str = "float32") -> float:
        """FLOP per byte at which the GPU stops being memory-bound: peak FLOP/s ÷ peak bytes/s."""
        if dtype != "float32" and dtype not in self.tensor_dtypes:
            raise ValueError(f"the {self.name} has no tensor cores for {dtype}")
        tflops = self.float32_tflops if dtype == "float32" else self.tensor_tflops
        return tflops * 1e12 / (self.memory_gbps * 1e9)


# The driver's names are those of these exact variants; older drivers left out "NVIDIA ".
KNOWN_GPUS = (
    KnownGPU("T4", 40, "16 GB GDDR6", 320, 8.1, 65, ("float16",), "PCIe 3.0 ×16", ("Tesla T4",)),
    KnownGPU(
        "A100 SXM",
        108,
        "80 GB HBM2e",
        2039,
        19.5,
        312,
        ("bfloat16", "float16"),
        "PCIe 4.0 ×16",
        ("A100-SXM4-80GB", "A100-SXM-80GB"),
    ),
    KnownGPU(
        "H100 SXM", 132, "80 GB HBM3", 3350, 67, 989, ("bfloat16", "float16"), "PCIe 5.0 ×16", ("H100 80GB HBM3",)
    ),
    KnownGPU("H200 SXM", 132, "141 GB HBM3e", 4800, 67, 989, ("bfloat16", "float16"), "PCIe 5.0 ×16", ("H200",)),
)


def known_gpu(name: str, *, memory_bytes: float | None = None, multiprocessors: int | None = None) -> KnownGPU | None:
    """The data sheet of the GPU the driver calls ``name``, or None unless it is exactly one of :data:`KNOWN_GPUS`.

    Other variants of the same chip have other figures — an A100 PCIe or 40 GB, an H100 PCIe or NVL,
    a GH200 — so a name must match in full (a "T400" is no T4), and where they are given, the memory
    (what ``total_memory`` reports, within 10% of the data sheet's) and the SM count must agree too.
    None means: show no data sheet, rather than another GPU's.
    """
    name = name.strip().removesuffix(" (simulated)").strip()
    name = name[len("NVIDIA ") :] if name.upper().startswith("NVIDIA ") else name
    for gpu in KNOWN_GPUS:
        if name.casefold() not in (known.casefold() for known in gpu.driver_names):
            continue
        if multiprocessors is not None and multiprocessors != gpu.multiprocessors:
            return None
        if memory_bytes is not None and abs(memory_bytes / gpu.memory_bytes - 1) > 0.1:
            return None
        return gpu
    return None


def _spec_peaks(dtype: str) -> dict[str, float]:
    # A GPU whose peak equals one listed before it (the H200 computes as fast as the H100) is named once.
    peaks: dict[str, float] = {}
    for gpu in KNOWN_GPUS:
        if dtype == "float32":
            value = gpu.float32_tflops
        elif dtype in gpu.tensor_dtypes:
            value = gpu.tensor_tflops
        else:
            continue
        if value not in peaks.values():
            peaks[gpu.name] = value
    return peaks


# Peak dense matrix-multiply TFLOP/s by dtype, from the data sheets above.
SPEC_PEAK_TFLOPS = {dtype: _spec_peaks(dtype) for dtype in ("float32", "bfloat16", "float16")}


def known_gpus() -> Table:
    """The data-sheet figures of well-known GPUs as a table, with each one's ridge points."""
    return Table(
        {
            "GPU": gpu.name,
            "SMs": gpu.multiprocessors,
            "memory": gpu.memory,
            "bandwidth": f"{gpu.memory_gbps:,.0f} GB/s",
            "FP32": f"{gpu.float32_tflops:g} TFLOP/s",
            "16-bit tensor cores": f"{gpu.tensor_tflops:g} TFLOP/s ({', '.join(gpu.tensor_dtypes)})",
            "ridge FP32": f"{gpu.ridge('float32'):.0f} FLOP/B",
            "ridge 16-bit": f"{gpu.ridge(gpu.tensor_dtypes[0]):.0f} FLOP/B",
            "link to host": gpu.link,
        }
        for gpu in KNOWN_GPUS
    )


# ---------------------------------------------------------------- published measurements
# Numbers someone measured on a named GPU and published, each with where it was read. Drawn beside
# the reader's results as "published", never as this course's measurement. Each entry's quote is
# the row or line of its source that holds the number.

# Units a published figure may come in: the quantity each measures, and its scale.
UNITS = {"TFLOP/s": ("FLOP/s", 1e12), "GFLOP/s": ("FLOP/s", 1e9), "TB/s": ("B/s", 1e12), "GB/s": ("B/s", 1e9)}


@dataclasses.dataclass(frozen=True)
class Published:
    """A measurement of a real GPU that someone published, and where it was read."""

    key: str  # unique, for drawing and testing
    value: float  # as published
    unit: str  # as published, one of UNITS
    caption: str  # what was measured, in a few words for a legend
    measured: str  # what exactly was measured, and how
    gpu: str  # the GPU and its variant: "H100 SXM 80GB", "T4 PCIe 16GB"
    link: str  # to the host or between GPUs, and whether the source states it
    software: str  # as published, or "not stated"
    source: str  # the publication, or repository and path at a commit
    url: str
    quote: str  # the row or sentence the value was read in
    short: str  # the source in a few words, for a legend
    dtype: str | None = None  # for matrix multiplies: "float32", "tf32", "bfloat16", "float16"
    direction: str | None = None  # for host↔device copies: "host→device" or "device→host"
    memory: str | None = None  # for host↔device copies: "pinned" or "pageable" host memory
    nbytes: int | None = None  # the one size it was measured at, in bytes, where a figure's x axis is bytes:
    # drawn as a marker there, not as a line across every size

    def value_in(self, unit: str) -> float:
        """The value in ``unit`` (GFLOP/s for a TFLOP/s figure, say); ValueError for another quantity."""
        quantity, scale = UNITS[self.unit]
        wanted, wanted_scale = UNITS[unit]
        if wanted != quantity:
            raise ValueError(f"{self.key} is in {self.unit}, which is no {wanted}")
        return self.value * scale / wanted_scale

    def label(self, unit: str | None = None) -> str:
        """The legend's words, with the value in ``unit`` (the axis's; the published unit by default):
        "published: H100 SXM 80GB, bfloat16 n×n matmul, 797.5 TFLOP/s (zzc0721/torch-performance-test-data#79)"."""
        unit = unit or self.unit
        value = self.value_in(unit)
        shown = f"{value:,.0f}" if value >= 1000 else f"{value:.4g}"
        return f"published: {self.gpu}, {self.caption}, {shown} {unit} ({self.short})"


_ZZC = dict(
    gpu="H100 SXM 80GB",
    short="zzc0721/torch-performance-test-data#79",
    link="SXM5 module: PCIe 5.0 ×16 to the host, NVLink 4 (the data sheet's; the issue names neither; "
    "the driver name it reports, NVIDIA H100 80GB HBM3, is the SXM5 module's)",
    software='PyTorch 2.7.0+cu128, Python 3.11 ("Python 3.11 + PyTorch2.7.0+cu128"); driver not stated',
    source='GitHub issue zzc0721/torch-performance-test-data#79, "新增性能数据：NVIDIA H100 80GB HBM3" '
    "(HaxxorCialtion, 2025-10-18)",
    url="https://github.com/zzc0721/torch-performance-test-data/issues/79",
)
_ZZC_HOW = (
    "n×n torch.mm timed by wall clock over 30 calls after 6 warm-up calls (as the repository's README gives them), "
    "n = 1024, 2048, 4096, 8192, 10240; the best n"
)

_MAMF = dict(
    short="stas00/ml-engineering",
    unit="TFLOP/s",
    dtype="bfloat16",
    source='stas00/ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison '
    'table" (BF16), at commit b9e29720eebd4aa946fa9678975385efbc90a777',
    url="https://github.com/stas00/ml-engineering/blob/b9e29720eebd4aa946fa9678975385efbc90a777/"
    "compute/accelerator/README.md#maximum-achievable-matmul-flops-comparison-table",
)

_COPY = dict(
    short="chsasank/device-benchmarks",
    unit="GB/s",
    caption="device memory copy",
    measured="a.copy_(b) of float32 tensors of 2^20 to 2^26.5 elements (4 MB to 380 MB) in PyTorch, counted as "
    "bytes read plus bytes written (2 × bytes copied) per second (benchmark.py, as read at commit 89a1dae); "
    "the README's summary figure",
    software="PyTorch, version not stated",
    source='chsasank/device-benchmarks, README.md, "Matrix Multiplication FLOPS and BW" table, at commit '
    "06f4d7e25fda0cf2b097f0567f71a4ad0df7cde6",
    url="https://github.com/chsasank/device-benchmarks/blob/06f4d7e25fda0cf2b097f0567f71a4ad0df7cde6/README.md",
)

_ALLREDUCE = dict(
    gpu="H200 SXM 141GB ×8",
    short="stas00/ml-engineering",
    unit="GB/s",
    link="NVLink 4 through NVSwitch, all pairs NV18 (as the source states)",
    software="torch 2.9.1+cu130, CUDA 13.0, NCCL 2.27.7",
    source="stas00/ml-engineering, network/benchmarks/results/all-reduce-8xH200.md (all_reduce_bench.py), at commit "
    "c53741b8b7dcc17b152757f104398c6dd6f231b3",
    url="https://github.com/stas00/ml-engineering/blob/c53741b8b7dcc17b152757f104398c6dd6f231b3/"
    "network/benchmarks/results/all-reduce-8xH200.md",
)

_BLOG = dict(
    gpu="NVS 4200M notebook",
    short="NVIDIA blog",
    unit="GB/s",
    link='PCIe 2.0 ×16 ("PCI-e Gen2 x16", as the post states), host CPU Intel Core i7-2620M',
    software="the post's bandwidthtest.cu; CUDA version not stated",
    source='"How to Optimize Data Transfers in CUDA C/C++", NVIDIA Technical Blog (CUDA C/C++ series)',
    url="https://developer.nvidia.com/blog/how-optimize-data-transfers-cuda-cc/",
)

_BANDWIDTHTEST = dict(
    gpu="T4 PCIe 16GB",
    short="router-gao/cuda-demo",
    unit="GB/s",
    memory="pinned",
    link="PCIe 3.0 ×16 card (the T4's data sheet; the output does not state the host's link)",
    software="CUDA samples bandwidthTest, quick mode; CUDA version not stated",
    source="router-gao/cuda-demo, cuda-samples/02-cuda-bandwidth.md (bandwidthTest output), at commit "
    "8e2367b498052bd7810c4d1b72f03300c732f9a1",
    url="https://github.com/router-gao/cuda-demo/blob/8e2367b498052bd7810c4d1b72f03300c732f9a1/"
    "cuda-samples/02-cuda-bandwidth.md",
)

PUBLISHED = (
    # Matrix multiply by dtype: one H100 SXM, one run of square n×n multiplies, as the lessons time them.
    Published(
        "zzc-h100-sxm-float32",
        51.88,
        "TFLOP/s",
        "float32 n×n matmul",
        "float32 ('FP32', listed apart from 'TF32') " + _ZZC_HOW + ": 4096",
        quote="FP32: … 4096x4096: 51.88 TFLOPS",
        dtype="float32",
        **_ZZC,
    ),
    Published(
        "zzc-h100-sxm-tf32",
        402.15,
        "TFLOP/s",
        "TF32 n×n matmul",
        "float32 inputs with TF32 ('TF32') " + _ZZC_HOW + ": 4096",
        quote="TF32: … 4096x4096: 402.15 TFLOPS",
        dtype="tf32",
        **_ZZC,
    ),
    Published(
        "zzc-h100-sxm-float16",
        760.04,
        "TFLOP/s",
        "float16 n×n matmul",
        "float16 ('FP16') " + _ZZC_HOW + ": 4096",
        quote="FP16: … 4096x4096: 760.04 TFLOPS",
        dtype="float16",
        **_ZZC,
    ),
    Published(
        "zzc-h100-sxm-bfloat16",
        797.51,
        "TFLOP/s",
        "bfloat16 n×n matmul",
        "bfloat16 ('BF16') " + _ZZC_HOW + ": 8192",
        quote="BF16: … 8192x8192: 797.51 TFLOPS",
        dtype="bfloat16",
        **_ZZC,
    ),
    # The most a matmul of any shape reached: the flat part of a measured roof.
    Published(
        "mamf-h100-sxm-bfloat16",
        794.5,
        caption="bfloat16 matmul, best shape found",
        measured="bfloat16 torch matmul, the best shape mamf-finder.py found (M×N×K = 2048×2048×13312), "
        "mean of 100 iterations after 50 warm-up iterations",
        gpu="H100 SXM",
        link="SXM5 module: PCIe 5.0 ×16 to the host, NVLink 4 (the data sheet's; the table "
        "names neither, nor the memory size)",
        software="torch 2.7.0+cu126",
        quote="| NVIDIA H100 SXM  |  794.5 |    989 |      80.3% |   2048x2048x13312 | 2.7.0+cu126     |",
        **_MAMF,
    ),
    Published(
        "mamf-a100-sxm-bfloat16",
        271.2,
        caption="bfloat16 matmul, best shape found",
        measured="bfloat16 torch matmul, the best shape mamf-finder.py found (M×N×K = 1024×10240×5120), "
        "mean of 100 iterations after 50 warm-up iterations",
        gpu="A100 SXM",
        link="SXM4 module: PCIe 4.0 ×16 to the host, NVLink 3 (the data sheet's; the table "
        "names neither, nor the memory size)",
        software="torch 2.6.0+cu126",
        quote="| NVIDIA A100 SXM  |  271.2 |    312 |      86.9% |   1024x10240x5120 | 2.6.0+cu126     |",
        **_MAMF,
    ),
    # Copies within device memory, bytes read plus written.
    Published(
        "copy-h100-pcie",
        1630,
        gpu="H100 PCIe 80GB",
        link="PCIe 5.0 ×16 card (the data sheet's; the table does not state it)",
        quote="| Nvidia H100-PCIe 80GB | GPU | 38 | 435 | 449 | NA  | 1630 |",
        **_COPY,
    ),
    Published(
        "copy-t4-pcie",
        240,
        gpu="T4 PCIe 16GB",
        link="PCIe 3.0 ×16 card (the data sheet's; the table does not state it)",
        quote="| Nvidia T4 | GPU | 4 |  | 2.25 | NA | 240 |",
        **_COPY,
    ),
    # All-reduce bus bandwidth over NVLink, two message sizes.
    Published(
        "allreduce-8xh200-16mib",
        219.89,
        caption="all_reduce bus bandwidth, 16 MiB messages",
        measured="all_reduce bus bandwidth, S/t · 2(n − 1)/n with n = 8 GPUs in one node, 16 MiB float32 "
        "messages, mean of 20 trials after 5 warm-ups; NCCL chose NVLS from 2 MiB up",
        quote="|   16MiB | 219.89GBps | 125.65GBps |",
        **_ALLREDUCE,
    ),
    Published(
        "allreduce-8xh200-16gib",
        482.26,
        caption="all_reduce bus bandwidth, 16 GiB messages",
        measured="all_reduce bus bandwidth, S/t · 2(n − 1)/n with n = 8 GPUs in one node, 16 GiB float32 "
        "messages, mean of 20 trials after 5 warm-ups; NCCL's NVLS reduces inside the NVSwitch, "
        "so the figure passes NVLink 4's 450 GB/s",
        quote="|   16GiB | 482.26GBps | 275.58GBps |",
        **_ALLREDUCE,
    ),
    # Host↔device copies: pageable against pinned on one machine, and pinned on a T4.
    Published(
        "blog-nvs4200m-h2d-pageable",
        2.308439,
        caption="pageable host→device, 16 MB",
        measured="a 16 MB copy from pageable host memory to the device",
        quote="Pageable transfers / Host to Device bandwidth (GB/s): 2.308439",
        nbytes=2**24,
        direction="host→device",
        memory="pageable",
        **_BLOG,
    ),
    Published(
        "blog-nvs4200m-h2d-pinned",
        5.774224,
        caption="pinned host→device, 16 MB",
        measured="a 16 MB copy from pinned host memory to the device",
        quote="Pinned transfers / Host to Device bandwidth (GB/s): 5.774224",
        nbytes=2**24,
        direction="host→device",
        memory="pinned",
        **_BLOG,
    ),
    Published(
        "blog-nvs4200m-d2h-pageable",
        2.316220,
        caption="pageable device→host, 16 MB",
        measured="a 16 MB copy from the device to pageable host memory",
        quote="Pageable transfers / Device to Host bandwidth (GB/s): 2.316220",
        nbytes=2**24,
        direction="device→host",
        memory="pageable",
        **_BLOG,
    ),
    Published(
        "blog-nvs4200m-d2h-pinned",
        5.958834,
        caption="pinned device→host, 16 MB",
        measured="a 16 MB copy from the device to pinned host memory",
        quote="Pinned transfers / Device to Host bandwidth (GB/s): 5.958834",
        nbytes=2**24,
        direction="device→host",
        memory="pinned",
        **_BLOG,
    ),
    Published(
        "bandwidthtest-t4-h2d-pinned",
        9.7,
        caption="pinned host→device, 32 MB",
        measured="CUDA samples bandwidthTest: copies of 32,000,000 bytes from pinned host memory to the device",
        quote="Host to Device Bandwidth … PINNED Memory Transfers … 32000000  9.7",
        nbytes=32_000_000,
        direction="host→device",
        **_BANDWIDTHTEST,
    ),
    Published(
        "bandwidthtest-t4-d2h-pinned",
        11.1,
        caption="pinned device→host, 32 MB",
        measured="CUDA samples bandwidthTest: copies of 32,000,000 bytes from the device to pinned host memory",
        quote="Device to Host Bandwidth … PINNED Memory Transfers … 32000000  11.1",
        nbytes=32_000_000,
        direction="device→host",
        **_BANDWIDTHTEST,
    ),
)


def published(keys: Iterable[str], *, dtype: str | None = None, direction: str | None = None) -> tuple[Published, ...]:
    """The published measurements whose keys are in ``keys``, in :data:`PUBLISHED`'s order; with ``dtype`` (a
    matrix multiply's) or ``direction`` (a host↔device copy's), only those of that dtype or direction.

    A panel's figure names the keys it draws where it is registered (:func:`gpulab.figures.panel`).
    ValueError for a key no published measurement has.
    """
    keys = set(keys)
    unknown = keys - {entry.key for entry in PUBLISHED}
    if unknown:
        raise ValueError(f"no published measurement has the key {', '.join(map(repr, sorted(unknown)))}")
    return tuple(
        entry
        for entry in PUBLISHED
        if entry.key in keys
        and (dtype is None or entry.dtype == dtype)
        and (direction is None or entry.direction == direction)
    )


def _folder():
    return resources.files("gpulab").joinpath("reference_results")


def names() -> list[str]:
    """The panels that have a recorded reference."""
    return sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".json"))


def load(name: str | Callable) -> dict[str, Any] | None:
    """The recorded reference for the panel ``name``, or None when none is recorded. ``name`` may be the
    panel's figure (``gpulab.figures.bandwidth``), whose registered name is then read.

    The record holds ``device`` (the GPU's description), ``torch`` (its version),
    ``recorded`` (a date), ``command`` (what measured it) and ``result``.
    """
    name = _panel_name(name)
    path = _folder().joinpath(f"{name}.json")
    if not path.is_file():
        return None
    return validate(json.loads(path.read_text(encoding="utf-8")), name)


def _panel_name(name: str | Callable) -> str:
    if isinstance(name, str):
        return name
    registered = getattr(name, "panel_name", None)
    if registered is None:
        raise TypeError(f"{name!r} is neither a panel's name nor a figure registered with gpulab.figures.panel")
    return registered


def validate(record: Any, name: str) -> dict[str, Any]:
    """``record`` itself if it is a well-formed reference record; ValueError saying what is wrong otherwise."""
    if not isinstance(record, dict):
        raise ValueError(f"reference {name!r} is not a JSON object")
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise ValueError(f"reference {name!r} lacks {missing}")
    if not isinstance(record["device"], dict) or "name" not in record["device"]:
        raise ValueError(f"reference {name!r}: 'device' must describe the device, with its name")
    return record


def gpu_label(record: dict[str, Any], *, link: bool = False) -> str:
    """What a figure calls the GPU of ``record``: its variant where it is a known one ("H100 SXM"), with
    its host link if asked ("H100 SXM, PCIe 5.0 ×16"); otherwise the name its driver gave."""
    gpu = _known_gpu_of(record)
    if gpu is None:
        return record["device"].get("name", "reference GPU")
    return f"{gpu.name}, {gpu.link}" if link else gpu.name


def _known_gpu_of(record: dict[str, Any]) -> KnownGPU | None:
    device = record["device"]
    return known_gpu(
        device.get("name", ""),
        memory_bytes=device.get("total_memory_bytes"),
        multiprocessors=device.get("multiprocessors"),
    )


def host_cpu(record: dict[str, Any]) -> dict[str, Any]:
    """The CPU of the machine a record was made on, as the record lists it ({} if it lists none)."""
    return next((d for d in record.get("devices", []) if d.get("type") == "cpu"), {})


def cpu_label(record: dict[str, Any]) -> str:
    """The reference machine's CPU, as a record describes it: "AMD EPYC 9654, 16 cores"."""
    cpu = host_cpu(record)
    if not cpu:
        return "the reference machine's CPU"
    cores = f", {cpu['cores']} cores" if cpu.get("cores") else ""
    return f"{cpu.get('name', 'CPU')}{cores}"


def describe(name: str | Callable) -> str:
    """One line saying where the reference for the panel ``name`` (or its figure) comes from, or that there is none."""
    record = load(name)
    if record is None:
        return NOT_RECORDED
    device = record["device"].get("name", "a GPU")
    gpu = _known_gpu_of(record)
    variant = f" ({gpu.name}, {gpu.link} to the host)" if gpu is not None else ""
    result, host = record["result"], ""
    if isinstance(result, dict) and result.get("backend") and result.get("device") == "cpu":
        # Processes on the host (lesson 06's gloo): the record is the host's, not the GPU's.
        host = f"{result['backend']} between processes on the host ({cpu_label(record)}) of a machine with "
    return f"reference: {host}{device}{variant}, torch {record['torch']}, recorded {record['recorded']}"


# ---------------------------------------------------------------- noise

# Where a record's series measure the same job at growing sizes, the time a job takes can only grow
# with its work: a point that took clearly longer than a bigger job of the same series was slowed by
# something else (a first allocation for a new size, a clock change, another process). For each panel:
# (the result's series, its x, how a value gives a time — "time": it is one; "rate": work per second,
# the work growing as x ** power; "per": a time per unit of x —, power).
WORK_AXES: dict[str, tuple[tuple[str, str, str, int], ...]] = {
    "00_overhead": (("seconds", "sizes", "time", 1),),
    "00_roofline": (("gflops", "batches", "rate", 1),),
    "01_matmul": (("seconds", "sizes", "time", 1),),
    "02_bandwidth": (("gbps", "sizes", "rate", 1),),
    "02_sync": (("seconds_per_step", "steps", "per", 1),),
    "03_placement": (("ms_per_step", "batches", "time", 1),),
    "03_throughput": (("samples_per_s", "batches", "rate", 1),),
    "05_matmul": (("tflops", "sizes", "rate", 3),),
    "06_allreduce": (("seconds", "sizes", "time", 1),),
    "09_fusion": (("seconds", "sizes", "time", 1), ("gbps", "sizes", "rate", 1)),
}
# A job may take this fraction longer than a bigger one before the rule calls it noise.
NOISE_TOLERANCE = 0.25
NOISE_RULE = (
    "a point is within noise when the interquartile range of its repeats is over 10% of its median, or, where "
    "the series times one job at growing sizes, when it took over 1.25× the time of a bigger job of the same "
    "series (noise only ever adds time)"
)


# The x of a record's series where no work axis names it: what its panel swept.
X_KEYS = ("sizes", "batches", "steps", "stage", "processes", "every", "parameters", "threads")


def x_key(record: dict[str, Any], y: str) -> str | None:
    """The key of ``record["result"]`` whose values are the x of the series ``y`` (None if it has none)."""
    result = record["result"]
    for key, x, _, _ in WORK_AXES.get(record.get("name", ""), ()):
        if key == y:
            return x
    series = result.get(y)
    if isinstance(series, list):
        length = len(series)
    else:
        length = next((len(v) for v in (series or {}).values() if isinstance(v, list)), None)
    return next((k for k in X_KEYS if isinstance(result.get(k), list) and len(result[k]) == length), None)


def _time_of(kind: str, power: int, x: float, value: float | None) -> float | None:
    if value is None or value <= 0:
        return None
    return {"time": value, "rate": x**power / value, "per": value * x}[kind]


def noisy_points(record: dict[str, Any]) -> dict[str, Any]:
    """The points of ``record`` that :data:`NOISE_RULE` finds within noise: ``{series key: {name: [x, ...]}}``;
    where ``result[key]`` is itself one series (a list), ``{series key: [x, ...]}``; a value kept by name
    (one time per step, not a series) within noise is listed as ``[None]``.

    Read from the numbers and spreads the record holds; the record's own ``"noisy"`` field (see
    :func:`noise_mark`) is not consulted.
    """
    from . import timing

    result = record["result"]
    found: dict[str, Any] = {}
    axes = {y: (x, kind, power) for y, x, kind, power in WORK_AXES.get(record.get("name", ""), ())}
    measured = set(axes) | set(result.get("spread") or {})
    for y in sorted(measured):
        if isinstance(result.get(y), list):
            series = {None: result[y]}
        elif isinstance(result.get(y), dict):
            series = result[y]
        else:
            continue
        key = x_key(record, y)
        xs = result.get(key) if key else None
        for name, values in series.items():
            if isinstance(values, (int, float)):
                if timing.is_wide(values, timing.spread_of(result, y, name)):
                    found.setdefault(y, {})[name] = [None]
                continue
            if not isinstance(values, list) or xs is None or len(xs) != len(values):
                continue
            times = [_time_of(axes[y][1], axes[y][2], x, v) for x, v in zip(xs, values)] if y in axes else None
            bad = []
            for i, (x, value) in enumerate(zip(xs, values)):
                if value is None:
                    continue
                if timing.is_wide(value, timing.spread_of(result, y, name, i)):
                    bad.append(x)
                elif times is not None and times[i] is not None:
                    later = [t for t in times[i + 1 :] if t is not None]
                    if later and times[i] > (1 + NOISE_TOLERANCE) * min(later):
                        bad.append(x)
            if bad:
                if name is None:
                    found[y] = bad
                else:
                    found.setdefault(y, {})[name] = bad
    return found


def noise_mark(record: dict[str, Any]) -> dict[str, Any] | None:
    """The ``"noisy"`` field a record carries: the rule and the points it finds; None where the record has
    no series the rule applies to (memory counts, losses, a series over versions)."""
    result = record["result"]
    if record.get("name") not in WORK_AXES and not result.get("spread"):
        return None
    return {"rule": NOISE_RULE, "points": noisy_points(record)}


def noisy_indices(record: dict[str, Any] | None, y: str, name: str | None) -> set[int]:
    """The positions in series ``name`` of ``record["result"][y]`` of its points within noise (see :func:`noisy`),
    for a figure that draws the series against another x than the one the marks name."""
    if record is None:
        return set()
    marked, key = noisy(record, y, name), x_key(record, y)
    xs = record["result"].get(key) or [] if key else []
    return {index for index, x in enumerate(xs) if x in marked}


def noisy(record: dict[str, Any] | None, y: str, name: str | None) -> set:
    """The x values of series ``name`` of ``record["result"][y]`` that are within noise: as the record marks
    them, or as :func:`noisy_points` finds them in a record not marked. ``name`` is None where
    ``result[y]`` is itself one series; a value kept by name, within noise, gives ``{None}``."""
    if record is None:
        return set()
    mark = record.get("noisy")
    points = mark["points"] if isinstance(mark, dict) and "points" in mark else noisy_points(record)
    marked = points.get(y) or {}
    if isinstance(marked, list):  # result[y] is one series
        return set(marked) if name is None else set()
    return set(marked.get(name) or ()) if name is not None else set()


def mark_noise_in(path) -> dict[str, Any] | None:
    """Add (or renew) the ``"noisy"`` field of the record at ``path`` from :func:`noise_mark`, leaving every
    number as it is; return the mark. Records made before the rule get their marks this way."""
    from pathlib import Path

    path = Path(path)
    record = validate(json.loads(path.read_text(encoding="utf-8")), path.stem)
    mark = noise_mark(record)
    record.pop("noisy", None)
    if mark is not None:
        record["noisy"] = mark
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return mark
