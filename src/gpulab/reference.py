"""Results recorded on real GPUs, shipped with the package.

Each experiment that a reader's hardware may not be able to run has a JSON file in
``gpulab/reference_results/`` named after it, written by ``gpulab bench`` on a GPU machine.
Where none has been recorded, :func:`load` returns None and lessons say so; they never
show numbers that were not measured.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from typing import Any

from .tables import Table

__all__ = ["KNOWN_GPUS", "KnownGPU", "LAUNCH_MODEL_S", "LINK_MODEL", "NOT_RECORDED", "PCIE_X16_GBPS", "REQUIRED",
           "SPEC_PEAK_TFLOPS", "describe", "known_gpu", "known_gpus", "load", "names", "validate"]

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
    memory_gbps: float          # peak memory bandwidth, GB/s
    float32_tflops: float       # FP32 on the CUDA cores (no TF32, which PyTorch leaves off for matmul)
    tensor_tflops: float        # 16-bit matrix multiply on the tensor cores
    tensor_dtypes: tuple        # the 16-bit types they run: float16 only on the T4, bfloat16 too from Ampere on
    link: str                   # to the host
    driver_names: tuple = ()    # what torch.cuda.get_device_name says of this variant, without "NVIDIA "

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
    KnownGPU("A100 SXM", 108, "80 GB HBM2e", 2039, 19.5, 312, ("bfloat16", "float16"), "PCIe 4.0 ×16",
             ("A100-SXM4-80GB", "A100-SXM-80GB")),
    KnownGPU("H100 SXM", 132, "80 GB HBM3", 3350, 67, 989, ("bfloat16", "float16"), "PCIe 5.0 ×16",
             ("H100 80GB HBM3",)),
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
    name = name[len("NVIDIA "):] if name.upper().startswith("NVIDIA ") else name
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
    return Table({
        "GPU": gpu.name,
        "SMs": gpu.multiprocessors,
        "memory": gpu.memory,
        "bandwidth": f"{gpu.memory_gbps:,.0f} GB/s",
        "FP32": f"{gpu.float32_tflops:g} TFLOP/s",
        "16-bit tensor cores": f"{gpu.tensor_tflops:g} TFLOP/s ({', '.join(gpu.tensor_dtypes)})",
        "ridge FP32": f"{gpu.ridge('float32'):.0f} FLOP/B",
        "ridge 16-bit": f"{gpu.ridge(gpu.tensor_dtypes[0]):.0f} FLOP/B",
        "link to host": gpu.link,
    } for gpu in KNOWN_GPUS)


def _folder():
    return resources.files("gpulab").joinpath("reference_results")


def names() -> list[str]:
    """The experiments that have a recorded reference."""
    return sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".json"))


def load(name: str) -> dict[str, Any] | None:
    """The recorded reference for experiment ``name``, or None when none is recorded.

    The record holds ``device`` (the GPU's description), ``torch`` (its version),
    ``recorded`` (a date), ``command`` (what measured it) and ``result``.
    """
    path = _folder().joinpath(f"{name}.json")
    if not path.is_file():
        return None
    return validate(json.loads(path.read_text(encoding="utf-8")), name)


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


def describe(name: str) -> str:
    """One line saying where the reference for ``name`` comes from, or that there is none."""
    record = load(name)
    if record is None:
        return NOT_RECORDED
    device = record["device"].get("name", "a GPU")
    return f"reference: {device}, torch {record['torch']}, recorded {record['recorded']}"
