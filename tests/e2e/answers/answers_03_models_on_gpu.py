"""Answers students write for lesson 03's exercises (see test_answers.py)."""

_BLOCK_FORWARD = """
    def forward(self, x):
        tokens = x.shape[1]
        scores = (x * self.scale) @ x.transpose(1, 2)
        scores = scores.masked_fill(~self.mask[:tokens, :tokens], float("-inf"))
        return self.proj(scores.softmax(dim=-1) @ x)
"""

_FIND = """
def find_unregistered(module):
    found = []
    for prefix, submodule in module.named_modules():
        for name, value in vars(submodule).items():
            if isinstance(value, torch.Tensor):
                found.append(f"{prefix}.{name}" if prefix else name)
    return sorted(found)
"""


def _block(scale: str, mask: str) -> str:
    return (
        _FIND
        + f"""

class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        {scale}
        {mask}
"""
        + _BLOCK_FORWARD
    )


_SAVE = """
def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
"""

_TRAIN_HEAD = """
from torch.utils.data import DataLoader


def train(model, dataset, loss_fn, device, epochs=3, batch_size=64, lr=0.05, num_workers=0):
    device = torch.device(device)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
"""

RIGHT = {
    "buffers": [
        (
            "recursion over children, nn.Buffer",
            """
def find_unregistered(module, prefix=""):
    names = [prefix + name for name, value in module.__dict__.items() if isinstance(value, torch.Tensor)]
    for child_name, child in module.named_children():
        names += find_unregistered(child, prefix + child_name + ".")
    return sorted(names)


class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.scale = nn.Buffer(torch.full((width,), width ** -0.5))
        self.mask = nn.Buffer(torch.tril(torch.ones(context, context)).bool(), persistent=False)
"""
            + _BLOCK_FORWARD,
        ),
        (
            "a frozen Parameter for scale",
            _block(
                "self.scale = nn.Parameter(torch.full((width,), width ** -0.5), requires_grad=False)",
                'self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)',
            ),
        ),
    ],
    "checkpoint": [
        (
            "to the CPU first, as lesson 03 advises",
            _SAVE
            + """

def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
""",
        ),
        (
            "other keys, a map_location function, weights_only said out loud",
            """
def save_checkpoint(path, model, optimizer, epoch):
    state = {"model_state": model.state_dict(), "optim_state": optimizer.state_dict(), "epoch": int(epoch)}
    torch.save(state, str(path))


def load_checkpoint(path, model, optimizer, device):
    state = torch.load(path, map_location=lambda storage, location: storage, weights_only=True)
    model.load_state_dict(state["model_state"])
    optimizer.load_state_dict(state["optim_state"])
    model.to(device)
    return state["epoch"]
""",
        ),
    ],
    "model-device": [
        (
            "itertools.chain",
            """
import itertools

def model_device(model):
    devices = {tensor.device for tensor in itertools.chain(model.parameters(), model.buffers())}
    if len(devices) > 1:
        raise ValueError("the model's tensors are on " + ", ".join(sorted(map(str, devices))))
    return next(iter(devices)) if devices else None
""",
        ),
        (
            "a loop and a list",
            """
def model_device(model):
    seen = []
    for tensor in list(model.parameters()) + list(model.buffers()):
        if tensor.device not in seen:
            seen.append(tensor.device)
    if not seen:
        return None
    if len(seen) != 1:
        raise ValueError(f"model on several devices: {seen}")
    return seen[0]
""",
        ),
    ],
    "train-loop": [
        (
            "float() once per epoch, torch.cuda.is_available()",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=torch.cuda.is_available() and device.type == "cuda" and num_workers > 0)
    history = []
    for epoch in range(epochs):
        running = torch.zeros((), device=device)
        for inputs, targets in loader:
            inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            running = running + loss.detach() * inputs.size(0)
        history.append(float(running / len(dataset)))
    return history
""",
        ),
        (
            "one read at the very end, positional loader arguments",
            _TRAIN_HEAD
            + """
    use_pinned = str(device).startswith("cuda") and num_workers > 0
    loader = torch.utils.data.DataLoader(dataset, batch_size, True, num_workers=num_workers, pin_memory=use_pinned)
    epoch_means = []
    for _ in range(epochs):
        total, count = torch.zeros((), device=device), 0
        for x, y in loader:
            x, y = x.to(device, non_blocking=use_pinned), y.to(device, non_blocking=use_pinned)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(x)
            count += len(x)
        epoch_means.append(total / count)
    return torch.stack(epoch_means).tolist()
""",
        ),
    ],
}

_RIGHT_MORE = {
    "buffers": [
        (
            "__dict__ and a join, buffers written by keyword",
            """
def find_unregistered(module):
    names = []
    for path, sub in module.named_modules():
        names.extend(".".join(part for part in (path, attr) if part)
                     for attr, value in sub.__dict__.items() if torch.is_tensor(value))
    names.sort()
    return names


class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.register_buffer(name="scale", tensor=torch.ones(width) * width ** -0.5, persistent=True)
        causal = torch.ones(context, context, dtype=torch.bool).tril()
        self.register_buffer(name="mask", tensor=causal, persistent=False)

    def forward(self, x):
        n = x.size(1)
        attention = torch.bmm(x * self.scale, x.transpose(1, 2))
        attention = attention.masked_fill(self.mask[:n, :n].logical_not(), float("-inf"))
        return self.proj(torch.softmax(attention, dim=-1).bmm(x))
""",
        ),
    ],
    "checkpoint": [
        (
            "from torch import save, load; straight to the device",
            """
from torch import load, save


def save_checkpoint(path, model, optimizer, epoch):
    save(dict(epoch=epoch, model=model.state_dict(), optim=optimizer.state_dict()), path)


def load_checkpoint(path, model, optimizer, device):
    data = load(path, map_location=torch.device(device))
    model.load_state_dict(data["model"])
    optimizer.load_state_dict(data["optim"])
    return data["epoch"]
""",
        ),
    ],
    "model-device": [
        (
            "named_parameters and named_buffers, a message listing each",
            """
def model_device(model):
    where = {}
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        where.setdefault(tensor.device, []).append(name)
    if len(where) == 0:
        return None
    if len(where) == 1:
        (device,) = where
        return device
    raise ValueError("tensors on several devices: " + "; ".join(f"{d}: {names}" for d, names in where.items()))
""",
        ),
    ],
    "train-loop": [
        (
            "pins on CUDA with or without workers, non_blocking copies of pinned batches",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda")
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
        ),
        (
            "never pins, non_blocking copies from pageable memory on CUDA",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers)
    asynchronous = device.type == "cuda"
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x = x.to(device, non_blocking=asynchronous)
            y = y.to(device, non_blocking=asynchronous)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
        ),
        (
            "a sampler of its own, a sum of losses and a count",
            """
from torch.utils.data import DataLoader, RandomSampler


def train(model, dataset, loss_fn, device, epochs=3, batch_size=64, lr=0.05, num_workers=0):
    device = torch.device(device)
    model = model.to(device)
    opt = torch.optim.SGD(params=model.parameters(), lr=lr)
    pin = device.type == "cuda" and num_workers > 0
    loader = DataLoader(dataset, batch_size=batch_size, sampler=RandomSampler(dataset), num_workers=num_workers,
                        pin_memory=pin)
    means = []
    for epoch in range(epochs):
        loss_sum = torch.tensor(0.0, device=device)
        seen = 0
        for inputs, targets in loader:
            inputs = inputs.to(device)
            targets = targets.to(device)
            opt.zero_grad(set_to_none=True)
            batch_loss = loss_fn(model(inputs), targets)
            batch_loss.backward()
            opt.step()
            loss_sum += batch_loss.detach() * targets.shape[0]
            seen += targets.shape[0]
        means.append(float((loss_sum / seen).cpu()))
    return means
""",
        ),
    ],
}
for _exercise, _answers in _RIGHT_MORE.items():
    RIGHT[_exercise].extend(_answers)

WRONG = {
    "buffers": [
        (
            "in the order found, not sorted",
            """
def find_unregistered(module):
    found = []
    for prefix, submodule in module.named_modules():
        for name, value in vars(submodule).items():
            if isinstance(value, torch.Tensor):
                found.append(f"{prefix}.{name}" if prefix else name)
    return found


class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.register_buffer("scale", torch.full((width,), width ** -0.5))
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)
"""
            + _BLOCK_FORWARD,
            "sorted-plain",
            False,
        ),
        (
            "every tensor attribute, parameters and buffers too",
            """
def find_unregistered(module):
    found = []
    for prefix, submodule in module.named_modules():
        for name in dir(submodule):
            if isinstance(getattr(submodule, name, None), torch.Tensor):
                found.append(f"{prefix}.{name}" if prefix else name)
    return sorted(found)


class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.register_buffer("scale", torch.full((width,), width ** -0.5))
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)
"""
            + _BLOCK_FORWARD,
            "sorted-plain",
            False,
        ),
        (
            "does not look inside submodules",
            """
def find_unregistered(module):
    return sorted(name for name, value in vars(module).items() if isinstance(value, torch.Tensor))


class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.register_buffer("scale", torch.full((width,), width ** -0.5))
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)
"""
            + _BLOCK_FORWARD,
            "submodules",
            False,
        ),
        (
            "forgets to scale in forward",
            _FIND
            + """

class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.register_buffer("scale", torch.full((width,), width ** -0.5))
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)

    def forward(self, x):
        tokens = x.shape[1]
        scores = x @ x.transpose(1, 2)
        scores = scores.masked_fill(~self.mask[:tokens, :tokens], float("-inf"))
        return self.proj(scores.softmax(dim=-1) @ x)
""",
            "same-block",
            False,
        ),
        (
            "scale left a plain tensor",
            _block(
                "self.scale = torch.full((width,), width ** -0.5)",
                'self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)',
            ),
            "scale-kept",
            False,
        ),
        (
            "scale becomes a trained Parameter",
            _block(
                "self.scale = nn.Parameter(torch.full((width,), width ** -0.5))",
                'self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)',
            ),
            "scale-frozen",
            True,
        ),
        (
            "mask left a plain tensor",
            _block(
                'self.register_buffer("scale", torch.full((width,), width ** -0.5))',
                "self.mask = torch.tril(torch.ones(context, context)).bool()",
            ),
            "mask-moved",
            False,
        ),
        (
            "mask saved in checkpoints",
            _block(
                'self.register_buffer("scale", torch.full((width,), width ** -0.5))',
                'self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool())',
            ),
            "mask-not-saved",
            False,
        ),
    ],
    "checkpoint": [
        (
            "the optimizer in a second file",
            """
def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "epoch": epoch}, path)
    torch.save(optimizer.state_dict(), str(path) + ".optim")


def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path, map_location=device)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(torch.load(str(path) + ".optim", map_location=device))
    return checkpoint["epoch"]
""",
            "one-file",
            False,
        ),
        (
            "forgets to return the epoch",
            _SAVE
            + """

def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path, map_location=device)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
""",
            "returns-epoch",
            False,
        ),
        (
            "saves the optimizer but never restores it",
            _SAVE
            + """

def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path, map_location=device)
    model.load_state_dict(checkpoint["model"])
    return checkpoint["epoch"]
""",
            "restores-both",
            False,
        ),
        (
            "no map_location",
            _SAVE
            + """

def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
""",
            "any-device",
            True,
        ),
        (
            "pickles the whole model",
            """
def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model, "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path, map_location=device, weights_only=False)
    model.load_state_dict(checkpoint["model"].state_dict())
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
""",
            "weights-only",
            False,
        ),
    ],
    "model-device": [
        (
            "the device's type, not the device",
            """
def model_device(model):
    kinds = {t.device.type for t in [*model.parameters(), *model.buffers()]}
    if not kinds:
        return None
    if len(kinds) > 1:
        raise ValueError(f"the model is spread over {sorted(kinds)}")
    return torch.device(kinds.pop())
""",
            "one-device",
            False,
        ),
        (
            "a string, not a torch.device",
            """
def model_device(model):
    devices = {str(t.device) for t in [*model.parameters(), *model.buffers()]}
    if not devices:
        return None
    if len(devices) > 1:
        raise ValueError(f"the model is spread over {sorted(devices)}")
    return devices.pop()
""",
            "a-torch-device",
            False,
        ),
        (
            "parameters only",
            """
def model_device(model):
    devices = {p.device for p in model.parameters()}
    if not devices:
        return None
    if len(devices) > 1:
        raise ValueError(f"the model is spread over {sorted(map(str, devices))}")
    return devices.pop()
""",
            "and-buffers",
            False,
        ),
        (
            "stops at the first tensor elsewhere, naming two devices",
            """
def model_device(model):
    first = None
    for tensor in [*model.parameters(), *model.buffers()]:
        if first is None:
            first = tensor.device
        elif tensor.device != first:
            raise ValueError(f"the model is on {first} and on {tensor.device}")
    return first if first is None else torch.device(first)
""",
            "spread",
            False,
        ),
        (
            "a RuntimeError, not a ValueError",
            """
def model_device(model):
    devices = {t.device for t in [*model.parameters(), *model.buffers()]}
    if not devices:
        return None
    if len(devices) > 1:
        raise RuntimeError(f"the model is spread over {sorted(map(str, devices))}")
    return devices.pop()
""",
            "spread",
            False,
        ),
        (
            "no tensors: StopIteration",
            """
def model_device(model):
    tensors = [*model.parameters(), *model.buffers()]
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise ValueError(f"the model is spread over {sorted(map(str, devices))}")
    return next(iter(tensors)).device
""",
            "none",
            False,
        ),
        (
            "asks the first parameter",
            """
def model_device(model):
    return next(model.parameters()).device
""",
            ("and-buffers", "spread"),
            False,
        ),
    ],
    "train-loop": [
        (
            "Adam, not SGD",
            _TRAIN_HEAD.replace("torch.optim.SGD", "torch.optim.Adam")
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            "sgd-lr",
            False,
        ),
        (
            "learning rate fixed at 0.05",
            _TRAIN_HEAD.replace("lr=lr)", "lr=0.05)")
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            "sgd-lr",
            False,
        ),
        (
            "does not shuffle",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            "loader",
            False,
        ),
        (
            "the loader's default batch size (1): 32 SGD steps where one was due",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            ("loader", "sgd-lr"),
            False,
        ),
        (
            "pins on every device",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers, pin_memory=True)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            "pin",
            False,
        ),
        (
            "pins whenever CUDA is there and workers run",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=torch.cuda.is_available() and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            "pin",
            False,
        ),
        (
            "batches left on the host",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            "batches-moved",
            False,
        ),
        (
            "never steps",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            total += loss.detach() * len(y)
        history.append((total / len(dataset)).item())
    return history
""",
            "step",
            False,
        ),
        (
            "the mean of the batch means",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        batch_losses = []
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batch_losses.append(loss.detach())
        history.append(torch.stack(batch_losses).mean().item())
    return history
""",
            "mean-per-sample",
            False,
        ),
        (
            "divides by batches times batch_size",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * batch_size
        history.append((total / (len(loader) * batch_size)).item())
    return history
""",
            "mean-per-sample",
            False,
        ),
        (
            ".to('cpu') every batch",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach().to("cpu")) * len(y)
        history.append(total / len(dataset))
    return history
""",
            "kept-on-device",
            True,
        ),
        (
            ".item() every batch",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
            if loss.item() > 1e6:
                raise RuntimeError("diverged")
        history.append((total / len(dataset)).item())
    return history
""",
            "one-read",
            False,
        ),
        (
            "0-d tensors, not floats",
            _TRAIN_HEAD
            + """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        pin_memory=device.type == "cuda" and num_workers > 0)
    history = []
    for _ in range(epochs):
        total = torch.zeros((), device=device)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(y)
        history.append(total / len(dataset))
    return history
""",
            "floats",
            False,
        ),
    ],
}

EDGES = {
    "buffers": [
        (
            "no submodules, no tensors; a context of one token",
            """
assert find_unregistered(nn.Module()) == [] and find_unregistered(nn.ReLU()) == []
block = FixedBlock(4, context=1)
assert block(torch.randn(2, 1, 4)).shape == (2, 1, 4)
assert sorted(block.state_dict()) == ["proj.bias", "proj.weight", "scale"]
""",
        ),
    ],
    "checkpoint": [
        (
            "epoch 0 and a path given as a string",
            """
import tempfile
with tempfile.TemporaryDirectory(prefix="gpulab-03-edge-") as folder:
    model = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    save_checkpoint(folder + "/zero.pt", model, optimizer, 0)
    assert load_checkpoint(folder + "/zero.pt", nn.Linear(2, 2), torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1), "cpu") == 0
""",
        ),
    ],
    "model-device": [
        (
            "no tensors, only a buffer, two devices",
            """
assert model_device(nn.ReLU()) is None and model_device(nn.Sequential()) is None
holder = nn.Module()
holder.register_buffer("b", torch.zeros(1))
assert model_device(holder) == torch.device("cpu")
try:
    model_device(nn.Sequential(nn.Linear(1, 1), nn.Linear(1, 1).to("meta")))
except ValueError as error:
    assert "cpu" in str(error) and "meta" in str(error)
else:
    raise AssertionError("no ValueError")
""",
        ),
    ],
    "train-loop": [
        (
            "fewer samples than a batch, a remainder, no epochs",
            """
torch.manual_seed(0)
gen = torch.Generator().manual_seed(0)
xs, ys = torch.randn(10, 3, generator=gen), torch.randn(10, 1, generator=gen)
data = torch.utils.data.TensorDataset(xs, ys)
model = nn.Linear(3, 1)
expected = nn.MSELoss()(model(xs), ys).item()
assert abs(train(model, data, nn.MSELoss(), "cpu", epochs=1, batch_size=64, lr=0.0)[0] - expected) < 1e-6
model = nn.Linear(3, 1)
expected = nn.MSELoss()(model(xs), ys).item()
assert abs(train(model, data, nn.MSELoss(), "cpu", epochs=1, batch_size=3, lr=0.0)[0] - expected) < 1e-6
assert train(nn.Linear(3, 1), data, nn.MSELoss(), "cpu", epochs=0) == []
""",
        ),
    ],
}
