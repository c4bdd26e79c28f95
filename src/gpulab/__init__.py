"""gpulab: the helpers behind the gpulab course on GPU computing with PyTorch.

The lessons teach; this package holds the plumbing that is not the lesson: finding devices,
timing work correctly, experiment panels, plots, quizzes and recorded reference results.
``import gpulab`` is cheap: matplotlib and ipywidgets load only when a panel or plot is used.
"""

from __future__ import annotations

import importlib

from .devices import best_device, cpu, describe, gpu, num_gpus, synchronize, try_all_gpus, try_gpu
from .timing import Timing, time_fn

__version__ = "0.1.0"

__all__ = [
    "Timing", "best_device", "cpu", "describe", "gpu", "num_gpus", "synchronize",
    "time_fn", "try_all_gpus", "try_gpu",
]

_LAZY_MODULES = {"course", "devices", "memory", "plots", "quiz", "reference", "timing", "widgets"}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'gpulab' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY_MODULES)
