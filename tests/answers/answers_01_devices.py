"""Answers students write for lesson 01's exercises: right ones score full marks, wrong ones lose
exactly the checks named beside them. See test_answers.py."""

RIGHT = {
    "agnostic": [
        ("the model moved, the data made there", '''
def run_linear(device):
    model = nn.Linear(100, 10).to(device)
    return model(torch.randn(32, 100, device=device))
'''),
        ("both made on the device", '''
def run_linear(device):
    model = nn.Linear(100, 10, device=device)
    data = torch.randn((32, 100), device=torch.device(device))
    output = model(data)
    return output
'''),
        ("the device as a context manager", '''
def run_linear(device):
    with torch.device(device):
        model = nn.Linear(100, 10)
        data = torch.rand(32, 100)
    return model(data)
'''),
    ],
    "best-device": [
        ("device_count", '''
def pick_device():
    if torch.accelerator.device_count() > 0:
        return torch.accelerator.current_accelerator()
    return torch.device("cpu")
'''),
        ("gpulab's helper", '''
def pick_device():
    return gpulab.best_device()
'''),
        ("by type, one line", '''
def pick_device():
    return torch.device(torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu")
'''),
        ("check_available", '''
def pick_device():
    return torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")
'''),
    ],
    "meta-size": [
        ("nbytes", '''
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    return sum(p.numel() for p in model.parameters()), sum(p.nbytes for p in model.parameters())
'''),
        ("dtype.itemsize, a loop", '''
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    count = size = 0
    for p in model.parameters():
        count += p.numel()
        size += p.numel() * p.dtype.itemsize
    return (count, size)
'''),
    ],
    "follow-input": [
        ("arange then .to(x)", '''
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1]).to(x)
'''),
        ("on the device, then the dtype", '''
class AddPosition(nn.Module):
    def forward(self, x):
        positions = torch.arange(x.size(-1), device=x.device).to(x.dtype)
        return x + positions
'''),
        ("type_as", '''
class AddPosition(nn.Module):
    def forward(self, x):
        return torch.arange(x.shape[-1], device=x.device).type_as(x) + x
'''),
    ],
    "time-matmul": [
        ("torch.matmul and keyword arguments", '''
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return gpulab.time_fn(lambda: torch.matmul(a, b), device=device, flops=2 * n * n * n)
'''),
        ("imported by name, a named function, float flops", '''
from gpulab import time_fn

def measure_matmul(n, device):
    a = torch.rand(n, n, dtype=torch.float32, device=device)
    b = torch.rand(n, n, dtype=torch.float32, device=device)
    def product():
        return torch.mm(a, b)
    return time_fn(product, device=torch.device(device), flops=2.0 * n**3)
'''),
        ("functools.partial", '''
import functools

def measure_matmul(n, device):
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    return gpulab.timing.time_fn(functools.partial(torch.mm, a, b), device=device, flops=2 * n**3)
'''),
    ],
}

WRONG = {
    "agnostic": [
        ("moves the data instead of making it there", '''
def run_linear(device):
    model = nn.Linear(100, 10).to(device)
    data = torch.randn(32, 100).to(device)
    return model(data)
''', {"agnostic-made-on-device"}, True),
        ("leaves the model on the CPU", '''
def run_linear(device):
    model = nn.Linear(100, 10)
    return model(torch.randn(32, 100, device=device))
''', {"agnostic-gpu", "agnostic-made-on-device"}, False),
    ],
    "best-device": [
        ("asks only torch.cuda", '''
def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
''', {"best-device-elsewhere"}, True),
    ],
    "meta-size": [
        ("four bytes a parameter", '''
def size_on_meta(build):
    with torch.device("meta"):
        model = build()
    n = sum(p.numel() for p in model.parameters())
    return n, 4 * n
''', {"meta-size-huge"}, False),
        ("builds on the CPU, then moves to meta", '''
def size_on_meta(build):
    model = build().to("meta")
    return sum(p.numel() for p in model.parameters()), sum(p.nbytes for p in model.parameters())
''', {"meta-size-on-meta", "meta-size-huge"}, False),
    ],
    "follow-input": [
        ("the device but not the dtype", '''
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1], device=x.device)
''', {"follow-input-dtype"}, True),
        ("the dtype but not the device", '''
class AddPosition(nn.Module):
    def forward(self, x):
        return x + torch.arange(x.shape[-1], dtype=x.dtype)
''', {"follow-input-device"}, False),
    ],
    "time-matmul": [
        ("makes the matrices inside the timed function", '''
def measure_matmul(n, device):
    return gpulab.time_fn(lambda: torch.randn(n, n, device=device) @ torch.randn(n, n, device=device),
                          device=device, flops=2 * n**3)
''', {"time-matmul-only-the-multiply"}, True),
        ("n³ flops", '''
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return gpulab.time_fn(lambda: a @ b, device=device, flops=n**3)
''', {"time-matmul-flops"}, False),
        ("does not tell time_fn the device", '''
def measure_matmul(n, device):
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    return gpulab.time_fn(lambda: a @ b, flops=2 * n**3)
''', {"time-matmul-result"}, False),
    ],
}
