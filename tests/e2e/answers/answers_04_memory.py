"""Answers students write for lesson 04's exercises (see test_answers.py)."""

_TRACKER_CUDA_ONLY = """
class GPUMemoryTracker:
    def __init__(self, device=None):
        self.device = torch.device(device) if device is not None else gpulab.best_device()
        self.peak_memory_mb = self.memory_delta_mb = None

    def __enter__(self):
        if self.device.type != "cpu":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.start = torch.cuda.memory_allocated(self.device)
        return self

    def __exit__(self, *exc):
        if self.device.type != "cpu":
            torch.cuda.synchronize(self.device)
            self.peak_memory_mb = torch.cuda.max_memory_allocated(self.device) / 2**20
            self.memory_delta_mb = (torch.cuda.memory_allocated(self.device) - self.start) / 2**20
"""

_ACTIVATIONS_HEAD = """
def activation_bytes(model, x):
"""

_BISECTION = """
def largest_batch(try_step, low, high):
    best = None
    while low <= high:
        batch = (low + high) // 2
        try:
            try_step(batch)
            best, low = batch, batch + 1
        except torch.OutOfMemoryError:
            high = batch - 1
    return best
"""

_ACTIVATIONS_BY_STORAGE = """
def activation_bytes(model, x):
    ignored = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    sizes = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in ignored:
            sizes[t.untyped_storage().data_ptr()] = SIZE
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())
"""

_LOOP_HEAD = """
def train_and_evaluate(model, optimizer, train_batches, val_batches):
    train_losses, val_losses = [], []
    for x, y in train_batches:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

RIGHT = {
    "tracker": [
        ("torch.cuda only, guarded by the device type", _TRACKER_CUDA_ONLY),
        (
            "a generator with contextmanager, the functions imported by name",
            """
from contextlib import contextmanager
from types import SimpleNamespace

from torch.cuda import max_memory_allocated, memory_allocated, reset_peak_memory_stats


@contextmanager
def GPUMemoryTracker(device=None):
    device = gpulab.best_device() if device is None else torch.device(device)
    result = SimpleNamespace(peak_memory_mb=None, memory_delta_mb=None)
    if device.type != "cuda":
        yield result
        return
    reset_peak_memory_stats(device)
    before = memory_allocated(device)
    try:
        yield result
    finally:
        result.peak_memory_mb = max_memory_allocated(device) / MB
        result.memory_delta_mb = (memory_allocated(device) - before) / MB
""",
        ),
        (
            "contextlib, memory_stats, best device by gpulab",
            """
import contextlib


class GPUMemoryTracker(contextlib.AbstractContextManager):
    def __init__(self, device=None):
        self.device = gpulab.best_device() if device is None else torch.device(device)
        self.peak_memory_mb = None
        self.memory_delta_mb = None
        self.counting = self.device.type in ("cuda", "xpu") or (
            self.device.type != "cpu" and hasattr(torch.accelerator, "memory_stats"))

    def __enter__(self):
        if self.counting:
            api = torch.accelerator if hasattr(torch.accelerator, "memory_stats") else torch.cuda
            api.reset_peak_memory_stats(self.device)
            self.before = api.memory_stats(self.device)["allocated_bytes.all.current"]
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.counting:
            api = torch.accelerator if hasattr(torch.accelerator, "memory_stats") else torch.cuda
            stats = api.memory_stats(self.device)
            self.peak_memory_mb = stats["allocated_bytes.all.peak"] / MB
            self.memory_delta_mb = (stats["allocated_bytes.all.current"] - self.before) / MB
        return None
""",
        ),
        (
            "is_available instead of the device type",
            """
class GPUMemoryTracker:
    def __init__(self, device=None):
        self.device = device
        self.peak_memory_mb = None
        self.memory_delta_mb = None

    def __enter__(self):
        self.active = torch.cuda.is_available() and (self.device is None or torch.device(self.device).type == "cuda")
        if self.active:
            torch.cuda.reset_peak_memory_stats()
            self.start = torch.cuda.memory_allocated()
        return self

    def __exit__(self, *args):
        if self.active:
            self.peak_memory_mb = torch.cuda.max_memory_allocated() / (1024 * 1024)
            self.memory_delta_mb = (torch.cuda.memory_allocated() - self.start) / (1024 * 1024)
        return False
""",
        ),
    ],
    "activations": [
        (
            "keyed by the tensor's data_ptr, bytes from the storage",
            _ACTIVATIONS_HEAD
            + """
    params = {p.data_ptr() for p in model.parameters()} | {b.data_ptr() for b in model.buffers()}
    seen = {}

    def pack(t):
        key = t.untyped_storage().data_ptr()
        if key not in params and t.data_ptr() not in params:
            seen[key] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    del out
    return int(sum(seen.values()))
""",
        ),
        (
            "storages of the model compared in a loop, a helper for the key",
            _ACTIVATIONS_HEAD
            + """
    def key(t):
        return t.untyped_storage().data_ptr()

    own = [key(t) for t in list(model.parameters()) + list(model.buffers())]
    counted = {}

    def pack(t):
        for k in own:
            if k == key(t):
                return t
        counted[key(t)] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return int(sum(counted.values()))
""",
        ),
        (
            "saved_tensors_hooks imported by name, storages kept in a list",
            """
from torch.autograd.graph import saved_tensors_hooks as on_save


def activation_bytes(model, x):
    skip = set()
    for t in model.state_dict(keep_vars=True).values():
        skip.add(t.untyped_storage().data_ptr())
    storages = []

    def remember(t):
        s = t.untyped_storage()
        if s.data_ptr() not in skip and all(s.data_ptr() != o.data_ptr() for o in storages):
            storages.append(s)
        return t

    with on_save(remember, lambda t: t):
        model(x)
    return sum(s.nbytes() for s in storages)
""",
        ),
    ],
    "estimate": [
        (
            "saved-tensor hooks, as in exercise 2",
            """
def training_memory(model, x):
    n_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    ignored = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in ignored:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    result = {"parameters": n_bytes, "gradients": n_bytes, "optimizer_state": 2 * n_bytes,
              "activations": sum(saved.values())}
    result["total"] = sum(result.values())
    return result
""",
        ),
        (
            "the ledger's live bytes after the forward pass, output and all",
            """
def training_memory(model, x):
    params = sum(p.nelement() * p.element_size() for p in model.parameters())
    with TensorLedger() as ledger:
        output = model(x)
        activations = ledger.live_bytes
    return dict(parameters=params, gradients=params, optimizer_state=params * 2, activations=activations,
                total=params * 4 + activations)
""",
        ),
        (
            "bytes per dtype from a table, Adam's state measured on a copy",
            """
import copy

BYTES = {torch.float32: 4, torch.float64: 8, torch.bfloat16: 2, torch.float16: 2}


def training_memory(model, x):
    parameters = sum(p.numel() * BYTES[p.dtype] for p in model.parameters())
    twin = copy.deepcopy(model)
    adam = torch.optim.Adam(twin.parameters())
    for p in twin.parameters():
        p.grad = torch.zeros_like(p)
    adam.step()
    state = sum(v.numel() * v.element_size() for s in adam.state.values() for k, v in s.items() if k != "step")
    with TensorLedger() as ledger:
        y = model(x)
        activations = ledger.live_bytes
    out = {"parameters": parameters, "gradients": parameters, "optimizer_state": state, "activations": activations}
    out["total"] = sum(out.values())
    return out
""",
        ),
        (
            "gradients and Adam's state counted after one real step on a copy",
            """
import copy


def training_memory(model, x):
    parameters = sum(p.numel() * p.element_size() for p in model.parameters())
    gradients = state = 0
    if parameters:
        twin = copy.deepcopy(model)
        adam = torch.optim.Adam(twin.parameters())
        twin(x).float().sum().backward()
        adam.step()
        gradients = sum(p.grad.numel() * p.grad.element_size() for p in twin.parameters() if p.grad is not None)
        state = sum(t.numel() * t.element_size() for s in adam.state.values() for k, t in s.items() if k != "step")
    with TensorLedger() as ledger:
        out = model(x)
        activations = ledger.live_bytes
    return {"parameters": parameters, "gradients": gradients, "optimizer_state": state, "activations": activations,
            "total": parameters + gradients + state + activations}
""",
        ),
    ],
    "largest": [
        ("textbook bisection", _BISECTION),
        (
            "a helper that says whether it fits, torch.cuda.OutOfMemoryError, low checked first",
            """
import gc


def fits(try_step, batch):
    try:
        try_step(batch)
        return True
    except torch.cuda.OutOfMemoryError:
        return False
    finally:
        gc.collect()


def largest_batch(try_step, low, high):
    if not fits(try_step, low):
        return None
    good, bad = low, high + 1            # good fits; bad does not (or is past the range)
    while bad - good > 1:
        middle = (good + bad) // 2
        if fits(try_step, middle):
            good = middle
        else:
            bad = middle
    return good
""",
        ),
        (
            "RuntimeError caught, the message read",
            """
def largest_batch(try_step, low, high):
    answer = None
    lo, hi = low, high
    while lo <= hi:
        mid = lo + (hi - lo) // 2
        try:
            try_step(mid)
            answer, lo = mid, mid + 1
        except RuntimeError as error:
            if "out of memory" not in str(error).lower():
                raise
            hi = mid - 1
    return answer
""",
        ),
    ],
    "leak": [
        (
            "detached tensors, inference_mode",
            _LOOP_HEAD
            + """
        train_losses.append(loss.detach())
    with torch.inference_mode():
        for x, y in val_batches:
            val_losses.append(nn.functional.mse_loss(model(x), y))
    return train_losses, val_losses
""",
        ),
        (
            "float(), model.eval() and no_grad as a decorator",
            """
@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    losses = [float(nn.functional.mse_loss(model(x), y)) for x, y in batches]
    model.train()
    return losses


def train_and_evaluate(model, optimizer, train_batches, val_batches):
    train_losses = []
    for x, y in train_batches:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        train_losses.append(float(loss))
    return train_losses, evaluate(model, val_batches)
""",
        ),
        (
            "the losses kept in the loop, made numbers when it ends",
            _LOOP_HEAD
            + """
        train_losses.append(loss)
    train_losses = [value.item() for value in train_losses]
    with torch.no_grad():
        val_losses = [nn.functional.mse_loss(model(x), y).item() for x, y in val_batches]
    return train_losses, val_losses
""",
        ),
    ],
}

WRONG = {
    "tracker": [
        (
            "no reset of the peak",
            _TRACKER_CUDA_ONLY.replace("            torch.cuda.reset_peak_memory_stats(self.device)\n", ""),
            "tracker-peak-before",
            True,
        ),
        ("MB of a million bytes", _TRACKER_CUDA_ONLY.replace("2**20", "1e6"), "tracker-mb", False),
        (
            "the peak as an increase over the start",
            _TRACKER_CUDA_ONLY.replace(
                "torch.cuda.max_memory_allocated(self.device) / 2**20",
                "(torch.cuda.max_memory_allocated(self.device) - self.start) / 2**20",
            ),
            "tracker-peak-whole",
            False,
        ),
        (
            "torch.cuda called on every device",
            """
class GPUMemoryTracker:
    def __init__(self, device=None):
        self.device = device

    def __enter__(self):
        torch.cuda.reset_peak_memory_stats()
        self.start = torch.cuda.memory_allocated()
        return self

    def __exit__(self, *exc):
        self.peak_memory_mb = torch.cuda.max_memory_allocated() / 2**20
        self.memory_delta_mb = (torch.cuda.memory_allocated() - self.start) / 2**20
""",
            "tracker-cpu",
            False,
        ),
        ("swallows exceptions", _TRACKER_CUDA_ONLY + "        return True\n", "tracker-exception", False),
        (
            "records nothing when the block raises",
            _TRACKER_CUDA_ONLY.replace(
                '    def __exit__(self, *exc):\n        if self.device.type != "cpu":',
                '    def __exit__(self, exc_type, exc, tb):\n        if self.device.type != "cpu" and exc_type is None:',
            ),
            "tracker-exception",
            False,
        ),
        (
            "what PyTorch reserved, not what is allocated",
            _TRACKER_CUDA_ONLY.replace("memory_allocated", "memory_reserved"),
            "tracker-allocated",
            False,
        ),
        (
            "the memory at the end as the peak",
            _TRACKER_CUDA_ONLY.replace(
                "torch.cuda.max_memory_allocated(self.device) / 2**20",
                "torch.cuda.memory_allocated(self.device) / 2**20",
            ),
            "tracker-peak",
            False,
        ),
        (
            "the change as a size, never negative",
            _TRACKER_CUDA_ONLY.replace(
                "(torch.cuda.memory_allocated(self.device) - self.start) / 2**20",
                "abs(torch.cuda.memory_allocated(self.device) - self.start) / 2**20",
            ),
            "tracker-negative",
            False,
        ),
        (
            "the change up to the peak, not to the end",
            _TRACKER_CUDA_ONLY.replace(
                "(torch.cuda.memory_allocated(self.device) - self.start) / 2**20",
                "(torch.cuda.max_memory_allocated(self.device) - self.start) / 2**20",
            ),
            "tracker-delta",
            False,
        ),
        (
            "devices compared as strings",
            """
class GPUMemoryTracker:
    def __init__(self, device=None):
        self.device = device
        self.peak_memory_mb = self.memory_delta_mb = None

    def __enter__(self):
        self.on = self.device in (None, "cuda") or getattr(self.device, "type", None) == "cuda"
        self.on = self.on and torch.cuda.is_available()
        if self.on:
            torch.cuda.reset_peak_memory_stats()
            self.start = torch.cuda.memory_allocated()
        return self

    def __exit__(self, *exc):
        if self.on:
            self.peak_memory_mb = torch.cuda.max_memory_allocated() / 2**20
            self.memory_delta_mb = (torch.cuda.memory_allocated() - self.start) / 2**20
""",
            "tracker-device",
            False,
        ),
        (
            "the current accelerator, whether or not it is there",
            _TRACKER_CUDA_ONLY.replace(
                "gpulab.best_device()", '(torch.accelerator.current_accelerator() or torch.device("cpu"))'
            ),
            "tracker-cpu",
            False,
        ),
    ],
    "activations": [
        (
            "every saved tensor, parameters included",
            _ACTIVATIONS_HEAD
            + """
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return total
""",
            ("activations-params", "activations-once", "activations-storage"),
            False,
        ),
        (
            "parameters left out by identity, not by storage",
            _ACTIVATIONS_HEAD
            + """
    kept = list(model.parameters()) + list(model.buffers())
    sizes = {}

    def pack(t):
        if not any(t is p for p in kept):
            sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())
""",
            "activations-views",
            False,
        ),
        (
            "no storage counted once",
            _ACTIVATIONS_HEAD
            + """
    ignored = {p.untyped_storage().data_ptr() for p in [*model.parameters(), *model.buffers()]}
    total = 0

    def pack(t):
        nonlocal total
        if t.untyped_storage().data_ptr() not in ignored:
            total += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return total
""",
            "activations-once",
            False,
        ),
        (
            "4 bytes per element assumed",
            _ACTIVATIONS_BY_STORAGE.replace("SIZE", "t.numel() * 4"),
            "activations-storage",
            False,
        ),
        (
            "the saved view's elements, not its storage",
            _ACTIVATIONS_BY_STORAGE.replace("SIZE", "t.numel() * t.element_size()"),
            "activations-storage",
            False,
        ),
        (
            "buffers counted",
            _ACTIVATIONS_BY_STORAGE.replace("[*model.parameters(), *model.buffers()]", "model.parameters()").replace(
                "SIZE", "t.untyped_storage().nbytes()"
            ),
            "activations-buffers",
            False,
        ),
        (
            "no parameter left out",
            _ACTIVATIONS_BY_STORAGE.replace("[*model.parameters(), *model.buffers()]", "model.buffers()").replace(
                "SIZE", "t.untyped_storage().nbytes()"
            ),
            "activations-params",
            False,
        ),
        (
            "x left out as an input",
            _ACTIVATIONS_BY_STORAGE.replace(
                "[*model.parameters(), *model.buffers()]", "[*model.parameters(), *model.buffers(), x]"
            ).replace("SIZE", "t.untyped_storage().nbytes()"),
            "activations-input",
            False,
        ),
        (
            "a float of bytes",
            _ACTIVATIONS_BY_STORAGE.replace("SIZE", "t.untyped_storage().nbytes()").replace(
                "return sum(sizes.values())", "return float(sum(sizes.values()))"
            ),
            "activations-int",
            False,
        ),
        (
            "a backward pass after the forward pass",
            _ACTIVATIONS_BY_STORAGE.replace("SIZE", "t.untyped_storage().nbytes()").replace(
                "        model(x)\n", "        out = model(x)\n    out.float().sum().backward()\n"
            ),
            "activations-untouched",
            False,
        ),
        (
            "the forward pass under no_grad, to leave the model alone",
            _ACTIVATIONS_BY_STORAGE.replace("SIZE", "t.untyped_storage().nbytes()").replace(
                "    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):\n",
                "    with torch.no_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):\n",
            ),
            "activations-saved",
            False,
        ),
    ],
    "estimate": [
        (
            "Adam with one state",
            """
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
    return {"parameters": p, "gradients": p, "optimizer_state": p, "activations": a, "total": 3 * p + a}
""",
            "estimate-state",
            False,
        ),
        (
            "4 bytes per parameter assumed",
            """
def training_memory(model, x):
    n = sum(q.numel() for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
    return {"parameters": 4 * n, "gradients": 4 * n, "optimizer_state": 8 * n, "activations": a, "total": 16 * n + a}
""",
            ("estimate-parameters", "estimate-gradients", "estimate-state"),
            False,
        ),
        (
            "the model's memory from its state_dict, buffers and all",
            """
def training_memory(model, x):
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    grads = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
    return {"parameters": weights, "gradients": grads, "optimizer_state": 2 * grads, "activations": a,
            "total": weights + 3 * grads + a}
""",
            "estimate-parameters",
            False,
        ),
        (
            "gradients in float32 whatever the parameters' dtype",
            """
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    g = sum(q.numel() * 4 for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
    return {"parameters": p, "gradients": g, "optimizer_state": 2 * p, "activations": a, "total": 3 * p + g + a}
""",
            "estimate-gradients",
            False,
        ),
        (
            "activations left out",
            """
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    return {"parameters": p, "gradients": p, "optimizer_state": 2 * p, "activations": 0, "total": 4 * p}
""",
            "estimate-activations",
            False,
        ),
        (
            "a total without the activations",
            """
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
    return {"parameters": p, "gradients": p, "optimizer_state": 2 * p, "activations": a, "total": 4 * p}
""",
            "estimate-total",
            False,
        ),
        (
            "measured by training a step, which leaves gradients",
            """
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
        out.sum().backward()
    return {"parameters": p, "gradients": p, "optimizer_state": 2 * p, "activations": a, "total": 4 * p + a}
""",
            "estimate-unchanged",
            False,
        ),
    ],
    "largest": [
        (
            "a linear search upwards",
            """
def largest_batch(try_step, low, high):
    best = None
    for batch in range(low, high + 1):
        try:
            try_step(batch)
        except torch.OutOfMemoryError:
            break
        best = batch
    return best
""",
            "largest-tries",
            False,
        ),
        (
            "a galloping search, then bisection",
            """
def fits(try_step, batch):
    try:
        try_step(batch)
        return True
    except torch.OutOfMemoryError:
        return False


def largest_batch(try_step, low, high):
    if not fits(try_step, low):
        return None
    good, step = low, 1
    while good + step <= high and fits(try_step, good + step):
        good, step = good + step, step * 2
    bad = min(good + step, high + 1)
    while bad - good > 1:
        middle = (good + bad) // 2
        if fits(try_step, middle):
            good = middle
        else:
            bad = middle
    return good
""",
            "largest-tries",
            False,
        ),
        (
            "keeps the last error for the report",
            _BISECTION.replace(
                "except torch.OutOfMemoryError:\n",
                "except torch.OutOfMemoryError as error:\n            largest_batch.last_error = error\n",
            ),
            "largest-memory",
            False,
        ),
        (
            "every exception means too big",
            _BISECTION.replace("except torch.OutOfMemoryError:", "except Exception:"),
            "largest-other",
            False,
        ),
        (
            "returns the first size that does not fit",
            """
def largest_batch(try_step, low, high):
    while low < high:
        batch = (low + high) // 2
        try:
            try_step(batch)
            low = batch + 1
        except torch.OutOfMemoryError:
            high = batch
    return low
""",
            "largest-answer",
            False,
        ),
        ("0 when nothing fits", _BISECTION.replace("    best = None\n", "    best = 0\n"), "largest-none", False),
    ],
    "leak": [
        (
            "the loop as it was",
            _LOOP_HEAD
            + """
        train_losses.append(loss)
    for x, y in val_batches:
        val_losses.append(nn.functional.mse_loss(model(x), y))
    return train_losses, val_losses
""",
            ("leak-graph", "leak-eval"),
            True,
        ),
        (
            "item() everywhere, but no no_grad for evaluation",
            _LOOP_HEAD
            + """
        train_losses.append(loss.item())
    for x, y in val_batches:
        val_losses.append(nn.functional.mse_loss(model(x), y).item())
    return train_losses, val_losses
""",
            "leak-eval",
            False,
        ),
        (
            "no_grad for evaluation, the training losses kept",
            _LOOP_HEAD
            + """
        train_losses.append(loss)
    with torch.no_grad():
        for x, y in val_batches:
            val_losses.append(nn.functional.mse_loss(model(x), y))
    return train_losses, val_losses
""",
            "leak-graph",
            False,
        ),
        (
            "the predictions kept for later",
            "predictions = []\n"
            + _LOOP_HEAD
            + """
        train_losses.append(loss.item())
    with torch.no_grad():
        for x, y in val_batches:
            prediction = model(x)
            predictions.append(prediction)
            val_losses.append(nn.functional.mse_loss(prediction, y).item())
    return train_losses, val_losses
""",
            "leak-nothing",
            False,
        ),
        (
            "a running total instead of the losses",
            _LOOP_HEAD
            + """
        train_losses.append(loss.item())
    with torch.no_grad():
        total = sum(nn.functional.mse_loss(model(x), y).item() for x, y in val_batches)
    return train_losses, [total / len(val_batches)]
""",
            "leak-same",
            False,
        ),
    ],
}

EDGES = {
    "largest": [
        (
            "a range of one size, fitting or not",
            """
def fitting_up_to(largest):
    def step(batch):
        if batch > largest:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
    return step

assert largest_batch(fitting_up_to(5), 5, 5) == 5
assert largest_batch(fitting_up_to(4), 5, 5) is None
""",
        ),
        (
            "every answer in ranges of every size, within ⌈log₂(n)⌉ + 2 tries",
            """
for low, high in ((1, 1), (1, 2), (3, 5), (1, 8), (1, 9), (10, 73)):
    for largest in range(low - 1, high + 1):
        calls = []

        def step(batch):
            calls.append(batch)
            if batch > largest:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

        got = largest_batch(step, low, high)
        assert got == (largest if largest >= low else None), (low, high, largest, got)
        assert len(calls) <= (high - low).bit_length() + 2, (low, high, largest, calls)
""",
        ),
    ],
    "activations": [
        (
            "a model with no parameters, on an input that needs gradients",
            """
x = torch.randn(3, 5, requires_grad=True)
assert activation_bytes(nn.Sequential(nn.Tanh()), x) == 3 * 5 * 4      # tanh saves its output
assert activation_bytes(nn.Sequential(nn.Identity()), x) == 0
""",
        ),
    ],
    "estimate": [
        (
            "a model without parameters",
            """
got = training_memory(nn.Sequential(nn.ReLU()), torch.randn(4, 8))
assert got["parameters"] == got["gradients"] == got["optimizer_state"] == 0, got
assert got["total"] == got["activations"], got
""",
        ),
    ],
    "leak": [
        (
            "no validation batches",
            """
torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train, val = train_and_evaluate(model, optimizer, [(torch.randn(8, 4), torch.randn(8, 1))], [])
assert len(train) == 1 and val == [], (train, val)
""",
        ),
    ],
    "tracker": [
        (
            "a block that allocates nothing, on a simulated GPU with a cache",
            """
with SimulatedMemory("cuda", cache=True) as gpu:
    old = gpu.allocate(64 * MB)
    del old                                  # cached: reserved, not allocated
    with GPUMemoryTracker("cuda:0") as tracker:
        pass
assert tracker.peak_memory_mb == 0 and tracker.memory_delta_mb == 0, (tracker.peak_memory_mb, tracker.memory_delta_mb)
""",
        ),
    ],
}
