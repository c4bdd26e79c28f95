"""gpulab: the helpers behind the gpulab course on GPU computing with PyTorch.

The lessons teach; this package holds the plumbing that is not the lesson: finding devices,
timing work correctly, experiment panels, plots, quizzes and recorded reference results.
``import gpulab`` is cheap: matplotlib and ipywidgets load only when a panel or plot is used.
"""

from __future__ import annotations

import importlib

# The one place the version is written: pyproject.toml reads it, and course.RELEASE, the git tag every
# notebook's setup cell installs, is made from it.
__version__ = "0.1.0"

__all__ = [
    "Series",
    "Timing",
    "best_device",
    "cpu",
    "describe",
    "gpu",
    "num_gpus",
    "synchronize",
    "time_fn",
    "try_all_gpus",
    "try_gpu",
]

_LAZY_MODULES = {
    "alt_text",
    "bench",
    "course",
    "devices",
    "distributed",
    "figures",
    "checks",
    "grading",
    "memory",
    "plots",
    "profiling",
    "quiz",
    "reference",
    "simulated",
    "slides",
    "tables",
    "timing",
    "units",
    "widgets",
}
# Names re-exported at the top level, and the module each comes from. Nothing is imported
# until first use, so tools that need only a part (the grader, `gpulab headers`) stay quick.
_LAZY_NAMES = {
    name: "devices"
    for name in ("best_device", "cpu", "describe", "gpu", "num_gpus", "synchronize", "try_all_gpus", "try_gpu")
}
_LAZY_NAMES.update(Series="timing", Timing="timing", time_fn="timing")


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        value = importlib.import_module(f".{name}", __name__)
    elif name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'gpulab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | _LAZY_MODULES | set(_LAZY_NAMES))
