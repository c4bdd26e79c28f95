"""torch.distributed's nccl backend on a simulated node (gpulab.simulated.nccl), carried over gloo.

Ranks run under torchrun (``python -m torch.distributed.run``), or as plain processes where the
rendezvous is ``tcp://`` or ``store=``, with ``GPULAB_SIMULATE=2xh100``; each writes its results to
``result-<rank>.json``, and the tests compare them with what PyTorch and NCCL do. Sources are files
of the installed torch (``torch/...``) unless said otherwise; a failure shows every process's output.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import simulates

pytestmark = simulates
PYTHON = sys.executable
NCCL_DUPLICATE = (
    "NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, invalid usage (run with "
    "NCCL_DEBUG=WARN for details), NCCL version 2.28.9\nncclInvalidUsage: This usually reflects invalid "
    "usage of NCCL library.\nLast error:\nDuplicate GPU detected : rank {rank} and rank {peer} both on "
    "CUDA device 18000"
)

PRELUDE = """\
import faulthandler, json, os, sys, warnings
faulthandler.dump_traceback_later(100, exit=True)   # a hang shows where, before the test's 120 s
import torch, torch.distributed as dist
from torch.distributed import distributed_c10d as c10d
rank = int(os.environ.get("RANK", "0"))
results = {}

def refusal(call):
    try:
        call()
    except Exception as error:
        return [type(error).__module__ + "." + type(error).__name__, str(error)]
    return None

def report():
    with open(f"result-{rank}.json", "w") as file:
        json.dump(results, file)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(tmp_path, simulate: str | None) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "GPULAB_SIMULATE"}
    if simulate:
        env["GPULAB_SIMULATE"] = simulate
    env["OMP_NUM_THREADS"] = "1"
    env["TMPDIR"] = str(tmp_path)  # torchrun's log folders (torchelastic_*) go with the test's folder
    return env


def _communicate(processes: list) -> list[tuple[int, str, str]]:
    """Each process's (exit status, stdout, stderr); after 120 s, what they wrote until they are killed."""
    deadline = time.monotonic() + 120
    done = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # its own session: torchrun and its ranks
            out, err = process.communicate()
            err += "\n[killed after 120 s]"
        done.append((process.returncode, out, err))
    return done


def _run(
    tmp_path, body: str, *args, ranks: int = 2, launcher: str = "torchrun", simulate: str | None = "2xh100"
) -> dict:
    """Run ``body`` on ``ranks`` ranks under torchrun, or as ``ranks`` plain processes; {rank: results}."""
    script = tmp_path / "script.py"
    script.write_text(PRELUDE + textwrap.dedent(body) + "\nreport()\n")
    start = functools.partial(
        subprocess.Popen,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    if launcher == "torchrun":
        command = [
            PYTHON,
            "-m",
            "torch.distributed.run",
            f"--nproc_per_node={ranks}",
            f"--master_port={_free_port()}",
            str(script),
            *map(str, args),
        ]
        processes = [start(command, env=_environment(tmp_path, simulate))]
    else:
        env = _environment(tmp_path, simulate)
        processes = [start([PYTHON, str(script), *map(str, args)], env={**env, "RANK": str(i)}) for i in range(ranks)]
    done = _communicate(processes)
    output = "\n".join(
        f"=== process {i}: exit status {status}\n--- stdout\n{out}\n--- stderr\n{err}"
        for i, (status, out, err) in enumerate(done)
    )
    results = {int(path.stem.split("-")[1]): json.loads(path.read_text()) for path in tmp_path.glob("result-*.json")}
    assert all(status == 0 for status, _, _ in done) and len(results) == ranks, output
    return results


COLLECTIVES = """
torch.cuda.set_device(rank)
dist.init_process_group("nccl")                                  # env://, as torchrun sets it
dev = torch.device("cuda", rank)
results["available"] = dist.is_nccl_available()
results["backend"] = dist.get_backend()
results["device_types"] = [str(d) for d in dist.group.WORLD._device_types]
results["nccl_version"] = list(torch.cuda.nccl.version())
results["timeout_min"] = c10d._get_default_timeout(dist.Backend.NCCL).total_seconds() / 60
results["is_cuda_tensor_class"] = type(torch.ones(1, device=dev)).__name__

t = torch.full((4,), float(rank + 1), device=dev)
dist.all_reduce(t)
results["all_reduce"] = [t.device.type, t.tolist()]
m = torch.tensor([float(rank)], device=dev)
dist.all_reduce(m, op=dist.ReduceOp.MAX)
results["all_reduce_max"] = m.tolist()
b = torch.full((3,), float(rank), device=dev)
dist.broadcast(b, src=1)
results["broadcast"] = b.tolist()
outs = [torch.empty(2, device=dev) for _ in range(2)]
dist.all_gather(outs, torch.full((2,), float(rank), device=dev))
results["all_gather"] = [o.tolist() for o in outs]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)   # torch 2.13 prefers all_gather_single / reduce_scatter_single
    big = torch.empty(4, device=dev)
    dist.all_gather_into_tensor(big, torch.full((2,), float(rank), device=dev))
    results["all_gather_into_tensor"] = big.tolist()
    rs = torch.empty(2, device=dev)
    dist.reduce_scatter_tensor(rs, torch.arange(4.0, device=dev) * (rank + 1))
    results["reduce_scatter_tensor"] = rs.tolist()
rs2 = torch.empty(2, device=dev)
dist.reduce_scatter(rs2, [torch.full((2,), 1.0 + rank, device=dev), torch.full((2,), 10.0 + rank, device=dev)])
results["reduce_scatter"] = rs2.tolist()
r = torch.full((2,), float(rank + 1), device=dev)
dist.reduce(r, dst=0)
results["reduce"] = r.tolist()
if rank == 0:
    dist.send(torch.tensor([5.0, 6.0], device=dev), dst=1)
else:
    x = torch.empty(2, device=dev)
    dist.recv(x, src=0)
    results["recv"] = x.tolist()
received = torch.empty(2, device=dev)
requests = [dist.isend(torch.full((2,), float(rank), device=dev), 1 - rank), dist.irecv(received, 1 - rank)]
for request in requests:
    request.wait()
results["irecv"] = received.tolist()
a2a = torch.empty(2, device=dev)
dist.all_to_all_single(a2a, torch.tensor([rank * 10.0, rank * 10.0 + 1], device=dev))
results["all_to_all_single"] = a2a.tolist()
work = dist.all_reduce(torch.ones(2, device=dev), async_op=True)
work.wait()
value = work.get_future().value()[0]
results["async"] = [str(value.device), value.tolist()]

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist.barrier()
results["barrier_warnings"] = [str(w.message) for w in caught]

pair = dist.new_group([0, 1], backend="nccl")
x = torch.ones(1, device=dev)
dist.all_reduce(x, group=pair)
results["new_group"] = [dist.get_backend(pair), x.tolist()]
alone = dist.new_group([1], backend="nccl")
results["non_member"] = alone is dist.GroupMember.NON_GROUP_MEMBER
if rank == 1:
    y = torch.full((1,), 7.0, device=dev)
    dist.all_reduce(y, group=alone)
    results["single_rank_group"] = y.tolist()

results["cpu_tensor"] = refusal(lambda: dist.all_reduce(torch.ones(1)))
results["recv_any_source"] = refusal(lambda: dist.recv(torch.empty(1, device=dev)))
dist.barrier()
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def collectives(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("collectives"), COLLECTIVES)


def test_nccl_is_available_and_named(collectives):
    for got in collectives.values():
        assert got["available"] is True
        # torch/distributed/distributed_c10d.py, get_backend: the name init_process_group was given
        assert got["backend"] == "nccl"
        # BackendConfig: "nccl" alone gets Backend.backend_capability["nccl"] == ["cuda"]
        assert got["device_types"] == ["cuda"]
        # torch/distributed/c10d_logger.py:66 asks torch.cuda.nccl.version() of every nccl collective
        assert got["nccl_version"] == [2, 28, 9]
        # ProcessGroupNCCL.hpp kProcessGroupNCCLDefaultTimeout; init_process_group's docstring: "10 minutes for NCCL"
        assert got["timeout_min"] == 10
        assert got["is_cuda_tensor_class"] == "CudaTensor"


def test_collectives_give_the_values_of_nccl(collectives):
    # torch.distributed docs (distributed.html): each collective's result on each rank
    zero, one = collectives[0], collectives[1]
    for got in (zero, one):
        assert got["all_reduce"] == ["cuda", [3.0] * 4]
        assert got["all_reduce_max"] == [1.0]
        assert got["broadcast"] == [1.0] * 3
        assert got["all_gather"] == [[0.0, 0.0], [1.0, 1.0]]
        assert got["all_gather_into_tensor"] == [0.0, 0.0, 1.0, 1.0]
        assert got["async"][1] == [2.0, 2.0]
    assert zero["reduce_scatter_tensor"] == [0.0, 3.0] and one["reduce_scatter_tensor"] == [6.0, 9.0]
    assert zero["reduce_scatter"] == [3.0, 3.0] and one["reduce_scatter"] == [21.0, 21.0]
    assert zero["reduce"] == [3.0, 3.0]
    assert one["recv"] == [5.0, 6.0]
    assert zero["irecv"] == [1.0, 1.0] and one["irecv"] == [0.0, 0.0]
    assert zero["all_to_all_single"] == [0.0, 10.0] and one["all_to_all_single"] == [1.0, 11.0]
    # a Work's future holds the collective's CUDA tensors (DDP's reducer builds gradients from it)
    assert zero["async"][0] == "cuda:0" and one["async"][0] == "cuda:1"


def test_barrier_warns_about_the_current_device_without_device_id(collectives):
    # torch/distributed/distributed_c10d.py, barrier (line 5342): rank 0 warns when no device_id was bound
    message = (
        "barrier(): using the device under current context. You can specify `device_id` in "
        "`init_process_group` to mute this warning."
    )
    assert collectives[0]["barrier_warnings"] == [message]
    assert collectives[1]["barrier_warnings"] == []


def test_new_group_with_nccl(collectives):
    for got in collectives.values():
        assert got["new_group"] == ["nccl", [2.0]]
    assert collectives[0]["non_member"] is True and collectives[1]["non_member"] is False
    assert collectives[1]["single_rank_group"] == [7.0]


def test_a_cpu_tensor_is_refused_as_nccl_refuses_it(collectives):
    # torch/csrc/distributed/c10d/ProcessGroup.hpp, getBackend (the text is in torch/lib/libtorch_cpu.so):
    # a group made for nccl has no CPU backend, and the CPU kernel of c10d::allreduce_ asks for one.
    for got in collectives.values():
        assert got["cpu_tensor"] == ["builtins.RuntimeError", "No backend type associated with device type cpu"]


def test_recv_from_any_source_is_refused(collectives):
    # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ProcessGroupNCCL::recvAnysource
    for got in collectives.values():
        assert got["recv_any_source"] == [
            "builtins.NotImplementedError",
            "ProcessGroupNCCL does not support recvAnysource",
        ]


DDP = """
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group(backend="nccl", device_id=torch.device("cuda", local_rank))   # eager init
dev = torch.device("cuda", local_rank)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist.barrier()
results["barrier_warnings"] = [str(w.message) for w in caught if "barrier" in str(w.message)]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
reference = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
reference.load_state_dict(model.state_dict())
ddp = torch.nn.parallel.DistributedDataParallel(model.to(dev), device_ids=[local_rank])
x, y = torch.randn(8, 4), torch.randn(8, 1)
mine = slice(4 * rank, 4 * rank + 4)
torch.nn.functional.mse_loss(ddp(x[mine].to(dev)), y[mine].to(dev)).backward()
torch.nn.functional.mse_loss(reference(x), y).backward()   # one process, the whole batch
results["grad_devices"] = sorted({str(p.grad.device) for p in ddp.parameters()})
results["grad_error"] = max((p.grad.cpu() - q.grad).abs().max().item()
                            for p, q in zip(ddp.parameters(), reference.parameters()))
torch.optim.SGD(ddp.parameters(), lr=0.1).step()
torch.optim.SGD(reference.parameters(), lr=0.1).step()
results["param_error"] = max((p.detach().cpu() - q.detach()).abs().max().item()
                             for p, q in zip(ddp.parameters(), reference.parameters()))
dist.destroy_process_group()
"""


def test_ddp_over_simulated_nccl_with_device_id(tmp_path):
    results = _run(tmp_path, DDP)
    for rank, got in results.items():
        # distributed_c10d.py, barrier: with device_id bound (group.bound_device_id) there is no warning
        assert got["barrier_warnings"] == []
        assert got["grad_devices"] == [f"cuda:{rank}"]
        # DDP averages the ranks' gradients: the gradient of the whole batch on one process
        assert got["grad_error"] < 1e-6
        assert got["param_error"] < 1e-6


SUBGROUPS = """
mine = torch.device("cuda", rank)
torch.cuda.set_device(mine)
dist.init_process_group("nccl", device_id=mine)
world = dist.get_world_size()
groups = {n: dist.new_group(list(range(n))) for n in range(2, world + 1)}   # every rank makes every group
sums = {}
for n, group in groups.items():
    if rank < n:                                   # the others are outside it: NCCL's no-color split
        t = torch.full((2,), float(rank + 1), device=mine)
        dist.all_reduce(t, group=group)
        sums[n] = [t.tolist(), str(t.device)]
results["sums"] = sums
dist.barrier()
"""


def test_new_groups_of_every_size_after_device_id(tmp_path):
    """distributed_c10d.py, ``_new_process_group_helper``: with ``device_id`` bound, a new group is split
    from the default group's backend, and a rank outside it calls ``perform_nocolor_split``."""
    results = _run(tmp_path, SUBGROUPS, ranks=4, simulate="4xh100")
    for rank, got in results.items():
        expected = {str(n): [[float(n * (n + 1) // 2)] * 2, f"cuda:{rank}"] for n in range(2, 5) if rank < n}
        assert got["sums"] == expected, rank


DEAD_PEER = """
mine = torch.device("cuda", rank)
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=rank, world_size=2, device_id=mine)
t = torch.full((1,), 5.0, device=mine)
if rank == 1:
    os._exit(3)                                     # dies before the collective
results["error"] = refusal(lambda: dist.all_reduce(t))
results["value"] = t.item()
report()
os._exit(0)
"""


def test_a_collective_whose_peer_died_raises(tmp_path):
    """A peer that died is an error, never the rank's own values handed back as the result. (NCCL's watchdog
    reports it asynchronously; the simulated collective raises gloo's error at the call.) Plain processes: under
    torchrun the agent would stop rank 0 as soon as rank 1 exits, before rank 0 can say what it saw."""
    script = tmp_path / "script.py"
    script.write_text(PRELUDE + textwrap.dedent(DEAD_PEER))
    env, port = _environment(tmp_path, "2xh100"), _free_port()
    processes = [
        subprocess.Popen(
            [PYTHON, str(script), str(port)],
            cwd=tmp_path,
            env={**env, "RANK": str(i)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for i in range(2)
    ]
    done = _communicate(processes)
    assert [status for status, _, _ in done] == [0, 3], done
    got = json.loads((tmp_path / "result-0.json").read_text())
    # gloo says the peer closed the connection, or (when the peer's exit resets it first) that it was reset.
    assert got["error"] is not None and re.search(r"(closed|reset) by peer", got["error"][1]), (got, done[0][2][-2000:])


RENDEZVOUS = """
own_port, shared_port, store_port = map(int, sys.argv[1:4])
mine = torch.device("cuda", rank)
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{own_port}", rank=rank, world_size=2)
t = torch.ones(1, device=mine)
dist.all_reduce(t)
results["tcp_own_gpus"] = t.tolist()
dist.destroy_process_group()

# both ranks on cuda:0 (the current device, never set): NCCL finds it at communicator init, i.e. the first collective
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{shared_port}", rank=rank, world_size=2)
results["first_collective"] = refusal(lambda: dist.all_reduce(torch.ones(1, device="cuda")))
results["again"] = refusal(lambda: dist.all_reduce(torch.ones(1, device="cuda:0")))
dist.destroy_process_group()

store = dist.TCPStore("127.0.0.1", store_port, 2, rank == 0)
results["eager"] = refusal(lambda: dist.init_process_group("nccl", store=store, rank=rank, world_size=2,
                                                           device_id=torch.device("cuda", 0)))
dist.init_process_group("nccl", store=dist.PrefixStore("again", store), rank=rank, world_size=2, device_id=mine)
t = torch.ones(1, device=mine)
dist.all_reduce(t)
results["store_own_gpus"] = t.tolist()
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def rendezvous(tmp_path_factory):
    return _run(
        tmp_path_factory.mktemp("rendezvous"), RENDEZVOUS, _free_port(), _free_port(), _free_port(), launcher="plain"
    )


def test_tcp_and_store_rendezvous_with_a_gpu_per_rank(rendezvous):
    for got in rendezvous.values():
        assert got["tcp_own_gpus"] == [2.0]
        assert got["store_own_gpus"] == [2.0]


def test_two_ranks_on_one_gpu_are_refused_as_nccl_refuses_them(rendezvous):
    for rank, got in rendezvous.items():
        # NCCL src/init.cc, initTransportsRank: "Duplicate GPU detected : rank %d and rank %d both on CUDA
        # device %lx" (this rank first; the busId of cuda:0, PCI 0000:18:00.0); raised by PyTorch's
        # C10D_NCCL_CHECK as DistBackendError, as reported in github.com/Intellindust-AI-Lab/DEIMv2 issue 155
        expected = ["torch.distributed.DistBackendError", NCCL_DUPLICATE.format(rank=rank, peer=1 - rank)]
        assert got["first_collective"] == expected
        assert got["again"] == expected  # the communicator is never made, so every collective fails
        assert got["eager"] == expected  # device_id: ncclCommInitRank at init_process_group


DEFAULT_BACKEND = """
dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1)
results["backend"] = dist.get_backend()
results["config"] = dist.get_backend_config()
t = torch.ones(2, device="cuda")
dist.all_reduce(t)
results["all_reduce"] = t.tolist()
results["cpu_tensor"] = refusal(lambda: dist.all_reduce(torch.ones(1)))
dist.destroy_process_group()
"""


def test_init_without_backend_picks_what_this_torch_picks_on_a_gpu_machine(tmp_path):
    got = _run(tmp_path, DEFAULT_BACKEND, ranks=1, launcher="plain")[0]
    # torch/distributed/distributed_c10d.py, BackendConfig (lines 419-422): with no backend, the one registered
    # for the accelerator, torch._C._get_accelerator() (cuda), only: "cuda:nccl" (older torch also made gloo for
    # the CPU); get_backend gives the name it was given, "undefined"
    assert got["config"] == "cuda:nccl"
    assert got["backend"] == "undefined"
    assert got["all_reduce"] == [1.0, 1.0]
    assert got["cpu_tensor"] == ["builtins.RuntimeError", "No backend type associated with device type cpu"]


WITHOUT = """
from gpulab.simulated import install, tensors
import torch._C
def state():
    return [dist.is_nccl_available(), hasattr(dist, "ProcessGroupNCCL"), hasattr(torch._C, "_nccl_version")]
special = tensors._SPECIAL
results["before"] = state()
results["init"] = refusal(lambda: dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1))
install.start("2xh100")
results["started"] = state()
install.stop()
results["stopped"] = state()
results["special_restored"] = tensors._SPECIAL is special
"""


def test_without_a_simulated_machine_nothing_changes(tmp_path):
    got = _run(tmp_path, WITHOUT, ranks=1, launcher="plain", simulate=None)[0]
    assert got["before"] == [False, False, False]
    # distributed_c10d.py, _new_process_group_helper: the Backend.NCCL branch on a build without NCCL
    assert got["init"] == ["builtins.RuntimeError", "Distributed package doesn't have NCCL built in"]
    assert got["started"] == [True, True, True]
    assert got["stopped"] == [False, False, False]
    assert got["special_restored"] is True


FSDP2 = """
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
warnings.filterwarnings("ignore", category=FutureWarning)
cuda = torch.cuda.is_available()                  # a simulated machine: nccl on cuda:rank; none: gloo on the CPU
dev = torch.device("cuda", rank) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(dev)
dist.init_process_group("nccl" if cuda else "gloo", device_id=dev if cuda else None)
mesh = init_device_mesh(dev.type, (dist.get_world_size(),))
allocated = (lambda: torch.cuda.memory_allocated(dev)) if cuda else (lambda: 0)
torch.manual_seed(0)
model = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(3)], nn.Linear(256, 4)).to(dev)
unsharded = allocated()
for block in model[:3]:
    fully_shard(block, mesh=mesh)
fully_shard(model, mesh=mesh)
results["memory"] = [unsharded, allocated()]
generator = torch.Generator().manual_seed(1 + rank)   # each rank its own data
with torch.no_grad():
    model(torch.randn(16, 256, generator=generator).to(dev))   # its output dropped at once
results["after_forward"] = allocated()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
losses = []
for step in range(3):
    x, y = torch.randn(16, 256, generator=generator).to(dev), torch.randn(16, 4, generator=generator).to(dev)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    if step == 2:
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        results["norm"] = [type(norm).__name__, norm.full_tensor().item()]
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())
results["losses"] = losses
weight = model[0][0].weight
full = weight.full_tensor()
results["full_tensor"] = [type(weight).__name__, list(weight.to_local().shape), str(full.device), list(full.shape),
                          full.sum().item(), full.norm().item()]
results["work_registry"] = torch._C._distributed_c10d._get_work_registry_size()
dist.barrier()
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def fsdp2(tmp_path_factory):
    """FSDP2 (``fully_shard``) on 2 simulated H100s and on 1 simulated T4, and the same script on gloo CPU ranks;
    {(machine, ranks): {rank: results}}. The four runs go side by side (each takes seconds to import FSDP)."""
    from concurrent.futures import ThreadPoolExecutor

    runs = [("2xh100", 2), (None, 2), ("t4", 1), (None, 1)]
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {
            (machine, ranks): pool.submit(
                _run, tmp_path_factory.mktemp(f"fsdp2-{machine}-{ranks}"), FSDP2, ranks=ranks, simulate=machine
            )
            for machine, ranks in runs
        }
        return {key: future.result() for key, future in futures.items()}


def test_fsdp2_trains_as_on_gloo_ranks(fsdp2):
    """Three AdamW steps of a ``fully_shard`` model give each rank the losses of the same script on gloo CPU ranks:
    FSDP2's all-gathers and reduce-scatters are ``c10d`` collectives (torch/distributed/fsdp/_fully_shard/
    _fsdp_collectives.py, ``foreach_all_gather`` / ``foreach_reduce``), whose buffers it frees and retakes with
    ``untyped_storage().resize_`` (_fsdp_param.py, ``free_storage`` / ``alloc_storage``)."""
    for machine, ranks in (("2xh100", 2), ("t4", 1)):
        simulated, gloo = fsdp2[(machine, ranks)], fsdp2[(None, ranks)]
        for rank in range(ranks):
            assert simulated[rank]["losses"] == gloo[rank]["losses"], (machine, rank)
    assert fsdp2[("2xh100", 2)][0]["losses"] != fsdp2[("2xh100", 2)][1]["losses"]  # each rank its own data


def test_fsdp2_holds_a_shard_and_frees_what_it_gathers(fsdp2):
    """After ``fully_shard`` a rank holds its shard of every parameter (dim 0 split over the mesh:
    torch/distributed/fsdp/_fully_shard/_fsdp_param.py, ``_init_sharded_param``): about half the model on
    each of 2 ranks, all of it on 1. After a forward the blocks' all-gathered parameters are freed again
    (``reshard_after_forward``, ``free_storage``: ``resize_(0)``); only the root's stay (_fsdp_state.py,
    ``_lazy_init``: "For the root, do not reshard after forward"). Sizes in the allocator's 512-byte blocks
    (c10/cuda/CUDACachingAllocator.cpp, ``round_size``)."""
    block, root = 256 * 256 * 4 + 256 * 4, 4 * 256 * 4 + 512  # one 256x256 Linear; the last (4x256, bias 16 B)
    half = 3 * (256 * 256 * 4 // 2 + 512) + (4 * 256 * 4 // 2 + 512)  # weights halved; bias shards a block each
    for got in fsdp2[("2xh100", 2)].values():
        unsharded, sharded = got["memory"]
        assert unsharded == 3 * block + root
        assert sharded == half
        assert 0.49 < sharded / unsharded < 0.51
        assert got["after_forward"] - sharded == root  # the root's parameters, all-gathered
    t4 = fsdp2[("t4", 1)][0]
    assert t4["memory"] == [3 * block + root] * 2 and t4["after_forward"] - t4["memory"][1] == root


def test_full_tensor_and_clip_grad_norm_give_the_gloo_values(fsdp2):
    """``DTensor.full_tensor`` (torch/distributed/tensor/_api.py: ``redistribute`` to ``Replicate``, an all-gather)
    and ``clip_grad_norm_`` (torch/nn/utils/clip_grad.py, ``_get_total_norm``: a DTensor norm, whose
    ``full_tensor`` is an all-reduce) are ``_c10d_functional`` collectives
    (torch/distributed/_functional_collectives.py); on a simulated node they give gloo's values, on the GPU."""
    for machine, ranks in (("2xh100", 2), ("t4", 1)):
        simulated, gloo = fsdp2[(machine, ranks)], fsdp2[(None, ranks)]
        for rank in range(ranks):
            got, expected = simulated[rank], gloo[rank]
            assert got["norm"] == expected["norm"] and got["norm"][0] == "DTensor"
            kind, local, device, full, total, norm2 = got["full_tensor"]
            assert [kind, local, "cpu", full, total, norm2] == expected["full_tensor"]  # gloo's, on the CPU
            assert kind == "DTensor" and local == [256 // ranks, 256] and full == [256, 256]
            assert device == f"cuda:{rank}"


def test_functional_collectives_leave_no_work_in_the_registry(fsdp2):
    """Each ``_c10d_functional`` collective registers its Work under its output until ``wait_tensor`` takes it out
    (torch/csrc/distributed/c10d/Functional.cpp, ``register_work`` / ``wait_tensor``); after ``full_tensor`` and
    ``clip_grad_norm_`` none is left (``torch._C._distributed_c10d._get_work_registry_size``), as on gloo."""
    for (machine, _), results in fsdp2.items():
        assert [got["work_registry"] for got in results.values()] == [0] * len(results), machine
