"""``torch.distributed``'s ``nccl`` backend on a simulated node, carried over gloo.

What is simulated, through PyTorch's own ``distributed_c10d`` code (``init_process_group``,
``new_group``, ``barrier``, DDP):

- ``dist.is_nccl_available()`` is True and ``torch.cuda.nccl.version()`` answers;
  ``init_process_group("nccl")`` (any rendezvous, ``device_id=`` for eager init) builds
  PyTorch's ``ProcessGroup`` with a CUDA backend of type NCCL, as on a CUDA build, and the
  default timeout is NCCL's (10 minutes);
- that backend is a :class:`ProcessGroupNCCL` standing in for the real one: a ``ProcessGroupGloo``
  over the same store. A collective on simulated CUDA tensors reaches ``CudaTensor``'s
  ``__torch_dispatch__`` as a ``c10d`` operation; :func:`_collective` runs the operation's CUDA
  kernel (which asks the group for its CUDA backend, so gloo) on the CPU tensors holding the
  values, in place, and hands back the CUDA tensors, also in the Work's future (DDP reads it);
- ``_c10d_functional`` collectives (DTensor, ``funcol``, FSDP2's ``full_tensor``, gradient clipping,
  full state dicts): :func:`_functional` runs their kernel on the CUDA tensors, whose collective
  then comes to :func:`_collective`; FSDP2's own all-gathers and reduce-scatters are ``c10d``
  operations;
- NCCL's refusals: a CPU tensor on an nccl-only group reaches the CPU kernel and gets PyTorch's
  own error; two ranks on one GPU get NCCL's "Duplicate GPU detected" as a ``DistBackendError``
  at their first collective, or at ``init_process_group`` with ``device_id`` (communicator
  init, where NCCL finds it); ``recv`` from any source is refused as ProcessGroupNCCL does.

Not simulated: NCCL's algorithms (ring, tree, NVLS) and its rounding order (gloo reduces);
its asynchronous error handling, watchdog and flight recorder (a collective ends before the call
returns, and a peer that died raises gloo's error there); CUDA streams (the work runs on
gloo's threads); speed and bandwidth; ``ncclCommSplit`` (a new group makes new connections, and a
rank outside it does nothing);
several nodes; ``torch.cuda.nccl``'s single-process collectives. Once ``init_process_group`` has returned,
``group._get_backend(cuda)`` answers with the gloo object itself (named "gloo"), not the stand-in.
"""

from __future__ import annotations

import functools
import socket
import threading
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["ProcessGroupNCCL", "patches"]

# torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp, kProcessGroupNCCLDefaultTimeout (10 * 60 * 1000 ms),
# also "Default value is 10 minutes for NCCL" in init_process_group's docstring.
NCCL_TIMEOUT = timedelta(minutes=10)
# The NCCL of the report duplicate_gpu_error follows (this CPU torch has none to ask); torch.cuda.nccl.version().
NCCL_VERSION = (2, 28, 9)
_CUDA_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA)
# Each nccl group's GPU bookkeeping, by group name. Not kept on the backend object itself: C++ hands
# back that Python object only while it lives, and keeping it alive would leave gloo's threads to
# be torn down while the interpreter exits. A new group of the same name replaces the entry.
_groups: dict[str, _Devices] = {}


class Options:
    """``ProcessGroupNCCL.Options``: what ``init_process_group``/``new_group`` set (kept, not used)."""

    def __init__(self, is_high_priority_stream: bool = False):
        self.is_high_priority_stream = is_high_priority_stream
        self._timeout = NCCL_TIMEOUT
        self.split_from = None
        self.split_color = 0
        self.global_ranks_in_group: list[int] = []
        self.group_name = ""
        self.config = None


def _bus_id(index: int) -> int:
    """NCCL's busId of a GPU: its PCI address as one number (nccl src/misc/utils.cc, int64ToBusId)."""
    props = torch.cuda.get_device_properties(index)
    return (props.pci_domain_id << 20) | (props.pci_bus_id << 12) | (props.pci_device_id << 4)


def duplicate_gpu_error(rank: int, peer: int, bus_id: int) -> dist.DistBackendError:
    """The error PyTorch raises when NCCL finds ``rank`` and ``peer`` on one GPU.

    NCCL (src/init.cc, initTransportsRank) warns "Duplicate GPU detected : rank %d and rank %d both
    on CUDA device %lx" (this rank, then the first other rank on its GPU, then the busId) and
    returns ncclInvalidUsage; PyTorch's C10D_NCCL_CHECK (NCCLUtils.hpp) raises DistBackendError with
    "NCCL error in: <file>:<line>, " + ncclGetErrorWithVersion + "\\n" + getNcclErrorDetailStr
    (NCCLUtils.cpp). The whole text is as a recent CUDA wheel of PyTorch printed it, with NCCL
    2.28.9 (github.com/Intellindust-AI-Lab/DEIMv2, issue 155); file, line and version are that build's.
    """
    version = ".".join(map(str, NCCL_VERSION))
    return dist.DistBackendError(
        f"NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, invalid usage (run with "
        f"NCCL_DEBUG=WARN for details), NCCL version {version}\nncclInvalidUsage: This usually reflects invalid "
        f"usage of NCCL library.\nLast error:\nDuplicate GPU detected : rank {rank} and rank {peer} both on CUDA "
        f"device {bus_id:x}"
    )


class _Devices:
    """Which GPU each rank of a group is on, told through the group's store, as NCCL's init tells it."""

    def __init__(self, store, rank: int, size: int):
        self.store, self.rank, self.size = store, rank, size
        self.device: int | None = None
        self.checked: set[int] = set()  # peers known to be on another GPU
        self.lock = threading.Lock()

    def connect(self, index: int, peers) -> None:
        """Tell the group this rank's GPU (once) and refuse a peer on the same one, as NCCL's init does.

        ``peers`` are the group ranks taking part: all of them for a collective, the other one for
        send/recv (NCCL makes a communicator per pair). Waits, through the store, for each to say.
        """
        with self.lock:
            if self.device is None:
                self.device = index
                self.store.set(str(self.rank), f"{socket.gethostname()}/{_bus_id(index):x}")
            peers = sorted(p for p in peers if p != self.rank and p not in self.checked)
            if not peers:
                return
            self.store.wait([str(p) for p in peers])
            mine = self.store.get(str(self.rank))
            for peer in peers:
                if self.store.get(str(peer)) == mine:
                    raise duplicate_gpu_error(self.rank, peer, _bus_id(self.device))
                self.checked.add(peer)


class ProcessGroupNCCL(c10d.ProcessGroupGloo):
    """The stand-in for ``ProcessGroupNCCL``: gloo over the group's store, with NCCL's device check.

    ``_new_process_group_helper`` builds it as ``ProcessGroupNCCL(store, rank, size, options)``
    and registers it as the group's CUDA backend (type NCCL); the values travel through gloo.
    """

    Options = Options

    def __init__(self, store, rank: int, size: int, options: Options | None = None):
        self.nccl_options = options if options is not None else Options()
        super().__init__(dist.PrefixStore("gloo/", store), rank, size, self.nccl_options._timeout)
        self.devices = _Devices(dist.PrefixStore("simulated_nccl_device/", store), rank, size)
        _groups[self.nccl_options.group_name] = self.devices

    @property
    def supports_splitting(self) -> bool:
        # As NCCL's: init_process_group(device_id=...) then connects eagerly (eager_connect_single_device).
        return True

    def eager_connect_single_device(self, device) -> None:
        """``init_process_group(device_id=...)``: form the communicator now, so find a shared GPU now."""
        self.devices.connect(torch.device(device).index, range(self.devices.size))

    def perform_nocolor_split(self, device) -> None:
        """A rank outside a new group takes part in NCCL's split; here there is nothing to do."""


def _get_split_source(pg):
    """``distributed_c10d._get_split_source``, but never the gloo backend under a simulated nccl group.

    After ``init_process_group(device_id=...)`` a new group is split from the default group's CUDA
    backend, and every rank outside it calls ``perform_nocolor_split`` on it. C++ hands back that
    backend as the gloo object it is (not :class:`ProcessGroupNCCL`); splitting is not simulated, so a
    new group makes its own connections, as it does where NCCL cannot split.
    """
    source = _real_get_split_source(pg)
    if (
        isinstance(source, c10d.ProcessGroupGloo)
        and not isinstance(source, ProcessGroupNCCL)
        and "cuda:nccl" in c10d._world.pg_backend_config.get(pg, "")
    ):
        return None
    return source


_real_get_split_source = getattr(c10d, "_get_split_source", None)


# ----------------------------------------------------------------- collectives on simulated CUDA tensors


@functools.cache
def _argument_index(op, name: str) -> int | None:
    names = [argument.name for argument in op._schema.arguments]
    return names.index(name) if name in names else None


def _argument(op, args, kwargs, name: str):
    index = _argument_index(op, name)
    if index is None:
        return None
    return args[index] if index < len(args) else kwargs.get(name)


_POINT_TO_POINT = {torch.ops.c10d.send.default, torch.ops.c10d.recv_.default, torch.ops.c10d.recv_any_source_.default}


def _collective(op, node, *args, **kwargs):
    """A ``c10d`` operation on simulated CUDA tensors (a ``tensors._SPECIAL`` handler, given the machine)."""
    from .tensors import CudaTensor

    group = dist.ProcessGroup.unbox(_argument(op, args, kwargs, "process_group"))
    # A group whose CUDA backend is nccl (init_process_group says so in the world's records).
    nccl = "cuda:nccl" in c10d._world.pg_backend_config.get(group, "")
    devices = _groups.get(group.group_name) if nccl else None
    if devices is not None:
        if op is torch.ops.c10d.recv_any_source_.default:
            # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ProcessGroupNCCL::recvAnysource
            raise NotImplementedError("ProcessGroupNCCL does not support recvAnysource")
        peer = _argument(op, args, kwargs, "dst")
        peer = _argument(op, args, kwargs, "src") if peer is None else peer
        wrapper = next(t for t in tree_flatten((args, kwargs))[0] if isinstance(t, CudaTensor))
        devices.connect(wrapper.device.index, range(group.size()) if peer is None else [peer])
    outer = {}

    def unwrap(value):
        if isinstance(value, CudaTensor):
            outer[id(value._inner)] = value
            return value._inner
        return value

    def rewrap(value):
        return outer.get(id(value), value) if isinstance(value, torch.Tensor) else value

    # The operation's CUDA kernel (torch/csrc/distributed/c10d/Ops.cpp) calls the group's CUDA backend,
    # here gloo, which works in place on the CPU tensors it is given: those holding the values.
    out = op.redispatch(_CUDA_KEYS, *tree_map(unwrap, args), **tree_map(unwrap, kwargs))
    results = out if isinstance(out, tuple) else (out,)
    if isinstance(out, torch.ScriptObject) and op not in _POINT_TO_POINT:
        # A Work alone (the coalesced collectives, which _c10d_functional's kernels call): finished here too,
        # or gloo's threads would still be writing the outputs when the caller reads them.
        c10d.Work.unbox(out).wait()
    if len(results) == 2 and not isinstance(results[1], torch.Tensor) and results[1] is not None:
        # (tensors, Work): the Work's future gives the CUDA tensors, as ProcessGroupNCCL's does
        # (DDP's reducer makes its gradients from that value).
        work = c10d.Work.unbox(results[1])
        if op not in _POINT_TO_POINT:
            # The collective finishes here, as everything on the simulated GPUs does, and raises gloo's
            # error (a peer that died) at the call: a Work made from a future never raises it, and the
            # rank would go on with its own values (torch/csrc/distributed/c10d/Work.cpp, FutureWrappingWork).
            work.wait()
        try:
            future = work.get_future().then(lambda done: tree_map(rewrap, done.value()))
            results = (results[0], torch._C._distributed_c10d._create_work_from_future(future).boxed())
        except RuntimeError:  # a gloo Work without a future (reduce_scatter_single): the Work as it is
            pass
        results = (tree_map(rewrap, results[0]), results[1])
    return results if isinstance(out, tuple) else results[0]


def _collective_ops() -> dict:
    """``{OpOverload: handler}`` for every ``c10d`` operation that takes a process group."""
    handlers = {}
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("c10d::"):
            continue
        packet = getattr(torch.ops.c10d, name.split("::", 1)[1])
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if _argument_index(op, "process_group") is not None:
                handlers[op] = functools.partial(_collective, op)
    return handlers


def _functional(op, node, *args, **kwargs):
    """A ``_c10d_functional`` operation (DTensor, ``funcol``) on simulated CUDA tensors.

    Its kernel (torch/csrc/distributed/c10d/Functional.cpp, registered for CompositeExplicitAutograd)
    allocates the outputs like its inputs, calls the group's collective as a ``c10d`` operation and
    registers the Work under each output for ``wait_tensor``. Run for the CUDA key on the simulated
    tensors themselves, it makes its outputs on the simulated GPU and its collective reaches
    :func:`_collective`; run on the host tensors (as other operations are), it would ask the group
    for a CPU backend, which an nccl group lacks ("No backend type associated with device type cpu").

    The collective has finished when :func:`_collective` returns, so its Work is taken out of the
    registry at once (``wait_tensor`` on the outputs). The registry knows a tensor by its storage, and
    a view of a simulated tensor has a storage of its own: DTensor waits on views
    (``AsyncCollectiveTensor``), which would find nothing and leave every Work in the registry.
    """
    out = op.redispatch(_CUDA_KEYS, *args, **kwargs)
    if op not in _FUNCTIONAL_POINT_TO_POINT and op is not _WAIT_TENSOR:
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, torch.Tensor):
                _WAIT_TENSOR.redispatch(_CUDA_KEYS, tensor)
    return out


_WAIT_TENSOR = torch.ops._c10d_functional.wait_tensor.default
# Their Work is waited on by the caller's wait_tensor: a receive finishes when its sender has sent.
_FUNCTIONAL_POINT_TO_POINT = {
    getattr(getattr(torch.ops._c10d_functional, name), overload)
    for name in ("isend", "irecv", "batch_p2p_ops")
    if hasattr(torch.ops._c10d_functional, name)
    for overload in getattr(torch.ops._c10d_functional, name).overloads()
}


def _functional_ops() -> dict:
    """``{OpOverload: handler}`` for every ``_c10d_functional`` operation."""
    handlers = {}
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("_c10d_functional::"):
            packet = getattr(torch.ops._c10d_functional, name.split("::", 1)[1])
            for overload in packet.overloads():
                op = getattr(packet, overload)
                handlers[op] = functools.partial(_functional, op)
    return handlers


def patches() -> list:
    """``(object, attribute, value)`` that ``install.finish`` sets (and ``install.stop`` restores)."""
    from . import tensors

    version = (NCCL_VERSION[0] << 32) | (NCCL_VERSION[1] << 16) | NCCL_VERSION[2]
    return [
        (c10d, "_NCCL_AVAILABLE", True),
        (c10d, "ProcessGroupNCCL", ProcessGroupNCCL),
        (dist, "ProcessGroupNCCL", ProcessGroupNCCL),
        (c10d, "default_pg_nccl_timeout", NCCL_TIMEOUT),
        (dist.constants, "default_pg_nccl_timeout", NCCL_TIMEOUT),
        # torch/csrc/cuda/python_nccl.cpp: the version as major << 32 | minor << 16 | patch
        (torch._C, "_nccl_version", lambda: version),
        (torch._C, "_nccl_version_suffix", lambda: b""),
        (tensors, "_SPECIAL", {**tensors._SPECIAL, **_collective_ops(), **_functional_ops()}),
    ] + ([(c10d, "_get_split_source", _get_split_source)] if _real_get_split_source is not None else [])
