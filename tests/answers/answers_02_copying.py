"""Answers students write for lesson 02's exercises (see test_answers.py)."""

_PREDICTIONS = {
    "x.to('cpu')": "same", "x.to(torch.float64)": "copy", "x.view(2, 3)": "view", "x.clone()": "copy",
    "x.contiguous()": "same", "x[1:]": "view", "torch.as_tensor(x)": "same", "x.to('cpu', copy=True)": "copy",
    "x.reshape(3, 2)": "view",
}


def _predictions(**changes):
    return "PREDICTIONS = " + repr({**_PREDICTIONS, **changes})


RIGHT = {
    "same-view-copy": [
        ("other quotes, spacing and case", '''
PREDICTIONS = {
    'x.to("cpu")': "Same",
    "x.to( torch.float64 )": "COPY",
    "x.view(2,3)": "view",
    "x.clone()": "copy",
    "x.contiguous()": " same ",
    "x[1:]": "View",
    "torch.as_tensor(x)": "same",
    'x.to("cpu", copy=True)': "copy",
    "x.reshape(3,2)": "view",
}
'''),
        ("built up one at a time", "PREDICTIONS = {}\n" + "\n".join(
            f"PREDICTIONS[{key!r}] = {value!r}" for key, value in _PREDICTIONS.items())),
    ],
    "nested-move": [
        ("Mapping and Sequence, named tuples by _fields", '''
from collections.abc import Mapping

def move_batch(batch, device, non_blocking=False):
    if torch.is_tensor(batch):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, Mapping):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if hasattr(batch, "_fields"):
        return type(batch)(*(move_batch(v, device, non_blocking) for v in batch))
    if isinstance(batch, tuple):
        return tuple(move_batch(v, device, non_blocking) for v in batch)
    if isinstance(batch, list):
        return [move_batch(v, device, non_blocking) for v in batch]
    return batch
'''),
        ("torch's pytree", '''
from torch.utils._pytree import tree_map

def move_batch(batch, device, non_blocking=False):
    return tree_map(lambda leaf: leaf.to(device, non_blocking=non_blocking) if isinstance(leaf, torch.Tensor) else leaf,
                    batch)
'''),
    ],
    "log-on-device": [
        ("stack, copy to the host, read the copy", '''
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss)
    on_host = torch.stack(losses).cpu()
    return [value.item() for value in on_host]
'''),
        ("a buffer on the device", '''
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = torch.empty(steps, device=device)
    for step in range(steps):
        x, losses[step] = simulate_step(x, weight)
    return losses.tolist()
'''),
        (".to('cpu') once, then NumPy", '''
def run_and_log(steps, device):
    x, weight = make_state(device)
    log = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        log.append(loss.detach().view(1))
    return [float(v) for v in torch.cat(log).to("cpu").numpy()]
'''),
    ],
    "transfer-benchmark": [
        ("pin_memory(), sizes in MiB, a scatter plot", '''
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4)
    if torch.device(device).type == "cuda":
        source = source.pin_memory()
    destination = torch.empty_like(source, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)


def bandwidth_table(sizes, device):
    table = {}
    for size in sizes:
        table[size] = measure_copy(size, device).gbps
    return table


def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.scatter([n / 2**20 for n in table], list(table.values()))
    ax.set_xscale("log")
    ax.set_xlabel("size (MiB)")
    ax.set_ylabel("GB/s")
'''),
        ("torch.cuda.is_available, semilogx in KiB, non_blocking", '''
def measure_copy(nbytes, device):
    source = torch.empty(nbytes // 4, pin_memory=torch.cuda.is_available() and "cuda" in str(device))
    source.fill_(1.0)
    destination = torch.zeros(nbytes // 4, device=device)
    def copy():
        destination.copy_(source, non_blocking=True)
    return gpulab.time_fn(copy, device=device, bytes_moved=nbytes, budget_s=0.1)


def bandwidth_table(sizes, device):
    return dict((n, measure_copy(n, device).gbps) for n in sizes)


def plot_bandwidth(table, figure):
    ax = figure.subplots()
    sizes = sorted(table)
    ax.semilogx([n / 1024 for n in sizes], [table[n] for n in sizes], "o-")
    ax.set(xlabel="transfer size (KiB)", ylabel="bandwidth (GB/s)")
'''),
    ],
}

_MEASURED = '''
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)


def bandwidth_table(sizes, device):
    return {n: measure_copy(n, device).gbps for n in sizes}
'''

_PLAIN_BENCHMARK = '''
def bandwidth_table(sizes, device):
    return {n: measure_copy(n, device).gbps for n in sizes}


def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.plot(list(table), list(table.values()), marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("GB/s")
'''

WRONG = {
    "same-view-copy": [
        ("thinks .to always copies", _predictions(**{"x.to('cpu')": "copy"}), {"same-view-copy-to"}, False),
        ("thinks contiguous() copies", _predictions(**{"x.contiguous()": "copy"}), {"same-view-copy-others"}, False),
    ],
    "nested-move": [
        ("named tuples come back as plain tuples", '''
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return (list if isinstance(batch, list) else tuple)(move_batch(v, device, non_blocking) for v in batch)
    return batch
''', {"nested-move-named-and-flags"}, False),
        ("forgets non_blocking", '''
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: move_batch(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)._make(move_batch(v, device) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_batch(v, device) for v in batch)
    return batch
''', {"nested-move-named-and-flags"}, False),
    ],
    "log-on-device": [
        (".to('cpu') every step", '''
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach().to("cpu"))
    return torch.stack(losses).tolist()
''', {"log-on-device-one-read"}, True),
        (".item() on each kept loss at the end", '''
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
    return [loss.item() for loss in losses]
''', {"log-on-device-one-read"}, False),
        ("prints the loss every step", '''
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for step in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
        print(f"step {step}: {loss:.4f}")
    return torch.stack(losses).tolist()
''', {"log-on-device-one-read"}, False),
    ],
    "transfer-benchmark": [
        ("never pins", '''
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4)
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)
''' + _PLAIN_BENCHMARK, {"transfer-benchmark-pinned"}, True),
        ("allocates the destination inside the timed function", '''
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    return gpulab.time_fn(lambda: torch.empty(nbytes // 4, device=device).copy_(source), device=device,
                          bytes_moved=nbytes)
''' + _PLAIN_BENCHMARK, {"transfer-benchmark-only-the-copy"}, False),
        ("a linear x axis", _MEASURED + '''

def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.plot(list(table), list(table.values()))
    ax.set_xlabel("bytes")
    ax.set_ylabel("GB/s")
''', {"transfer-benchmark-plot"}, False),
        ("plots seconds, not GB/s", _MEASURED + '''

def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.loglog(list(table), [n / (g * 1e9) for n, g in table.items()])
    ax.set_xlabel("bytes")
    ax.set_ylabel("seconds")
''', {"transfer-benchmark-plot"}, False),
    ],
}
