"""The parts the lessons' figures are drawn with: new figures, readable axes, series, device colours, notes.

Figures are made without pyplot, so that no backend or global state is involved; each panel's
figure, made of these parts, is in :mod:`gpulab.figures`. The one way a figure draws a measurement
beside a recorded reference is :func:`series`: the reader's curves solid, the reference GPU's
dashed, both through the same unit conversion. A figure from outside the measurement (a link's
theoretical bandwidth, a GPU's spec-sheet peak) is drawn with :func:`known_level` or
:func:`known_curve`, dotted and labelled as what it is. Notes go under the axes (:func:`note`), the
legend beside them (:func:`legend`), so neither covers the data.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable, Iterable
from pathlib import Path

from .units import format_bytes  # gpulab.plots.format_bytes too: exercise notebooks handed out call it

__all__ = [
    "DEVICE_COLORS",
    "bytes_axis",
    "color_for",
    "format_bytes",
    "is_accelerator",
    "known_curve",
    "known_level",
    "legend",
    "log2_axis",
    "log_axis",
    "mark_x",
    "new_figure",
    "note",
    "reference_cpu",
    "save",
    "series",
    "show",
    "to_png",
]

# One colour per device type, the same in every lesson; the reference GPU is drawn dashed.
DEVICE_COLORS = {"cpu": "#4c72b0", "cuda": "#55a868", "mps": "#c44e52", "xpu": "#8172b2", "reference": "#7f7f7f"}
# Figures that were not measured here: dotted, each its own muted colour.
KNOWN_COLORS = ("#8c564b", "#7f7f7f", "#bcbd22", "#17becf", "#e377c2")


def color_for(device: str) -> str:
    return DEVICE_COLORS.get(str(device).split(":")[0], "#937860")


def is_accelerator(name: str) -> bool:
    """Whether a series name names an accelerator device (``"cuda:0"``, ``"mps"``), not the CPU."""
    kind = str(name).split(":")[0]
    return kind in DEVICE_COLORS and kind not in ("cpu", "reference")


SIMULATED_NOTE = "simulated GPUs (GPULAB_SIMULATE): every time and rate drawn here is this CPU's"


def new_figure(figsize: tuple[float, float] = (9.0, 3.6)):
    """A matplotlib Figure that belongs to no pyplot state (nothing to close, nothing leaks).

    On a simulated machine (:mod:`gpulab.simulated`) it carries a note saying so: its cuda curves
    are this CPU's work, and no figure may pass for a GPU's.
    """
    from matplotlib.figure import Figure

    from . import simulated

    figure = Figure(figsize=figsize, layout="constrained")
    if simulated.is_simulating():
        note(figure, SIMULATED_NOTE)
    return figure


def to_png(figure, dpi: int = 100) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def show(figure, dpi: int = 100) -> None:
    """Display ``figure`` in the notebook as a PNG (a figure made by :func:`new_figure` belongs to no
    pyplot backend, so Jupyter would otherwise print its repr). On a page without a kernel
    (``GPULAB_STATIC=1``), as an HTML image whose text alternative says what it shows."""
    from IPython.display import HTML, Image, display

    from .widgets import static_outputs

    if static_outputs():
        from . import alt_text

        display(HTML(html_image(to_png(figure, dpi), alt_text.describe(figure))))
    else:
        display(Image(data=to_png(figure, dpi), format="png"))


def html_image(png: bytes, alt: str) -> str:
    """``png`` as an HTML image held in the page itself, with the text alternative ``alt``."""
    data = base64.b64encode(png).decode("ascii")
    return f"<img class='gpulab-figure' src='data:image/png;base64,{data}' alt='{html.escape(alt)}'>"


def save(figure, path: str | Path, dpi: int = 120) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    return path


# ---------------------------------------------------------------- axes that can be read


def _plain_number(value: float, _pos=None) -> str:
    if value >= 1e4 and float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:g}"


def _readable_ticks(vmin: float, vmax: float, base: int, max_ticks: int = 8) -> list[float]:
    """At least three ticks inside [vmin, vmax] on a log axis, at the roundest values that give them."""
    from matplotlib.ticker import MaxNLocator

    if vmin > vmax:
        vmin, vmax = vmax, vmin
    if vmax <= 0:
        return []
    vmin = vmin if vmin > 0 else vmax / 1e3
    low, high = math.floor(math.log(vmin, base)) - 1, math.ceil(math.log(vmax, base)) + 1
    if base == 2:
        choices = [[(1,), stride] for stride in range(1, 12)]  # every 2×, 4×, 8× …
    else:
        choices = [[(1,), 1], [(1, 2, 5), 1], [(1, 2, 3, 4, 5, 6, 7, 8, 9), 1]]
    for subs, stride in choices:
        ticks = [s * float(base) ** k for k in range(low, high + 1) if k % stride == 0 for s in subs]
        inside = [t for t in ticks if vmin * (1 - 1e-9) <= t <= vmax * (1 + 1e-9)]
        if base == 2 and len(inside) > max_ticks:
            continue  # too crowded: a wider stride
        if len(inside) >= 3:
            return ticks
    # Less than about a factor of three between the ends: round linear steps read best.
    return [t for t in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10], min_n_ticks=3).tick_values(vmin, vmax) if t > 0]


def _readable_locator(base: int, max_ticks: int):
    from matplotlib.ticker import Locator

    class ReadableLogLocator(Locator):
        def __call__(self):
            vmin, vmax = self.axis.get_view_interval()
            return self.tick_values(vmin, vmax)

        def tick_values(self, vmin, vmax):
            return _readable_ticks(vmin, vmax, base, self._fitting(max_ticks))

        def _fitting(self, most: int) -> int:
            # Labels of a base-2 axis ("64 KiB", "1024") are wide: a narrow pane of a row of panes holds fewer
            # side by side than a figure-wide one (about half an inch each at the labels' size), three at least.
            axes = getattr(self.axis, "axes", None)
            if base != 2 or axes is None or self.axis is not axes.xaxis:
                return most
            width_in = axes.get_position().width * axes.figure.get_figwidth()
            return max(3, min(most, int(width_in / 0.5)))

    return ReadableLogLocator()


MINOR_TICK_DECADES = 6  # wider log axes get no minor ticks: too dense to read, and slow to draw


def _minor_locator(base: int):
    from matplotlib.ticker import LogLocator

    class MinorLogLocator(LogLocator):
        def tick_values(self, vmin, vmax):
            low, high = sorted((vmin, vmax))
            if low > 0 and math.log10(high / low) > MINOR_TICK_DECADES:
                return []
            return super().tick_values(vmin, vmax)

    return MinorLogLocator(base=base, subs="auto")


def log_axis(ax, axis: str = "x", base: int = 10, max_ticks: int = 8) -> None:
    """A log scale whose labelled ticks are plain numbers (64, 0.5, 20,000), at least three in view.

    Over several decades the ticks are the powers of ``base``; over a narrower range they fall
    on 1-2-5 or every integer mantissa, and over less than about a factor of three on round
    linear steps, so every axis can be read however little its values vary.
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    setter = ax.set_xscale if axis == "x" else ax.set_yscale
    setter("log", base=base)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(_readable_locator(base, max_ticks))
    target.set_major_formatter(FuncFormatter(_plain_number))
    target.set_minor_locator(_minor_locator(base))
    target.set_minor_formatter(NullFormatter())


def log2_axis(ax, axis: str = "x") -> None:
    """Log base-2 scale with plain integer tick labels: the natural axis for sizes that double."""
    log_axis(ax, axis, base=2)


def bytes_axis(ax, axis: str = "x") -> None:
    """Log base-2 scale labelled in bytes (4 KiB, 64 KiB, 1 MiB …), at least three labels in view."""
    from matplotlib.ticker import FuncFormatter

    log_axis(ax, axis, base=2, max_ticks=8)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_formatter(FuncFormatter(lambda value, _pos: format_bytes(value)))
    ax.tick_params(axis=axis, which="major", labelsize=8)


# ---------------------------------------------------------------- what goes around the data


def note(where, text: str) -> None:
    """A short grey note under the figure's axes (e.g. "no GPU reference recorded yet").

    ``where`` is an axes or a figure. Notes are collected into one footnote line per figure,
    outside every axes, so a note never covers a data point.
    """
    figure = getattr(where, "figure", None) or where
    notes = figure.__dict__.setdefault("_gpulab_notes", [])
    if text not in notes:
        notes.append(text)
    figure.supxlabel("\n".join(notes), fontsize=8, color="#555555")


def legend(figure, fontsize: float = 7) -> None:
    """One legend for the whole figure, beside the axes, each label once (matplotlib 3.7+)."""
    handles, labels = [], []
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        figure.legend(handles, labels, loc="outside right upper", fontsize=fontsize, frameon=False)


def mark_x(ax, x, label: str) -> None:
    """A dotted vertical line at ``x`` with a label near the top of the axes."""
    ax.axvline(x, color="black", linestyle=":", linewidth=1)
    ax.annotate(
        label, xy=(x, 1.0), xycoords=("data", "axes fraction"), xytext=(4, -12), textcoords="offset points", fontsize=8
    )


# ---------------------------------------------------------------- measurements and references


def series(
    ax,
    result: dict,
    *,
    x: str,
    y: str,
    reference: dict | None = None,
    scale: float = 1.0,
    derive: Callable[[float, float], float] | None = None,
    by_device: bool = False,
    names: Callable[[str], bool] | None = None,
    label: Callable[[str], str] | None = None,
    colors: dict[str, str] | None = None,
    on_reference_cpu: bool = False,
) -> list:
    """Draw every series of ``result[y]`` against ``result[x]``; a reference's the same way, dashed.

    - ``result[y]`` maps a series name to one value per x. What is plotted is
      ``derive(x, value) * scale`` (or ``value * scale``) — for the reader's series and the
      reference's alike, so both are always in the same unit.
    - ``reference`` is a record from :func:`gpulab.reference.load` (or None). Its points are
      drawn over the reader's x range only.
    - ``by_device``: the series names are devices (``"cpu"``, ``"cuda:0"``). The reference
      machine's CPU series are then left out — they are not the GPU — and its accelerator
      series are labelled with the GPU's name. Otherwise every series was measured on one
      device and keeps its name, with the reference GPU's name added.
    - ``names`` picks which series to draw, ``label`` turns a name into a legend label, and
      ``colors`` maps names to colours (devices have theirs).
    - ``on_reference_cpu``: the series were measured on a CPU (with threads, say), so the
      reference's are the reference machine's CPU: they are labelled with that CPU, never as
      its GPU's, and drawn over their whole range, not only the reader's. Where the reference
      result names a ``backend`` (processes on that host, as lesson 06's gloo), the label says
      it and whose host it was: "gloo on the 16-core host of the H100 SXM machine".

    Each line's ``gid`` is ``"yours|NAME"`` or ``"reference|NAME"``. Returns the lines drawn.
    """
    label = label or (lambda name: name)

    def points(run: dict, values: Iterable[float]):
        pairs = [
            (x_value, (derive(x_value, v) if derive else v) * scale)
            for x_value, v in zip(run[x], values)
            if v is not None
        ]
        return [p for p in pairs if lo <= p[0] <= hi] if run is not result and not on_reference_cpu else pairs

    lo, hi = min(result[x]), max(result[x])
    lines = []
    for name, values in result[y].items():
        if names is not None and not names(name):
            continue
        color = color_for(name) if by_device else (colors or {}).get(name)
        xs, ys = zip(*points(result, values)) if values else ((), ())
        lines += ax.plot(xs, ys, "-", marker="o", markersize=3, color=color, label=label(name), gid=f"yours|{name}")
    if reference is not None:
        from . import reference as records

        # A copy's bandwidth depends on the host link as much as on the GPU: name both.
        gpu = records.gpu_label(reference, link=y == "gbps")
        for name, values in reference["result"][y].items():
            if (names is not None and not names(name)) or (by_device and not is_accelerator(name)):
                continue
            pairs = points(reference["result"], values)
            if not pairs:
                continue
            xs, ys = zip(*pairs)
            color = DEVICE_COLORS["reference"] if by_device else (colors or {}).get(name)
            if on_reference_cpu and reference["result"].get("backend"):
                # Processes on the reference machine's host (lesson 06's gloo): the backend and whose host it was.
                cpu = records.host_cpu(reference)
                cores = f"{cpu['cores']}-core " if cpu.get("cores") else ""
                text = (
                    f"{label(name)} · {reference['result']['backend']} on the {cores}host of the "
                    f"{records.gpu_label(reference)} machine (reference)"
                )
            elif on_reference_cpu:
                text = f"{label(name)} · {reference_cpu(reference)} (reference)"
            else:
                text = f"{gpu} (reference)" if by_device else f"{label(name)} · {gpu} (reference)"
            lines += ax.plot(
                xs, ys, "--", marker="o", markersize=2, alpha=0.8, color=color, label=text, gid=f"reference|{name}"
            )
    return lines


def reference_cpu(record: dict) -> str:
    """The reference machine's CPU, as a record describes it: "AMD EPYC 9654, 16 cores"."""
    from . import reference

    return reference.cpu_label(record)


def known_level(ax, value: float, label: str, index: int = 0):
    """A horizontal dotted line for a figure not measured here; ``label`` must say what it is
    (e.g. "PCIe 4.0 ×16, 31.5 GB/s (theoretical)")."""
    return ax.axhline(
        value,
        linestyle=":",
        linewidth=1.2,
        color=KNOWN_COLORS[index % len(KNOWN_COLORS)],
        label=label,
        gid=f"known|{label}",
    )


def known_curve(ax, xs, ys, label: str, index: int = 0):
    """A dotted curve for a figure not measured here (a model, a spec sheet), labelled as such."""
    return ax.plot(
        xs, ys, ":", linewidth=1.5, color=KNOWN_COLORS[index % len(KNOWN_COLORS)], label=label, gid=f"known|{label}"
    )[0]
