"""gpulab.profiling: a profiler's Chrome trace read back and drawn as a timeline."""

import json
import tempfile

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
    for op in addmm:  # each addmm lies within one forward label
        assert any(
            f.start_us <= op.start_us and op.start_us + op.duration_us <= f.start_us + f.duration_us + 1e-3
            for f in forwards
        )


def test_reading_a_profiler_leaves_no_file(step_profile, tmp_path, monkeypatch):
    # Its temporary files go to a folder of this test's own: another process's traces (make test runs lessons
    # beside the suite) are not this read's.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    profiling.read_trace(step_profile)
    assert list(tmp_path.iterdir()) == []


def test_a_trace_file_is_read_and_deep_calls_are_left_out(step_profile, tmp_path):
    path = tmp_path / "trace.json"
    step_profile.export_chrome_trace(str(path))
    everything = profiling.read_trace(path, max_depth=10)
    shallow = profiling.read_trace(path, max_depth=1)
    assert max(e.depth for e in shallow) <= 1 < max(e.depth for e in everything)
    assert {(e.name, e.start_us) for e in shallow} <= {(e.name, e.start_us) for e in everything}
    with pytest.raises(RuntimeError):
        step_profile.export_chrome_trace(str(tmp_path / "again.json"))  # why read_trace(prof) says it uses the trace up


def test_device_events_get_a_row_of_their_own(tmp_path):
    trace = {
        "traceEvents": [
            {"ph": "M", "name": "thread_name", "pid": 10, "tid": 10, "args": {"name": "thread 10 (python)"}},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 100.0, "dur": 20.0},
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 10,
                "tid": 10,
                "ts": 105.0,
                "dur": 5.0,
            },
            {"ph": "X", "cat": "ac2g", "name": "ac2g", "pid": 10, "tid": 10, "ts": 106.0, "dur": 1.0},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 130.0, "dur": 50.0},
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 10, "tid": 10, "ts": 101.0},
        ]
    }
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(trace))
    events = profiling.read_trace(path)
    assert [(e.name, e.row, e.start_us, e.depth) for e in events] == [
        ("aten::mm", "CPU · main thread", 0.0, 0),
        ("cudaLaunchKernel", "CPU · main thread", 5.0, 1),
        ("gemm", "GPU 0 · stream 7", 30.0, 0),
    ]


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
    assert labels[0] == "CPU · main thread · labels" and all(
        label.startswith("CPU · main thread · ops") for label in labels[1:]
    )
    assert ax.get_xlabel() == "time (ms)" and ax.get_title() == "two steps"
    with pytest.raises(ValueError, match="no timed events"):
        profiling.draw_timeline(ax, [])


def test_short_names_drop_the_shared_prefixes():
    assert profiling.short_name("aten::addmm") == "addmm"
    assert profiling.short_name("autograd::engine::evaluate_function: AddmmBackward0") == "AddmmBackward0"
    assert profiling.short_name("forward") == "forward"


# A CUDA profile, as torch/autograd/profiler.py builds it from Kineto: each operator the CPU ran, the
# runtime calls it made (CPU-side, no "::"), the kernels and copies on the GPU (device_type CUDA, names
# that can hold "::"), and a GPU-side copy of a record_function label that was the innermost one open
# when kernels were launched (the H100 SXM's trace, reference_results/07_profile.json, has them for
# forward and Optimizer.step#SGD.step, and none for ProfilerStep#N or the outer optimizer label).
def cuda_shaped_events():
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import EventList, FunctionEvent

    events, ids = [], iter(range(1, 1000))

    def event(name, start_us, end_us, on="cpu"):
        made = FunctionEvent(
            id=next(ids),
            name=name,
            thread=1,
            start_us=start_us,
            end_us=end_us,
            use_device="cuda",
            input_shapes=[],
            stack=[],
            device_type=DeviceType.CPU if on == "cpu" else DeviceType.CUDA,
        )
        if on == "gpu":
            made.thread = 7  # a stream
        events.append(made)  # the parents: EventList finds them from the times
        return made

    event("ProfilerStep*", 0, 1000)
    event("forward", 10, 300)
    event("aten::linear", 20, 200)
    addmm = event("aten::addmm", 30, 190)
    event("cudaLaunchKernel", 40, 50)
    event("aten::to", 210, 290)  # a weight made on the host, copied in forward
    event("aten::_to_copy", 215, 285)
    event("cudaStreamSynchronize", 230, 280)
    event("optimizer", 300, 500)
    event("Optimizer.step#SGD.step", 310, 490)
    event("aten::_foreach_add_", 320, 480)
    event("aten::item", 510, 600)  # .item()
    event("aten::_local_scalar_dense", 515, 595)
    event("cudaStreamSynchronize", 520, 590)
    mm = event("aten::mm", 610, 700)  # the same gemm kernel, launched by another op
    # The GPU's side: the labels' copies on the stream, the gemm kernel (launched by addmm, then by mm), a copy.
    gemm = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x3_tn_align4>(Params)"
    event("forward", 100, 2300, on="gpu")
    event(gemm, 100, 2200, on="gpu")
    event("Memcpy HtoD (Pageable -> Device)", 2210, 2290, on="gpu")
    event("Optimizer.step#SGD.step", 2300, 2500, on="gpu")
    event(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(...)",
        2300,
        2500,
        on="gpu",
    )
    event(gemm, 2600, 3000, on="gpu")
    addmm.append_kernel(gemm, 0, 2100)  # each op's device time: the kernels it launched
    mm.append_kernel(gemm, 0, 400)
    listed = EventList(events, use_device="cuda")
    listed._build_tree()
    return listed


def test_operators_are_what_the_cpu_ran_not_kernels_or_labels():
    events = cuda_shaped_events()
    averages = events.key_averages()
    names = [row.key for row in averages]
    assert names.count("forward") == 2 and sum("::" in name for name in names) == 10, names  # 8 operators, 2 kernels
    kept = [row.key for row in profiling.operators(averages)]
    assert sorted(kept) == [
        "aten::_foreach_add_",
        "aten::_local_scalar_dense",
        "aten::_to_copy",
        "aten::addmm",
        "aten::item",
        "aten::linear",
        "aten::mm",
        "aten::to",
    ]
    by_name = max((row for row in averages if "::" in row.key), key=lambda row: row.self_device_time_total)
    assert by_name.key.startswith("void cutlass::"), "a kernel's row holds every launch of it: more than any op"
    hottest = max(profiling.operators(averages), key=lambda row: row.self_device_time_total)
    assert hottest.key == "aten::addmm" and hottest.self_device_time_total == 2100
    everything = max(averages, key=lambda row: row.self_device_time_total)
    assert not profiling.ran_on_cpu(everything), "a plain sort shows a kernel or a label's copy first, not an op"


def test_autograd_rows_are_not_operators_though_their_names_hold_colons():
    # What a backward pass adds to a table on any device: the engine running each node, whose totals hold
    # the node's operators, and AccumulateGrad; with by="cpu_time_total" the first would otherwise top it.
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import EventList, FunctionEvent

    rows = [
        ("autograd::engine::evaluate_function: AddmmBackward0", 0, 900),
        ("AddmmBackward0", 10, 890),
        ("aten::mm", 20, 500),
        ("torch::autograd::AccumulateGrad", 910, 990),
        ("aten::add_", 920, 980),
    ]
    events = EventList(
        [
            FunctionEvent(
                id=i,
                name=name,
                thread=1,
                start_us=start,
                end_us=end,
                input_shapes=[],
                stack=[],
                device_type=DeviceType.CPU,
            )
            for i, (name, start, end) in enumerate(rows, 1)
        ]
    )
    events._build_tree()
    kept = profiling.operators(events.key_averages())
    assert sorted(row.key for row in kept) == ["aten::add_", "aten::mm"]
    assert max(kept, key=lambda row: row.cpu_time_total).key == "aten::mm"
    assert [profiling.is_operator(name) for name, *_ in rows] == [False, False, True, False, True]


def test_calls_by_your_code_count_each_call_once_on_a_gpu_too():
    counts = profiling.calls_by_your_code(cuda_shaped_events())
    assert counts["Optimizer.step#SGD.step"] == 1, "the label's GPU-side copy is not a second step"
    assert counts["aten::to"] == 1 and "aten::_to_copy" not in counts, "an op's inner calls are not your code's"
    assert counts["aten::item"] == 1 and "aten::_local_scalar_dense" not in counts
    assert not any(name.startswith(("void ", "Memcpy", "cudaLaunch")) for name in counts), counts


def test_syncs_count_blocking_copies_on_cuda_and_value_reads_elsewhere(step_profile):
    assert profiling.sync_count(cuda_shaped_events()) == 2, "the .item() and the copy to the device each wait"
    assert profiling.sync_count(step_profile.events()) == 0
    x = torch.ones(3)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            x.sum().item()
        if x.sum() > 0:
            pass
    assert profiling.sync_count(prof.events()) == 4


def test_runtime_calls_are_drawn_on_their_thread(tmp_path):
    trace = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::_local_scalar_dense",
                "pid": 10,
                "tid": 10,
                "ts": 0.0,
                "dur": 50.0,
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaStreamSynchronize",
                "pid": 10,
                "tid": 10,
                "ts": 5.0,
                "dur": 40.0,
            },
        ]
    }
    path = tmp_path / "sync.json"
    path.write_text(json.dumps(trace))
    assert [(e.name, e.row, e.depth) for e in profiling.read_trace(path)] == [
        ("aten::_local_scalar_dense", "CPU · main thread", 0),
        ("cudaStreamSynchronize", "CPU · main thread", 1),
    ]


def test_memory_traffic_counts_each_operators_inputs_once_and_its_outputs():
    x = torch.randn(1000)

    def gelu_tanh(t):
        return 0.5 * t * (1 + torch.tanh(0.7978845608 * (t + 0.044715 * t**3)))

    ops = profiling.memory_traffic(gelu_tanh, x)
    assert [op.name for op in ops] == ["mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"]
    assert [op.read // x.nbytes for op in ops] == [1, 1, 1, 2, 1, 1, 1, 2]  # a Python number is not memory
    assert all(op.written == x.nbytes for op in ops)
    # one fused operator: read once, written once
    assert profiling.memory_traffic(torch.nn.functional.gelu, x, approximate="tanh") == [
        profiling.Traffic("gelu", x.nbytes, x.nbytes)
    ]
    # x * x reads x once; a view moves nothing
    a = torch.randn(10, 20)
    assert profiling.memory_traffic(lambda t: t * t, x) == [profiling.Traffic("mul", x.nbytes, x.nbytes)]
    assert [op.name for op in profiling.memory_traffic(lambda t: t.t() @ t, a)] == ["mm"]
