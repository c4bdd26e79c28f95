"""The parts the lessons' figures are drawn with: new figures, readable axes, series, colours, notes, legends.

Figures are made without pyplot, so that no backend or global state is involved; each panel's
figure, made of these parts, is in :mod:`gpulab.figures`. The one way a figure draws a measurement
beside a recorded reference is :func:`series`: the reader's curves solid, the reference GPU's
dashed, both through the same unit conversion, each labelled "what it measured · the device it ran
on". A figure from outside the measurement (a link's theoretical bandwidth, a GPU's spec-sheet peak)
is drawn with :func:`known_level` or :func:`known_curve`, dotted and labelled as what it is. Notes go
under the axes (:func:`note`), the legend beside them (:func:`legend`), so neither covers the data.

Colours come from Okabe and Ito's palette, which readers with any common colour-vision deficiency
tell apart, and a colour stands for one thing in a figure (:func:`color_of`): one measurement, on
whichever machine ran it, or one device or source. Black is kept for marks. No two series of a plot
differ by colour alone: each kind has its marker too (:func:`marker_of`), each source its line style.
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
    "MARK_COLOR",
    "OKABE_ITO",
    "bytes_axis",
    "color_for",
    "color_of",
    "format_bytes",
    "is_accelerator",
    "known_curve",
    "known_level",
    "legend",
    "log2_axis",
    "log_axis",
    "mark_x",
    "marker_of",
    "named",
    "new_figure",
    "note",
    "published_style",
    "reference_cpu",
    "save",
    "series",
    "show",
    "to_png",
]

# The course's palette: Okabe and Ito's eight colours ("Color Universal Design", 2002).
OKABE_ITO = {
    "black": "#000000",
    "orange": "#e69f00",
    "sky blue": "#56b4e9",
    "bluish green": "#009e73",
    "yellow": "#f0e442",
    "blue": "#0072b2",
    "vermillion": "#d55e00",
    "reddish purple": "#cc79a7",
}
# Black is for marks the data is read against (a budget, float16's limits, a ridge), never for a series.
MARK_COLOR = OKABE_ITO["black"]
# The order series take the other seven in, where none is asked for: yellow, faint on white, last.
SERIES_COLORS = tuple(
    OKABE_ITO[name] for name in ("blue", "orange", "bluish green", "vermillion", "reddish purple", "sky blue", "yellow")
)
# One colour per device type, the same in every lesson where a figure's series are devices.
DEVICE_COLORS = {
    "cpu": OKABE_ITO["blue"],
    "cuda": OKABE_ITO["bluish green"],
    "mps": OKABE_ITO["reddish purple"],
    "xpu": OKABE_ITO["sky blue"],
    "reference": OKABE_ITO["vermillion"],
}
# Each kind of series its marker too, so that colour is never the only difference.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# Line styles say whose a line is: the reader's measurement solid, a recorded reference dashed, a published
# figure long-dashed, a figure not measured dotted. Two of one family on a plot take different variants.
REFERENCE_STYLE = "--"
PUBLISHED_STYLES = ((0, (8, 3)), (0, (8, 3, 2, 3)), (0, (14, 4)), (0, (8, 3, 2, 3, 2, 3)))
KNOWN_STYLES = (":", (0, (3, 1.5, 1, 1.5)), (0, (1, 3.5)), (0, (3, 1.5, 1, 1.5, 1, 1.5)))
# A legend longer than this is hard to read against the plot: its measured series are then listed by what they
# measured (colour and marker) and by who measured it (line style), and what remains goes in a second legend.
MOST_LEGEND_ENTRIES = 8


def color_for(device: str) -> str:
    return DEVICE_COLORS.get(str(device).split(":")[0], OKABE_ITO["sky blue"])


def _chosen(figure, name: str) -> dict:
    return figure.__dict__.setdefault(f"_gpulab_{name}", {})


def color_of(figure, kind: str, prefer: str | None = None) -> str:
    """The colour ``kind`` has in ``figure``: the same on every plot of it, and no other kind's.

    A kind is one thing a colour can stand for: what a series measured ("pinned", on whichever machine), a
    device, a published source, a figure not measured. ``prefer``: its colour if no other kind has it yet.
    """
    chosen = _chosen(figure, "colors")
    if kind not in chosen:
        taken = set(chosen.values())
        free = [c for c in SERIES_COLORS if c not in taken]
        if prefer is not None and prefer not in taken:
            chosen[kind] = prefer
        else:  # past seven kinds colours repeat: a figure must not draw that many
            chosen[kind] = free[0] if free else SERIES_COLORS[len(chosen) % len(SERIES_COLORS)]
    return chosen[kind]


def marker_of(figure, kind: str) -> str:
    """The marker ``kind`` has in ``figure``: the same on every plot of it, and no other kind's (while they last)."""
    chosen = _chosen(figure, "markers")
    if kind not in chosen:
        free = [m for m in MARKERS if m not in chosen.values()]
        chosen[kind] = free[0] if free else MARKERS[len(chosen) % len(MARKERS)]
    return chosen[kind]


def _variant(figure, family: str, kind: str, styles: tuple):
    """The line style of ``kind`` among the figure's lines of one family (published, known)."""
    chosen = _chosen(figure, family)
    if kind not in chosen:
        chosen[kind] = styles[len(chosen) % len(styles)]
    return chosen[kind]


def published_style(figure, kind: str):
    """The dash pattern of the published figure ``kind`` in ``figure``: long dashes, a variant per figure."""
    return _variant(figure, "published", kind, PUBLISHED_STYLES)


def named(what: str | None, who: str) -> str:
    """A series' label: what it measured, then the device or machine it ran on ("pinned · cuda:0")."""
    return f"{what} · {who}" if what else who


def is_accelerator(name: str) -> bool:
    """Whether a series name names an accelerator device (``"cuda:0"``, ``"mps"``), not the CPU."""
    kind = str(name).split(":")[0]
    return kind in DEVICE_COLORS and kind not in ("cpu", "reference")


SIMULATED_NOTE = "simulated GPUs (GPULAB_SIMULATE): every time and rate drawn here is this CPU's"
SIMULATED_LINE = "simulated GPUs: every time and rate here is this CPU's"  # a panel's status line says so too


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


def show(figure, dpi: int = 100, summary: str = "") -> None:
    """Display ``figure`` in the notebook as an image whose text alternative says what it shows (:func:`bundle`;
    a figure made by :func:`new_figure` belongs to no pyplot backend, so Jupyter would otherwise print its repr)."""
    from IPython.display import display

    from . import alt_text

    display(bundle(to_png(figure, dpi), alt_text.describe(figure, summary)), raw=True)


def bundle(png: bytes, alt: str) -> dict[str, str]:
    """A figure as a notebook output's data: an HTML image with the text alternative ``alt`` (what JupyterLab,
    Colab and the website show, and what a screen reader reads), the PNG itself, and ``alt`` as its plain text."""
    return {
        "text/html": html_image(png, alt),
        "image/png": base64.b64encode(png).decode("ascii"),
        "text/plain": alt,
    }


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
        choices = [[(1,), 1], [(1, 2, 5), 1], [(1, 2, 3, 5), 1], [(1, 2, 3, 4, 5, 6, 7, 8, 9), 1]]
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
    """The figure's legend, each label once (matplotlib 3.7+): beside the plots where it is narrow, above them
    (in columns) where its labels are long, never under them, where the notes are.

    Past :data:`MOST_LEGEND_ENTRIES` entries, the series measured here and on the reference are listed
    by what they measured (its colour and marker: "pinned") and by who measured it (its line style:
    "cuda:0", "H100 SXM (reference)"), and everything else — published figures, figures not measured,
    marks — goes in a second legend. A legend too wide to stand beside the plots whose measured series
    are short is split the same way: the measured beside, the rest above.
    """
    _place_marks(figure)
    entries: dict[str, object] = {}
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if not entries:
        return

    def fits_beside(labels: list[str]) -> bool:
        # Beside the plots where it leaves them most of the width: a fifth of it beside a row of plots.
        share = 0.3 if len(figure.axes) == 1 else 0.2
        return _width_in(labels, fontsize) <= share * figure.get_figwidth()

    groups = [list(entries.items())]
    if len(entries) > MOST_LEGEND_ENTRIES:
        groups = [group for group in _factored(entries) if group]
    elif not fits_beside(list(entries)):
        measured = [(label, h) for label, h in entries.items() if _owner(h) in ("yours", "reference")]
        rest = [(label, h) for label, h in entries.items() if _owner(h) not in ("yours", "reference")]
        if measured and rest and fits_beside([label for label, _ in measured]):
            groups = [measured, rest]  # the measured series beside the plots, the long labels above them
    # One legend beside the plots, where one fits (the first that does), and one above them, in as many columns
    # as fit: not under them, where the notes are.
    labels_of = [[label for label, _ in group] for group in groups]
    fitting = [index for index, labels in enumerate(labels_of) if fits_beside(labels)]
    beside = fitting[0] if fitting else (0 if len(groups) > 1 else None)
    beside_in = _width_in(labels_of[beside], fontsize) if beside is not None else 0.0
    # A label above that would run into the legend beside the plots (four processes' fits beside a published
    # figure's long name): the legend beside moves down level with the plots, and the one above takes the width.
    low = beside is not None and any(
        _width_in(labels, fontsize) > 0.95 * figure.get_figwidth() - beside_in
        for index, labels in enumerate(labels_of)
        if index != beside
    )
    for index, group in enumerate(groups):
        handles, labels = [handle for _, handle in group], labels_of[index]
        if index == beside:
            where = "outside right center" if low else "outside right upper"
            figure.legend(handles, labels, loc=where, fontsize=fontsize, frameon=False)
        else:
            room = 0.95 * figure.get_figwidth() - (0.0 if low else beside_in)
            fitting_columns = [
                c for c in range(1, len(labels) + 1) if c == 1 or _columns_in(labels, c, fontsize) <= room
            ]
            columns = min(fitting_columns, key=lambda c: (-(-len(labels) // c), c))  # fewest rows, then columns
            figure.legend(handles, labels, loc="outside upper left", ncols=columns, fontsize=fontsize, frameon=False)


def _columns_in(labels: list[str], columns: int, fontsize: float) -> float:
    """How wide ``labels`` are in ``columns`` columns, split as a legend splits them (the first columns a label
    longer where they do not divide evenly), in inches."""
    rows, longer = divmod(len(labels), columns)
    sizes = [rows + (column < longer) for column in range(columns)]
    starts = [sum(sizes[:column]) for column in range(columns)]
    return sum(_width_in(labels[start : start + size], fontsize) for start, size in zip(starts, sizes) if size)


def _width_in(labels: list[str], fontsize: float) -> float:
    """How wide a legend's column of ``labels`` is, in inches: the widest text, its key and the space after it."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    renderer = RendererAgg(100, 100, 72)  # at 72 dpi a point is a pixel
    font = FontProperties(size=fontsize)
    widest = max(renderer.get_text_width_height_descent(label, font, ismath=False)[0] for label in labels)
    return (widest + 4.8 * fontsize) / 72  # the key, the pad after it and the space between columns (in em)


def _owner(artist) -> str:
    return (artist.get_gid() or "").split("|", 1)[0]


def _factored(entries: dict[str, object]) -> tuple[list, list]:
    """(what was measured and who measured it, as proxy entries; the other entries as they are)."""
    from matplotlib.lines import Line2D

    measured = {
        label: handle
        for label, handle in entries.items()
        if isinstance(handle, Line2D) and _owner(handle) in ("yours", "reference") and " · " in label
    }
    whats: dict[str, set] = {}
    whos: dict[str, set] = {}
    for label, handle in measured.items():
        what, who = label.rsplit(" · ", 1)
        whats.setdefault(what, set()).add((handle.get_color(), handle.get_marker()))
        whos.setdefault(who, set()).add(str(_line_style(handle)))
    if any(len(styles) > 1 for styles in (*whats.values(), *whos.values())):
        # Colour and marker do not follow what was measured, nor line style who measured it: no key to give.
        rest = [(label, handle) for label, handle in entries.items() if label not in measured]
        return list(measured.items()), rest
    key = []
    for what, ((color, marker),) in whats.items():
        key.append((what, Line2D([], [], color=color, marker=marker, markersize=4, linestyle="-")))
    for who in whos:
        drawn = next(handle for label, handle in measured.items() if label.endswith(f" · {who}"))
        key.append((who, Line2D([], [], color="#555555", linestyle=_line_style(drawn), linewidth=1.2)))
    return key, [(label, handle) for label, handle in entries.items() if label not in measured]


def _line_style(line):
    """A line's style as set_linestyle takes it: its dash pattern where it has one."""
    style = line.get_linestyle()
    return style if style in ("-", "None", "none", " ", "") else line._unscaled_dash_pattern


def mark_x(ax, x, label: str) -> None:
    """A dotted vertical line at ``x`` with a label near the top of the axes (on its left in the right part)."""
    ax.axvline(x, color=MARK_COLOR, linestyle=":", linewidth=1)
    ax.annotate(
        label,
        xy=(x, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(4, -12),
        textcoords="offset points",
        fontsize=8,
        gid="mark|label",
        bbox=dict(facecolor="white", alpha=0.8, edgecolor="none", pad=1),  # legible over a line it crosses
    )


def _place_marks(figure) -> None:
    """Each mark's label where it stays inside its axes: on the left of a line in the right part of the axes, and
    a line lower than a label it would run into."""
    for ax in figure.axes:
        placed = []
        marks = [text for text in ax.texts if text.get_gid() == "mark|label"]
        for text in sorted(marks, key=lambda t: _axes_fraction(ax, t.xy[0])):
            at = _axes_fraction(ax, text.xy[0])
            right = at > 0.6
            # About how far the label reaches across the axes, to the right or left of its line.
            reach = len(text.get_text()) * 0.55 * text.get_fontsize() / 72 / max(_axes_width_in(ax), 1e-6)
            span = (at - reach, at) if right else (at, at + reach)
            row = 0
            while any(r == row and s[0] < span[1] and span[0] < s[1] for r, s in placed):
                row += 1
            placed.append((row, span))
            text.set_horizontalalignment("right" if right else "left")
            text.xyann = (-4 if right else 4, -12 - 11 * row)


def _axes_fraction(ax, x: float) -> float:
    return ax.transAxes.inverted().transform(ax.transData.transform((x, 1.0)))[0]


def _axes_width_in(ax) -> float:
    return ax.get_position().width * ax.figure.get_figwidth()


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
    label: Callable[[str], str | None] | None = None,
    colors: dict[str, str] | None = None,
    on_reference_cpu: bool = False,
    where: str | None = None,
) -> list:
    """Draw every series of ``result[y]`` against ``result[x]``; a reference's the same way, dashed.

    - ``result[y]`` maps a series name to one value per x. What is plotted is
      ``derive(x, value) * scale`` (or ``value * scale``) — for the reader's series and the
      reference's alike, so both are always in the same unit.
    - ``reference`` is a record from :func:`gpulab.reference.load` (or None). Its points are
      drawn over the reader's x range only.
    - Each series is labelled "what it measured · the device it ran on": ``label`` turns a name
      into what it measured (the name itself by default), and the device is ``where``, else
      ``result["device"]``, else the CPU; the reference's are labelled with its GPU's name.
    - ``by_device``: the series names are devices (``"cpu"``, ``"cuda:0"``), each labelled with
      its device alone unless ``label`` says more, and coloured by it. The reference machine's
      CPU series are then left out — they are not the GPU — and its accelerator series are
      labelled with the GPU's name, in a colour of their own.
    - Otherwise a colour stands for what was measured: the reader's series and the reference's
      of the same name share it (and its marker), told apart by line style and label.
      ``colors`` maps names to the colours they ask for, granted where no other kind has them.
    - ``names`` picks which series to draw.
    - ``on_reference_cpu``: the series were measured on a CPU (with threads, say), so the
      reference's are the reference machine's CPU: they are labelled with that CPU, never as
      its GPU's, and drawn over their whole range, not only the reader's. Where the reference
      result names a ``backend`` (processes on that host, as lesson 06's gloo), the label says
      it and whose host it was: "gloo on the 16-core host of the H100 SXM machine".

    Each line's ``gid`` is ``"yours|NAME"`` or ``"reference|NAME"``. Returns the lines drawn.
    """
    figure = ax.figure
    what_of = label or ((lambda name: None) if by_device else (lambda name: name))
    asked = colors or {}

    def points(run: dict, values: Iterable[float]):
        pairs = [
            (x_value, (derive(x_value, v) if derive else v) * scale)
            for x_value, v in zip(run[x], values)
            if v is not None
        ]
        return [p for p in pairs if lo <= p[0] <= hi] if run is not result and not on_reference_cpu else pairs

    def look(kind: str, prefer: str | None, count: int) -> dict:
        marker = marker_of(figure, kind)
        return dict(color=color_of(figure, kind, prefer), marker=marker, markevery=max(1, count // 16))

    def spread_band(run: dict, name: str, values, line, noisy_at: set) -> None:
        """The series' spread as a band in its colour, and its points within noise collected to be ringed."""
        spread = ((run.get("spread") or {}).get(y) or {}).get(name)
        shown = {p[0] for p in points(run, values)}
        band = []
        for index, (x_value, value) in enumerate(zip(run[x], values)):
            if value is None or x_value not in shown:
                continue
            plotted = (derive(x_value, value) if derive else value) * scale
            if index in noisy_at or (
                spread is not None and timing.is_wide(value, timing.spread_of(run, y, name, index))
            ):
                rings.append((x_value, plotted))
            if spread is not None and index < len(spread) and spread[index] is not None:
                ends = sorted((derive(x_value, end) if derive else end) * scale for end in spread[index])
                band.append((x_value, *ends))
        if band:
            banded.append(name)
            _band(ax, band, line.get_color(), name)

    from . import timing

    rings: list[tuple[float, float]] = []
    banded: list[str] = []
    lo, hi = min(result[x]), max(result[x])
    if not by_device:  # what each measured series asked for first: a figure's later kinds take what is left
        for name in [*result[y], *(reference["result"][y] if reference is not None else ())]:
            color_of(figure, what_of(name), asked.get(name))
    lines = []
    for name, values in result[y].items():
        if names is not None and not names(name):
            continue
        what, device = what_of(name), name if by_device else (where or result.get("device", "cpu"))
        xs, ys = zip(*points(result, values)) if values else ((), ())
        prefer = color_for(name) if by_device else asked.get(name)
        lines += ax.plot(
            xs,
            ys,
            "-",
            markersize=4,
            label=named(what, device),
            gid=f"yours|{name}",
            **look(name if by_device else what, prefer, len(xs)),
        )
        spread_band(result, name, values, lines[-1], set())
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
            if on_reference_cpu and reference["result"].get("backend"):
                # Processes on the reference machine's host (lesson 06's gloo): the backend and whose host it was.
                cpu = records.host_cpu(reference)
                cores = f"{cpu['cores']}-core " if cpu.get("cores") else ""
                who = (
                    f"{reference['result']['backend']} on the {cores}host of the "
                    f"{records.gpu_label(reference)} machine (reference)"
                )
            elif on_reference_cpu:
                who = f"{reference_cpu(reference)} (reference)"
            else:
                who = f"{gpu} (reference)"
            what = what_of(name)
            kind, prefer = (who, DEVICE_COLORS["reference"]) if by_device else (what, asked.get(name))
            lines += ax.plot(
                xs,
                ys,
                REFERENCE_STYLE,
                markersize=3.5,
                alpha=0.85,
                label=named(what, who),
                gid=f"reference|{name}",
                **look(kind, prefer, len(xs)),
            )
            spread_band(reference["result"], name, values, lines[-1], records.noisy_indices(reference, y, name))
    _ring(ax, rings)
    if banded:
        _noise_note(figure, SPREAD_NOTE)
    return lines


def _band(ax, band: list[tuple[float, float, float]], color: str, name: str) -> None:
    """A series' spread, ``(x, low, high)`` per point, shaded in its colour; unlabelled, so no legend lists it."""
    xs, lows, highs = zip(*band)
    ax.fill_between(xs, lows, highs, color=color, alpha=0.2, linewidth=0, label="_spread", gid=f"spread|{name}")


def _ring(ax, rings: list[tuple[float, float]]) -> None:
    """Points within noise ringed in black (a shape, not a colour), with the note that says so."""
    if not rings:
        return
    xs, ys = zip(*rings)
    ax.plot(
        xs,
        ys,
        linestyle="none",
        marker="o",
        markersize=11,
        markerfacecolor="none",
        markeredgewidth=1.3,
        color="#000000",
        zorder=5,
        label=NOISY_LABEL,
        gid="mark|noisy",
    )
    _noise_note(ax.figure, NOISY_NOTE)


def shade(ax, line, spreads, *, scale: float = 1.0) -> None:
    """For a series a figure drew itself (``line``): each point's spread ``[low, high]`` (in the unit of its
    values, times ``scale`` as the line was) shaded in the line's colour, and its wide points ringed, as
    :func:`series` does. ``spreads`` is None, or shorter than the line, where nothing was measured."""
    from . import timing

    band, rings = [], []
    for x, y, spread in zip(line.get_xdata(), line.get_ydata(), spreads or ()):
        if spread is None:
            continue
        low, high = sorted(end * scale for end in spread)
        band.append((x, low, high))
        if timing.is_wide(y, (low, high)):
            rings.append((x, y))
    if band:
        _band(ax, band, line.get_color(), line.get_gid().split("|", 1)[-1] if line.get_gid() else line.get_label())
        _noise_note(ax.figure, SPREAD_NOTE)
    _ring(ax, rings)


NOISY_LABEL = "within noise (ringed)"
NOISY_NOTE = "ringed: within noise (its repeats spread wide, or it took longer than a bigger job)"
SPREAD_NOTE = "shaded: the middle half of each point's repeats"
ONCE_NOTE = "each point timed once: no spread"


def timed_once(figure) -> None:
    """Say, with what the rings and shading mean, that a figure's points are events that happen once (a first
    step at a new size): they have no repeats to take a spread from."""
    _noise_note(figure, ONCE_NOTE)


def _noise_note(figure, part: str) -> None:
    """What the rings and the shading mean, on one line of the figure's notes however many plots have them."""
    parts = figure.__dict__.setdefault("_gpulab_noise_parts", [])
    if part in parts:
        return
    notes = figure.__dict__.setdefault("_gpulab_notes", [])
    if parts and " · ".join(parts) in notes:
        notes.remove(" · ".join(parts))
    parts.append(part)
    parts.sort(key=[NOISY_NOTE, SPREAD_NOTE, ONCE_NOTE].index)
    note(figure, " · ".join(parts))


def is_noise_note(text: str) -> bool:
    """Whether a figure's note is the one that says what its rings and shading mean."""
    return all(part in (NOISY_NOTE, SPREAD_NOTE, ONCE_NOTE) for part in text.split(" · "))


def reference_cpu(record: dict) -> str:
    """The reference machine's CPU, as a record describes it: "AMD EPYC 9654, 16 cores"."""
    from . import reference

    return reference.cpu_label(record)


def known_level(ax, value: float, label: str):
    """A horizontal dotted line for a figure not measured here; ``label`` must say what it is
    (e.g. "PCIe 4.0 ×16, 31.5 GB/s (theoretical)")."""
    return ax.axhline(value, linewidth=1.4, label=label, gid=f"known|{label}", **_known_look(ax, label))


def known_curve(ax, xs, ys, label: str):
    """A dotted curve for a figure not measured here (a model, a spec sheet), labelled as such."""
    return ax.plot(xs, ys, linewidth=1.6, label=label, gid=f"known|{label}", **_known_look(ax, label))[0]


def _known_look(ax, label: str) -> dict:
    # Figures of one source ("H100 SXM spec sheet · float32: 67 TFLOP/s") share its colour, each its own pattern.
    kind = label.split(" · ")[0]
    return dict(color=color_of(ax.figure, kind), linestyle=_variant(ax.figure, "known", label, KNOWN_STYLES))
