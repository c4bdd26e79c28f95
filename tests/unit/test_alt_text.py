"""gpulab.alt_text: a figure's text alternative for the website's <img alt>, read back from the figure itself."""

import re

import numpy as np
import pytest
from matplotlib.artist import Artist
from matplotlib.lines import Line2D
from test_figures import UNRECORDED  # results shaped as a reader's, for panels with no GPU record yet
from test_reference import RESULTS  # the made-up results the published-figure tests draw every such panel with

from gpulab import alt_text, figures, plots, reference

KiB, MiB = 2**10, 2**20


def bandwidth_figure():
    figure = plots.new_figure()
    ax = figure.subplots()
    sizes = [KiB, 64 * KiB, MiB, 64 * MiB, 256 * MiB]
    ax.plot(sizes, [0.8, 5.0, 8.0, 10.1, 9.6], label="pinned (cpu)")
    ax.plot(sizes, [2.0, 20.0, 50.0, 55.0, 56.0], "--", label="pinned · H100 SXM, PCIe 5.0 ×16 (reference)")
    ax.plot(sizes, [1.0, 2.0, 3.0, 4.0, 5.0], label="_hidden helper")
    plots.bytes_axis(ax)
    plots.log_axis(ax, "y")
    ax.set_title("host → device")
    ax.set_xlabel("transfer size")
    ax.set_ylabel("achieved GB/s")
    plots.legend(figure)
    return figure


def test_a_log_log_line_gives_its_title_axes_ends_and_peak_in_the_axes_units():
    text = alt_text.describe(bandwidth_figure(), "pinned 10.1 GB/s at best")
    assert text.startswith("Plot “host → device”: x axis: transfer size, log scale, ")
    assert "y axis: achieved GB/s, log scale, " in text
    assert "pinned (cpu): from 0.8 GB/s at 1 KiB to 9.6 GB/s at 256 MiB, peak 10.1 GB/s at 64 MiB" in text
    # The reference's curve keeps its device label; its peak is its last point, so no peak is repeated.
    assert "pinned · H100 SXM, PCIe 5.0 ×16 (reference): from 2 GB/s at 1 KiB to 56 GB/s at 256 MiB." in text
    assert "hidden" not in text and "_" not in text
    assert text.endswith(". pinned 10.1 GB/s at best.")
    assert "\n" not in text and len(text) <= alt_text.MAX_CHARS


def test_numbers_have_three_significant_figures_and_whole_sizes_stay_whole():
    figure = plots.new_figure()
    ax = figure.subplots()
    ax.plot([1024, 4032, 65536], [1234.5678, 0.000123456, 768358.2], label="rate")
    plots.log2_axis(ax)
    ax.set_ylabel("GFLOP/s")  # a linear axis with matplotlib's own formatter: written as numbers
    text = alt_text.describe(figure)
    assert "rate: from 1230 GFLOP/s at 1024 to 768,000 GFLOP/s at 65,536." in text
    ax.lines[0].set_ydata([2e-7, 5e12, 51880])  # where a point was measured stays exact, what was measured does not
    assert (
        "rate: from 2e-7 GFLOP/s at 1024 to 51,900 GFLOP/s at 65,536, peak 5e12 GFLOP/s at 4032"
        in alt_text.describe(figure)
    )


def test_bars_give_each_bars_name_and_value_and_the_note_beside_it():
    figure = plots.new_figure()
    dtypes, ops = figure.subplots(1, 2)
    dtypes.bar(["float32", "bfloat16"], [51.23, 780.4], label="H100 SXM (reference)")
    dtypes.set_ylabel("TFLOP/s")
    bars = ops.barh(range(3), [0.131, 0.112, 0.0254])
    for index, calls in enumerate([5, 3, 1]):
        ops.annotate(f"×{calls}", xy=(bars[index].get_width(), index), xytext=(3, 0), textcoords="offset points")
    ops.set_yticks(range(3), ["mm", "addmm", "sum"])
    ops.set_xlabel("ms per step")
    ops.set_title("top ops")
    text = alt_text.describe(figure)
    assert "H100 SXM (reference): float32 51.2 TFLOP/s, bfloat16 780 TFLOP/s" in text
    assert "bars: mm 0.131 ms (×5), addmm 0.112 ms (×3), sum 0.0254 ms (×1)" in text
    assert "y axis: the names of the bars" in text
    assert "Notes on it" not in text  # each annotation went with its bar


def test_each_axes_is_described_in_order_after_the_figures_title_and_before_its_notes():
    figure = plots.new_figure()
    time_ax, rate_ax = figure.subplots(1, 2)
    time_ax.plot([1, 2, 3], [3.0, 2.0, 1.0], label="cpu")
    time_ax.set_title("time per call")
    time_ax.set_ylabel("µs per call")
    rate_ax.plot([1, 2, 3], [1.0, 5.0, 2.0], label="cuda:0")
    rate_ax.axhline(4.5, linestyle=":", label="PCIe 4.0 ×16, 4.5 GB/s (theoretical)")
    rate_ax.axvline(2.5, color="black", label="_mark")
    rate_ax.text(2, 5, "fastest here")
    rate_ax.set_title("rate")
    rate_ax.set_ylabel("GB/s")
    figure.suptitle("float32 copy")
    plots.note(figure, "no GPU reference recorded yet")
    text = alt_text.describe(figure, "cuda:0 5× faster")
    pieces = [
        "Figure: float32 copy. Plot 1 of 2, “time per call”: x axis: ",
        "cpu: from 3 µs at 1 to 1 µs at 3. Plot 2 of 2, “rate”: ",
        "cuda:0: from 1 GB/s at 1 to 2 GB/s at 3, peak 5 GB/s at 2; ",
        "PCIe 4.0 ×16, 4.5 GB/s (theoretical): a level at 4.5 GB/s. Notes on it: fastest here. ",
        "Note: no GPU reference recorded yet. cuda:0 5× faster.",
    ]
    at = [text.find(piece) for piece in pieces]
    assert -1 not in at and at == sorted(at), text


def test_a_figure_with_nothing_drawn_says_so():
    assert alt_text.describe(plots.new_figure()) == "An empty figure: no plot in it has anything drawn."
    figure = plots.new_figure()
    figure.subplots(1, 2)[0].set_title("nothing measured")
    text = alt_text.describe(figure, "no result")
    assert text == "An empty figure: no plot in it has anything drawn. no result."


def test_a_curve_drawn_without_a_label_is_still_described():
    figure = plots.new_figure()
    figure.subplots().plot([1, 2, 4], [1, 4, 16])
    assert "a line: from 1 at 1 to 16 at 4" in alt_text.describe(figure)


def crowded_figure(series_per_axes: int):
    figure = plots.new_figure()
    for column, ax in enumerate(figure.subplots(1, 3)):
        for index in range(series_per_axes):
            ax.plot([1, 2, 3], [index + 1.5, index + 9.25, index + 3.125], label=f"series {column}.{index} on a device")
        ax.set_title(f"plot {column}")
        ax.set_xlabel("n")
        ax.set_ylabel("ms")
    plots.legend(figure)
    return figure


def test_a_long_figure_loses_its_series_numbers_first_then_counts_the_series_it_leaves_out():
    summary = "the panel's own one-line result"
    text = alt_text.describe(crowded_figure(6), summary)
    assert len(text) <= alt_text.MAX_CHARS
    assert all(f"“plot {column}”" in text for column in range(3))
    assert all(f"series {c}.{i} on a device" in text for c in range(3) for i in range(6)), "a label went first"
    assert "series 0.0 on a device: " in text and "more series" not in text  # the first keep their numbers longest
    assert text.endswith(summary + ".")

    text = alt_text.describe(crowded_figure(40), summary)
    assert len(text) <= alt_text.MAX_CHARS and text.endswith(summary + ".")
    assert all(f"“plot {column}”" in text for column in range(3))
    named = len(re.findall(r"series \d\.\d+ on a device", text))
    assert named > 0 and named + counted_out(text) == 120
    assert not re.search(r"\w…|series \d\.\d+ on a d?e?v?i?c?$", text), "cut in the middle of a word"


class Unreadable(Artist):
    def get_label(self):
        raise RuntimeError("no label")


class BrokenLine(Line2D):
    def get_xydata(self):
        raise RuntimeError("no data")


def test_artists_it_cannot_read_are_left_out_or_named_never_raised_on():
    figure = plots.new_figure()
    image_ax, other, named = figure.subplots(1, 3)
    image_ax.imshow(np.arange(12.0).reshape(3, 4))
    image_ax.set_title("a heat map")
    other.add_artist(Unreadable())
    other.add_line(BrokenLine([1, 2], [3, 4], label="broken"))
    other.plot([1, 2, 3], [1.0, float("nan"), 2.0], label="with a gap")
    other.fill_between([1, 2, 3], [1, 2, 3], [2, 3, 5], label="spread")
    other.scatter([1, 2, 3], [4, 6, 5], label="runs")
    named.plot(["a", "b"], [1, 2], label="by name")
    text = alt_text.describe(figure)
    assert "Plot 1 of 3, “a heat map”" in text and "an image" in text
    assert "with a gap: from 1 at 1 to 2 at 3" in text
    assert "spread: a band over 1 to 3 between 1 and 5" in text
    assert "runs: 3 points, lowest 4 at 1, highest 6 at 2" in text
    assert "by name: from 1 at “a” to 2 at “b”" in text
    assert "runs: 3 points, lowest 4 at 1, highest 6 at 2; by name" not in text  # each axes its own
    assert ". broken; with a gap" in text  # its data could not be read: its name still says it is there


# ---------------------------------------------------------------- every panel's figure


def panel_figures():
    """(panel, which result, result, whether references are shipped) for every registered panel's figure:
    with the H100 record's own result beside that record, and with the results the published-figure tests
    draw (tests/unit/test_reference.py), with no record, as a reader sees before any GPU run is recorded."""
    cases = [
        (name, "H100 record", record["result"], True) for name in figures.PANELS if (record := reference.load(name))
    ]
    for name, results in (RESULTS | UNRECORDED).items():  # UNRECORDED: panels no GPU run has recorded yet
        cases += [(name, f"RESULTS[{i}]", result, False) for i, result in enumerate(results)]
    return [pytest.param(*case, id=f"{case[0]}, {case[1]}") for case in cases]


def legend_labels(figure) -> list[str]:
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes)]
    return [text.get_text() for legend in legends if legend is not None for text in legend.get_texts()]


@pytest.mark.parametrize(("name", "which", "result", "shipped"), panel_figures())
def test_every_panels_alt_text_names_its_titles_and_every_legend_label(
    name, which, result, shipped, tmp_path, monkeypatch
):
    if not shipped:
        monkeypatch.setattr(reference, "_folder", lambda: tmp_path)
    figure = plots.new_figure((11.0, 3.6))
    figures.PANELS[name](result, figure)
    summary = f"{name}: the panel's own one-line result, as long as the longest the lessons print" + " ·" * 40
    titles = [" ".join(ax.get_title().split()) for ax in figure.axes if ax.get_title()]
    labels = legend_labels(figure)
    assert labels or name == "07_profile", f"{name}: a figure without a legend, look at it"

    roomy = alt_text.describe(figure, summary, max_chars=100_000)
    assert [label for label in labels if label not in roomy] == [], f"{name} ({which}): a legend label not named"
    assert [title for title in titles if title not in roomy] == [], f"{name} ({which}): a title not named"

    text = alt_text.describe(figure, summary)
    assert text and len(text) <= alt_text.MAX_CHARS and text.endswith(summary.strip() + ".")
    assert "\n" not in text and "$" not in text
    assert [title for title in titles if title not in text] == [], f"{name} ({which}): a title went"
    # Where the labels do not all fit (02_bandwidth's sixteen), the text counts those it leaves out.
    missing = [label for label in labels if label not in text]
    assert len(missing) <= counted_out(text), f"{name} ({which}): {missing} neither named nor counted"


def counted_out(text: str) -> int:
    """How many series the text says it left out: "and 3 more series", or "4 series." where none was named."""
    return sum(int(more or only) for more, only in re.findall(r"and (\d+) more series|(?<!and )\b(\d+) series\.", text))


def test_a_series_an_earlier_plot_names_is_not_named_again_when_space_runs_short():
    figure = plots.new_figure()
    labels = [f"pinned, run {i} · H100 SXM, PCIe 5.0 ×16 (reference)" for i in range(6)]
    for ax, direction in zip(figure.subplots(1, 2), ("host → device", "device → host")):
        for index, label in enumerate(labels):
            ax.plot([1, 2, 3], [index + 1.0, index + 5.0, index + 2.0], label=label)
        ax.set_title(direction)
    text = alt_text.describe(figure, max_chars=600)
    first, second = text.split("Plot 2 of 2")
    named_once = [label for label in labels if label in first and label not in second]
    assert len(named_once) >= 2 and f"the {len(named_once)} series named above" in second
    left_out = [label for label in labels if label not in first]
    assert len(left_out) <= counted_out(first) and len(left_out) <= counted_out(second)
