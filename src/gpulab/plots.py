"""Figures for the lessons, drawn without pyplot so that no backend or global state is involved."""

from __future__ import annotations

import io
import math
from pathlib import Path

__all__ = ["DEVICE_COLORS", "bytes_axis", "color_for", "format_bytes", "log2_axis", "log_axis", "mark_x", "new_figure", "note", "save", "to_png"]

# One colour per device type, the same in every lesson; the reference GPU is drawn dashed.
DEVICE_COLORS = {"cpu": "#4c72b0", "cuda": "#55a868", "mps": "#c44e52", "xpu": "#8172b2", "reference": "#7f7f7f"}


def format_bytes(n: float) -> str:
    """``4096`` → ``"4 KiB"``, ``3 * 2**30`` → ``"3 GiB"``: binary units, as memory is sized."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def color_for(device: str) -> str:
    return DEVICE_COLORS.get(str(device).split(":")[0], "#937860")


def new_figure(figsize: tuple[float, float] = (9.0, 3.6)):
    """A matplotlib Figure that belongs to no pyplot state (nothing to close, nothing leaks)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def to_png(figure, dpi: int = 100) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def save(figure, path: str | Path, dpi: int = 120) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    return path


def log_axis(ax, axis: str = "x", base: int = 10) -> None:
    """A log scale with plain tick labels (64, 128, 256 or 0.1, 1, 10 rather than 2⁶ or 10⁻¹)."""
    from matplotlib.ticker import FuncFormatter

    setter = ax.set_xscale if axis == "x" else ax.set_yscale
    setter("log", base=base)
    target = ax.xaxis if axis == "x" else ax.yaxis
    plain = FuncFormatter(lambda value, _pos: f"{value:g}")
    target.set_major_formatter(plain)
    if base == 10:
        # Label the 2s and 5s between decades, so an axis spanning less than a decade still reads.
        def minor(value, _pos):
            mantissa = value / 10 ** math.floor(math.log10(value)) if value > 0 else 0
            return f"{value:g}" if round(mantissa) in (2, 5) else ""

        target.set_minor_formatter(FuncFormatter(minor))


def log2_axis(ax, axis: str = "x") -> None:
    """Log base-2 scale with plain integer tick labels: the natural axis for sizes that double."""
    log_axis(ax, axis, base=2)


def bytes_axis(ax, axis: str = "x") -> None:
    """Log base-2 scale labelled in bytes at every 16×: 1 KiB, 16 KiB, 256 KiB, 4 MiB, 64 MiB, 1 GiB."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    log_axis(ax, axis, base=2)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator([2**k for k in range(2, 50, 4)]))
    target.set_major_formatter(FuncFormatter(lambda value, _pos: format_bytes(value)))
    target.set_minor_formatter(NullFormatter())


def note(ax, text: str) -> None:
    """A short grey note in the lower right corner of the axes (e.g. "no GPU reference recorded yet")."""
    ax.text(0.98, 0.03, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=8, color="#555555")


def mark_x(ax, x, label: str) -> None:
    """A dotted vertical line at ``x`` with a label near the top of the axes."""
    ax.axvline(x, color="black", linestyle=":", linewidth=1)
    ax.annotate(label, xy=(x, 1.0), xycoords=("data", "axes fraction"), xytext=(4, -12),
                textcoords="offset points", fontsize=8)
