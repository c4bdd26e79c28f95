"""Results recorded on real GPUs, shipped with the package.

Each experiment that a reader's hardware may not be able to run has a JSON file in
``gpulab/reference_results/`` named after it, written by ``gpulab bench`` on a GPU machine.
Where none has been recorded, :func:`load` returns None and lessons say so; they never
show numbers that were not measured.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["LINK_MODEL", "NOT_RECORDED", "PCIE_X16_GBPS", "REQUIRED", "SPEC_PEAK_TFLOPS", "describe", "load",
           "names", "validate"]

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

# Peak dense matrix-multiply TFLOP/s from NVIDIA's data sheets (tensor cores where the dtype uses
# them; float32 without TF32, which PyTorch leaves off for matmul by default).
SPEC_PEAK_TFLOPS = {
    "float32": {"T4": 8.1, "A100 SXM": 19.5, "H100 SXM": 67.0},
    "bfloat16": {"A100 SXM": 312.0, "H100 SXM": 989.0},
}


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
