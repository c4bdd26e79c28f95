"""Simulated CUDA machines, and a simulated Mac: the course's GPU code, run on the CPU.

``GPULAB_SIMULATE=t4`` (or ``a100``, ``h100``, ``h200``, or ``4xh100`` for a node of four; ``mps``,
``mps-m1`` or ``mps-m3-max`` for a Mac's GPU, as PyTorch's MPS backend sees it: :mod:`.mps`) in the
environment makes every Python of the environment see that machine from its start (the hook is
installed by ``make``; see :mod:`gpulab.simulated.hook`). In a running program,
:func:`start` switches one on and :func:`stop` off; exercise checks use
:class:`gpulab.checks.TransferRecorder`, which switches one on for its block and keeps records of
what crossed between host and device.

It runs on a CPU build of torch, and on a CUDA build that finds no GPU (Colab's CPU runtime, a
CUDA wheel on a laptop), whose CUDA guard and hooks give way to the simulation's; where torch finds
a real GPU it refuses, and exercise checks (``TransferRecorder``) record on the real one. The
C++ part (``guard.cpp``, see :mod:`.native`) is compiled at first use and needs a C++ compiler.

What is simulated, faithfully where the course relies on it (each with a test naming its source):

- the devices (:mod:`.machines`): ``torch.cuda`` and ``torch.accelerator`` answer as on the
  hardware: count, names, capability, memory, SMs, L2, memory clock and bus width, threads per
  SM; what depends on the capability is PyTorch's own answer to it (``is_bf16_supported``,
  TF32, autocast);
- the CUDA runtime PyTorch calls (:mod:`.runtime`): current device per thread, streams,
  events, ``synchronize``, ``set_sync_debug_mode``, ``cudart().cudaMemGetInfo``;
- tensors (:mod:`.tensors`): real values computed on the CPU on a device that says ``cuda:i``;
  PyTorch's errors for mixed devices and ``.numpy()``; copies, pinned memory, ``non_blocking``;
  autograd and optimizers; ``torch.save``/``torch.load`` with ``map_location``
  (:mod:`.serialization`);
- memory (:mod:`.allocator`): the caching allocator's blocks, segments, counters, snapshots and
  history, ``empty_cache``, ``set_per_process_memory_fraction``, and ``torch.OutOfMemoryError``
  with CUDA's message, raised before the host holds the values;
- ``torch.distributed`` (:mod:`.nccl`): the ``nccl`` backend where each rank has its own
  GPU, with NCCL's refusals, carried over gloo;
- ``torch.profiler`` (:mod:`.profiler`) accepts ``ProfilerActivity.CUDA``;
- on a simulated Mac (:mod:`.mps`): ``torch.backends.mps``, ``torch.mps`` and ``torch.accelerator``
  answer for it, tensors are on ``mps:0``, float64 is refused as MPS refuses it, the MPS allocator's
  counters, limit and out-of-memory error, events, pinned memory as each torch version's MPS has it,
  and the profiler with no MPS activity and no MPS memory, as on a Mac. Exercise checks
  (``TransferRecorder``) switch a simulated Mac off for their block and record on a simulated T4.

What exercise checks use lives in :mod:`gpulab.checks`: the recorder of transfers between host and
GPU that runs on such a machine, and two smaller simulations of their own (a device's memory
counters, a queue of kernels on a simulated clock). The names exercise notebooks handed out
before import them by are kept here: ``SimulatedGPU`` (``gpulab.checks.TransferRecorder``),
``SimulatedMemory``, ``SimulatedQueue``, ``Copy``, ``Read``, ``FACTORY_OPS`` and ``aten_ops`` are the
objects of :mod:`gpulab.checks`.

What is not simulated, so that no run here is ever taken for a GPU's:

- speed: kernels run at the CPU's pace, one after another; nothing is asynchronous (an event's
  ``elapsed_time`` is host time between its records; a stream is always idle, so races between
  streams cannot happen here and a missing ``synchronize`` goes unseen);
- bandwidths of HBM, PCIe and NVLink; tensor cores; TF32's and reduced-precision reductions'
  rounding (float32 matmuls are exact float32 here);
- device rows in profiler traces (kernels, memcpy, ``cuda_runtime`` events): a trace holds CPU
  events only, with a ``PythonSubclass`` row where an operation on a simulated GPU ran (its
  self time is the CPU doing the GPU's work), and memory columns count host memory;
- the random numbers: a simulated GPU draws from a CPU generator (mt19937), not CUDA's Philox, so
  a seed gives other numbers than on a real GPU (the same ones on every simulated run);
- types: a parameter on a simulated GPU is a ``CudaTensor`` (``isinstance(p, nn.Parameter)``
  holds, ``type(p) is nn.Parameter`` does not); ``untyped_storage().data_ptr()`` raises;
- cuDNN, cuBLAS and their workspaces (``torch.backends.cudnn.is_available()`` stays False,
  ``torch.version.cuda`` None; ``memory_allocated()`` counts tensors alone, where an H100 with torch
  2.11 also counted the 32 MiB cuBLAS workspace each thread's first matrix product on a stream takes
  and keeps: 33 MiB more after a first forward, 65 MiB after the first backward, whose autograd
  thread has its own), the scratch memory other kernels take from the allocator and give back at once
  (a sum split across thread blocks takes a buffer and semaphores, ATen's ``Reduce.cuh``: 1 MiB and 512
  bytes at the peak of lesson 04's batch-1024 step on the H100), CUDA graphs (making one raises),
  ``torch.compile`` for CUDA (no Triton), custom CUDA kernels, IPC of CUDA tensors, GPU UUIDs in
  ``CUDA_VISIBLE_DEVICES``;
- host memory: values are real, so a simulated card holds what this machine's RAM holds. A
  ``torch.empty`` of 16 MiB or more is lazily committed host memory (an anonymous mapping with
  MAP_NORESERVE: pages cost nothing until written), so an 80 GiB card reports, caps, holds and
  refuses 80 GiB of allocations on a smaller machine; what is written must fit in the host's RAM,
  and a result much larger than its operands (under 16 MiB, by an operation other than those
  that grow their input: repeat, expand's copy, new_*, outer, kron) is computed on the host
  before the card is asked for it;
- several nodes; NCCL's algorithms (ring, tree) and its asynchronous error handling.

Nothing simulated reaches a reader as a GPU result: ``gpulab bench`` refuses to write reference
records while simulating, and device names printed by gpulab say "(simulated)".
"""

from __future__ import annotations

import importlib

__all__ = [
    "Copy",
    "FACTORY_OPS",
    "Read",
    "SimulatedGPU",
    "SimulatedMemory",
    "SimulatedQueue",
    "aten_ops",
    "is_simulating",
    "running",
    "start",
    "stop",
]

# name here: (module, name there); the recorders of gpulab.checks under the names notebooks handed out import
_LAZY = {
    "Copy": ("gpulab.checks.transfers", "Copy"),
    "FACTORY_OPS": ("gpulab.checks.transfers", "FACTORY_OPS"),
    "Read": ("gpulab.checks.transfers", "Read"),
    "SimulatedGPU": ("gpulab.checks.transfers", "TransferRecorder"),
    "aten_ops": ("gpulab.checks.transfers", "aten_ops"),
    "SimulatedMemory": ("gpulab.checks.device_memory", "SimulatedMemory"),
    "SimulatedQueue": ("gpulab.checks.kernel_queue", "SimulatedQueue"),
    "running": (f"{__name__}.install", "running"),
    "start": (f"{__name__}.install", "start"),
    "stop": (f"{__name__}.install", "stop"),
}


def is_simulating() -> bool:
    """Whether a simulated machine is switched on in this process (no torch import needed to ask)."""
    import sys

    install = sys.modules.get(f"{__name__}.install")
    return install is not None and install.running() is not None


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, there = _LAZY[name]
    value = getattr(importlib.import_module(module), there)
    globals()[name] = value
    return value
