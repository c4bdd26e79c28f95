"""``torch.save`` and ``torch.load`` of tensors on simulated GPUs, as with real CUDA tensors.

A file records each storage with a location tag (``torch/serialization.py``: ``location_tag``,
``register_package``): ``"cuda:0"`` for a real GPU's. A simulated GPU's tensors are saved the
same way, with their values and the tag ``"cuda:i"``, so a file saved on a simulated T4 is a
file saved on a T4: loading it where there is no GPU fails with PyTorch's own message unless
``map_location`` says where to put it, and a file saved on a real GPU loads onto a simulated one.

Loading turns a ``"cuda:i"`` storage into host memory marked for device i (the deserializer
below, which runs before torch's own for CUDA), and ``torch._utils._rebuild_tensor`` makes a
tensor on a marked storage a tensor on the simulated device.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

from . import tensors

__all__ = ["install", "reduce_tensor"]

PRIORITY = 9  # before the CPU's tagger (10), which would call our host memory "cpu"
_installed = False
_original_rebuild = None


def reduce_tensor(tensor: tensors.CudaTensor, protocol):
    """What ``pickle`` stores for a simulated GPU tensor: what it stores for a CUDA tensor."""
    inner = tensor._inner
    if getattr(tensor, "_is_param", False):
        return (torch._utils._rebuild_parameter, (tensor.detach(), tensor.requires_grad, OrderedDict()))
    storage = torch.storage.TypedStorage(wrap_storage=inner.untyped_storage(), dtype=inner.dtype, _internal=True)
    return (
        torch._utils._rebuild_tensor_v2,
        (storage, inner.storage_offset(), tuple(inner.size()), inner.stride(), tensor.requires_grad, OrderedDict()),
    )


def _tag(storage) -> str | None:
    storage = getattr(storage, "_untyped_storage", storage)
    if not isinstance(storage, torch.UntypedStorage) or storage.device.type != "cpu":
        return None
    block = tensors._blocks.get(storage._cdata)
    if block is None:
        return None
    # torch/serialization.py's taggers: "cuda:i" for a GPU's storage, "mps" for a Mac's (_mps_tag)
    return "mps" if tensors.runtime.machine().device_type == "mps" else f"cuda:{block.allocator.device_index}"


def _restore(storage, location: str):
    node = tensors.runtime.machine()
    if node is None or not location.startswith(node.device_type):
        return None
    if node.device_type == "mps":  # torch/serialization.py, _mps_deserialize: any "mps…" goes to the one GPU
        device = torch.device("mps", 0)
    else:
        validate = getattr(torch.serialization, "_validate_device", None)  # the real check and message
        index = (
            validate(location, "cuda") if validate is not None else torch.serialization.validate_cuda_device(location)
        )
        device = torch.device("cuda", index.index if isinstance(index, torch.device) else index)
    storage = getattr(storage, "_untyped_storage", storage)
    storage._gpulab_device = device
    return storage


def _rebuild_tensor(storage, storage_offset, size, stride):
    untyped = storage._untyped_storage
    device = getattr(untyped, "_gpulab_device", None)
    if device is None:
        return _original_rebuild(storage, storage_offset, size, stride)
    inner = torch.empty((0,), dtype=storage.dtype).set_(untyped, storage_offset, size, stride)
    return tensors.CudaTensor(inner, device)


def install() -> None:
    """Register the tagger and deserializer, and the rebuild of tensors on simulated GPUs."""
    global _installed, _original_rebuild
    if _installed:
        return
    torch.serialization.register_package(PRIORITY, _tag, _restore)
    _original_rebuild = torch._utils._rebuild_tensor
    torch._utils._rebuild_tensor = _rebuild_tensor
    _installed = True
