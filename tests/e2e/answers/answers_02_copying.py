"""Answers students write for lesson 02's exercises (see test_answers.py)."""

_PREDICTIONS = {
    "x.to('cpu')": "same",
    "x.to(torch.float64)": "copy",
    "x.view(2, 3)": "view",
    "x.clone()": "copy",
    "x.contiguous()": "same",
    "x[1:]": "view",
    "torch.as_tensor(x)": "same",
    "x.to('cpu', copy=True)": "copy",
    "x.reshape(3, 2)": "view",
}


def _predictions(**changes):
    return "PREDICTIONS = " + repr({**_PREDICTIONS, **changes})


RIGHT = {
    "same-view-copy": [
        (
            "other quotes, spacing and case",
            """
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
""",
        ),
        (
            "built up one at a time",
            "PREDICTIONS = {}\n"
            + "\n".join(f"PREDICTIONS[{key!r}] = {value!r}" for key, value in _PREDICTIONS.items()),
        ),
        (
            "a comprehension over groups",
            """
groups = {
    "same": ['x.to("cpu")', "x.contiguous()", "torch.as_tensor(x)"],
    "view": ["x.view(2, 3)", "x[1:]", "x.reshape(3, 2)"],
    "copy": ["x.to(torch.float64)", "x.clone()", "x.to('cpu', copy=True)"],
}
PREDICTIONS = {expression: kind for kind, expressions in groups.items() for expression in expressions}
""",
        ),
    ],
    "nested-move": [
        (
            "Mapping and Sequence, named tuples by _fields",
            """
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
""",
        ),
        (
            "torch's pytree",
            """
from torch.utils._pytree import tree_map

def move_batch(batch, device, non_blocking=False):
    return tree_map(lambda leaf: leaf.to(device, non_blocking=non_blocking) if isinstance(leaf, torch.Tensor) else leaf,
                    batch)
""",
        ),
        (
            "a helper per container, keywords to torch.Tensor.to",
            """
import torch as t


def _move_tensor(tensor, device, non_blocking):
    return t.Tensor.to(tensor, device=device, non_blocking=non_blocking)


def move_batch(batch, device, non_blocking=False):
    def again(item):
        return move_batch(item, device, non_blocking=non_blocking)
    if isinstance(batch, t.Tensor):
        return _move_tensor(batch, device, non_blocking)
    if isinstance(batch, dict):
        out = {}
        for key in batch:
            out[key] = again(batch[key])
        return out
    if isinstance(batch, list):
        return list(map(again, batch))
    if isinstance(batch, tuple):
        items = [again(item) for item in batch]
        return type(batch)._make(items) if hasattr(type(batch), "_make") else tuple(items)
    return batch
""",
        ),
    ],
    "log-on-device": [
        (
            "stack, copy to the host, read the copy",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss)
    on_host = torch.stack(losses).cpu()
    return [value.item() for value in on_host]
""",
        ),
        (
            "a buffer on the device",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = torch.empty(steps, device=device)
    for step in range(steps):
        x, losses[step] = simulate_step(x, weight)
    return losses.tolist()
""",
        ),
        (
            ".to('cpu') once, then NumPy",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    log = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        log.append(loss.detach().view(1))
    return [float(v) for v in torch.cat(log).to("cpu").numpy()]
""",
        ),
        (
            "a loop with a counter, float64 on the host",
            """
def run_and_log(steps, device):
    state, weight = make_state(device)
    kept = []
    step = 0
    while step < steps:
        state, loss = simulate_step(state, weight)
        kept += [loss]
        step += 1
    host = torch.stack(kept).detach().to("cpu", torch.float64)
    return host.tolist()
""",
        ),
    ],
    "transfer-benchmark": [
        (
            "pin_memory(), sizes in MiB, a scatter plot",
            """
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
""",
        ),
        (
            "torch.cuda.is_available, semilogx in KiB, non_blocking",
            """
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
""",
        ),
        (
            "from gpulab import time_fn, .pin_memory(), loglog in MiB",
            """
from gpulab import time_fn as timed


def measure_copy(nbytes, device):
    device = torch.device(device)
    host = torch.empty(nbytes // 4, dtype=torch.float32)
    host.fill_(0.5)
    if device.type == "cuda":
        host = host.pin_memory()
    target = torch.empty_like(host, device=device)
    result = timed(lambda: target.copy_(host), device=device, bytes_moved=nbytes)
    return result


def bandwidth_table(sizes, device):
    table = {}
    for nbytes in sizes:
        timing = measure_copy(nbytes, device)
        table[nbytes] = nbytes / timing.median_s / 1e9
    return table


def plot_bandwidth(table, figure):
    ax = figure.subplots()
    mib = [n / 2**20 for n in table]
    ax.loglog(mib, list(table.values()), marker="s")
    ax.set_xlabel("size [MiB]")
    ax.set_ylabel("achieved bandwidth [GB/s]")
""",
        ),
    ],
}

_MEASURED = """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)


def bandwidth_table(sizes, device):
    return {n: measure_copy(n, device).gbps for n in sizes}
"""

_PLAIN_BENCHMARK = """
def bandwidth_table(sizes, device):
    return {n: measure_copy(n, device).gbps for n in sizes}


def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.plot(list(table), list(table.values()), marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("GB/s")
"""

WRONG = {
    "same-view-copy": [
        ("thinks .to always copies", _predictions(**{"x.to('cpu')": "copy"}), "moving", False),
        ("thinks x[1:] is a copy (its data_ptr moved)", _predictions(**{"x[1:]": "copy"}), "reshaping", False),
        ("thinks contiguous() copies", _predictions(**{"x.contiguous()": "copy"}), "the-rest", False),
        (
            "a list in the order given, not a dict",
            "PREDICTIONS = " + repr(list(_PREDICTIONS.values())),
            "a-dict",
            False,
        ),
    ],
    "nested-move": [
        (
            "casts every tensor to float32 on the way, int64 labels and bool masks too",
            """
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, torch.float32, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)._make(move_batch(v, device, non_blocking) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_batch(v, device, non_blocking) for v in batch)
    return batch
""",
            "own-dtype",
            False,
        ),
        (
            "moves floating-point tensors only",
            """
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)._make(move_batch(v, device, non_blocking) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_batch(v, device, non_blocking) for v in batch)
    return batch
""",
            "every-tensor",
            False,
        ),
        (
            "named tuples come back as plain tuples",
            """
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return (list if isinstance(batch, list) else tuple)(move_batch(v, device, non_blocking) for v in batch)
    return batch
""",
            "named-tuples",
            False,
        ),
        (
            "forgets non_blocking",
            """
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
""",
            "non-blocking",
            False,
        ),
        (
            "always non_blocking=True",
            """
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)._make(move_batch(v, device, non_blocking) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_batch(v, device, non_blocking) for v in batch)
    return batch
""",
            "non-blocking",
            False,
        ),
        (
            "moves in place, into the batch it was given",
            """
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        for key in batch:
            batch[key] = move_batch(batch[key], device, non_blocking)
        return batch
    if isinstance(batch, list):
        batch[:] = [move_batch(v, device, non_blocking) for v in batch]
        return batch
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)._make(move_batch(v, device, non_blocking) for v in batch)
    if isinstance(batch, tuple):
        return tuple(move_batch(v, device, non_blocking) for v in batch)
    return batch
""",
            "untouched",
            False,
        ),
        (
            "plain tuples come back as lists",
            """
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if hasattr(batch, "_fields"):
        return type(batch)._make(move_batch(v, device, non_blocking) for v in batch)
    if isinstance(batch, (list, tuple)):
        return [move_batch(v, device, non_blocking) for v in batch]
    return batch
""",
            "containers",
            False,
        ),
        (
            "numbers become tensors on the device",
            """
def move_batch(batch, device, non_blocking=False):
    if isinstance(batch, (int, float)) and not isinstance(batch, bool):
        return torch.tensor(batch, device=device)
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, dict):
        return {k: move_batch(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)._make(move_batch(v, device, non_blocking) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_batch(v, device, non_blocking) for v in batch)
    return batch
""",
            "non-tensors",
            False,
        ),
        (
            "three levels deep and no deeper",
            """
def _move(value, device, non_blocking):
    return value.to(device, non_blocking=non_blocking) if isinstance(value, torch.Tensor) else value


def _level(batch, device, non_blocking, inner):
    if isinstance(batch, dict):
        return {k: inner(v, device, non_blocking) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)._make(inner(v, device, non_blocking) for v in batch)
    if isinstance(batch, (list, tuple)):
        return type(batch)(inner(v, device, non_blocking) for v in batch)
    return _move(batch, device, non_blocking)


def move_batch(batch, device, non_blocking=False):
    third = lambda b, d, n: _level(b, d, n, _move)
    second = lambda b, d, n: _level(b, d, n, third)
    return _level(batch, device, non_blocking, second)
""",
            "any-depth",
            False,
        ),
    ],
    "log-on-device": [
        (
            "a list of 0-d tensors, not floats",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
    return list(torch.stack(losses).cpu())
""",
            "same-floats",
            False,
        ),
        (
            "a state of its own",
            """
def run_and_log(steps, device):
    torch.manual_seed(1)
    weight = (torch.randn(64, 64) / 8).to(device)
    x = torch.randn(64).to(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
            "start",
            False,
        ),
        (
            "computes on the host",
            """
def run_and_log(steps, device):
    x, weight = make_state("cpu")
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
    return torch.stack(losses).tolist()
""",
            "on-the-device",
            False,
        ),
        (
            ".to('cpu') every step",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach().to("cpu"))
    return torch.stack(losses).tolist()
""",
            "once",
            True,
        ),
        (
            ".item() on each kept loss at the end",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
    return [loss.item() for loss in losses]
""",
            "once",
            False,
        ),
        (
            "prints the loss every step",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for step in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
        print(f"step {step}: {loss:.4f}")
    return torch.stack(losses).tolist()
""",
            "once",
            False,
        ),
        (
            "synchronises every step",
            """
def run_and_log(steps, device):
    x, weight = make_state(device)
    losses = []
    for _ in range(steps):
        x, loss = simulate_step(x, weight)
        losses.append(loss.detach())
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()
    return torch.stack(losses).tolist()
""",
            "once",
            False,
        ),
    ],
    "transfer-benchmark": [
        (
            "float64 values, half as many",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 8, dtype=torch.float64, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 8, dtype=torch.float64, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)
"""
            + _PLAIN_BENCHMARK,
            "float32-source",
            False,
        ),
        (
            "never pins",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4)
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)
"""
            + _PLAIN_BENCHMARK,
            "pinned",
            True,
        ),
        (
            "pins whenever CUDA is there",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.cuda.is_available())
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)
"""
            + _PLAIN_BENCHMARK,
            "ordinary",
            False,
        ),
        (
            "always pins",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4).pin_memory()
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)
"""
            + _PLAIN_BENCHMARK,
            "ordinary",
            False,
        ),
        (
            "the destination stays on the host",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 4)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)
"""
            + _PLAIN_BENCHMARK,
            "destination",
            False,
        ),
        (
            "does not tell time_fn the device",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), bytes_moved=nbytes)
"""
            + _PLAIN_BENCHMARK,
            "time-fn",
            False,
        ),
        (
            "does not tell time_fn the bytes, so GB/s are unknown",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device)
"""
            + _PLAIN_BENCHMARK,
            ("time-fn", "table"),
            False,
        ),
        (
            "allocates the destination inside the timed function",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    return gpulab.time_fn(lambda: torch.empty(nbytes // 4, device=device).copy_(source), device=device,
                          bytes_moved=nbytes)
"""
            + _PLAIN_BENCHMARK,
            "before",
            False,
        ),
        (
            "returns GB/s, not the Timing",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes).gbps


def bandwidth_table(sizes, device):
    return {n: measure_copy(n, device) for n in sizes}


def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.semilogx(list(table), list(table.values()), "o")
    ax.set_xlabel("bytes")
    ax.set_ylabel("GB/s")
""",
            "return",
            False,
        ),
        (
            "GiB/s in the table",
            """
def measure_copy(nbytes, device):
    source = torch.ones(nbytes // 4, pin_memory=torch.device(device).type == "cuda")
    destination = torch.empty(nbytes // 4, device=device)
    return gpulab.time_fn(lambda: destination.copy_(source), device=device, bytes_moved=nbytes)


def bandwidth_table(sizes, device):
    return {n: n / measure_copy(n, device).median_s / 2**30 for n in sizes}


def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.semilogx(list(table), list(table.values()), "o")
    ax.set_xlabel("bytes")
    ax.set_ylabel("GB/s")
""",
            "table",
            False,
        ),
        (
            "draws on a figure of its own",
            _MEASURED
            + """

def plot_bandwidth(table, figure):
    import matplotlib.pyplot as plt
    _, ax = plt.subplots()
    ax.semilogx(list(table), list(table.values()), "o")
    ax.set_xlabel("bytes")
    ax.set_ylabel("GB/s")
    plt.close(ax.figure)
""",
            "one-axes",
            False,
        ),
        (
            "plots seconds, not GB/s",
            _MEASURED
            + """

def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.loglog(list(table), [n / (g * 1e9) for n, g in table.items()])
    ax.set_xlabel("bytes")
    ax.set_ylabel("seconds")
""",
            "points",
            False,
        ),
        (
            "a linear x axis",
            _MEASURED
            + """

def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.plot(list(table), list(table.values()))
    ax.set_xlabel("bytes")
    ax.set_ylabel("GB/s")
""",
            "axes",
            False,
        ),
        (
            "MiB on the axis, bytes in the label",
            _MEASURED
            + """

def plot_bandwidth(table, figure):
    ax = figure.subplots()
    ax.semilogx([n / 2**20 for n in table], list(table.values()), "o-")
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("GB/s")
""",
            "axes",
            False,
        ),
    ],
}

EDGES = {
    "same-view-copy": [
        (
            "every prediction is what its expression gives",
            """
x = torch.arange(6.0)
for expression, kind in PREDICTIONS.items():
    result = eval(expression, {"torch": torch, "x": x})
    truth = "same" if result is x else (
        "view" if result.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() else "copy")
    assert kind == truth, (expression, kind, truth)
""",
        ),
    ],
    "nested-move": [
        (
            "empty containers and a named tuple of non-tensors",
            """
from collections import namedtuple
Note = namedtuple("Note", "text count")
assert move_batch({}, "meta") == {} and move_batch([], "meta") == [] and move_batch((), "meta") == ()
moved = move_batch(Note("a", 1), "meta")
assert type(moved) is Note and moved == Note("a", 1)
assert move_batch("text", "meta") == "text" and move_batch(None, "meta") is None
""",
        ),
    ],
    "log-on-device": [
        (
            "no steps, and one",
            """
assert run_and_log(0, "cpu") == [] == run_with_item(0, "cpu")
assert run_and_log(1, "cpu") == run_with_item(1, "cpu")
""",
        ),
    ],
    "transfer-benchmark": [
        (
            "a size that is no power of two, and no sizes",
            """
with gpulab.grading.recorded_time_fn(globals(), run=False) as calls:
    timing = measure_copy(12, "cpu")
    table = bandwidth_table([12, 4100], "cpu")
assert timing.bytes_moved == 12 and calls[0].kwargs["bytes_moved"] == 12
assert sorted(table) == [12, 4100] and abs(table[4100] - 4100 / 1e-3 / 1e9) < 1e-12
assert bandwidth_table([], "cpu") == {}
""",
        ),
    ],
}
