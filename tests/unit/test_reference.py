"""gpulab.reference: records of a real GPU read by a panel's name, and the data sheets of well-known GPUs.
Then the published measurements of real GPUs: each keeps its source, and each is drawn beside the reader's
result in the unit of the axis it is drawn on, labelled as published."""

import dataclasses
import json
import re

import pytest

from gpulab import figures, plots, reference


def test_a_missing_reference_says_so():
    assert reference.load("no_such_experiment") is None
    assert reference.describe("no_such_experiment") == reference.NOT_RECORDED == "no GPU reference recorded yet"


def test_a_recorded_reference_is_loaded_and_described(monkeypatch, tmp_path):
    record = {
        "device": {"name": "NVIDIA H200"},
        "torch": "2.11.0",
        "recorded": "2026-11-21",
        "command": "gpulab bench",
        "result": {"sizes": [64]},
    }
    (tmp_path / "demo.json").write_text(json.dumps(record))
    (tmp_path / "broken.json").write_text(json.dumps({"device": {}}))
    monkeypatch.setattr(reference, "_folder", lambda: tmp_path)
    assert reference.load("demo") == record
    # a GPU the data sheets know is named with its variant and host link; another by its driver's name alone
    assert reference.describe("demo") == (
        "reference: NVIDIA H200 (H200 SXM, PCIe 5.0 ×16 to the host), torch 2.11.0, recorded 2026-11-21"
    )
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


@pytest.mark.parametrize(
    "name, memory_gib, multiprocessors, expected",
    [
        ("Tesla T4", 14.7, 40, "T4"),  # Colab's T4
        ("Tesla T4 (simulated)", 14.7, 40, "T4"),
        ("NVIDIA A100-SXM4-80GB", 79.2, 108, "A100 SXM"),
        ("A100-SXM4-80GB", None, None, "A100 SXM"),  # as older drivers name it
        ("NVIDIA H100 80GB HBM3", 79.1, 132, "H100 SXM"),
        ("NVIDIA H200", 139.7, 132, "H200 SXM"),
        # Other variants have other data sheets: none of these is one of the known GPUs.
        ("NVIDIA A100-PCIE-40GB", 39.4, 108, None),  # "PCIE", not "PCIe": a substring test let it in
        ("A100-SXM4-40GB", 39.4, 108, None),
        ("NVIDIA A100 80GB PCIe", 79.2, 108, None),
        ("NVIDIA H100 PCIe", 79.1, 114, None),
        ("NVIDIA H100 NVL", 93.1, 132, None),
        ("NVIDIA GH200 480GB", 94.5, 132, None),  # "GH200" holds "H200"
        ("NVIDIA H200 NVL", 139.7, 132, None),
        ("NVIDIA T400", 1.8, 6, None),  # "T400" and "T4000" hold "T4"
        ("NVIDIA T4000", 7.8, 40, None),
        ("Quadro T4000", 7.8, 40, None),
        ("NVIDIA A100-SXM4-80GB", 39.4, 108, None),  # a name that disagrees with the memory
        ("NVIDIA H100 80GB HBM3", 79.1, 114, None),  # or with the SM count
        ("Intel(R) Xeon(R) CPU @ 2.20GHz", 12.7, None, None),
    ],
)
def test_a_data_sheet_is_found_only_for_that_exact_gpu(name, memory_gib, multiprocessors, expected):
    memory_bytes = None if memory_gib is None else memory_gib * GiB
    known = reference.known_gpu(name, memory_bytes=memory_bytes, multiprocessors=multiprocessors)
    assert (known and known.name) == expected, f"{name!r}: expected {expected}, got {known and known.name}"


def test_every_simulated_gpu_finds_its_own_data_sheet():
    from gpulab.simulated.machines import GPUS

    for spec in GPUS.values():
        known = reference.known_gpu(
            spec.name, memory_bytes=spec.total_memory, multiprocessors=spec.multi_processor_count
        )
        assert known is not None and known.memory_gbps == pytest.approx(spec.memory_bandwidth / 1e9, rel=0.01), (
            spec.name
        )


def test_a_reference_is_found_by_its_panels_figure_as_by_its_name(monkeypatch, tmp_path):
    record = {
        "device": {"name": "NVIDIA H200"},
        "torch": "2.11.0",
        "recorded": "2026-11-21",
        "command": "gpulab bench",
        "result": {"sizes": [64]},
    }
    (tmp_path / "02_bandwidth.json").write_text(json.dumps(record))
    monkeypatch.setattr(reference, "_folder", lambda: tmp_path)
    assert reference.load(figures.bandwidth) == reference.load("02_bandwidth") == record
    assert reference.describe(figures.bandwidth) == reference.describe("02_bandwidth") != reference.NOT_RECORDED
    assert reference.load(figures.sync) is None
    with pytest.raises(TypeError, match="neither a panel's name nor a figure registered"):
        reference.load(figures.cuda_snapshot)  # a figure, but no panel's


def test_published_measurements_are_picked_by_key_and_an_unknown_key_is_refused():
    first, second = reference.PUBLISHED[:2]
    assert reference.published([second.key, first.key]) == (first, second)
    assert reference.published([]) == ()
    with pytest.raises(ValueError, match="no published measurement has the key 'nowhere'"):
        reference.published([first.key, "nowhere"])


# ---------------------------------------------------------------- published measurements

# Independent of gpulab.reference.UNITS on purpose: a slip there must not hide a slip in a figure.
SCALE = {"TFLOP/s": ("FLOP/s", 1e12), "GFLOP/s": ("FLOP/s", 1e9), "TB/s": ("B/s", 1e12), "GB/s": ("B/s", 1e9)}
VARIANTS = ("SXM", "PCIe", "NVL", "notebook")  # a GPU's figures belong to one variant of it


@pytest.fixture(autouse=True)
def no_recorded_references(tmp_path, monkeypatch):
    # What a reader sees before any GPU run is recorded: published figures are drawn all the same.
    monkeypatch.setattr(reference, "_folder", lambda: tmp_path)


def numbers_in(text):
    return {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*\.?\d*", text)}


def problems(entry) -> list[str]:
    """What is missing or wrong in a published entry's record of itself."""
    found = []
    for field in ("key", "caption", "measured", "gpu", "link", "software", "source", "url", "quote", "short"):
        if not str(getattr(entry, field)).strip():
            found.append(f"no {field}")
    if not any(re.search(rf"\b{variant}\b", entry.gpu) for variant in VARIANTS):
        found.append(f"the GPU {entry.gpu!r} names no variant ({', '.join(VARIANTS)})")
    if not re.search(r"PCIe|NVLink", entry.link):
        found.append(f"the link {entry.link!r} names no PCIe generation or NVLink")
    if not entry.url.startswith("https://"):
        found.append(f"the url {entry.url!r} is no web address")
    if entry.unit not in SCALE:
        found.append(f"unknown unit {entry.unit!r}")
    if entry.value not in numbers_in(entry.quote):
        found.append(f"{entry.value} is not in the quoted source text {entry.quote!r}")
    if not drawn_by(entry.key):
        found.append("no panel's figure draws it (gpulab.figures.panel(..., published=...))")
    return found


def drawn_by(key) -> list[str]:
    """The panels whose figures were registered to draw the published measurement ``key``."""
    return [name for name, draw in figures.PANELS.items() if key in draw.published_keys]


def test_every_published_figure_keeps_its_source_gpu_variant_link_software_and_unit():
    assert reference.PUBLISHED
    assert len({entry.key for entry in reference.PUBLISHED}) == len(reference.PUBLISHED)
    assert {entry.key: problems(entry) for entry in reference.PUBLISHED if problems(entry)} == {}


def test_the_record_check_finds_a_figure_without_a_source_or_variant():
    good = reference.PUBLISHED[0]
    assert problems(dataclasses.replace(good, source=" ")) == ["no source"]
    assert problems(dataclasses.replace(good, gpu="H100")) == [
        "the GPU 'H100' names no variant (SXM, PCIe, NVL, notebook)"
    ]
    assert problems(dataclasses.replace(good, value=good.value * 10))  # a typo: not what the source says
    assert problems(dataclasses.replace(good, key="zzc-h100-sxm-float32, renamed")) == [  # a figure no panel draws
        "no panel's figure draws it (gpulab.figures.panel(..., published=...))"
    ]


def test_a_panel_registered_with_a_published_key_that_does_not_exist_is_refused(monkeypatch):
    monkeypatch.setattr(figures, "PANELS", dict(figures.PANELS))
    with pytest.raises(ValueError, match="no published measurement has the key 'zzc-h100-sxm-float23'"):
        figures.panel("98_demo", published=("zzc-h100-sxm-float32", "zzc-h100-sxm-float23"))
    assert "98_demo" not in figures.PANELS


def test_published_picks_a_panels_figures_by_dtype_and_direction():
    matmul, bandwidth = figures.dtype_matmul.published_keys, figures.bandwidth.published_keys
    bf16 = reference.published(matmul, dtype="bfloat16")
    assert bf16 and all(e.dtype == "bfloat16" and e.key in matmul for e in bf16)
    h2d = reference.published(bandwidth, direction="host→device")
    assert {e.memory for e in h2d} == {"pinned", "pageable"} and all(e.direction == "host→device" for e in h2d)
    assert reference.published(figures.profile_step.published_keys) == ()
    assert set(reference.published(bandwidth)) == set(h2d) | set(
        reference.published(bandwidth, direction="device→host")
    )
    # In the table's order, whatever the order of the keys: a figure's colours follow it.
    assert reference.published(reversed(bandwidth)) == reference.published(bandwidth)
    assert [e.key for e in reference.published(bandwidth)] == [e.key for e in reference.PUBLISHED if e.key in bandwidth]


def test_a_value_converts_only_to_a_unit_of_the_same_quantity():
    tflops = next(e for e in reference.PUBLISHED if e.unit == "TFLOP/s")
    assert tflops.value_in("GFLOP/s") == pytest.approx(tflops.value * 1e3)
    with pytest.raises(ValueError, match="no B/s"):
        tflops.value_in("GB/s")


# ---------------------------------------------------------------- drawn in the axis's unit


def roofline_result(device, dtype):
    peak = {"float32": 50_000.0, dtype: 700_000.0} if device != "cpu" else {"float32": 100.0, dtype: 20.0}
    return {
        "device": device,
        "dtype": dtype,
        "width": 4096,
        "batches": [1, 4, 16],
        "intensity": [0.5, 2.0, 7.9],
        "gflops": {device: [5.0, 15.0, 40.0]},
        "ceilings": {device: {**peak, "copy_gbps": 10.0}},
    }


def matmul_result(device, dtype):
    seconds = {"cpu": [1e-5, 8e-5, 6e-4]} | ({device: [2e-5, 2e-5, 3e-5]} if device != "cpu" else {})
    return {"sizes": [32, 64, 128], "dtype": dtype, "seconds": seconds}


GBPS = [1.0, 4.0, 9.0]
ALLREDUCE = {
    "sizes": [4096, 65536, 1048576],
    "seconds": {"2 processes": [2e-4, 3e-4, 1e-3]},
    "busbw_gbps": {"2 processes": [0.02, 0.2, 1.0]},
    "fit": {},
}

COLLECTIVES = {
    "sizes": [4096, 65536, 1048576, 4194304],
    "seconds": {
        "all-gather": [2e-4, 1.2e-3, 1.5e-3, 1e-2],
        "reduce-scatter": [3e-4, 2e-3, 2.2e-3, 1.9e-2],
        "all-reduce": [2.6e-4, 1.2e-3, 4.8e-3, 4.6e-3],
    },
    "busbw_gbps": {
        "all-gather": [0.01, 0.03, 0.35, 0.2],
        "reduce-scatter": [0.007, 0.016, 0.24, 0.11],
        "all-reduce": [0.016, 0.055, 0.22, 0.9],
    },
    "fit": {
        "all-gather": {"alpha_s": 2e-4, "beta_s_per_byte": 2e-9},
        "all-reduce": {"alpha_s": 2.5e-4, "beta_s_per_byte": 1e-9},
    },
    "ranks": 2,
}

# Each panel that draws published figures, with results shaped as a CPU-only reader's and a GPU
# reader's would be (made up), in every dtype that selects what is drawn.
RESULTS = {
    "00_roofline": [
        roofline_result(device, dtype) for device in ("cpu", "cuda:0") for dtype in ("float32", "bfloat16", "float16")
    ],
    "00_overhead": [
        {"sizes": [4, 1024, 2**20], "seconds": {"cpu": [1e-6, 1.2e-6, 1e-4]}},
        {"sizes": [4, 1024, 2**20], "seconds": {"cpu": [1e-6, 1.2e-6, 1e-4], "cuda:0": [6e-6] * 3}},
    ],
    "01_matmul": [
        matmul_result(device, dtype) for device in ("cpu", "cuda:0") for dtype in ("float32", "float16", "bfloat16")
    ],
    "02_bandwidth": [
        {
            "device": "cpu",
            "sizes": [4096, 65536, 2**20],
            "gbps": {"host memory copy": [3.0, 8.0, 10.0]},
            "pin_seconds": [],
        },
        {
            "device": "cuda:0",
            "sizes": [4096, 65536, 2**20],
            "pin_seconds": [1e-5, 2e-5, 5e-5],
            "gbps": {
                f"{d} {m}": GBPS
                for d in ("host→device", "device→host")
                for m in ("pageable", "pinned", "pinned + non_blocking")
            },
        },
    ],
    "05_matmul": [
        {
            "device": "cpu",
            "sizes": [64, 128, 256],
            "tflops": {"float32": [0.01, 0.05, 0.1], "bfloat16": [0.001, 0.003, 0.004]},
        },
        {
            "device": "cuda:0",
            "sizes": [1024, 2048, 4096],
            "tflops": {
                "float32": [30.0, 45.0, 50.0],
                "tf32": [150.0, 300.0, 380.0],
                "bfloat16": [300.0, 550.0, 700.0],
                "float16": [310.0, 560.0, 720.0],
            },
        },
    ],
    "06_allreduce": [dict(ALLREDUCE, backend="gloo", device="cpu"), dict(ALLREDUCE, backend="nccl", device="cuda:0")],
    "08_collectives": [
        dict(COLLECTIVES, backend="gloo", device="cpu"),
        dict(COLLECTIVES, backend="nccl", device="cuda:0"),
    ],
}


def axis_unit(ax) -> str:
    units = re.findall(r"\b[GT](?:FLOP|B)/s\b", ax.get_ylabel())
    assert len(units) == 1, f"the axis {ax.get_ylabel()!r} does not name one unit"
    return units[0]


def drawn(panel, result):
    """(entry, axes, line) for each published line the panel's figure draws for ``result``."""
    figure = plots.new_figure((11, 3.6))
    figures.PANELS[panel](result, figure)
    by_key = {entry.key: entry for entry in reference.PUBLISHED}
    return [
        (by_key[line.get_gid().split("|", 1)[1]], ax, line)
        for ax in figure.axes
        for line in ax.get_lines()
        if (line.get_gid() or "").startswith("published|")
    ]


def mismatches(panel, result) -> list[str]:
    """Where a published line is not at its value in its axis's unit, or not labelled as published."""
    found = []
    for entry, ax, line in drawn(panel, result):
        unit = axis_unit(ax)
        quantity, scale = SCALE[unit]
        if SCALE[entry.unit][0] != quantity:
            found.append(f"{entry.key}: {entry.unit} drawn on an axis in {unit}")
            continue
        expected = entry.value * SCALE[entry.unit][1] / scale
        # One size measured: an open marker at that size; a figure for every size: a dashed line across the axis.
        points = [expected] if entry.nbytes is not None else [expected, expected]
        if list(line.get_ydata()) != pytest.approx(points, rel=1e-9):
            found.append(f"{entry.key}: drawn at {list(line.get_ydata())} {unit}, published {entry.value} {entry.unit}")
        if entry.nbytes is not None and list(line.get_xdata()) != [entry.nbytes]:
            found.append(f"{entry.key}: measured at {entry.nbytes} bytes, drawn at x = {list(line.get_xdata())}")
        label = line.get_label()
        if not (label.startswith("published: ") and entry.gpu in label and entry.short in label and unit in label):
            found.append(f"{entry.key}: label {label!r} does not say published, the GPU, the source and {unit}")
        if entry.nbytes is not None:
            if line.get_linestyle() not in ("None", "none", "") or line.get_markerfacecolor() != "none":
                found.append(f"{entry.key}: one size, drawn as a line or a filled marker, like a measurement here")
        elif line.get_linestyle() in ("-", "solid") or line.get_marker() not in ("None", "", None):
            found.append(f"{entry.key}: styled like a measurement of this machine")
    return found


@pytest.mark.parametrize("panel", sorted(RESULTS))
def test_a_panel_draws_its_published_figures_at_their_values_in_its_axis_unit(panel):
    assert {name for entry in reference.PUBLISHED for name in drawn_by(entry.key)} == set(RESULTS), (
        "a panel without results here"
    )
    shown = set()
    for result in RESULTS[panel]:
        assert mismatches(panel, result) == []
        shown |= {entry.key for entry, _ax, _line in drawn(panel, result)}
    assert drawn(panel, RESULTS[panel][0]), f"{panel}: a CPU-only reader sees no published figure"
    assert shown == {entry.key for entry in reference.published(figures.PANELS[panel].published_keys)}, (
        f"{panel}: some published figures never drawn"
    )


def test_a_figure_drawn_in_the_published_unit_instead_of_the_axiss_is_caught(monkeypatch):
    # The slip the check is for: a TFLOP/s figure drawn as-is on an axis in GFLOP/s.
    monkeypatch.setattr(reference.Published, "value_in", lambda self, unit: self.value)
    assert mismatches("01_matmul", matmul_result("cpu", "float32"))
    assert mismatches("05_matmul", RESULTS["05_matmul"][0]) == []  # TFLOP/s on a TFLOP/s axis: still right


def test_a_figure_of_another_quantity_cannot_be_drawn(monkeypatch):
    wrong = dataclasses.replace(reference.PUBLISHED[0], key="wrong")
    monkeypatch.setattr(reference, "PUBLISHED", reference.PUBLISHED + (wrong,))
    monkeypatch.setattr(figures.allreduce, "published_keys", figures.allreduce.published_keys + ("wrong",))
    with pytest.raises(ValueError, match="TFLOP/s, which is no B/s"):
        drawn("06_allreduce", RESULTS["06_allreduce"][0])


def _timed(name, xs, series, key="ms_per_step", x="batches", spread=None):
    result = {x: xs, key: series}
    if spread is not None:
        result["spread"] = {key: spread}
    return {
        "name": name,
        "device": {"name": "GPU"},
        "torch": "2.11",
        "recorded": "2026-11-27",
        "command": "gpulab bench",
        "result": result,
    }


def test_a_job_that_took_longer_than_a_bigger_one_is_within_noise():
    record = _timed("03_placement", [16, 32, 64, 128], {"kept": [1.0, 3.9, 1.1, 1.2], "flat": [1.0, 1.1, 0.95, 1.0]})
    # 3.9 ms at 32 is over 1.25× the 1.1 ms of batch 64; the flat series wanders within 25%
    assert reference.noisy_points(record) == {"ms_per_step": {"kept": [32]}}


def test_a_rate_is_turned_into_the_time_of_its_job_before_the_rule():
    # GB/s over sizes: 4 GB/s at 1 KiB then 1 GB/s at 2 KiB is fine (the bigger copy took longer);
    # 1 GB/s at 1 KiB then 8 GB/s at 2 KiB means the small copy took 4× the time of the big one: noise.
    fine = _timed("02_bandwidth", [1024, 2048], {"copy": [4.0, 1.0]}, key="gbps", x="sizes")
    slow = _timed("02_bandwidth", [1024, 2048], {"copy": [1.0, 8.0]}, key="gbps", x="sizes")
    assert reference.noisy_points(fine) == {} and reference.noisy_points(slow) == {"gbps": {"copy": [1024]}}


def test_a_point_with_a_wide_spread_is_within_noise_in_any_record():
    # As lesson 07's slow loop records it: stages, not sizes, so only the spread can tell.
    record = _timed(
        "07_slow_loop",
        [0, 1, 2],
        {"one epoch": [10.0, 5.0, 1.0]},
        key="ms_per_epoch",
        x="stage",
        spread={"one epoch": [[9.9, 10.1], [4.0, 6.0], [0.99, 1.01]]},
    )
    record["result"]["versions"] = ["as written", "loop fixed", "+ buffer"]
    assert reference.x_key(record, "ms_per_epoch") == "stage"
    assert reference.noisy_points(record) == {"ms_per_epoch": {"one epoch": [1]}}
    assert reference.noise_mark(record)["rule"] == reference.NOISE_RULE


def test_a_figure_drawn_against_another_x_finds_the_marked_points_by_position():
    # The roofline draws GFLOP/s against intensity; the record marks batches.
    record = _timed("00_roofline", [1, 4, 16], {"cuda:0": [10.0, 5.0, 160.0]}, key="gflops")
    record["result"]["intensity"] = [0.5, 2.0, 8.0]
    assert reference.noisy_points(record) == {"gflops": {"cuda:0": [4]}}  # 4 rows took longer than 16
    assert reference.noisy_indices(record, "gflops", "cuda:0") == {1}


def test_a_record_with_nothing_timed_gets_no_mark():
    record = {"name": "04_batch", "device": {"name": "GPU"}, "result": {"batches": [1], "bytes": {"a": [1]}}}
    assert reference.noise_mark(record) is None and reference.noisy(record, "bytes", "a") == set()


def test_every_shipped_record_carries_the_mark_its_numbers_give():
    # The marks are the rule's, read from the numbers; a record is marked, never edited.
    for name in reference.names():
        record = reference.load(name)
        assert record.get("noisy") == reference.noise_mark(record), name


def test_marking_a_record_adds_the_field_and_changes_no_number(tmp_path):
    record = _timed("03_placement", [16, 32, 64], {"kept": [1.0, 3.9, 1.1]})
    path = tmp_path / "03_placement.json"
    path.write_text(json.dumps(record))
    mark = reference.mark_noise_in(path)
    written = json.loads(path.read_text())
    assert mark == written["noisy"] and written["noisy"]["points"] == {"ms_per_step": {"kept": [32]}}
    assert {k: v for k, v in written.items() if k != "noisy"} == record
    assert reference.noisy(written, "ms_per_step", "kept") == {32}
