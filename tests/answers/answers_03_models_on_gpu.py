"""Answers students write for lesson 03's exercises (see test_answers.py)."""

_BLOCK_FORWARD = '''
    def forward(self, x):
        tokens = x.shape[1]
        scores = (x * self.scale) @ x.transpose(1, 2)
        scores = scores.masked_fill(~self.mask[:tokens, :tokens], float("-inf"))
        return self.proj(scores.softmax(dim=-1) @ x)
'''

_FIND = '''
def find_unregistered(module):
    found = []
    for prefix, submodule in module.named_modules():
        for name, value in vars(submodule).items():
            if isinstance(value, torch.Tensor):
                found.append(f"{prefix}.{name}" if prefix else name)
    return sorted(found)
'''


def _block(scale: str, mask: str) -> str:
    return _FIND + f'''

class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        {scale}
        {mask}
''' + _BLOCK_FORWARD


_SAVE = '''
def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
'''

_TRAIN_HEAD = '''
from torch.utils.data import DataLoader


def train(model, dataset, loss_fn, device, epochs=3, batch_size=64, lr=0.05, num_workers=0):
    device = torch.device(device)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
'''

RIGHT = {
    "buffers": [
        ("recursion over children, nn.Buffer", '''
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
''' + _BLOCK_FORWARD),
        ("a frozen Parameter for scale", _block(
            'self.scale = nn.Parameter(torch.full((width,), width ** -0.5), requires_grad=False)',
            'self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)')),
    ],
    "checkpoint": [
        ("to the CPU first, as lesson 03 advises", _SAVE + '''

def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
'''),
        ("other keys, a map_location function, weights_only said out loud", '''
def save_checkpoint(path, model, optimizer, epoch):
    state = {"model_state": model.state_dict(), "optim_state": optimizer.state_dict(), "epoch": int(epoch)}
    torch.save(state, str(path))


def load_checkpoint(path, model, optimizer, device):
    state = torch.load(path, map_location=lambda storage, location: storage, weights_only=True)
    model.load_state_dict(state["model_state"])
    optimizer.load_state_dict(state["optim_state"])
    model.to(device)
    return state["epoch"]
'''),
    ],
    "model-device": [
        ("itertools.chain", '''
import itertools

def model_device(model):
    devices = {tensor.device for tensor in itertools.chain(model.parameters(), model.buffers())}
    if len(devices) > 1:
        raise ValueError("the model's tensors are on " + ", ".join(sorted(map(str, devices))))
    return next(iter(devices)) if devices else None
'''),
        ("a loop and a list", '''
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
'''),
    ],
    "train-loop": [
        ("float() once per epoch, torch.cuda.is_available()", _TRAIN_HEAD + '''
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
'''),
        ("one read at the very end, positional loader arguments", _TRAIN_HEAD + '''
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
'''),
    ],
}

WRONG = {
    "buffers": [
        ("scale becomes a trained Parameter", _block(
            'self.scale = nn.Parameter(torch.full((width,), width ** -0.5))',
            'self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)'),
         {"buffers-not-learned"}, True),
        ("mask saved in checkpoints", _block(
            'self.register_buffer("scale", torch.full((width,), width ** -0.5))',
            'self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool())'),
         {"buffers-saved"}, False),
        ("does not look inside submodules", '''
def find_unregistered(module):
    return sorted(name for name, value in vars(module).items() if isinstance(value, torch.Tensor))


class FixedBlock(nn.Module):
    def __init__(self, width, context=16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.register_buffer("scale", torch.full((width,), width ** -0.5))
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).bool(), persistent=False)
''' + _BLOCK_FORWARD, {"buffers-find-nested"}, False),
    ],
    "checkpoint": [
        ("no map_location", _SAVE + '''

def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
''', {"checkpoint-travels"}, True),
        ("pickles the whole model", '''
def save_checkpoint(path, model, optimizer, epoch):
    torch.save({"model": model, "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def load_checkpoint(path, model, optimizer, device):
    checkpoint = torch.load(path, map_location=device, weights_only=False)
    model.load_state_dict(checkpoint["model"].state_dict())
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
''', {"checkpoint-optimizer"}, False),
    ],
    "model-device": [
        ("asks the first parameter", '''
def model_device(model):
    return next(model.parameters()).device
''', {"model-device-one", "model-device-mixed"}, False),
    ],
    "train-loop": [
        (".to('cpu') every batch", _TRAIN_HEAD + '''
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
''', {"train-loop-reads"}, True),
        ("pins without workers", _TRAIN_HEAD + '''
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
''', {"train-loop-loader"}, False),
        ("the mean of the batch means", _TRAIN_HEAD + '''
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
''', {"train-loop-mean-per-sample"}, False),
    ],
}
