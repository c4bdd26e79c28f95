"""gpulab.figures: each panel's figure, registered under the panel's name. (How each draws beside a
reference: test_bench.py; beside published measurements: test_reference.py.)"""

import pytest

from gpulab import figures, plots, reference
from gpulab.widgets import Panel


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
