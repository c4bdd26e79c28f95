"""Tensors on simulated GPUs: real values, computed on the CPU, on a device that says ``cuda:i``.

A tensor on a simulated GPU is a wrapper subclass (``torch.Tensor._make_wrapper_subclass``, as
FakeTensor and DTensor are) whose device is ``cuda:i`` and which holds a CPU tensor with its
values. Every operation on it reaches :meth:`CudaTensor.__torch_dispatch__` below autograd:

- the CPU computes the result, and the result is wrapped on the operands' device;
- operands on two devices are refused with PyTorch's own error (the rule is FakeTensor's,
  ``torch/_subclasses/fake_tensor.py``, ``_find_common_device``: a 0-dim CPU tensor may join a
  GPU operation, nothing else may);
- each new storage is a block of the simulated caching allocator, taken before the CPU holds its
  values where their size is known first (factories, large operands), and given back when the
  last tensor using it dies; an allocation that does not fit raises ``torch.OutOfMemoryError``;
- copies between host and device, reads of values on the host and synchronising operations are
  told to the machine's observers (the grader's records) and to ``set_sync_debug_mode``.

Tensors made for a GPU with no GPU operand (``torch.zeros(3, device="cuda")``) reach the CUDA
dispatch key, where :func:`_factory` is registered as the fallback: the same path as on a CUDA
build, so it works in every thread. Pinned host memory is ordinary host memory that PyTorch's
``is_pinned()`` knows as pinned (the CUDA hooks in ``guard.cpp``).
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

from . import runtime

__all__ = ["CudaTensor", "is_simulated"]

aten = torch.ops.aten
CPU = torch.device("cpu")
PRECHECK_BYTES = 16 * 2**20   # operands at least this large: the result's size is found on meta first


class Block:
    """One allocation of the simulated caching allocator, freed when the last tensor on it dies."""

    __slots__ = ("allocator", "allocation", "nbytes", "__weakref__")

    def __init__(self, allocator, nbytes: int):
        self.allocator = allocator
        self.nbytes = nbytes
        self.allocation = allocator.malloc(nbytes)

    @property
    def address(self) -> int:
        return getattr(self.allocation, "address", 0)

    def __del__(self):
        allocation, self.allocation = self.allocation, None
        if allocation is not None:
            _release(self.allocator, allocation)


_pending_frees: list = []
_free_lock = threading.Lock()


def _release(allocator, allocation) -> None:
    # A finaliser may run in the middle of an allocation (garbage collection can start anywhere):
    # the free is queued and done at once unless the allocator is busy, then by the next user.
    _pending_frees.append((allocator, allocation))
    drain_frees()


def drain_frees() -> None:
    if not _free_lock.acquire(blocking=False):
        return
    try:
        while _pending_frees:
            allocator, allocation = _pending_frees.pop()
            allocator.free(allocation)
    finally:
        _free_lock.release()


_blocks: "weakref.WeakValueDictionary[int, Block]" = weakref.WeakValueDictionary()


def _storage_key(inner: torch.Tensor) -> int:
    return inner.untyped_storage()._cdata


def _allocate(index: int, nbytes: int) -> Block:
    node = runtime.machine()
    with _free_lock:
        while _pending_frees:
            allocator, allocation = _pending_frees.pop()
            allocator.free(allocation)
        return Block(node.allocators[index], nbytes)


def _block_for(inner: torch.Tensor, index: int, block: Block | None = None) -> Block:
    key = _storage_key(inner)
    known = _blocks.get(key)
    nbytes = inner.untyped_storage().nbytes()
    if known is not None and known.allocator.device_index == index and known.nbytes >= nbytes:
        return known
    block = block if block is not None and block.nbytes == nbytes else _allocate(index, nbytes)
    _blocks[key] = block
    return block


class CudaTensor(torch.Tensor):
    """A tensor on a simulated GPU (see the module)."""

    _inner: torch.Tensor
    _block: Block

    @staticmethod
    def __new__(cls, inner: torch.Tensor, device: torch.device, block: Block | None = None,
                requires_grad: bool = False):
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, inner.size(), strides=inner.stride(), storage_offset=inner.storage_offset(), dtype=inner.dtype,
            layout=inner.layout, device=device, requires_grad=requires_grad)
        wrapper._inner = inner
        wrapper._block = _block_for(inner, device.index, block)
        return wrapper

    def __tensor_flatten__(self):
        return ["_inner"], self.device

    @staticmethod
    def __tensor_unflatten__(inner_tensors, device, outer_size, outer_stride):
        return CudaTensor(inner_tensors["_inner"], device)

    def __reduce_ex__(self, protocol):
        # Saved as a CUDA tensor is: its storage is tagged "cuda:i" (see gpulab.simulated.serialization).
        from .serialization import reduce_tensor
        return reduce_tensor(self, protocol)

    def __repr__(self, *, tensor_contents=None):
        # One read of the values, as printing a GPU tensor is; the reads inside the formatting are not told.
        node = runtime.machine()
        node.notify("read", "print", self)
        with node.quiet():
            text = super().__repr__(tensor_contents=tensor_contents)
        # torch/_tensor_str.py names a subclass by its class; a CUDA tensor prints as "tensor(".
        name = type(self).__name__
        for prefix, closing in ((f"Parameter({name}(", ")"), (f"{name}(", "")):
            if text.startswith(prefix):
                lines = text[len(prefix):len(text) - len(closing)].split("\n")
                # continuation lines are aligned as under f"{name}(" (a Parameter's too): under "tensor(" now
                shift = " " * (len(name) - len("tensor"))
                lines = ["tensor(" + lines[0]] + [line.removeprefix(shift) for line in lines[1:]]
                text = "\n".join(lines)
                break
        return f"Parameter containing:\n{text}" if getattr(self, "_is_param", False) else text

    def numpy(self, *, force: bool = False):
        # torch/csrc/utils/tensor_numpy.cpp, tensor_to_numpy
        raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                        f"tensor to host memory first.")

    def __format__(self, format_spec):
        if self.dim() == 0:   # as torch.Tensor.__format__ does for a plain tensor
            node = runtime.machine()
            node.notify("read", "print", self)
            with node.quiet():
                return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def tolist(self):
        node = runtime.machine()
        node.notify("read", "tolist", self)
        node.synchronizing("tolist")
        return self._inner.tolist()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad():
            copy = self.clone()
        if getattr(self, "_is_param", False):
            copy = torch.nn.Parameter(copy, self.requires_grad)
        elif self.requires_grad and self.is_leaf:
            copy.requires_grad_(True)
        if self.grad is not None:
            copy.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = copy
        return copy

    def data_ptr(self) -> int:
        return self._block.address + self.storage_offset() * self.element_size()

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


def is_simulated(value: Any) -> bool:
    """Whether ``value`` is a tensor on a simulated GPU."""
    return isinstance(value, CudaTensor)


def _wrap(inner: torch.Tensor, device: torch.device, block: Block | None = None) -> CudaTensor:
    return CudaTensor(inner, device, block)


# ----------------------------------------------------------------- which device an operation runs on

def _is_cpu_scalar(value) -> bool:
    return isinstance(value, torch.Tensor) and not isinstance(value, CudaTensor) and value.device.type == "cpu" \
        and value.dim() == 0


_MIXED_OK = {aten.copy_.default, aten._to_copy.default, aten._foreach_copy_.default, aten.index.Tensor,
             aten.index_put_.default, aten._index_put_impl_.default, aten.index_put.default, aten.set_.source_Tensor}


def _common_device(func, flat) -> torch.device:
    """The device the operation runs on; PyTorch's error when operands are on two (FakeTensor's rule)."""
    common, common_is_cpu_scalar = None, False
    for value in flat:
        if not isinstance(value, torch.Tensor):
            continue
        device, scalar = value.device, _is_cpu_scalar(value)
        if common is None:
            common, common_is_cpu_scalar = device, scalar
            continue
        if device == common:
            common_is_cpu_scalar = common_is_cpu_scalar and scalar
            continue
        if scalar:
            continue
        if common_is_cpu_scalar:
            common, common_is_cpu_scalar = device, scalar
            continue
        if func in _MIXED_OK:
            continue
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{common} and {device}!")
    return common


# ----------------------------------------------------------------- running an operation

@functools.lru_cache(maxsize=None)
def _takes_generator(func) -> bool:
    return any(argument.name == "generator" for argument in func._schema.arguments)


def _generator(index: int):
    generators = getattr(torch.cuda, "default_generators", ())
    return generators[index] if index < len(generators) else None


def _unwrap(value):
    if isinstance(value, CudaTensor):
        return value._inner
    if isinstance(value, torch.device) and value.type == "cuda":
        return CPU
    return value


def _nbytes(value) -> int:
    return value.untyped_storage().nbytes() if isinstance(value, torch.Tensor) else 0


def _meta(value):
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device="meta")
    if isinstance(value, torch.device):
        return torch.device("meta")
    return value


def _result_bytes(func, args, kwargs) -> int:
    """The bytes the operation's new tensors will take, found by running it on the meta device."""
    try:
        out = func(*tree_map(_meta, args), **tree_map(_meta, kwargs))
    except Exception:   # no meta kernel, or a data-dependent size: find out after the CPU ran it
        return 0
    leaves, _ = tree_flatten(out)
    return sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor))


def _dispatch(func, args, kwargs):
    node = runtime.machine()
    special = _SPECIAL.get(func)
    if special is not None:
        return special(node, *args, **kwargs)
    flat, _ = tree_flatten((args, kwargs))
    device = kwargs.get("device")
    if isinstance(device, torch.device) and device.type == "cpu":
        target = CPU
    else:
        target = _common_device(func, flat)
        if isinstance(device, torch.device) and device.type == "cuda":
            target = torch.device("cuda", node.check_index(device.index if device.index is not None else -1))
    if func in _SYNCHRONISING or (func is aten.index.Tensor and _has_mask(args)):
        node.synchronizing(func.__name__)
    inner_args, inner_kwargs = tree_map(_unwrap, args), tree_map(_unwrap, kwargs)
    if target.type == "cuda" and _takes_generator(func) and inner_kwargs.get("generator") is None:
        inner_kwargs["generator"] = _generator(target.index)
    block = None
    if target.type == "cuda" and sum(_nbytes(v) for v in flat) >= PRECHECK_BYTES:
        needed = _result_bytes(func, args, kwargs)
        if needed:
            block = _allocate(target.index, needed)   # raises OutOfMemoryError before the CPU works
    out = func(*inner_args, **inner_kwargs)
    return _rewrap(out, args, kwargs, inner_args, inner_kwargs, target, block)


def _rewrap(out, args, kwargs, inner_args, inner_kwargs, target, block=None):
    # An in-place operation returns its operand: give back the wrapper the caller holds.
    originals = {}
    for wrapped, inner in zip(tree_flatten((args, kwargs))[0], tree_flatten((inner_args, inner_kwargs))[0]):
        if isinstance(wrapped, torch.Tensor) and isinstance(inner, torch.Tensor):
            originals[id(inner)] = wrapped

    def rewrap(value):
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in originals:
            return originals[id(value)]
        if target.type != "cuda":
            return value
        nonlocal block
        reserved, block = block, None   # a block taken before the work goes to the first new tensor
        return _wrap(value, target, reserved)

    return tree_map(rewrap, out)


def _has_mask(args) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in (args[1] or ()))


_SYNCHRONISING = {aten.nonzero.default, aten.masked_select.default, aten._unique2.default, aten.unique_dim.default,
                  aten.unique_consecutive.default, aten.repeat_interleave.Tensor, aten.is_nonzero.default}


# ----------------------------------------------------------------- copies and reads

def _to_copy(node, source, **kwargs):
    device = kwargs.get("device") or source.device
    inner_kwargs = dict(kwargs, device=CPU)
    if device.type == "cpu":
        node.notify("read", "copy to host", source)
        if not kwargs.get("non_blocking"):
            node.synchronizing("copy to host")
        out = aten._to_copy.default(source._inner, **inner_kwargs)
        if kwargs.get("non_blocking"):
            # aten/src/ATen/native/TensorConversions.cpp, _to_copy: a non-blocking copy to the host lands in pinned memory
            out = out.pin_memory()
        return out
    index = node.check_index(device.index if device.index is not None else -1)
    dtype = kwargs.get("dtype") or source.dtype
    block = _allocate(index, source.numel() * dtype.itemsize)
    out = aten._to_copy.default(source._inner, **inner_kwargs)
    return _wrap(out, torch.device("cuda", index), block)


def _copy_(node, target, source, non_blocking=False):
    if isinstance(target, CudaTensor) and isinstance(source, CudaTensor):
        target._inner.copy_(source._inner, non_blocking)
        return target
    if isinstance(target, CudaTensor):   # host to device
        node.notify("copy", source, target, bool(non_blocking), source.is_pinned())
        if not non_blocking:
            node.synchronizing("copy to device")
        target._inner.copy_(source, non_blocking)
        return target
    node.notify("read", "copy to host", source)   # device to host
    if not non_blocking:
        node.synchronizing("copy to host")
    target.copy_(source._inner, non_blocking)
    return target


def _item(node, source):
    node.notify("read", "item", source)
    node.synchronizing("item")
    return source._inner.item()


_SPECIAL = {
    aten._to_copy.default: _to_copy,
    aten.copy_.default: _copy_,
    aten._local_scalar_dense.default: _item,
    aten.record_stream.default: lambda node, tensor, stream: None,
    aten.is_pinned.default: lambda node, tensor, device=None: False,
}


# ----------------------------------------------------------------- tensors made for a GPU

def cuda_kernels() -> dict:
    """Kernels for the CUDA key, for operations that reach it with the Python key excluded."""
    def kernel(op):
        return lambda *args, **kwargs: _dispatch(op, args, kwargs)
    return {"copy_": kernel(aten.copy_.default)}


def _factory(op, *args, **kwargs):
    """The CUDA dispatch key's fallback: an operation with no GPU operand that makes a GPU tensor."""
    node = runtime.machine()
    if any(isinstance(value, CudaTensor) for value in tree_flatten((args, kwargs))[0]):
        return _dispatch(op, args, kwargs)   # reached with the Python key excluded
    device = kwargs.get("device")
    if not isinstance(device, torch.device):
        device = torch.device("cuda")
    index = node.check_index(device.index if device.index is not None else -1)
    kwargs = dict(kwargs, device=CPU)
    if kwargs.get("pin_memory"):
        kwargs["pin_memory"] = False
    needed = _result_bytes(op, args, dict(kwargs, device=torch.device("meta")))
    block = _allocate(index, needed) if needed else None   # out of memory before any host memory is used
    if _takes_generator(op) and kwargs.get("generator") is None:
        kwargs["generator"] = _generator(index)
    out = op(*args, **kwargs)
    target = torch.device("cuda", index)
    return tree_map(lambda t: _wrap(t, target, block) if isinstance(t, torch.Tensor) else t, out)
