"""gpulab.plots: axes a reader can read, the reader's series beside a reference, notes, colours, PNGs."""

import base64
import html

import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

from gpulab import plots, reference


def labelled_ticks(ax, axis="y"):
    ax.figure.canvas.draw()
    lo, hi = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    return [
        t.get_text()
        for t in ticks
        if t.get_text() and lo * 0.999 <= t.get_position()[1 if axis == "y" else 0] <= hi * 1.001
    ]


@pytest.mark.parametrize(
    "low, high", [(0.6, 0.9), (12.0, 14.0), (1.0, 1.5), (3e4, 5e4), (0.01, 0.5), (1e-3, 1e5), (7.9, 8.1)]
)
def test_a_log_axis_shows_at_least_three_labelled_values_whatever_its_range(low, high):
    figure = plots.new_figure((4, 3))
    ax = figure.subplots()
    ax.plot([1, 2, 3], [low, (low + high) / 2, high])
    plots.log_axis(ax, "y")
    labels = labelled_ticks(ax)
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels


@pytest.mark.parametrize("low, high, minor", [(1.0, 1e3, True), (1e-2, 1e2, True), (1e-12, 1.0, False)])
def test_minor_ticks_only_where_a_log_axis_spans_few_decades(low, high, minor):
    figure = plots.new_figure((4, 3))
    ax = figure.subplots()
    ax.plot([1, 2], [low, high])
    plots.log_axis(ax, "y")
    figure.canvas.draw()
    assert (len(ax.yaxis.get_minorticklocs()) > 0) == minor


def test_a_sizes_axis_labels_powers_of_two_without_crowding():
    figure = plots.new_figure((4, 3))
    ax = figure.subplots()
    ax.plot([2**k for k in range(5, 14)], range(9))
    plots.log2_axis(ax)
    labels = labelled_ticks(ax, "x")
    assert 3 <= len(labels) <= 8 and "1024" in labels and all(float(v).is_integer() for v in labels), labels


def test_a_note_sits_outside_every_axes():
    figure = plots.new_figure((6, 3))
    axes = figure.subplots(1, 2)
    for ax in axes:
        ax.plot([1, 2], [1, 2])
    plots.note(axes[1], "no accelerator here")
    plots.note(figure, "no GPU reference recorded yet")
    figure.canvas.draw()
    text = figure._supxlabel
    assert "no accelerator here" in text.get_text() and "no GPU reference" in text.get_text()
    box = text.get_window_extent()
    assert not any(box.overlaps(ax.get_window_extent()) for ax in axes)


def reference_record(result, name="Test GPU"):
    return {
        "device": {"name": name, "type": "cuda"},
        "torch": "2.11",
        "recorded": "2026-11-21",
        "command": "gpulab bench",
        "result": result,
    }


def test_series_draws_the_reference_in_the_readers_units_and_names_only_its_accelerators():
    mine = {"sizes": [64, 128], "seconds": {"cpu": [1e-3, 8e-3]}}
    theirs = {"sizes": [64, 128, 256], "seconds": {"cpu": [2e-3, 9e-3, 5e-2], "cuda:0": [1e-3, 8e-3, 3e-2]}}
    figure = plots.new_figure()
    ax = figure.subplots()
    lines = plots.series(
        ax, mine, x="sizes", y="seconds", scale=1e3, by_device=True, reference=reference_record(theirs)
    )
    by_gid = {line.get_gid(): line for line in lines}
    assert set(by_gid) == {"yours|cpu", "reference|cuda:0"}  # the reference machine's CPU is left out
    assert list(by_gid["reference|cuda:0"].get_ydata()) == list(by_gid["yours|cpu"].get_ydata()) == [1.0, 8.0]
    assert list(by_gid["reference|cuda:0"].get_xdata()) == [64, 128]  # clipped to your sizes
    assert "Test GPU" in by_gid["reference|cuda:0"].get_label() and "Test GPU" not in by_gid["yours|cpu"].get_label()
    assert by_gid["reference|cuda:0"].get_linestyle() == "--"


def test_series_derives_the_same_quantity_for_both_and_labels_methods_with_the_gpu():
    mine = {"sizes": [1, 2], "gbps": {"host memory copy": [4.0, 8.0]}}
    theirs = {"sizes": [1, 2], "gbps": {"host→device pinned": [4.0, 8.0]}}
    ax = plots.new_figure().subplots()
    lines = plots.series(
        ax,
        mine,
        x="sizes",
        y="gbps",
        derive=lambda n, g: n / g,
        reference=reference_record(theirs),
        label=lambda name: name.split(" ", 1)[-1] if "→" in name else name,
    )
    assert [list(line.get_ydata()) for line in lines] == [[0.25, 0.25], [0.25, 0.25]]
    assert lines[1].get_label() == "pinned · Test GPU (reference)"


def test_known_figures_are_dotted_each_in_a_pattern_and_colour_of_its_own_and_say_what_they_are():
    ax = plots.new_figure().subplots()
    level = plots.known_level(ax, 31.5, "PCIe 4.0 ×16 (theoretical)")
    curve = plots.known_curve(ax, [1, 2], [3, 4], "a model")
    assert level.get_linestyle() == ":" and curve.get_linestyle() not in ("-", "None")
    assert level._unscaled_dash_pattern != curve._unscaled_dash_pattern and level.get_color() != curve.get_color()
    assert level.get_gid().startswith("known|") and curve.get_gid() == "known|a model"


def test_figures_render_to_png_and_save(tmp_path):
    figure = plots.new_figure((4, 3))
    ax = figure.subplots()
    ax.plot([64, 128, 256], [0.5, 2, 30])
    plots.log2_axis(ax)
    plots.log_axis(ax, "y")
    plots.mark_x(ax, 128, "crossover")
    plots.note(ax, "a note")
    assert plots.to_png(figure).startswith(b"\x89PNG")
    saved = plots.save(figure, tmp_path / "sub" / "plot.png")
    assert saved.read_bytes().startswith(b"\x89PNG")
    figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert "128" in labels  # plain numbers, not 2^7


def test_a_bytes_axis_is_labelled_in_binary_units():
    figure = plots.new_figure((4, 3))
    ax = figure.subplots()
    ax.plot([4096, 2**20, 2**30], [1, 10, 20])
    plots.bytes_axis(ax)
    figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert ax.get_xscale() == "log"
    assert "4 KiB" in labels and 3 <= len(labels) <= 8, labels
    assert all(label.split()[1] in {"KiB", "MiB", "GiB"} for label in labels)


@pytest.mark.parametrize("panes", [1, 3])
def test_a_bytes_axis_labels_do_not_overlap_in_a_narrow_pane(panes):
    # Lesson 02's bandwidth figure: three panes side by side over 4 KiB … 64 MiB.
    figure = plots.new_figure((3.2 * panes, 3.2))
    axes = figure.subplots(1, panes) if panes > 1 else [figure.subplots()]
    for ax in axes:
        ax.plot([4096, 64 * 2**20], [1, 10])
        plots.bytes_axis(ax)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in axes:
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        assert len(boxes) >= 3
        assert all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:])), "tick labels overlap"


def test_each_device_type_has_its_colour():
    assert plots.color_for("cuda:1") == plots.DEVICE_COLORS["cuda"]
    assert plots.color_for(torch.device("cpu")) == plots.DEVICE_COLORS["cpu"]


def test_a_reference_measured_on_a_cpu_names_that_cpu_not_the_gpu_and_keeps_its_range():
    mine = {"threads": [1, 2], "speedup": {"measured": [1.0, 1.8]}}
    record = reference_record({"threads": [1, 2, 4, 8, 16], "speedup": {"measured": [1.0, 1.9, 3.6, 6.5, 11.0]}})
    record["devices"] = [
        {"device": "cpu", "name": "Test CPU", "type": "cpu", "cores": 16},
        {"device": "cuda:0", "name": "Test GPU", "type": "cuda"},
    ]
    ax = plots.new_figure().subplots()
    lines = plots.series(ax, mine, x="threads", y="speedup", reference=record, on_reference_cpu=True)
    theirs = lines[1]
    assert theirs.get_label() == "measured · Test CPU, 16 cores (reference)" and "Test GPU" not in theirs.get_label()
    assert list(theirs.get_xdata()) == [1, 2, 4, 8, 16]  # not clipped to your two thread counts
    assert plots.reference_cpu({"devices": []}) == "the reference machine's CPU"


def test_show_displays_a_figure_as_an_image_with_its_text_alternative(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objects, raw=False: shown.extend((raw, o) for o in objects))
    figure = plots.new_figure()
    axes = figure.subplots()
    axes.plot([1, 2], [3, 4], label="copies · cpu")
    axes.set_xlabel("size")
    plots.show(figure, summary="peak 4 GB/s")
    ((raw, data),) = shown
    assert raw and base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    alt = data["text/plain"]
    assert "copies · cpu" in alt and "size" in alt and alt.endswith("peak 4 GB/s.")
    assert f"alt='{html.escape(alt)}'" in data["text/html"] and data["image/png"] in data["text/html"]


def test_a_kind_keeps_its_colour_and_marker_across_a_figure_and_no_other_kind_takes_them():
    figure = plots.new_figure()
    blue, orange = plots.OKABE_ITO["blue"], plots.OKABE_ITO["orange"]
    assert plots.color_of(figure, "pinned", orange) == orange and plots.color_of(figure, "pinned") == orange
    assert plots.color_of(figure, "pageable", orange) != orange  # asked for, but taken
    kinds = ["pinned", "pageable", "a", "b", "c", "d", "e"]
    colors = [plots.color_of(figure, kind) for kind in kinds]
    assert len(set(colors)) == 7 and plots.MARK_COLOR not in colors and blue in colors
    assert set(colors) | {plots.MARK_COLOR} == set(plots.OKABE_ITO.values())
    markers = [plots.marker_of(figure, kind) for kind in kinds]
    assert len(set(markers)) == 7 and plots.marker_of(figure, "pinned") == markers[0]
    assert plots.color_of(plots.new_figure(), "pageable", orange) == orange  # each figure its own


def test_series_label_what_was_measured_and_where_and_share_a_colour_across_machines_only():
    mine = {"device": "cuda:0", "sizes": [1, 2], "gbps": {"pinned": [1.0, 2.0], "pageable": [0.5, 1.0]}}
    theirs = {"device": "cuda:0", "sizes": [1, 2], "gbps": {"pinned": [3.0, 4.0], "pageable": [1.0, 2.0]}}
    figure = plots.new_figure()
    lines = plots.series(figure.subplots(), mine, x="sizes", y="gbps", reference=reference_record(theirs))
    by_label = {line.get_label(): line for line in lines}
    assert set(by_label) == {
        "pinned · cuda:0",
        "pageable · cuda:0",
        "pinned · Test GPU (reference)",
        "pageable · Test GPU (reference)",
    }
    here, there = by_label["pinned · cuda:0"], by_label["pinned · Test GPU (reference)"]
    assert (here.get_color(), here.get_marker()) == (there.get_color(), there.get_marker())
    assert here.get_linestyle() == "-" and there.get_linestyle() == "--"
    other = by_label["pageable · cuda:0"]
    assert other.get_color() != here.get_color() and other.get_marker() != here.get_marker()


def test_series_by_device_give_the_reference_gpu_a_colour_of_its_own():
    mine = {"sizes": [64, 128], "seconds": {"cpu": [1e-3, 8e-3], "cuda:0": [1e-4, 2e-4]}}
    theirs = {"sizes": [64, 128], "seconds": {"cuda:0": [1e-5, 2e-5]}}
    lines = plots.series(
        plots.new_figure().subplots(), mine, x="sizes", y="seconds", by_device=True, reference=reference_record(theirs)
    )
    assert [line.get_label() for line in lines] == ["cpu", "cuda:0", "Test GPU (reference)"]
    assert lines[0].get_color() == plots.DEVICE_COLORS["cpu"] and lines[1].get_color() == plots.DEVICE_COLORS["cuda"]
    assert lines[2].get_color() == plots.DEVICE_COLORS["reference"]
    assert len({line.get_marker() for line in lines}) == 3


def test_a_long_legend_lists_what_was_measured_by_colour_and_who_by_line_style():
    sizes = [1, 2]
    kinds = ["pageable", "pinned", "pinned + non_blocking", "host copy", "pin_memory()"]
    mine = {"device": "cuda:0", "sizes": sizes, "gbps": {kind: [1.0, 2.0] for kind in kinds}}
    figure = plots.new_figure((11, 3.6))
    ax = figure.subplots()
    plots.series(ax, mine, x="sizes", y="gbps", reference=reference_record(dict(mine)))
    plots.known_level(ax, 31.5, "PCIe 4.0 ×16, 31.5 GB/s (theoretical)")
    plots.legend(figure)
    key, rest = ([text.get_text() for text in legend.get_texts()] for legend in figure.legends)
    assert key == [*kinds, "cuda:0", "Test GPU (reference)"] and rest == ["PCIe 4.0 ×16, 31.5 GB/s (theoretical)"]
    swatches = dict(zip(key, figure.legends[0].legend_handles))
    pinned = next(line for line in ax.get_lines() if line.get_label() == "pinned · cuda:0")
    assert (
        swatches["pinned"].get_color() == pinned.get_color() and swatches["pinned"].get_marker() == pinned.get_marker()
    )
    assert swatches["Test GPU (reference)"].get_linestyle() != swatches["cuda:0"].get_linestyle()


def test_a_legend_above_never_runs_into_the_one_beside_the_plots():
    # Lesson 06's all-reduce on four GPUs: measured series by colour and by who beside the plots (a long
    # reference name), fits, rings and a long published label above them
    figure = plots.new_figure()
    left, right = figure.subplots(1, 2)
    host = "gloo on the 16-core host of the H100 SXM machine (reference)"
    for n in (2, 3, 4):
        left.plot([1, 2], [n, n + 1], "-o", label=plots.named(f"{n} processes", "cuda:0"), gid=f"yours|{n}")
        left.plot([1, 2], [n, n + 2], "--", label=f"{n} processes · α + β·S fitted: α = 1,390 µs", gid=f"fit|{n}")
    left.plot([1, 2], [2, 3], "--", label=plots.named("2 processes", host), gid="reference|2")
    left.plot([1], [2], "o", label=plots.NOISY_LABEL, gid="mark|noisy")
    right.axhline(
        2,
        label="published: H200 SXM 141GB ×8, all_reduce bus bandwidth, 16 MiB messages, 219.9 GB/s "
        "(stas00/ml-engineering)",
        gid="published|a",
    )
    plots.legend(figure)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [legend.get_window_extent(renderer) for legend in figure.legends]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    assert all(box.x1 <= figure.bbox.x1 + 1 for box in boxes)  # nothing drawn off the figure either


def test_a_marks_label_near_the_right_edge_goes_on_the_left_of_its_line():
    figure = plots.new_figure((6, 3))
    ax = figure.subplots()
    ax.plot([1, 100], [1, 2], label="x · cpu")
    plots.mark_x(ax, 95, "largest batch under the budget")
    plots.mark_x(ax, 5, "ridge")
    plots.legend(figure)
    right, left = ax.texts
    assert right.get_horizontalalignment() == "right" and right.xyann[0] < 0
    assert left.get_horizontalalignment() == "left" and left.xyann[0] > 0


def _drawn_marks(ax):
    return {line.get_gid(): line for line in ax.get_lines() if (line.get_gid() or "").startswith("mark|")}


def test_series_shade_each_points_spread_and_ring_the_points_within_noise():
    # Yours: 3 points, the middle one wide (IQR 1.0 around 2.0 ms); the reference: a record marked noisy at 128.
    mine = {
        "sizes": [64, 128, 256],
        "seconds": {"cpu": [1e-3, 2e-3, 4e-3]},
        "spread": {"seconds": {"cpu": [[0.99e-3, 1.01e-3], [1.5e-3, 2.5e-3], [3.98e-3, 4.02e-3]]}},
    }
    theirs = {"sizes": [64, 128, 256], "seconds": {"cuda:0": [1e-4, 5e-4, 2e-4]}}
    record = reference_record(theirs)
    record["noisy"] = {"rule": reference.NOISE_RULE, "points": {"seconds": {"cuda:0": [128]}}}
    figure = plots.new_figure()
    ax = figure.subplots()
    plots.series(ax, mine, x="sizes", y="seconds", scale=1e3, by_device=True, reference=record)
    bands = [c for c in ax.collections if (c.get_gid() or "").startswith("spread|")]
    assert [band.get_gid() for band in bands] == ["spread|cpu"]  # the reference measured no spread
    vertices = bands[0].get_paths()[0].vertices
    assert vertices[:, 1].min() == pytest.approx(0.99) and vertices[:, 1].max() == pytest.approx(4.02)
    rings = _drawn_marks(ax)["mark|noisy"]
    assert sorted(zip(rings.get_xdata(), rings.get_ydata())) == [(128, pytest.approx(0.5)), (128, pytest.approx(2.0))]
    assert rings.get_label() == plots.NOISY_LABEL and rings.get_markerfacecolor() == "none"
    # one line says what the rings and the shading mean
    assert f"{plots.NOISY_NOTE} · {plots.SPREAD_NOTE}" in figure._supxlabel.get_text().splitlines()


def test_a_line_drawn_by_hand_is_shaded_and_its_wide_points_ringed_as_a_series_is():
    figure = plots.new_figure()
    ax = figure.subplots()
    (line,) = ax.plot([1, 2, 3], [1.0, 2.0, 4.0], gid="yours|pin_memory")
    plots.shade(ax, line, [[0.99e-3, 1.01e-3], None, [3e-3, 5e-3]], scale=1e3)  # the middle point: no spread
    (band,) = [c for c in ax.collections if c.get_gid() == "spread|pin_memory"]
    vertices = band.get_paths()[0].vertices
    assert vertices[:, 1].min() == pytest.approx(0.99) and vertices[:, 1].max() == pytest.approx(5.0)
    rings = _drawn_marks(ax)["mark|noisy"]
    assert list(zip(rings.get_xdata(), rings.get_ydata())) == [(3, 4.0)]  # IQR 2 around 4: wide
    assert f"{plots.NOISY_NOTE} · {plots.SPREAD_NOTE}" in figure._supxlabel.get_text().splitlines()
    (plain,) = ax.plot([1, 2], [1.0, 2.0], gid="yours|other")
    plots.shade(ax, plain, None)  # nothing measured: nothing drawn
    assert [c.get_gid() for c in ax.collections] == ["spread|pin_memory"]


def test_series_of_clean_points_ring_nothing():
    mine = {
        "sizes": [64, 128],
        "seconds": {"cpu": [1e-3, 2e-3]},
        "spread": {"seconds": {"cpu": [[0.99e-3, 1.01e-3], [1.98e-3, 2.02e-3]]}},
    }
    figure = plots.new_figure()
    ax = figure.subplots()
    plots.series(ax, mine, x="sizes", y="seconds", by_device=True)
    assert "mark|noisy" not in _drawn_marks(ax) and plots.NOISY_NOTE not in (
        figure._supxlabel.get_text() if figure._supxlabel else ""
    )


def test_the_rings_are_read_out_as_points_not_as_a_curve():
    from gpulab import alt_text

    mine = {"sizes": [64, 128, 256], "seconds": {"cpu": [1e-3, 2e-3, 4e-3]}}
    mine["spread"] = {"seconds": {"cpu": [[0.5e-3, 1.5e-3], [1.99e-3, 2.01e-3], [3e-3, 5e-3]]}}
    figure = plots.new_figure()
    plots.series(figure.subplots(), mine, x="sizes", y="seconds", scale=1e3, by_device=True)
    text = alt_text.describe(figure, "")
    assert "within noise (ringed): 2 points, lowest 1 at 64, highest 4 at 256" in text, text


def test_a_reference_drawn_against_another_x_rings_its_marked_points():
    # The roofline draws GFLOP/s against intensity; the record marks batch 4 (it took longer than batch 16).
    theirs = {"batches": [1, 4, 16], "intensity": [0.5, 2.0, 8.0], "gflops": {"cuda:0": [10.0, 5.0, 160.0]}}
    record = reference_record(theirs)
    record["name"] = "00_roofline"
    mine = {"batches": [1, 4, 16], "intensity": [0.5, 2.0, 8.0], "gflops": {"cpu": [1.0, 2.0, 4.0]}}
    figure = plots.new_figure()
    ax = figure.subplots()
    plots.series(ax, mine, x="intensity", y="gflops", by_device=True, reference=record)
    rings = _drawn_marks(ax)["mark|noisy"]
    assert list(zip(rings.get_xdata(), rings.get_ydata())) == [(2.0, 5.0)]


def test_rings_in_one_plot_and_shading_in_another_share_one_line_of_notes():
    ringed = {"sizes": [64, 128], "seconds": {"cpu": [1e-3, 2e-3]}}
    ringed["spread"] = {"seconds": {"cpu": [[0.5e-3, 1.5e-3], [1.99e-3, 2.01e-3]]}}
    shaded = {"sizes": [64, 128], "seconds": {"cpu": [1e-3, 2e-3]}}
    shaded["spread"] = {"seconds": {"cpu": [[0.99e-3, 1.01e-3], [1.99e-3, 2.01e-3]]}}
    figure = plots.new_figure()
    left, right = figure.subplots(1, 2)
    plots.series(right, shaded, x="sizes", y="seconds", by_device=True)
    plots.series(left, ringed, x="sizes", y="seconds", by_device=True)
    assert figure._gpulab_notes == [f"{plots.NOISY_NOTE} · {plots.SPREAD_NOTE}"]
    assert plots.is_noise_note(figure._gpulab_notes[0]) and not plots.is_noise_note("no GPU reference recorded yet")
    plots.timed_once(figure)  # points that happen once say so on the same line
    assert figure._gpulab_notes == [f"{plots.NOISY_NOTE} · {plots.SPREAD_NOTE} · {plots.ONCE_NOTE}"]
    assert plots.is_noise_note(figure._gpulab_notes[0])
