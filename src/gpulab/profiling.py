"""A profiler's trace drawn inside the notebook: no website, no upload.

``torch.profiler``'s ``export_chrome_trace`` writes the Chrome trace format, which Perfetto and
chrome://tracing open. :func:`read_trace` reads the timed events back from such a file (or from
a profiler that has finished), and :func:`draw_timeline` lays them out as a timeline: one band
per CPU thread and per GPU stream, nested calls one level below their caller, as those viewers
do. The lessons call the profiler themselves; the reading and drawing live here, and the counting
that must agree on every device: :func:`operators`, :func:`calls_by_your_code` and :func:`sync_count`
keep the operators the CPU ran, not the kernels, copies and GPU-side copies of labels that a CUDA
profile holds beside them.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from . import plots

__all__ = [
    "TraceEvent",
    "Traffic",
    "calls_by_your_code",
    "draw_timeline",
    "is_operator",
    "memory_traffic",
    "operators",
    "ran_on_cpu",
    "read_trace",
    "short_name",
    "show_trace",
    "sync_count",
]

# The categories of timed events worth a row: what ran on the CPU (operators, record_function
# labels, the profiler's step marks, and on CUDA the runtime calls: launches, copies,
# cudaStreamSynchronize) and what ran on an accelerator (kernels, copies, memsets, and the
# GPU-side copies of the labels).
CPU_CATEGORIES = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}


@dataclass(frozen=True)
class TraceEvent:
    """One timed event: its name, category, where it ran (``row``), start and length in µs, and its
    nesting ``depth`` in that row (0: called by nothing else that was recorded)."""

    name: str
    category: str
    row: str
    start_us: float
    duration_us: float
    depth: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def _row_names(metadata: list[dict]) -> dict[tuple, str]:
    names = {}
    for event in metadata:
        if event.get("name") == "thread_name":
            names[(event.get("pid"), event.get("tid"))] = str(event.get("args", {}).get("name", ""))
    return names


def _row(event: dict, thread_names: dict[tuple, str]) -> str:
    if event["cat"] in DEVICE_CATEGORIES:
        return f"GPU {event.get('pid')} · stream {event.get('tid')}"
    name = thread_names.get((event.get("pid"), event.get("tid")), "")
    return (
        "CPU · main thread"
        if event.get("tid") == event.get("pid") or "python" in name
        else f"CPU · thread {event.get('tid')}"
    )


def read_trace(trace, max_depth: int = 3) -> list[TraceEvent]:
    """The timed events of a Chrome trace, with each one's row and nesting depth.

    ``trace`` is a path to a file ``export_chrome_trace`` wrote, or a ``torch.profiler.profile``
    that has finished: its trace is exported to a temporary file and read back — and a profiler
    writes its trace only once, so export it yourself first if you want the file. Events nested
    deeper than ``max_depth`` are left out: a timeline cannot show them anyway. Times start at 0
    with the first event kept.
    """
    if hasattr(trace, "export_chrome_trace"):
        handle, path = tempfile.mkstemp(prefix="gpulab-trace-", suffix=".json")
        os.close(handle)
        try:
            trace.export_chrome_trace(path)
            return read_trace(path, max_depth)
        finally:
            os.unlink(path)
    try:
        data = json.loads(Path(trace).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{trace} is not a readable Chrome trace: {error}") from None
    raw = data.get("traceEvents", []) if isinstance(data, dict) else data
    thread_names = _row_names([e for e in raw if isinstance(e, dict) and e.get("ph") == "M"])
    timed = [
        e
        for e in raw
        if isinstance(e, dict)
        and e.get("ph") == "X"
        and "dur" in e
        and e.get("cat") in CPU_CATEGORIES | DEVICE_CATEGORIES
    ]
    if not timed:
        return []
    origin = min(float(e["ts"]) for e in timed)
    by_row: dict[str, list[dict]] = {}
    for event in timed:
        by_row.setdefault(_row(event, thread_names), []).append(event)
    events = []
    for row, row_events in by_row.items():
        open_until: list[float] = []  # end times of the calls that enclose the next event
        for event in sorted(row_events, key=lambda e: (float(e["ts"]), -float(e["dur"]))):
            start, duration = float(event["ts"]) - origin, float(event["dur"])
            while open_until and open_until[-1] <= start:
                open_until.pop()
            depth = len(open_until)
            open_until.append(start + duration)
            if depth <= max_depth:
                events.append(TraceEvent(str(event.get("name", "")), event["cat"], row, start, duration, depth))
    return sorted(events, key=lambda e: (e.row, e.depth, e.start_us))


# Reads of a value back to the host: .item() and float() run aten::item, `if tensor` runs aten::is_nonzero,
# and each of them aten::_local_scalar_dense. On a GPU each one waits for the device.
VALUE_READS = ("aten::item", "aten::_local_scalar_dense", "aten::is_nonzero")
# The CUDA runtime's calls that make the host wait. PyTorch synchronises a stream after every copy to or from
# the device made without non_blocking=True, and after every value read (c10/cuda/CUDAFunctions.h,
# memcpy_and_sync); they are recorded with ProfilerActivity.CUDA.
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def ran_on_cpu(event) -> bool:
    """Whether a profiler event (``FunctionEvent``) or table row (``FunctionEventAvg``) ran on the CPU.

    A CUDA profile also holds what ran on the GPU: a row per kernel, copy and memset, and a GPU-side
    copy of each ``record_function`` label and ``ProfilerStep``; their ``device_type`` is CUDA and
    their CPU times are 0."""
    from torch.autograd import DeviceType

    return event.device_type == DeviceType.CPU


# Autograd's own rows have a "::" too, and are not operators: the engine running a backward node
# ("autograd::engine::evaluate_function: AddmmBackward0", whose totals hold the node's operators) and its
# C++ nodes ("torch::autograd::AccumulateGrad", which adds a gradient into .grad).
AUTOGRAD_PREFIXES = ("autograd::", "torch::autograd::")


def is_operator(name: str) -> bool:
    """Whether a row's name is an operator's: a ``::`` in it (``aten::addmm``, ``c10d::allreduce_``), and
    not one of autograd's own rows (``autograd::engine::evaluate_function: …``, ``torch::autograd::…``)."""
    return "::" in name and not name.startswith(AUTOGRAD_PREFIXES)


def operators(averages) -> list:
    """The rows of ``averages`` (what ``key_averages()`` returns) that are operators the CPU ran:
    run on the CPU, with ``::`` in the name (``aten::addmm``), and not autograd's own rows
    (``autograd::engine::evaluate_function: …``, ``torch::autograd::AccumulateGrad``), whose totals
    hold the operators they ran. Labels (``forward``, ``Optimizer.step#SGD.step``, ``ProfilerStep*``),
    autograd's nodes (``AddmmBackward0``) and CUDA runtime calls have no ``::``; kernels often do
    (``void at::native::…``, ``void cutlass::Kernel2<…>``) but ran on the GPU."""
    return [row for row in averages if ran_on_cpu(row) and is_operator(row.key)]


def calls_by_your_code(events) -> dict[str, int]:
    """How often each name was called by your code: the events the CPU ran (``prof.events()``) that no
    operator called — an op's inner calls are events too (``aten::to`` runs ``aten::_to_copy``),
    and a label (``forward``) is not an operator. Kernels and GPU-side copies of labels are left out:
    an optimizer step counts once on a GPU as on a CPU."""
    counts: dict[str, int] = {}
    for event in events:
        parent = event.cpu_parent
        if ran_on_cpu(event) and (parent is None or "::" not in parent.name):
            counts[event.name] = counts.get(event.name, 0) + 1
    return counts


def sync_count(events) -> int:
    """How often the host waited for the device, in ``prof.events()``: the synchronising CUDA runtime
    calls where the profile recorded them (``ProfilerActivity.CUDA``) — value reads and copies
    between host and device without ``non_blocking=True`` among them — and elsewhere the value
    reads your code made (``.item()``, ``float()``, ``if tensor``), which would wait on a GPU."""
    events = list(events)
    runtime = sum(1 for event in events if event.name in SYNC_CALLS)
    reads = calls_by_your_code(events)
    return max(runtime, sum(reads.get(name, 0) for name in VALUE_READS))


@dataclass(frozen=True)
class Traffic:
    """One operator of an eager run and the bytes its kernel moves: ``read`` (its tensor inputs, each once) and
    ``written`` (its tensor outputs)."""

    name: str
    read: int
    written: int


def memory_traffic(fn, *args, **kwargs) -> list[Traffic]:
    """Run ``fn(*args, **kwargs)`` eagerly and list the operators it ran, each with the bytes its kernel
    reads and writes: its tensor inputs (a tensor passed twice, as in ``x * x``, counted once) and its
    tensor outputs. That is what an unfused kernel moves through memory when nothing stays in a cache
    between kernels, lesson 09's model of an eager chain. Views (``view``, ``t``, ``expand``) move
    nothing and are left out; Python numbers are part of the kernel, not memory.

    It watches the operators with a ``TorchDispatchMode``, the mechanism ``torch.utils.flop_counter``
    counts FLOPs with: the counts are of the operators PyTorch really dispatched (``F.gelu`` is one,
    a GELU written out in ``*``, ``+`` and ``tanh`` eight)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    def tensor_bytes(values) -> int:
        seen, total = set(), 0
        for value in tree_flatten(values)[0]:
            if isinstance(value, torch.Tensor) and id(value) not in seen:
                seen.add(id(value))
                total += value.numel() * value.element_size()
        return total

    ops: list[Traffic] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not getattr(func, "is_view", False):
                ops.append(Traffic(func.overloadpacket.__name__, tensor_bytes((args, kwargs)), tensor_bytes(out)))
            return out

    with Watch():
        fn(*args, **kwargs)
    return ops


# Labels a lesson gives its regions keep these colours in every timeline; ops get theirs by name.
REGION_COLORS = {"forward": "#4c72b0", "backward": "#dd8452", "optimizer": "#55a868", "data": "#8172b3"}
_PALETTE = [
    "#4c72b0",
    "#dd8452",
    "#55a868",
    "#c44e52",
    "#8172b3",
    "#937860",
    "#da8bc3",
    "#8c8c8c",
    "#ccb974",
    "#64b5cd",
]


def _color(name: str) -> str:
    if name in REGION_COLORS:
        return REGION_COLORS[name]
    if name.startswith("ProfilerStep"):
        return "#bbbbbb"
    return _PALETTE[sum(map(ord, name)) % len(_PALETTE)]


def short_name(name: str) -> str:
    """An op's name without the prefixes every op shares ("aten::", autograd's "evaluate_function: ")."""
    return name.removeprefix("aten::").removeprefix("autograd::engine::evaluate_function: ")


def draw_timeline(ax, events, title: str = "", gid: str = "yours|timeline") -> None:
    """Draw ``events`` (:class:`TraceEvent` or their dicts) on ``ax``: time in ms across, a row per
    thread or stream and nesting level down, each bar named where it is wide enough."""
    events = [e if isinstance(e, TraceEvent) else TraceEvent(**e) for e in events]
    if not events:
        raise ValueError("the trace holds no timed events: was anything run inside the profiler?")
    by_row: dict[tuple[str, int], list[TraceEvent]] = {}
    for e in events:
        by_row.setdefault((e.row, e.depth), []).append(e)
    rows = sorted(by_row, key=lambda r: (not r[0].startswith("CPU · main"), r[0], r[1]))
    end_ms = max(e.start_us + e.duration_us for e in events) / 1e3
    labels = []
    for y, (row, depth) in enumerate(rows):
        bars = by_row[(row, depth)]
        ax.broken_barh(
            [(e.start_us / 1e3, max(e.duration_us / 1e3, end_ms * 1e-3)) for e in bars],
            (y - 0.4, 0.8),
            facecolors=[_color(e.name) for e in bars],
            edgecolor="white",
            linewidth=0.3,
            gid=gid,
        )
        for e in bars:
            if e.duration_us / 1e3 > end_ms * 0.06:
                ax.text(
                    (e.start_us + e.duration_us / 2) / 1e3,
                    y,
                    short_name(e.name)[:18],
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white",
                    clip_on=True,
                )
        if all(e.name.startswith("ProfilerStep") for e in bars):
            what = "steps"
        elif all(e.category in {"user_annotation", "gpu_user_annotation"} for e in bars):
            what = "labels"
        else:
            what = f"ops, level {depth}"
        labels.append(f"{row} · {what}")
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, end_ms * 1.01)
    ax.set_xlabel("time (ms)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)


def show_trace(trace, max_depth: int = 3, title: str = "", figsize: tuple[float, float] = (10, 3.2)) -> None:
    """Read a trace (a file or a finished profiler) and show its timeline in the notebook."""
    events = read_trace(trace, max_depth)
    figure = plots.new_figure(figsize)
    draw_timeline(figure.subplots(), events, title)
    plots.show(figure)
