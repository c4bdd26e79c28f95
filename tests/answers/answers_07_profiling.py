"""Answers students write for lesson 07's exercises (see test_answers.py)."""

_FAST_MODEL = '''
class FastClassifier(SlowClassifier):
    def __init__(self, features=32, classes=4, width=64):
        super().__init__(features, classes, width)
        self.register_buffer("prior", torch.arange(classes, dtype=torch.float32) * 0.1)

    def forward(self, x):
        return self.body(x) + self.prior
'''

_FAST_LOOP = '''
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
'''


def _fast(model: str = _FAST_MODEL, log: str = "losses.append(loss.detach())", loop: str = _FAST_LOOP) -> str:
    return model + "\n" + loop.replace("LOG", log)


_LABELLED = '''
def labelled_step(model, optimizer, x, y):
    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)
    with record_function("backward"):
        loss.backward()
    with record_function("optimizer"):
        optimizer.step()
        optimizer.zero_grad()
'''

_REGION_MS = '''
def region_ms(averages):
    totals = {entry.key: entry for entry in averages if entry.device_type == DeviceType.CPU}
    return {name: totals[name].cpu_time_total / totals[name].count / 1e3 for name in ("forward", "backward", "optimizer")}
'''

_PADDING = '''
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
'''

RIGHT = {
    "hottest": [
        ("a comprehension and max by getattr", '''
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1000
'''),
        ("sorted, descending, the first with '::'", '''
def hottest_op(averages, by="self_cpu_time_total"):
    for event in sorted(averages, key=lambda event: getattr(event, by), reverse=True):
        if event.device_type == DeviceType.CPU and "::" in event.key:
            return (event.key, getattr(event, by) * 1e-3)
'''),
        ("a loop keeping the best, aten:: prefix and other namespaces", '''
def hottest_op(averages, by="self_cpu_time_total"):
    best_name, best_us = None, -1.0
    for row in averages:
        name = row.key
        if "::" not in name or row.device_type != DeviceType.CPU:
            continue                    # a label, or a kernel: not an operator
        us = getattr(row, by)
        if us > best_us:
            best_name, best_us = name, us
    return best_name, best_us / 1e3
'''),
        ("operators as the names that start with aten::", '''
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.key.startswith("aten::")]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
'''),
    ],
    "fast": [
        ("a buffer, losses stacked at the end", _fast()),
        ("the prior made on x.device, a preallocated loss tensor", '''
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
'''),
        ("split into batches with torch.split, a buffer made by torch.linspace", '''
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
'''),
    ],
    "regions": [
        ("three with blocks, the solution's order", _LABELLED + _REGION_MS),
        ("zero_grad first inside optimizer, a loop over averages", '''
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
'''),
    ],
    "padding": [
        ("element_size, math.ceil, copy_", _PADDING),
        ("a table of dtypes, integer arithmetic, F.pad", '''
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
'''),
    ],
}

WRONG = {
    "hottest": [
        ("labels and profiler rows not left out", '''
def hottest_op(averages, by="self_cpu_time_total"):
    best = max(averages, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
''', {"hottest-rules", "hottest-device"}, False),
        ("'::' alone: a kernel's row taken for an operator", '''
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if "::" in e.key]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by) / 1e3
''', {"hottest-device"}, False),
        ("always self CPU time, whatever `by` says", '''
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: e.self_cpu_time_total)
    return best.key, best.self_cpu_time_total / 1e3
''', {"hottest-device"}, False),
        ("microseconds returned as they are", '''
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: getattr(e, by))
    return best.key, getattr(best, by)
''', {"hottest-real"}, False),
        ("total time, not the time asked for", '''
def hottest_op(averages, by="self_cpu_time_total"):
    operators = [e for e in averages if e.device_type == DeviceType.CPU and "::" in e.key]
    best = max(operators, key=lambda e: e.cpu_time_total)
    return best.key, best.cpu_time_total / 1e3
''', {"hottest-real", "hottest-rules", "hottest-device"}, True),
    ],
    "fast": [
        (".item() every step", _fast(log="losses.append(loss.item())").replace(
            "return torch.stack(losses)", "return torch.tensor(losses)"), {"fast-syncs"}, True),
        ("each batch still moved in the loop", _fast().replace(
            "    data, labels = data.to(device), labels.to(device)\n", "").replace(
            "model(data[start:start + batch_size]), labels[start:start + batch_size]",
            "model(data[start:start + batch_size].to(device)), labels[start:start + batch_size].to(device)"),
         {"fast-moves"}, False),
        ("the prior still made on the host and copied", _fast(model='''
class FastClassifier(SlowClassifier):
    pass
'''), {"fast-forward"}, False),
        ("the batch left tiny", _fast().replace("batch_size=64", "batch_size=4"), {"fast-batch"}, False),
        ("no zero_grad", _fast().replace("        optimizer.zero_grad()\n", ""), {"fast-same"}, False),
    ],
    "regions": [
        ("the optimizer step outside its label, no zero_grad", '''
def labelled_step(model, optimizer, x, y):
    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)
    with record_function("backward"):
        loss.backward()
    optimizer.step()
''' + _REGION_MS, {"regions-labels", "regions-train"}, False),
        ("the loss computed outside forward", _LABELLED.replace(
            '''    with record_function("forward"):
        loss = nn.functional.mse_loss(model(x), y)''', '''    with record_function("forward"):
        prediction = model(x)
    loss = nn.functional.mse_loss(prediction, y)''') + _REGION_MS, {"regions-labels"}, False),
        ("self time instead of total", _LABELLED + _REGION_MS.replace("cpu_time_total", "self_cpu_time_total"),
         {"regions-times"}, True),
        ("total over all calls, not per call", _LABELLED + _REGION_MS.replace(" / totals[name].count", ""),
         {"regions-times"}, False),
        ("microseconds", _LABELLED + _REGION_MS.replace(" / 1e3", ""), {"regions-times"}, False),
        ("the labels' GPU-side copies not left out", _LABELLED + _REGION_MS.replace(
            " if entry.device_type == DeviceType.CPU", ""), {"regions-times"}, False),
    ],
    "padding": [
        ("float32 counted as 16-bit", _PADDING.replace(
            "return 16 // torch.empty((), dtype=dtype).element_size()",
            "return 8 if dtype.is_floating_point and dtype.itemsize >= 2 else 16"), {"padding-multiple"}, False),
        ("an exact multiple padded again", _PADDING.replace(
            "return math.ceil(n / multiple) * multiple", "return (n // multiple + 1) * multiple"),
         {"padding-pad"}, False),
        ("rounded down", _PADDING.replace("return math.ceil(n / multiple) * multiple", "return n // multiple * multiple"),
         {"padding-pad"}, False),
        ("the padding rows left as initialised", _PADDING.replace("        new.weight.zero_()\n", "").replace(
            "            new.bias.zero_()\n", ""), {"padding-linear"}, True),
        ("the bias forgotten", _PADDING.replace('''        if layer.bias is not None:
            new.bias.zero_()
            new.bias[:layer.out_features].copy_(layer.bias)
''', ""), {"padding-linear"}, False),
    ],
}
