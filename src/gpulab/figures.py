"""Each experiment panel's figure, registered under the panel's name: ``draw(result, figure)``.

``@panel("02_bandwidth")`` on a figure is the one place a panel's name is written. The figure
carries it (``bandwidth.panel_name``), and everything else reads it from there: a lesson's
``gpulab.widgets.Panel(..., plot=gpulab.figures.bandwidth)`` takes the figure's name as its own,
``gpulab bench`` records the panel under it (``02_bandwidth.json``), and the figure draws the
reference recorded under it. :data:`PANELS` holds every panel's figure by name.

Each draws a panel's result with :func:`gpulab.plots.series`, next to that reference (read when
drawing, so a reference recorded later shows at once). With no accelerator here and no reference
recorded, a figure shows well-known figures instead — theoretical link rates, a model, a spec
sheet — each labelled as such, never an empty axes. On every machine, a panel whose quantity
someone measured on a real GPU and published draws those measurements too (the entries of
:data:`gpulab.reference.PUBLISHED` its registration names), long-dashed (an open marker at its
size where one was measured at a single size), each labelled "published" with its GPU and source.

The parts these figures are drawn with — axes, series, colours, notes — are :mod:`gpulab.plots`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import plots, profiling, reference, timing, units

__all__ = [
    "PANELS",
    "allreduce",
    "amdahl",
    "amp_step",
    "bandwidth",
    "batch_memory",
    "checkpointing",
    "collectives",
    "compile_step",
    "cuda_snapshot",
    "cudnn_steps",
    "ddp_gradients",
    "ddp_throughput",
    "dtype_matmul",
    "fusion",
    "matmul",
    "memory_timeline",
    "number_formats",
    "overhead",
    "panel",
    "placement",
    "profile_step",
    "roofline",
    "sawtooth",
    "sharding",
    "slow_loop",
    "sync",
    "throughput",
    "underflow",
]

# Each panel's name → its figure, in the order they were registered.
PANELS: dict[str, Callable] = {}

# A panel's name: its lesson's number, then a word or two ("02_bandwidth"); it names its record's file too.
PANEL_NAME = re.compile(r"\d\d_[a-z0-9_]+")

_O = plots.OKABE_ITO  # the colours a kind of series asks for, where a figure can grant them


def panel(name: str, *, published: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Register the decorated ``draw(result, figure)`` as the figure of the panel ``name``, which draws,
    beside a result, the published measurements whose keys are in ``published`` (:data:`gpulab.reference.PUBLISHED`).

    The figure keeps them as ``draw.panel_name`` and ``draw.published_keys``. ValueError for a name that is not
    ``NN_words``, a name another figure has, or a key no published measurement has.
    """
    if not PANEL_NAME.fullmatch(name):
        raise ValueError(f"panel name {name!r}: give the lesson's number, then words, as in '02_bandwidth'")
    reference.published(published)  # every key must name a published measurement

    def register(draw: Callable) -> Callable:
        if name in PANELS:
            raise ValueError(f"panel {name!r} already has a figure: {PANELS[name].__name__}")
        draw.panel_name = name
        draw.published_keys = tuple(published)
        PANELS[name] = draw
        return draw

    return register


def _no_accelerator(result: dict, by_device_key: str | None = None) -> bool:
    if by_device_key is not None:
        return not any(plots.is_accelerator(name) for name in result[by_device_key])
    return result.get("device", "cpu") == "cpu"


def _same_experiment(record: dict | None, result: dict, keys: tuple[str, ...]) -> dict | None:
    """The reference record if it was run with the same settings (``keys``) as ``result``, else None."""
    if record is None or any(record["result"].get(key) != result.get(key) for key in keys):
        return None
    return record


def _not_drawn(record: dict | None, result: dict, keys: tuple[str, ...]) -> str:
    """Why the reference is not drawn beside ``result``: none was recorded, or it ran with other settings (which)."""
    if record is None:
        return reference.NOT_RECORDED
    other = [
        f"other {key}" if isinstance(value, (list, tuple)) else f"{key} {value}"
        for key in keys
        if (value := record["result"].get(key)) != result.get(key)
    ]
    return f"the {reference.gpu_label(record)} reference ran with {', '.join(other)}: choose that to see it here"


# Published measurements are long-dashed, without markers: unlike the reader's curves (solid, with
# markers), a recorded reference (short dashes, with markers) and figures not measured (dotted). One
# measured at a single size is an open marker at that size, with no line. Each publication has a colour
# of its own (a colour for one source), each of its figures a dash pattern or marker of its own.
def _published(
    ax, draw: Callable, unit: str, *, dtype: str | None = None, direction: str | None = None, label=None
) -> list:
    """A horizontal line on ``ax`` for each published measurement the panel figure ``draw`` draws (of that
    dtype or direction), at its value in ``unit`` — the unit of the axis, which the caller names. A figure
    measured at one size (``entry.nbytes``, on an axis of bytes) is an open marker at that size, not a line.
    ``label(entry)``: its legend label, where not ``entry.label(unit)``."""
    figure, lines = ax.figure, []
    for entry in reference.published(draw.published_keys, dtype=dtype, direction=direction):
        text = label(entry) if label else entry.label(unit)
        style = dict(
            color=plots.color_of(figure, f"published: {entry.gpu} ({entry.short})"),
            label=text,
            gid=f"published|{entry.key}",
        )
        if entry.nbytes is not None:
            lines += ax.plot(
                [entry.nbytes],
                [entry.value_in(unit)],
                linestyle="none",
                marker=plots.marker_of(figure, text),
                markersize=8,
                markerfacecolor="none",
                markeredgewidth=2,
                **style,
            )
        else:
            dashes = plots.published_style(figure, text)
            lines.append(ax.axhline(entry.value_in(unit), linestyle=dashes, linewidth=1.3, alpha=0.9, **style))
    return lines


def _finish(ax, xlabel: str, ylabel: str, *, x: str = "log2") -> None:
    {"log2": plots.log2_axis, "bytes": plots.bytes_axis, "log": plots.log_axis}[x](ax)
    plots.log_axis(ax, "y")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)


# ---------------------------------------------------------------- lesson 00


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"


def _roof(ceilings: dict, dtype: str, intensity: float) -> float:
    """The roofline: what a device can reach at ``intensity`` FLOP/byte, in GFLOP/s."""
    return min(ceilings[dtype], ceilings["copy_gbps"] * intensity)


def _roof_grid(intensities, ridges) -> list[float]:
    # From below the first point to past the last point and past every ridge, so the bend shows.
    low, high = min(intensities) / 2, max(*intensities, *ridges) * 2
    steps = 48
    return [low * (high / low) ** (k / steps) for k in range(steps + 1)]


@panel(
    "00_roofline",
    published=("zzc-h100-sxm-float32", "zzc-h100-sxm-float16", "mamf-h100-sxm-bfloat16", "mamf-a100-sxm-bfloat16"),
)
def roofline(result: dict, figure) -> None:
    """Achieved GFLOP/s of a Linear layer against its arithmetic intensity, under the
    roof the device's measured ceilings make, with its ridge point; without an accelerator and a
    reference, the rooflines of well-known GPUs from their data sheets; on every machine, the
    published matrix-multiply rates of real GPUs in this dtype."""
    record = reference.load(roofline.panel_name)
    usable = _same_experiment(record, result, ("dtype",))
    dtype, ax = result["dtype"], figure.subplots()
    grid = _roof_grid(result["intensity"], [c[dtype] / c["copy_gbps"] for c in result["ceilings"].values()])
    batches = result["batches"]
    plots.series(
        ax,
        result,
        x="intensity",
        y="gflops",
        by_device=True,
        reference=usable,
        label=lambda device: f"Linear {result['width']}→{result['width']}, batch {batches[0]}…{batches[-1]}",
    )
    runs = [("yours", result, None)] + (
        [("reference", usable["result"], reference.gpu_label(usable))] if usable is not None else []
    )
    for owner, run, gpu in runs:
        for device, ceilings in run["ceilings"].items():
            if owner == "reference" and not plots.is_accelerator(device):
                continue
            who = device if owner == "yours" else f"{gpu} (reference)"
            # The roof of a device is drawn in its colour: in this figure a colour is a device.
            color = plots.color_of(figure, who)
            ax.plot(
                grid,
                [_roof(ceilings, dtype, i) for i in grid],
                "-" if owner == "yours" else plots.REFERENCE_STYLE,
                color=color,
                linewidth=2.5,
                alpha=0.35,
                label=plots.named(f"roof: {_rate(ceilings[dtype])} GFLOP/s, {_rate(ceilings['copy_gbps'])} GB/s", who),
                gid=f"{owner}|roof {device}",
            )
            if owner == "yours":
                ridge = ceilings[dtype] / ceilings["copy_gbps"]
                plots.mark_x(ax, ridge, f"ridge {ridge:.1f} FLOP/B")
                for other, peak in ceilings.items():
                    if other not in (dtype, "copy_gbps"):
                        ax.axhline(
                            peak,
                            color=color,
                            linestyle="-.",
                            linewidth=1,
                            alpha=0.6,
                            label=plots.named(f"{other} peak: {_rate(peak)} GFLOP/s", device),
                            gid=f"yours|peak {other} {device}",
                        )
    if _no_accelerator(result, "gflops") and usable is None:
        for gpu in (g for g in reference.KNOWN_GPUS if g.name in ("T4", "H100 SXM")):
            if dtype != "float32" and dtype not in gpu.tensor_dtypes:
                continue
            peak = (gpu.float32_tflops if dtype == "float32" else gpu.tensor_tflops) * 1e3
            plots.known_curve(
                ax,
                grid,
                [min(peak, gpu.memory_gbps * i) for i in grid],
                f"{gpu.name} roof, {dtype} (spec sheet): {peak:,.0f} GFLOP/s, {gpu.memory_gbps:,} GB/s",
            )
        plots.note(
            figure,
            "no accelerator here · "
            + (
                reference.NOT_RECORDED
                if record is None
                else f"the reference was recorded in {record['result'].get('dtype')}"
            ),
        )
    _published(ax, roofline, "GFLOP/s", dtype=dtype)
    _finish(ax, f"arithmetic intensity (FLOP per byte moved, {dtype})", "achieved GFLOP/s", x="log")
    plots.legend(figure)


@panel("00_overhead", published=("copy-h100-pcie", "copy-t4-pcie"))
def overhead(result: dict, figure) -> None:
    """Time per call of a tiny elementwise op, and the bandwidth it reaches, against the
    tensor's size; where each device's time leaves its floor. Without an accelerator and a
    reference, a GPU modelled as a fixed cost per call plus its data sheet's bandwidth. On every
    machine, published copy bandwidths within real GPUs' memory, bytes read plus written."""
    record = reference.load(overhead.panel_name)
    time_ax, rate_ax = figure.subplots(1, 2)
    sizes = result["sizes"]
    plots.series(time_ax, result, x="sizes", y="seconds", scale=1e6, by_device=True, reference=record)
    plots.series(
        rate_ax, result, x="sizes", y="seconds", derive=lambda n, s: 2 * n / s / 1e9, by_device=True, reference=record
    )
    for device, values in result["seconds"].items():
        floor = sorted(values[:3])[len(values[:3]) // 2]
        leaves = next((n for n, s in zip(sizes, values) if s > 2 * floor), None)
        if leaves is not None:
            plots.mark_x(time_ax, leaves, f"{device}: 2× its floor")
    if _no_accelerator(result, "seconds") and record is None:
        h100 = next(g for g in reference.KNOWN_GPUS if g.name == "H100 SXM")
        per_call_s = reference.LAUNCH_MODEL_S
        model_s = [per_call_s + 2 * n / (h100.memory_gbps * 1e9) for n in sizes]
        label = (
            f"a GPU, model: {per_call_s * 1e6:g} µs a call + bytes / {h100.memory_gbps:,} GB/s ({h100.name} spec sheet)"
        )
        plots.known_curve(time_ax, sizes, [s * 1e6 for s in model_s], label)
        plots.known_curve(rate_ax, sizes, [2 * n / s / 1e9 for n, s in zip(sizes, model_s)], label)
        plots.note(figure, "no accelerator here · " + reference.NOT_RECORDED)
    _published(rate_ax, overhead, "GB/s")  # copies within device memory, counted read plus written
    time_ax.set_title("time per call of x.add_(1)", fontsize=9)
    rate_ax.set_title("bytes read and written per second", fontsize=9)
    _finish(time_ax, "tensor size", "µs per call", x="bytes")
    _finish(rate_ax, "tensor size", "achieved GB/s", x="bytes")
    plots.legend(figure)


@panel("00_amdahl")
def amdahl(result: dict, figure) -> None:
    """A CPU matmul's measured speed-up against its threads, Amdahl's law fitted to it,
    and the law for the chosen p up to the chosen number of processors (curves the lesson computed)."""
    record = reference.load(amdahl.panel_name)
    ax = figure.subplots()
    law, p = result["law"], result["p"]
    measured = "measured speed-up"
    law_label = f"Amdahl's law, p = {p:g}"
    law_color = plots.color_of(figure, law_label, plots.OKABE_ITO["reddish purple"])
    ax.plot(law["processors"], law["speedup"], "-", color=law_color, linewidth=2, label=law_label, gid="model|law")
    ax.axhline(
        1 / (1 - p),
        color=law_color,
        linestyle=":",
        linewidth=1.2,
        label=f"{law_label} · its limit 1 / (1 − p) = {1 / (1 - p):,.0f}×",
        gid="model|limit",
    )
    perfect = [n for n in law["processors"] if n <= 2 / (1 - p)]
    ax.plot(
        perfect,
        perfect,
        "--",
        color=plots.MARK_COLOR,
        linewidth=0.8,
        label="perfect scaling: speed-up = N",
        gid="mark|perfect",
    )
    plots.series(
        ax,
        result,
        x="threads",
        y="speedup",
        reference=record,
        on_reference_cpu=True,
        colors={"measured": plots.DEVICE_COLORS["cpu"]},
        label=lambda name: measured,
        where=f"cpu, {result['cores']} cores",
    )
    fit = result["fit"]
    if fit is not None:
        ax.plot(
            fit["processors"],
            fit["speedup"],
            "-.",
            color=plots.color_of(figure, measured),
            linewidth=1,
            label=f"{measured} · Amdahl's law fitted to it: p = {fit['p']:.2f}",
            gid="fit|measured",
        )
    plots.mark_x(ax, result["cores"], f"{result['cores']} cores here")
    ax.set_title(f"speed-up of a {result['n']}×{result['n']} CPU matrix multiply with more threads", fontsize=9)
    _finish(ax, "processors (threads) N", "speed-up over one")
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 01


@panel("01_matmul", published=("zzc-h100-sxm-float32", "zzc-h100-sxm-float16", "zzc-h100-sxm-bfloat16"))
def matmul(result: dict, figure) -> None:
    """Time per multiply and GFLOP/s against n, per device; where an accelerator
    takes the lead; without one, the spec-sheet peaks of common GPUs for this dtype; on every
    machine, a real GPU's published rate in this dtype."""
    from .timing import crossover

    record = reference.load(matmul.panel_name)
    usable = _same_experiment(record, result, ("dtype",))
    time_ax, rate_ax = figure.subplots(1, 2)
    sizes = result["sizes"]
    plots.series(time_ax, result, x="sizes", y="seconds", scale=1e3, by_device=True, reference=usable)
    plots.series(
        rate_ax,
        result,
        x="sizes",
        y="seconds",
        derive=lambda n, s: 2 * n**3 / s / 1e9,
        by_device=True,
        reference=usable,
    )
    for device, values in result["seconds"].items():
        if plots.is_accelerator(device):
            n_cross = crossover(sizes, result["seconds"]["cpu"], values)
            if n_cross is not None:
                plots.mark_x(rate_ax, n_cross, f"{device} ahead from n={n_cross}")
    if _no_accelerator(result, "seconds") and usable is None:
        peaks = reference.SPEC_PEAK_TFLOPS.get(result["dtype"], {})
        for gpu, tflops in peaks.items():
            plots.known_level(rate_ax, tflops * 1e3, f"{gpu} peak, {tflops:g} TFLOP/s (spec sheet)")
        plots.note(
            figure,
            "no accelerator here · "
            + (
                reference.NOT_RECORDED
                if record is None
                else f"the reference was recorded in {record['result'].get('dtype')}"
            ),
        )
    _published(rate_ax, matmul, "GFLOP/s", dtype=result["dtype"])
    _finish(time_ax, "n (matrices are n × n)", "time per multiply (ms)")
    _finish(rate_ax, "n (matrices are n × n)", "achieved GFLOP/s")
    time_ax.set_title(f"{result['dtype']} matrix multiply: time", fontsize=9)
    rate_ax.set_title(f"{result['dtype']} matrix multiply: rate", fontsize=9)
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 02

# What each kind of copy asks to be drawn in; a figure grants it where no other kind has it.
METHOD_COLORS = {
    "pageable": plots.OKABE_ITO["orange"],
    "pinned": plots.OKABE_ITO["bluish green"],
    "pinned + non_blocking": plots.OKABE_ITO["blue"],
    "host memory copy": plots.OKABE_ITO["sky blue"],
    "pin_memory(), block reused": plots.OKABE_ITO["reddish purple"],
}


def _method(name: str) -> str:
    return name.split(" ", 1)[1] if "→" in name else name


def _both_directions(entry, unit: str) -> str:
    """A published copy's label naming its value in each direction the panel figure draws it in, so that the
    same copy measured both ways is one legend entry: "published: T4 PCIe 16GB, pinned, 32 MB: 9.7 GB/s
    host→device, 11.1 GB/s device→host (router-gao/cuda-demo)"."""
    pair = [
        other
        for other in reference.published(bandwidth.published_keys)
        if (other.gpu, other.memory, other.nbytes, other.short) == (entry.gpu, entry.memory, entry.nbytes, entry.short)
    ]
    size = f", {units.format_bytes(entry.nbytes)}" if entry.nbytes is not None else ""
    values = ", ".join(f"{other.value_in(unit):.4g} {unit} {other.direction}" for other in pair)
    return f"published: {entry.gpu}, {entry.memory}{size}: {values} ({entry.short})"


@panel(
    "02_bandwidth",
    published=(
        "blog-nvs4200m-h2d-pageable",
        "blog-nvs4200m-h2d-pinned",
        "blog-nvs4200m-d2h-pageable",
        "blog-nvs4200m-d2h-pinned",
        "bandwidthtest-t4-h2d-pinned",
        "bandwidthtest-t4-d2h-pinned",
    ),
)
def bandwidth(result: dict, figure) -> None:
    """Achieved GB/s against size in each direction, and what pinning costs.

    On a CPU-only machine: the host's own copy bandwidth beside the PCIe ceilings and the
    latency-plus-bandwidth model, and a host copy's time (what ``pin_memory()`` costs) beside
    the modelled transfer it would speed up. On an accelerator that could not pin memory, no
    pane for pinning, and a note that says why. On every machine, in each direction drawn, the
    published bandwidths of pinned and pageable copies to and from real GPUs.

    A colour is a kind of copy (pinned, say), the reader's solid and the reference GPU's dashed; a
    published figure is an open marker in its publication's colour; a figure not measured is dotted.
    """
    record = reference.load(bandwidth.panel_name)
    here_cpu = _no_accelerator(result)
    runs = [result] + ([record["result"]] if record is not None else [])
    has_d2h = any(name.startswith("device→host") for run in runs for name in run["gbps"])
    pinning_here = bool(result.get("pin_seconds")) or "host memory copy" in result["gbps"]
    panes = ["h2d"] + (["d2h"] if has_d2h else []) + (["pin"] if pinning_here else [])
    axes = dict(zip(panes, figure.subplots(1, len(panes))))
    colors = {name: METHOD_COLORS[_method(name)] for run in runs for name in run["gbps"]}
    pinned_runs = any(run.get("pin_seconds") for run in runs)
    for kind in sorted({_method(name) for name in colors} | ({"pin_memory(), block reused"} if pinned_runs else set())):
        plots.color_of(figure, kind, METHOD_COLORS[kind])  # each kind of copy its colour, before any other's
    common = dict(x="sizes", y="gbps", reference=record, label=_method, colors=colors)
    # Each published copy once in the legend, with its value in every direction drawn.
    published_label = (lambda entry: _both_directions(entry, "GB/s")) if has_d2h else None

    h2d = axes["h2d"]
    plots.series(h2d, result, names=lambda n: not n.startswith("device→host"), **common)
    h2d.set_title("host → device", fontsize=9)
    _published(h2d, bandwidth, "GB/s", direction="host→device", label=published_label)
    if "d2h" in axes:
        plots.series(axes["d2h"], result, names=lambda n: n.startswith("device→host"), **common)
        axes["d2h"].set_title("device → host", fontsize=9)
        _published(axes["d2h"], bandwidth, "GB/s", direction="device→host", label=published_label)

    sizes = result["sizes"]
    link = reference.LINK_MODEL
    model_gbps = [n / (link["latency_s"] + n / (link["gbps"] * 1e9)) / 1e9 for n in sizes]
    model_label = f"a {link['name']} copy, model: {link['latency_s'] * 1e6:g} µs + bytes / {link['gbps']:g} GB/s"
    if here_cpu and record is None:
        for name, gbps in reference.PCIE_X16_GBPS.items():
            plots.known_level(h2d, gbps, f"{name}, {gbps:g} GB/s per direction (theoretical)")
        plots.known_curve(h2d, sizes, model_gbps, model_label)

    if pinning_here:
        pin = axes["pin"]
        pin.set_title("the cost of pinning", fontsize=9)
        if not _pin_curves(pin, result, None):
            # pin_memory() is a copy within host memory: what it costs here is a host copy's time.
            host = result["gbps"]["host memory copy"]
            kind = "host memory copy"
            pin.plot(
                sizes,
                [n / g / 1e6 for n, g in zip(sizes, host)],
                "-",
                marker=plots.marker_of(figure, kind),
                markersize=4,
                color=plots.color_of(figure, kind, METHOD_COLORS[kind]),
                label=plots.named(kind, result.get("device", "cpu")),
                gid="yours|host copy time",
            )
            if record is None:  # the transfer it would speed up
                plots.known_curve(
                    pin, sizes, [(link["latency_s"] + n / (link["gbps"] * 1e9)) * 1e3 for n in sizes], model_label
                )
        if record is not None:
            _pin_curves(pin, record["result"], reference.gpu_label(record, link=True))
    else:
        plots.note(
            figure,
            f"{result['device']} could not pin host memory: only pageable copies, and no cost of pinning to show",
        )
    if here_cpu and record is None:
        plots.note(
            figure,
            "no accelerator here: your host memory copy beside well-known link figures · " + reference.NOT_RECORDED,
        )

    for pane, ax in axes.items():
        _finish(ax, "transfer size", "achieved GB/s" if pane != "pin" else "ms per call", x="bytes")
    plots.legend(figure)


def _pin_curves(ax, run: dict, gpu: str | None) -> list:
    """pin_memory()'s time per call beside the pinned copy it prepares (the pinned series, in ms)."""
    if not run.get("pin_seconds"):
        return []
    figure = ax.figure
    style, who, owner = (
        ("-", run.get("device", "cpu"), "yours") if gpu is None else ("--", f"{gpu} (reference)", "reference")
    )
    pinned_gbps = run["gbps"]["host→device pinned"]
    sizes = run["sizes"]

    def spreads(y: str, name: str | None, to_ms) -> list:
        found = [timing.spread_of(run, y, name, i) for i in range(len(sizes))]
        return [None if ends is None else [to_ms(i, end) for end in ends] for i, ends in enumerate(found)]

    lines = []
    for kind, ms, gid, spread in (
        (
            "pin_memory(), block reused",
            [s * 1e3 for s in run["pin_seconds"]],
            "pin_memory",
            spreads("pin_seconds", None, lambda i, s: s * 1e3),
        ),
        (
            "pinned",
            [n / g / 1e6 for n, g in zip(sizes, pinned_gbps)],
            "copy from pinned",
            spreads("gbps", "host→device pinned", lambda i, g: sizes[i] / g / 1e6),
        ),
    ):
        lines += ax.plot(
            run["sizes"],
            ms,
            style,
            marker=plots.marker_of(figure, kind),
            markersize=4 if owner == "yours" else 3.5,
            color=plots.color_of(figure, kind, METHOD_COLORS[kind]),
            label=plots.named(kind, who),
            gid=f"{owner}|{gid}",
        )
        plots.shade(ax, lines[-1], spread)
    return lines


LOOP_COLORS = {
    ".item() every step": plots.OKABE_ITO["vermillion"],
    "log on the device, sync once": plots.OKABE_ITO["bluish green"],
}


@panel("02_sync")
def sync(result: dict, figure) -> None:
    """Time per step of a loop that reads a value every step and one that logs on the device."""
    record = reference.load(sync.panel_name)
    ax = figure.subplots()
    plots.series(ax, result, x="steps", y="seconds_per_step", scale=1e6, reference=record, colors=LOOP_COLORS)
    if _no_accelerator(result) and record is None:
        plots.note(
            figure,
            "no accelerator here: a CPU has no queue to drain, so both loops cost about the same · "
            + reference.NOT_RECORDED,
        )
    _finish(ax, "steps in the loop", "µs per step")
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 03


@panel("03_throughput")
def throughput(result: dict, figure) -> None:
    """Training samples per second against batch size, per device."""
    record = reference.load(throughput.panel_name)
    usable = _same_experiment(record, result, ("width",))
    ax = figure.subplots()
    plots.series(ax, result, x="batches", y="samples_per_s", by_device=True, reference=usable)
    if _no_accelerator(result, "samples_per_s") and usable is None:
        plots.note(
            figure,
            "no accelerator here · "
            + (
                reference.NOT_RECORDED
                if record is None
                else f"the reference was recorded at width {record['result'].get('width')}"
            ),
        )
    ax.set_title(f"MLP 64 → {result['width']} → {result['width']} → 10, one SGD step per timing", fontsize=9)
    _finish(ax, "batch size", "training samples / s")
    plots.legend(figure)


WAY_COLORS = {
    "moved every step": plots.OKABE_ITO["orange"],
    "kept on the device": plots.OKABE_ITO["bluish green"],
    "moved every step, pinned + non_blocking": plots.OKABE_ITO["blue"],
}


@panel("03_placement")
def placement(result: dict, figure) -> None:
    """Time per training step in ms with the batch moved every step or kept on the device.

    On a CPU there is nothing to move, so the figure shows the step beside the modelled time
    of the two copies a GPU step would add.
    """
    record = reference.load(placement.panel_name)
    ax = figure.subplots()
    plots.series(
        ax,
        result,
        x="batches",
        y="ms_per_step",
        reference=record,
        colors=WAY_COLORS,
    )
    if _no_accelerator(result) and record is None:
        link = reference.LINK_MODEL
        batches = result["batches"]
        copy_ms = [(2 * link["latency_s"] + b * result["sample_bytes"] / (link["gbps"] * 1e9)) * 1e3 for b in batches]
        plots.known_curve(
            ax,
            batches,
            copy_ms,
            f"copying the batch to a GPU ({link['name']} model: "
            f"2 × {link['latency_s'] * 1e6:g} µs + bytes / {link['gbps']:g} GB/s)",
        )
        plots.note(figure, "no accelerator here: nothing to move, so the copy is modelled · " + reference.NOT_RECORDED)
    _finish(ax, f"batch size ({result['sample_bytes'] / 1024:.0f} KiB per sample)", "ms per training step")
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 04

MEMORY_COLORS = {
    "parameters + gradients + optimizer state": _O["reddish purple"],
    "saved activations": _O["orange"],
    "estimate": _O["sky blue"],
    "peak, live tensors": _O["blue"],
    "peak, CUDA allocator": _O["bluish green"],
    "no checkpointing": _O["vermillion"],
    "checkpoint every k-th block": _O["blue"],
    "no checkpointing, live tensors": _O["vermillion"],
    "checkpoint every k-th block, live tensors": _O["blue"],
    "no checkpointing, CUDA allocator": _O["orange"],
    "checkpoint every k-th block, CUDA allocator": _O["bluish green"],
    "live tensors": _O["blue"],
    "CUDA allocator": _O["bluish green"],
}
# What a lesson-04 figure draws of a reference: what the GPU's allocator measured, not what is counted anywhere.
_MEASURED_ON_GPU = (
    "peak, CUDA allocator",
    "no checkpointing, CUDA allocator",
    "checkpoint every k-th block, CUDA allocator",
    "CUDA allocator",
)


def _only(record: dict | None, y: str, names) -> dict | None:
    """The record with only the series of ``result[y]`` named in ``names``."""
    if record is None:
        return None
    kept = {name: values for name, values in record["result"][y].items() if name in names}
    return {**record, "result": {**record["result"], y: kept}} if kept else None


def _memory_note(figure, result: dict, record: dict | None, wanted: dict | None, what: str) -> None:
    if result.get("device", "cpu").startswith("cuda") or wanted is not None:
        return
    why = reference.NOT_RECORDED if record is None else "the reference was recorded for another model size"
    plots.note(figure, f"no CUDA here: {what} · {why}")


@panel("04_batch")
def batch_memory(result: dict, figure) -> None:
    """Peak memory of a training step against batch size — counted, estimated and (on CUDA)
    measured by the allocator — with the memory budget and the largest batch found under it."""
    record = reference.load(batch_memory.panel_name)
    usable = _same_experiment(record, result, ("width", "depth", "optimizer"))
    ax = figure.subplots()
    plots.series(
        ax,
        result,
        x="batches",
        y="bytes",
        reference=_only(usable, "bytes", _MEASURED_ON_GPU),
        colors=MEMORY_COLORS,
    )
    applied = "the CUDA allocator" if result["budget_applied"] == "allocator" else "the estimate"
    ax.axhline(
        result["budget"],
        color=plots.MARK_COLOR,
        linewidth=1,
        linestyle="--",
        label=f"budget {units.format_bytes(result['budget'])}, applied to {applied}",
        gid="mark|budget",
    )
    if result["largest_batch"] is not None:
        plots.mark_x(ax, result["largest_batch"], f"largest batch under the budget: {result['largest_batch']:,}")
    _memory_note(
        figure,
        result,
        record,
        usable,
        "the peak is counted by gpulab.memory.TensorLedger and the budget applied to the estimate",
    )
    ax.set_title(
        f"{result['depth']} blocks of width {result['width']}, {result['optimizer']}: one training step", fontsize=9
    )
    _finish(ax, "batch size", "memory")
    plots.bytes_axis(ax, "y")
    plots.legend(figure)


@panel("04_checkpoint")
def checkpointing(result: dict, figure) -> None:
    """Peak memory and time of a training step when every k-th block is checkpointed."""
    record = reference.load(checkpointing.panel_name)
    usable = _same_experiment(record, result, ("width", "depth", "batch"))
    memory_ax, time_ax = figure.subplots(1, 2)
    plots.series(
        memory_ax,
        result,
        x="every",
        y="peak_bytes",
        reference=_only(usable, "peak_bytes", _MEASURED_ON_GPU),
        colors=MEMORY_COLORS,
    )
    plots.series(
        time_ax,
        result,
        x="every",
        y="ms_per_step",
        reference=usable,
        colors=MEMORY_COLORS,
        label=lambda name: f"{name}, time",
    )
    _memory_note(figure, result, record, usable, "memory counted by gpulab.memory.TensorLedger")
    for ax, ylabel in ((memory_ax, "peak memory of a step"), (time_ax, "ms per training step")):
        _finish(ax, "checkpoint every k-th block (k)", ylabel)
    plots.bytes_axis(memory_ax, "y")
    memory_ax.set_title(f"{result['depth']} blocks of width {result['width']}, batch {result['batch']}", fontsize=9)
    plots.legend(figure)


# Phases shaded in a colour and a hatch each, so that a reader who cannot tell the colours apart still can.
PHASE_COLORS = {"forward": _O["sky blue"], "backward": _O["orange"], "optimizer": _O["yellow"]}
PHASE_HATCHES = {"forward": "////", "backward": "\\\\\\\\", "optimizer": "...."}


@panel("04_timeline")
def memory_timeline(result: dict, figure) -> None:
    """Memory after every allocation and free during a few training steps, with the
    forward pass, the backward pass and the optimizer step shaded."""
    from matplotlib.colors import to_rgb
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    record = reference.load(memory_timeline.panel_name)
    usable = _same_experiment(record, result, ("width", "depth", "batch", "optimizer"))
    ax = figure.subplots()
    shaded = set()
    for start, end, phase in result["phases"]:
        color = plots.color_of(figure, phase, PHASE_COLORS.get(phase))
        ax.axvspan(
            start,
            end,
            facecolor=(*to_rgb(color), 0.15),
            edgecolor=(*to_rgb(color), 0.5),
            hatch=PHASE_HATCHES.get(phase),
            linewidth=0,
            label=phase if phase not in shaded else None,
            gid=f"mark|{phase}",
        )
        shaded.add(phase)
    plots.series(
        ax,
        result,
        x="events",
        y="bytes",
        reference=_only(usable, "bytes", _MEASURED_ON_GPU),
        colors=MEMORY_COLORS,
    )
    _memory_note(figure, result, record, usable, "memory counted by gpulab.memory.TensorLedger")
    ax.set_title(f"{result['steps']} training steps with {result['optimizer']}, batch {result['batch']}", fontsize=9)
    ax.set_xlabel("allocations and frees, in order")
    ax.set_ylabel("memory above what was\nallocated before the model")
    ax.yaxis.set_major_locator(MaxNLocator(6))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: units.format_bytes(value)))
    ax.set_ylim(bottom=0)
    ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


def cuda_snapshot(snapshot: dict, figure, device=None) -> None:
    """Memory allocated over time from a CUDA allocator snapshot (``torch.cuda.memory._snapshot()``,
    taken while ``_record_memory_history`` was on), drawn here rather than uploaded anywhere.

    ``device``: the GPU whose trace to draw — an index, ``"cuda:1"`` or a ``torch.device``; ``"cuda"``
    or None means the current one, as ``torch.cuda`` reads it.
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    if device is None or not isinstance(device, int):
        import torch

        index = None if device is None else torch.device(device).index
        if index is None:
            index = torch.cuda.current_device() if torch.cuda.is_available() else 0
        device = index
    traces = snapshot.get("device_traces") or []
    events = traces[device] if device < len(traces) else []
    live, sizes, steps = 0, [], []
    for event in events:
        if event.get("action") == "alloc":
            live += event["size"]
        elif event.get("action") == "free_completed":
            live -= event["size"]
        else:
            continue
        sizes.append(live)
        steps.append(len(steps))
    ax = figure.subplots()
    if not sizes:
        plots.note(figure, "the snapshot holds no allocations: was _record_memory_history on?")
        sizes, steps = [0, 0], [0, 1]
    ax.plot(
        steps,
        sizes,
        "-",
        color=MEMORY_COLORS["CUDA allocator"],
        label="allocated by tensors recorded in the snapshot",
        gid="yours|snapshot",
    )
    ax.set_xlabel("allocations and frees recorded, in order")
    ax.set_ylabel("memory (above the start of recording)")
    ax.yaxis.set_major_locator(MaxNLocator(6))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: units.format_bytes(value)))
    ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 05

FORMAT_COLORS = {"sign": _O["vermillion"], "exponent": _O["blue"], "mantissa": _O["bluish green"]}
DTYPE_COLORS = {
    "float32": _O["blue"],
    "tf32": _O["reddish purple"],
    "bfloat16": _O["orange"],
    "float16": _O["bluish green"],
    "float32 (no autocast)": _O["blue"],
    "autocast bfloat16": _O["orange"],
    "autocast float16": _O["bluish green"],
    "fp16 gradients, unscaled": _O["vermillion"],
    "fp16 gradients, scaled": _O["bluish green"],
    "scale": _O["blue"],
}


def number_formats(rows: list[dict], figure) -> None:
    """The bit layout of floating-point formats: one bar per format, sign, exponent and mantissa
    bits coloured. ``rows`` hold ``name``, ``exponent`` and ``mantissa`` (bit counts; one sign bit)."""
    ax = figure.subplots()
    for y, row in enumerate(reversed(rows)):
        start = 0
        for part, width in (("sign", 1), ("exponent", row["exponent"]), ("mantissa", row["mantissa"])):
            ax.barh(y, width, left=start, color=FORMAT_COLORS[part], edgecolor="white", label=part if y == 0 else None)
            if width >= 2:
                ax.text(start + width / 2, y, str(width), ha="center", va="center", color="white", fontsize=8)
            start += width
        ax.text(start + 0.4, y, f"{1 + row['exponent'] + row['mantissa']} bits", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [row["name"] for row in reversed(rows)])
    ax.set_xlabel("bits, from the sign on the left")
    ax.set_xlim(0, 38)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    plots.legend(figure)


@panel(
    "05_matmul",
    published=("zzc-h100-sxm-float32", "zzc-h100-sxm-tf32", "zzc-h100-sxm-float16", "zzc-h100-sxm-bfloat16"),
)
def dtype_matmul(result: dict, figure) -> None:
    """Matmul TFLOP/s against n for every dtype the device has, beside a real GPU's
    published rate in each of those dtypes."""
    record = reference.load(dtype_matmul.panel_name)
    ax = figure.subplots()
    plots.series(
        ax,
        result,
        x="sizes",
        y="tflops",
        reference=record,
        colors=DTYPE_COLORS,
    )
    if _no_accelerator(result) and record is None:
        for gpu in (g for g in reference.KNOWN_GPUS if g.name in ("T4", "H100 SXM")):
            # One colour for each GPU's spec sheet, a dotted pattern for each of its figures.
            plots.known_level(
                ax, gpu.float32_tflops, f"{gpu.name} spec sheet · float32: {gpu.float32_tflops:g} TFLOP/s"
            )
            plots.known_level(
                ax,
                gpu.tensor_tflops,
                f"{gpu.name} spec sheet · {' and '.join(gpu.tensor_dtypes)} on tensor cores: "
                f"{gpu.tensor_tflops:g} TFLOP/s",
            )
        plots.note(figure, "no accelerator here · " + reference.NOT_RECORDED)
    for name in result["tflops"]:  # an H100's published figure for each dtype measured here
        _published(ax, dtype_matmul, "TFLOP/s", dtype=name)
    _finish(ax, "n (n×n @ n×n)", "TFLOP/s")
    plots.legend(figure)


def _run_label(run: dict, name: str, who: str) -> str:
    """ "float32 (no autocast) · cuda:0: 1.17 ms/step, peak 70.3 MiB (allocator)": what ran, where, and how it went."""
    counted = "allocator" if run.get("device", "cpu").startswith("cuda") else "tensors counted"
    if name not in run.get("ms_per_step", {}):
        return plots.named(name, who)
    ms, spread = run["ms_per_step"][name], timing.spread_of(run, "ms_per_step", name)
    # the spread (the middle half of the repeats, as a share of the median), and a step within noise said so:
    # a label has no band to draw
    within = ""
    if spread is not None:
        within = f" (spread {(spread[1] - spread[0]) / ms:.0%}{', within noise' if timing.is_wide(ms, spread) else ''})"
    return plots.named(
        name,
        f"{who}: {ms:.2f} ms/step{within}, peak {units.format_bytes(run['peak_bytes'][name])} ({counted})",
    )


@panel("05_step")
def amp_step(result: dict, figure) -> None:
    """The loss of a short training run with and without autocast, each curve labelled
    with its run's time per step and peak memory."""
    record = reference.load(amp_step.panel_name)
    usable = _same_experiment(record, result, ("width",))
    ax = figure.subplots()
    plots.series(ax, result, x="steps", y="loss", reference=usable, colors=DTYPE_COLORS)
    for line in ax.get_lines():
        owner, name = line.get_gid().split("|", 1)
        if owner == "yours":
            line.set_label(_run_label(result, name, result.get("device", "cpu")))
        else:
            line.set_label(_run_label(usable["result"], name, reference.gpu_label(usable) + " (reference)"))
    if _no_accelerator(result) and usable is None:
        plots.note(figure, "no accelerator here · " + _not_drawn(record, result, ("width",)))
    ax.set_title(f"MLP of width {result['width']}, batch {result['batch']}: autocast to {result['dtype']}", fontsize=9)
    plots.log_axis(ax, "y")
    ax.set_xlabel("training step")
    ax.set_ylabel("loss")
    ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


@panel("05_underflow")
def underflow(result: dict, figure) -> None:
    """Gradient magnitudes against float16's smallest numbers, before and after loss
    scaling; and a GradScaler's scale over a short run with an injected inf."""
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator, NullFormatter

    record = reference.load(underflow.panel_name)
    usable = _same_experiment(record, result, ("scale",))
    hist_ax, scale_ax = figure.subplots(1, 2)
    plots.series(
        hist_ax,
        result,
        x="bin_centres",
        y="counts",
        reference=usable,
        colors=DTYPE_COLORS,
        label=lambda name: name + (f" × {result['scale']:,.0f}" if name.endswith(", scaled") else ""),
    )
    for value, text, style in (
        (result["fp16_smallest_subnormal"], "float16's smallest subnormal", ":"),
        (result["fp16_smallest_normal"], "float16's smallest normal", "--"),
    ):
        hist_ax.axvline(
            value,
            color=plots.MARK_COLOR,
            linestyle=style,
            linewidth=1,
            label=f"{text}: {value:.2g}",
            gid=f"mark|{text}",
        )
    lost = result["flushed"]
    hist_ax.text(
        0.02,
        0.97,
        "\n".join(
            f"{share:.2%} {'scaled' if name.endswith(', scaled') else 'unscaled'} become 0"
            for name, share in lost.items()
        )
        + f"\n{result['overflowed']:.2%} scaled become inf",
        transform=hist_ax.transAxes,
        fontsize=7,
        va="top",
    )
    xs = [x for counts in result["counts"].values() for c, x in zip(counts, result["bin_centres"]) if c]
    if xs:
        hist_ax.set_xlim(min(min(xs), result["fp16_smallest_subnormal"]) / 10, max(xs) * 100)
    hist_ax.set_xscale("log")
    hist_ax.xaxis.set_major_locator(LogLocator(base=10, numticks=6))
    hist_ax.xaxis.set_major_formatter(LogFormatterSciNotation())
    hist_ax.xaxis.set_minor_formatter(NullFormatter())
    hist_ax.set_xlabel("|gradient value|")
    hist_ax.set_ylabel("gradient values")
    hist_ax.grid(True, which="major", alpha=0.3)
    trace = result["trace"]
    kind = "GradScaler's scale"
    scale_ax.plot(
        trace["steps"],
        trace["scale"],
        "-",
        marker=plots.marker_of(figure, kind),
        markersize=4,
        color=plots.color_of(figure, kind, DTYPE_COLORS["scale"]),
        label=plots.named(kind, result.get("device", "cpu")),
        gid="yours|scale",
    )
    skipped = f"skipped step (inf injected at step {trace['inf_at']})"
    for step in [step for step, skip in zip(trace["steps"], trace["skipped"]) if skip]:
        scale_ax.axvline(step, color=plots.MARK_COLOR, linestyle="-.", linewidth=1, label=skipped, gid="mark|skipped")
        skipped = "_" + skipped  # one legend entry
    plots.log_axis(scale_ax, "y", base=2)
    scale_ax.set_xlabel(f"step (growth every {trace['growth_interval']} good steps)")
    scale_ax.set_ylabel("loss scale")
    scale_ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 06


# Link rates for the all-reduce figure where no GPUs were measured: per direction, from the specifications.
LINKS_GBPS = {"PCIe 4.0 ×16": 31.5, "NVLink 4 (H100 SXM), per GPU and direction": 450.0}


def _processes_reference(record: dict | None, result: dict, keys: tuple[str, ...]) -> tuple[dict | None, bool]:
    """(the reference to draw, whether it was measured on CPU processes over gloo)."""
    usable = _same_experiment(record, result, keys)
    return usable, usable is not None and usable["result"].get("backend") != "nccl"


def _where(result: dict) -> str:
    return f"{result['backend']} on {'CPU processes' if result['device'] == 'cpu' else 'one GPU per process'}"


def _processes_note(figure, result: dict, record: dict | None) -> None:
    if result["backend"] != "nccl" and (record is None or record["result"].get("backend") != "nccl"):
        plots.note(
            figure,
            "gloo on CPU processes here: NCCL needs a CUDA GPU per process · "
            + (reference.NOT_RECORDED if record is None else "the reference ran on CPU processes too"),
        )


def _alpha_beta_fits(ax, result: dict) -> None:
    """Each series' α + β·S fit (``result["fit"]``) in ms against ``result["sizes"]``, dash-dotted, in the colour and
    open marker of what it fits (lessons 06 and 08)."""
    sizes, figure = result["sizes"], ax.figure
    for name, fit in result.get("fit", {}).items():
        ax.plot(
            sizes,
            [(fit["alpha_s"] + fit["beta_s_per_byte"] * s) * 1e3 for s in sizes],
            "-.",
            color=plots.color_of(figure, name),
            marker=plots.marker_of(figure, name),
            markerfacecolor="none",
            markevery=max(1, len(sizes) // 8),
            linewidth=1,
            gid=f"fit|{name}",
            label=f"{name} · α + β·S fitted: α = {fit['alpha_s'] * 1e6:,.0f} µs, "
            f"1/β = {1e-9 / fit['beta_s_per_byte']:.3g} GB/s",
        )


@panel("06_allreduce", published=("allreduce-8xh200-16mib", "allreduce-8xh200-16gib"))
def allreduce(result: dict, figure) -> None:
    """All-reduce time against message size per number of processes, with the α + β·S
    fit the lesson made, and the bus bandwidth S/t · 2(n − 1)/n beside published bus bandwidths of
    GPUs over NVLink."""
    record = reference.load(allreduce.panel_name)
    usable, on_cpu = _processes_reference(record, result, ())
    time_ax, bus_ax = figure.subplots(1, 2)
    plots.series(time_ax, result, x="sizes", y="seconds", reference=usable, scale=1e3, on_reference_cpu=on_cpu)
    _alpha_beta_fits(time_ax, result)
    plots.series(bus_ax, result, x="sizes", y="busbw_gbps", reference=usable, on_reference_cpu=on_cpu)
    if result["backend"] != "nccl" and usable is None:
        for link, gbps in LINKS_GBPS.items():
            plots.known_level(bus_ax, gbps, f"{link}: {gbps:g} GB/s (theoretical)")
    _published(bus_ax, allreduce, "GB/s")
    _processes_note(figure, result, record)
    time_ax.set_title(f"all_reduce time ({_where(result)})", fontsize=9)
    bus_ax.set_title("bus bandwidth = S/t · 2(n − 1)/n", fontsize=9)
    for ax, ylabel in ((time_ax, "ms per all_reduce"), (bus_ax, "GB/s")):
        _finish(ax, "message size S", ylabel, x="bytes")
        ticks = result["sizes"][::-2][::-1] if len(result["sizes"]) > 4 else result["sizes"]  # ×16 apart: readable
        ax.set_xticks(ticks, [units.format_bytes(size) for size in ticks])
    plots.legend(figure)


@panel("06_throughput")
def ddp_throughput(result: dict, figure) -> None:
    """Training samples per second against the number of processes, beside n times
    one process's rate, with the number of cores marked."""
    record = reference.load(ddp_throughput.panel_name)
    usable, on_cpu = _processes_reference(record, result, ("width", "batch"))
    ax = figure.subplots()
    processes = result["processes"]
    baseline = result["samples_per_s"]["DDP"][0]
    ax.plot(
        processes,
        [baseline * n for n in processes],
        "--",
        color=plots.MARK_COLOR,
        linewidth=0.8,
        gid="mark|ideal",
        label="n × one process (perfect scaling)",
    )
    plots.series(
        ax,
        result,
        x="processes",
        y="samples_per_s",
        reference=usable,
        on_reference_cpu=on_cpu,
        colors={"DDP": plots.color_for(result["device"])},
        label=lambda name: f"{name} (1 process: no DDP)",
        where=f"{result['device']}, {result['threads']} thread{'s' * (result['threads'] != 1)} per process",
    )
    if result["device"] == "cpu":
        plots.mark_x(ax, result["cores"], f"{result['cores']} cores here")
    _processes_note(figure, result, record)
    ax.set_title(f"MLP of width {result['width']}, batch {result['batch']} per process ({_where(result)})", fontsize=9)
    ax.set_xticks(processes)
    ax.set_xlim(0.8, max(processes[-1], result.get("cores", 1)) + 0.2)
    ax.set_ylim(0, None)
    ax.set_xlabel("processes")
    ax.set_ylabel("training samples / s, all processes")
    ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


GRADIENT_FLOOR = 1e-12  # a difference of exactly 0 is drawn here, on the log axis


@panel("06_gradients")
def ddp_gradients(result: dict, figure) -> None:
    """Per parameter tensor, the largest difference between one process's gradient of the
    whole batch and DDP's all-reduced gradient — and rank 0's own, before averaging."""
    record = reference.load(ddp_gradients.panel_name)
    usable, on_cpu = _processes_reference(record, result, ("global_batch", "world"))
    ax = figure.subplots()
    shown = dict(result, index=list(range(len(result["parameters"]))))
    theirs = dict(usable, result=dict(usable["result"], index=shown["index"])) if usable else None
    plots.series(
        ax,
        shown,
        x="index",
        y="max_abs_difference",
        derive=lambda _x, v: max(v, GRADIENT_FLOOR),
        reference=theirs,
        on_reference_cpu=on_cpu,
        colors={"DDP, all-reduced": _O["bluish green"], "rank 0's share alone": _O["orange"]},
    )
    eps = 2.0**-23 * result["largest_gradient"]
    ax.axhline(
        eps,
        color=plots.MARK_COLOR,
        linestyle=":",
        linewidth=1,
        gid="mark|eps",
        label=f"float32 rounding at the largest gradient: {eps:.1g}",
    )
    ax.set_xticks(shown["index"], result["parameters"], fontsize=8)
    ax.set_title(
        f"largest |difference| from one process's gradient: global batch {result['global_batch']} over "
        f"{result['world']} processes\n({_where(result)}; a difference of 0 is drawn at 1e-12)",
        fontsize=9,
    )
    plots.log_axis(ax, "y")
    ax.set_xlabel("parameter tensor")
    ax.set_ylabel("max |difference|")
    ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 07


@panel("07_profile")
def profile_step(result: dict, figure) -> None:
    """The top operators of a profiled training step by self time, and the timeline of
    the recorded steps drawn from the profiler's trace. The profile is the reader's own code on
    their own machine; no reference is drawn beside it."""
    ops_ax, time_ax = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2.2]})
    names = [profiling.short_name(name)[:32] for name in result["ops"]]
    bars = ops_ax.barh(range(len(names)), result["ms_per_step"], color=plots.color_for(result["device"]))
    for bar in bars:
        bar.set_gid("yours|top ops")
    for index, calls in enumerate(result["calls_per_step"]):
        ops_ax.annotate(
            f"×{calls}",
            xy=(result["ms_per_step"][index], index),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    ops_ax.set_yticks(range(len(names)), names, fontsize=7)
    ops_ax.set_ylim(len(names) - 0.5, -0.5)
    ops_ax.set_xlim(0, max(result["ms_per_step"]) * 1.3)
    ops_ax.set_xlabel(f"ms per step ({result['by']})")
    ops_ax.set_title(f"top ops · batch {result['batch']}, width {result['width']}", fontsize=9)
    ops_ax.grid(True, axis="x", alpha=0.3)
    profiling.draw_timeline(time_ax, result["trace"], title=f"{result['steps']} steps on {result['device']}")
    if _no_accelerator(result):
        plots.note(
            figure,
            "profiled on this CPU: with a CUDA GPU the timeline adds a row for each GPU stream, where the kernels run",
        )


@panel("07_sawtooth")
def sawtooth(result: dict, figure) -> None:
    """Matmul GFLOP/s for every n in a range around a multiple of 64, multiples of 64
    marked; a reader without an accelerator sees the reference GPU's range beside their own."""
    record = reference.load(sawtooth.panel_name)
    beside = record is not None and _no_accelerator(result)
    axes = figure.subplots(1, 2) if beside else [figure.subplots()]
    runs = [(axes[0], result, None)] + ([(axes[1], record["result"], record)] if beside else [])
    for ax, run, shown in runs:
        if shown is None:
            plots.series(
                ax,
                run,
                x="sizes",
                y="gflops",
                reference=_same_experiment(record, result, ("middle", "dtype")),
                colors={name: plots.color_for(result["device"]) for name in run["gflops"]},
            )
            where = run["device"]
        else:
            gpu = reference.gpu_label(shown)
            where = f"{gpu} (reference)"
            for name, values in run["gflops"].items():
                ax.plot(
                    run["sizes"],
                    values,
                    plots.REFERENCE_STYLE,
                    marker=plots.marker_of(figure, where),
                    markersize=3,
                    markevery=max(1, len(values) // 16),
                    color=plots.color_of(figure, where, plots.DEVICE_COLORS["reference"]),
                    label=plots.named(name, where),
                    gid=f"reference|{name}",
                )
        for n in run["sizes"]:
            if n % 64 == 0:
                ax.axvline(n, color=plots.MARK_COLOR, linestyle=":", linewidth=0.8, alpha=0.6, gid="mark|64")
        ax.set_title(f"{run['dtype']} matmul on {where}", fontsize=9)
        ax.set_xlabel("n (dotted: multiples of 64)")
        ax.set_ylabel("GFLOP/s")
        ax.set_ylim(0, max(max(v) for v in run["gflops"].values()) * 1.1)
        ax.grid(True, which="major", alpha=0.3)
    if _no_accelerator(result) and record is None:
        plots.note(figure, "no accelerator here · " + reference.NOT_RECORDED)
    plots.legend(figure)


@panel("07_cudnn")
def cudnn_steps(result: dict, figure) -> None:
    """The time of every training step of a small conv net with cudnn.benchmark off and
    on, a new input size every few steps."""
    record = reference.load(cudnn_steps.panel_name)
    usable = _same_experiment(record, result, ("image_sizes", "steps_per_size"))
    ax = figure.subplots()
    plots.series(
        ax,
        result,
        x="steps",
        y="ms",
        reference=usable,
        colors={"benchmark off": _O["blue"], "benchmark on": _O["orange"]},
    )
    for index, size in enumerate(result["image_sizes"]):
        first = index * result["steps_per_size"] + 1
        ax.axvline(first - 0.5, color=plots.MARK_COLOR, linestyle=":", linewidth=0.8, alpha=0.6, gid=f"mark|{size}")
        ax.annotate(
            f"{size}×{size}",
            xy=(first - 0.4, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, -10),
            textcoords="offset points",
            fontsize=7,
        )
    plots.timed_once(figure)  # a size's first step happens once: it has no repeats to take a spread from
    device = str(result.get("device", "cpu"))
    if not device.startswith("cuda"):  # cuDNN is NVIDIA's: a CPU or a Mac's GPU (MPS) has other convolutions
        where = "this CPU" if _no_accelerator(result) else "a Mac's GPU (MPS)" if device.startswith("mps") else device
        plots.note(
            figure,
            f"cudnn.benchmark needs a CUDA GPU: on {where} the flag changes nothing"
            + (" · " + _not_drawn(record, result, ("image_sizes", "steps_per_size")) if usable is None else ""),
        )
    ax.set_title(
        f"conv net training steps on {result['device']}, a new image size every {result['steps_per_size']} steps",
        fontsize=9,
    )
    plots.log_axis(ax, "y")
    ax.set_xlabel("step")
    ax.set_ylabel("ms per step")
    ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


COUNT_COLORS = {
    "syncs": _O["vermillion"],
    ".to calls": _O["reddish purple"],
    "tensors made in forward": _O["sky blue"],
    "optimizer steps": _O["bluish green"],
}


@panel("07_slow_loop")
def slow_loop(result: dict, figure) -> None:
    """The time of one epoch and the profiler's counts, for a slow loop fixed one
    problem at a time."""
    record = reference.load(slow_loop.panel_name)
    usable = _same_experiment(record, result, ("samples", "versions"))
    time_ax, count_ax = figure.subplots(1, 2)
    plots.series(
        time_ax,
        result,
        x="stage",
        y="ms_per_epoch",
        reference=usable,
        colors={"one epoch": plots.color_for(result["device"])},
    )
    plots.series(count_ax, result, x="stage", y="counts", colors=COUNT_COLORS)
    for ax in (time_ax, count_ax):
        ax.set_xticks(result["stage"], result["versions"], fontsize=7, rotation=12)
        ax.grid(True, which="major", alpha=0.3)
    plots.log_axis(time_ax, "y")
    time_ax.set_ylabel("ms per epoch")
    time_ax.set_title(f"one epoch of {result['samples']} samples", fontsize=9)
    count_ax.set_yscale("symlog", linthresh=1)
    count_ax.set_ylim(-0.3, max(max(v) for v in result["counts"].values()) * 3)
    count_ax.set_ylabel("count per epoch")
    count_ax.set_title(f"what the profiler counts in an epoch of {result['profiled_samples']} samples", fontsize=9)
    if _no_accelerator(result) and usable is None:
        plots.note(figure, "no accelerator here · " + _not_drawn(record, result, ("samples", "versions")))
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 08


@panel("08_collectives", published=("allreduce-8xh200-16mib", "allreduce-8xh200-16gib"))
def collectives(result: dict, figure) -> None:
    """All-gather, reduce-scatter and all-reduce time against message size S on the reader's ranks, each with
    its α + β·S fit, and their bus bandwidths — S/t · (N − 1)/N, and 2(N − 1)/N for all-reduce — beside
    published all-reduce bus bandwidths of GPUs over NVLink."""
    record = reference.load(collectives.panel_name)
    usable, on_cpu = _processes_reference(record, result, ("ranks",))
    time_ax, bus_ax = figure.subplots(1, 2)
    plots.series(time_ax, result, x="sizes", y="seconds", reference=usable, scale=1e3, on_reference_cpu=on_cpu)
    sizes = result["sizes"]
    _alpha_beta_fits(time_ax, result)
    plots.series(bus_ax, result, x="sizes", y="busbw_gbps", reference=usable, on_reference_cpu=on_cpu)
    _published(bus_ax, collectives, "GB/s")
    _processes_note(figure, result, record)
    n = result["ranks"]
    time_ax.set_title(f"time, {n} ranks ({_where(result)})", fontsize=9)
    bus_ax.set_title("bus bandwidth: S/t · (N − 1)/N, all-reduce 2(N − 1)/N", fontsize=9)
    for ax, ylabel in ((time_ax, "ms per collective"), (bus_ax, "GB/s")):
        _finish(ax, "message size S (the whole tensor)", ylabel, x="bytes")
        ticks = sizes[::-2][::-1] if len(sizes) > 4 else sizes  # ×16 apart: readable
        ax.set_xticks(ticks, [units.format_bytes(size) for size in ticks])
    plots.legend(figure)


@panel("08_sharding")
def sharding(result: dict, figure) -> None:
    """Per rank, what training keeps between steps (parameters, gradients, Adam's state) against the number of
    ranks, for DDP and FSDP2, beside 16 bytes per parameter over N; and the step time of each."""
    record = reference.load(sharding.panel_name)
    keys = ("width", "depth")
    usable, on_cpu = _processes_reference(record, result, keys)

    def totals(res: dict) -> dict:
        shown = {s: [sum(kept.values()) for kept in per_n] for s, per_n in res["state_bytes"].items()}
        return dict(res, state_total=shown)

    memory_ax, time_ax = figure.subplots(1, 2)
    ranks = result["ranks"]
    ideal = [16 * result["parameters"] / n / 2**20 for n in ranks]
    memory_ax.plot(
        ranks, ideal, ":", color=plots.MARK_COLOR, linewidth=1, gid="mark|ideal", label="16 B × parameters / N"
    )
    theirs = dict(usable, result=totals(usable["result"])) if usable else None
    colors = {"DDP": _O["orange"], "FSDP": _O["bluish green"]}
    plots.series(
        memory_ax,
        totals(result),
        x="ranks",
        y="state_total",
        scale=1 / 2**20,
        reference=theirs,
        on_reference_cpu=on_cpu,
        colors=colors,
    )
    if any(v is not None for values in result.get("allocated_bytes", {}).values() for v in values):
        # On a GPU, the allocator's count beside the tensors': what the step left, above what was there before
        shown = dict(result, allocator={f"{s}, the allocator": v for s, v in result["allocated_bytes"].items()})
        plots.series(
            memory_ax,
            shown,
            x="ranks",
            y="allocator",
            scale=1 / 2**20,
            colors={"DDP, the allocator": _O["vermillion"], "FSDP, the allocator": _O["blue"]},
        )
    plots.series(
        time_ax,
        result,
        x="ranks",
        y="step_s",
        scale=1e3,
        reference=usable,
        on_reference_cpu=on_cpu,
        colors=colors,
    )
    _processes_note(figure, result, record)
    memory_ax.set_title(
        f"{result['parameters']:,} parameters ({result['depth']} blocks, width {result['width']})",
        fontsize=9,
    )
    time_ax.set_title(f"step time ({_where(result)})", fontsize=9)
    for ax, ylabel in ((memory_ax, "MiB per rank between steps"), (time_ax, "ms per step, slowest rank")):
        ax.set_xticks(ranks)
        ax.set_xlim(0.8, ranks[-1] + 0.2)
        ax.set_xlabel("ranks N")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, None)
        ax.grid(True, which="major", alpha=0.3)
    plots.legend(figure)


# ---------------------------------------------------------------- lesson 09


def _recorded_level(ax, record: dict | None, value: float | None, what: str, lesson: str) -> None:
    """A horizontal line at ``value`` from another panel's GPU record, short-dashed as references are,
    labelled with its GPU and the lesson that recorded it."""
    if record is None or value is None:
        return
    ax.axhline(
        value,
        linestyle=plots.REFERENCE_STYLE,
        color=plots.MARK_COLOR,
        linewidth=1.2,
        alpha=0.8,
        label=f"{what} · {reference.gpu_label(record)} (recorded, lesson {lesson})",
        gid=f"reference|{what}",
    )


@panel("09_fusion")
def fusion(result: dict, figure) -> None:
    """The time of a GELU written as eight PyTorch operations, of PyTorch's one-kernel ``F.gelu`` and of the chain
    compiled, against the size of the input; and the GB/s each moves (the bytes its kernels read and write, per
    second) beside a copy's, the memory roof. Without a record of this panel, the copy rate the GPU of lesson 00's
    record reached is drawn instead."""
    record = reference.load(fusion.panel_name)
    usable = _same_experiment(record, result, ())
    roofline = reference.load("00_roofline") if usable is None else None
    copy = None
    if roofline is not None:
        ceilings = roofline["result"]["ceilings"]
        copy = next((c.get("copy_gbps") for d, c in ceilings.items() if plots.is_accelerator(d)), None)
    time_ax, rate_ax = figure.subplots(1, 2)
    colors = {"eager chain": _O["vermillion"], "F.gelu (one kernel)": _O["blue"], "torch.compile": _O["bluish green"]}
    plots.series(time_ax, result, x="sizes", y="seconds", scale=1e3, reference=usable, colors=colors)
    rate_colors = dict(colors, **{"copy (x.clone())": _O["reddish purple"]})
    plots.series(rate_ax, result, x="sizes", y="gbps", reference=usable, colors=rate_colors)
    _recorded_level(rate_ax, roofline, copy, "copy", "00")
    time_ax.set_title(f"time per call ({result['device']})", fontsize=9)
    rate_ax.set_title(f"GB/s moved (the chain: {result['bytes_ratio']:.0f}× the bytes)", fontsize=9)
    _finish(time_ax, "size of x", "ms per call", x="bytes")
    _finish(rate_ax, "size of x", "GB/s moved", x="bytes")
    plots.legend(figure)


@panel("09_compile")
def compile_step(result: dict, figure) -> None:
    """Lesson 07's training step (fixed) run eagerly, compiled, and on CUDA as CUDA graphs: the time per step, and
    what the first call costs (compiling, capturing). Without a record of this panel at these settings, the eager
    step an H100 SXM recorded in lesson 07 at batch 8 and width 128 is drawn beside the reader's."""
    record = reference.load(compile_step.panel_name)
    usable = _same_experiment(record, result, ("batch", "width"))
    slow_loop_record = reference.load("07_slow_loop") if usable is None else None
    eager_ms = None
    if slow_loop_record is not None and result["batch"] == 8 and result["width"] == 128:
        run = slow_loop_record["result"]
        stage = run["versions"].index("+ buffer (2)")
        eager_ms = run["ms_per_epoch"]["one epoch"][stage] / (run["samples"] / 8)
    step_ax, first_ax = figure.subplots(1, 2)
    colors = {"one step": plots.color_for(result["device"]), "first call": _O["orange"]}
    plots.series(step_ax, result, x="stage", y="ms_per_step", reference=usable, colors=colors)
    plots.series(first_ax, result, x="stage", y="first_call_s", reference=usable, colors=colors)
    _recorded_level(step_ax, slow_loop_record if eager_ms else None, eager_ms, "eager step", "07")
    for ax in (step_ax, first_ax):
        ax.set_xticks(result["stage"], result["versions"], fontsize=7, rotation=12)
        ax.set_xlim(-0.4, len(result["stage"]) - 0.6)
        ax.grid(True, which="major", alpha=0.3)
        plots.log_axis(ax, "y")
    step_ax.set_ylabel("ms per training step")
    step_ax.set_title(f"batch {result['batch']}, width {result['width']} ({result['device']})", fontsize=9)
    first_ax.set_ylabel("seconds (timed once)")  # a first call happens once: no repeats, no spread
    first_ax.set_title("the first call: compiling, capturing", fontsize=9)
    if _no_accelerator(result):
        plots.note(figure, "CUDA graphs run on CUDA devices only: not measured here")
    plots.legend(figure)
