"""Answers students write for lesson 08's exercises (see test_answers.py)."""

_MEMORY = """
def memory_per_rank(parameters, ranks, strategy, mixed_precision):
BODY
"""

_ALL_REDUCE = """%%writefile {scripts}/all_reduce.py
import torch
import torch.distributed as dist


def my_all_reduce(tensor):
BODY
"""

_SHARDED = """%%writefile {scripts}/sharded.py
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard


def shard(model):
SHARD


def save(model, optimizer, folder):
SAVE


def load(model, optimizer, folder):
LOAD
"""

_SHARD = """
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return torch.optim.AdamW(model.parameters(), lr=1e-2)
"""

_SAVE = """
    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=folder)
"""

_LOAD = """
    model_state, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(state, checkpoint_id=folder)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
"""

_CHOOSE = """
def choose(parameters, gpus, gpu_memory_bytes, activation_bytes):
BODY
"""


def memory(body: str) -> str:
    return _MEMORY.replace("BODY", body.strip("\n"))


def all_reduce(body: str) -> str:
    return _ALL_REDUCE.replace("BODY", body.strip("\n"))


def sharded(shard: str = _SHARD, save: str = _SAVE, load: str = _LOAD) -> str:
    return (
        _SHARDED.replace("SHARD", shard.strip("\n")).replace("SAVE", save.strip("\n")).replace("LOAD", load.strip("\n"))
    )


def choose(body: str) -> str:
    return _CHOOSE.replace("BODY", body.strip("\n"))


RIGHT = {
    "memory": [
        (
            "if/elif on the strategy, bytes per parameter",
            memory("""
    if mixed_precision:
        p, g, o = 2, 2, 12
    else:
        p, g, o = 4, 4, 8
    if strategy == "DDP":
        per_param = p + g + o
    elif strategy == "ZeRO-1":
        per_param = p + g + o / ranks
    elif strategy == "ZeRO-2":
        per_param = p + (g + o) / ranks
    elif strategy in ("ZeRO-3", "FSDP"):
        per_param = (p + g + o) / ranks
    else:
        raise ValueError(strategy)
    return parameters * per_param
"""),
        ),
        (
            "the stage as a number, integer division",
            """
STAGES = {"DDP": 0, "ZeRO-1": 1, "ZeRO-2": 2, "ZeRO-3": 3, "FSDP": 3}


def memory_per_rank(parameters, ranks, strategy, mixed_precision):
    stage = STAGES[strategy]
    sizes = [12, 2, 2] if mixed_precision else [8, 4, 4]      # optimizer state, gradients, parameters
    total = 0
    for i, size in enumerate(sizes):
        part = parameters * size
        total += part // ranks if i < stage else part
    return total
""",
        ),
        (
            "torch: bytes per part and a mask of the sharded ones, a 0-dim tensor back",
            """
import torch


def memory_per_rank(parameters, ranks, strategy, mixed_precision):
    bytes_each = torch.tensor([2.0, 2.0, 12.0] if mixed_precision else [4.0, 4.0, 8.0], dtype=torch.float64)
    name = "ZeRO-3" if strategy == "FSDP" else strategy
    sharded = {"DDP": [0, 0, 0], "ZeRO-1": [0, 0, 1], "ZeRO-2": [0, 1, 1], "ZeRO-3": [1, 1, 1]}[name]
    divisor = torch.where(torch.tensor(sharded, dtype=torch.bool), float(ranks), 1.0)
    return (parameters * bytes_each / divisor).sum()
""",
        ),
        (
            "match on the upper-cased name, the ZeRO paper's K",
            memory("""
    weights, grads, k = (2, 2, 12) if mixed_precision else (4, 4, 8)
    match strategy.upper():
        case "DDP":
            return (weights + grads + k) * parameters
        case "ZERO-1":
            return (weights + grads) * parameters + k * parameters / ranks
        case "ZERO-2":
            return weights * parameters + (grads + k) * parameters / ranks
        case "ZERO-3" | "FSDP":
            return (weights + grads + k) * parameters / ranks
    raise ValueError(f"unknown strategy {strategy}")
"""),
        ),
    ],
    "allreduce": [
        (
            "F.pad, list reduce_scatter and all_gather, torch.cat",
            """%%writefile {scripts}/all_reduce.py
import torch
import torch.distributed as dist
import torch.nn.functional as F


def my_all_reduce(tensor):
    world = dist.get_world_size()
    n = tensor.numel()
    padded = F.pad(tensor, (0, (-n) % world))
    pieces = list(padded.chunk(world))
    mine = torch.empty_like(pieces[0])
    dist.reduce_scatter(mine, pieces)
    everyone = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    tensor[:] = torch.cat(everyone)[:n]
""",
        ),
        (
            "the names before torch 2.13, math.ceil, new_zeros, an asynchronous reduce-scatter",
            """%%writefile {scripts}/all_reduce.py
import math

import torch.distributed as dist


def my_all_reduce(tensor):
    world = dist.get_world_size()
    size = math.ceil(tensor.numel() / world) * world
    buffer = tensor.new_zeros(size)
    buffer[: tensor.numel()].copy_(tensor)
    shard = buffer.new_empty(size // world)
    dist.reduce_scatter_tensor(shard, buffer, op=dist.ReduceOp.SUM, async_op=True).wait()
    dist.all_gather_into_tensor(buffer, shard)
    tensor.copy_(buffer[: tensor.numel()])
""",
        ),
        (
            "the collectives picked once, at import; torch.cat of zeros; narrow",
            """%%writefile {scripts}/all_reduce.py
import torch
from torch import distributed as dist
from torch.distributed import get_world_size

_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def my_all_reduce(tensor):
    n, world = tensor.numel(), get_world_size()
    pad = (world - n % world) % world
    whole = torch.cat([tensor, tensor.new_zeros(pad)])
    part = torch.empty(whole.numel() // world, dtype=whole.dtype)
    _scatter(part, whole)
    _gather(whole, part)
    tensor.data.copy_(whole.narrow(0, 0, n))
""",
        ),
    ],
    "dcp": [
        ("no mesh given: the default one, of all the ranks", sharded()),
        (
            "get/set_model_state_dict and get/set_optimizer_state_dict, Adam",
            """%%writefile {scripts}/sharded.py
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.fsdp import fully_shard


def shard(model):
    for i in range(len(model.blocks)):
        fully_shard(model.blocks[i], reshard_after_forward=False)
    fully_shard(model)
    return torch.optim.Adam(model.parameters(), lr=1e-3)


def save(model, optimizer, folder):
    dcp.save({"model": get_model_state_dict(model), "optim": get_optimizer_state_dict(model, optimizer)},
             checkpoint_id=folder)


def load(model, optimizer, folder):
    state = {"model": get_model_state_dict(model), "optim": get_optimizer_state_dict(model, optimizer)}
    dcp.load(state, checkpoint_id=folder)
    set_model_state_dict(model, state["model"])
    set_optimizer_state_dict(model, optimizer, state["optim"])
""",
        ),
        (
            "a Stateful AppState, as PyTorch's DCP tutorial has it",
            """%%writefile {scripts}/sharded.py
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.distributed.fsdp import fully_shard


class AppState(Stateful):
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def state_dict(self):
        model_state, optimizer_state = get_state_dict(self.model, self.optimizer)
        return {"model": model_state, "optim": optimizer_state}

    def load_state_dict(self, state_dict):
        set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                       optim_state_dict=state_dict["optim"])


def shard(model):
    blocks = list(model.blocks)
    for block in reversed(blocks):
        fully_shard(block)
    fully_shard(model)
    return torch.optim.AdamW(model.parameters())


def save(model, optimizer, folder):
    dcp.save({"app": AppState(model, optimizer)}, checkpoint_id=folder)


def load(model, optimizer, folder):
    dcp.load({"app": AppState(model, optimizer)}, checkpoint_id=folder)
""",
        ),
        (
            "a named mesh; FileSystemWriter and FileSystemReader; Adam of the parameters that train",
            """%%writefile {scripts}/sharded.py
import torch
import torch.distributed as dist
from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint import load as dcp_load
from torch.distributed.checkpoint import save as dcp_save
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


def shard(model):
    mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("shard",))
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    trained = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.Adam(trained, lr=3e-4, betas=(0.9, 0.95))


def save(model, optimizer, folder):
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp_save({"model": model_sd, "optimizer": optim_sd}, storage_writer=FileSystemWriter(folder))


def load(model, optimizer, folder):
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp_load({"model": model_sd, "optimizer": optim_sd}, storage_reader=FileSystemReader(folder))
    set_state_dict(model, optimizer, model_state_dict=model_sd, optim_state_dict=optim_sd)
""",
        ),
    ],
    "choose": [
        (
            "the two needs, compared in turn",
            choose("""
    whole = 16 * parameters + activation_bytes
    sharded = 16 * parameters / gpus + activation_bytes
    if gpu_memory_bytes >= whole:
        return "DDP"
    elif gpu_memory_bytes >= sharded:
        return "FSDP"
    else:
        return "does not fit"
"""),
        ),
        (
            "a loop over the options, the state shared by 1 or by every GPU",
            choose("""
    for name, ways in (("DDP", 1), ("FSDP", gpus)):
        if 16 * parameters / ways + activation_bytes <= gpu_memory_bytes:
            return name
    return "does not fit"
"""),
        ),
        (
            "whole numbers: the room left beside the activations",
            choose("""
    room = gpu_memory_bytes - activation_bytes       # what the training state may take on one GPU
    state = 16 * parameters
    if state <= room:
        return "DDP"
    if state <= room * gpus:
        return "FSDP"
    return "does not fit"
"""),
        ),
        (
            "in GB, as floats",
            """
BYTES_PER_PARAMETER = 16


def choose(parameters, gpus, gpu_memory_bytes, activation_bytes):
    memory_gb = gpu_memory_bytes / 1e9
    state_gb = BYTES_PER_PARAMETER * parameters / 1e9
    activations_gb = activation_bytes / 1e9
    if state_gb + activations_gb <= memory_gb:
        return "DDP"
    if state_gb / gpus + activations_gb <= memory_gb:
        return "FSDP"
    return "does not fit"
""",
        ),
    ],
}

WRONG = {
    # (name, source, the constraint(s) it breaks, whether it must also fail on a busy machine)
    "memory": [
        (
            "GB, not bytes",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks)}.get(strategy, (ranks,) * 3)
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2]) / 1e9
"""),
            "per-rank",
            True,
        ),
        (
            "all the ranks together, not one",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks)}.get(strategy, (ranks,) * 3)
    return ranks * parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "per-rank",
            False,
        ),
        (
            "a string with its unit",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks)}.get(strategy, (ranks,) * 3)
    return f"{parameters * (p / shards[0] + g / shards[1] + o / shards[2]):.0f} B"
"""),
            "number",
            False,
        ),
        (
            "Adam's state in float32 counted as one moment: 12 bytes per parameter",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 4)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks)}.get(strategy, (ranks,) * 3)
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "fp32",
            True,
        ),
        (
            "mixed precision without the float32 master copy: 2 + 2 + 8",
            memory("""
    p, g, o = (2, 2, 8) if mixed_precision else (4, 4, 8)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks)}.get(strategy, (ranks,) * 3)
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "mixed",
            False,
        ),
        (
            "DDP counted for the whole job",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    if strategy == "DDP":
        return ranks * parameters * (p + g + o)
    shards = {"ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks)}.get(strategy, (ranks,) * 3)
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "ddp",
            False,
        ),
        (
            "ZeRO-1 shards the gradients too",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, ranks, ranks), "ZeRO-2": (1, ranks, ranks)}.get(strategy, (ranks,) * 3)
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "zero1",
            False,
        ),
        (
            "ZeRO-2 shards the gradients but not the optimizer state",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, 1)}.get(strategy, (ranks,) * 3)
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "zero2",
            False,
        ),
        (
            "ZeRO-3 counts an all-gathered copy of the parameters too",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    if strategy in ("ZeRO-3", "FSDP"):
        return parameters * (p + g + o) / ranks + parameters * p
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks)}[strategy]
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "zero3",
            False,
        ),
        (
            "knows ZeRO-3, not FSDP",
            memory("""
    p, g, o = (2, 2, 12) if mixed_precision else (4, 4, 8)
    shards = {"DDP": (1, 1, 1), "ZeRO-1": (1, 1, ranks), "ZeRO-2": (1, ranks, ranks), "ZeRO-3": (ranks,) * 3}[strategy]
    return parameters * (p / shards[0] + g / shards[1] + o / shards[2])
"""),
            "fsdp",
            True,
        ),
    ],
    "allreduce": [
        (
            "the average, not the sum",
            all_reduce("""
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    world, n = dist.get_world_size(), tensor.numel()
    padded = torch.cat([tensor, tensor.new_zeros(-n % world)])
    shard = padded.new_empty(padded.numel() // world)
    reduce_scatter(shard, padded)
    all_gather(padded, shard)
    tensor.copy_(padded[:n] / world)
"""),
            "sum",
            True,
        ),
        (
            "returns the sum, and leaves the tensor as it was",
            all_reduce("""
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    world, n = dist.get_world_size(), tensor.numel()
    padded = torch.cat([tensor, tensor.new_zeros(-n % world)])
    shard = padded.new_empty(padded.numel() // world)
    reduce_scatter(shard, padded)
    all_gather(padded, shard)
    return padded[:n]
"""),
            "sum",
            False,
        ),
        (
            "calls dist.all_reduce",
            all_reduce("""
    dist.all_reduce(tensor)
"""),
            "halves",
            True,
        ),
        (
            "all-gathers every rank's whole tensor and adds them up: no reduce-scatter",
            all_reduce("""
    everyone = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, tensor)
    tensor.copy_(torch.stack(everyone).sum(dim=0))
"""),
            "halves",
            False,
        ),
        (
            "no padding: only lengths the ranks divide",
            all_reduce("""
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    shard = torch.empty(tensor.numel() // dist.get_world_size())
    reduce_scatter(shard, tensor)
    all_gather(tensor, shard)
"""),
            "pad",
            True,
        ),
        (
            "two ranks, always",
            all_reduce("""
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    n = tensor.numel()
    padded = torch.cat([tensor, tensor.new_zeros(n % 2)])
    shard = padded.new_empty(padded.numel() // 2)
    reduce_scatter(shard, padded)
    all_gather(padded, shard)
    tensor.copy_(padded[:n])
"""),
            "any-world",
            False,
        ),
    ],
    "dcp": [
        (
            "fully_shard on the root alone",
            sharded(
                shard="""
    fully_shard(model)
    return torch.optim.AdamW(model.parameters(), lr=1e-2)
"""
            ),
            "blocks",
            True,
        ),
        (
            "fully_shard on the blocks, never on the root",
            sharded(
                shard="""
    for block in model.blocks:
        fully_shard(block)
    return torch.optim.AdamW(model.parameters(), lr=1e-2)
"""
            ),
            "root",
            False,
        ),
        (
            "the optimizer made before sharding",
            sharded(
                shard="""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return optimizer
"""
            ),
            "after",
            True,
        ),
        (
            "the model alone, saved and loaded with DCP",
            sharded(
                save="""
    model_state, _ = get_state_dict(model, optimizer)
    dcp.save({"model": model_state}, checkpoint_id=folder)
""",
                load="""
    model_state, _ = get_state_dict(model, optimizer)
    dcp.load({"model": model_state}, checkpoint_id=folder)
    set_state_dict(model, optimizer, model_state_dict=model_state, optim_state_dict={})
""",
            ),
            "state",
            False,
        ),
        (
            "gathered on rank 0 and written with torch.save, as lesson 06 did",
            sharded(
                save="""
    full = StateDictOptions(full_state_dict=True, cpu_offload=True)
    model_state, optimizer_state = get_state_dict(model, optimizer, options=full)
    if dist.get_rank() == 0:
        torch.save({"model": model_state, "optimizer": optimizer_state}, f"{folder}/full.pt")
    dist.barrier()
""",
                load="""
    state = torch.load(f"{folder}/full.pt", weights_only=False)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"],
                   options=StateDictOptions(full_state_dict=True))
""",
            ),
            "dcp",
            False,
        ),
        (
            "loads into the plain state_dict()s: a new optimizer's has no state to fill",
            sharded(
                load="""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    dcp.load(state, checkpoint_id=folder)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
"""
            ),
            "load",
            False,
        ),
        (
            "each rank torch.saves its own shards, and loads them back",
            sharded(
                save="""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
               f"{folder}/rank{dist.get_rank()}.pt")
""",
                load="""
    state = torch.load(f"{folder}/rank{dist.get_rank()}.pt", weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
""",
            ),
            ("dcp", "load"),
            False,
        ),
    ],
    "choose": [
        (
            "FSDP first, wherever it fits",
            choose("""
    if 16 * parameters / gpus + activation_bytes <= gpu_memory_bytes:
        return "FSDP"
    if 16 * parameters + activation_bytes <= gpu_memory_bytes:
        return "DDP"
    return "does not fit"
"""),
            "ddp",
            True,
        ),
        (
            "FSDP counted as ZeRO-1: only the optimizer state sharded",
            choose("""
    if 16 * parameters + activation_bytes <= gpu_memory_bytes:
        return "DDP"
    if 8 * parameters + 8 * parameters / gpus + activation_bytes <= gpu_memory_bytes:
        return "FSDP"
    return "does not fit"
"""),
            "fsdp",
            True,
        ),
        (
            "FSDP whenever DDP does not fit",
            choose("""
    if 16 * parameters + activation_bytes <= gpu_memory_bytes:
        return "DDP"
    return "FSDP"
"""),
            "none",
            False,
        ),
        (
            "the activations left out",
            choose("""
    if 16 * parameters <= gpu_memory_bytes:
        return "DDP"
    if 16 * parameters / gpus <= gpu_memory_bytes:
        return "FSDP"
    return "does not fit"
"""),
            "activations",
            False,
        ),
        (
            "the activations sharded with the rest",
            choose("""
    if 16 * parameters + activation_bytes <= gpu_memory_bytes:
        return "DDP"
    if (16 * parameters + activation_bytes) / gpus <= gpu_memory_bytes:
        return "FSDP"
    return "does not fit"
"""),
            "activations",
            False,
        ),
        (
            "< where the task says at most",
            choose("""
    if 16 * parameters + activation_bytes < gpu_memory_bytes:
        return "DDP"
    if 16 * parameters / gpus + activation_bytes < gpu_memory_bytes:
        return "FSDP"
    return "does not fit"
"""),
            "equal",
            False,
        ),
        (
            "18 bytes per parameter: float32 gradients",
            choose("""
    if 18 * parameters + activation_bytes <= gpu_memory_bytes:
        return "DDP"
    if 18 * parameters / gpus + activation_bytes <= gpu_memory_bytes:
        return "FSDP"
    return "does not fit"
"""),
            ("ddp", "fsdp"),
            False,
        ),
    ],
}

EDGES = {
    "memory": [
        (
            "one rank: every strategy keeps what DDP keeps",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
for mixed in (False, True):
    for strategy in ("ZeRO-1", "ZeRO-2", "ZeRO-3", "FSDP"):
        assert memory_per_rank(10**9, 1, strategy, mixed) == memory_per_rank(10**9, 1, "DDP", mixed) == 16 * 10**9
""",
        ),
        (
            "FSDP is ZeRO-3; the lesson's table at 8 ranks",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
P = 7 * 10**9
assert memory_per_rank(P, 8, "FSDP", True) == memory_per_rank(P, 8, "ZeRO-3", True) == 14 * 10**9
assert math.isclose(memory_per_rank(P, 8, "ZeRO-1", True), 4 * P + 12 * P / 8)
assert math.isclose(memory_per_rank(P, 8, "ZeRO-2", True), 2 * P + 14 * P / 8)
""",
        ),
        (
            "a strategy the task does not name raises, and returns no number",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
try:
    memory_per_rank(10**9, 8, "ZeRO-4", False)
except ValueError:
    pass
else:
    raise AssertionError("ZeRO-4 is no strategy")
""",
        ),
    ],
    "choose": [
        (
            "one GPU: DDP or nothing, never FSDP",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
assert choose(10**9, 1, 16 * 10**9, 0) == "DDP"
assert choose(10**9, 1, 16 * 10**9 - 1, 0) == "does not fit"
""",
        ),
        (
            "activations larger than a GPU: nothing fits, however many GPUs",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
assert choose(1, 1024, 80 * 10**9, 81 * 10**9) == "does not fit"
""",
        ),
        (
            "no parameters: DDP wherever the activations fit",
            """
gpulab.distributed.remove_scratch_folder()      # made by the setup cell; these edges need no script
assert choose(0, 8, 80 * 10**9, 80 * 10**9) == "DDP"
""",
        ),
    ],
}
