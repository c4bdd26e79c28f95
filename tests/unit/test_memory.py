"""gpulab.memory.TensorLedger and the snapshot figure."""

from __future__ import annotations

import gc
import sys
import threading

import pytest
import torch
from torch import nn

from gpulab import figures, memory, plots
from gpulab.memory import TensorLedger

from conftest import requires_cuda

MiB = 2**20


def test_the_ledger_counts_new_storages_once_and_sees_them_freed():
    with TensorLedger() as ledger:
        a = torch.ones(MiB // 4)  # 1 MiB
        b = a * 2  # 1 MiB
        view = b[: MiB // 8]  # shares b's storage
        a.add_(1)  # in place: nothing new
        assert ledger.live_bytes == 2 * MiB
        del a
        assert ledger.live_bytes == MiB
        del b
        assert ledger.live_bytes == MiB  # the view still holds the storage
        del view
    assert ledger.live_bytes == 0 and ledger.peak_bytes == 2 * MiB
    assert ledger.trace == [MiB, 2 * MiB, MiB, 0]


def test_tensors_made_before_the_ledger_are_not_counted_nor_are_their_views():
    weights = torch.ones(1000)
    with TensorLedger() as ledger:
        transposed = weights.view(10, 100).t()
        weights.mul_(2)
        total = weights.sum()
    assert ledger.live_bytes == total.untyped_storage().nbytes() == 4
    del transposed


def test_a_training_step_is_counted_phase_by_phase():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
    optimizer = torch.optim.Adam(model.parameters())
    x = torch.randn(32, 64)
    parameters = sum(p.numel() * 4 for p in model.parameters())
    with TensorLedger() as ledger:
        ledger.mark("forward")
        loss = model(x).square().mean()
        hidden = 32 * 256 * 4
        # saved: the hidden layer (GELU's input), GELU's output; made: the output, its square, the loss
        assert ledger.live_bytes == 2 * hidden + 32 * 64 * 4 + loss.untyped_storage().nbytes()
        ledger.mark("backward")
        loss.backward()
        del loss
        assert ledger.live_bytes == parameters  # the gradients, and nothing of the graph
        ledger.mark("optimizer")
        optimizer.step()
        optimizer.zero_grad()
        averages = sum(
            s[k].untyped_storage().nbytes() for s in optimizer.state.values() for k in ("exp_avg", "exp_avg_sq")
        )
    # Adam's two averages per parameter; its step counters come from torch.tensor(), made outside any operation
    assert ledger.live_bytes == averages == 2 * parameters
    assert [label for _, label in ledger.marks] == ["forward", "backward", "optimizer"]
    assert ledger.marks[0][0] == 0 and ledger.marks[1][0] < ledger.marks[2][0] <= len(ledger.trace)
    assert max(ledger.trace) == ledger.peak_bytes


def test_the_ledger_follows_one_device_and_samples_beside_each_event():
    readings = iter(range(1000))
    with TensorLedger("meta", sample=lambda: next(readings)) as ledger:
        on_meta = torch.empty(1000, device="meta")
        on_cpu = torch.empty(1000)
    assert ledger.live_bytes == 4000 and ledger.trace == [4000]
    assert ledger.samples == [0]
    del on_meta, on_cpu


def test_a_device_without_an_index_counts_every_device_of_its_type():
    for wanted in ("cpu", "cpu:0", torch.device("cpu", 0)):
        with TensorLedger(wanted) as ledger:
            kept = torch.ones(1000)  # reports device "cpu", without an index
        assert ledger.live_bytes == 4000, f"TensorLedger({wanted!r}) counted {ledger.live_bytes} bytes of a CPU tensor"
        del kept
    same = memory._same_device
    cuda0, cuda1 = torch.device("cuda", 0), torch.device("cuda", 1)
    assert same(cuda0, torch.device("cuda")) and same(cuda1, torch.device("cuda"))
    assert same(cuda1, torch.device("cuda:1")) and not same(cuda0, torch.device("cuda:1"))
    assert not same(torch.device("cpu"), torch.device("cuda")) and not same(cuda0, torch.device("cpu"))


def test_reset_peak_starts_again_from_what_is_live():
    with TensorLedger() as ledger:
        big = torch.ones(MiB)
        del big
        small = torch.ones(10)
        ledger.reset_peak()
        assert ledger.peak_bytes == 40
        assert (small + 1).numel() == 10
    assert ledger.peak_bytes == 80


def test_frees_from_another_thread_are_counted():
    with TensorLedger() as ledger:
        tensors = [torch.ones(1000) for _ in range(50)]
    assert ledger.live_bytes == 50 * 4000
    worker = threading.Thread(target=tensors.clear)
    worker.start()
    worker.join()
    assert ledger.live_bytes == 0


@requires_cuda
def test_the_ledger_agrees_with_the_cuda_allocator_on_a_training_step():
    model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).cuda()
    x = torch.randn(1024, 512, device="cuda")
    # The first matrix product of a thread on a stream also takes cuBLAS's workspace (32 MiB on an H100) from
    # the allocator and keeps it; the backward's autograd thread has its own. One step first makes both.
    model(x).sum().backward()
    model.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    with TensorLedger("cuda:0") as ledger:
        out = model(x)
        counted, allocated = ledger.live_bytes, torch.cuda.memory_allocated() - before
        out.sum().backward()
        del out
    grads = sum(p.grad.untyped_storage().nbytes() for p in model.parameters())
    # every size here is a multiple of the allocator's 512-byte blocks: the two agree exactly
    assert counted == allocated
    assert ledger.live_bytes == grads == torch.cuda.memory_allocated() - before


# ---------------------------------------------------------------- recovering from an uncaught error


FAILING_CELL = """
import torch, weakref
watch = []
def step():
    activations = torch.ones(2**18)
    watch.append(weakref.ref(activations))
    try:
        raise ValueError("the first failure")
    except ValueError:
        raise torch.OutOfMemoryError("out of memory (pretend)")   # chained: the ValueError's frames too
step()
"""


@pytest.fixture
def shell():
    """An IPython shell, as a notebook's kernel runs one; gone again after the test."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"  # no history file in the home folder
    hooks = sys.displayhook, sys.excepthook
    shell = InteractiveShell.instance(config=config)
    yield shell
    InteractiveShell.clear_instance()
    sys.displayhook, sys.excepthook = hooks
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)


def test_recover_from_oom_frees_what_ipython_keeps_of_an_uncaught_error(shell, capsys):
    shell.run_cell(FAILING_CELL)
    watch = shell.user_ns["watch"]
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):  # what Python keeps, alone
        if hasattr(sys, name):
            setattr(sys, name, None)
    gc.collect()
    assert watch[0]() is not None, "IPython no longer keeps the error: recover_from_oom's extra work can go"
    shell.run_cell("from gpulab.memory import recover_from_oom\nrecover_from_oom()")
    gc.collect()
    assert watch[0]() is None, "the failed step's tensor is still alive after recover_from_oom()"
    assert shell.user_ns["watch"] is watch and callable(shell.user_ns["step"]), "the notebook's own variables must stay"
    capsys.readouterr()


def test_recover_from_oom_clears_the_frames_of_an_error_kept_two_cells_later(shell, capsys):
    shell.run_cell(FAILING_CELL)
    watch = shell.user_ns["watch"]
    shell.run_cell("1 + 1")  # the failed cell's result is gone; IPython's formatter still has the traceback
    memory.recover_from_oom()
    assert watch[0]() is None, "the failed step's tensor is still alive two cells later"
    assert getattr(shell.InteractiveTB, "tb", None) is None and getattr(sys, "last_value", None) is None
    capsys.readouterr()


def test_recover_from_oom_without_an_error_or_ipython_does_nothing_harmful():
    memory.recover_from_oom()
    kept = torch.ones(10)
    memory.recover_from_oom()  # a live tensor, referenced: untouched
    assert kept.sum().item() == 10


# ---------------------------------------------------------------- a CUDA snapshot, drawn


def test_a_snapshot_is_drawn_as_memory_over_its_events():
    snapshot = {
        "device_traces": [
            [
                {"action": "segment_alloc", "size": 2 * MiB},
                {"action": "alloc", "size": MiB},
                {"action": "alloc", "size": 512},
                {"action": "free_requested", "size": MiB},
                {"action": "free_completed", "size": MiB},
                {"action": "alloc", "size": 4 * MiB},
            ]
        ]
    }
    figure = plots.new_figure()
    figures.cuda_snapshot(snapshot, figure)
    (line,) = [line for line in figure.axes[0].get_lines() if line.get_gid() == "yours|snapshot"]
    assert list(line.get_ydata()) == [MiB, MiB + 512, 512, 4 * MiB + 512]
    empty = plots.new_figure()
    figures.cuda_snapshot({"device_traces": []}, empty)
    assert "_record_memory_history" in empty._supxlabel.get_text()


@pytest.mark.parametrize("device", [1, "cuda:1", torch.device("cuda", 1)])
def test_a_snapshot_draws_the_gpu_named_however_it_is_named(device):
    snapshot = {"device_traces": [[{"action": "alloc", "size": MiB}], [{"action": "alloc", "size": 3 * MiB}]]}
    figure = plots.new_figure()
    figures.cuda_snapshot(snapshot, figure, device=device)
    (line,) = [line for line in figure.axes[0].get_lines() if line.get_gid() == "yours|snapshot"]
    assert list(line.get_ydata()) == [3 * MiB]


# ---------------------------------------------------------------- what fits: free memory and the sizes it allows


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
