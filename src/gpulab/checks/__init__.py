"""What exercise check cells use to see what an answer did, however it was written.

A check runs the student's code inside a recorder and asserts on what it recorded, with a message
that says what was expected and what was found::

    from gpulab.checks import TransferRecorder

    with TransferRecorder() as gpu:                # a simulated T4 where there is no GPU
        losses = train(model, batches, device="cuda")
    assert len(gpu.reads) <= 1, (
        f"the loop read values back to the host {len(gpu.reads)} times: keep the losses on the GPU "
        "and read them once, after the loop")

The parts:

- :func:`patched` and :func:`~.replace.everywhere` (:mod:`.replace`): replace a function for the length
  of a block wherever an answer finds it (``from torch import save as store`` taken before the check
  ran) — the one way every recorder here replaces torch's and gpulab's functions;
- :func:`recorded_time_fn` and :class:`TimedCall` (:mod:`.timer`): the calls an answer makes to
  ``gpulab.time_fn``;
- :class:`TransferRecorder`, :class:`Read`, :class:`Copy` (:mod:`.transfers`): every read of a GPU
  tensor's values on the host, every host→GPU copy (size, pinned, ``non_blocking``) and every
  synchronize, on the GPU that is there or on a simulated one (:mod:`gpulab.simulated`);
  :func:`aten_ops` and :data:`FACTORY_OPS`: the operators a function runs, and those that make a
  tensor from nothing;
- :class:`SimulatedMemory` (:mod:`.device_memory`): a simulated device whose memory counters
  (``torch.cuda.memory_allocated``, peaks, reserved, ``mem_get_info``) count the blocks a check
  allocates, optionally through a model of PyTorch's caching allocator: for checking memory trackers;
- :class:`SimulatedQueue` (:mod:`.kernel_queue`): a device that runs the kernels the host queues on a
  simulated clock, with the host's clocks, ``synchronize`` and CUDA events following it: for checking
  timers by what they measure;
- :mod:`.device_presence`: which devices the two simulations say there are (one CUDA GPU or none).

Exercise notebooks already handed out import some of these by other paths, kept for them: from
:mod:`gpulab.simulated` (``SimulatedGPU`` is :class:`TransferRecorder`; ``SimulatedMemory``,
``SimulatedQueue``, ``Copy``, ``Read``, ``FACTORY_OPS``, ``aten_ops``) and from :mod:`gpulab.grading`
(``patched``, ``recorded_time_fn``, ``TimedCall``): the same objects under those names.
"""

from __future__ import annotations

import importlib

__all__ = [
    "Copy",
    "FACTORY_OPS",
    "Read",
    "SimulatedMemory",
    "SimulatedQueue",
    "TimedCall",
    "TransferRecorder",
    "aten_ops",
    "everywhere",
    "patched",
    "recorded_time_fn",
]

_LAZY = {
    "TimedCall": "timer",
    "recorded_time_fn": "timer",
    "everywhere": "replace",
    "patched": "replace",
    "Copy": "transfers",
    "FACTORY_OPS": "transfers",
    "Read": "transfers",
    "TransferRecorder": "transfers",
    "aten_ops": "transfers",
    "SimulatedMemory": "device_memory",
    "SimulatedQueue": "kernel_queue",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value
