"""Answers students write for lesson 06's exercises (see test_answers.py)."""

_AVERAGE = """%%writefile {scripts}/average_gradients.py
import torch
import torch.distributed as dist


def average_gradients(model):
BODY
"""

_SHARES = """%%writefile {scripts}/shares.py
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def epochs_seen(dataset, epochs, batch_size):
BODY
"""

_CHECKPOINT = """%%writefile {scripts}/checkpointing.py
import torch
import torch.distributed as dist


def save_checkpoint(model, optimizer, epoch, path):
SAVE


def load_checkpoint(model, optimizer, path, device):
LOAD
"""

_SAVE = """    if dist.get_rank() == 0:
        torch.save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
    dist.barrier()"""

_LOAD = """    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]"""

_BUSBW = """
def bus_bandwidth(nbytes, seconds, world_size):
    return nbytes / seconds * 2 * (world_size - 1) / world_size / 1e9


def fit_alpha_beta(sizes, seconds):
FIT
"""


def average(body: str) -> str:
    return _AVERAGE.replace("BODY", body.strip("\n"))


def shares(body: str) -> str:
    return _SHARES.replace("BODY", body.strip("\n"))


def sampled(options: str) -> str:
    """The sampler loop of a right answer, with the sampler made with ``options``."""
    return shares(f"""
    sampler = DistributedSampler(dataset, {options})
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    seen = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        seen.append([int(i) for indices, _ in loader for i in indices])
    return seen
""")


def checkpoint(save: str = _SAVE, load: str = _LOAD) -> str:
    return _CHECKPOINT.replace("SAVE", save.strip("\n")).replace("LOAD", load.strip("\n"))


def fit(body: str) -> str:
    return "import numpy as np\n" + _BUSBW.replace("FIT", body.strip("\n"))


RIGHT = {
    "average": [
        (
            "a loop: sum, then divide in place",
            average("""
    world_size = dist.get_world_size()
    for p in model.parameters():
        if p.grad is None:
            continue
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad.div_(world_size)
"""),
        ),
        (
            "one flat buffer, one all-reduce",
            average("""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
"""),
        ),
        (
            "asynchronous all-reduces, then a new .grad each",
            average("""
    pending = [(p, dist.all_reduce(p.grad, async_op=True)) for p in model.parameters() if p.grad is not None]
    for p, work in pending:
        work.wait()
        p.grad = p.grad / dist.get_world_size()
"""),
        ),
        (
            "all_gather every rank's gradients, then their mean",
            average("""
    world = dist.get_world_size()
    for parameter in model.parameters():
        if parameter.grad is None:
            continue
        gathered = [torch.zeros_like(parameter.grad) for _ in range(world)]
        dist.all_gather(gathered, parameter.grad)
        parameter.grad = torch.stack(gathered).mean(dim=0)
"""),
        ),
        (
            "from torch.distributed import all_reduce; divide first, then sum",
            """%%writefile {scripts}/average_gradients.py
from torch.distributed import all_reduce, get_world_size


def average_gradients(model):
    n = get_world_size()
    for p in filter(lambda p: p.grad is not None, model.parameters()):
        p.grad.data.div_(n)
        all_reduce(p.grad.data)
""",
        ),
    ],
    "shares": [
        (
            "sampler told its rank and world size, batch[0].tolist()",
            shares("""
    sampler = DistributedSampler(dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank(), shuffle=True, seed=42)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    result = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        order = []
        for batch in loader:
            order += batch[0].tolist()
        result.append(order)
    return result
"""),
        ),
        (
            "set_epoch inside a helper generator",
            shares("""
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=False)

    def one_epoch(epoch):
        sampler.set_epoch(epoch)
        for indices, _ in loader:
            yield from (int(i) for i in indices)

    return [list(one_epoch(e)) for e in range(epochs)]
"""),
        ),
        (
            "a helper of its own, the sampler's epoch passed in, indices via .tolist()",
            shares("""
    sampler = DistributedSampler(dataset, shuffle=True, drop_last=False)
    return [_one_epoch(dataset, sampler, batch_size, epoch) for epoch in range(epochs)]


def _one_epoch(dataset, sampler, batch_size, epoch):
    sampler.set_epoch(epoch)
    order = []
    for indices, _features in DataLoader(dataset, batch_size=batch_size, sampler=sampler):
        order.extend(indices.tolist())
    return order
"""),
        ),
    ],
    "busbw": [
        (
            "numpy polyfit, slope first",
            fit("""
    beta, alpha = np.polyfit(sizes, seconds, 1)
    return float(alpha), float(beta)
"""),
        ),
        (
            "closed form from the means",
            fit("""
    n = len(sizes)
    mean_s, mean_t = sum(sizes) / n, sum(seconds) / n
    beta = sum((s - mean_s) * (t - mean_t) for s, t in zip(sizes, seconds)) / sum((s - mean_s) ** 2 for s in sizes)
    return mean_t - beta * mean_s, beta
"""),
        ),
        (
            "algorithm bandwidth first, then the factor; lstsq in numpy",
            """
import numpy as np

def bus_bandwidth(nbytes, seconds, world_size):
    algbw = nbytes / seconds / 1e9
    return float(algbw * (2 * (world_size - 1) / world_size))


def fit_alpha_beta(sizes, seconds):
    A = np.vstack([np.ones(len(sizes)), np.asarray(sizes, dtype=float)]).T
    (alpha, beta), *_ = np.linalg.lstsq(A, np.asarray(seconds, dtype=float), rcond=None)
    return alpha, beta
""",
        ),
        (
            "torch.linalg.lstsq in float64, 0-dim tensors back in a list",
            """
import torch as t

def bus_bandwidth(nbytes, seconds, world_size):
    return t.tensor(nbytes / seconds * 2 * (world_size - 1) / world_size / 1e9)


def fit_alpha_beta(sizes, seconds):
    S = t.tensor(sizes, dtype=t.float64)
    A = t.stack([t.ones_like(S), S], dim=1)
    solution = t.linalg.lstsq(A, t.tensor(seconds, dtype=t.float64).unsqueeze(1)).solution.squeeze(1)
    return [solution[0], solution[1]]
""",
        ),
        # The task allows least squares on relative errors too: the lesson's own fit_alpha_beta, copied.
        (
            "the lesson's fit: relative errors (each row over t), α held at 0 where it comes out negative",
            """
import torch


def bus_bandwidth(nbytes, seconds, world_size):
    return nbytes / seconds * 2 * (world_size - 1) / world_size / 1e9


def fit_alpha_beta(sizes, seconds):
    S = torch.tensor(sizes, dtype=torch.float64)
    t = torch.tensor(seconds, dtype=torch.float64)
    rows = torch.stack([torch.ones_like(S), S], dim=1) / t[:, None]
    alpha, beta = torch.linalg.lstsq(rows, torch.ones_like(t)[:, None]).solution.flatten().tolist()
    if alpha < 0:
        alpha, beta = 0.0, ((S / t).sum() / (S * S / (t * t)).sum()).item()
    return alpha, beta
""",
        ),
        (
            "numpy polyfit weighted by 1/t: relative errors",
            fit("""
    beta, alpha = np.polyfit(sizes, seconds, 1, w=1 / np.asarray(seconds, dtype=float))
    return float(alpha), float(beta)
"""),
        ),
    ],
    "checkpoint": [
        ("rank 0 saves, a barrier after it", checkpoint()),
        (
            "getattr for the plain model, weights_only, synchronised by an all_reduce",
            checkpoint(
                """
    plain = getattr(model, "module", model)
    if dist.get_rank() == 0:
        state = {"epoch": epoch, "model": plain.state_dict(), "optimizer": optimizer.state_dict()}
        torch.save(state, path)
    dist.all_reduce(torch.zeros(1))             # every rank waits here until rank 0 has saved
""",
                """
    checkpoint = torch.load(path, map_location=device, weights_only=True)
    getattr(model, "module", model).load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return int(checkpoint["epoch"])
""",
            ),
        ),
        (
            "from torch import save, load; the rank from the environment",
            """%%writefile {scripts}/checkpointing.py
import os

import torch.distributed as dist
from torch import load, save


def save_checkpoint(model, optimizer, epoch, path):
    if int(os.environ.get("RANK", dist.get_rank())) == 0:
        save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
    dist.barrier()


def load_checkpoint(model, optimizer, path, device):
    checkpoint = load(path, map_location=device)
    model.module.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
""",
        ),
    ],
}

WRONG = {
    # (name, source, the constraint(s) it breaks, whether it must also fail on a busy machine)
    "average": [
        (
            "sums without dividing",
            average("""
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
"""),
            "average",
            True,
        ),
        (
            "divides by 2, whatever the world size",
            average("""
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= 2
"""),
            "any-world",
            True,
        ),
        (
            "forgets parameters without a gradient",
            average("""
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
"""),
            "frozen",
            True,
        ),
        (
            "dist.ReduceOp.AVG: right on NCCL, not on every backend",
            average("""
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
"""),
            "sum",
            False,
        ),
        (
            "skips frozen layers by requires_grad: an unused layer's None .grad is reduced",
            average("""
    world = dist.get_world_size()
    for p in model.parameters():
        if p.requires_grad:
            dist.all_reduce(p.grad)
            p.grad /= world
"""),
            "frozen",
            False,
        ),
        (
            "rank 0 gets the average; the others keep their own, divided",
            average("""
    for p in model.parameters():
        if p.grad is not None:
            dist.reduce(p.grad, dst=0)
            p.grad /= dist.get_world_size()
"""),
            "average",
            False,
        ),
    ],
    "shares": [
        (
            "a shuffling DataLoader, no sampler",
            shares("""
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
    return [[int(i) for indices, _ in loader for i in indices] for _ in range(epochs)]
"""),
            "once",
            True,
        ),
        (
            "never calls set_epoch",
            shares("""
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    return [[int(i) for indices, _ in loader for i in indices] for _ in range(epochs)]
"""),
            "order",
            True,
        ),
        ("a sampler that does not shuffle", sampled("shuffle=False"), "order", True),
        ("drop_last: equal shares, but a sample is never seen", sampled("drop_last=True"), "cover", True),
        (
            "each rank slices its share by hand: uneven shares",
            shares("""
    rank, world = dist.get_rank(), dist.get_world_size()
    seen = []
    for epoch in range(epochs):
        order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(epoch)).tolist()
        seen.append(order[rank::world])
    return seen
"""),
            "equal",
            False,
        ),
        (
            "one flat list for all epochs",
            shares("""
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    seen = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        seen.extend(int(i) for indices, _ in loader for i in indices)
    return seen
"""),
            "returns",
            False,
        ),
    ],
    "busbw": [
        (
            "the algorithm bandwidth, without the 2(n − 1)/n",
            """
import numpy as np

def bus_bandwidth(nbytes, seconds, world_size):
    return nbytes / seconds / 1e9


def fit_alpha_beta(sizes, seconds):
    beta, alpha = np.polyfit(sizes, seconds, 1)
    return float(alpha), float(beta)
""",
            "busbw",
            True,
        ),
        (
            "GiB/s instead of GB/s",
            """
import numpy as np

def bus_bandwidth(nbytes, seconds, world_size):
    return nbytes / seconds * 2 * (world_size - 1) / world_size / 2**30


def fit_alpha_beta(sizes, seconds):
    beta, alpha = np.polyfit(sizes, seconds, 1)
    return float(alpha), float(beta)
""",
            "busbw",
            True,
        ),
        (
            "polyfit's coefficients taken in the wrong order",
            fit("""
    alpha, beta = np.polyfit(sizes, seconds, 1)
    return alpha, beta
"""),
            "pair",
            True,
        ),
        (
            "a line through the smallest and largest messages",
            fit("""
    points = sorted(zip(sizes, seconds))
    (s0, t0), (s1, t1) = points[0], points[-1]
    beta = (t1 - t0) / (s1 - s0)
    return t0 - beta * s0, beta
"""),
            "least-squares",
            False,
        ),
        # polyfit's w multiplies each residual before it is squared: 1/t² weighs the squares by 1/t⁴.
        (
            "polyfit weighted by 1/t²: neither least squares the task allows",
            fit("""
    beta, alpha = np.polyfit(sizes, seconds, 1, w=1 / np.asarray(seconds, dtype=float) ** 2)
    return float(alpha), float(beta)
"""),
            "least-squares",
            False,
        ),
        (
            "sizes sorted, the times left in their order",
            fit("""
    beta, alpha = np.polyfit(sorted(sizes), seconds, 1)
    return float(alpha), float(beta)
"""),
            "any-order",
            False,
        ),
        (
            "α in microseconds",
            fit("""
    beta, alpha = np.polyfit(sizes, seconds, 1)
    return float(alpha) * 1e6, float(beta)
"""),
            "units",
            False,
        ),
    ],
    "checkpoint": [
        (
            "every rank saves",
            checkpoint("""
    torch.save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
    dist.barrier()
"""),
            "rank0",
            True,
        ),
        # Without a barrier the other ranks return while rank 0 is still writing: 1.5 s of a slow disk
        # decide it, which a very busy machine could stretch; it is left out of the busy-machine round.
        (
            "no barrier",
            checkpoint("""
    if dist.get_rank() == 0:
        torch.save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
"""),
            "barrier",
            False,
        ),
        (
            "saves DDP's own state_dict",
            checkpoint(
                """
    if dist.get_rank() == 0:
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    dist.barrier()
""",
                """
    state = torch.load(path, map_location=device)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]
""",
            ),
            "plain",
            True,
        ),
        (
            "restores the weights but not the optimizer",
            checkpoint(
                load="""
    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    return state["epoch"]
"""
            ),
            "restore",
            True,
        ),
        (
            "loads where the tensors were saved from: no map_location",
            checkpoint(
                load="""
    state = torch.load(path)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]
"""
            ),
            "device",
            False,
        ),
        (
            "returns nothing",
            checkpoint(
                load="""
    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
"""
            ),
            "epoch",
            False,
        ),
        (
            "its own names for the keys",
            checkpoint(
                """
    if dist.get_rank() == 0:
        torch.save({"step": epoch, "weights": model.module.state_dict(), "optim": optimizer.state_dict()}, path)
    dist.barrier()
""",
                """
    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["weights"])
    optimizer.load_state_dict(state["optim"])
    return state["step"]
""",
            ),
            "dict",
            False,
        ),
    ],
}

EDGES = {
    "busbw": [
        (
            "one rank moves nothing over the bus",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
assert bus_bandwidth(10**9, 0.5, 1) == 0.0
assert math.isclose(bus_bandwidth(10**9, 0.5, 2), 2.0) and math.isclose(bus_bandwidth(10**9, 0.5, 4), 3.0)
""",
        ),
        (
            "noisy times: the least-squares line, whatever the order of the sizes",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
sizes = [4096 * 4**k for k in range(9)]
times = [(50e-6 + s / 20e9) * f for s, f in zip(sizes, [1.04, 0.97, 1.02, 0.95, 1.06, 0.99, 0.93, 1.05, 1.01])]
n = len(sizes)
mean_s, mean_t = sum(sizes) / n, sum(times) / n
beta = sum((s - mean_s) * (t - mean_t) for s, t in zip(sizes, times)) / sum((s - mean_s) ** 2 for s in sizes)
alpha = mean_t - beta * mean_s
for order in (list(range(n)), list(reversed(range(n))), [3, 7, 0, 5, 1, 8, 2, 6, 4]):
    got_alpha, got_beta = fit_alpha_beta([sizes[i] for i in order], [times[i] for i in order])
    assert math.isclose(got_beta, beta, rel_tol=1e-9) and abs(got_alpha - alpha) < 1e-12, (got_alpha, got_beta, alpha, beta)
""",
        ),
        (
            "two messages: the line through them; a message of zero bytes gives α",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
alpha, beta = fit_alpha_beta([0, 1000], [1e-5, 2e-5])
assert abs(alpha - 1e-5) < 1e-15 and math.isclose(beta, 1e-8, rel_tol=1e-9), (alpha, beta)
""",
        ),
    ],
}
