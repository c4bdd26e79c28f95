"""The experiment panel, driven from code as a reader drives it with the mouse."""

import base64
import gc
import html
import re
import sys
import weakref

import ipywidgets
import pytest
import torch

from gpulab import widgets
from gpulab.widgets import Panel


def squares(max_n, scale, progress):
    sizes = widgets.powers_of_two(1, max_n)
    for done, _ in enumerate(sizes, start=1):
        progress(done, len(sizes))
    return {"sizes": sizes, "values": [scale * n * n for n in sizes]}


def draw(result, figure):
    ax = figure.subplots()
    ax.plot(result["sizes"], result["values"])


def make_panel(**kwargs):
    controls = {
        "max_n": widgets.log2_slider("largest n", 2, 64, 8),
        "scale": widgets.int_slider("scale", 1, 10, 1),
    }
    return Panel(squares, controls, plot=draw, summary=lambda r: f"{len(r['sizes'])} sizes", **kwargs)


def png_outputs(panel):
    return [o for o in panel.output.outputs if "image/png" in o.get("data", {})]


def test_set_a_control_click_run_and_read_the_result():
    panel = make_panel()
    panel.controls["max_n"].value = 32
    panel.controls["scale"].value = 3
    panel.button.click()
    assert panel.result == {"sizes": [1, 2, 4, 8, 16, 32], "values": [3, 12, 48, 192, 768, 3072]}
    assert panel.error is None
    assert "done in" in panel.status.value and "6 sizes" in panel.status.value
    assert panel.progress.value == panel.progress.max
    assert panel.progress.bar_style == "success"
    (image,) = png_outputs(panel)
    assert base64.b64decode(image["data"]["image/png"]).startswith(b"\x89PNG")
    assert 0 < panel.experiment_s <= panel.elapsed_s  # the experiment alone, then with its figure


def test_showing_runs_once_with_the_defaults():
    panel = make_panel()
    panel.show()
    assert panel.runs == 1 and panel.result["sizes"] == [1, 2, 4, 8]
    panel.show()  # displayed again: not run again
    assert panel.runs == 1


def test_the_button_is_disabled_while_running_and_clicks_meanwhile_are_ignored():
    seen = {}

    def experiment(progress):
        seen["disabled"] = panel.button.disabled
        seen["nested"] = panel.run()  # a second click while running
        return 1

    panel = Panel(experiment, {})
    assert panel.run() == 1
    assert seen == {"disabled": True, "nested": None}
    assert panel.runs == 1 and not panel.button.disabled


def test_an_error_is_shown_in_the_panel_and_the_panel_still_works():
    calls = []

    def flaky(progress, fail):
        calls.append(fail)
        if fail:
            raise ValueError("bad size\nsecond line")
        return "fine"

    panel = Panel(flaky, {"fail": widgets.checkbox("fail", True)})
    assert panel.run() is None
    assert isinstance(panel.error, ValueError) and panel.error.__traceback__ is None
    assert "ValueError: bad size" in panel.status.value and "second line" not in panel.status.value
    assert panel.progress.bar_style == "danger"
    (shown,) = panel.output.outputs
    assert shown["output_type"] == "stream" and "Traceback" in shown["text"] and "bad size" in shown["text"]
    assert not panel.button.disabled

    panel.controls["fail"].value = False
    panel.button.click()
    assert panel.result == "fine" and panel.error is None and "done in" in panel.status.value


def test_out_of_memory_is_caught_and_explained():
    def greedy(progress):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")

    panel = Panel(greedy, {})
    panel.run()
    assert isinstance(panel.error, torch.OutOfMemoryError)
    assert "out of memory" in panel.status.value and "smaller size" in panel.status.value


def test_memory_is_released_after_the_failed_run_has_let_go_of_its_tensors(monkeypatch):
    seen = {}

    def greedy(progress):
        activations = torch.ones(1000)  # what the run made before it ran out
        seen["activations"] = weakref.ref(activations)
        try:
            raise ValueError("a first failure")
        except ValueError:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")  # noqa: B904 -- its context is the point

    def release():
        seen["while handling"] = sys.exc_info()[1]
        gc.collect()
        seen["alive"] = seen["activations"]() is not None

    monkeypatch.setattr(widgets, "_release_memory", release)
    panel = Panel(greedy, {})
    panel.run()
    assert seen["while handling"] is None, (
        f"memory released inside the except block, while {seen['while handling']!r} is handled"
    )
    assert seen["alive"] is False, "the failed run's tensor was still alive when the panel released memory"
    assert isinstance(panel.error, torch.OutOfMemoryError) and panel.error.__traceback__ is None
    assert isinstance(panel.error.__context__, ValueError) and panel.error.__context__.__traceback__ is None
    assert (
        "OutOfMemoryError" in panel.output.outputs[-1]["text"] and "a first failure" in panel.output.outputs[-1]["text"]
    )


def test_a_failing_plot_is_an_error_in_the_panel_too():
    def broken_plot(result, figure):
        raise KeyError("missing")

    panel = Panel(lambda progress: 1, {}, plot=broken_plot)
    assert panel.run() is None
    assert isinstance(panel.error, KeyError)


def test_a_panel_drawn_by_a_panels_figure_takes_its_name():
    from gpulab import figures

    def sweep(progress):
        return {}

    assert Panel(sweep, {}, plot=figures.bandwidth).name == "02_bandwidth"
    assert Panel(sweep, {}, plot=figures.bandwidth, name="02_bandwidth").name == "02_bandwidth"
    assert Panel(sweep, {}, plot=lambda result, figure: None, name="98_own").name == "98_own"
    assert Panel(sweep, {}, plot=lambda result, figure: None).name is None  # run, and never recorded
    with pytest.raises(ValueError, match="bandwidth draws the panel '02_bandwidth', not '02_sync'"):
        Panel(sweep, {}, plot=figures.bandwidth, name="02_sync")


def test_an_interrupt_stops_the_run_without_killing_the_panel():
    def interrupted(progress):
        raise KeyboardInterrupt

    panel = Panel(interrupted, {})
    assert panel.run() is None
    assert "stopped" in panel.status.value and not panel.button.disabled


def test_log2_slider_is_capped_to_what_the_device_holds():
    slider = widgets.log2_slider("n", 64, 8192, 4096, cap=1500)
    assert list(slider.options) == [64, 128, 256, 512, 1024]
    assert slider.value == 1024
    uncapped = widgets.log2_slider("n", 64, 8192, 1024)
    assert uncapped.options[-1] == 8192 and uncapped.value == 1024


def test_bytes_slider_is_labelled_and_capped():
    slider = widgets.bytes_slider("size", 4096, 2**30, 64 * 2**20, cap=20 * 2**20)
    assert slider.options[0] == ("4 KiB", 4096) and slider.options[-1] == ("16 MiB", 16 * 2**20)
    assert slider.value == 16 * 2**20  # the default lowered to what fits
    assert widgets.bytes_slider("size", 4096, 2**30, 64 * 2**20).value == 64 * 2**20


def test_int_slider_is_capped():
    slider = widgets.int_slider("batch", 1, 512, 300, cap=256)
    assert slider.max == 256 and slider.value == 256


def test_choice_slider_offers_its_values_and_refuses_a_default_outside_them():
    slider = widgets.choice_slider("p", [0.5, 0.9, 0.95, 0.99], 0.95)
    assert list(slider.options) == [0.5, 0.9, 0.95, 0.99] and slider.value == 0.95
    with pytest.raises(ValueError, match="not one of"):
        widgets.choice_slider("p", [0.5, 0.9], 0.8)


def test_powers_of_two():
    assert widgets.powers_of_two(32, 1024) == [32, 64, 128, 256, 512, 1024]
    assert widgets.powers_of_two(3, 20) == [4, 8, 16]
    with pytest.raises(ValueError):
        widgets.powers_of_two(0, 4)


@pytest.mark.parametrize("high", [1024, 2048, 4096])
def test_every_other_power_of_two_always_ends_at_the_chosen_one(high):
    values = widgets.powers_of_two(1, high, every=2)
    assert values[-1] == high and all(b == 4 * a for a, b in zip(values, values[1:]))
    assert widgets.powers_of_two(4, 4, every=3) == [4]


def capped_panel(limit_s=15.0):
    # A run "takes" max_n × scale seconds.
    return make_panel(estimate_s=lambda max_n, scale: max_n * scale, limit_s=limit_s)


def test_sliders_offer_only_what_finishes_within_the_limit():
    panel = capped_panel()
    assert list(panel.controls["max_n"].options) == [2, 4, 8]  # 16 would take 16 s
    assert panel.hidden["max_n"] == [16, 32, 64]
    assert "largest n above 8 hidden" in panel.hint.value and "15 s" in panel.hint.value


def test_a_costlier_setting_elsewhere_lowers_the_cap_and_a_cheaper_one_restores_it():
    panel = capped_panel()
    panel.controls["scale"].value = 3
    assert list(panel.controls["max_n"].options) == [2, 4]
    assert panel.controls["max_n"].value == 4  # the chosen 8 no longer fits
    panel.controls["scale"].value = 1
    assert list(panel.controls["max_n"].options) == [2, 4, 8]
    assert panel.controls["max_n"].value == 4  # the reader's choice is kept
    panel.controls["scale"].value = 10
    assert list(panel.controls["max_n"].options) == [2]  # the smallest always stays
    assert panel.run() is not None


def test_the_limit_is_15_seconds_or_what_gpulab_panel_limit_s_says(monkeypatch):
    monkeypatch.delenv("GPULAB_PANEL_LIMIT_S", raising=False)
    assert widgets.default_limit_s() == 15.0 and capped_panel(limit_s=None).limit_s == 15.0
    monkeypatch.setenv("GPULAB_PANEL_LIMIT_S", "5")
    panel = capped_panel(limit_s=None)
    assert panel.limit_s == 5.0 and list(panel.controls["max_n"].options) == [2, 4]  # 8 would take 8 s
    assert capped_panel(limit_s=15.0).limit_s == 15.0  # a panel's own limit wins
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv("GPULAB_PANEL_LIMIT_S", bad)
        with pytest.raises(ValueError, match="GPULAB_PANEL_LIMIT_S"):
            widgets.default_limit_s()


def test_nothing_hidden_says_nothing_and_byte_sliders_keep_their_labels():
    panel = capped_panel(limit_s=1e6)
    assert panel.hint.value == "" and panel.hidden["max_n"] == []
    sized = Panel(
        lambda size, progress: size,
        {"size": widgets.bytes_slider("size", 1024, 2**20, 2**16)},
        estimate_s=lambda size: 15 * size / 2**16,
    )
    assert sized.controls["size"].options[-1] == ("64 KiB", 2**16)
    assert "size above 64 KiB hidden" in sized.hint.value


def test_only_core_widgets_are_used():
    panel = make_panel(title="t")

    def walk(widget):
        yield widget
        for child in getattr(widget, "children", ()):
            yield from walk(child)

    for widget in walk(panel.widget):
        assert type(widget).__module__.startswith("ipywidgets."), type(widget)
    assert ipywidgets.__version__.split(".")[0] in {"7", "8"}


# On a page without a kernel (GPULAB_STATIC=1, as make site sets): what the run at the defaults gave, as HTML.


def displayed(monkeypatch, thing) -> list:
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    thing._ipython_display_()
    return shown


def test_a_static_page_shows_the_settings_the_figure_with_its_description_and_the_status(monkeypatch):
    monkeypatch.setenv("GPULAB_STATIC", "1")
    panel = make_panel(title="Squares")
    (shown,) = displayed(monkeypatch, panel)
    assert panel.runs == 1 and panel.result["sizes"] == [1, 2, 4, 8]
    page = shown.data
    assert not isinstance(shown, ipywidgets.Widget) and page.startswith("<div class='gpulab-panel'")
    assert "<b>Squares</b>" in page and "largest n <b>8</b>" in page and "scale <b>1</b>" in page
    (source,) = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    assert base64.b64decode(source).startswith(b"\x89PNG")
    (alt,) = re.findall(r"alt='([^']*)'", page)
    assert alt == html.escape(panel.alt_text) and "4 sizes" in panel.alt_text  # the summary line ends it
    assert "done in" in page and "gpulab-error" not in page


def test_a_static_page_shows_a_failed_run_as_an_error(monkeypatch):
    monkeypatch.setenv("GPULAB_STATIC", "1")

    def broken(max_n, progress):
        raise ValueError("no such size")

    panel = Panel(broken, {"max_n": widgets.log2_slider("largest n", 2, 64, 8)}, plot=draw)
    (shown,) = displayed(monkeypatch, panel)
    assert "gpulab-error" in shown.data and "ValueError: no such size" in shown.data and "<img" not in shown.data


def test_without_gpulab_static_the_panel_is_its_widgets(monkeypatch):
    monkeypatch.delenv("GPULAB_STATIC", raising=False)
    panel = make_panel()
    assert displayed(monkeypatch, panel) == [panel.widget]
    # its figure, in the notebook, carries the same text alternative the website gives it
    (figure,) = png_outputs(panel)
    assert "4 sizes" in panel.alt_text and figure["data"]["text/plain"] == panel.alt_text
    (alt,) = re.findall(r"alt='([^']*)'", figure["data"]["text/html"])
    assert alt == html.escape(panel.alt_text)
    (source,) = re.findall(r"src='data:image/png;base64,([^']+)'", figure["data"]["text/html"])
    assert source == figure["data"]["image/png"]
    monkeypatch.setenv("GPULAB_STATIC", "0")
    assert not widgets.static_outputs()
