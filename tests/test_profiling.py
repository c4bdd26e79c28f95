"""gpulab.profiling: a profiler's Chrome trace read back and drawn as a timeline."""

import json
import tempfile
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

from gpulab import plots, profiling


@pytest.fixture
def step_profile():
    # A profiler writes its trace once (a second export raises), so every test profiles afresh.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with record_function("forward"):
                loss = nn.functional.mse_loss(model(x), y)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                optimizer.step()
                optimizer.zero_grad()
    return prof


def test_a_finished_profiler_is_read_with_rows_and_nesting(step_profile):
    events = profiling.read_trace(step_profile)
    labels = [e for e in events if e.name in {"forward", "backward", "optimizer"}]
    assert sorted(e.name for e in labels) == ["backward", "backward", "forward", "forward", "optimizer", "optimizer"]
    assert {e.row for e in events} == {"CPU · main thread"}
    assert all(e.depth == 0 for e in labels), "nothing recorded encloses the labels"
    addmm = [e for e in events if e.name == "aten::addmm"]
    assert len(addmm) == 4 and all(e.depth >= 1 for e in addmm)
    forwards = sorted((e for e in labels if e.name == "forward"), key=lambda e: e.start_us)
    assert forwards[0].start_us == 0.0 or min(e.start_us for e in events) == 0.0
    for op in addmm:          # each addmm lies within one forward label
        assert any(f.start_us <= op.start_us and op.start_us + op.duration_us <= f.start_us + f.duration_us + 1e-3
                   for f in forwards)


def test_reading_a_profiler_leaves_no_file(step_profile):
    before = set(Path(tempfile.gettempdir()).glob("gpulab-trace-*"))
    profiling.read_trace(step_profile)
    assert set(Path(tempfile.gettempdir()).glob("gpulab-trace-*")) == before


def test_a_trace_file_is_read_and_deep_calls_are_left_out(step_profile, tmp_path):
    path = tmp_path / "trace.json"
    step_profile.export_chrome_trace(str(path))
    everything = profiling.read_trace(path, max_depth=10)
    shallow = profiling.read_trace(path, max_depth=1)
    assert max(e.depth for e in shallow) <= 1 < max(e.depth for e in everything)
    assert {(e.name, e.start_us) for e in shallow} <= {(e.name, e.start_us) for e in everything}
    with pytest.raises(RuntimeError):
        step_profile.export_chrome_trace(str(tmp_path / "again.json"))    # why read_trace(prof) says it uses the trace up


def test_device_events_get_a_row_of_their_own(tmp_path):
    trace = {"traceEvents": [
        {"ph": "M", "name": "thread_name", "pid": 10, "tid": 10, "args": {"name": "thread 10 (python)"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 100.0, "dur": 20.0},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 105.0, "dur": 5.0},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 130.0, "dur": 50.0},
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 10, "tid": 10, "ts": 101.0},
    ]}
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(trace))
    events = profiling.read_trace(path)
    assert [(e.name, e.row, e.start_us, e.depth) for e in events] == [
        ("aten::mm", "CPU · main thread", 0.0, 0), ("gemm", "GPU 0 · stream 7", 30.0, 0)]


@pytest.mark.parametrize("content", ["not json", "[1, 2", ""])
def test_an_unreadable_trace_is_a_clear_error(tmp_path, content):
    path = tmp_path / "broken.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="not a readable Chrome trace"):
        profiling.read_trace(path)
    with pytest.raises(ValueError, match="not a readable Chrome trace"):
        profiling.read_trace(tmp_path / "missing.json")


def test_the_timeline_draws_every_kept_event_with_its_rows_named(step_profile):
    events = profiling.read_trace(step_profile, max_depth=2)
    figure = plots.new_figure()
    ax = figure.subplots()
    profiling.draw_timeline(ax, [e.to_dict() for e in events], title="two steps")
    bars = sum(len(c.get_paths()) for c in ax.collections if c.get_gid() == "yours|timeline")
    assert bars == len(events)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "CPU · main thread · labels" and all(label.startswith("CPU · main thread · ops") for label in labels[1:])
    assert ax.get_xlabel() == "time (ms)" and ax.get_title() == "two steps"
    with pytest.raises(ValueError, match="no timed events"):
        profiling.draw_timeline(ax, [])


def test_short_names_drop_the_shared_prefixes():
    assert profiling.short_name("aten::addmm") == "addmm"
    assert profiling.short_name("autograd::engine::evaluate_function: AddmmBackward0") == "AddmmBackward0"
    assert profiling.short_name("forward") == "forward"
