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
  told to ``set_sync_debug_mode`` (the grader's records see them with a dispatch mode of their own).

Tensors made for a GPU with no GPU operand (``torch.zeros(3, device="cuda")``) reach the CUDA
dispatch key, where :func:`_factory` is registered as the fallback: the same path as on a CUDA
build, so it works in every thread. Pinned host memory is ordinary host memory that PyTorch's
``is_pinned()`` knows as pinned (the CUDA hooks in ``guard.cpp``).
"""

from __future__ import annotations

import functools
import importlib
import mmap
import sys
import threading
import weakref
from pathlib import Path

import torch
from torch.utils._pytree import tree_flatten, tree_map

from . import mps, runtime

__all__ = ["CudaTensor"]

aten = torch.ops.aten
CPU = torch.device("cpu")
_SIMULATED_TYPES = ("cuda", "mps")
PRECHECK_BYTES = 16 * 2**20  # operands at least this large: the result's size is found on meta first
# (Always finding it costs ~0.35 ms an operation, more than the operation itself here. Below this, a result
# far larger than its operands, as torch.outer of two vectors, is computed before the allocator is asked;
# where the host cannot hold it at all, _refused_by_host still gives CUDA's OutOfMemoryError.)
LAZY_BYTES = 16 * 2**20  # torch.empty at least this large: host pages are committed when first written


class Block:
    """One allocation of the simulated caching allocator, freed when the last tensor on it dies."""

    __slots__ = ("allocator", "allocation", "nbytes", "_storage", "__weakref__")

    def __init__(self, allocator, nbytes: int):
        self.allocator = allocator
        self.nbytes = nbytes
        self.allocation = None
        self.allocation = allocator.malloc(nbytes)

    @property
    def address(self) -> int:
        return getattr(self.allocation, "address", 0)

    def storage(self, device: torch.device) -> torch.UntypedStorage:
        """The storage a GPU tensor on this block reports: on ``device``, at the block's device address.

        One Python object for every tensor on the block, as PyTorch keeps one per storage (code that
        tells storages apart by identity, or watches them with weakref.finalize, works as on a GPU). It
        points at the simulated device address and owns nothing: reading it through a tensor fails,
        as the values are on the host (in ``_inner``).
        """
        if getattr(self, "_storage", None) is None:
            storage = torch._C._construct_storage_from_data_pointer(self.address, device, self.nbytes)
            storage.__class__ = _BlockStorage
            storage._gpulab_block = weakref.ref(self)
            self._storage = storage
        return self._storage

    def resize(self, nbytes: int) -> None:
        """``storage.resize_(nbytes)``: CUDA's ``resize_bytes_cuda`` (aten/src/ATen/native/cuda/Resize.cpp).

        It takes a new allocation of ``nbytes`` from the caching allocator (none for 0 bytes: a null
        pointer), copies what fits, and frees the old one. FSDP2 frees its all-gather buffers so
        (``resize_(0)`` after a block's forward and backward) and takes them again before the next
        all-gather. The values stay on the host (in ``_inner``): after ``resize_(0)`` a tensor on the
        block reads its old values, where a GPU's would be gone.
        """
        with _free_lock:
            while _pending_frees:
                allocator, allocation = _pending_frees.pop()
                allocator.free(allocation)
            new = self.allocator.malloc(nbytes)  # raises OutOfMemoryError, the old allocation kept
            old, self.allocation, self.nbytes = self.allocation, new, nbytes
            if old is not None:
                self.allocator.free(old)

    def __del__(self):
        allocation, self.allocation = self.allocation, None
        if allocation is not None:
            _release(self.allocator, allocation)


class _BlockStorage(torch.UntypedStorage):
    """The storage of a tensor on a simulated GPU: sizes and ``resize_`` follow its :class:`Block`.

    A CPU build refuses ``resize_`` on a storage whose device is CUDA ("built without USE_CUDA",
    torch/csrc/StorageMethods.cpp, THPStorage_resize_); here it frees or takes the block's memory.
    """

    def _block(self) -> Block | None:
        return self.__dict__["_gpulab_block"]()  # None once the last tensor on the block is gone

    def nbytes(self) -> int:
        block = self._block()
        return torch._C.StorageBase.nbytes(self) if block is None else block.nbytes

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def data_ptr(self) -> int:
        block = self._block()
        return torch._C.StorageBase.data_ptr(self) if block is None else block.address

    def resize_(self, size: int):
        block = self._block()
        if block is None:
            raise RuntimeError("the simulated GPU tensors on this storage are gone: it cannot be resized")
        block.resize(int(size))
        return self


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


_blocks: weakref.WeakValueDictionary[int, Block] = weakref.WeakValueDictionary()


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
    def __new__(
        cls, inner: torch.Tensor, device: torch.device, block: Block | None = None, requires_grad: bool = False
    ):
        # storage_size: a view's untyped_storage() is its base's whole storage, as on a GPU
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            layout=inner.layout,
            device=device,
            requires_grad=requires_grad,
            storage_size=inner.untyped_storage().nbytes(),
        )
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
        node.synchronizing("print")
        with node.quiet():
            text = super().__repr__(tensor_contents=tensor_contents)
        # torch/_tensor_str.py names a subclass by its class; a CUDA tensor prints as "tensor(".
        name = type(self).__name__
        for prefix, closing in ((f"Parameter({name}(", ")"), (f"{name}(", "")):
            if text.startswith(prefix):
                lines = text[len(prefix) : len(text) - len(closing)].split("\n")
                # continuation lines are aligned as under f"{name}(" (a Parameter's too): under "tensor(" now
                shift = " " * (len(name) - len("tensor"))
                lines = ["tensor(" + lines[0]] + [line.removeprefix(shift) for line in lines[1:]]
                text = "\n".join(lines)
                break
        return f"Parameter containing:\n{text}" if getattr(self, "_is_param", False) else text

    def numpy(self, *, force: bool = False):
        # torch/csrc/utils/tensor_numpy.cpp, tensor_to_numpy
        raise TypeError(
            f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
            f"tensor to host memory first."
        )

    def __format__(self, format_spec):
        if self.dim() == 0:  # as torch.Tensor.__format__ does for a plain tensor
            node = runtime.machine()
            node.synchronizing("print")
            with node.quiet():
                return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def tolist(self):
        # As on CUDA (torch/csrc/utils/tensor_list.cpp): a copy to the host, then its values.
        return self.to("cpu").tolist()

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

    def untyped_storage(self) -> torch.UntypedStorage:
        block = getattr(self, "_block", None)
        return super().untyped_storage() if block is None else block.storage(self.device)

    def data_ptr(self) -> int:
        return self._block.address + self.storage_offset() * self.element_size()

    def _stable_hash_for_caching(self) -> str:
        """torch.compile's cache key for this tensor: its metadata, as for a plain CUDA tensor.

        torch/_functorch/_aot_autograd/autograd_cache.py asks a wrapper subclass for this (and warns
        where there is none); a plain tensor is keyed by ``extract_tensor_metadata_for_cache_key``.
        """
        import hashlib
        import pickle

        try:
            from torch._inductor.codecache import extract_tensor_metadata_for_cache_key

            metadata = extract_tensor_metadata_for_cache_key(self)
        except (ImportError, AttributeError, TypeError):
            metadata = (self.dtype, tuple(self.shape), self.stride(), str(self.device), self.requires_grad)
        return hashlib.blake2b(pickle.dumps(metadata), digest_size=16).hexdigest()

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


# torch/optim/optimizer.py (_default_to_fused_or_foreach) and torch/utils/_foreach_utils.py
# (_has_foreach_support) take the foreach kernels only for tensors whose type is in these lists: on a
# real GPU, optimizers and clip_grad_norm_ use them by default, so a simulated GPU's tensors must too.
for _module in ("torch.optim.optimizer", "torch.utils._foreach_utils"):
    _types = importlib.import_module(_module)._foreach_supported_types
    if CudaTensor not in _types:
        _types.append(CudaTensor)


def _wrap(inner: torch.Tensor, device: torch.device, block: Block | None = None) -> CudaTensor:
    return CudaTensor(inner, device, block)


# ----------------------------------------------------------------- which device an operation runs on


def _is_cpu_scalar(value) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and not isinstance(value, CudaTensor)
        and value.device.type == "cpu"
        and value.dim() == 0
    )


_MIXED_OK = {
    aten.copy_.default,
    aten._to_copy.default,
    aten._foreach_copy_.default,
    aten.index.Tensor,
    aten.index_put_.default,
    aten._index_put_impl_.default,
    aten.index_put.default,
    aten.set_.source_Tensor,
}


def _common_device(func, flat, args=(), kwargs=None) -> torch.device:
    """The device the operation runs on, and PyTorch's error when operands are on two.

    TensorIterator's rule (aten/src/ATen/TensorIterator.cpp, ``compute_types``): the first non-CPU
    device is the common one, CPU scalars (0-dim tensors) may join it, and any other device is named
    after it: ``cpu_tensor + cuda_tensor`` says "cuda:0 and cpu!".
    """
    tensors = [value for value in flat if isinstance(value, torch.Tensor)]
    if not tensors:
        return None
    common = next((value.device for value in tensors if value.device.type != "cpu"), tensors[0].device)
    for value in tensors:
        if value.device == common or (common.type != "cpu" and _is_cpu_scalar(value)) or func in _MIXED_OK:
            continue
        if torch.Tag.pointwise not in func.tags:
            _argument_device_check(func, args, kwargs)
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{common} and {value.device}!"
        )
    return common


def _argument_device_check(func, args, kwargs) -> None:
    """The device check the generated CUDA wrapper of an operator that is not TensorIterator's (``mm``,
    ``addmm``, ``embedding`` …) makes (aten/src/ATen/core/op_registration/adaption.cpp,
    ``check_and_update_common_device``): the first tensor argument's device is the common one, and the first
    argument on another is named. An H100 with torch 2.11 said: "… but got mat2 is on cpu, different from other
    tensors on cuda:0 (when checking argument in method wrapper_CUDA_mm)"; torch 2.6 words it as TensorIterator
    does, naming the argument after it."""
    kwargs = kwargs or {}
    common = None
    values = list(args) + [kwargs.get(argument.name) for argument in func._schema.arguments[len(args) :]]
    for argument, value in zip(func._schema.arguments, values):
        for tensor in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(tensor, torch.Tensor):
                continue
            if common is None:
                common = tensor.device
            elif tensor.device != common:
                name = func._schema.name.split("::")[-1]
                method = name if func._overloadname == "default" else f"{name}_{func._overloadname}"
                if _names_the_argument_first():
                    raise RuntimeError(
                        f"Expected all tensors to be on the same device, but got {argument.name} is "
                        f"on {tensor.device}, different from other tensors on {common} (when checking "
                        f"argument in method wrapper_{common.type.upper()}_{method})"
                    )
                raise RuntimeError(
                    f"Expected all tensors to be on the same device, but found at least two devices, "
                    f"{common} and {tensor.device}! (when checking argument for argument "
                    f"{argument.name} in method wrapper_{common.type.upper()}_{method})"
                )


@functools.lru_cache(maxsize=1)
def _names_the_argument_first() -> bool:
    """Whether this torch words the check as 2.11 does (read once, from its library, when the error is raised)."""
    library = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        with open(library, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(b"different from other tensors on") >= 0
    except (OSError, ValueError):
        return True


# ----------------------------------------------------------------- running an operation


@functools.cache
def _takes_generator(func) -> bool:
    return any(argument.name == "generator" for argument in func._schema.arguments)


def _generator(index: int):
    if runtime.machine().device_type == "mps":
        return torch._C._mps_get_default_generator()  # torch.mps.manual_seed seeds it
    generators = getattr(torch.cuda, "default_generators", ())
    return generators[index] if index < len(generators) else None


def _unwrap(value):
    if isinstance(value, CudaTensor):
        return value._inner
    if isinstance(value, torch.device) and value.type in _SIMULATED_TYPES:
        return CPU
    return value


def _nbytes(value) -> int:
    # The logical size, not the storage's: an expanded view (torch.ones(1).expand(n)) holds little and
    # makes a large result when it is copied.
    if not isinstance(value, torch.Tensor):
        return 0
    return max(value.untyped_storage().nbytes(), value.numel() * value.element_size())


# Operations whose result can be far larger than their operands: always sized first.
_GROWING = {
    aten.repeat.default,
    aten.tile.default,
    aten.new_empty.default,
    aten.new_zeros.default,
    aten.new_ones.default,
    aten.new_full.default,
    aten.new_empty_strided.default,
    aten.outer.default,
    aten.kron.default,
    aten.repeat_interleave.self_int,
    aten.repeat_interleave.self_Tensor,
}


def _meta(value):
    if isinstance(value, torch.Tensor):
        return torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device="meta")
    if isinstance(value, torch.device):
        return torch.device("meta")
    return value


def _meta_result(func, args, kwargs):
    """The operation's new tensors on the meta device (shapes, strides, dtypes), or None where it has none.

    Results that share an operand's storage (views, in-place operations) are left out: they take no
    new memory, on a GPU as here.
    """
    meta_args, meta_kwargs = tree_map(_meta, args), tree_map(_meta, kwargs)
    operands = {
        t.untyped_storage()._cdata for t in tree_flatten((meta_args, meta_kwargs))[0] if isinstance(t, torch.Tensor)
    }
    try:
        out = func(*meta_args, **meta_kwargs)
    except Exception:  # no meta kernel, or a data-dependent size: find out after the CPU ran it
        return None
    return [
        t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.untyped_storage()._cdata not in operands
    ]


def _result_bytes(func, args, kwargs) -> int:
    """The bytes the operation's new tensors will take, found by running it on the meta device."""
    return sum(t.untyped_storage().nbytes() for t in _meta_result(func, args, kwargs) or ())


def _host_too_small(error: Exception) -> bool:
    # c10/core/impl/alloc_cpu.cpp, alloc_cpu: the host refused the memory for the values
    return isinstance(error, RuntimeError) and "DefaultCPUAllocator: can't allocate memory" in str(error)


def _refused_by_host(func, args, kwargs, index: int, error: Exception):
    """The CPU could not hold a result meant for GPU ``index``: CUDA's OutOfMemoryError where the card
    could not hold it either (an output much larger than its operands, which are not checked first);
    otherwise this machine's RAM is what is missing, and the error says so."""
    needed = _result_bytes(func, args, kwargs)
    if needed:
        block = _allocate(index, needed)  # raises torch.OutOfMemoryError, as the card would
        del block
    _host_error(index, needed, error)


def _host_error(index: int, needed: int, error: Exception):
    raise RuntimeError(
        f"the simulated GPU {runtime.machine().device_type}:{index} holds its values in this machine's memory, which cannot "
        f"hold the {needed} bytes this operation makes (the GPU has room for them)"
    ) from error


def _lazy_host(meta: torch.Tensor) -> torch.Tensor:
    """Uninitialised host memory shaped as ``meta``, committed page by page when first written.

    ``torch.empty`` on a real GPU takes device memory and touches none of it. On the host, one large
    malloc is refused outright beyond RAM + swap (Linux's default overcommit heuristic), so an
    80 GiB card could not hold a 60 GiB ``torch.empty`` on a smaller machine: an anonymous mapping
    with MAP_NORESERVE is not counted against that limit, and costs nothing until it is written.
    """
    nbytes = meta.untyped_storage().nbytes()
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", _MAP_NORESERVE)
    pages = torch.frombuffer(mmap.mmap(-1, nbytes, flags=flags), dtype=torch.uint8)  # keeps the mapping alive
    return torch.empty(0, dtype=meta.dtype).set_(
        pages.untyped_storage(), meta.storage_offset(), meta.size(), meta.stride()
    )


# Python's mmap module names MAP_NORESERVE from 3.13 on; Linux's value (asm-generic/mman-common.h) before.
_MAP_NORESERVE = 0x4000 if sys.platform.startswith("linux") else 0
_LAZY_FACTORIES = {aten.empty.memory_format, aten.empty_strided.default}
_FLOAT8_MATMULS = {aten._scaled_mm.default, aten._scaled_mm.out}
if hasattr(aten, "_scaled_mm_v2"):
    _FLOAT8_MATMULS |= set(getattr(aten._scaled_mm_v2, name) for name in aten._scaled_mm_v2.overloads())


def _check_float8_matmul(node, func, index: int) -> None:
    # aten/src/ATen/native/cuda/ScaledBlas.cpp, _scaled_mm_out_cuda (and _v2): _scaled_mm_allowed_device
    # is major >= 9 or (8, 9); the CPU would compute it for any card. The v2 check is NOT_IMPLEMENTED.
    spec = node.specs[index]
    if spec.major >= 9 or (spec.major, spec.minor) == (8, 9):
        return
    error = RuntimeError if func in (aten._scaled_mm.default, aten._scaled_mm.out) else NotImplementedError
    raise error(
        "torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, or ROCm MI300+"
    )


def _check_not_forked(node) -> None:
    # A CUDA context does not survive fork(): in a child of the process that initialised CUDA, a
    # kernel or copy on an inherited GPU tensor fails with cudaErrorInitializationError.
    if runtime._in_bad_fork():
        raise runtime.cuda_error("initialization error", "cudaErrorInitializationError")


def _lazy_init_in_child() -> None:
    """What torch::utils::device_lazy_init does for a new GPU tensor in a forked child.

    torch/csrc/cuda/Module.cpp's fork handler marks CUDA as needing initialisation again in the child,
    so the next tensor made for a GPU calls torch.cuda._lazy_init, which refuses in a bad fork
    ("Cannot re-initialize CUDA in forked subprocess"). A CPU build has no such handler.
    """
    if runtime._in_bad_fork():
        torch.cuda._lazy_init()


_unprofiled = None


def _in_float(func):
    """``_softmax``/``_log_softmax`` with ``half_to_float``: a CUDA kernel reads half and writes float; the
    CPU's refuses ("softmax with half to float conversion is not supported on CPU"). Autocast asks for
    it on CUDA (``softmax(x, dim, dtype=torch.float32)`` of a float16 ``x``)."""

    def host(x, dim, half_to_float):
        return func(x.float() if half_to_float else x, dim, False)

    return host


def _backward_from_float(func):
    """Their backward: float gradients in, the gradient of the half input out."""

    def host(grad_output, output, dim, input_dtype):
        return func(grad_output, output, dim, grad_output.dtype).to(input_dtype)

    return host


# Kernels CUDA has and the CPU lacks: the host computation that gives the same result.
_HOST_EQUIVALENTS = {
    aten._softmax.default: _in_float(aten._softmax.default),
    aten._log_softmax.default: _in_float(aten._log_softmax.default),
    aten._softmax_backward_data.default: _backward_from_float(aten._softmax_backward_data.default),
    aten._log_softmax_backward_data.default: _backward_from_float(aten._log_softmax_backward_data.default),
}


def _compute(func, *args, **kwargs):
    """Run ``func`` on the host tensors that hold a simulated GPU's values.

    While torch.profiler records, it runs on a thread of its own: the profiler's callbacks are
    the recording thread's (torch/csrc/autograd/profiler_kineto.cpp registers thread-local
    ones), so the trace holds each operation once, as a GPU's does, and not again as the CPU
    work that simulates it.
    """
    global _unprofiled
    if not torch.autograd.profiler._is_profiler_enabled:
        return func(*args, **kwargs)
    if _unprofiled is None:
        import concurrent.futures

        _unprofiled = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gpulab-simulated-gpu")
    return _unprofiled.submit(func, *args, **kwargs).result()


def _dispatch(func, args, kwargs):
    node = runtime.machine()
    _check_not_forked(node)
    special = _SPECIAL.get(func)
    if special is not None:
        return special(node, *args, **kwargs)
    flat, _ = tree_flatten((args, kwargs))
    device = kwargs.get("device")
    if isinstance(device, torch.device) and device.type == "cpu":
        target = CPU
    else:
        target = _common_device(func, flat, args, kwargs)
        if isinstance(device, torch.device) and device.type == node.device_type:
            target = torch.device(device.type, node.check_index(device.index if device.index is not None else -1))
    if func in _FLOAT8_MATMULS and target.type == "cuda":
        _check_float8_matmul(node, func, target.index)
    if func in _SYNCHRONISING or (func is aten.index.Tensor and _has_mask(args)):
        node.synchronizing(func.__name__)
    inner_args, inner_kwargs = tree_map(_unwrap, args), tree_map(_unwrap, kwargs)
    if target.type != "cpu" and _takes_generator(func) and inner_kwargs.get("generator") is None:
        inner_kwargs["generator"] = _generator(target.index)
    block = None
    if target.type != "cpu" and (func in _GROWING or sum(_nbytes(v) for v in flat) >= PRECHECK_BYTES):
        needed = _result_bytes(func, args, kwargs)
        if needed:
            block = _allocate(target.index, needed)  # raises OutOfMemoryError before the CPU works
    try:
        out = _compute(_HOST_EQUIVALENTS.get(func, func), *inner_args, **inner_kwargs)
    except RuntimeError as error:
        if target.type != "cpu" and block is None and _host_too_small(error):
            _refused_by_host(func, args, kwargs, target.index, error)
        raise
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
            original = originals[id(value)]
            if isinstance(original, CudaTensor):
                _follow_resize(original)
            return original
        if target.type == "cpu":
            return value
        if target.type == "mps":
            mps.refuse_dtype(value.dtype)
        nonlocal block
        reserved, block = block, None  # a block taken before the work goes to the first new tensor
        return _wrap(value, target, reserved)

    return tree_map(rewrap, out)


_CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


def _follow_resize(wrapper: CudaTensor) -> None:
    """Give ``wrapper`` the shape of its values after an operation resized them in place.

    Composite kernels make an empty result and fill it with an ``out=`` variant, which resizes it
    (``torch.arange(6, device="cuda")``, ``torch.eye``, any ``out=``, ``resize_``): the values held in
    ``_inner`` change shape, and a wrapper subclass's sizes do not follow by themselves. They are set
    with the CPU kernel of ``set_`` on a data-less storage of the new size (no host memory), and the
    storage's new size is taken from the simulated allocator, as a resize on a GPU takes a new block.
    """
    inner = wrapper._inner
    if (
        wrapper.shape == inner.shape
        and wrapper.stride() == inner.stride()
        and wrapper.storage_offset() == inner.storage_offset()
    ):
        return
    with torch._C.DisableTorchFunctionSubclass():
        sized = torch.Tensor._make_wrapper_subclass(
            CudaTensor,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            device=wrapper.device,
            storage_size=inner.untyped_storage().nbytes(),
        )
    aten.set_.source_Storage_storage_offset.redispatch(
        _CPU_KEYS, wrapper, sized.untyped_storage(), inner.storage_offset(), inner.size(), inner.stride()
    )
    wrapper._block = _block_for(inner, wrapper.device.index, wrapper._block)


def _has_mask(args) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in (args[1] or ()))


_SYNCHRONISING = {
    aten.nonzero.default,
    aten.masked_select.default,
    aten._unique2.default,
    aten.unique_dim.default,
    aten.unique_consecutive.default,
    aten.repeat_interleave.Tensor,
    aten.is_nonzero.default,
}


# ----------------------------------------------------------------- copies and reads


def _to_copy(node, source, **kwargs):
    device = kwargs.get("device") or source.device
    inner_kwargs = dict(kwargs, device=CPU)
    if device.type == "cpu":
        if not kwargs.get("non_blocking"):
            node.synchronizing("copy to host")
        out = _compute(aten._to_copy.default, source._inner, **inner_kwargs)
        if kwargs.get("non_blocking") and source.device.type == "cuda":
            # aten/src/ATen/native/TensorConversions.cpp, _to_copy: a non-blocking copy from CUDA to the host lands in
            # pinned memory (pin_out is for CUDA and PrivateUse1 only: from MPS it is plain host memory)
            out = out.pin_memory()
        return out
    index = node.check_index(device.index if device.index is not None else -1)
    dtype = kwargs.get("dtype") or source.dtype
    if device.type == "mps":
        mps.refuse_dtype(dtype)
    block = _allocate(index, source.numel() * dtype.itemsize)
    out = _compute(aten._to_copy.default, source._inner, **inner_kwargs)
    return _wrap(out, torch.device(device.type, index), block)


def _copy_(node, target, source, non_blocking=False):
    if isinstance(target, CudaTensor) and isinstance(source, CudaTensor):
        _compute(aten.copy_.default, target._inner, source._inner, non_blocking)
        return target
    if isinstance(target, CudaTensor):  # host to device
        if not non_blocking:
            node.synchronizing("copy to device")
        _compute(aten.copy_.default, target._inner, source, non_blocking)
        return target
    if not non_blocking:
        node.synchronizing("copy to host")
    _compute(aten.copy_.default, target, source._inner, non_blocking)
    return target


def _item(node, source):
    node.synchronizing("item")
    return _compute(aten._local_scalar_dense.default, source._inner)


_SPECIAL = {
    aten._to_copy.default: _to_copy,
    aten.copy_.default: _copy_,
    aten._local_scalar_dense.default: _item,
    aten.record_stream.default: lambda node, tensor, stream: None,
    aten.is_pinned.default: lambda node, tensor, device=None: False,
}


# ----------------------------------------------------------------- tensors made for a GPU


def cuda_kernels() -> dict:
    """Kernels for the CUDA key, where the fallback (:func:`_factory`) is not enough.

    - Operations that reach the CUDA key with a simulated tensor and the Python key excluded
      (``torch.tensor(..., device="cuda")`` copies so), and have composite kernels a fallback would
      not replace.
    - The factories at the bottom of every ``torch.empty``, ``zeros``, ``randn`` … for a GPU: a
      Python fallback cannot run while a TorchDispatchMode is active and the Python key excluded (the
      trampoline in torch/csrc/utils/python_dispatch.cpp finds only kernels registered per operator),
      and on a torch built with CUDA these have kernels of their own, which would ask a GPU it lacks.
    """

    def kernel(op):
        return lambda *args, **kwargs: _dispatch(op, args, kwargs)

    def factory(op):
        return lambda *args, **kwargs: _factory(op, *args, **kwargs)

    return {
        "copy_": kernel(aten.copy_.default),
        "_local_scalar_dense": kernel(aten._local_scalar_dense.default),
        "empty.memory_format": factory(aten.empty.memory_format),
        "empty_strided": factory(aten.empty_strided.default),
        "tril_indices": factory(aten.tril_indices.default),
        "triu_indices": factory(aten.triu_indices.default),
    }


def _factory(op, *args, **kwargs):
    """The CUDA dispatch key's fallback: an operation with no GPU operand that makes a GPU tensor."""
    node = runtime.machine()
    if any(isinstance(value, CudaTensor) for value in tree_flatten((args, kwargs))[0]):
        return _dispatch(op, args, kwargs)  # reached with the Python key excluded
    if node is None or not node.active:
        # The machine was switched off; torch's C++ asks torch.cuda._lazy_init only once per process.
        raise AssertionError("Torch not compiled with CUDA enabled")
    _lazy_init_in_child()
    device = kwargs.get("device")
    if not isinstance(device, torch.device):
        device = torch.device(node.device_type)
    index = node.check_index(device.index if device.index is not None else -1)
    if device.type == "mps":
        mps.refuse_dtype(kwargs.get("dtype"))
    kwargs = dict(kwargs, device=CPU)
    if kwargs.get("pin_memory"):
        kwargs["pin_memory"] = False
    leaves = _meta_result(op, args, dict(kwargs, device=torch.device("meta"))) or []
    needed = sum(t.untyped_storage().nbytes() for t in leaves)
    block = _allocate(index, needed) if needed else None  # out of memory before any host memory is used
    if _takes_generator(op) and kwargs.get("generator") is None:
        kwargs["generator"] = _generator(index)
    if op in _LAZY_FACTORIES and needed >= LAZY_BYTES and len(leaves) == 1:
        out = _lazy_host(leaves[0])  # torch.empty: memory the GPU holds but nothing has written
    else:
        try:
            out = _compute(op, *args, **kwargs)
        except RuntimeError as error:
            if _host_too_small(error):
                _host_error(index, needed, error)  # the card had room: the block is taken
            raise
    target = torch.device(device.type, index)
    return tree_map(lambda t: _wrap(t, target, block) if isinstance(t, torch.Tensor) else t, out)
