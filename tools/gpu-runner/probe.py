"""What a CUDA device does where the simulated machines model it, as one JSON record.

    python3 tools/gpu-runner/probe.py > probe.json                        # on a GPU machine
    GPULAB_SIMULATE=h100 python tools/gpu-runner/probe.py > probe.json    # on a simulated one

It records what the course relies on and the simulation reproduces: the device's properties,
the memory the CUDA context takes, the caching allocator's rounding (allocated, reserved), a
model's memory through one training step, the errors a reader meets (out of memory, two devices
in one operation, a bad device index, timing events made without timing), pinned memory and
autocast's output types. tests/unit/simulated/test_simulated.py holds a simulated machine to a real
one's probe, kept in tools/gpu-runner/records/.
"""

from __future__ import annotations

import json
import re
import sys

import torch

MiB = 2**20


def error_of(work) -> dict | None:
    """The type and first line of what ``work()`` raises, or None."""
    try:
        work()
    except Exception as exc:  # noqa: BLE001 - the point is to record any error
        return {"type": type(exc).__name__, "message": str(exc).strip().splitlines()[0] if str(exc).strip() else ""}
    return None


def properties(index: int = 0) -> dict:
    props = torch.cuda.get_device_properties(index)
    out = {}
    for name in dir(props):
        if name.startswith("_"):
            continue
        value = getattr(props, name)
        if isinstance(value, (int, float, str, bool)):
            out[name] = value
    return out


def allocator() -> dict:
    """allocated and reserved after one tensor of each size, each measured alone."""
    out = {}
    for size in (1, 512, 513, MiB - 1, MiB, MiB + 1, 2 * MiB, 10 * MiB, 10 * MiB + 1, 20 * MiB, 100 * MiB + 1):
        torch.cuda.empty_cache()
        base_a, base_r = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
        t = torch.empty(size, dtype=torch.uint8, device="cuda")
        out[str(size)] = [torch.cuda.memory_allocated() - base_a, torch.cuda.memory_reserved() - base_r]
        del t
    torch.cuda.empty_cache()
    # many small tensors share 2 MiB segments
    base_r = torch.cuda.memory_reserved()
    small = [torch.empty(1000, dtype=torch.float32, device="cuda") for _ in range(1000)]
    out["1000 x 4000 B"] = [torch.cuda.memory_allocated(), torch.cuda.memory_reserved() - base_r]
    del small
    out["after del, before empty_cache"] = [torch.cuda.memory_allocated(), torch.cuda.memory_reserved() > 0]
    torch.cuda.empty_cache()
    out["after empty_cache"] = [torch.cuda.memory_allocated(), torch.cuda.memory_reserved()]
    return out


def training_step() -> dict:
    """memory_allocated at each phase of one Adam step of a small MLP, and the peak."""
    torch.manual_seed(0)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    out = {}
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
    out["model"] = torch.cuda.memory_allocated()
    x = torch.randn(256, 1024, device="cuda")
    out["batch"] = torch.cuda.memory_allocated()
    loss = model(x).square().mean()
    out["forward"] = torch.cuda.memory_allocated()
    loss.backward()
    out["backward"] = torch.cuda.memory_allocated()
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.step()
    out["step"] = torch.cuda.memory_allocated()
    optimizer.zero_grad(set_to_none=True)
    out["zero_grad"] = torch.cuda.memory_allocated()
    out["peak"] = torch.cuda.max_memory_allocated()
    del model, x, loss, optimizer
    torch.cuda.empty_cache()
    return out


def autocast_dtypes() -> dict:
    a = torch.randn(64, 64, device="cuda")
    out = {}
    for dtype in (torch.float16, torch.bfloat16):
        with torch.autocast("cuda", dtype=dtype):
            results = {
                "matmul": a @ a,
                "linear": torch.nn.functional.linear(a, a),
                "sum": (a @ a).sum(),
                "softmax": torch.softmax(a @ a, dim=-1),
                "layer_norm": torch.nn.functional.layer_norm(a, (64,)),
                "relu": torch.relu(a @ a),
                "add fp32": a + a,
                "mse_loss": torch.nn.functional.mse_loss(a @ a, a),
            }
        out[str(dtype)] = {name: str(value.dtype) for name, value in results.items()}
    return out


def errors() -> dict:
    big = torch.cuda.get_device_properties(0).total_memory * 2
    out = {
        "out of memory": error_of(lambda: torch.empty(big, dtype=torch.uint8, device="cuda")),
        "two devices": error_of(lambda: torch.ones(2, device="cuda") + torch.ones(2)),
        "matmul two devices": error_of(lambda: torch.ones(2, 2, device="cuda") @ torch.ones(2, 2)),
        "device index": error_of(lambda: torch.ones(1, device=f"cuda:{torch.cuda.device_count()}")),
        "set_device": error_of(lambda: torch.cuda.set_device(torch.cuda.device_count())),
        "numpy of a GPU tensor": error_of(lambda: torch.ones(2, device="cuda").numpy()),
        "elapsed without timing": error_of(lambda: _elapsed(enable_timing=False)),
    }
    # the bytes in an out-of-memory message vary with the machine: keep the wording
    if out["out of memory"]:
        out["out of memory"]["message"] = re.sub(r"\d+(\.\d+)? ?[KMGT]?i?B", "N B", out["out of memory"]["message"])
        out["out of memory"]["message"] = re.sub(r"GPU \d+", "GPU N", out["out of memory"]["message"])
    out["allocated after out of memory"] = torch.cuda.memory_allocated()
    return out


def _elapsed(enable_timing: bool) -> float:
    start, end = torch.cuda.Event(enable_timing=enable_timing), torch.cuda.Event(enable_timing=enable_timing)
    start.record()
    torch.ones(1000, device="cuda").sum()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def misc() -> dict:
    host = torch.ones(1000)
    pinned = host.pin_memory()
    on_gpu = pinned.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    event = torch.cuda.Event(enable_timing=True)
    return {
        "pinned": [host.is_pinned(), pinned.is_pinned(), on_gpu.is_pinned()],
        "device of a GPU tensor": str(on_gpu.device),
        "item": torch.ones(3, device="cuda").sum().item(),
        "elapsed is a float": isinstance(_elapsed(True), float),
        "event query before record": event.query(),
        "current_device": torch.cuda.current_device(),
        "bf16 supported": torch.cuda.is_bf16_supported(),
        "matmul allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "nccl available": torch.distributed.is_nccl_available(),
        "accelerator": str(torch.accelerator.current_accelerator()) if hasattr(torch, "accelerator") else None,
        "default stream": repr(torch.cuda.current_stream()).split(" device=")[-1],
    }


def main() -> int:
    if not torch.cuda.is_available():
        print("probe.py needs a CUDA device, real or simulated (GPULAB_SIMULATE)", file=sys.stderr)
        return 2
    free, total = torch.cuda.mem_get_info()  # initialises the context
    record = {
        "torch": torch.__version__,
        "device count": torch.cuda.device_count(),
        "name": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
        "properties": properties(),
        "mem_get_info total": total,
        "context bytes (total - free, nothing allocated)": total - free,
        "allocator": allocator(),
        "training step": training_step(),
        "autocast": autocast_dtypes(),
        "errors": errors(),
        "misc": misc(),
    }
    json.dump(record, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
