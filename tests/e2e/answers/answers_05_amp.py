"""Answers students write for lesson 05's exercises (see test_answers.py)."""

_COMPARE = """
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
"""

_SCALED = """
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
"""

_PREDICTED = {
    "linear": "torch.bfloat16",
    "matmul": "torch.bfloat16",
    "relu_of_linear": "torch.bfloat16",
    "softmax_of_linear": "torch.bfloat16",
    "linear_plus_float32": "torch.float32",
    "float64_matmul": "torch.float64",
    "mse_loss": "torch.float32",
    "cross_entropy": "torch.float32",
    "weight": "torch.float32",
    "weight_grad": "torch.float32",
}


def _predicted(**changes) -> str:
    values = {**_PREDICTED, **changes}
    return "predicted = {\n" + "".join(f'    "{name}": {dtype},\n' for name, dtype in values.items()) + "}\n"


RIGHT = {
    "compare": [
        ("enabled= flags, .item() per step", _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16")),
        (
            "a helper per run, a nullcontext for float32, no scaler object for bfloat16",
            """
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
""",
        ),
        (
            "perf_counter imported by name, a read of the last loss as the synchronisation",
            """
from time import perf_counter as clock


def compare_precision(make_model, batches, device, amp_dtype, steps=100):
    device = torch.device(device)
    results = {}
    for label, dtype in (("float32", None), ("amp", amp_dtype)):
        model = make_model()
        sgd = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        kept = []
        began = clock()
        for step in range(steps):
            x, y = batches[step % len(batches)]
            sgd.zero_grad()
            with torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
                loss = nn.functional.mse_loss(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(sgd)
            scaler.update()
            kept.append(loss.detach())
        values = torch.stack(kept).tolist()          # reads every loss: the device has finished
        took = clock() - began
        peak = torch.cuda.memory_stats(device)["allocated_bytes.all.peak"] / 2**20 if device.type == "cuda" else None
        results[label] = {"losses": values, "seconds_per_step": took / steps, "peak_memory_mb": peak}
    return results
""",
        ),
    ],
    "choose": [
        (
            "the capability compared with (8, 0)",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        if major >= 8:
            return torch.bfloat16, False
        return torch.float16, True
    if device.type == "mps":
        return torch.float16, torch.__version__ >= (2, 8)
    return torch.bfloat16, False
""",
        ),
        (
            "is_bf16_supported without emulation, strings compared, the version parsed by hand",
            """
def choose_precision(device):
    kind = str(device).split(":")[0]
    if kind == "cpu":
        return (torch.bfloat16, False)
    if kind == "cuda" and torch.cuda.is_bf16_supported(including_emulation=False):
        return (torch.bfloat16, False)
    if kind == "mps":
        major, minor = (int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
        return (torch.float16, (major, minor) >= (2, 8))
    return (torch.float16, True)
""",
        ),
        (
            "the device's properties",
            """
from packaging.version import Version


def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        native = props.major >= 8
        return (torch.bfloat16 if native else torch.float16), not native
    return {"mps": (torch.float16, bool(Version(str(torch.__version__)) >= Version("2.8")))}.get(
        device.type, (torch.bfloat16, False))
""",
        ),
        (
            "get_device_capability imported by name, packaging's version",
            """
from packaging.version import Version
from torch.cuda import get_device_capability


def choose_precision(device):
    kind = torch.device(device).type
    if kind == "cuda":
        return (torch.bfloat16, False) if get_device_capability(device) >= (8, 0) else (torch.float16, True)
    if kind == "mps":
        return torch.float16, Version(torch.__version__.split("+")[0]) >= Version("2.8.0")
    return torch.bfloat16, False
""",
        ),
    ],
    "scaled": [
        ("unscale_ then clip", _SCALED),
        (
            "zero_grad(set_to_none=False), amp.autocast, float() of the loss",
            """
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
""",
        ),
        (
            "clip_grad_norm_ imported by name, the parameters listed once",
            """
from torch.nn.utils import clip_grad_norm_


def scaled_step(model, optimizer, scaler, x, y, max_norm):
    params = [p for p in model.parameters()]
    for p in params:
        p.grad = None
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    clip_grad_norm_(params, max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
    ],
    "predict": [
        ("the dtypes", _predicted()),
        (
            "written with torch.float and torch.double aliases",
            _predicted(
                linear_plus_float32="torch.float",
                float64_matmul="torch.double",
                mse_loss="torch.float32",
                weight="torch.float",
                weight_grad="torch.float",
            ),
        ),
        (
            "built with dict(), dtypes from getattr",
            """
low, high = getattr(torch, "bfloat16"), getattr(torch, "float32")
predicted = dict(linear=low, matmul=low, relu_of_linear=low, softmax_of_linear=low, linear_plus_float32=high,
                 float64_matmul=torch.float64, mse_loss=high, cross_entropy=high, weight=high, weight_grad=high)
""",
        ),
    ],
}

WRONG = {
    "compare": [
        (
            "autocast left out of the second run",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "enabled=amp)", "enabled=False)"
            ),
            "compare-autocast",
            True,
        ),
        ("no scaler for float16", _COMPARE.replace("SCALE_WHEN", "False"), "compare-scaler", False),
        (
            "the same model trained twice",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                '    for name in ("float32", "amp"):\n        amp = name == "amp"\n        model = make_model()',
                '    model = make_model()\n    for name in ("float32", "amp"):\n        amp = name == "amp"',
            ),
            "compare-fresh",
            False,
        ),
        (
            "losses kept as tensors",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "losses.append(loss.item())", "losses.append(loss.detach())"
            ),
            "compare-losses",
            False,
        ),
        (
            "gradients never cleared",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "            opt.zero_grad()\n", ""
            ),
            "compare-train",
            False,
        ),
        (
            "the batches from the second one on",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "batches[k % len(batches)]", "batches[(k + 1) % len(batches)]"
            ),
            "compare-batch",
            False,
        ),
        (
            "autocast in both runs",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "enabled=amp)", "enabled=True)"
            ),
            "compare-first",
            False,
        ),
        (
            "keys named after the dtypes",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "    return out\n", '    return {"fp32": out["float32"], str(amp_dtype): out["amp"]}\n'
            ),
            "compare-keys",
            False,
        ),
        (
            "the run's whole time, not per step",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                '"seconds_per_step": elapsed / steps', '"seconds_per_step": elapsed'
            ),
            "compare-seconds",
            False,
        ),
        (
            "no synchronisation before the clock stops",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16")
            .replace("            losses.append(loss.item())\n", "            losses.append(loss.detach())\n")
            .replace('        if device.type == "cuda":\n            torch.cuda.synchronize(device)\n', "")
            .replace('out[name] = {"losses": losses,', 'out[name] = {"losses": [float(v) for v in losses],'),
            "compare-sync",
            False,
        ),
        (
            "the peak never reset",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "            torch.cuda.reset_peak_memory_stats(device)\n", "            pass\n"
            ),
            "compare-peak",
            False,
        ),
        (
            "megabytes of a million bytes, not MiB",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace("/ 2**20 if", "/ 1e6 if"),
            "compare-peak",
            False,
        ),
        (
            "what is reserved, not allocated",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                "max_memory_allocated", "max_memory_reserved"
            ),
            "compare-peak",
            False,
        ),
        (
            "a peak of 0 on the CPU",
            _COMPARE.replace("SCALE_WHEN", "amp and amp_dtype == torch.float16").replace(
                'if device.type == "cuda" else None', 'if device.type == "cuda" else 0.0'
            ),
            "compare-cpu",
            False,
        ),
    ],
    "choose": [
        (
            "trusts is_bf16_supported()",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return (torch.bfloat16, False) if torch.cuda.is_bf16_supported() else (torch.float16, True)
    if device.type == "mps":
        return torch.float16, torch.__version__ >= (2, 8)
    return torch.bfloat16, False
""",
            "choose-older",
            False,
        ),
        (
            "dtype names instead of dtypes",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return ("bfloat16", False) if torch.cuda.get_device_capability(device) >= (8, 0) else ("float16", True)
    if device.type == "mps":
        return "float16", torch.__version__ >= (2, 8)
    return "bfloat16", False
""",
            ("choose-pair", "choose-ampere", "choose-older", "choose-cpu"),
            False,
        ),
        (
            "a scaler as a string",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return (torch.bfloat16, "no") if torch.cuda.get_device_capability(device) >= (8, 0) else (torch.float16, "yes")
    if device.type == "mps":
        return torch.float16, torch.__version__ >= (2, 8)
    return torch.bfloat16, False
""",
            ("choose-pair", "choose-ampere", "choose-older"),
            False,
        ),
        (
            "the scaler's flag a numpy bool",
            """
import numpy as np


def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        needs = np.less(torch.cuda.get_device_capability(device)[0], 8)
        return (torch.float16 if needs else torch.bfloat16), needs
    if device.type == "mps":
        return torch.float16, torch.__version__ >= (2, 8)
    return torch.bfloat16, False
""",
            "choose-pair",
            False,
        ),
        (
            "float16 everywhere but Ampere",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8:
        return torch.bfloat16, False
    if device.type == "mps":
        return torch.float16, torch.__version__ >= (2, 8)
    return torch.float16, True
""",
            "choose-cpu",
            False,
        ),
        (
            "a scaler on MPS whatever the version",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return (torch.bfloat16, False) if torch.cuda.get_device_capability(device) >= (8, 0) else (torch.float16, True)
    if device.type == "mps":
        return torch.float16, True
    return torch.bfloat16, False
""",
            "choose-mps",
            False,
        ),
        (
            "versions compared as strings",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return (torch.bfloat16, False) if torch.cuda.get_device_capability(device) >= (8, 0) else (torch.float16, True)
    if device.type == "mps":
        return torch.float16, str(torch.__version__) >= "2.8"
    return torch.bfloat16, False
""",
            "choose-versions",
            False,
        ),
        (
            "the minor version compared with > 8",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return (torch.bfloat16, False) if torch.cuda.get_device_capability(device)[0] >= 8 else (torch.float16, True)
    if device.type == "mps":
        return torch.float16, int(torch.__version__.split(".")[1]) > 8
    return torch.bfloat16, False
""",
            "choose-mps",
            False,
        ),
        (
            "capability 9.0 and up only",
            """
def choose_precision(device):
    device = torch.device(device)
    if device.type == "cuda":
        return (torch.bfloat16, False) if torch.cuda.get_device_capability(device) >= (9, 0) else (torch.float16, True)
    if device.type == "mps":
        return torch.float16, torch.__version__ >= (2, 8)
    return torch.bfloat16, False
""",
            "choose-ampere",
            False,
        ),
        (
            "only the string 'cuda' is a GPU",
            """
def choose_precision(device):
    if device == "cuda":
        return (torch.bfloat16, False) if torch.cuda.get_device_capability() >= (8, 0) else (torch.float16, True)
    if device == "mps":
        return torch.float16, torch.__version__ >= (2, 8)
    return torch.bfloat16, False
""",
            "choose-names",
            False,
        ),
    ],
    "scaled": [
        (
            "clips the scaled gradients",
            _SCALED.replace("    scaler.unscale_(optimizer)\n", ""),
            "scaled-unscaled",
            True,
        ),
        (
            "steps the optimizer itself",
            _SCALED.replace("scaler.step(optimizer)", "optimizer.step()"),
            "scaled-step",
            False,
        ),
        ("no update of the scale", _SCALED.replace("    scaler.update()\n", ""), "scaled-update", False),
        (
            "backward on the unscaled loss",
            _SCALED.replace("scaler.scale(loss).backward()", "loss.backward()"),
            "scaled-scale",
            False,
        ),
        (
            "clips each gradient's values",
            _SCALED.replace(
                "nn.utils.clip_grad_norm_(model.parameters(), max_norm)",
                "nn.utils.clip_grad_value_(model.parameters(), max_norm)",
            ),
            "scaled-clip",
            False,
        ),
        (
            "the scaled loss returned",
            _SCALED.replace("    return loss.item()", "    return scaler.scale(loss).item()"),
            "scaled-float",
            False,
        ),
        (
            "the loss as a 0-dim tensor",
            _SCALED.replace("    return loss.item()", "    return loss.detach()"),
            "scaled-float",
            False,
        ),
        ("gradients never cleared", _SCALED.replace("    optimizer.zero_grad()\n", ""), "scaled-zero", False),
        (
            "no autocast",
            _SCALED.replace(
                "    with torch.autocast(x.device.type, dtype=torch.bfloat16):\n"
                "        loss = nn.functional.mse_loss(model(x), y)\n",
                "    loss = nn.functional.mse_loss(model(x), y)\n",
            ),
            "scaled-autocast",
            False,
        ),
    ],
    "predict": [
        (
            "dtypes as strings",
            """
predicted = {"linear": "bfloat16", "matmul": "bfloat16", "relu_of_linear": "bfloat16", "softmax_of_linear": "bfloat16",
             "linear_plus_float32": "float32", "float64_matmul": "float64", "mse_loss": "float32",
             "cross_entropy": "float32", "weight": "float32", "weight_grad": "float32"}
""",
            "predict-dtypes",
            False,
        ),
        (
            "everything bfloat16",
            _predicted(**{name: "torch.bfloat16" for name in _PREDICTED}),
            (
                "predict-linear_plus_float32",
                "predict-float64_matmul",
                "predict-mse_loss",
                "predict-cross_entropy",
                "predict-weight",
                "predict-weight_grad",
            ),
            False,
        ),
    ]
    + [
        (f"{name} as {wrong}", _predicted(**{name: wrong}), f"predict-{name}", False)
        for name, wrong in (
            ("linear", "torch.float32"),
            ("matmul", "torch.float32"),
            ("relu_of_linear", "torch.float32"),
            ("softmax_of_linear", "torch.float32"),
            ("linear_plus_float32", "torch.bfloat16"),
            ("float64_matmul", "torch.bfloat16"),
            ("mse_loss", "torch.bfloat16"),
            ("cross_entropy", "torch.bfloat16"),
            ("weight", "torch.bfloat16"),
            ("weight_grad", "torch.bfloat16"),
        )
    ],
}

EDGES = {
    "choose": [
        (
            "MPS at the version where GradScaler starts to work there, and around it",
            """
from unittest import mock
from torch.torch_version import TorchVersion

for version, scales in (("2.6.0", False), ("2.7.1+cpu", False), ("2.8.0", True), ("2.8.0+cu128", True),
                        ("2.10.0", True), ("2.15.0", True)):
    with mock.patch.object(torch, "__version__", TorchVersion(version)):
        assert choose_precision("mps") == (torch.float16, scales), version
        assert choose_precision(torch.device("mps")) == (torch.float16, scales), version
""",
        ),
    ],
    "compare": [
        (
            "one step, one batch",
            """
torch.manual_seed(0)
x = torch.randn(4, 3)
report = compare_precision(lambda: nn.Linear(3, 2), [(x, x[:, :2])], "cpu", torch.bfloat16, steps=1)
assert [len(r["losses"]) for r in report.values()] == [1, 1], report
assert all(r["seconds_per_step"] > 0 and r["peak_memory_mb"] is None for r in report.values()), report
""",
        ),
    ],
    "scaled": [
        (
            "a NaN gradient is skipped like an inf",
            """
torch.manual_seed(0)
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
before = [p.detach().clone() for p in model.parameters()]
hook = model.weight.register_hook(lambda grad: torch.full_like(grad, float("nan")))
scaled_step(model, optimizer, scaler, torch.randn(8, 4), torch.randn(8, 2), max_norm=1.0)
hook.remove()
assert all(torch.equal(a, b) for a, b in zip(before, model.parameters())) and scaler.get_scale() == 4.0
""",
        ),
    ],
}
