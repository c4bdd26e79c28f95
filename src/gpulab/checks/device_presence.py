"""Which devices a simulated machine of the checks has: the answers of ``torch.cuda``, ``torch.backends.mps``
and ``torch.accelerator`` that :class:`~.device_memory.SimulatedMemory` and :class:`~.kernel_queue.SimulatedQueue`
both give, on a machine with one CUDA GPU or none."""

from __future__ import annotations

import torch

__all__ = ["no_accelerator", "no_gpu", "presence_patches"]


def presence_patches(gpu: bool) -> dict:
    """What ``torch.cuda``, ``torch.backends.mps`` and ``torch.accelerator`` answer about which
    devices there are, on a simulated machine with one CUDA GPU (``gpu``) or none:
    ``{module: {name: replacement}}``, for the simulations to extend and apply."""
    patches = {
        torch.cuda: {
            "is_available": lambda: gpu,
            "device_count": lambda: int(gpu),
            "current_device": lambda: 0,
            "is_initialized": lambda: gpu,
            "get_device_name": lambda *a, **k: "Simulated GPU",
        },
        torch.backends.mps: {"is_available": lambda: False},
    }
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        patches[accelerator] = {
            "is_available": lambda *a, **k: gpu,
            "device_count": lambda: int(gpu),
            "current_accelerator": lambda *a, **k: torch.device("cuda") if gpu else None,
            "current_device_index": lambda: 0 if gpu else -1,
        }
    return patches


def no_gpu(*args, **kwargs):
    """What a CUDA function does on a simulated machine without a GPU: raise."""
    raise RuntimeError("this (simulated) machine has no CUDA GPU")


def no_accelerator(*args, **kwargs):
    """What ``torch.accelerator.synchronize`` does on a machine without an accelerator: raise, as torch does."""
    raise RuntimeError("Cannot access accelerator device when none is available.")
