"""A text alternative for a panel's figure, for the website's ``<img alt="...">``.

A reader who cannot see a figure needs what a sighted reader takes from it: what each plot measures
on which axis, whose curve is whose (the reader's, the H100 reference record's, a published figure),
where each curve starts, ends and peaks, and the notes drawn beside them. :func:`describe` reads all
of that back from the matplotlib Figure a panel drew — the figure is the one source of truth, so the
text cannot drift from the picture — in the axes' own units where their tick labels have them
("1 KiB", "20,000"), else in three significant figures.

The text is one plain paragraph of a bounded length: where a figure holds more than fits, the detail
of its series goes first (their numbers, then the later series themselves, counted as "and N more
series"), and every artist that cannot be read is left out rather than raised on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["MAX_CHARS", "describe"]

MAX_CHARS = 1200  # about what a screen reader user hears through before moving on

# Units an axis label may name, given after a value drawn against it ("9.6 GB/s"); seconds alone are left
# out, as "samples / s" names a rate, not a duration.
_UNIT = re.compile(r"(?<![\w/])(?:[kMGTP]?B/s|[kMGTP]?FLOP/s|ms|µs|us|ns)(?![\w/])")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")
_MANY_BARS = 6  # a bar chart's shorter text names this many bars, then counts the rest

# The order in which detail goes when the text is too long, highest first: a series' numbers in two steps,
# long lists of axis labels, a series an earlier plot named, axis ranges, notes on the plots, the other
# series (counted), and last the figure's own notes (a simulated machine, a missing reference).
_FULL, _SHORT, _CATEGORIES, _REPEAT, _RANGE, _NOTE, _NAME, _FIGURE_NOTE = 6, 5, 4, 3.5, 3, 2.5, 2, 1


def describe(figure, summary: str = "", max_chars: int = MAX_CHARS) -> str:
    """What ``figure`` shows, in one plain paragraph of at most ``max_chars`` characters.

    For each axes with something drawn on it: its title, its x and y axes (label, log scale, range),
    each labelled series with its numbers (a line: its first and last points and an inner peak; bars:
    each bar's name and value; a band: its extent) and the notes written on it. Then the figure's own
    notes, then ``summary`` (the panel's one-line result). Never empty.
    """
    axes = [ax for ax in figure.axes if ax.get_visible() and _has_content(ax)]
    parts: list[_Part] = []
    named: dict[str, _Part] = {}
    blocks = [_axes_block(ax, index, len(axes), parts, named) for index, ax in enumerate(axes, 1)]
    title = _figure_text(figure, "_suptitle")
    # The figure's own notes (gpulab.plots.note writes them under the axes): what goes last when space runs out.
    texts = [t for t in figure.texts if t.get_visible() and t is not getattr(figure, "_suptitle", None)]
    notes = [_Part([_plain(line), ""], [_FIGURE_NOTE]) for t in texts for line in str(t.get_text()).splitlines()]
    notes = [part for part in notes if part.text]
    parts += notes
    _missing_legend_labels(figure, blocks, parts)

    def compose() -> str:
        sentences = [f"Figure: {title}"] if title else []
        if not blocks:
            sentences.append("An empty figure: no plot in it has anything drawn")
        for block in blocks:
            sentences += block.sentences()
        sentences += [f"Note: {part.text}" for part in notes if part.text]
        if summary and _plain(summary):
            sentences.append(_plain(summary))
        return _paragraph(sentences)

    return _shortened(compose, parts, max_chars)


# ---------------------------------------------------------------- how the text is shortened


@dataclass
class _Part:
    """A piece of the text, from its longest form to its shortest ("" when it may go altogether);
    ``ranks[i]`` orders the step from form i to form i + 1 against every other part's (highest first).
    ``repeat_of``: the same series in an earlier plot, while that names it this one's name may go first of all
    series. ``block``: the plot a series belongs to; of two equal steps, the one in the plot with more series
    shown goes first."""

    forms: list[str]
    ranks: list[float]
    level: int = 0
    repeat_of: _Part | None = None
    block: _Block | None = None

    @property
    def named_above(self) -> bool:
        return self.repeat_of is not None and bool(self.repeat_of.text)

    def crowd(self) -> int:
        # A series a plot leaves to the plot above to name is still one it shows.
        return sum(1 for part in self.block.series if part.text or part.named_above) if self.block else 0

    @property
    def text(self) -> str:
        return self.forms[self.level]

    def next_rank(self) -> float | None:
        if self.level >= len(self.forms) - 1:
            return None
        last_step = self.level == len(self.forms) - 2
        return _REPEAT if last_step and self.named_above else self.ranks[self.level]


def _shortened(compose, parts: list[_Part], max_chars: int) -> str:
    text = compose()
    while len(text) > max_chars:
        # The step of highest rank; among equals, the one in the plot that shows most series (so that every plot
        # keeps its first series, the reader's own), then the latest part's.
        steps = [(part.next_rank(), part.crowd(), position, part) for position, part in enumerate(parts)]
        steps = [step for step in steps if step[0] is not None]
        if not steps:
            return _cut(text, max_chars)
        max(steps, key=lambda step: step[:3])[3].level += 1
        text = compose()
    return text


def _cut(text: str, max_chars: int) -> str:
    """``text`` cut at the last word that fits, with an ellipsis: only when nothing else can be left out."""
    cut = text[: max_chars - 2].rsplit(" ", 1)[0].rstrip(";:,. ")
    return cut + " …"


def _note(text: str) -> str:
    """A note of several lines as one: its lines joined by semicolons."""
    return "; ".join(line for line in (_plain(line) for line in str(text).splitlines()) if line)


def _paragraph(sentences: list[str]) -> str:
    text = ""
    for sentence in sentences:
        sentence = sentence.strip()
        if sentence:
            text += sentence + ("" if sentence[-1] in ".!?" else ".") + " "
    return text.strip()


# ---------------------------------------------------------------- one axes


@dataclass
class _Block:
    header: str
    axis_parts: list[_Part]
    series: list[_Part]
    notes: list[_Part]
    named: set[str]

    def sentences(self) -> list[str]:
        axes = "; ".join(part.text for part in self.axis_parts if part.text)
        first = self.header + (f": {axes}" if axes and self.header else axes)
        shown = [part.text for part in self.series if part.text]
        repeated = sum(1 for part in self.series if part.named_above and not part.text)
        hidden = len(self.series) - len(shown) - repeated
        if repeated:
            shown.append(f"the {repeated} series named above" if repeated > 1 else "the series named above")
        if hidden:
            shown.append(f"and {hidden} more series" if shown else f"{hidden} series")
        notes = [part.text for part in self.notes if part.text]
        return [first, "; ".join(shown), ("Notes on it: " + "; ".join(notes)) if notes else ""]


def _has_content(ax) -> bool:
    return any(
        artist.get_visible() for artist in (*ax.lines, *ax.patches, *ax.collections, *ax.images, *ax.texts, *ax.tables)
    )


def _axes_block(ax, index: int, count: int, parts: list[_Part], named: dict[str, _Part]) -> _Block:
    title = " · ".join(t for t in (_plain(ax.get_title(loc)) for loc in ("left", "center", "right")) if t)
    if count > 1:
        header = f"Plot {index} of {count}" + (f", “{title}”" if title else "")
    else:
        header = f"Plot “{title}”" if title else ""
    block = _Block(header, [], [], [], set())
    try:
        series, used_texts = _series(ax)
    except Exception:  # an axes that cannot be read still has its title and axes
        series, used_texts = [], set()
    bar_axis = next((s.category_axis for s in series if s.category_axis), None)
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        try:
            part = _axis_part(name, axis, skip_categories=axis is bar_axis)
        except Exception:  # a locator or formatter that cannot work undrawn: the axis's label will do
            part = _Part([f"{name} axis: {_plain(axis.get_label_text()) or 'unlabelled'}"], [])
        if part is not None:
            block.axis_parts.append(part)
    for item in series:
        # Named by an earlier plot: its name may go before any other series goes.
        part = _Part(item.forms, item.ranks, repeat_of=named.get(item.label), block=block)
        block.series.append(part)
        block.named.add(item.label)
        named.setdefault(item.label, part)
    seen = set()
    for text in ax.texts:
        words = _note(text.get_text()) if text.get_visible() and id(text) not in used_texts else ""
        if words and words not in seen:
            seen.add(words)
            block.notes.append(_Part([words, ""], [_NOTE]))
    parts += block.axis_parts + block.series + block.notes
    return block


# ---------------------------------------------------------------- its axes


def _axis_part(name: str, axis, *, skip_categories: bool) -> _Part | None:
    if not axis.get_visible():
        return None
    label = _plain(axis.get_label_text())
    scale = axis.get_scale()
    about = [label] if label else []
    about += [f"{scale} scale"] if scale != "linear" else []
    categories = _categories(axis)
    if categories is not None:
        if skip_categories:
            return _Part([f"{name} axis: {', '.join(about + ['the names of the bars'])}"], [])
        quoted = [f"“{category}”" for category in categories]
        named = ", ".join(quoted)
        short = ", ".join(quoted[:3]) + (f" and {len(quoted) - 3} more" if len(quoted) > 3 else "")
        lead = f"{name} axis: " + "".join(a + ", " for a in about)
        return _Part([f"{lead}labelled {named}", f"{lead}labelled {short}"], [_CATEGORIES])
    low, high = sorted(axis.get_view_interval())
    span = f"{_value(axis, low)} to {_value(axis, high, unit=_unit(label))}"
    return _Part(
        [f"{name} axis: " + ", ".join([*about, span]), f"{name} axis: " + ", ".join(about or ["unlabelled"])], [_RANGE]
    )


def _categories(axis) -> list[str] | None:
    """The tick labels of an axis of named positions (bars, stages), in view; None for an axis of numbers."""
    if not _categorical(axis):
        return None
    low, high = sorted(axis.get_view_interval())
    return [text for loc, text in _tick_labels(axis) if low <= loc <= high and text]


def _categorical(axis) -> bool:
    """Whether the axis's ticks name things (``set_xticks(positions, names)``, string data) rather than numbers."""
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.ticker import FixedFormatter, FixedLocator

    if isinstance(axis.get_major_formatter(), (FixedFormatter, StrCategoryFormatter)):
        return True
    if not isinstance(axis.get_major_locator(), FixedLocator):
        return False
    return any(not _is_number(text) for _, text in _tick_labels(axis))


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", "").replace("\u2212", "-"))
    except ValueError:
        return not text  # an empty label names nothing
    return True


def _tick_labels(axis) -> list[tuple[float, str]]:
    locs = list(axis.get_majorticklocs())
    return list(zip(locs, (_plain(t) for t in axis.get_major_formatter().format_ticks(locs))))


def _category_at(axis, value: float) -> str:
    return next((text for loc, text in _tick_labels(axis) if math.isclose(loc, value, abs_tol=1e-9)), "")


def _unit(label: str) -> str:
    units = set(_UNIT.findall(label))
    return units.pop() if len(units) == 1 else ""


def _value(axis, value: float, unit: str = "") -> str:
    """``value`` as the axis labels its ticks, where that is plain text, else in three significant figures."""
    from matplotlib.ticker import FormatStrFormatter, FuncFormatter, StrMethodFormatter

    formatter = axis.get_major_formatter()
    whole = axis.axis_name == "x"  # x: where a point was measured, kept exact
    text = ""
    try:
        if _categorical(axis):
            text = _category_at(axis, value)
            return f"“{text}”" if text else _number(value, whole=True)
        # gpulab's axes label their ticks with functions ("4 KiB", "20,000"); matplotlib's own formatters need
        # the ticks set first, and write mathtext ("$10^{3}$"): those values are written as numbers.
        if isinstance(formatter, (FuncFormatter, StrMethodFormatter, FormatStrFormatter)):
            text = _compact(_plain(str(formatter(value, None))), whole)
    except Exception:  # a formatter that needs a drawn figure: the number will do
        text = ""
    if not text or "$" in text:
        text = _number(value, whole)
    # The axis's unit goes after a bare number, not after one its formatter gave a unit already ("12 MiB").
    return f"{text} {unit}" if unit and not re.search(r"[A-Za-z]", _NUMBER.sub("", text)) else text


def _number(value: float, whole: bool = False) -> str:
    """Three significant figures; with ``whole``, whole numbers below 100,000 exactly (n = 4032, not 4030)."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if whole and value.is_integer() and abs(value) < 1e5:
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.0f}"
    rounded = float(f"{value:.3g}")
    if 1e3 <= abs(rounded) < 1e9:
        return f"{rounded:,.0f}" if abs(rounded) >= 1e4 else f"{rounded:.0f}"
    text = f"{rounded:.3g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def _compact(text: str, whole: bool) -> str:
    """Numbers in a formatter's text shortened to three significant figures ("1,234,567 B" → "1,230,000 B")."""

    def shorter(match: re.Match) -> str:
        digits = match.group().split("e")[0].replace(",", "").replace(".", "").strip("0")
        return _number(float(match.group().replace(",", "")), whole) if len(digits) > 3 else match.group()

    return _NUMBER.sub(shorter, text)


# ---------------------------------------------------------------- its series


@dataclass
class _Series:
    label: str
    forms: list[str]
    ranks: list[float]
    category_axis: object = None


def _series(ax) -> tuple[list[_Series], set[int]]:
    """Each labelled thing drawn on ``ax``, in the order it was drawn, and the ids of the texts that went
    into a bar's description."""
    from matplotlib.container import BarContainer, ErrorbarContainer, StemContainer

    found: list[tuple[int, _Series]] = []
    handled: set[int] = set()
    used_texts: set[int] = set()
    order = {id(artist): position for position, artist in enumerate(ax.get_children())}
    for container in ax.containers:
        members = [a for a in container.get_children() if a is not None]
        handled.update(id(a) for a in members)
        label = _plain(container.get_label())
        try:
            if isinstance(container, BarContainer):
                item = _bars(ax, container, used_texts)
            elif isinstance(container, (ErrorbarContainer, StemContainer)) and not label.startswith("_"):
                line = container.lines[0] if isinstance(container, ErrorbarContainer) else container.markerline
                item = _line(ax, line, label) if line is not None else None
            else:
                continue
        except Exception:
            continue
        if item is not None:
            found.append((min((order.get(id(a), 0) for a in members), default=0), item))
    describers = [(line, _line) for line in ax.lines]
    describers += [(patch, _patch) for patch in ax.patches]
    describers += [(collection, _collection) for collection in ax.collections]
    unlabelled = []
    for artist, describer in describers:
        label = _plain(str(artist.get_label() or ""))
        if id(artist) in handled or not artist.get_visible():
            continue
        if not label or label.startswith("_"):
            if describer is _line and _in_data(ax, artist) == (True, True):
                unlabelled.append(artist)
            continue
        found.append((order.get(id(artist), 0), _described(describer, ax, artist, label)))
    if not found:  # curves drawn with no label at all (a quick plot) are still what the axes shows
        names = ["a line"] if len(unlabelled) == 1 else [f"line {i}" for i in range(1, len(unlabelled) + 1)]
        found += [(order.get(id(line), 0), _described(_line, ax, line, name)) for line, name in zip(unlabelled, names)]
    found = [(position, item) for position, item in found if item is not None]
    for image in ax.images:
        label = _plain(str(image.get_label() or ""))
        name = label if label and not label.startswith("_") else "an image"
        found.append((order.get(id(image), 0), _Series(name, [name, ""], [_NAME])))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])], used_texts


def _described(describer, ax, artist, label: str) -> _Series | None:
    try:
        return describer(ax, artist, label)
    except Exception:  # an artist whose data cannot be read is named, never raised on
        return _Series(label, [label, ""], [_NAME])


def _in_data(ax, artist) -> tuple[bool, bool]:
    """Whether the artist's x and its y are data coordinates (an axhline's x is not; an axvspan's y is not)."""
    x_data, y_data = artist.get_transform().contains_branch_seperately(ax.transData)
    return bool(x_data), bool(y_data)


def _finite_points(xs, ys) -> list[tuple[float, float]]:
    points = []
    for x, y in zip(xs, ys):
        try:
            x, y = float(x), float(y)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x) and math.isfinite(y):
            points.append((x, y))
    return points


def _line(ax, line, label: str) -> _Series:
    xy = line.get_xydata()  # after unit conversion: categories are positions
    points = _finite_points(xy[:, 0], xy[:, 1]) if len(xy) else []
    x_data, y_data = _in_data(ax, line)
    unit = _unit(_plain(ax.yaxis.get_label_text()))

    def x(v):
        return _value(ax.xaxis, v)

    def y(v):
        return _value(ax.yaxis, v, unit)

    if not points:
        return _Series(label, [label, ""], [_NAME])
    ys = [p[1] for p in points]
    if not x_data and y_data:  # a level across the axes (axhline)
        full = f"{label}: a level at {y(ys[0])}"
    elif x_data and not y_data:  # a mark at one x (axvline)
        full = f"{label}: a mark at {x(points[0][0])}"
    elif not (x_data and y_data):
        return _Series(label, [label, ""], [_NAME])
    elif len(points) == 1:
        full = f"{label}: {y(ys[0])} at {x(points[0][0])}"
    elif str(line.get_linestyle()).lower() in ("none", "", " "):  # markers alone: points, not a curve
        low, high = min(points, key=lambda p: p[1]), max(points, key=lambda p: p[1])
        full = f"{label}: {len(points)} points, lowest {y(low[1])} at {x(low[0])}, highest {y(high[1])} at {x(high[0])}"
        return _Series(label, [full, f"{label}: {len(points)} points", label, ""], [_FULL, _SHORT, _NAME])
    elif len({p[1] for p in points}) == 1:
        full = f"{label}: flat at {y(ys[0])} from {x(points[0][0])} to {x(points[-1][0])}"
    else:
        (x0, y0), (x1, y1) = points[0], points[-1]
        top = max(range(len(points)), key=lambda i: points[i][1])
        peak = f", peak {y(points[top][1])} at {x(points[top][0])}" if 0 < top < len(points) - 1 else ""
        full = f"{label}: from {y(y0)} at {x(x0)} to {y(y1)} at {x(x1)}{peak}"
        short_peak = f", peak {y(points[top][1])}" if peak else ""
        return _Series(label, [full, f"{label}: {y(y0)} to {y(y1)}{short_peak}", label, ""], [_FULL, _SHORT, _NAME])
    return _Series(label, [full, label, ""], [_SHORT, _NAME])


def _bars(ax, container, used_texts: set[int]) -> _Series | None:
    horizontal = getattr(container, "orientation", None) == "horizontal"
    value_axis, place_axis = (ax.xaxis, ax.yaxis) if horizontal else (ax.yaxis, ax.xaxis)
    unit = _unit(_plain(value_axis.get_label_text()))
    anchors = _text_anchors(ax)
    named = []
    for bar in container.patches:
        if not bar.get_visible():
            continue
        x, y, width, height = bar.get_x(), bar.get_y(), bar.get_width(), bar.get_height()
        value, place = (width, y + height / 2) if horizontal else (height, x + width / 2)
        own = _plain(str(bar.get_label() or ""))
        name = own if own and not own.startswith("_") else _category_at(place_axis, place) or _number(place, whole=True)
        end = (x + width, y + height / 2) if horizontal else (x + width / 2, y + height)
        beside = [t for t, at in anchors if id(t) not in used_texts and _near(at, end)]
        used_texts.update(id(t) for t in beside)
        extra = "".join(f" ({_plain(t.get_text())})" for t in beside if _plain(t.get_text()))
        named.append(f"{name} {_value(value_axis, value, unit)}{extra}")
    if not named:
        return None
    label = _plain(str(container.get_label() or ""))
    label = label if label and not label.startswith("_") else "bars"
    short = named[:_MANY_BARS] + ([f"and {len(named) - _MANY_BARS} more"] if len(named) > _MANY_BARS else [])
    categories = place_axis if _categories(place_axis) is not None else None
    return _Series(
        label,
        [f"{label}: {', '.join(named)}", f"{label}: {', '.join(short)}", label, ""],
        [_FULL, _SHORT, _NAME],
        categories,
    )


def _text_anchors(ax) -> list[tuple[object, tuple[float, float]]]:
    """Each text on ``ax`` placed at a data point, with that point (an annotation's ``xy``)."""
    anchors = []
    for text in ax.texts:
        try:
            if hasattr(text, "xy") and text.xycoords == "data":
                anchors.append((text, (float(text.xy[0]), float(text.xy[1]))))
            elif not hasattr(text, "xy") and text.get_transform() == ax.transData:
                position = text.get_position()
                anchors.append((text, (float(position[0]), float(position[1]))))
        except Exception:
            continue
    return anchors


def _near(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(math.isclose(p, q, rel_tol=1e-6, abs_tol=1e-9) for p, q in zip(a, b))


def _extent(ax, artist, vertices) -> str:
    """Where a shape lies, in the coordinates that are data (an axvspan: its x only)."""
    x_data, y_data = _in_data(ax, artist)
    points = _finite_points(vertices[:, 0], vertices[:, 1]) if len(vertices) else []
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    unit = _unit(_plain(ax.yaxis.get_label_text()))
    where = []
    if x_data:
        where.append(f"over {_value(ax.xaxis, min(xs))} to {_value(ax.xaxis, max(xs))}")
    if y_data:
        where.append(f"between {_value(ax.yaxis, min(ys))} and {_value(ax.yaxis, max(ys), unit)}")
    return " ".join(where)


def _patch(ax, patch, label: str) -> _Series:
    vertices = patch.get_patch_transform().transform(patch.get_path().vertices)
    # Spans drawn again under one label (a phase shaded once per step) are labelled once: count them by colour.
    alike = [
        p
        for p in ax.patches
        if p.get_visible() and p.get_facecolor() == patch.get_facecolor() and type(p) is type(patch)
    ]
    where = _extent(ax, patch, vertices)
    shape = "a shaded area" if len(alike) == 1 else f"{len(alike)} shaded areas, the first"
    full = f"{label}: {shape} {where}".rstrip() if where else label
    return _Series(label, [full, label, ""], [_SHORT, _NAME])


def _collection(ax, collection, label: str) -> _Series:
    import numpy as np
    from matplotlib.collections import LineCollection, PathCollection, QuadMesh

    if isinstance(collection, QuadMesh):
        return _Series(label, [f"{label}: an image", label, ""], [_SHORT, _NAME])
    if isinstance(collection, PathCollection):  # scatter: one marker per offset
        points = _finite_points(*zip(*collection.get_offsets())) if len(collection.get_offsets()) else []
        if not points:
            return _Series(label, [label, ""], [_NAME])
        unit = _unit(_plain(ax.yaxis.get_label_text()))

        def at(point):
            return f"{_value(ax.yaxis, point[1], unit)} at {_value(ax.xaxis, point[0])}"

        if len(points) == 1:
            return _Series(label, [f"{label}: {at(points[0])}", label, ""], [_SHORT, _NAME])
        low, high = min(points, key=lambda p: p[1]), max(points, key=lambda p: p[1])
        full = f"{label}: {len(points)} points, lowest {at(low)}, highest {at(high)}"
        return _Series(label, [full, f"{label}: {len(points)} points", label, ""], [_FULL, _SHORT, _NAME])
    paths = collection.get_paths()
    vertices = np.asarray([v for path in paths for v in path.vertices], dtype=float).reshape(-1, 2)
    where = _extent(ax, collection, vertices)
    shape = f"{len(paths)} lines" if isinstance(collection, LineCollection) else "a band"
    full = f"{label}: {shape} {where}" if where else label
    return _Series(label, [full, label, ""], [_SHORT, _NAME])


# ---------------------------------------------------------------- around the axes


def _missing_legend_labels(figure, blocks: list[_Block], parts: list[_Part]) -> None:
    """A legend entry that no artist on the axes carries (a proxy) is named all the same, on the last plot."""
    named = set().union(*(block.named for block in blocks)) if blocks else set()
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes)]
    for legend in legends:
        if legend is None or not blocks:
            continue
        for text in legend.get_texts():
            label = _plain(text.get_text())
            if label and label not in named:
                named.add(label)
                part = _Part([label, ""], [_NAME], block=blocks[-1])
                blocks[-1].series.append(part)
                parts.append(part)


def _figure_text(figure, name: str) -> str:
    text = getattr(figure, name, None)
    return _plain(text.get_text()) if text is not None and text.get_visible() else ""


def _plain(text: str) -> str:
    """One line of plain text: mathtext's ``$…$`` and commands dropped, every run of white space one space."""
    text = str(text)
    if "$" in text:
        text = re.sub(r"\\mathdefault\{([^}]*)\}", r"\1", text)
        text = re.sub(r"\^\{([^}]*)\}", r"^\1", text)
        text = re.sub(r"\\[A-Za-z]+", "", text).replace("$", "").replace("{", "").replace("}", "")
    return " ".join(text.split())
