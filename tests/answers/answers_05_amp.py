"""Answers students write for lesson 05's exercises (see test_answers.py)."""

_COMPARE = '''
def compare_precision(make_model, batches, device, amp_dtype, steps=100):
    device = torch.device(device)
    out = {}
    for name in ("float32", "amp"):
        amp = name == "amp"
        model = make_model()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler(device.type, enabled=SCALE_WHEN)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        losses = []
        t0 = time.perf_counter()
        for k in range(steps):
            x, y = batches[k % len(batches)]
            opt.zero_grad()
            with torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp):
                loss = nn.functional.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed = time.perf_counter() - t0
        peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
        out[name] = {"losses": losses, "seconds_per_step": elapsed / steps, "peak_memory_mb": peak}
    return out
'''

_SCALED = '''
def scaled_step(model, optimizer, scaler, x, y, max_norm):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
'''

_PREDICTED = {"linear": "torch.bfloat16", "matmul": "torch.bfloat16", "relu_of_linear": "torch.bfloat16",
              "softmax_of_linear": "torch.bfloat16", "linear_plus_float32": "torch.float32",
              "float64_matmul": "torch.float64", "mse_loss": "torch.float32", "cross_entropy": "torch.float32",
              "weight": "torch.float32", "weight_grad": "torch.float32"}


def _predicted(**changes) -> str:
    values = {**_PREDICTED, **changes}
    return "predicted = {\n" + "".join(f'    "{name}": {dtype},\n' for name, dtype in values.items()) + "}\n"


RIGHT = {
    "compare": [
        ("enabled= flags, .item() per step", _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16")),
        ("a helper per run, a nullcontext for float32, no scaler object for bfloat16", '''
import contextlib


def run(make_model, batches, device, steps, dtype):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device.type) if dtype == torch.float16 else None
    on_cuda = device.type == "cuda"
    if on_cuda:
        torch.cuda.reset_peak_memory_stats(device)
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        x, y = batches[step % len(batches)]
        optimizer.zero_grad(set_to_none=True)
        context = torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()
        with context:
            loss = nn.functional.mse_loss(model(x), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        losses.append(loss.detach())
    if on_cuda:
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / steps
    return {"losses": [float(v) for v in losses], "seconds_per_step": seconds,
            "peak_memory_mb": torch.cuda.max_memory_allocated(device) / 1024**2 if on_cuda else None}


def compare_precision(make_model, batches, device, amp_dtype, steps=100):
    device = torch.device(device)
    return {"float32": run(make_model, batches, device, steps, None), "amp": run(make_model, batches, device, steps, amp_dtype)}
'''),
    ],
    "choose": [
        ("the capability compared with (8, 0)", '''
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        if major >= 8:
            return torch.bfloat16, False
        return torch.float16, True
    if device.type == "mps":
        return torch.float16, True
    return torch.bfloat16, False
'''),
        ("is_bf16_supported without emulation, strings compared", '''
def choose_precision(device):
    kind = str(device).split(":")[0]
    if kind == "cpu":
        return (torch.bfloat16, False)
    if kind == "cuda" and torch.cuda.is_bf16_supported(including_emulation=False):
        return (torch.bfloat16, False)
    return (torch.float16, True)
'''),
        ("the device's properties", '''
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        native = props.major >= 8
        return (torch.bfloat16 if native else torch.float16), not native
    return {"mps": (torch.float16, True)}.get(device.type, (torch.bfloat16, False))
'''),
    ],
    "scaled": [
        ("unscale_ then clip", _SCALED),
        ("zero_grad(set_to_none=False), amp.autocast, float() of the loss", '''
def scaled_step(model, optimizer, scaler, x, y, max_norm):
    optimizer.zero_grad(set_to_none=False)
    with torch.amp.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        prediction = model(x)
        loss = ((prediction.float() - y) ** 2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm=max_norm)
    scaler.step(optimizer)
    scaler.update()
    return float(loss.detach())
'''),
    ],
    "predict": [
        ("the dtypes", _predicted()),
        ("written with torch.float and torch.double aliases", _predicted(
            linear_plus_float32="torch.float", float64_matmul="torch.double", mse_loss="torch.float32",
            weight="torch.float", weight_grad="torch.float")),
    ],
}

WRONG = {
    "compare": [
        ("autocast left out of the second run", _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16")
         .replace("enabled=amp)", "enabled=False)"), {"compare-amp", "compare-float16"}, True),
        ("no scaler for float16", _COMPARE.replace("SCALE_WHEN", "False"), {"compare-float16"}, False),
        ("the same model trained twice", _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16")
         .replace("    for name in (\"float32\", \"amp\"):\n        amp = name == \"amp\"\n        model = make_model()",
                  "    model = make_model()\n    for name in (\"float32\", \"amp\"):\n        amp = name == \"amp\""),
         {"compare-amp", "compare-float16"}, False),
        ("losses kept as tensors", _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16")
         .replace("losses.append(loss.item())", "losses.append(loss.detach())"), {"compare-report"}, False),
        ("gradients never cleared", _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16")
         .replace("            opt.zero_grad()\n", ""), {"compare-float32"}, False),
    ],
    "choose": [
        ("trusts is_bf16_supported()", '''
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return (torch.bfloat16, False) if torch.cuda.is_bf16_supported() else (torch.float16, True)
    if device.type == "mps":
        return torch.float16, True
    return torch.bfloat16, False
''', {"choose-t4"}, False),
        ("dtype names instead of dtypes", '''
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return ("bfloat16", False) if torch.cuda.get_device_capability(device) >= (8, 0) else ("float16", True)
    if device.type == "mps":
        return "float16", True
    return "bfloat16", False
''', {"choose-ampere", "choose-t4", "choose-cpu-mps", "choose-names"}, False),
        ("float16 everywhere but Ampere", '''
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8:
        return torch.bfloat16, False
    return torch.float16, True
''', {"choose-cpu-mps"}, False),
    ],
    "scaled": [
        ("clips the scaled gradients", _SCALED.replace("    scaler.unscale_(optimizer)\n", ""), {"scaled-clip"}, True),
        ("steps the optimizer itself", _SCALED.replace("scaler.step(optimizer)", "optimizer.step()"),
         {"scaled-inf"}, False),
        ("no update of the scale", _SCALED.replace("    scaler.update()\n", ""),
         {"scaled-steps", "scaled-inf", "scaled-growth"}, False),
        ("backward on the unscaled loss", _SCALED.replace("scaler.scale(loss).backward()", "loss.backward()"),
         {"scaled-steps", "scaled-inf", "scaled-clip", "scaled-growth"}, False),
    ],
    "predict": [
        ("everything bfloat16", _predicted(**{name: "torch.bfloat16" for name in _PREDICTED}),
         {"predict-float32", "predict-follow", "predict-weights"}, False),
        ("CUDA's lists: softmax in float32", _predicted(softmax_of_linear="torch.float32"), {"predict-follow"}, False),
        ("autocast casts float64 too", _predicted(float64_matmul="torch.bfloat16"), {"predict-follow"}, False),
        ("gradients in bfloat16", _predicted(weight_grad="torch.bfloat16"), {"predict-weights"}, False),
        ("dtypes as strings", '''
predicted = {"linear": "bfloat16", "matmul": "bfloat16", "relu_of_linear": "bfloat16", "softmax_of_linear": "bfloat16",
             "linear_plus_float32": "float32", "float64_matmul": "float64", "mse_loss": "float32",
             "cross_entropy": "float32", "weight": "float32", "weight_grad": "float32"}
''', {"predict-low", "predict-float32", "predict-follow", "predict-weights"}, False),
    ],
}
