import os

import pytest
import torch

import gpulab
from gpulab import devices

from conftest import requires_cuda


def test_cpu_is_the_cpu():
    assert gpulab.cpu() == torch.device("cpu")


def test_gpu_names_the_accelerator_without_checking_it_exists():
    assert gpulab.gpu(3).index == 3
    assert gpulab.gpu(3).type == (devices.accelerator_type() or "cuda")


def test_try_all_gpus_returns_cpu_when_there_is_no_gpu(monkeypatch):
    monkeypatch.setattr(devices, "num_gpus", lambda: 0)
    assert devices.try_all_gpus() == [torch.device("cpu")]
    assert devices.try_gpu() == torch.device("cpu")


def test_try_all_gpus_lists_every_gpu(monkeypatch):
    monkeypatch.setattr(devices, "num_gpus", lambda: 2)
    monkeypatch.setattr(devices, "accelerator_type", lambda: "cuda")
    assert devices.try_all_gpus() == [torch.device("cuda", 0), torch.device("cuda", 1)]
    assert devices.try_gpu(1) == torch.device("cuda", 1)
    assert devices.try_gpu(2) == torch.device("cpu")


def test_devices_returned_here_exist():
    for device in gpulab.try_all_gpus() + [gpulab.try_gpu(), gpulab.best_device()]:
        assert torch.ones(1, device=device).device.type == device.type


def test_num_gpus_matches_torch():
    expected = torch.accelerator.device_count() if torch.accelerator.is_available() else 0
    assert gpulab.num_gpus() == expected


def test_best_device_is_the_accelerator_or_cpu():
    if torch.accelerator.is_available():
        assert gpulab.best_device().type == torch.accelerator.current_accelerator().type
    else:
        assert gpulab.best_device() == torch.device("cpu")


@pytest.mark.parametrize("available", [True, False])
def test_best_device_falls_back_without_torch_accelerator(monkeypatch, available):
    # An older torch (before 2.6) has no torch.accelerator: CUDA is then asked directly.
    monkeypatch.delattr(torch, "accelerator")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2 if available else 0)
    if hasattr(torch, "xpu"):
        monkeypatch.setattr(torch.xpu, "is_available", lambda: False)
    assert devices.accelerator_type() == ("cuda" if available else None)
    assert devices.best_device() == (torch.device("cuda", 0) if available else torch.device("cpu"))
    assert devices.num_gpus() == (2 if available else 0)


def test_describe_starts_with_the_cpu_and_has_one_record_per_device():
    table = gpulab.describe()
    assert len(table) == 1 + gpulab.num_gpus()
    cpu = table[0]
    assert cpu.type == "cpu" and cpu.device == "cpu"
    assert cpu.cores == os.cpu_count()
    assert cpu.torch_threads == torch.get_num_threads()
    assert cpu.simd == torch.backends.cpu.get_cpu_capability()
    assert cpu.name and cpu.total_memory_bytes > 0
    assert cpu.tf32 is False


def test_describe_renders_as_text_and_html():
    table = gpulab.describe()
    text = str(table)
    assert text.splitlines()[0].split() == ["device", "name", "memory", "details", "bf16", "TF32"]
    assert len(text.splitlines()) == 2 + len(table)
    assert "GiB" in text
    html = table._repr_html_()
    assert html.startswith("<table>") and html.count("<tr>") == 1 + len(table)


def test_peak_memory_bandwidth_is_double_data_rate_times_the_bus():
    from types import SimpleNamespace

    # An H100 SXM as torch describes it: 2619 MHz memory clock, a 5120-bit bus: 3.35 TB/s on its data sheet.
    h100 = SimpleNamespace(memory_clock_rate=2_619_000, memory_bus_width=5120)
    assert devices.peak_memory_gbps(h100) == pytest.approx(3352.3, abs=0.1)
    assert devices.peak_memory_gbps(SimpleNamespace(memory_clock_rate=0, memory_bus_width=5120)) is None
    assert devices.peak_memory_gbps(SimpleNamespace(name="an older torch without the fields")) is None


def test_device_details_name_l2_and_peak_bandwidth_when_known():
    info = devices.DeviceInfo(
        device="cuda:0",
        name="GPU",
        type="cuda",
        total_memory_bytes=80 * 2**30,
        compute_capability="9.0",
        multiprocessors=132,
        l2_cache_bytes=50 * 2**20,
        peak_memory_gbps=3352.3,
    )
    assert info.as_row()["details"] == (
        "compute capability 9.0, 132 multiprocessors, 50 MiB L2, 3,352 GB/s peak memory bandwidth"
    )
    bare = devices.DeviceInfo(device="xpu:0", name="GPU", type="xpu", total_memory_bytes=None)
    assert bare.as_row()["details"] == "—" and bare.as_row()["memory"] == "—"


def test_synchronize_accepts_cpu_and_meta():
    gpulab.synchronize("cpu")
    gpulab.synchronize(torch.device("meta"))


@requires_cuda
def test_describe_reports_cuda_properties():
    table = gpulab.describe()
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        info = table[1 + i]
        assert info.device == f"cuda:{i}" and info.name == props.name
        assert info.total_memory_bytes == props.total_memory
        assert info.multiprocessors == props.multi_processor_count
        assert info.compute_capability == f"{props.major}.{props.minor}"
        assert info.bf16 == ((props.major, props.minor) >= (8, 0))
        assert info.peak_memory_gbps == devices.peak_memory_gbps(props)


@requires_cuda
def test_cuda_devices_are_listed():
    assert gpulab.try_all_gpus() == [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    gpulab.synchronize(gpulab.gpu(0))


def test_only_bfloat16_in_hardware_counts_as_cpu_support():
    from gpulab.devices import cpu_native_bf16

    avx512_only = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512bw avx512vl\n"
    sapphire_rapids = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile amx_bf16\n"
    graviton3 = "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n"
    assert cpu_native_bf16(avx512_only) is False
    assert cpu_native_bf16(sapphire_rapids) is True and cpu_native_bf16(graviton3) is True
    assert cpu_native_bf16("processor\t: 0\n") is None


def _pci_tree(root, gpu, port, address="0000:01:00.0"):
    """A sysfs tree as Linux lays it out: the GPU's folder inside its port's, and a link to it by address."""
    port_folder = root / "devices" / "pci0000:00" / "0000:00:01.0"
    for folder, (speed, width) in ((port_folder, port), (port_folder / address, gpu)):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "max_link_speed").write_text(f"{speed}\n")
        (folder / "max_link_width").write_text(f"{width}\n")
    (root / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
    (root / "bus" / "pci" / "devices" / address).symlink_to(port_folder / address)


class _Properties:
    pci_domain_id, pci_bus_id, pci_device_id = 0, 1, 0


@pytest.mark.parametrize(
    "gpu, port, expected",
    [
        (("16.0 GT/s PCIe", 16), ("16.0 GT/s PCIe", 16), "PCIe 4.0 ×16"),
        (("32.0 GT/s PCIe", 16), ("16.0 GT/s PCIe", 16), "PCIe 4.0 ×16"),  # an H100 in a PCIe 4.0 server
        (("8 GT/s", 16), ("8 GT/s", 8), "PCIe 3.0 ×8"),  # older kernels: no "PCIe"; a ×8 slot
        (("8.0 GT/s PCIe", 16), ("Unknown", "255"), "PCIe 3.0 ×16"),  # a port that reports nothing usable
    ],
)
def test_the_host_link_is_what_both_ends_of_it_support(tmp_path, monkeypatch, gpu, port, expected):
    _pci_tree(tmp_path, gpu, port)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: _Properties())
    link = devices.host_link(0, sysfs=str(tmp_path))
    assert link is not None and link.name == expected


def test_the_host_link_is_unknown_where_linux_or_torch_does_not_tell(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: _Properties())
    assert devices.host_link(0, sysfs=str(tmp_path)) is None  # no such device folder

    class Older:  # a torch without PCI ids
        pass

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Older())
    assert devices.host_link(0, sysfs=str(tmp_path)) is None


def test_a_links_bandwidth_is_lanes_times_rate_times_coding():
    assert devices.HostLink(3, 16).gbps == pytest.approx(15.75, rel=1e-3)
    assert devices.HostLink(4, 16).gbps == pytest.approx(31.5, rel=1e-3)
    assert devices.HostLink(5, 16).gbps == pytest.approx(63.0, rel=1e-3)
    assert devices.HostLink(2, 16).gbps == pytest.approx(8.0)  # 8b/10b coding
