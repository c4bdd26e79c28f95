"""gpulab.figures: each panel's figure, registered under the panel's name, and readable as a notebook shows it.
(How each draws beside a reference: test_bench.py; beside published measurements: test_reference.py.)

Every panel's figure is drawn at its lesson's figsize and 100 dpi, with every result it can draw: the H100
record's own result beside that record (a reader on that GPU), the same numbers measured on a CPU beside the
record (a reader without a GPU, as the course ships) and with no record, and each made-up result the
published-figure tests draw (tests/unit/test_reference.py). In each: no text runs into other text, a colour
stands for one thing, every measured series names the device it ran on, the colours are colour-blind safe and
never the only difference, and each legend is short enough to take in."""

import functools
import json
import re

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from test_reference import RESULTS

from gpulab import figures, plots, reference
from gpulab.widgets import Panel

from conftest import ROOT


@pytest.fixture
def registry(monkeypatch):
    """gpulab.figures.PANELS as it is, and as it was again after the test, whatever the test registers."""
    monkeypatch.setattr(figures, "PANELS", dict(figures.PANELS))
    return figures.PANELS


def test_registering_a_figure_names_it_and_its_panel(registry):
    @figures.panel("98_demo", published=(reference.PUBLISHED[0].key,))
    def demo(result, figure):
        figure.subplots().plot(result["x"], result["y"])

    assert registry["98_demo"] is demo and demo.panel_name == "98_demo"
    assert demo.published_keys == (reference.PUBLISHED[0].key,)
    panel = Panel(lambda progress: {"x": [1, 2], "y": [3, 4]}, {}, plot=demo)
    assert panel.name == "98_demo"


def test_a_name_is_registered_once_and_looks_like_a_lessons(registry):
    before = dict(registry)
    with pytest.raises(ValueError, match="'02_bandwidth' already has a figure: bandwidth"):
        figures.panel("02_bandwidth")(lambda result, figure: None)
    for name in ("bandwidth", "2_bandwidth", "02_Bandwidth", "02_"):
        with pytest.raises(ValueError, match="the lesson's number, then words"):
            figures.panel(name)
    assert registry == before


# Figures the lessons draw outside a panel, with arguments of their own.
NOT_PANELS = {"cuda_snapshot", "number_formats"}


def test_every_figure_is_a_registered_panels_and_carries_its_name():
    public = {name for name in figures.__all__ if callable(getattr(figures, name))} - {"panel"} - NOT_PANELS
    assert {draw.__name__ for draw in figures.PANELS.values()} == public
    for name, draw in figures.PANELS.items():
        assert draw.panel_name == name and figures.PANEL_NAME.fullmatch(name), name
    assert not any(hasattr(getattr(figures, name), "panel_name") for name in NOT_PANELS)


def test_the_formats_picture_has_a_bar_per_format_with_its_bits():
    rows = [{"name": "float32", "exponent": 8, "mantissa": 23}, {"name": "float16", "exponent": 5, "mantissa": 10}]
    figure = plots.new_figure()
    figures.number_formats(rows, figure)
    ax = figure.axes[0]
    widths = sorted(round(patch.get_width()) for patch in ax.patches)
    assert widths == sorted([1, 8, 23, 1, 5, 10])
    assert [label.get_text() for label in ax.get_yticklabels()] == ["float16", "float32"]


def test_a_reference_of_other_settings_is_said_to_be_one_never_missing():
    record = {"device": {"name": "NVIDIA H100 80GB HBM3", "multiprocessors": 132}, "result": {"width": 4096}}
    why = figures._not_drawn(record, {"width": 128}, ("width",))
    assert "width 4096" in why and reference.NOT_RECORDED not in why and "H100" in why
    listed = {**record, "result": {"samples": 1024, "versions": ["as written", "fixed"]}}
    assert "samples 1024, other versions" in figures._not_drawn(
        listed, {"samples": 64, "versions": ["x"]}, ("samples", "versions")
    )
    assert figures._not_drawn(None, {"width": 128}, ("width",)) == reference.NOT_RECORDED


# ================================================================ readable as a notebook shows it

# The colour-blind-safe palette of Okabe and Ito (2002), written out here so that the test does not read it from
# the code it checks. Black is one of its eight; the course keeps it for marks (a budget, float16's limits).
OKABE_ITO = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7"}
BLACK = "#000000"
# A reader matches legend entries to lines one by one; past about eight (the palette's size) the match is lost.
MOST_LEGEND_ENTRIES = 8
# What each labelled line says it is, by its gid "OWNER|NAME": a measurement here or on the reference machine, a
# published measurement, a figure known but not measured (a spec sheet, theory, a model), a fit to a measurement,
# a law the lesson computes, or a mark the data is read against (a budget, a limit, a ridge).
OWNERS = {"yours", "reference", "published", "known", "fit", "model", "mark"}
MEASURED = ("yours", "reference")
DEVICE = re.compile(r"^(cpu|cuda:\d+|mps(:\d+)?|xpu:\d+)\b")
READERS_DEVICE = re.compile(r"\((cpu|cuda:\d+|mps(:\d+)?|xpu:\d+)\)|\b(cpu|cuda:\d+)\b")
TOUCHING_PX = 1.0


# ---------------------------------------------------------------- the figures, as a notebook shows them


def notebook_figsizes() -> dict[str, tuple[float, float]]:
    """Each panel's figsize as its lesson passes it to gpulab.widgets.Panel, or Panel's default (9.0, 3.6)."""
    by_function = {draw.__name__: name for name, draw in figures.PANELS.items()}
    sizes = {}
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            for start in (match.end() for match in re.finditer(r"\bPanel\(", source)):
                depth, end = 1, start
                while depth and end < len(source):
                    depth += {"(": 1, ")": -1}.get(source[end], 0)
                    end += 1
                call = source[start:end]
                drawn = re.search(r"plot=gpulab\.figures\.(\w+)", call)
                size = re.search(r"figsize=\(\s*([\d.]+)\s*,\s*([\d.]+)\s*\)", call)
                if drawn and drawn.group(1) in by_function:
                    sizes[by_function[drawn.group(1)]] = (float(size[1]), float(size[2])) if size else (9.0, 3.6)
    return sizes


FIGSIZES = notebook_figsizes()
ACCELERATOR = re.compile(r"^(cuda|mps|xpu)(:\d+)?$")


def read_on_a_cpu(name: str, result: dict) -> dict:
    """``result`` as a reader without a GPU would measure it: the same settings and numbers, on the CPU."""
    shaped = json.loads(json.dumps(result))
    if "device" in shaped:
        shaped["device"] = "cpu"
    if "backend" in shaped:
        shaped["backend"] = "gloo"
    for key, value in shaped.items():
        if isinstance(value, dict) and any(ACCELERATOR.match(series) for series in value):
            kept = {series: v for series, v in value.items() if not ACCELERATOR.match(series)}
            shaped[key] = kept or {"cpu": next(v for series, v in value.items() if ACCELERATOR.match(series))}
        if key in ("bytes", "peak_bytes"):
            shaped[key] = {series: v for series, v in value.items() if "CUDA allocator" not in series}
    if shaped.get("budget_applied") == "allocator":
        shaped["budget_applied"] = "estimate"
    if name == "02_bandwidth":
        shaped["gbps"] = {"host memory copy": result["gbps"]["host→device pinned"]}
        shaped["pin_seconds"] = []
    return shaped


def on_more_gpus(result: dict) -> dict:
    """``result`` with a second number of processes beside each one measured (lesson 06 on a node of GPUs)."""
    shaped = json.loads(json.dumps(result))
    for key, value in result.items():
        if isinstance(value, dict) and "2 processes" in value:
            more = value["2 processes"]
            shaped[key]["4 processes"] = (
                {k: v * 1.5 for k, v in more.items()} if key == "fit" else [1.5 * v for v in more]
            )
    return dict(shaped, backend="nccl", device="cuda:0")


def cases():
    found = []
    for name in figures.PANELS:
        record = reference.load(name)
        if record is None:  # a panel not yet recorded on a GPU is drawn with RESULTS only, if it is there
            continue
        shipped = record["result"]
        found += [
            (name, "on the H100, beside its record", shipped, True),
            (name, "on a CPU, beside the H100 record", read_on_a_cpu(name, shipped), True),
            (name, "on a CPU, nothing recorded", read_on_a_cpu(name, shipped), False),
        ]
    for name in ("06_allreduce",):
        found += [(name, "on 4 GPUs, nothing recorded", on_more_gpus(reference.load(name)["result"]), False)]
    for name, results in (RESULTS | UNRECORDED).items():
        found += [(name, f"RESULTS[{i}], nothing recorded", result, False) for i, result in enumerate(results)]
    return found


def sharding_result(device: str, backend: str, peaks: bool) -> dict:
    """A sharding sweep over 4 ranks as lesson 08's panel gives it (made up from a 2-core machine's run)."""
    per_rank = [
        {"parameters": 16834600 // n, "gradients": 16834600 // n, "optimizer state": 33669200 // n}
        for n in (1, 2, 3, 4)
    ]
    return {
        "ranks": [1, 2, 3, 4],
        "state_bytes": {"DDP": [per_rank[0]] * 4, "FSDP": per_rank},
        "peak_bytes": {s: [8e7, 9e7, 9e7, 9e7] if peaks else [None] * 4 for s in ("DDP", "FSDP")},
        "allocated_bytes": {
            "DDP": [6.8e7] * 4 if peaks else [None] * 4,
            "FSDP": [6.8e7, 3.5e7, 2.4e7, 1.9e7] if peaks else [None] * 4,
        },
        "step_s": {"DDP": [0.21, 0.18, 0.2, 0.22], "FSDP": [0.28, 0.46, 0.5, 0.55]},
        "loss": {"DDP": [0.0255, 0.0491, 0.05, 0.051], "FSDP": [0.0255, 0.0491, 0.05, 0.051]},
        "width": 1024,
        "depth": 4,
        "parameters": 4208650,
        "backend": backend,
        "device": device,
    }


def fusion_result(device: str) -> dict:
    """Lesson 09's fusion panel as a reader gets it (a 2-core machine's run; on "cuda:0" the same, ×100 faster,
    made up): the eager chain, F.gelu, the compiled chain and a copy, 16 KiB to 16 MiB."""
    faster = 100 if device != "cpu" else 1
    seconds = {
        "eager chain": [2.8e-05, 5.5e-05, 0.000133, 0.000465, 0.0019, 0.0363],
        "F.gelu (one kernel)": [8.3e-06, 2.8e-05, 5.7e-05, 0.00023, 0.0009, 0.0035],
        "torch.compile": [2.4e-05, 3.4e-05, 7.8e-05, 0.00026, 0.00095, 0.0037],
    }
    sizes = [16384, 65536, 262144, 1048576, 4194304, 16777216]
    gbps = {
        name: [faster * (18 if name == "eager chain" else 2) * s / t / 1e9 for s, t in zip(sizes, times)]
        for name, times in seconds.items()
    }
    gbps["copy (x.clone())"] = [faster * v for v in (20.7, 53.1, 111.5, 143.1, 169.3, 64.5)]
    return {
        "device": device,
        "sizes": sizes,
        "seconds": {k: [t / faster for t in v] for k, v in seconds.items()},
        "gbps": gbps,
        "bytes_ratio": 9.0,
    }


def compile_result(device: str) -> dict:
    """Lesson 09's compile panel at batch 8 and width 128 (where lesson 07's H100 record is drawn): on a CPU, eager
    and compiled (a 2-core machine's run); on "cuda:0" also reduce-overhead and a CUDA graph (made up)."""
    versions = ["eager", "torch.compile"] + (["reduce-overhead", "CUDA graph"] if device != "cpu" else [])
    ms = [0.32, 0.41, 0.09, 0.06][: len(versions)]
    first = [0.027, 2.5, 4.1, 0.4][: len(versions)]
    return {
        "device": device,
        "batch": 8,
        "width": 128,
        "versions": versions,
        "stage": list(range(len(versions))),
        "ms_per_step": {"one step": ms},
        "first_call_s": {"first call": first},
    }


# Panels with no GPU record yet, drawn with results shaped as a reader's.
UNRECORDED = {
    "08_sharding": [sharding_result("cpu", "gloo", False), sharding_result("cuda:0", "nccl", True)],
    "09_fusion": [fusion_result("cpu"), fusion_result("cuda:0")],
    "09_compile": [compile_result("cpu"), compile_result("cuda:0")],
}


CASES = {f"{name}, {which}": (name, result, recorded) for name, which, result, recorded in cases()}


@functools.cache
def drawn(case: str):
    """The case's figure, laid out and drawn at the notebook's size and dpi, and its renderer."""
    name, result, recorded = CASES[case]
    with pytest.MonkeyPatch.context() as patch:
        if not recorded:
            patch.setattr(reference, "load", lambda panel: None)
        figure = plots.new_figure(FIGSIZES[name])
        figures.PANELS[name](json.loads(json.dumps(result)), figure)
    figure.set_dpi(100)  # plots.to_png's
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return figure, canvas.get_renderer()


def test_every_panel_is_shown_by_a_lesson_at_a_size_read_from_it():
    assert set(FIGSIZES) == set(figures.PANELS)
    assert FIGSIZES["02_bandwidth"] == (11.0, 3.6) and FIGSIZES["02_sync"] == (9.0, 3.6)


# ---------------------------------------------------------------- what a figure shows


def visible(text) -> bool:
    return text is not None and text.get_visible() and bool(text.get_text().strip())


def legends(figure) -> list:
    return [*figure.legends, *(legend for ax in figure.axes if (legend := ax.get_legend()) is not None)]


def shown_ticks(axis) -> list:
    # The ticks the axis draws: those in its view (Axis.draw asks the same).
    return axis._update_ticks()


def texts(figure) -> list[tuple[str, object]]:
    """(where, Text) for every piece of text the figure shows."""
    found = [
        ("suptitle", figure._suptitle),
        ("note", figure._supxlabel),
        ("supylabel", figure._supylabel),
        *(("figure text", text) for text in figure.texts),
    ]
    for legend in legends(figure):
        found += [("legend title", legend.get_title())] + [("legend", text) for text in legend.get_texts()]
    for index, ax in enumerate(figure.axes):
        where = f"plot {index + 1}"
        found += [(f"{where} title", title) for title in (ax.title, ax._left_title, ax._right_title)]
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            found += [(f"{where} {name} label", axis.label), (f"{where} {name} offset", axis.get_offset_text())]
            for tick in shown_ticks(axis):
                found += [(f"{where} {name} tick", label) for label in (tick.label1, tick.label2)]
        found += [(f"{where} text", text) for text in ax.texts]
    unique = {id(text): (where, text) for where, text in reversed(found)}  # the figure's texts hold its suptitle too
    return [(where, text) for where, text in reversed(unique.values()) if visible(text)]


def series(ax) -> list:
    """Every labelled thing drawn on ``ax``: lines, and areas (bars, shaded spans) with a label."""
    drawn_things = [*ax.get_lines(), *ax.patches, *ax.collections]
    return [a for a in drawn_things if a.get_visible() and a.get_label() and not a.get_label().startswith("_")]


def colour(artist) -> str:
    value = artist.get_color() if hasattr(artist, "get_color") and not hasattr(artist, "get_paths") else None
    if value is None:
        faces = artist.get_facecolor()
        value = faces[0] if len(getattr(faces, "shape", ())) == 2 else faces
    return to_hex(value, keep_alpha=False)


def owner(artist) -> str:
    return (artist.get_gid() or "").split("|", 1)[0]


PUBLISHED = {entry.key: entry for entry in reference.PUBLISHED}


def what_and_who(artist) -> tuple[str | None, str | None]:
    """What a series measured and who measured it, as its label says: a measurement's label is "WHAT · WHO" (or
    only WHO where the series are devices); a published figure's WHO is its GPU and source; anything else
    (a model, a spec sheet, a fit, a mark) is its label's first part, measured by no one."""
    label = artist.get_label()
    if owner(artist) in MEASURED:
        what, _, who = label.rpartition(" · ")
        return what or None, who
    if owner(artist) == "published":
        entry = PUBLISHED[artist.get_gid().split("|", 1)[1]]
        return None, f"published: {entry.gpu} ({entry.short})"
    return label.split(" · ")[0], None


CASE_IDS = list(CASES)


# ---------------------------------------------------------------- (a) no text over other text


def overlapping(a, b) -> bool:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width > TOUCHING_PX and height > TOUCHING_PX


@pytest.mark.parametrize("case", CASE_IDS)
def test_no_text_runs_into_other_text_or_off_the_figure(case):
    figure, renderer = drawn(case)
    shown = [(where, text, text.get_window_extent(renderer)) for where, text in texts(figure)]
    assert shown, case
    width, height = figure.bbox.width, figure.bbox.height
    outside = [
        f"{where} {text.get_text()!r}"
        for where, text, box in shown
        if box.x0 < -TOUCHING_PX or box.y0 < -TOUCHING_PX or box.x1 > width + TOUCHING_PX or box.y1 > height + 1
    ]
    assert outside == [], f"{case}: text cut off at the figure's edge: {outside}"
    clashes = [
        f"{where_a} {a.get_text()!r} and {where_b} {b.get_text()!r}"
        for i, (where_a, a, box_a) in enumerate(shown)
        for where_b, b, box_b in shown[i + 1 :]
        if overlapping(box_a, box_b)
    ]
    assert clashes == [], f"{case}: text over text: {clashes}"
    for legend in legends(figure):
        own = {id(text) for text in legend.get_texts()} | {id(legend.get_title())}
        box = legend.get_window_extent(renderer)
        under = [
            f"{where} {text.get_text()!r}" for where, text, b in shown if id(text) not in own and overlapping(box, b)
        ]
        assert under == [], f"{case}: a legend over text: {under}"


# ---------------------------------------------------------------- (b) a colour stands for one thing


@pytest.mark.parametrize("case", CASE_IDS)
def test_a_colour_stands_for_one_thing_in_a_figure(case):
    """All the series of one colour measured one thing (on any machine: "pinned", solid here and dashed on the
    reference GPU) or came from one machine or source (every series of the reader's cpu, or of one publication).
    A model, a spec sheet or a fit has its colour to itself, shared only by what it is of. Black is for marks."""
    figure, _ = drawn(case)
    by_colour: dict[str, list] = {}
    for ax in figure.axes:
        for artist in series(ax):
            if colour(artist) != BLACK:
                by_colour.setdefault(colour(artist), []).append(artist)
    mixed = []
    for hex_colour, artists in by_colour.items():
        whats = {what_and_who(a)[0] for a in artists}
        whos = {what_and_who(a)[1] for a in artists}
        if not (len(whats) == 1 and None not in whats) and not (len(whos) == 1 and None not in whos):
            mixed.append(f"{hex_colour}: {sorted({a.get_label() for a in artists})}")
    assert mixed == [], f"{case}: one colour for different things: {mixed}"


# ---------------------------------------------------------------- (c) a measured series names its device


def readers_devices(result: dict) -> set[str]:
    named = {series for value in result.values() if isinstance(value, dict) for series in value if DEVICE.match(series)}
    return named | {result.get("device", "cpu")}


@pytest.mark.parametrize("case", CASE_IDS)
def test_every_series_names_the_device_it_ran_on(case):
    figure, _ = drawn(case)
    name, result, recorded = CASES[case]
    record = reference.load(name) if recorded else None
    unnamed = []
    for ax in figure.axes:
        for artist in series(ax):
            label, kind = artist.get_label(), owner(artist)
            what, who = what_and_who(artist)
            if kind not in OWNERS:
                unnamed.append(f"{label!r}: its gid {artist.get_gid()!r} does not say what it is")
            elif kind == "yours":
                device = DEVICE.match(who)
                if device is None or device.group(1) not in readers_devices(result):
                    unnamed.append(f"{label!r}: measured here, but names no device of this reader's")
                if what and READERS_DEVICE.search(what):
                    unnamed.append(f"{label!r}: a device in what it measured")
            elif kind == "reference":
                machine = (reference.gpu_label(record), reference.cpu_label(record)) if record else ()
                if "(reference)" not in who or not any(m in who for m in machine):
                    unnamed.append(f"{label!r}: recorded on the reference machine, but does not name it")
                if READERS_DEVICE.search(what or ""):
                    unnamed.append(f"{label!r}: recorded on the reference machine, labelled with a reader's device")
            elif kind == "published":
                entry = PUBLISHED[artist.get_gid().split("|", 1)[1]]
                if not label.startswith(f"published: {entry.gpu}"):
                    unnamed.append(f"{label!r}: published, but does not name its GPU first")
    assert unnamed == [], f"{case}: {unnamed}"


# ---------------------------------------------------------------- (d) colour-blind safe, never colour alone


def style(artist) -> tuple:
    if hasattr(artist, "get_linestyle") and hasattr(artist, "get_marker"):
        # Line2D.get_linestyle() says "--" for every dash pattern; the pattern itself tells two apart.
        dashes = getattr(artist, "_unscaled_dash_pattern", None)
        return ("line", artist.get_linestyle(), str(dashes), artist.get_marker())
    return ("area", artist.get_hatch())


@pytest.mark.parametrize("case", CASE_IDS)
def test_colours_are_colour_blind_safe_and_never_the_only_difference(case):
    figure, _ = drawn(case)
    off_palette, black_series, alike = [], [], []
    for index, ax in enumerate(figure.axes):
        by_style: dict[tuple, set[str]] = {}
        for artist in series(ax):
            if colour(artist) not in OKABE_ITO:
                off_palette.append(f"{artist.get_label()!r}: {colour(artist)}")
            if colour(artist) == BLACK and owner(artist) != "mark":
                black_series.append(artist.get_label())
            by_style.setdefault(style(artist), set()).add(artist.get_label())
        alike += [f"plot {index + 1}: {sorted(labels)}" for labels in by_style.values() if len(labels) > 1]
    assert off_palette == [], f"{case}: colours outside the Okabe–Ito palette: {off_palette}"
    assert black_series == [], f"{case}: black is for marks, not series: {black_series}"
    assert alike == [], f"{case}: series told apart by colour alone (same line style and marker): {alike}"


# ---------------------------------------------------------------- (e) legends a reader can take in


@pytest.mark.parametrize("case", CASE_IDS)
def test_legends_are_short_beside_the_plots_and_name_every_series(case):
    """At most eight entries in a legend; a figure legend beside the plots, not over them; every series named in
    one: by its own label, or by what it measured and by who measured it where a legend gives those apart (a
    colour and marker for "pinned", a line style for "H100 SXM (reference)")."""
    figure, renderer = drawn(case)
    shown = legends(figure)
    entries = {text.get_text() for legend in shown for text in legend.get_texts()}
    long = [len(legend.get_texts()) for legend in shown if len(legend.get_texts()) > MOST_LEGEND_ENTRIES]
    assert long == [], f"{case}: legends of {long} entries"
    for legend in figure.legends:
        box = legend.get_window_extent(renderer)
        assert not any(overlapping(box, ax.get_window_extent(renderer)) for ax in figure.axes), case
    unnamed = []
    for ax in figure.axes:
        for artist in series(ax):
            what, who = what_and_who(artist)
            label = artist.get_label()
            if label not in entries and not (owner(artist) in MEASURED and {what or who, who} <= entries):
                unnamed.append(label)
    assert unnamed == [], f"{case}: series no legend names: {unnamed}"
