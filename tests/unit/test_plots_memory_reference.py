import json

import pytest
import torch

from gpulab import memory, plots, reference

from conftest import requires_cuda


def labelled_ticks(ax, axis="y"):
    ax.figure.canvas.draw()
    lo, hi = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    return [t.get_text() for t in ticks if t.get_text() and lo * 0.999 <= t.get_position()[1 if axis == "y" else 0] <= hi * 1.001]


@pytest.mark.parametrize("low, high", [(0.6, 0.9), (12.0, 14.0), (1.0, 1.5), (3e4, 5e4), (0.01, 0.5), (1e-3, 1e5), (7.9, 8.1)])
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
    return {"device": {"name": name, "type": "cuda"}, "torch": "2.11", "recorded": "2026-11-21",
            "command": "gpulab bench", "result": result}


def test_series_draws_the_reference_in_the_readers_units_and_names_only_its_accelerators():
    mine = {"sizes": [64, 128], "seconds": {"cpu": [1e-3, 8e-3]}}
    theirs = {"sizes": [64, 128, 256], "seconds": {"cpu": [2e-3, 9e-3, 5e-2], "cuda:0": [1e-3, 8e-3, 3e-2]}}
    figure = plots.new_figure()
    ax = figure.subplots()
    lines = plots.series(ax, mine, x="sizes", y="seconds", scale=1e3, by_device=True,
                         reference=reference_record(theirs))
    by_gid = {line.get_gid(): line for line in lines}
    assert set(by_gid) == {"yours|cpu", "reference|cuda:0"}               # the reference machine's CPU is left out
    assert list(by_gid["reference|cuda:0"].get_ydata()) == list(by_gid["yours|cpu"].get_ydata()) == [1.0, 8.0]
    assert list(by_gid["reference|cuda:0"].get_xdata()) == [64, 128]      # clipped to your sizes
    assert "Test GPU" in by_gid["reference|cuda:0"].get_label() and "Test GPU" not in by_gid["yours|cpu"].get_label()
    assert by_gid["reference|cuda:0"].get_linestyle() == "--"


def test_series_derives_the_same_quantity_for_both_and_labels_methods_with_the_gpu():
    mine = {"sizes": [1, 2], "gbps": {"host memory copy": [4.0, 8.0]}}
    theirs = {"sizes": [1, 2], "gbps": {"host→device pinned": [4.0, 8.0]}}
    ax = plots.new_figure().subplots()
    lines = plots.series(ax, mine, x="sizes", y="gbps", derive=lambda n, g: n / g, reference=reference_record(theirs),
                         label=lambda name: name.split(" ", 1)[-1] if "→" in name else name)
    assert [list(line.get_ydata()) for line in lines] == [[0.25, 0.25], [0.25, 0.25]]
    assert lines[1].get_label() == "pinned · Test GPU (reference)"


def test_known_figures_are_dotted_and_say_what_they_are():
    ax = plots.new_figure().subplots()
    level = plots.known_level(ax, 31.5, "PCIe 4.0 ×16 (theoretical)")
    curve = plots.known_curve(ax, [1, 2], [3, 4], "a model")
    assert level.get_linestyle() == curve.get_linestyle() == ":"
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


def test_bytes_read_in_binary_units():
    assert plots.format_bytes(512) == "512 B"
    assert plots.format_bytes(4096) == "4 KiB"
    assert plots.format_bytes(64 * 2**20) == "64 MiB"
    assert plots.format_bytes(3 * 2**30) == "3 GiB"


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


def test_free_bytes_of_the_cpu_is_positive_and_below_physical_memory():
    import os

    free = memory.free_bytes("cpu")
    assert 0 < free <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_largest_square_n_fits_the_budget(monkeypatch):
    monkeypatch.setattr(memory, "free_bytes", lambda device: 3 * 4 * 1000 * 1000 * 2)
    n = memory.largest_square_n("cpu", matrices=3, dtype=torch.float32, fraction=0.5)
    assert n == 1000
    assert memory.largest_square_n("cpu", matrices=3, dtype=torch.bfloat16, fraction=0.5) == 1414
    with pytest.raises(ValueError):
        memory.largest_square_n("cpu", fraction=0)


def test_largest_buffer_splits_the_budget(monkeypatch):
    monkeypatch.setattr(memory, "free_bytes", lambda device: 8 * 2**30)
    assert memory.largest_buffer("cpu") == 4 * 2**30
    assert memory.largest_buffer("cpu", buffers=4, fraction=1.0) == 2 * 2**30
    with pytest.raises(ValueError):
        memory.largest_buffer("cpu", buffers=0)
    with pytest.raises(ValueError):
        memory.largest_buffer("cpu", fraction=0)


@requires_cuda
def test_free_bytes_on_cuda_counts_the_allocators_cache():
    before = memory.free_bytes("cuda:0")
    block = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda:0")
    during = memory.free_bytes("cuda:0")
    del block  # back in PyTorch's cache, still free for new tensors
    after = memory.free_bytes("cuda:0")
    assert during < before and after == pytest.approx(before, rel=0.01)


def test_a_missing_reference_says_so():
    assert reference.load("no_such_experiment") is None
    assert reference.describe("no_such_experiment") == reference.NOT_RECORDED == "no GPU reference recorded yet"


def test_a_recorded_reference_is_loaded_and_described(monkeypatch, tmp_path):
    record = {"device": {"name": "NVIDIA H200"}, "torch": "2.11.0", "recorded": "2026-11-21",
              "command": "gpulab bench", "result": {"sizes": [64]}}
    (tmp_path / "demo.json").write_text(json.dumps(record))
    (tmp_path / "broken.json").write_text(json.dumps({"device": {}}))
    monkeypatch.setattr(reference, "_folder", lambda: tmp_path)
    assert reference.load("demo") == record
    # a GPU the data sheets know is named with its variant and host link; another by its driver's name alone
    assert reference.describe("demo") == ("reference: NVIDIA H200 (H200 SXM, PCIe 5.0 ×16 to the host), torch 2.11.0, "
                                          "recorded 2026-11-21")
    record["device"]["name"] = "NVIDIA H200 NVL"
    (tmp_path / "demo.json").write_text(json.dumps(record))
    assert reference.describe("demo") == "reference: NVIDIA H200 NVL, torch 2.11.0, recorded 2026-11-21"
    assert reference.names() == ["broken", "demo"]
    with pytest.raises(ValueError, match="lacks"):
        reference.load("broken")


def test_a_record_that_is_not_an_object_or_names_no_device_is_refused():
    with pytest.raises(ValueError, match="not a JSON object"):
        reference.validate([1, 2], "list")
    with pytest.raises(ValueError, match="with its name"):
        reference.validate({"device": "H200", "torch": "2.11", "recorded": "x", "command": "c", "result": {}}, "bare")


def test_shipped_references_are_well_formed_and_come_from_an_accelerator():
    for name in reference.names():
        record = reference.load(name)
        assert record["device"].get("name"), name
        assert record["device"].get("type") != "cpu", f"{name}: a shipped reference must come from a GPU"


def test_pinned_memory_is_released_only_where_an_accelerator_can(monkeypatch):
    assert memory.release_pinned_memory() is torch.accelerator.is_available()
    calls = []
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "empty_host_cache", lambda: calls.append("released"), raising=False)
    assert memory.release_pinned_memory() is True and calls == ["released"]

    def refuses():
        raise RuntimeError("not supported here")

    monkeypatch.setattr(torch.accelerator, "empty_host_cache", refuses)
    assert memory.release_pinned_memory() is False


def test_known_gpus_have_their_ridge_points_and_name_each_peak_once():
    h100 = next(gpu for gpu in reference.KNOWN_GPUS if gpu.name == "H100 SXM")
    assert h100.ridge("float32") == pytest.approx(67e12 / 3350e9)
    assert h100.ridge("bfloat16") == pytest.approx(989e12 / 3350e9)
    t4 = next(gpu for gpu in reference.KNOWN_GPUS if gpu.name == "T4")
    with pytest.raises(ValueError, match="no tensor cores for bfloat16"):
        t4.ridge("bfloat16")
    # The H200 computes like the H100: its peak is named once; the T4 has no bf16 tensor cores.
    assert list(reference.SPEC_PEAK_TFLOPS["float32"]) == ["T4", "A100 SXM", "H100 SXM"]
    assert "T4" not in reference.SPEC_PEAK_TFLOPS["bfloat16"] and reference.SPEC_PEAK_TFLOPS["float16"]["T4"] == 65
    rows = reference.known_gpus().rows()
    assert [row["GPU"] for row in rows] == [gpu.name for gpu in reference.KNOWN_GPUS]
    assert rows[-1]["bandwidth"] == "4,800 GB/s" and rows[0]["ridge 16-bit"] == "203 FLOP/B"


GiB = 2**30


@pytest.mark.parametrize("name, memory_gib, multiprocessors, expected", [
    ("Tesla T4", 14.7, 40, "T4"),                              # Colab's T4
    ("Tesla T4 (simulated)", 14.7, 40, "T4"),
    ("NVIDIA A100-SXM4-80GB", 79.2, 108, "A100 SXM"),
    ("A100-SXM4-80GB", None, None, "A100 SXM"),                # as older drivers name it
    ("NVIDIA H100 80GB HBM3", 79.1, 132, "H100 SXM"),
    ("NVIDIA H200", 139.7, 132, "H200 SXM"),
    # Other variants have other data sheets: none of these is one of the known GPUs.
    ("NVIDIA A100-PCIE-40GB", 39.4, 108, None),                # "PCIE", not "PCIe": a substring test let it in
    ("A100-SXM4-40GB", 39.4, 108, None),
    ("NVIDIA A100 80GB PCIe", 79.2, 108, None),
    ("NVIDIA H100 PCIe", 79.1, 114, None),
    ("NVIDIA H100 NVL", 93.1, 132, None),
    ("NVIDIA GH200 480GB", 94.5, 132, None),                   # "GH200" holds "H200"
    ("NVIDIA H200 NVL", 139.7, 132, None),
    ("NVIDIA T400", 1.8, 6, None),                             # "T400" and "T4000" hold "T4"
    ("NVIDIA T4000", 7.8, 40, None),
    ("Quadro T4000", 7.8, 40, None),
    ("NVIDIA A100-SXM4-80GB", 39.4, 108, None),                # a name that disagrees with the memory
    ("NVIDIA H100 80GB HBM3", 79.1, 114, None),                # or with the SM count
    ("Intel(R) Xeon(R) CPU @ 2.20GHz", 12.7, None, None),
])
def test_a_data_sheet_is_found_only_for_that_exact_gpu(name, memory_gib, multiprocessors, expected):
    memory_bytes = None if memory_gib is None else memory_gib * GiB
    known = reference.known_gpu(name, memory_bytes=memory_bytes, multiprocessors=multiprocessors)
    assert (known and known.name) == expected, f"{name!r}: expected {expected}, got {known and known.name}"


def test_every_simulated_gpu_finds_its_own_data_sheet():
    from gpulab.simulated.machines import GPUS

    for spec in GPUS.values():
        known = reference.known_gpu(spec.name, memory_bytes=spec.total_memory, multiprocessors=spec.multi_processor_count)
        assert known is not None and known.memory_gbps == pytest.approx(spec.memory_bandwidth / 1e9, rel=0.01), spec.name


def test_a_reference_measured_on_a_cpu_names_that_cpu_not_the_gpu_and_keeps_its_range():
    mine = {"threads": [1, 2], "speedup": {"measured": [1.0, 1.8]}}
    record = reference_record({"threads": [1, 2, 4, 8, 16], "speedup": {"measured": [1.0, 1.9, 3.6, 6.5, 11.0]}})
    record["devices"] = [{"device": "cpu", "name": "Test CPU", "type": "cpu", "cores": 16},
                         {"device": "cuda:0", "name": "Test GPU", "type": "cuda"}]
    ax = plots.new_figure().subplots()
    lines = plots.series(ax, mine, x="threads", y="speedup", reference=record, on_reference_cpu=True)
    theirs = lines[1]
    assert theirs.get_label() == "measured · Test CPU, 16 cores (reference)" and "Test GPU" not in theirs.get_label()
    assert list(theirs.get_xdata()) == [1, 2, 4, 8, 16]          # not clipped to your two thread counts
    assert plots.reference_cpu({"devices": []}) == "the reference machine's CPU"


def test_show_displays_a_figure_as_a_png(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objects: shown.extend(objects))
    figure = plots.new_figure()
    figure.subplots().plot([1, 2], [3, 4])
    plots.show(figure)
    (image,) = shown
    assert isinstance(image, IPython.display.Image) and image.data.startswith(b"\x89PNG")


def test_the_formats_picture_has_a_bar_per_format_with_its_bits():
    from gpulab import figures

    rows = [{"name": "float32", "exponent": 8, "mantissa": 23}, {"name": "float16", "exponent": 5, "mantissa": 10}]
    figure = plots.new_figure()
    figures.number_formats(rows, figure)
    ax = figure.axes[0]
    widths = sorted(round(patch.get_width()) for patch in ax.patches)
    assert widths == sorted([1, 8, 23, 1, 5, 10])
    assert [label.get_text() for label in ax.get_yticklabels()] == ["float16", "float32"]
