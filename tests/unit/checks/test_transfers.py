"""gpulab.checks.TransferRecorder, the records exercise checks grade behaviour with: every read, copy and pin."""

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import gpulab
from gpulab.checks import FACTORY_OPS, TransferRecorder, aten_ops


def losses_on(device, steps=6):
    weight = torch.randn(8, 8).to(device)
    x = torch.randn(8).to(device)
    out = []
    for _ in range(steps):
        x = torch.tanh(weight @ x)
        out.append((x * x).mean())
    return out


@pytest.mark.parametrize(
    "read, count",
    [
        (lambda ls: torch.stack(ls).tolist(), 1),
        (lambda ls: [v.item() for v in torch.stack(ls).cpu()], 1),  # the host copy read freely
        (lambda ls: torch.stack(ls).to("cpu").numpy().tolist(), 1),
        (lambda ls: [float(v) for v in torch.stack(ls).to(device="cpu")], 1),
        (lambda ls: [v.item() for v in ls], 6),
        (lambda ls: [float(v) for v in ls], 6),
        (lambda ls: [v.cpu() for v in ls], 6),
        (lambda ls: [v.detach().to("cpu") for v in ls], 6),
        (lambda ls: [f"{v:.3f}" for v in ls], 6),
        (lambda ls: [str(v) for v in ls], 6),
        (lambda ls: torch.tensor(ls).tolist(), 6),
        (lambda ls: [bool(v > 0) for v in ls], 6),
        (lambda ls: torch.empty(6).copy_(torch.stack(ls)).tolist(), 1),
    ],
)
def test_every_way_of_reading_values_on_the_host_is_counted_once_per_read(read, count):
    with TransferRecorder() as gpu:
        values = read(losses_on("cuda"))
    assert len(gpu.reads) == count, gpu.reads
    assert len(values) == 6


def test_nothing_is_read_while_work_stays_on_the_device():
    with TransferRecorder() as gpu:
        total = torch.stack(losses_on(torch.device("cuda"))).sum()
        assert total.device.type == "cuda"
    assert gpu.reads == []


def test_the_machine_looks_like_it_has_one_cuda_gpu_inside_and_not_outside():
    real = (torch.cuda.is_available(), torch.accelerator.is_available(), gpulab.best_device())
    with TransferRecorder() as gpu:
        assert torch.cuda.is_available() and torch.accelerator.is_available()
        assert gpulab.best_device() == torch.device("cuda", 0)
        assert torch.device("cuda").type == "cuda"  # naming a device is left alone
        assert torch.zeros(2, device="cuda").device == torch.device("cuda", 0)
        assert torch.ones(2).cuda().device == torch.device("cuda", 0)
        torch.cuda.synchronize()
    assert gpu.syncs == 1
    assert torch.zeros(2).device.type == "cpu"
    assert (torch.cuda.is_available(), torch.accelerator.is_available(), gpulab.best_device()) == real


def test_copies_to_the_gpu_record_size_pinning_and_non_blocking():
    with TransferRecorder() as gpu:
        pinned = torch.ones(16, pin_memory=True)
        also_pinned = torch.ones(4).pin_memory()
        assert pinned.is_pinned() and also_pinned.is_pinned() and not torch.ones(1).is_pinned()
        destination = torch.empty(16, device="cuda")
        destination.copy_(pinned, non_blocking=True)
        torch.ones(3, 2).to("cuda")
        also_pinned.cuda(non_blocking=True)
    assert [(c.shape, c.nbytes, c.pinned, c.non_blocking) for c in gpu.copies] == [
        ((16,), 64, True, True),
        ((3, 2), 24, False, False),
        ((4,), 16, True, True),
    ]


def test_a_model_trains_and_a_dataloader_pins_on_the_training_thread():
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    with TransferRecorder() as gpu:
        model = nn.Linear(4, 1).to("cuda")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in DataLoader(data, batch_size=32, pin_memory=True):
            x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        assert model.weight.device.type == "cuda"
    batch_copies = [c for c in gpu.copies if c.shape[0] == 32]
    assert len(batch_copies) == 4 and all(c.pinned and c.non_blocking for c in batch_copies)
    assert gpu.reads == []


def test_made_on_the_device_is_told_apart_from_copied_there():
    with TransferRecorder() as made:
        torch.randn(32, 100, device="cuda")
        with torch.device("cuda"):
            torch.randn(32, 100)
    with TransferRecorder() as copied:
        torch.randn(32, 100).to("cuda")
    assert made.copies == [] and [c.shape for c in copied.copies] == [(32, 100)]


def test_aten_ops_shows_what_a_function_computes_and_makes():
    a = torch.randn(8, 8)
    assert aten_ops(lambda: a @ a) == ["mm"]
    made = aten_ops(lambda: torch.randn(8, 8) @ torch.randn(8, 8))
    assert made.count("randn") == 2 and set(made) - {"mm"} <= FACTORY_OPS
    destination = torch.empty(8, 8)
    assert aten_ops(lambda: destination.copy_(a)) == ["copy_"]
