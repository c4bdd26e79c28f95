"""Quantities written for a reader: sizes in binary units, durations with the unit that reads best.

``gpulab.plots.format_bytes`` and ``gpulab.timing.format_seconds`` are these same functions, kept
where exercise notebooks already handed out call them.
"""

from __future__ import annotations

import math

__all__ = ["format_bytes", "format_number", "format_seconds"]


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


def format_number(x: float, digits: int = 3) -> str:
    """``187.3`` → ``"187"``, ``3.417`` → ``"3.42"``, ``187345.6`` → ``"187,346"``: at least ``digits``
    significant digits, every digit before the point, thousands separated, never an exponent."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{decimals}f}"
