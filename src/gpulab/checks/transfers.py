"""What crossed between host and GPU: the records exercise checks grade behaviour with.

A check runs a student's code inside :class:`TransferRecorder` and looks at what it did, however it
was written: how often a training loop read values back to the host, whether a batch was made on
the GPU or copied there, whether a copy's source was pinned::

    with TransferRecorder() as gpu:
        run_and_log(50, "cuda")
    assert len(gpu.reads) == 1

On a machine without a GPU, the block runs on a simulated GPU (a T4 unless told otherwise, see
:mod:`gpulab.simulated`): tensors on ``"cuda"`` hold real values computed on the CPU, so the
code runs as it would on a GPU, and the machine is switched off again when the block ends. Where
a GPU, or a simulated CUDA machine of ``GPULAB_SIMULATE``, is already there, the block records on it; a
simulated Mac gives way to a simulated T4 for the block (on a real Mac, CUDA simulated beside MPS is
the accelerator torch picks).
The same check therefore grades the same way on a laptop, in the grader's sandbox and on a GPU.

Recorded while the block runs:

- :attr:`reads`: every read of a GPU tensor's values on the host: ``.item()``, ``float()``,
  ``bool()``, ``.tolist()``, ``.cpu()``, ``.to("cpu")``, ``copy_`` into a host tensor,
  ``torch.tensor([...])`` of GPU tensors, printing and formatting; reading the host copy
  afterwards is free;
- :attr:`copies`: every host→GPU copy, with its size, whether its source was pinned and whether
  it was ``non_blocking``;
- :attr:`syncs`: calls of ``torch.cuda.synchronize`` and ``torch.accelerator.synchronize``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .replace import everywhere

__all__ = ["Copy", "FACTORY_OPS", "Read", "TransferRecorder", "aten_ops"]

if not torch.cuda.is_available():
    # Before the answer under check runs its first backward (see native.prepare): a check imports this.
    from ..simulated import native

    native.prepare(replace=torch.backends.cuda.is_built())

# aten operators that make a new tensor from nothing: what a timed function should not call.
FACTORY_OPS = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "rand",
        "rand_like",
        "randn",
        "randn_like",
        "randint",
        "randint_like",
        "randperm",
        "arange",
        "linspace",
        "normal",
        "scalar_tensor",
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "tensor",
    }
)


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


def _on_gpu(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "cuda"


def _on_host(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "cpu"


class _Operations(TorchDispatchMode):
    """Sees every operation below autograd: the reads and copies among them are recorded."""

    def __init__(self, gpu: TransferRecorder):
        super().__init__()
        self.gpu = gpu

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.gpu._formatting:
            self._record(func, args, kwargs)
        return func(*args, **kwargs)

    def _record(self, func, args, kwargs) -> None:
        name = func.overloadpacket.__name__
        gpu = self.gpu
        if name == "_local_scalar_dense" and _on_gpu(args[0]):
            gpu._read("item", args[0])
        elif name == "_to_copy" and kwargs.get("device") is not None:
            target = torch.device(kwargs["device"])
            if target.type == "cpu" and _on_gpu(args[0]):
                gpu._read("copy to host", args[0])
            elif target.type == "cuda" and _on_host(args[0]):
                gpu._copy(args[0], kwargs.get("non_blocking", False))
        elif name == "copy_" and len(args) > 1:
            if _on_host(args[0]) and _on_gpu(args[1]):
                gpu._read("copy to host", args[1])
            elif _on_gpu(args[0]) and _on_host(args[1]):
                gpu._copy(args[1], args[2] if len(args) > 2 else kwargs.get("non_blocking", False))


class _Formatting(TorchFunctionMode):
    """Printing a GPU tensor, and ``torch.tensor`` of GPU tensors: one read each, however many ops."""

    def __init__(self, gpu: TransferRecorder):
        super().__init__()
        self.gpu = gpu

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        gpu = self.gpu
        if func in (torch.Tensor.__repr__, torch.Tensor.__str__, torch.Tensor.__format__) and _on_gpu(args[0]):
            gpu._read("print", args[0])
            return gpu._quietly(func, args, kwargs)
        if func is torch.tensor and _holds_gpu_tensors(args[0] if args else kwargs.get("data")):
            for tensor in _gpu_tensors(args[0] if args else kwargs.get("data")):
                gpu._read("item", tensor)
            return gpu._quietly(func, args, kwargs)
        return func(*args, **kwargs)


def _holds_gpu_tensors(data: Any) -> bool:
    return any(True for _ in _gpu_tensors(data))


def _gpu_tensors(data: Any):
    if isinstance(data, (list, tuple)):
        for item in data:
            yield from _gpu_tensors(item)
    elif _on_gpu(data):
        yield data


class TransferRecorder:
    """A context manager that records what crosses between host and GPU (see the module).

    ``machine`` names the simulated machine to run on where there is no GPU (``"t4"``, ``"2xh100"`` …).
    """

    def __init__(self, machine: str = "t4"):
        self.machine = machine
        self.reads: list[Read] = []
        self.copies: list[Copy] = []
        self.syncs = 0
        self._formatting = 0
        self._stack: contextlib.ExitStack | None = None

    # -- recording

    def _read(self, how: str, tensor: torch.Tensor) -> None:
        self.reads.append(Read(how, tuple(tensor.shape)))

    def _copy(self, source: torch.Tensor, non_blocking: bool) -> None:
        self.copies.append(
            Copy(
                tuple(source.shape),
                source.numel() * source.element_size(),
                bool(source.is_pinned()),
                bool(non_blocking),
            )
        )

    def _quietly(self, func, args, kwargs):
        self._formatting += 1
        try:
            return func(*args, **kwargs)
        finally:
            self._formatting -= 1

    def _counting(self, synchronize: Callable) -> Callable:
        def counted(*args, **kwargs):
            self.syncs += 1
            return synchronize(*args, **kwargs)

        return counted

    # -- entering and leaving

    def __enter__(self) -> TransferRecorder:
        from ..simulated import install

        stack = contextlib.ExitStack()
        if not torch.cuda.is_available():
            mac = install.running()
            if mac is not None and mac.device_type == "mps":  # a simulated Mac gives way for the block
                install.stop()
                stack.callback(install.resume, mac)
            install.start(self.machine)
            stack.callback(install.stop)
        # Counted wherever code finds them: `from torch.cuda import synchronize` taken before counts too.
        stack.enter_context(everywhere(torch.cuda, "synchronize", self._counting(torch.cuda.synchronize), main=True))
        accelerator = getattr(torch, "accelerator", None)
        if accelerator is not None and hasattr(accelerator, "synchronize"):
            stack.enter_context(
                everywhere(accelerator, "synchronize", self._counting(accelerator.synchronize), main=True)
            )
        stack.enter_context(_Operations(self))
        stack.enter_context(_Formatting(self))
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
