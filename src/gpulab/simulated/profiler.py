"""``torch.profiler`` on a simulated machine: it accepts ``ProfilerActivity.CUDA``, as on a CUDA build.

A CUDA build reports ``{CPU, CUDA}`` from ``torch.profiler.supported_activities()``
(``torch/profiler/profiler.py``: it asks ``torch.autograd._supported_activities``, which asks
Kineto), and ``torch.autograd.profiler.profile`` then hands the CUDA activity to Kineto
(``torch/autograd/profiler.py``: ``ProfilerActivity.CUDA in _supported_activities()``). On a CPU
build the CUDA activity would instead select the legacy GPU fallback, which warns at every
operation that CUDA is not enabled. Here the simulated machine answers as the CUDA build does,
and Kineto, which has no CUPTI in a CPU build, records the CPU side only: the trace and the
tables hold CPU events (operators, ``record_function`` labels, the memory the CPU used), and no
kernels, memcpy or ``cuda_runtime`` rows.
"""

from __future__ import annotations

__all__ = ["patches"]


def patches() -> list[tuple]:
    """``(object, name, value)`` for :func:`gpulab.simulated.install.finish` to set."""
    import torch.autograd
    import torch.autograd.profiler
    from torch.profiler import ProfilerActivity

    real = torch.autograd._supported_activities

    def _supported_activities():
        return set(real()) | {ProfilerActivity.CUDA}

    return [
        (torch.autograd, "_supported_activities", _supported_activities),
        (torch.autograd.profiler, "_supported_activities", _supported_activities),
    ]
