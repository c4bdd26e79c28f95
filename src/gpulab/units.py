"""Quantities written for a reader: sizes in binary units, durations with the unit that reads best.

``gpulab.plots.format_bytes`` and ``gpulab.timing.format_seconds`` are these same functions, kept
where exercise notebooks already handed out call them.
"""

from __future__ import annotations

__all__ = ["format_bytes", "format_seconds"]


def format_bytes(n: float) -> str:
    """``4096`` → ``"4 KiB"``, ``3 * 2**30`` → ``"3 GiB"``: binary units, as memory is sized."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def format_seconds(seconds: float) -> str:
    """``0.00123`` → ``"1.23 ms"``: three significant digits with a unit a reader knows."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            return f"{seconds / scale:.3g} {unit}"
    raise AssertionError("unreachable")
