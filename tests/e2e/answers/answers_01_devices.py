"""Answers students write for lesson 01's exercises: right ones score full marks, wrong ones lose
exactly the checks that enforce the constraints named beside them. See test_answers.py."""

RIGHT = {
    "agnostic": [
        (
            "the model moved, the data made there",
            """
def run_linear(device):
    model = nn.Linear(100, 10).to(device)
    return model(torch.randn(32, 100, device=device))
""",
        ),
        (
            "both made on the device",
            """
def run_linear(device):
    model = nn.Linear(100, 10, device=device)
    data = torch.randn((32, 100), device=torch.device(device))
    output = model(data)
    return output
""",
        ),
        (
            "the device as a context manager",
            """
def run_linear(device):
    with torch.device(device):
        model = nn.Linear(100, 10)
        data = torch.rand(32, 100)
    return model(data)
""",
        ),
        (
            "a torch.device once, an in-place normal_ on the device",
            """
def run_linear(device):
    device = torch.device(device)
    layer = nn.Linear(100, 10)
    layer.to(device)
    batch = torch.empty(32, 100, device=device).normal_()
    return layer(batch)
""",
        ),
    ],
    "best-device": [
        (
            "device_count",
            """
def pick_device():
    if torch.accelerator.device_count() > 0:
        return torch.accelerator.current_accelerator()
    return torch.device("cpu")
""",
        ),
        (
            "gpulab's helper",
            """
def pick_device():
    return gpulab.best_device()
""",
        ),
        (
            "by type, one line",
            """
def pick_device():
    return torch.device(torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu")
""",
        ),
        (
            "check_available",
            """
def pick_device():
    return torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")
""",
        ),
        (
            "names imported from torch.accelerator",
            """
from torch.accelerator import current_accelerator, is_available

def pick_device():
    return current_accelerator() if is_available() else torch.device("cpu")
""",
        ),
        (
            "each backend in turn",
            """
def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return torch.device("xpu")
    return torch.device("cpu")
""",
        ),
    ],
    "meta-size": [
        (
            "nbytes",
            """
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    return sum(p.numel() for p in model.parameters()), sum(p.nbytes for p in model.parameters())
""",
        ),
        (
            "dtype.itemsize, a loop",
            """
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    count = size = 0
    for p in model.parameters():
        count += p.numel()
        size += p.numel() * p.dtype.itemsize
    return (count, size)
""",
        ),
        (
            "torch.device imported, finfo bits, a helper",
            """
from torch import device as where

def _bytes(p):
    return p.numel() * torch.finfo(p.dtype).bits // 8

def size_on_meta(build):
    with where("meta"):
        model = build()
    params = list(model.parameters())
    return sum(map(torch.numel, params)), sum(_bytes(p) for p in params)
""",
        ),
    ],
    "follow-input": [
        (
            "arange then .to(x)",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1]).to(x)
""",
        ),
        (
            "on the device, then the dtype",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        positions = torch.arange(x.size(-1), device=x.device).to(x.dtype)
        return x + positions
""",
        ),
        (
            "type_as",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        return torch.arange(x.shape[-1], device=x.device).type_as(x) + x
""",
        ),
        (
            "new_tensor from a range",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        return x + x.new_tensor(range(x.shape[-1]))
""",
        ),
    ],
    "time-matmul": [
        (
            "torch.matmul and keyword arguments",
            """
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return gpulab.time_fn(lambda: torch.matmul(a, b), device=device, flops=2 * n * n * n)
""",
        ),
        (
            "imported by name, a named function, float flops",
            """
from gpulab import time_fn

def measure_matmul(n, device):
    a = torch.rand(n, n, dtype=torch.float32, device=device)
    b = torch.rand(n, n, dtype=torch.float32, device=device)
    def product():
        return torch.mm(a, b)
    return time_fn(product, device=torch.device(device), flops=2.0 * n**3)
""",
        ),
        (
            "functools.partial",
            """
import functools

def measure_matmul(n, device):
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    return gpulab.timing.time_fn(functools.partial(torch.mm, a, b), device=device, flops=2 * n**3)
""",
        ),
        (
            "time_fn under an alias, rand with a dtype, a function that returns nothing",
            """
from gpulab import time_fn as stopwatch

def measure_matmul(n, device):
    left = torch.rand(n, n, device=device, dtype=torch.float32)
    right = torch.rand((n, n), device=device)

    def multiply():
        left.matmul(right)

    return stopwatch(multiply, device=device, flops=2 * n * n * n)
""",
        ),
        (
            "einsum on two halves of one random tensor",
            """
def measure_matmul(n, device):
    a, b = torch.randn(2, n, n, device=device).unbind()
    return gpulab.time_fn(lambda: torch.einsum("ij,jk->ik", a, b), device=device, flops=2 * n**3)
""",
        ),
    ],
}

WRONG = {
    "agnostic": [
        (
            "moves the data instead of making it there",
            """
def run_linear(device):
    model = nn.Linear(100, 10).to(device)
    data = torch.randn(32, 100).to(device)
    return model(data)
""",
            "agnostic-made-on-device",
            True,
        ),
        (
            "leaves the model on the CPU",
            """
def run_linear(device):
    model = nn.Linear(100, 10)
    return model(torch.randn(32, 100, device=device))
""",
            "agnostic-on-device",
            False,
        ),
        (
            "computes on the CPU, then moves the output",
            """
def run_linear(device):
    model = nn.Linear(100, 10)
    return model(torch.randn(32, 100)).to(device)
""",
            "agnostic-on-device",
            False,
        ),
        (
            ".cpu() or .cuda() by name",
            """
def run_linear(device):
    model = getattr(nn.Linear(100, 10), str(device))()
    return model(torch.randn(32, 100, device=device))
""",
            "agnostic-devices",
            False,
        ),
        (
            "forgets to return the output",
            """
def run_linear(device):
    model = nn.Linear(100, 10).to(device)
    output = model(torch.randn(32, 100, device=device))
""",
            "agnostic-returns",
            False,
        ),
    ],
    "best-device": [
        (
            "asks only torch.cuda",
            """
def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
""",
            "best-device-accelerator",
            True,
        ),
        (
            "trusts current_accelerator alone",
            """
def pick_device():
    return torch.accelerator.current_accelerator() or torch.device("cpu")
""",
            "best-device-cpu",
            False,
        ),
        (
            "a string, not a torch.device",
            """
def pick_device():
    if torch.accelerator.is_available():
        return torch.accelerator.current_accelerator().type
    return "cpu"
""",
            "best-device-type",
            False,
        ),
    ],
    "meta-size": [
        (
            "four bytes a parameter",
            """
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    n = sum(p.numel() for p in model.parameters())
    return n, 4 * n
""",
            "meta-own-dtype",
            False,
        ),
        (
            "the first parameter's dtype for all",
            """
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    return n, n * params[0].element_size()
""",
            "meta-own-dtype",
            False,
        ),
        (
            "builds on the CPU, then moves to meta",
            """
def size_on_meta(build):
    model = build().to("meta")
    return sum(p.numel() for p in model.parameters()), sum(p.nbytes for p in model.parameters())
""",
            "meta-build",
            False,
        ),
        (
            "builds on the CPU first: memory for every parameter",
            """
def size_on_meta(build):
    model = build()
    model.to(torch.device("meta"))
    return sum(p.numel() for p in model.parameters()), sum(p.numel() * p.element_size() for p in model.parameters())
""",
            "meta-no-memory",
            False,
        ),
        (
            "counts the buffers too",
            """
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    tensors = list(model.state_dict().values())
    return sum(t.numel() for t in tensors), sum(t.numel() * t.element_size() for t in tensors)
""",
            "meta-returns",
            False,
        ),
    ],
    "follow-input": [
        (
            "the device but not the dtype",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1], device=x.device)
""",
            "follow-dtype",
            True,
        ),
        (
            "float32 positions",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1], device=x.device, dtype=torch.float32)
""",
            "follow-dtype",
            False,
        ),
        (
            "the dtype but not the device",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1], dtype=x.dtype)
""",
            "follow-device",
            False,
        ),
        (
            "positions from 1",
            """
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(1, x.shape[-1] + 1, device=x.device, dtype=x.dtype)
""",
            "follow-values",
            False,
        ),
    ],
    "time-matmul": [
        (
            "makes the matrices inside the timed function",
            """
def measure_matmul(n, device):
    return gpulab.time_fn(lambda: torch.randn(n, n, device=device) @ torch.randn(n, n, device=device),
                          device=device, flops=2 * n**3)
""",
            "matmul-before",
            True,
        ),
        (
            "n³ flops",
            """
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return gpulab.time_fn(lambda: a @ b, device=device, flops=n**3)
""",
            "matmul-flops",
            False,
        ),
        (
            "does not tell time_fn the device",
            """
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return gpulab.time_fn(lambda: a @ b, flops=2 * n**3)
""",
            "matmul-time-fn",
            False,
        ),
        (
            "always times on the CPU",
            """
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return gpulab.time_fn(lambda: a @ b, device="cpu", flops=2 * n**3)
""",
            "matmul-time-fn",
            False,
        ),
        (
            "made on the host, then moved to the device",
            """
def measure_matmul(n, device):
    a = torch.randn(n, n).to(device)
    b = torch.randn(n, n).to(device)
    return gpulab.time_fn(lambda: a @ b, device=device, flops=2 * n**3)
""",
            "matmul-made-on-device",
            False,
        ),
        (
            "float64 matrices",
            """
def measure_matmul(n, device):
    a = torch.randn(n, n, device=device, dtype=torch.float64)
    b = torch.randn(n, n, device=device, dtype=torch.float64)
    return gpulab.time_fn(lambda: a @ b, device=device, flops=2 * n**3)
""",
            "matmul-made-on-device",
            False,
        ),
        (
            "matrices of ones",
            """
def measure_matmul(n, device):
    a = torch.ones(n, n, device=device)
    b = torch.ones(n, n, device=device)
    return gpulab.time_fn(lambda: a @ b, device=device, flops=2 * n**3)
""",
            "matmul-made-on-device",
            False,
        ),
        (
            "forgets to return the Timing",
            """
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    timing = gpulab.time_fn(lambda: a @ b, device=device, flops=2 * n**3)
    print(timing)
""",
            "matmul-returns",
            False,
        ),
    ],
}

EDGES = {
    "agnostic": [
        (
            "on the meta device, by name or as a torch.device",
            """
for device in ("meta", torch.device("meta"), "cpu"):
    output = run_linear(device)
    assert tuple(output.shape) == (32, 10) and output.device.type == torch.device(device).type, output
""",
        ),
    ],
    "best-device": [
        (
            "a torch.device on this machine",
            """
assert isinstance(pick_device(), torch.device)
""",
        ),
    ],
    "meta-size": [
        (
            "a model without parameters",
            """
assert size_on_meta(lambda: nn.ReLU()) == (0, 0)
assert size_on_meta(lambda: nn.Linear(3, 2, bias=False).half()) == (6, 12)
""",
        ),
    ],
    "follow-input": [
        (
            "an empty last dimension, and one column",
            """
assert AddPosition()(torch.zeros(2, 0)).shape == (2, 0)
assert AddPosition()(torch.zeros(3, 1, dtype=torch.int8)).tolist() == [[0]] * 3
assert AddPosition()(torch.zeros(2, 3, dtype=torch.bfloat16)).dtype == torch.bfloat16
""",
        ),
    ],
    "time-matmul": [
        (
            "a 1×1 product on the CPU",
            """
timing = measure_matmul(1, "cpu")
assert timing.flops == 2 and torch.device(timing.device) == torch.device("cpu"), timing
""",
        ),
    ],
}
