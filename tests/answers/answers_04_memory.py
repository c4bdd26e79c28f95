"""Answers students write for lesson 04's exercises (see test_answers.py)."""

_TRACKER_CUDA_ONLY = '''
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
'''

_ACTIVATIONS_HEAD = '''
def activation_bytes(model, x):
'''

_BISECTION = '''
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
'''

_LOOP_HEAD = '''
def train_and_evaluate(model, optimizer, train_batches, val_batches):
    train_losses, val_losses = [], []
    for x, y in train_batches:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''

RIGHT = {
    "tracker": [
        ("torch.cuda only, guarded by the device type", _TRACKER_CUDA_ONLY),
        ("contextlib, memory_stats, best device by gpulab", '''
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
'''),
        ("is_available instead of the device type", '''
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
'''),
    ],
    "activations": [
        ("keyed by the tensor's data_ptr, bytes from the storage", _ACTIVATIONS_HEAD + '''
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
'''),
        ("a list of storages, compared with a loop, numel × element_size", _ACTIVATIONS_HEAD + '''
    parameters = [p.untyped_storage() for p in model.parameters()]
    counted = []
    total = 0

    def pack(t):
        nonlocal total
        s = t.untyped_storage()
        if any(s.data_ptr() == q.data_ptr() for q in parameters + counted):
            return t
        counted.append(s)
        total += t.numel() * t.element_size()
        return t

    with torch.no_grad():
        pass
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return total
'''),
    ],
    "estimate": [
        ("saved-tensor hooks, as in exercise 2", '''
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
'''),
        ("the ledger's live bytes after the forward pass, output and all", '''
def training_memory(model, x):
    params = sum(p.nelement() * p.element_size() for p in model.parameters())
    with TensorLedger() as ledger:
        output = model(x)
        activations = ledger.live_bytes
    return dict(parameters=params, gradients=params, optimizer_state=params * 2, activations=activations,
                total=params * 4 + activations)
'''),
    ],
    "largest": [
        ("textbook bisection", _BISECTION),
        ("a helper that says whether it fits, torch.cuda.OutOfMemoryError, low checked first", '''
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
'''),
        ("RuntimeError caught, the message read", '''
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
'''),
    ],
    "leak": [
        ("detached tensors, inference_mode", _LOOP_HEAD + '''
        train_losses.append(loss.detach())
    with torch.inference_mode():
        for x, y in val_batches:
            val_losses.append(nn.functional.mse_loss(model(x), y))
    return train_losses, val_losses
'''),
        ("float(), model.eval() and no_grad as a decorator", '''
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
'''),
    ],
}

WRONG = {
    "tracker": [
        ("no reset of the peak", _TRACKER_CUDA_ONLY.replace(
            "            torch.cuda.reset_peak_memory_stats(self.device)\n", ""), {"tracker-peak"}, True),
        ("MB of a million bytes", _TRACKER_CUDA_ONLY.replace("2**20", "1e6"),
         {"tracker-peak", "tracker-delta", "tracker-device"}, False),
        ("the peak as an increase over the start", _TRACKER_CUDA_ONLY.replace(
            "torch.cuda.max_memory_allocated(self.device) / 2**20",
            "(torch.cuda.max_memory_allocated(self.device) - self.start) / 2**20"), {"tracker-peak"}, False),
        ("torch.cuda called on every device", '''
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
''', {"tracker-cpu"}, False),
        ("swallows exceptions", _TRACKER_CUDA_ONLY + "        return True\n", {"tracker-delta"}, False),
    ],
    "activations": [
        ("every saved tensor, parameters included", _ACTIVATIONS_HEAD + '''
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return total
''', {"activations-mlp", "activations-once", "activations-other"}, False),
        ("parameters left out by identity, not by storage", _ACTIVATIONS_HEAD + '''
    sizes = {}

    def pack(t):
        if not any(t is p for p in model.parameters()):
            sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())
''', {"activations-mlp", "activations-once", "activations-other"}, False),
        ("no storage counted once", _ACTIVATIONS_HEAD + '''
    ignored = {p.untyped_storage().data_ptr() for p in model.parameters()}
    total = 0

    def pack(t):
        nonlocal total
        if t.untyped_storage().data_ptr() not in ignored:
            total += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return total
''', {"activations-once"}, False),
        ("4 bytes per element assumed", _ACTIVATIONS_HEAD + '''
    ignored = {p.untyped_storage().data_ptr() for p in model.parameters()}
    sizes = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in ignored:
            sizes[t.untyped_storage().data_ptr()] = t.numel() * 4
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(sizes.values())
''', {"activations-other"}, False),
    ],
    "estimate": [
        ("Adam with one state", '''
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
    return {"parameters": p, "gradients": p, "optimizer_state": p, "activations": a, "total": 3 * p + a}
''', {"estimate-state", "estimate-total"}, False),
        ("4 bytes per parameter assumed", '''
def training_memory(model, x):
    n = sum(q.numel() for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
    return {"parameters": 4 * n, "gradients": 4 * n, "optimizer_state": 8 * n, "activations": a, "total": 16 * n + a}
''', {"estimate-parameters"}, False),
        ("activations left out", '''
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    return {"parameters": p, "gradients": p, "optimizer_state": 2 * p, "activations": 0, "total": 4 * p}
''', {"estimate-activations", "estimate-total"}, False),
        ("measured by training a step, which leaves gradients", '''
def training_memory(model, x):
    p = sum(q.numel() * q.element_size() for q in model.parameters())
    with TensorLedger() as ledger:
        out = model(x)
        a = ledger.live_bytes
        out.sum().backward()
    return {"parameters": p, "gradients": p, "optimizer_state": 2 * p, "activations": a, "total": 4 * p + a}
''', {"estimate-parameters"}, False),
    ],
    "largest": [
        ("a linear search upwards", '''
def largest_batch(try_step, low, high):
    best = None
    for batch in range(low, high + 1):
        try:
            try_step(batch)
        except torch.OutOfMemoryError:
            break
        best = batch
    return best
''', {"largest-answer", "largest-tries"}, False),
        ("keeps the last error for the report", _BISECTION.replace(
            "except torch.OutOfMemoryError:\n", "except torch.OutOfMemoryError as error:\n"
            "            largest_batch.last_error = error\n"), {"largest-answer", "largest-memory"}, False),
        ("every exception means too big", _BISECTION.replace("except torch.OutOfMemoryError:", "except Exception:"),
         {"largest-other-errors"}, False),
        ("returns the first size that does not fit", '''
def largest_batch(try_step, low, high):
    while low < high:
        batch = (low + high) // 2
        try:
            try_step(batch)
            low = batch + 1
        except torch.OutOfMemoryError:
            high = batch
    return low
''', {"largest-answer"}, False),
    ],
    "leak": [
        ("the loop as it was", _LOOP_HEAD + '''
        train_losses.append(loss)
    for x, y in val_batches:
        val_losses.append(nn.functional.mse_loss(model(x), y))
    return train_losses, val_losses
''', {"leak-kept", "leak-eval"}, True),
        ("item() everywhere, but no no_grad for evaluation", _LOOP_HEAD + '''
        train_losses.append(loss.item())
    for x, y in val_batches:
        val_losses.append(nn.functional.mse_loss(model(x), y).item())
    return train_losses, val_losses
''', {"leak-eval"}, False),
        ("no_grad for evaluation, the training losses kept", _LOOP_HEAD + '''
        train_losses.append(loss)
    with torch.no_grad():
        for x, y in val_batches:
            val_losses.append(nn.functional.mse_loss(model(x), y))
    return train_losses, val_losses
''', {"leak-kept"}, False),
        ("a running total instead of the losses", _LOOP_HEAD + '''
        train_losses.append(loss.item())
    with torch.no_grad():
        total = sum(nn.functional.mse_loss(model(x), y).item() for x, y in val_batches)
    return train_losses, [total / len(val_batches)]
''', {"leak-same"}, False),
    ],
}
