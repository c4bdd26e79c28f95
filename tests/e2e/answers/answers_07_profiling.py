"""Answers students write for lesson 07's exercises (see test_answers.py)."""

_FAST_MODEL = """
class FastClassifier(SlowClassifier):
    def __init__(self, features=32, classes=4, width=64):
        super().__init__(features, classes, width)
        self.register_buffer("prior", torch.arange(classes, dtype=torch.float32) * 0.1)

    def forward(self, x):
        return self.body(x) + self.prior
"""

_FAST_LOOP = """
def fast_train(model, optimizer, data, labels, device, batch_size=64):
    data, labels = data.to(device), labels.to(device)
    losses = []
    for start in range(0, len(data), batch_size):
        loss = nn.functional.cross_entropy(model(data[start:start + batch_size]), labels[start:start + batch_size])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        LOG
    return torch.stack(losses)
"""


def _fast(model: str = _FAST_MODEL, log: str = "losses.append(loss.detach())", loop: str = _FAST_LOOP) -> str:
    return model + "\n" + loop.replace("LOG", log)


_LABELLED = """
def labelled_step(model, optimizer, x, y):
    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
        optimizer.zero_grad()
"""

_REGION_MS = """
def region_ms(averages):
    totals = {entry.key: entry for entry in averages if entry.device_type == DeviceType.CPU}
    return {name: totals[name].cpu_time_total / totals[name].count / 1e3 for name in ("forward", "backward", "optimizer")}
"""

_PADDING = """
def tensor_core_multiple(dtype):
    return 16 // torch.empty((), dtype=dtype).element_size()

def pad_to_multiple(n, multiple):
    return math.ceil(n / multiple) * multiple

def padded_linear(layer, multiple):
    out = pad_to_multiple(layer.out_features, multiple)
    new = nn.Linear(layer.in_features, out, bias=layer.bias is not None).to(device=layer.weight.device, dtype=layer.weight.dtype)
    with torch.no_grad():
        new.weight.zero_()
        new.weight[:layer.out_features].copy_(layer.weight)
        if layer.bias is not None:
            new.bias.zero_()
            new.bias[:layer.out_features].copy_(layer.bias)
    return new
"""

RIGHT = {
    "hottest": [
        (
            "a comprehension and max by getattr, autograd's prefixes as a tuple",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key
                 and not e.key.startswith(("autograd::", "torch::autograd::"))]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1000
""",
        ),
        (
            "sorted, descending, the first with '::'",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    for event in sorted(averages, key=lambda event: getattr(event, by), reverse=True):
        if event.device_type == DeviceType.CPU and "::" in event.key and "autograd::" not in event.key:
            return (event.key, getattr(event, by) * 1e-3)
""",
        ),
        (
            "a loop keeping the best, aten:: prefix and other namespaces",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    best_name, best_us = None, -1.0
    for row in averages:
        name = row.key
        if "::" not in name or row.device_type != DeviceType.CPU:
            continue                    # a label, or a kernel: not an operator
        if name.startswith("autograd::") or name.startswith("torch::autograd::"):
            continue                    # autograd's engine and nodes
        us = getattr(row, by)
        if us > best_us:
            best_name, best_us = name, us
    return best_name, best_us / 1e3
""",
        ),
        (
            "operators as the names that start with aten::",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.key.startswith("aten::")]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
""",
        ),
        (
            "import torch as t, a dict of times, a numpy float back",
            """
import numpy as np
import torch as t

def hottest_op(averages, by="self_cpu_time_total"):
    times = {row.key: getattr(row, by) for row in averages
             if row.device_type == t.autograd.DeviceType.CPU and "::" in row.key
             and row.key.split("::")[0] not in ("autograd", "torch")}
    name = max(times, key=times.get)
    return name, np.float64(times[name]) / 1000
""",
        ),
    ],
    "fast": [
        ("a buffer, losses stacked at the end", _fast()),
        (
            "the prior made on x.device, a preallocated loss tensor",
            """
class FastClassifier(SlowClassifier):
    def forward(self, x):
        prior = torch.arange(self.classes, dtype=torch.float32, device=x.device) * 0.1
        return self.body(x) + prior

def fast_train(model, optimizer, data, labels, device, batch_size=128):
    data = data.to(device)
    labels = labels.to(device)
    steps = math.ceil(len(data) / batch_size)
    losses = torch.empty(steps, device=device)
    for i in range(steps):
        x = data[i * batch_size:(i + 1) * batch_size]
        y = labels[i * batch_size:(i + 1) * batch_size]
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses[i] = loss.detach()
    return losses
""",
        ),
        (
            "split into batches with torch.split, a buffer made by torch.linspace",
            """
class FastClassifier(SlowClassifier):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("offsets", torch.linspace(0, 0.1 * (self.classes - 1), self.classes))

    def forward(self, x):
        return self.body(x) + self.offsets

def fast_train(model, optimizer, data, labels, device, batch_size=32):
    data, labels = data.to(device, non_blocking=True), labels.to(device, non_blocking=True)
    out = []
    for xb, yb in zip(torch.split(data, batch_size), torch.split(labels, batch_size)):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        out.append(loss.detach())
    return torch.stack(out)
""",
        ),
        (
            "a loss tensor filled in place, steps counted with math.ceil, a logged mean after the loop",
            """
class FastClassifier(SlowClassifier):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("prior", 0.1 * torch.arange(self.classes).float(), persistent=False)

    def forward(self, x):
        return self.body(x).add(self.prior)

def fast_train(model, optimizer, data, labels, device, batch_size=256):
    data, labels = data.to(device), labels.to(device)
    steps = math.ceil(data.shape[0] / batch_size)
    losses = torch.zeros(steps, device=device)
    for step in range(steps):
        batch = slice(step * batch_size, (step + 1) * batch_size)
        loss = nn.functional.cross_entropy(model(data[batch]), labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses[step] = loss.detach()
    print(f"mean loss {losses.mean().item():.3f} over {steps} steps")     # after the loop: one read
    return losses
""",
        ),
    ],
    "regions": [
        ("three with blocks, the solution's order", _LABELLED + _REGION_MS),
        (
            "zero_grad first inside optimizer, a loop over averages",
            """
def labelled_step(model, optimizer, x, y):
    with record_function("forward"):
        prediction = model(x)
        loss = nn.functional.mse_loss(prediction, y)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

def region_ms(averages):
    result = {}
    for avg in averages:
        if avg.key in ("forward", "backward", "optimizer") and avg.device_type == DeviceType.CPU:
            result[avg.key] = avg.cpu_time_total / 1000 / avg.count
    return result
""",
        ),
        (
            "record_function as a decorator, model.zero_grad, cpu_time per call",
            """
def labelled_step(model, optimizer, x, y):
    @record_function("forward")
    def forward():
        return nn.functional.mse_loss(model(x), y)

    loss = forward()
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
        model.zero_grad(set_to_none=False)

def region_ms(averages):
    wanted = ("forward", "backward", "optimizer")
    found = {}
    for row in averages:
        if row.key in wanted and row.device_type == DeviceType.CPU:
            found[row.key] = row.cpu_time / 1e3
    return found
""",
        ),
    ],
    "padding": [
        ("element_size, math.ceil, copy_", _PADDING),
        (
            "a table of dtypes, integer arithmetic, F.pad",
            """
def tensor_core_multiple(dtype):
    if dtype in (torch.float16, torch.bfloat16):
        return 8
    if dtype == torch.float32:
        return 4
    return 16

def pad_to_multiple(n, multiple):
    remainder = n % multiple
    return n if remainder == 0 else n + multiple - remainder

def padded_linear(layer, multiple):
    extra = pad_to_multiple(layer.out_features, multiple) - layer.out_features
    padded = nn.Linear(layer.in_features, layer.out_features + extra, bias=layer.bias is not None,
                       device=layer.weight.device, dtype=layer.weight.dtype)
    with torch.no_grad():
        padded.weight.copy_(nn.functional.pad(layer.weight, (0, 0, 0, extra)))
        if layer.bias is not None:
            padded.bias.copy_(nn.functional.pad(layer.bias, (0, extra)))
    return padded
""",
        ),
        (
            "a table of sizes, integer ceil, weights built with torch.cat",
            """
import torch as t

def tensor_core_multiple(dtype):
    bits = t.finfo(dtype).bits if dtype.is_floating_point else t.iinfo(dtype).bits
    return {8: 16, 16: 8, 32: 4}[bits]

def pad_to_multiple(n, multiple):
    return (n + multiple - 1) // multiple * multiple

def padded_linear(layer, multiple):
    rows = pad_to_multiple(layer.out_features, multiple) - layer.out_features
    w = layer.weight
    new = t.nn.Linear(layer.in_features, layer.out_features + rows, bias=layer.bias is not None).to(w.device, w.dtype)
    with t.no_grad():
        new.weight.copy_(t.cat([w, w.new_zeros(rows, layer.in_features)]))
        if layer.bias is not None:
            new.bias.copy_(t.cat([layer.bias, layer.bias.new_zeros(rows)]))
    return new
""",
        ),
    ],
}

WRONG = {
    "hottest": [
        (
            "labels and profiler rows not left out",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    best = max(averages, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
""",
            ("names", "cpu"),
            False,
        ),
        (
            "'::' alone, autograd's rows left out: a kernel's row taken for an operator",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if "::" in e.key and not e.key.startswith(("autograd::", "torch::autograd::"))]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
""",
            "cpu",
            False,
        ),
        (
            "always self CPU time, whatever `by` says",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: e.self_cpu_time_total)
    return best.key, best.self_cpu_time_total / 1e3
""",
            "by",
            False,
        ),
        (
            "microseconds returned as they are",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by)
""",
            "ms",
            False,
        ),
        (
            "total time, not the time asked for",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: e.cpu_time_total)
    return best.key, best.cpu_time_total / 1e3
""",
            "largest",
            True,
        ),
        (
            "the rows the CPU ran, labels and all: no '::' rule",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    rows = [e for e in averages if e.device_type == DeviceType.CPU]
    best = max(rows, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
""",
            "names",
            False,
        ),
        (
            "'::' and the CPU: autograd's evaluate_function row taken for the hottest op",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
""",
            "autograd",
            False,
        ),
        (
            "the operator chosen by `by`, its self CPU time returned whatever `by` says",
            """
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, best.self_cpu_time_total / 1e3
""",
            "by",
            False,
        ),
    ],
    "fast": [
        (
            ".item() every step",
            _fast(log="losses.append(loss.item())").replace(
                "return torch.stack(losses)", "return torch.tensor(losses)"
            ),
            ("no-sync", "tensor"),
            True,
        ),
        (
            "each batch still moved in the loop",
            _fast()
            .replace("    data, labels = data.to(device), labels.to(device)\n", "")
            .replace(
                "model(data[start:start + batch_size]), labels[start:start + batch_size]",
                "model(data[start:start + batch_size].to(device)), labels[start:start + batch_size].to(device)",
            ),
            "once",
            False,
        ),
        (
            "the prior still made on the host and copied",
            _fast(
                model="""
class FastClassifier(SlowClassifier):
    pass
"""
            ),
            "no-host",
            False,
        ),
        ("the batch left tiny", _fast().replace("batch_size=64", "batch_size=4"), "batch", False),
        ("no zero_grad", _fast().replace("        optimizer.zero_grad()\n", ""), "same-epoch", False),
        (
            "logs the loss every 100 steps",
            _fast(
                log="""losses.append(loss.detach())
        if (start // batch_size + 1) % 100 == 0:
            print(f"step {start // batch_size + 1}: loss {loss.item():.3f}")"""
            ),
            "no-sync",
            False,
        ),
        (
            ".tolist() every step, the list made a tensor on the device at the end",
            _fast(log="losses.append(loss.detach().tolist())").replace(
                "return torch.stack(losses)", "return torch.tensor(losses, device=device)"
            ),
            "no-sync",
            False,
        ),
        (
            "a list of losses, not one tensor",
            _fast().replace("return torch.stack(losses)", "return losses"),
            "tensor",
            False,
        ),
        (
            "the losses stacked, then brought to the host",
            _fast().replace("return torch.stack(losses)", "return torch.stack(losses).cpu()"),
            "tensor",
            False,
        ),
        (
            "data never moved: the model's device is not the data's",
            _fast().replace("    data, labels = data.to(device), labels.to(device)\n", ""),
            "moved",
            False,
        ),
        (
            "drops the last, smaller batch",
            _fast().replace(
                "for start in range(0, len(data), batch_size):",
                "for start in range(0, len(data) - batch_size + 1, batch_size):",
            ),
            "same-epoch",
            False,
        ),
        (
            "the prior forgotten: other outputs",
            _fast(
                model="""
class FastClassifier(SlowClassifier):
    def forward(self, x):
        return self.body(x)
"""
            ),
            "outputs",
            False,
        ),
    ],
    "regions": [
        (
            "the optimizer step outside its label, no zero_grad",
            """
def labelled_step(model, optimizer, x, y):
    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)
    with record_function("backward"):
        loss.backward()
    optimizer.step()
"""
            + _REGION_MS,
            ("labels", "step"),
            False,
        ),
        (
            "the loss computed outside forward",
            _LABELLED.replace(
                """    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)""",
                """    with record_function("forward"):
        prediction = model(x)
    loss = nn.functional.mse_loss(prediction, y)""",
            )
            + _REGION_MS,
            "labels",
            False,
        ),
        (
            "self time instead of total",
            _LABELLED + _REGION_MS.replace("cpu_time_total", "self_cpu_time_total"),
            "per-call",
            True,
        ),
        (
            "total over all calls, not per call",
            _LABELLED + _REGION_MS.replace(" / totals[name].count", ""),
            "per-call",
            False,
        ),
        ("microseconds", _LABELLED + _REGION_MS.replace(" / 1e3", ""), "per-call", False),
        (
            "the labels' GPU-side copies not left out",
            _LABELLED + _REGION_MS.replace(" if entry.device_type == DeviceType.CPU", ""),
            "cpu-row",
            False,
        ),
        (
            "zero_grad at the start of the step, outside the labels",
            """
def labelled_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
"""
            + _REGION_MS,
            "labels",
            False,
        ),
        (
            "the gradients zeroed before the step: nothing learnt",
            _LABELLED.replace(
                """        optimizer.step()
        optimizer.zero_grad()""",
                """        optimizer.zero_grad()
        optimizer.step()""",
            )
            + _REGION_MS,
            "step",
            False,
        ),
        (
            "a list of the three times, not a dict",
            _LABELLED
            + """
def region_ms(averages):
    rows = {entry.key: entry for entry in averages if entry.device_type == DeviceType.CPU}
    return [rows[name].cpu_time_total / rows[name].count / 1e3 for name in ("forward", "backward", "optimizer")]
""",
            "dict",
            False,
        ),
    ],
    "padding": [
        (
            "float32 counted as 16-bit",
            _PADDING.replace(
                "return 16 // torch.empty((), dtype=dtype).element_size()",
                "return 8 if dtype.is_floating_point and dtype.itemsize >= 2 else 16",
            ),
            "multiple",
            False,
        ),
        (
            "an exact multiple padded again",
            _PADDING.replace("return math.ceil(n / multiple) * multiple", "return (n // multiple + 1) * multiple"),
            "pad",
            False,
        ),
        (
            "rounded down",
            _PADDING.replace("return math.ceil(n / multiple) * multiple", "return n // multiple * multiple"),
            "pad",
            False,
        ),
        (
            "the padding rows left as initialised",
            _PADDING.replace("        new.weight.zero_()\n", "").replace("            new.bias.zero_()\n", ""),
            "values",
            True,
        ),
        (
            "the bias forgotten",
            _PADDING.replace(
                """        if layer.bias is not None:
            new.bias.zero_()
            new.bias[:layer.out_features].copy_(layer.bias)
""",
                "",
            ),
            "values",
            False,
        ),
        (
            "the padded layer made on the CPU, whatever the layer's device",
            _PADDING.replace(
                ".to(device=layer.weight.device, dtype=layer.weight.dtype)", ".to(dtype=layer.weight.dtype)"
            ),
            "keep",
            False,
        ),
        (
            "its own padding: an exact multiple padded again",
            _PADDING.replace(
                "    out = pad_to_multiple(layer.out_features, multiple)",
                "    out = layer.out_features + multiple - layer.out_features % multiple",
            ),
            "shape",
            False,
        ),
    ],
}

EDGES = {
    "hottest": [
        (
            "a made-up table, by each time; an operator of no time at all",
            """
def row(name, self_cpu, cpu, self_device, device=DeviceType.CPU):
    entry = FunctionEventAvg()
    entry.key, entry.count, entry.device_type = name, 1, device
    entry.self_cpu_time_total, entry.cpu_time_total = self_cpu, cpu
    entry.self_device_time_total = entry.device_time_total = self_device
    return entry

table = EventList([row("forward", 1200.0, 18000.0, 0.0), row("aten::linear", 300.0, 12000.0, 0.0),
                   row("aten::addmm", 9500.0, 11700.0, 11000.0), row("aten::mm", 7000.0, 7100.0, 14000.0),
                   row("void cutlass::Kernel2<gemm>(Params)", 0.0, 0.0, 25000.0, DeviceType.CUDA),
                   row("autograd::engine::evaluate_function: MmBackward0", 100.0, 15000.0, 0.0),
                   row("torch::autograd::AccumulateGrad", 9800.0, 9900.0, 0.0)])
assert hottest_op(table) == ("aten::addmm", 9.5)
assert hottest_op(table, by="self_device_time_total") == ("aten::mm", 14.0)
assert hottest_op(table, by="cpu_time_total") == ("aten::linear", 12.0)
assert hottest_op(EventList([row("aten::zeros", 0.0, 0.0, 0.0)])) == ("aten::zeros", 0.0)
""",
        ),
    ],
    "fast": [
        (
            "a last batch smaller than the others: the same epoch as slow_train",
            """
generator = torch.Generator().manual_seed(3)
data, labels = torch.randn(10, 32, generator=generator), torch.randint(0, 4, (10,), generator=generator)
torch.manual_seed(0)
slow = SlowClassifier()
expected = slow_train(slow, torch.optim.SGD(slow.parameters(), lr=0.1), data, labels, "cpu", batch_size=4)
torch.manual_seed(0)
fast = FastClassifier()
got = fast_train(fast, torch.optim.SGD(fast.parameters(), lr=0.1), data, labels, torch.device("cpu"), batch_size=4)
assert got.shape == (3,) and torch.allclose(got, torch.tensor(expected), atol=1e-6), (got, expected)
""",
        ),
    ],
    "padding": [
        (
            "zero, exact multiples, sizes past 2**53 (integer arithmetic, no float rounding)",
            """
assert pad_to_multiple(0, 8) == 0 and pad_to_multiple(64, 64) == 64 and pad_to_multiple(65, 64) == 128
assert pad_to_multiple(2**60 + 1, 2) == 2**60 + 2 and pad_to_multiple(2**60, 3) == 2**60 + 2
""",
        ),
        (
            "every 8-bit float type; a layer already a multiple keeps its size",
            """
assert all(tensor_core_multiple(d) == 16 for d in (torch.float8_e4m3fn, torch.float8_e5m2, torch.int8, torch.uint8))
assert padded_linear(nn.Linear(8, 48), 16).out_features == 48
""",
        ),
    ],
}
