"""gpulab bench on every lesson: each panel recorded at its default settings, drawn readable on this machine
and beside a GPU-shaped record, its estimate held to its run; lesson 04's largest batch and out-of-memory path."""

import json

import numpy as np
import pytest

from gpulab import bench, figures, plots, reference, timing

from conftest import ROOT


def test_each_figure_reads_the_reference_recorded_under_its_own_name(monkeypatch):
    loaded = []
    monkeypatch.setattr(reference, "load", lambda name: loaded.append(name))  # and no reference: None
    for name, result in real_gpu_results().items():
        loaded.clear()
        figures.PANELS[name](result, plots.new_figure((11.0, 3.6)))
        expected = [] if name in OWN_ONLY else [name] + BORROWS.get(name, [])
        assert loaded == expected, f"{name}'s figure read the references of {loaded}"


@pytest.fixture(scope="module")
def lesson_runs(tmp_path_factory):
    """Every lesson run as the bench runs it, on this machine, with no reference shipped."""
    empty = tmp_path_factory.mktemp("no-references")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reference, "_folder", lambda: empty)
        recorded = []
        for lesson in bench.find_lessons(ROOT):
            # Panels size their settings by a 20 ms matmul calibration made once per process: made again for
            # each lesson, it sees the machine's load as the lesson's panels do (the suite's background runs
            # change that load several times over).
            patch.setattr(timing, "_RATES", {})
            recorded += bench.run_lesson(lesson, tmp_path_factory.mktemp("bench"))
    return {item.name: item for item in recorded}


def test_the_bench_records_every_lesson_panel(lesson_runs):
    assert set(lesson_runs) == set(figures.PANELS)
    for name, item in lesson_runs.items():
        record = reference.validate(json.loads(item.json_path.read_text()), name)
        assert record["lesson"].startswith(name[:2]) and record["result"] and record["settings"]
        assert item.png_path.read_bytes().startswith(b"\x89PNG")
        assert item.panel.plot is figures.PANELS[name] and item.panel.plot.panel_name == name
    bandwidth = lesson_runs["02_bandwidth"].panel.result
    assert bandwidth["sizes"][0] == 4096 and all(v > 0 for values in bandwidth["gbps"].values() for v in values)
    assert lesson_runs["02_sync"].panel.result["steps"][-1] == lesson_runs["02_sync"].panel.values["most_steps"]


def drawn(panel, result=None):
    figure = plots.new_figure(panel.figsize)
    panel.plot(panel.result if result is None else result, figure)
    figure.canvas.draw()
    return figure


def data_lines(ax):
    return [line for line in ax.get_lines() if (line.get_gid() or "").split("|")[0] in {"yours", "reference", "known"}]


def measured_points(ax, owners=("yours|",)) -> dict[str, int]:
    """How many points each series measured here (or, with ``owners``, recorded too) draws on ``ax``: a
    curve's points, a bar chart's bars, a timeline's bars."""
    points = {line.get_gid(): len(line.get_xdata()) for line in data_lines(ax) if line.get_gid().startswith(owners)}
    for bar in ax.patches:
        if (bar.get_gid() or "").startswith(owners):
            points[bar.get_gid()] = points.get(bar.get_gid(), 0) + 1
    for collection in ax.collections:
        if (collection.get_gid() or "").startswith(owners):
            points[collection.get_gid()] = points.get(collection.get_gid(), 0) + len(collection.get_paths())
    return points


def labelled(ax, axis):
    lo, hi = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    index = 1 if axis == "y" else 0
    return [t.get_text() for t in ticks if t.get_text() and lo * 0.999 <= t.get_position()[index] <= hi * 1.001]


def test_every_panel_on_this_machine_draws_readable_axes_with_data(lesson_runs):
    for name, item in lesson_runs.items():
        figure = drawn(item.panel)
        assert any(measured_points(ax) for ax in figure.axes), f"{name}: the figure shows nothing measured here"
        for ax in figure.axes:
            # A pane of what this machine cannot do (a copy back from a GPU, on a CPU) shows the GPU's record.
            measured = measured_points(ax, ("yours|", "reference|"))
            assert measured, f"{name}: an axes shows nothing measured here or recorded ({ax.get_title()!r})"
            assert min(measured.values()) >= 2, f"{name}: a series with fewer than two points: {measured}"
            assert len(labelled(ax, "y")) >= 3, f"{name}: the y axis of {ax.get_title()!r} reads {labelled(ax, 'y')}"
            assert len(labelled(ax, "x")) >= min(3, min(measured.values())), f"{name}: x axis {labelled(ax, 'x')}"
        note = figure._supxlabel
        if note is not None:
            assert not any(note.get_window_extent().overlaps(ax.get_window_extent()) for ax in figure.axes), name
        known = [line for ax in figure.axes for line in data_lines(ax) if line.get_gid().startswith("known|")]
        assert all(
            any(word in line.get_label() for word in ("theoretical", "spec sheet", "model")) for line in known
        ), f"{name}: a figure not measured here must say what it is: {[line.get_label() for line in known]}"


# How each panel's result would look recorded on a GPU: this machine's numbers under a GPU's
# series names, so that a reference line and the reader's line of the same numbers must coincide.
# Each maps the result to (the GPU-shaped result, {reference series: the reader's series}).
def _gpu_shaped(result, series_key, mapping, **extra):
    shaped = json.loads(json.dumps(result))
    shaped[series_key] = {gpu_name: result[series_key][mine] for gpu_name, mine in mapping.items()}
    shaped.update(extra)
    return shaped, mapping


def _roofline_shaped(result):
    mine = result["device"]  # "cpu" here, "cuda:0" on a GPU
    shaped, pairs = _gpu_shaped(
        result, "gflops", {"cuda:0": mine}, device="cuda:0", ceilings={"cuda:0": result["ceilings"][mine]}
    )
    return shaped, {**pairs, "roof cuda:0": f"roof {mine}"}


def _bandwidth_shaped(result):
    if "host memory copy" not in result["gbps"]:  # measured on a GPU already
        return _gpu_shaped(result, "gbps", {name: name for name in result["gbps"]})
    return _gpu_shaped(
        result,
        "gbps",
        {
            f"{d} {m}": "host memory copy"
            for d in ("host→device", "device→host")
            for m in ("pageable", "pinned", "pinned + non_blocking")
        },
        device="cuda:0",
        pin_seconds=[n / (g * 1e9) for n, g in zip(result["sizes"], result["gbps"]["host memory copy"])],
    )


GPU_SHAPED = {
    "00_roofline": _roofline_shaped,
    "00_overhead": lambda r: _gpu_shaped(r, "seconds", {"cpu": "cpu", "cuda:0": "cpu"}),
    "00_amdahl": lambda r: _gpu_shaped(r, "speedup", {"measured": "measured"}),
    "01_matmul": lambda r: _gpu_shaped(r, "seconds", {"cpu": "cpu", "cuda:0": "cpu"}),
    "02_bandwidth": _bandwidth_shaped,
    "02_sync": lambda r: _gpu_shaped(r, "seconds_per_step", {k: k for k in r["seconds_per_step"]}, device="cuda:0"),
    "03_throughput": lambda r: _gpu_shaped(r, "samples_per_s", {"cpu": "cpu", "cuda:0": "cpu"}),
    "03_placement": lambda r: _gpu_shaped(
        r,
        "ms_per_step",
        {
            k: "kept on the device"
            for k in ("kept on the device", "moved every step", "moved every step, pinned + non_blocking")
        },
        device="cuda:0",
    ),
    "04_batch": lambda r: _gpu_shaped(r, "bytes", {"peak, CUDA allocator": "peak, live tensors"}, device="cuda:0"),
    "04_checkpoint": lambda r: _checkpoint_shaped(r),
    "04_timeline": lambda r: _gpu_shaped(r, "bytes", {"CUDA allocator": "live tensors"}, device="cuda:0"),
    "05_matmul": lambda r: _gpu_shaped(
        r,
        "tflops",
        {"float32": "float32", "tf32": "float32", "bfloat16": "bfloat16", "float16": "bfloat16"},
        device="cuda:0",
    ),
    "05_step": lambda r: _gpu_shaped(r, "loss", {name: name for name in r["loss"]}, device="cuda:0"),
    "05_underflow": lambda r: _gpu_shaped(r, "counts", {name: name for name in r["counts"]}, device="cuda:0"),
    "06_allreduce": lambda r: _gpu_shaped(
        r, "seconds", {name: name for name in r["seconds"]}, device="cuda:0", backend="nccl"
    ),
    "06_throughput": lambda r: _gpu_shaped(r, "samples_per_s", {"DDP": "DDP"}, device="cuda:0", backend="nccl"),
    "06_gradients": lambda r: _gpu_shaped(
        r, "max_abs_difference", {name: name for name in r["max_abs_difference"]}, device="cuda:0", backend="nccl"
    ),
    "07_profile": lambda r: (dict(r, device="cuda:0"), {}),
    "07_sawtooth": lambda r: _gpu_shaped(
        r, "gflops", {"float16": next(iter(r["gflops"]))}, device="cuda:0", dtype="float16"
    ),
    "07_cudnn": lambda r: _gpu_shaped(r, "ms", {name: name for name in r["ms"]}, device="cuda:0"),
    "07_slow_loop": lambda r: _gpu_shaped(r, "ms_per_epoch", {"one epoch": "one epoch"}, device="cuda:0"),
    "08_collectives": lambda r: _gpu_shaped(
        r, "seconds", {name: name for name in r["seconds"]}, device="cuda:0", backend="nccl"
    ),
    "08_sharding": lambda r: _gpu_shaped(
        r, "step_s", {name: name for name in r["step_s"]}, device="cuda:0", backend="nccl"
    ),
    "09_fusion": lambda r: _gpu_shaped(r, "seconds", {name: name for name in r["seconds"]}, device="cuda:0"),
    "09_compile": lambda r: _gpu_shaped(r, "ms_per_step", {"one step": "one step"}, device="cuda:0"),
}
# A profile is of the reader's own code on their own machine: no reference is drawn beside it.
OWN_ONLY = {"07_profile"}
# Panels that, with no record of their own, draw what another lesson's record holds (an H100's copy rate, its
# eager step of lesson 07's loop).
BORROWS = {"09_fusion": ["00_roofline"], "09_compile": ["07_slow_loop"]}


def _checkpoint_shaped(result):
    shaped, memory = _gpu_shaped(
        result,
        "peak_bytes",
        {
            f"{way}, CUDA allocator": f"{way}, live tensors"
            for way in ("checkpoint every k-th block", "no checkpointing")
        },
        device="cuda:0",
    )
    return shaped, {**memory, **{name: name for name in result["ms_per_step"]}}


# The pinning pane's reference curves derive from the same host copy as the reader's on a CPU.
PIN_PAIRS = {"pin_memory": "host copy time", "copy from pinned": "host copy time"}
# Panels measured on the CPU whatever the machine has: their reference is the reference machine's CPU.
ON_REFERENCE_CPU = {"00_amdahl"}


def test_a_reference_is_drawn_in_the_readers_units_and_only_gpu_curves_carry_its_name(
    lesson_runs, tmp_path, monkeypatch
):
    assert set(GPU_SHAPED) == set(lesson_runs), "add a GPU_SHAPED entry for every new panel"
    folder = tmp_path / "references"
    folder.mkdir()
    pairs = {}
    for name, item in lesson_runs.items():
        shaped, pairs[name] = GPU_SHAPED[name](item.panel.result)
        record = {
            "device": {"device": "cuda:0", "name": "Test GPU", "type": "cuda"},
            "torch": "2.11.0",
            "devices": [
                {"device": "cpu", "name": "Test CPU", "type": "cpu", "cores": 16},
                {"device": "cuda:0", "name": "Test GPU", "type": "cuda"},
            ],
            "recorded": "2026-11-21",
            "command": "gpulab bench out",
            "result": shaped,
        }
        (folder / f"{name}.json").write_text(json.dumps(record))
    monkeypatch.setattr(reference, "_folder", lambda: folder)

    def yours_of(ax):
        return {line.get_gid().split("|", 1)[1]: line for line in data_lines(ax) if line.get_gid().startswith("yours|")}

    for name, item in lesson_runs.items():
        if name in OWN_ONLY:
            continue
        figure = drawn(item.panel)
        lines = [line for ax in figure.axes for line in data_lines(ax)]
        yours = {key: line for ax in figure.axes for key, line in yours_of(ax).items()}
        theirs = [
            (ax, line) for ax in figure.axes for line in data_lines(ax) if line.get_gid().startswith("reference|")
        ]
        assert theirs, f"{name}: the reference is not drawn"
        assert not [line for line in lines if line.get_gid().startswith("known|")], (
            f"{name}: with a reference recorded, well-known figures are not needed"
        )
        for ax, line in theirs:
            series = line.get_gid().split("|", 1)[1]
            pins = PIN_PAIRS if "host memory copy" in item.panel.result.get("gbps", {}) else {}
            paired = {**pairs[name], **pins}.get(series, series)  # on a GPU a pinning curve pairs with its own
            mine = yours_of(ax).get(paired, yours[paired])  # on the same axes where there is one
            if name in ON_REFERENCE_CPU:
                assert "Test CPU" in line.get_label() and "Test GPU" not in line.get_label(), (name, line.get_label())
            else:
                assert "Test GPU" in line.get_label() and series != "cpu", (name, series, line.get_label())
            assert list(line.get_xdata()) == list(mine.get_xdata()), (name, series)
            assert np.allclose(line.get_ydata(), mine.get_ydata()), (
                f"{name}: the reference's {series!r} and your {mine.get_gid()!r} hold the same numbers "
                "but are drawn at different heights: different units"
            )
        assert not any("Test GPU" in line.get_label() for line in lines if line.get_gid().startswith("yours|")), name


def real_gpu_results():
    # Results shaped like a reader's on a CUDA machine (made up), to draw the figures' GPU paths.
    sizes = [4096, 16384, 65536]
    gbps = {
        f"{d} {m}": [1.0, 4.0, 9.0]
        for d in ("host→device", "device→host")
        for m in ("pageable", "pinned", "pinned + non_blocking")
    }
    threads = [1, 2, 4, 8, 16, 32]
    return {
        "00_roofline": {
            "device": "cuda:0",
            "dtype": "float32",
            "width": 4096,
            "batches": [1, 4, 16],
            "intensity": [0.5, 2.0, 7.9],
            "gflops": {"cuda:0": [1500.0, 6000.0, 24000.0]},
            "ceilings": {"cuda:0": {"float32": 50000.0, "bfloat16": 700000.0, "copy_gbps": 3000.0}},
        },
        "00_overhead": {"sizes": [4, 64, 1024], "seconds": {"cpu": [3e-6, 3e-6, 4e-6], "cuda:0": [6e-6, 6e-6, 6e-6]}},
        "00_amdahl": {
            "n": 512,
            "cores": 16,
            "threads": threads,
            "seconds": [1.0, 0.52, 0.27, 0.15, 0.1, 0.11],
            "speedup": {"measured": [1.0, 1.9, 3.7, 6.6, 10.0, 9.1]},
            "p": 0.95,
            "law": {"processors": [1, 2, 4, 8], "speedup": [1 / (0.05 + 0.95 / n) for n in (1, 2, 4, 8)]},
            "fit": {"p": 0.96, "processors": threads, "speedup": [1 / (0.04 + 0.96 / n) for n in threads]},
        },
        "01_matmul": {
            "sizes": [32, 64, 128],
            "dtype": "float32",
            "seconds": {"cpu": [1e-5, 8e-5, 6e-4], "cuda:0": [2e-5, 2e-5, 3e-5]},
        },
        "02_bandwidth": {"device": "cuda:0", "sizes": sizes, "gbps": gbps, "pin_seconds": [1e-5, 2e-5, 5e-5]},
        "02_sync": {
            "device": "cuda:0",
            "steps": [1, 4, 16],
            "seconds_per_step": {
                ".item() every step": [3e-5, 3e-5, 3e-5],
                "log on the device, sync once": [3e-5, 1e-5, 6e-6],
            },
        },
        "03_throughput": {
            "batches": [8, 16, 32],
            "width": 512,
            "samples_per_s": {"cpu": [1e4, 2e4, 3e4], "cuda:0": [1e4, 3e4, 9e4]},
        },
        "03_placement": {
            "device": "cuda:0",
            "batches": [16, 32, 64],
            "sample_bytes": 12296,
            "ms_per_step": {
                "moved every step": [0.3, 0.5, 0.9],
                "kept on the device": [0.2, 0.2, 0.3],
                "moved every step, pinned + non_blocking": [0.25, 0.3, 0.5],
            },
        },
        "04_batch": {
            "device": "cuda:0",
            "width": 128,
            "depth": 4,
            "optimizer": "Adam",
            "batches": [16, 32, 64],
            "bytes": {
                "parameters + gradients + optimizer state": [8e6] * 3,
                "saved activations": [3e5, 6e5, 1.2e6],
                "estimate": [8.3e6, 8.6e6, 9.2e6],
                "peak, live tensors": [8.5e6, 8.8e6, 9.5e6],
                "peak, CUDA allocator": [9e6, 9.3e6, 1e7],
            },
            "budget": 2**34,
            "budget_applied": "allocator",
            "largest_batch": 900_000,
            "returned_to_baseline": True,
        },
        "04_checkpoint": {
            "device": "cuda:0",
            "width": 128,
            "depth": 8,
            "batch": 512,
            "every": [1, 2, 4, 8],
            "peak_bytes": {
                "checkpoint every k-th block, live tensors": [7e6, 1.3e7, 1.7e7, 1.9e7],
                "no checkpointing, live tensors": [2e7] * 4,
                "checkpoint every k-th block, CUDA allocator": [8e6, 1.4e7, 1.8e7, 2e7],
                "no checkpointing, CUDA allocator": [2.1e7] * 4,
            },
            "ms_per_step": {"checkpoint every k-th block": [0.5, 0.45, 0.4, 0.38], "no checkpointing": [0.36] * 4},
        },
        "04_timeline": {
            "device": "cuda:0",
            "width": 128,
            "depth": 4,
            "batch": 512,
            "optimizer": "Adam",
            "steps": 1,
            "events": [0, 1, 2, 3, 4, 5],
            "parameters": 2e6,
            "bytes": {
                "live tensors": [2.5e6, 3e6, 3.5e6, 3e6, 2.5e6, 6e6],
                "CUDA allocator": [2.6e6, 3.1e6, 3.6e6, 3.1e6, 2.6e6, 6.1e6],
            },
            "phases": [[0, 3, "forward"], [3, 5, "backward"], [5, 6, "optimizer"]],
        },
        "05_matmul": {
            "device": "cuda:0",
            "sizes": [1024, 2048, 4096],
            "tflops": {
                "float32": [30.0, 45.0, 50.0],
                "tf32": [150.0, 300.0, 380.0],
                "bfloat16": [300.0, 550.0, 700.0],
                "float16": [310.0, 560.0, 720.0],
            },
        },
        "05_step": {
            "device": "cuda:0",
            "dtype": "bfloat16",
            "width": 4096,
            "batch": 128,
            "steps": [1, 2, 3],
            "loss": {"float32 (no autocast)": [1.0, 0.8, 0.7], "autocast bfloat16": [1.0, 0.81, 0.7]},
            "ms_per_step": {"float32 (no autocast)": 2.0, "autocast bfloat16": 0.8},
            "peak_bytes": {"float32 (no autocast)": 4e8, "autocast bfloat16": 3e8},
        },
        "05_underflow": {
            "device": "cuda:0",
            "scale": 65536.0,
            "bin_centres": [1e-9, 1e-6, 1e-3, 1.0],
            "counts": {
                "fp16 gradients, unscaled": [10.0, 500.0, 100.0, 0.0],
                "fp16 gradients, scaled": [0.0, 10.0, 500.0, 100.0],
            },
            "flushed": {"fp16 gradients, unscaled": 0.01, "fp16 gradients, scaled": 0.0},
            "overflowed": 0.0,
            "fp16_smallest_normal": 6.1e-5,
            "fp16_smallest_subnormal": 6e-8,
            "trace": {
                "steps": [1, 2, 3, 4],
                "scale": [65536.0, 65536.0, 131072.0, 65536.0],
                "skipped": [False, False, True, False],
                "inf_at": 3,
                "growth_interval": 2,
            },
        },
        "06_allreduce": {
            "backend": "nccl",
            "device": "cuda:0",
            "sizes": [4096, 65536, 1048576, 16777216],
            "seconds": {"2 processes": [2e-5, 2.5e-5, 4e-5, 2.4e-4], "4 processes": [3e-5, 3.5e-5, 6e-5, 4e-4]},
            "busbw_gbps": {"2 processes": [0.2, 2.6, 26.0, 70.0], "4 processes": [0.2, 2.8, 26.0, 63.0]},
            "fit": {
                "2 processes": {"alpha_s": 2e-5, "beta_s_per_byte": 1.3e-11},
                "4 processes": {"alpha_s": 3e-5, "beta_s_per_byte": 2.2e-11},
            },
        },
        "06_throughput": {
            "backend": "nccl",
            "device": "cuda:0",
            "processes": [1, 2, 4],
            "threads": 4,
            "width": 512,
            "batch": 256,
            "cores": 16,
            "samples_per_s": {"DDP": [1e5, 1.9e5, 3.7e5]},
        },
        "06_gradients": {
            "backend": "nccl",
            "device": "cuda:0",
            "parameters": ["0.weight", "0.bias", "2.weight"],
            "global_batch": 64,
            "world": 2,
            "largest_gradient": 0.2,
            "max_abs_difference": {"DDP, all-reduced": [1e-8, 0.0, 2e-8], "rank 0's share alone": [0.04, 0.02, 0.1]},
        },
        "07_profile": {
            "device": "cuda:0",
            "batch": 256,
            "width": 2048,
            "steps": 2,
            "by": "self device time",
            "ops": ["aten::mm", "aten::addmm", "aten::threshold_backward"],
            "ms_per_step": [0.4, 0.3, 0.05],
            "calls_per_step": [5, 3, 2],
            "trace": [
                {
                    "name": "ProfilerStep#1",
                    "category": "user_annotation",
                    "row": "CPU · main thread",
                    "start_us": 0.0,
                    "duration_us": 900.0,
                    "depth": 0,
                },
                {
                    "name": "forward",
                    "category": "user_annotation",
                    "row": "CPU · main thread",
                    "start_us": 10.0,
                    "duration_us": 300.0,
                    "depth": 1,
                },
                {
                    "name": "sm90_xmma_gemm",
                    "category": "kernel",
                    "row": "GPU 0 · stream 7",
                    "start_us": 200.0,
                    "duration_us": 400.0,
                    "depth": 0,
                },
                {
                    "name": "elementwise_kernel",
                    "category": "kernel",
                    "row": "GPU 0 · stream 7",
                    "start_us": 650.0,
                    "duration_us": 50.0,
                    "depth": 0,
                },
            ],
        },
        "07_sawtooth": {
            "device": "cuda:0",
            "dtype": "float16",
            "middle": 4096,
            "sizes": [4094, 4095, 4096, 4097],
            "gflops": {"float16": [5.5e5, 5.1e5, 6.2e5, 4.4e5]},
        },
        "07_cudnn": {
            "device": "cuda:0",
            "image_sizes": [32, 48],
            "steps_per_size": 2,
            "steps": [1, 2, 3, 4],
            "ms": {"benchmark off": [1.2, 0.5, 1.1, 0.6], "benchmark on": [30.0, 0.4, 25.0, 0.5]},
        },
        "08_collectives": {
            "backend": "nccl",
            "device": "cuda:0",
            "ranks": 4,
            "sizes": [4096, 65536, 1048576, 16777216],
            "bytes": [4096, 65536, 1048576, 16777216],
            "seconds": {
                "all-gather": [2e-5, 2.2e-5, 3e-5, 1.4e-4],
                "reduce-scatter": [2e-5, 2.3e-5, 3.2e-5, 1.5e-4],
                "all-reduce": [2.5e-5, 3e-5, 5e-5, 2.6e-4],
            },
            "busbw_gbps": {
                "all-gather": [0.15, 2.2, 26.0, 90.0],
                "reduce-scatter": [0.15, 2.1, 25.0, 84.0],
                "all-reduce": [0.25, 3.3, 31.0, 97.0],
            },
            "fit": {name: {"alpha_s": 2e-5, "beta_s_per_byte": 8e-12} for name in ("all-gather", "all-reduce")},
        },
        "08_sharding": {
            "backend": "nccl",
            "device": "cuda:0",
            "ranks": [1, 2, 3, 4],
            "width": 1024,
            "depth": 4,
            "parameters": 4208650,
            "state_bytes": {
                "DDP": [{"parameters": 16834600, "gradients": 16834600, "optimizer state": 33669200}] * 4,
                "FSDP": [
                    {"parameters": 16834600 // n, "gradients": 16834600 // n, "optimizer state": 33669200 // n}
                    for n in (1, 2, 3, 4)
                ],
            },
            "allocated_bytes": {"DDP": [6.7e7, 8.4e7, 8.4e7, 8.4e7], "FSDP": [6.7e7, 3.4e7, 2.3e7, 1.7e7]},
            "peak_bytes": {"DDP": [8.4e7, 1.0e8, 1.0e8, 1.0e8], "FSDP": [8.4e7, 5.1e7, 4.0e7, 3.5e7]},
            "step_s": {"DDP": [2e-3, 2.4e-3, 2.5e-3, 2.6e-3], "FSDP": [2e-3, 3.1e-3, 3.3e-3, 3.5e-3]},
            "loss": {"DDP": [0.5, 0.6, 0.62, 0.63], "FSDP": [0.5, 0.6, 0.62, 0.63]},
        },
        "09_fusion": {
            "device": "cuda:0",
            "sizes": [16384, 262144, 4194304, 67108864],
            "seconds": {
                "eager chain": [4e-5, 4.2e-5, 3.2e-4, 4.1e-3],
                "F.gelu (one kernel)": [5e-6, 5.2e-6, 3.6e-5, 4.6e-4],
                "torch.compile": [9e-6, 9.2e-6, 3.7e-5, 4.7e-4],
            },
            "gbps": {
                "eager chain": [7.4, 112.0, 2359.0, 2946.0],
                "F.gelu (one kernel)": [6.6, 100.0, 2330.0, 2918.0],
                "torch.compile": [3.6, 57.0, 2267.0, 2856.0],
                "copy (x.clone())": [6.5, 101.0, 2400.0, 2950.0],
            },
            "bytes_ratio": 9.0,
        },
        "09_compile": {
            "device": "cuda:0",
            "batch": 8,
            "width": 128,
            "versions": ["eager", "torch.compile", "reduce-overhead", "CUDA graph"],
            "stage": [0, 1, 2, 3],
            "ms_per_step": {"one step": [1.08, 0.62, 0.09, 0.05]},
            "first_call_s": {"first call": [0.02, 6.5, 9.0, 0.3]},
        },
        "07_slow_loop": {
            "device": "cuda:0",
            "samples": 1024,
            "versions": ["as written", "loop fixed (1, 3)", "+ buffer (2)", "+ batch 256 (4)"],
            "stage": [0, 1, 2, 3],
            "ms_per_epoch": {"one epoch": [90.0, 30.0, 20.0, 1.2]},
            "profiled_samples": 1024,
            "counts": {
                "syncs": [128, 0, 0, 0],
                ".to calls": [384, 130, 2, 2],
                "tensors made in forward": [128, 128, 0, 0],
                "optimizer steps": [128, 128, 128, 4],
            },
        },
    }


def test_a_readers_gpu_results_draw_every_pane_and_no_stand_ins(lesson_runs):
    results = real_gpu_results()
    assert set(results) == set(lesson_runs)
    for name, result in results.items():
        figure = drawn(lesson_runs[name].panel, result)
        assert len(figure.axes) == {
            "00_overhead": 2,
            "01_matmul": 2,
            "02_bandwidth": 3,
            "04_checkpoint": 2,
            "05_underflow": 2,
            "06_allreduce": 2,
            "07_profile": 2,
            "08_collectives": 2,
            "08_sharding": 2,
            "07_slow_loop": 2,
            "09_fusion": 2,
            "09_compile": 2,
        }.get(name, 1), name
        for ax in figure.axes:
            lines = data_lines(ax)
            assert measured_points(ax) and not [line for line in lines if line.get_gid().startswith("known|")], (
                name,
                ax.get_title(),
            )
            assert len(labelled(ax, "y")) >= 3, (name, ax.get_title(), labelled(ax, "y"))
        # Nothing to note when the reader has a GPU, but how the figure marks its points' spread and noise.
        notes = [text for text in figure.__dict__.get("_gpulab_notes", ()) if not plots.is_noise_note(text)]
        assert notes == [], f"{name}: {notes}"


def test_the_bandwidth_figure_draws_an_accelerator_that_could_not_pin_memory(tmp_path, monkeypatch):
    # Lesson 02's sweep leaves out the pinned copies where allocating pinned memory raises.
    monkeypatch.setattr(reference, "_folder", lambda: tmp_path)
    sizes = [4096, 65536, 2**20]
    result = {
        "device": "mps:0",
        "sizes": sizes,
        "pin_seconds": [],
        "gbps": {"host→device pageable": [0.5, 4.0, 9.0], "device→host pageable": [0.4, 3.5, 8.0]},
    }
    figure = plots.new_figure((11.0, 3.6))
    figures.bandwidth(result, figure)
    figure.canvas.draw()
    assert [ax.get_title() for ax in figure.axes] == ["host → device", "device → host"]
    for ax in figure.axes:
        assert list(measured_points(ax).values()) == [3], ax.get_title()
    assert "could not pin host memory" in figure._supxlabel.get_text()


def test_each_panels_estimate_is_in_the_ballpark_of_its_run_here(lesson_runs):
    # The estimate hides settings that would run too long; a unit slip (ms for s) would hide all
    # or none. Twenty times either way is a wide margin on purpose: this checks the model, not speed, and
    # the machine's load changes between a calibration and a run (in CI one panel ran 8.6 times faster
    # than its estimate, calibrated while both cores were busy).
    for name, item in lesson_runs.items():
        record = json.loads(item.json_path.read_text())
        # The estimate is of the experiment; drawing its figure comes on top (the first figure in a process
        # pays for loading matplotlib's fonts).
        estimate, measured = record["estimated_s"], record["experiment_s"]
        assert measured <= record["elapsed_s"]
        assert measured / 20 < estimate < 20 * measured, f"{name}: estimated {estimate:.2f} s, ran {measured:.2f} s"


# ---------------------------------------------------------------- lesson 04: out of memory never crashes a class
