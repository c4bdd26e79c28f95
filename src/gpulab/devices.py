"""Which devices this machine has, and a table that describes them.

The functions follow the names the course teaches (``cpu``, ``gpu``, ``try_gpu`` …) but
work with any PyTorch accelerator: CUDA (NVIDIA and ROCm), Apple's MPS and Intel's XPU.
"GPU" in these names means "the accelerator PyTorch has on this machine".
"""

from __future__ import annotations

import dataclasses
import os
import platform

import torch

from .tables import Table

__all__ = [
    "DeviceInfo",
    "DeviceTable",
    "HostLink",
    "accelerator_type",
    "best_device",
    "cpu",
    "describe",
    "gpu",
    "gpu_name",
    "host_link",
    "num_gpus",
    "peak_memory_gbps",
    "synchronize",
    "try_all_gpus",
    "try_gpu",
]


def accelerator_type() -> str | None:
    """The type of this machine's accelerator (``"cuda"``, ``"mps"``, ``"xpu"`` …), or None.

    Uses ``torch.accelerator`` (torch 2.6+); on an older torch it checks CUDA, MPS and XPU
    in that order.
    """
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "current_accelerator"):
        if not accelerator.is_available():
            return None
        return accelerator.current_accelerator().type
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return "xpu"
    return None


def cpu() -> torch.device:
    """The CPU device."""
    return torch.device("cpu")


def gpu(i: int = 0) -> torch.device:
    """Accelerator number ``i`` (``cuda:i`` on NVIDIA, ``mps:0`` on a Mac).

    This only names the device: it does not check that it exists, exactly like
    ``torch.device("cuda", 3)``. Use :func:`try_gpu` when the device may be missing.
    On a machine with no accelerator the name is ``cuda:i``.
    """
    return torch.device(accelerator_type() or "cuda", i)


def num_gpus() -> int:
    """How many accelerator devices PyTorch can use here (0 when there are none)."""
    kind = accelerator_type()
    if kind is None:
        return 0
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "device_count"):
        return accelerator.device_count()
    if kind == "mps":
        return 1
    return getattr(torch, kind).device_count()


def try_gpu(i: int = 0) -> torch.device:
    """``gpu(i)`` if that device exists, otherwise ``cpu()``."""
    return gpu(i) if num_gpus() > i else cpu()


def try_all_gpus() -> list[torch.device]:
    """Every accelerator device, or ``[cpu()]`` when there is none.

    The list is never empty, so ``for device in try_all_gpus()`` always runs at least once.
    """
    devices = [gpu(i) for i in range(num_gpus())]
    return devices or [cpu()]


def best_device() -> torch.device:
    """The device PyTorch would pick for heavy work: the current accelerator, else the CPU."""
    kind = accelerator_type()
    if kind is None:
        return cpu()
    accelerator = getattr(torch, "accelerator", None)
    try:
        return torch.device(kind, accelerator.current_device_index())
    except (AttributeError, RuntimeError):  # torch before 2.6, or a backend that cannot say
        return torch.device(kind, 0)


def synchronize(device: torch.device | str | None = None) -> None:
    """Wait until all work queued on ``device`` has finished (a no-op for the CPU and meta)."""
    device = torch.device(device) if device is not None else best_device()
    if device.type in ("cpu", "meta"):
        return
    backend = getattr(torch, device.type, None)
    if backend is not None and hasattr(backend, "synchronize"):
        if device.type == "mps":
            backend.synchronize()
        else:
            backend.synchronize(device)
        return
    torch.accelerator.synchronize(device)


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """What one device is. Fields a device type has no answer for are None."""

    device: str
    name: str
    type: str
    total_memory_bytes: int | None
    compute_capability: str | None = None
    multiprocessors: int | None = None
    bf16: bool | None = None
    tf32: bool | None = None
    cores: int | None = None
    torch_threads: int | None = None
    simd: str | None = None
    l2_cache_bytes: int | None = None
    peak_memory_gbps: float | None = None

    def as_row(self) -> dict[str, str]:
        """The record as table cells, with units."""
        memory = "—" if self.total_memory_bytes is None else f"{self.total_memory_bytes / 2**30:.1f} GiB"

        def yes_no(value: bool | None) -> str:
            return "—" if value is None else ("yes" if value else "no")

        if self.type == "cpu":
            detail = f"{self.cores} cores, {self.torch_threads} torch threads, SIMD {self.simd}"
        else:
            parts = []
            if self.compute_capability:
                parts.append(f"compute capability {self.compute_capability}")
            if self.multiprocessors:
                parts.append(f"{self.multiprocessors} multiprocessors")
            if self.l2_cache_bytes:
                parts.append(f"{self.l2_cache_bytes / 2**20:.0f} MiB L2")
            if self.peak_memory_gbps:
                parts.append(f"{self.peak_memory_gbps:,.0f} GB/s peak memory bandwidth")
            detail = ", ".join(parts) or "—"
        return {
            "device": self.device,
            "name": self.name,
            "memory": memory,
            "details": detail,
            "bf16": yes_no(self.bf16),
            "TF32": yes_no(self.tf32),
        }


class DeviceTable(Table):
    """A list of :class:`DeviceInfo` that prints as a table (text in a terminal, HTML in Jupyter)."""

    def rows(self) -> list[dict[str, str]]:
        return [info.as_row() for info in self]


def _cpuinfo_text() -> str | None:
    """/proc/cpuinfo, or None where the system has none (macOS, Windows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            return cpuinfo.read()
    except OSError:
        return None


def _sysctl(name: str) -> str | None:
    """A macOS ``sysctl`` value, or None elsewhere or when it cannot be read."""
    if platform.system() != "Darwin":
        return None
    import subprocess

    try:
        return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model() -> str:
    for line in (_cpuinfo_text() or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return _sysctl("machdep.cpu.brand_string") or platform.processor() or platform.machine() or "unknown CPU"


def _host_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# CPU feature flags that mean bfloat16 arithmetic in hardware: x86's AVX-512 BF16 and AMX-BF16
# (/proc/cpuinfo "flags"), Arm's BF16 extension ("Features"). AVX-512 without them converts bf16
# to float32 and back, slower than float32 itself.
_NATIVE_BF16_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}


def cpu_native_bf16(cpuinfo: str | None = None) -> bool | None:
    """Whether this CPU computes bfloat16 in hardware; None where the system does not say.

    Reads the feature flags of ``/proc/cpuinfo`` (or the text given), or on macOS the
    ``hw.optional.arm.FEAT_BF16`` setting. PyTorch's own ``_is_mkldnn_bf16_supported`` is not
    used: it is also true on CPUs that only emulate bfloat16 with AVX-512.
    """
    if cpuinfo is None:
        cpuinfo = _cpuinfo_text()
    if cpuinfo is not None:
        for line in cpuinfo.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("flags", "Features"):
                return bool(_NATIVE_BF16_FLAGS & set(value.split()))
        return None
    answer = _sysctl("hw.optional.arm.FEAT_BF16")
    return answer == "1" if answer in ("0", "1") else None


def _cpu_info() -> DeviceInfo:
    simd = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else None
    bf16 = cpu_native_bf16()
    return DeviceInfo(
        device="cpu",
        name=_cpu_model(),
        type="cpu",
        total_memory_bytes=_host_memory_bytes(),
        bf16=bf16,
        tf32=False,
        cores=os.cpu_count(),
        torch_threads=torch.get_num_threads(),
        simd=simd,
    )


def peak_memory_gbps(properties) -> float | None:
    """A GPU's theoretical memory bandwidth in GB/s, from its device properties, or None.

    Memory transfers data on both edges of its clock (double data rate), ``bus_width`` bits at
    a time: ``2 × memory_clock_rate (kHz) × 1000 × memory_bus_width / 8`` bytes per second.
    ``properties`` is what ``torch.cuda.get_device_properties`` returns. Recent torch versions
    expose both fields; where either is missing, or zero, the answer is None.
    """
    clock_khz = getattr(properties, "memory_clock_rate", 0) or 0
    bus_bits = getattr(properties, "memory_bus_width", 0) or 0
    if clock_khz <= 0 or bus_bits <= 0:
        return None
    return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9


# PCIe generation by the transfer rate of one lane, GT/s; generations 1 and 2 code 8 bits in 10,
# later ones 128 in 130.
_PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


@dataclasses.dataclass(frozen=True)
class HostLink:
    """The PCIe link between a GPU and its host: generation and lanes."""

    generation: int
    width: int

    @property
    def name(self) -> str:
        return f"PCIe {self.generation}.0 ×{self.width}"

    @property
    def gbps(self) -> float:
        """Its theoretical bandwidth per direction, GB/s: lanes × GT/s × line coding / 8 bits."""
        rate = {value: key for key, value in _PCIE_GENERATIONS.items()}[self.generation]
        coding = 8 / 10 if self.generation <= 2 else 128 / 130
        return self.width * rate * coding / 8


def _read_link(folder) -> tuple[float, int] | None:
    try:
        speed = (folder / "max_link_speed").read_text().split()[0]  # "16.0 GT/s PCIe" or "8 GT/s"
        width = int((folder / "max_link_width").read_text().split()[0])
        return float(speed), width
    except (OSError, ValueError, IndexError):
        return None


def host_link(i: int = 0, *, sysfs: str = "/sys") -> HostLink | None:
    """The PCIe link CUDA GPU ``i`` sits on, or None where it cannot be told.

    PyTorch does not say; Linux does, in ``/sys/bus/pci/devices/<address>/``, for the GPU and for
    the port above it: a link runs at the generation and width both ends support, the lesser of
    their ``max_link_speed`` and ``max_link_width``. (Not ``current_link_speed``: an idle GPU drops
    its link to a lower generation to save power, and raises it when copies start.) The address
    comes from the device properties (``pci_domain_id``, ``pci_bus_id``, ``pci_device_id``), which
    recent torch versions report. None: not Linux, no such properties, a GPU not on PCIe.
    """
    from pathlib import Path

    from . import simulated

    if simulated.is_simulating():
        # A simulated GPU reports the link of the card it stands for.
        spec = simulated.running().specs[i]
        generation, width = spec.link.split(";")[0].removeprefix("PCIe ").split(" x")
        return HostLink(int(float(generation)), int(width))
    props = torch.cuda.get_device_properties(i)
    address = [getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
    if None in address:
        return None
    device = Path(sysfs) / "bus" / "pci" / "devices" / "{:04x}:{:02x}:{:02x}.0".format(*address)
    ends = [end for end in (_read_link(device), _read_link(device.resolve().parent)) if end is not None]
    if not ends or not device.exists():
        return None
    speed, width = min(end[0] for end in ends), min(end[1] for end in ends)
    generation = _PCIE_GENERATIONS.get(speed)
    return HostLink(generation, width) if generation is not None and width > 0 else None


def gpu_name(i: int = 0) -> str:
    """GPU ``i``'s name: a CUDA GPU's as the driver gives it, a Mac's as Metal does ("Apple M1"); on a
    simulated machine it says "(simulated)".

    A simulated GPU (:mod:`gpulab.simulated`) answers ``torch.cuda.get_device_name`` (or
    ``torch.backends.mps.get_name``) with the real one's name: anything gpulab shows a reader names
    it as simulated.
    """
    from . import simulated

    if not torch.cuda.is_available() and accelerator_type() == "mps":
        get_name = getattr(torch.backends.mps, "get_name", None)  # not in every torch version
        name = get_name() if get_name is not None else f"Apple GPU ({platform.machine()})"
    else:
        name = torch.cuda.get_device_name(i)
    return f"{name} (simulated)" if simulated.is_simulating() else name


def _cuda_info(i: int) -> DeviceInfo:
    props = torch.cuda.get_device_properties(i)
    # bf16 and TF32 tensor cores arrived with Ampere (compute capability 8.0). A T4 (7.5)
    # runs bf16 only by emulation, which is slower than fp32.
    ampere_or_newer = (props.major, props.minor) >= (8, 0)
    is_rocm = torch.version.hip is not None
    return DeviceInfo(
        device=f"cuda:{i}",
        name=gpu_name(i),
        type="cuda",
        total_memory_bytes=props.total_memory,
        compute_capability=getattr(props, "gcnArchName", None) if is_rocm else f"{props.major}.{props.minor}",
        multiprocessors=props.multi_processor_count,
        bf16=ampere_or_newer or is_rocm,
        tf32=ampere_or_newer and not is_rocm,
        l2_cache_bytes=getattr(props, "L2_cache_size", None) or None,
        peak_memory_gbps=peak_memory_gbps(props),
    )


def _mps_info() -> DeviceInfo:
    try:
        torch.zeros(1, dtype=torch.bfloat16, device="mps")
        bf16 = True
    except (RuntimeError, TypeError):
        bf16 = False
    memory = torch.mps.recommended_max_memory() if hasattr(torch.mps, "recommended_max_memory") else None
    return DeviceInfo(
        device="mps:0",
        name=gpu_name(0),
        type="mps",
        total_memory_bytes=memory,
        bf16=bf16,
        tf32=False,
    )


def _generic_info(kind: str, i: int) -> DeviceInfo:
    backend = getattr(torch, kind)
    props = backend.get_device_properties(i) if hasattr(backend, "get_device_properties") else None
    return DeviceInfo(
        device=f"{kind}:{i}",
        name=getattr(props, "name", kind),
        type=kind,
        total_memory_bytes=getattr(props, "total_memory", None),
        multiprocessors=getattr(props, "gpu_subslice_count", None) or getattr(props, "multi_processor_count", None),
        bf16=None,
        tf32=None,
    )


def describe() -> DeviceTable:
    """One :class:`DeviceInfo` per device: the CPU first, then every accelerator.

    Displays as a table in Jupyter; ``print(describe())`` gives the same as text.
    """
    table = DeviceTable([_cpu_info()])
    kind = accelerator_type()
    for i in range(num_gpus()):
        if kind == "cuda":
            table.append(_cuda_info(i))
        elif kind == "mps":
            table.append(_mps_info())
        else:
            table.append(_generic_info(kind, i))
    return table
