"""gpulab.reference: records of a real GPU read by a panel's name, and the data sheets of well-known GPUs.
(Published measurements: test_published.py.)"""

import json

import pytest

from gpulab import figures, reference


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


def test_a_reference_is_found_by_its_panels_figure_as_by_its_name(monkeypatch, tmp_path):
    record = {"device": {"name": "NVIDIA H200"}, "torch": "2.11.0", "recorded": "2026-11-21",
              "command": "gpulab bench", "result": {"sizes": [64]}}
    (tmp_path / "02_bandwidth.json").write_text(json.dumps(record))
    monkeypatch.setattr(reference, "_folder", lambda: tmp_path)
    assert reference.load(figures.bandwidth) == reference.load("02_bandwidth") == record
    assert reference.describe(figures.bandwidth) == reference.describe("02_bandwidth") != reference.NOT_RECORDED
    assert reference.load(figures.sync) is None
    with pytest.raises(TypeError, match="neither a panel's name nor a figure registered"):
        reference.load(figures.cuda_snapshot)              # a figure, but no panel's


def test_published_measurements_are_picked_by_key_and_an_unknown_key_is_refused():
    first, second = reference.PUBLISHED[:2]
    assert reference.published([second.key, first.key]) == (first, second)
    assert reference.published([]) == ()
    with pytest.raises(ValueError, match="no published measurement has the key 'nowhere'"):
        reference.published([first.key, "nowhere"])
