"""The GPUs a simulated machine can have, from their data sheets, and how a machine is named.

``GPULAB_SIMULATE=t4`` is one Tesla T4; ``4xh100`` a node of four H100s. Each GPU's properties are
what ``torch.cuda.get_device_properties`` reports on the real card (``torch/_C/__init__.pyi``,
``_CudaDeviceProperties``): the driver's name for it, compute capability, memory, SMs, L2, memory
clock and bus width, threads and shared memory per SM. Memory clock and bus width give the data
sheet's bandwidth as 2 × clock × width (DDR), which is how a reader's own card is reported too.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["GPUS", "MACS", "GPUSpec", "MacSpec", "parse"]

MiB = 2**20


@dataclasses.dataclass(frozen=True)
class GPUSpec:
    """One GPU model as ``torch.cuda.get_device_properties`` describes it, plus its source."""

    key: str  # what GPULAB_SIMULATE calls it
    name: str  # what the driver calls it
    major: int
    minor: int
    total_memory: int  # bytes the driver reports (a little under the marketed size)
    multi_processor_count: int
    L2_cache_size: int
    memory_clock_rate: int  # kHz
    memory_bus_width: int  # bits
    clock_rate: int  # kHz (boost)
    max_threads_per_multi_processor: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    regs_per_multiprocessor: int
    context_bytes: int  # what the CUDA context takes before PyTorch allocates anything
    link: str  # the host link, for readers and docs
    source: str

    device_type = "cuda"  # the device type its tensors are on (a MacSpec's is "mps")

    @property
    def memory_bandwidth(self) -> float:
        """Bytes per second, 2 × memory clock × bus width (double data rate)."""
        return 2 * self.memory_clock_rate * 1e3 * self.memory_bus_width / 8


GPUS: dict[str, GPUSpec] = {
    spec.key: spec
    for spec in (
        GPUSpec(
            "t4",
            "Tesla T4",
            7,
            5,
            15_102 * MiB,
            40,
            4 * MiB,
            5_001_000,
            256,
            1_590_000,
            1024,
            48 * 1024,
            64 * 1024,
            64 * 1024,
            65536,
            300 * MiB,
            "PCIe 3.0 x16",
            "NVIDIA T4 data sheet: 16 GB GDDR6, 320 GB/s, 40 SMs (Turing TU104), 4 MB L2; "
            "CUDA C Programming Guide, compute capability 7.5: 1024 threads and 64 KB shared memory per SM",
        ),
        GPUSpec(
            "a100",
            "NVIDIA A100-SXM4-80GB",
            8,
            0,
            81_050 * MiB,
            108,
            40 * MiB,
            1_593_000,
            5120,
            1_410_000,
            2048,
            48 * 1024,
            163 * 1024,
            164 * 1024,
            65536,
            500 * MiB,
            "PCIe 4.0 x16; NVLink 3 (600 GB/s)",
            "NVIDIA A100 data sheet (SXM4 80GB): 2,039 GB/s HBM2e, 108 SMs, 40 MB L2; "
            "CUDA C Programming Guide, compute capability 8.0: 2048 threads and 164 KB shared memory per SM",
        ),
        # total_memory and the context's bytes as an H100 SXM reported them (torch 2.11.0+cu130, driver 580.159;
        # tools/gpu-runner/records/2026-11-25-h100/probe.json)
        GPUSpec(
            "h100",
            "NVIDIA H100 80GB HBM3",
            9,
            0,
            81_079 * MiB,
            132,
            50 * MiB,
            2_619_000,
            5120,
            1_980_000,
            2048,
            48 * 1024,
            227 * 1024,
            228 * 1024,
            65536,
            552_402_944,
            "PCIe 5.0 x16; NVLink 4 (900 GB/s)",
            "NVIDIA H100 data sheet (SXM5 80GB): 3.35 TB/s HBM3, 132 SMs, 50 MB L2; "
            "CUDA C Programming Guide, compute capability 9.0: 2048 threads and 228 KB shared memory per SM",
        ),
        # Six HBM3e stacks of 1024 bits (the H100 SXM has five stacks active: 5120 bits); the memory clock is
        # the one that gives the data sheet's 4.8 TB/s over 6144 bits (a 5120-bit bus at 3.75 GHz gave the
        # right bandwidth with the wrong width).
        GPUSpec(
            "h200",
            "NVIDIA H200",
            9,
            0,
            143_071 * MiB,
            132,
            50 * MiB,
            3_125_000,
            6144,
            1_980_000,
            2048,
            48 * 1024,
            227 * 1024,
            228 * 1024,
            65536,
            500 * MiB,
            "PCIe 5.0 x16; NVLink 4 (900 GB/s)",
            "NVIDIA H200 data sheet (SXM 141GB): 4.8 TB/s HBM3e (six 1024-bit stacks), 132 SMs (Hopper GH100), "
            "50 MB L2; compute capability 9.0 as the H100",
        ),
    )
}


@dataclasses.dataclass(frozen=True)
class MacSpec:
    """An Apple silicon Mac as PyTorch's MPS backend sees it: one GPU sharing the host's (unified) memory."""

    key: str  # what GPULAB_SIMULATE calls it
    name: str  # what torch.backends.mps.get_name() says (the Metal device's name)
    gpu_cores: int  # torch.backends.mps.get_core_count()
    unified_memory: int  # bytes of the Mac's memory, CPU and GPU together
    recommended_max_memory: int  # Metal's recommendedMaxWorkingSetSize: torch.mps.recommended_max_memory()
    memory_bandwidth: float  # bytes per second (Apple's figure for the chip)
    source: str

    device_type = "mps"
    link = "unified memory (no host link: the CPU and the GPU share one memory)"


GiB = 2**30

MACS: dict[str, MacSpec] = {
    spec.key: spec
    for spec in (
        # recommendedMaxWorkingSetSize is about two thirds of a Mac's memory up to 32 GB or so, about three
        # quarters above; a 16 GB M1 reports 10.67 GiB (11,453,251,584 bytes) and a 128 GB M3 Max 96 GiB.
        MacSpec(
            "mps-m1",
            "Apple M1",
            8,
            16 * GiB,
            11_453_251_584,
            68.25e9,
            "Apple M1 (2020): 8-core GPU, 16 GB LPDDR4X-4266 unified memory on a 128-bit bus, 68.25 GB/s",
        ),
        MacSpec(
            "mps-m3-max",
            "Apple M3 Max",
            40,
            128 * GiB,
            96 * GiB,
            400e9,
            "Apple M3 Max (2023): 40-core GPU, 128 GB LPDDR5-6400 unified memory on a 512-bit bus, 400 GB/s",
        ),
    )
}
MACS["mps"] = MACS["mps-m1"]  # GPULAB_SIMULATE=mps: the most common Mac a self-learner has, and the tightest

_NAME = re.compile(r"^(?:(\d+)x)?([a-z0-9]+)$")


def parse(text: str) -> list[GPUSpec] | list[MacSpec]:
    """The GPUs of a machine named ``t4``, ``h100`` or ``4xh100`` (N of one model, N from 1 to 16), or the one
    GPU of a Mac named ``mps``, ``mps-m1`` or ``mps-m3-max``."""
    key = text.strip().lower()
    if key in MACS:
        return [MACS[key]]
    match = _NAME.match(key)
    if not match or match.group(2) not in GPUS:
        raise ValueError(
            f"GPULAB_SIMULATE={text!r}: name one of {', '.join(GPUS)}, or a node of N of them such as 4xh100, "
            f"or a Mac: {', '.join(MACS)}"
        )
    count = int(match.group(1) or 1)
    if not 1 <= count <= 16:
        raise ValueError(f"GPULAB_SIMULATE={text!r}: a node has 1 to 16 GPUs")
    return [GPUS[match.group(2)]] * count
