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

__all__ = ["NOT_RECORDED", "REQUIRED", "describe", "load", "names", "validate"]

NOT_RECORDED = "no GPU reference recorded yet"

# What every record holds; ``gpulab bench`` writes these and more.
REQUIRED = ("device", "torch", "recorded", "command", "result")


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
