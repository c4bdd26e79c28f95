"""A CUDA GPU simulated on any machine, to see what code does with one.

Exercise checks use it to grade behaviour rather than phrasing: how often a training loop reads
values back to the host, whether a batch was made on the device or copied there, whether a
copy's source was pinned — on a laptop as on a GPU machine, however the student wrote it::

    with SimulatedGPU() as gpu:
        run_and_log(50, "cuda")
    assert len(gpu.reads) == 1

Inside the ``with`` block:

- tensors made for, or moved to, ``"cuda"`` (a name, a ``torch.device``, ``.cuda()``) live on
  the meta device: shapes and dtypes, no memory, no values;
- ``torch.cuda`` and ``torch.accelerator`` say this machine has one CUDA GPU;
- every read of a GPU tensor's values on the host is recorded in :attr:`reads` and gives zeros:
  ``.item()``, ``float()``, ``bool()``, ``.tolist()``, ``.cpu()``, ``.to("cpu")``, ``copy_`` into
  a host tensor, ``torch.tensor([...])`` of GPU tensors, printing and formatting;
- every host→GPU copy is recorded in :attr:`copies`, with whether its source was pinned and
  whether it was ``non_blocking``;
- host memory can be "pinned" (``pin_memory()``, ``pin_memory=True``): the tensor is recorded
  in :attr:`pinned` and answers ``is_pinned()``, and no real page locking happens.

Values computed on the simulated GPU are meaningless: check values with a real run, and use the
simulation for what happens between host and device. ``.numpy()`` of a GPU tensor raises, as it
does on a real GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from typing import Any, Callable
from unittest import mock

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["Copy", "FACTORY_OPS", "Read", "SimulatedGPU", "aten_ops"]

GPU = torch.device("cuda", 0)
META = torch.device("meta")

# aten operators that make a new tensor from nothing: what a timed function should not call.
FACTORY_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm", "arange", "linspace",
    "normal", "scalar_tensor", "new_empty", "new_zeros", "new_ones", "new_full", "tensor",
})


@dataclasses.dataclass(frozen=True)
class Read:
    """Values of a GPU tensor read on the host: ``how`` (``"item"``, ``"copy to host"``, ``"print"`` …)."""

    how: str
    shape: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Copy:
    """A host→GPU copy of ``nbytes``; ``pinned``: its source was pinned host memory."""

    shape: tuple[int, ...]
    nbytes: int
    pinned: bool
    non_blocking: bool


def _is_gpu_name(value: Any) -> bool:
    if isinstance(value, torch.device):
        return value.type == "cuda"
    return isinstance(value, str) and value.split(":")[0] == "cuda"


def _on_gpu(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "meta"


def _zero_scalar(dtype: torch.dtype):
    if dtype == torch.bool:
        return False
    if dtype.is_complex:
        return 0j
    return 0.0 if dtype.is_floating_point else 0


class _Reads(TorchDispatchMode):
    """Turns every transfer of simulated-GPU values to the host into a recorded read of zeros."""

    def __init__(self, gpu: "SimulatedGPU"):
        super().__init__()
        self.gpu = gpu

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        self.gpu.ops.append(name)
        if name == "_local_scalar_dense" and _on_gpu(args[0]):
            self.gpu._read("item", args[0])
            return _zero_scalar(args[0].dtype)
        if name == "_to_copy" and _on_gpu(args[0]) and kwargs.get("device") is not None \
                and torch.device(kwargs["device"]).type == "cpu":
            self.gpu._read("copy to host", args[0])
            return torch.zeros(args[0].shape, dtype=kwargs.get("dtype") or args[0].dtype)
        if name == "copy_" and _on_gpu(args[1]) and isinstance(args[0], torch.Tensor) and args[0].device.type == "cpu":
            self.gpu._read("copy to host", args[1])
            return args[0].zero_()
        return func(*args, **kwargs)


class _Redirect(TorchFunctionMode):
    """Sends tensors meant for the GPU to the meta device; records pinning, copies and printing."""

    def __init__(self, gpu: "SimulatedGPU"):
        super().__init__()
        self.gpu = gpu

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        gpu = self.gpu
        if func is torch.device:  # naming a device is not making anything: "cuda" stays "cuda"
            return func(*args, **kwargs)
        if func in (torch.Tensor.__repr__, torch.Tensor.__str__, torch.Tensor.__format__) and _on_gpu(args[0]):
            gpu._read("print", args[0])
            host = torch.zeros(args[0].shape, dtype=args[0].dtype)
            if func is torch.Tensor.__format__:
                spec = args[1] if len(args) > 1 else ""
                return format(host.item(), spec) if host.dim() == 0 else format(repr(host), spec)
            return func(host)
        if func is torch.Tensor.is_pinned:
            return gpu.is_pinned(args[0])
        if func is torch.Tensor.pin_memory:
            return gpu._pin(args[0].clone())
        if func is torch.tensor and _holds_gpu_tensors(args[0] if args else kwargs.get("data")):
            data = args[0] if args else kwargs.pop("data")
            return torch.tensor(_read_nested(gpu, data), *args[1:], **kwargs)
        if func is torch.Tensor.cuda:
            source = args[0]
            func, args = torch.Tensor.to, (source, META)
            kwargs = {"non_blocking": kwargs.get("non_blocking", False)}
        pin = kwargs.pop("pin_memory", False) if "pin_memory" in kwargs else False
        if "device" in kwargs and _is_gpu_name(kwargs["device"]):
            kwargs["device"] = META
        args = tuple(META if _is_gpu_name(a) else a for a in args)
        if func is torch.Tensor.to:
            gpu._maybe_copy(args[0], _target_device(args[1:], kwargs), kwargs.get("non_blocking", False))
        elif func is torch.Tensor.copy_ and len(args) > 1:
            gpu._maybe_copy(args[1], args[0].device, args[2] if len(args) > 2 else kwargs.get("non_blocking", False))
        result = func(*args, **kwargs)
        if pin and isinstance(result, torch.Tensor):
            gpu._pin(result)
        return result


def _target_device(args: tuple, kwargs: dict):
    if "device" in kwargs:
        return torch.device(kwargs["device"]) if kwargs["device"] is not None else None
    for arg in args:
        if isinstance(arg, torch.device):
            return arg
        if isinstance(arg, str):
            return torch.device(arg)
        if isinstance(arg, torch.Tensor):
            return arg.device
    return None


def _holds_gpu_tensors(data: Any) -> bool:
    if isinstance(data, (list, tuple)):
        return any(_holds_gpu_tensors(item) for item in data)
    return _on_gpu(data)


def _read_nested(gpu: "SimulatedGPU", data: Any):
    if isinstance(data, (list, tuple)):
        return [_read_nested(gpu, item) for item in data]
    if _on_gpu(data):
        gpu._read("item", data)
        return torch.zeros(data.shape, dtype=data.dtype).tolist()
    return data


class SimulatedGPU:
    """A context manager that makes this machine look as if it had one CUDA GPU (see the module)."""

    def __init__(self):
        self.reads: list[Read] = []
        self.copies: list[Copy] = []
        self.syncs = 0
        self.ops: list[str] = []
        self._pinned: dict[int, weakref.ref] = {}
        self._stack: contextlib.ExitStack | None = None

    # -- what was seen

    @property
    def pinned(self) -> list[torch.Tensor]:
        """The host tensors pinned inside the block that are still alive."""
        return [t for t in (ref() for ref in self._pinned.values()) if t is not None]

    def is_pinned(self, tensor: torch.Tensor) -> bool:
        ref = self._pinned.get(id(tensor))
        return ref is not None and ref() is tensor

    # -- recording

    def _read(self, how: str, tensor: torch.Tensor) -> None:
        self.reads.append(Read(how, tuple(tensor.shape)))

    def _pin(self, tensor: torch.Tensor) -> torch.Tensor:
        self._pinned[id(tensor)] = weakref.ref(tensor)
        return tensor

    def _maybe_copy(self, source: Any, target: torch.device | None, non_blocking: bool) -> None:
        if isinstance(source, torch.Tensor) and source.device.type == "cpu" and target is not None \
                and target.type == "meta":
            self.copies.append(Copy(tuple(source.shape), source.numel() * source.element_size(),
                                    self.is_pinned(source), bool(non_blocking)))

    def _sync(self, *args, **kwargs) -> None:
        self.syncs += 1

    # -- entering and leaving

    def __enter__(self) -> "SimulatedGPU":
        stack = contextlib.ExitStack()
        patches = {
            torch.cuda: {"is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: 0,
                         "synchronize": self._sync, "get_device_name": lambda *a, **k: "Simulated GPU",
                         "is_bf16_supported": lambda *a, **k: True},
        }
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None:
            patches[accelerator] = {"is_available": lambda *a, **k: True, "device_count": lambda: 1,
                                    "current_accelerator": lambda *a, **k: torch.device("cuda"),
                                    "current_device_index": lambda: 0, "synchronize": self._sync}
        for target, names in patches.items():
            for name, value in names.items():
                stack.enter_context(mock.patch.object(target, name, value, create=True))
        stack.enter_context(_Reads(self))
        stack.enter_context(_Redirect(self))
        self._stack = stack
        return self

    def __exit__(self, *exc_info) -> None:
        stack, self._stack = self._stack, None
        stack.close()


def aten_ops(work: Callable[[], Any]) -> list[str]:
    """The aten operators ``work()`` calls, in order (the top-level ones: what the code asked for).

    A check uses it to see what runs inside a timed function: ``"mm"`` for a matrix multiply,
    ``"randn"`` for a tensor made on every call (see :data:`FACTORY_OPS`).
    """
    seen: list[str] = []

    class _Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with _Ops():
        work()
    return seen
