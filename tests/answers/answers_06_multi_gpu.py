"""Answers students write for lesson 06's exercises (see test_answers.py)."""

_AVERAGE = '''%%writefile {scripts}/average_gradients.py
import torch
import torch.distributed as dist


def average_gradients(model):
BODY
'''

_SHARES = '''%%writefile {scripts}/shares.py
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def epochs_seen(dataset, epochs, batch_size):
BODY
'''

_CHECKPOINT = '''%%writefile {scripts}/checkpointing.py
import torch
import torch.distributed as dist


def save_checkpoint(model, optimizer, epoch, path):
SAVE


def load_checkpoint(model, optimizer, path, device):
LOAD
'''

_SAVE = '''    if dist.get_rank() == 0:
        torch.save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
    dist.barrier()'''

_LOAD = '''    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]'''

_BUSBW = '''
def bus_bandwidth(nbytes, seconds, world_size):
    return nbytes / seconds * 2 * (world_size - 1) / world_size / 1e9


def fit_alpha_beta(sizes, seconds):
FIT
'''


def average(body: str) -> str:
    return _AVERAGE.replace("BODY", body.strip("\n"))


def shares(body: str) -> str:
    return _SHARES.replace("BODY", body.strip("\n"))


def sampled(options: str) -> str:
    """The sampler loop of a right answer, with the sampler made with ``options``."""
    return shares(f'''
    sampler = DistributedSampler(dataset, {options})
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    seen = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        seen.append([int(i) for indices, _ in loader for i in indices])
    return seen
''')


def checkpoint(save: str = _SAVE, load: str = _LOAD) -> str:
    return _CHECKPOINT.replace("SAVE", save.strip("\n")).replace("LOAD", load.strip("\n"))


def fit(body: str) -> str:
    return "import numpy as np\n" + _BUSBW.replace("FIT", body.strip("\n"))


RIGHT = {
    "average": [
        ("a loop: sum, then divide in place", average('''
    world_size = dist.get_world_size()
    for p in model.parameters():
        if p.grad is None:
            continue
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad.div_(world_size)
''')),
        ("one flat buffer, one all-reduce", average('''
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()
''')),
        ("asynchronous all-reduces, then a new .grad each", average('''
    pending = [(p, dist.all_reduce(p.grad, async_op=True)) for p in model.parameters() if p.grad is not None]
    for p, work in pending:
        work.wait()
        p.grad = p.grad / dist.get_world_size()
''')),
    ],
    "shares": [
        ("sampler told its rank and world size, batch[0].tolist()", shares('''
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
''')),
        ("set_epoch inside a helper generator", shares('''
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=False)

    def one_epoch(epoch):
        sampler.set_epoch(epoch)
        for indices, _ in loader:
            yield from (int(i) for i in indices)

    return [list(one_epoch(e)) for e in range(epochs)]
''')),
    ],
    "busbw": [
        ("numpy polyfit, slope first", fit('''
    beta, alpha = np.polyfit(sizes, seconds, 1)
    return float(alpha), float(beta)
''')),
        ("closed form from the means", fit('''
    n = len(sizes)
    mean_s, mean_t = sum(sizes) / n, sum(seconds) / n
    beta = sum((s - mean_s) * (t - mean_t) for s, t in zip(sizes, seconds)) / sum((s - mean_s) ** 2 for s in sizes)
    return mean_t - beta * mean_s, beta
''')),
        ("algorithm bandwidth first, then the factor; lstsq in numpy", '''
import numpy as np

def bus_bandwidth(nbytes, seconds, world_size):
    algbw = nbytes / seconds / 1e9
    return float(algbw * (2 * (world_size - 1) / world_size))


def fit_alpha_beta(sizes, seconds):
    A = np.vstack([np.ones(len(sizes)), np.asarray(sizes, dtype=float)]).T
    (alpha, beta), *_ = np.linalg.lstsq(A, np.asarray(seconds, dtype=float), rcond=None)
    return alpha, beta
'''),
    ],
    "checkpoint": [
        ("rank 0 saves, a barrier after it", checkpoint()),
        ("getattr for the plain model, weights_only, synchronised by an all_reduce", checkpoint('''
    plain = getattr(model, "module", model)
    if dist.get_rank() == 0:
        state = {"epoch": epoch, "model": plain.state_dict(), "optimizer": optimizer.state_dict()}
        torch.save(state, path)
    dist.all_reduce(torch.zeros(1))             # every rank waits here until rank 0 has saved
''', '''
    checkpoint = torch.load(path, map_location=device, weights_only=True)
    getattr(model, "module", model).load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return int(checkpoint["epoch"])
''')),
    ],
}

WRONG = {
    # (name, source, the checks it must fail, whether it must also fail on a busy machine)
    "average": [
        ("sums without dividing", average('''
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
'''), {"average-two", "average-three", "average-frozen"}, True),
        ("divides by 2, whatever the world size", average('''
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= 2
'''), {"average-three"}, True),
        ("forgets parameters without a gradient", average('''
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
'''), {"average-frozen"}, True),
    ],
    "shares": [
        ("a shuffling DataLoader, no sampler", shares('''
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
    return [[int(i) for indices, _ in loader for i in indices] for _ in range(epochs)]
'''), {"shares-cover"}, True),
        ("never calls set_epoch", shares('''
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    return [[int(i) for indices, _ in loader for i in indices] for _ in range(epochs)]
'''), {"shares-epochs"}, True),
        ("a sampler that does not shuffle", sampled("shuffle=False"), {"shares-epochs"}, True),
        ("drop_last: equal shares, but a sample is never seen", sampled("drop_last=True"), {"shares-uneven"}, True),
    ],
    "busbw": [
        ("the algorithm bandwidth, without the 2(n − 1)/n", '''
import numpy as np

def bus_bandwidth(nbytes, seconds, world_size):
    return nbytes / seconds / 1e9


def fit_alpha_beta(sizes, seconds):
    beta, alpha = np.polyfit(sizes, seconds, 1)
    return float(alpha), float(beta)
''', {"busbw-formula", "busbw-measured"}, True),
        ("GiB/s instead of GB/s", '''
import numpy as np

def bus_bandwidth(nbytes, seconds, world_size):
    return nbytes / seconds * 2 * (world_size - 1) / world_size / 2**30


def fit_alpha_beta(sizes, seconds):
    beta, alpha = np.polyfit(sizes, seconds, 1)
    return float(alpha), float(beta)
''', {"busbw-formula", "busbw-measured"}, True),
        ("polyfit's coefficients taken in the wrong order", fit('''
    alpha, beta = np.polyfit(sizes, seconds, 1)
    return alpha, beta
'''), {"busbw-fit"}, True),
    ],
    "checkpoint": [
        ("every rank saves", checkpoint('''
    torch.save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
    dist.barrier()
'''), {"checkpoint-rank0"}, True),
        # Without a barrier the other ranks return while rank 0 is still writing: 1.5 s of a slow disk
        # decide it, which a very busy machine could stretch; it is left out of the busy-machine round.
        ("no barrier", checkpoint('''
    if dist.get_rank() == 0:
        torch.save({"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, path)
'''), {"checkpoint-barrier"}, False),
        ("saves DDP's own state_dict", checkpoint('''
    if dist.get_rank() == 0:
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    dist.barrier()
''', '''
    state = torch.load(path, map_location=device)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]
'''), {"checkpoint-plain"}, True),
        ("restores the weights but not the optimizer", checkpoint(load='''
    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    return state["epoch"]
'''), {"checkpoint-resume"}, True),
    ],
}
