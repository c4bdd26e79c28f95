"""The simulated Apple GPU (``GPULAB_SIMULATE=mps``) against what PyTorch's MPS backend does on a Mac.

As in test_simulated.py, each test runs a reader's code in fresh Pythons with the variable set, and its
docstring names the source for the real behaviour: PyTorch's MPS C++ (``aten/src/ATen/mps/``, not
installed with a Linux wheel, though its headers are: torch/include/ATen/mps/), the installed torch's
Python, or an issue that shows it on a Mac.
"""

from __future__ import annotations

import re

import pytest
from test_simulated import TORCH_DIR, _stub_functions, _stub_parameters, run, run_many

from gpulab.simulated import machines, mps, native

from conftest import simulates

pytestmark = [
    pytest.mark.skipif(not (TORCH_DIR / "_C" / "__init__.pyi").exists(), reason="needs torch's stubs"),
    simulates,
]

TORCH = native._torch_version(TORCH_DIR)


def test_a_mac_is_named_as_cuda_machines_are():
    """``mps`` is the common Mac (an M1 with 16 GB), ``mps-m1`` and ``mps-m3-max`` name the chip; no node of Macs."""
    assert machines.parse("mps") == machines.parse("mps-m1") == [machines.MACS["mps-m1"]]
    big = machines.parse(" MPS-M3-Max ")[0]
    assert (big.name, big.gpu_cores, big.unified_memory) == ("Apple M3 Max", 40, 128 * 2**30)
    for spec in machines.MACS.values():  # Metal recommends part of the memory for the GPU, never all of it
        assert spec.device_type == "mps" and 0.5 < spec.recommended_max_memory / spec.unified_memory <= 0.75
    with pytest.raises(ValueError, match="mps-m3-max"):
        machines.parse("2xmps")
    assert machines.parse("t4")[0].device_type == "cuda"


def test_mps_is_the_accelerator_and_cuda_stays_absent():
    """A Mac: torch.backends.mps answers yes, torch.accelerator names mps, torch.cuda says there is no GPU.

    Real: torch/backends/mps/__init__.py and torch/mps/__init__.py (the bindings they call), torch/accelerator;
    at::getAccelerator asks each backend's hooks (ATen/detail/MPSHooksInterface.h ``hasMPS``), so C++ finds MPS too.
    """
    out, big = run_many(
        [
            (
                "mps",
                """
                OUT["available"] = [torch.backends.mps.is_available(), torch.backends.mps.is_built(),
                                    torch.mps.is_available(), torch.mps.device_count()]
                OUT["cuda"] = [torch.cuda.is_available(), torch.cuda.device_count()]
                OUT["accelerator"] = [str(torch.accelerator.current_accelerator()), torch.accelerator.device_count(),
                                      torch.accelerator.current_device_index()]
                OUT["name"] = [torch.backends.mps.get_name(), torch.backends.mps.get_core_count()]
                OUT["memory"] = torch.mps.recommended_max_memory()
                OUT["device"] = str(torch.zeros(2, device="mps").device)
                OUT["cuda_tensor"] = caught(lambda: torch.zeros(2, device="cuda"))
                OUT["second"] = caught(lambda: torch.zeros(2, device="mps:1"))
                # C++ asks too: a non_blocking copy, the autograd engine, is_pinned all go through at::getAccelerator
                w = torch.ones(3, device="mps", requires_grad=True)
                (w * 2).sum().backward()
                OUT["grad"] = [str(w.grad.device), w.grad.cpu().tolist()]
                import gpulab
                OUT["gpulab"] = [gpulab.devices.gpu_name(0), str(gpulab.best_device()), gpulab.num_gpus()]
                """,
            ),
            ("mps-m3-max", 'OUT["name"] = [torch.backends.mps.get_name(), torch.mps.recommended_max_memory()]'),
        ]
    )
    assert out["available"] == [True, True, True, 1]
    assert out["cuda"] == [False, 0]
    assert out["accelerator"] == ["mps", 1, 0]
    assert out["name"] == ["Apple M1", 8] and out["memory"] == machines.MACS["mps"].recommended_max_memory
    assert out["device"] == "mps:0"
    assert out["cuda_tensor"] == ["AssertionError", "Torch not compiled with CUDA enabled"]  # as on a Mac
    assert out["second"][0] == "RuntimeError"
    assert out["grad"] == ["mps:0", [2.0, 2.0, 2.0]]
    assert out["gpulab"] == ["Apple M1 (simulated)", "mps:0", 1]
    assert big["name"] == ["Apple M3 Max", 96 * 2**30]


def test_tensors_hold_real_values_and_float64_is_refused_as_mps_refuses_it():
    """Values computed on the host; devices mixed as PyTorch refuses them; float64 as MPS refuses it.

    Real: aten/src/ATen/mps/EmptyTensor.cpp, ``empty_mps`` and ``empty_strided_mps``:
    TORCH_CHECK_TYPE(dtype != Double, MPS_ERROR_DOUBLE_NOT_SUPPORTED), which every factory, ``.to("mps")``,
    ``.double()`` and ``torch.tensor(..., device="mps")`` reaches (a TypeError, the same in every version);
    torch/csrc/utils/tensor_numpy.cpp for ``.numpy()``; TensorIterator's device check for mixed operands.
    """
    out = run(
        "mps",
        """
        a = torch.arange(6.0).reshape(2, 3)
        m = a.to("mps")
        OUT["values"] = [(m @ m.T).cpu().tolist(), (a @ a.T).tolist(), str((m * 2).device), m.sum().item()]
        OUT["mixed"] = caught(lambda: m + a)
        OUT["scalar"] = (m + torch.tensor(1.0)).cpu().tolist()      # a 0-dim CPU tensor may join
        OUT["numpy"] = caught(lambda: m.numpy())
        OUT["float64"] = [caught(lambda: torch.zeros(3, dtype=torch.float64, device="mps")),
                          caught(lambda: torch.ones(2, dtype=torch.float64).to("mps")),
                          caught(lambda: m.double()),
                          caught(lambda: torch.tensor([1.0], dtype=torch.float64, device="mps"))]
        OUT["other_dtypes"] = [str(m.half().dtype), str(m.to(torch.bfloat16).dtype), str(m.long().dtype)]
        """,
    )
    assert out["values"][0] == out["values"][1] and out["values"][2:] == ["mps:0", 15.0]
    assert out["mixed"] == [
        "RuntimeError",
        "Expected all tensors to be on the same device, but found at least two devices, mps:0 and cpu!",
    ]
    assert out["scalar"] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert out["numpy"][0] == "TypeError" and "can't convert mps:0 device type tensor to numpy" in out["numpy"][1]
    assert out["float64"] == [["TypeError", mps.FLOAT64_MESSAGE]] * 4
    assert out["other_dtypes"] == ["torch.float16", "torch.bfloat16", "torch.int64"]


def test_memory_counters_limit_and_out_of_memory_follow_the_mps_allocator():
    """Counters, cache, limit and refusal as MPSHeapAllocatorImpl keeps them.

    Real: aten/src/ATen/mps/MPSAllocator.mm (``alloc_buffer_block``: the limit is checked against what the
    driver holds, cached buffers included, which are released and the allocation retried before it fails;
    the error is a plain TORCH_CHECK, so a RuntimeError: huggingface/accelerate#4226 on torch 2.14), its
    header's defaults (torch/include/ATen/mps/MPSAllocator.h: high watermark ratio 1.7, at most 2.0), and
    torch/mps/__init__.py (the fraction's own checks). Sizes in the message are c10's format_size.
    """
    out = run(
        "mps",
        f"""
        MiB = 2**20
        counts = lambda: [torch.mps.current_allocated_memory(), torch.mps.driver_allocated_memory()]
        OUT["start"] = counts()
        x = torch.empty(3 * MiB + 5, dtype=torch.uint8, device="mps")
        OUT["held"] = counts()
        del x
        OUT["freed"] = counts()                                   # the buffer stays cached
        y = torch.empty(3 * MiB, dtype=torch.uint8, device="mps")  # and is reused
        OUT["reused"] = counts()
        del y
        torch.mps.empty_cache()
        OUT["emptied"] = counts()
        limit = int(1.7 * torch.mps.recommended_max_memory())
        OUT["oom"] = caught(lambda: torch.empty(limit + 1, dtype=torch.uint8, device="mps"))
        torch.mps.set_per_process_memory_fraction(0.25)
        OUT["quarter"] = caught(lambda: torch.empty(torch.mps.recommended_max_memory() // 3, dtype=torch.uint8, device="mps"))
        OUT["fraction_errors"] = [caught(lambda: torch.mps.set_per_process_memory_fraction(1)),
                                  caught(lambda: torch.mps.set_per_process_memory_fraction(2.5))]
        torch.mps.set_per_process_memory_fraction(0.0)           # no limit at all
        OUT["unlimited"] = caught(lambda: torch.empty(limit + 1, dtype=torch.uint8, device="mps")) is None
        if hasattr(torch.accelerator, "max_memory_allocated") and OUT.setdefault("api", {mps.accelerator_memory_api()!r}):
            torch.accelerator.reset_peak_memory_stats()
            z = torch.empty(MiB, dtype=torch.uint8, device="mps")
            OUT["accelerator"] = [torch.accelerator.memory_allocated(), torch.accelerator.max_memory_allocated()]
        """,
    )
    page = 16 * 2**10
    held = -(-(3 * 2**20 + 5) // page) * page
    assert out["start"] == [0, 0]
    assert out["held"] == [held, held]
    assert out["freed"] == [0, held]
    assert out["reused"] == [held, held]
    assert out["emptied"] == [0, 0]
    kind, message = out["oom"]
    assert kind == "RuntimeError"
    limit_text = f"{int(1.7 * machines.MACS['mps'].recommended_max_memory) / 2**30:.2f} GiB"
    pool = "shared" if TORCH >= (2, 13) else "private"
    assert re.fullmatch(
        rf"MPS backend out of memory \(MPS allocated: 0 bytes, other allocations: 0 bytes, max allowed: "
        rf"{re.escape(limit_text)}\)\. Tried to allocate \d+\.\d\d GiB on {pool} pool\. Use "
        r"PYTORCH_MPS_HIGH_WATERMARK_RATIO=0\.0 to disable upper limit for memory allocations \(may cause system "
        r"failure\)\.",
        message,
    ), message
    assert out["quarter"][0] == "RuntimeError" and "max allowed: 2.67 GiB" in out["quarter"][1]
    assert out["fraction_errors"] == [
        ["TypeError", "Invalid type for fraction argument, must be `float`"],
        ["ValueError", "Invalid fraction value: 2.5. Allowed range: 0~2"],
    ]
    assert out["unlimited"]
    if out.get("api"):
        assert out["accelerator"] == [2**20, 2**20]


def test_pin_memory_is_what_the_installed_torch_does_on_a_mac():
    """Pinned memory: the installed torch's own code on MPS's pinned allocator of that version.

    Real: before torch 2.14 MPS's pinned allocator is its shared one (aten/src/ATen/mps/MPSHooks.mm), whose
    memory says mps:0: ``Tensor.pin_memory()`` fails in ``set_`` (aten/src/ATen/native/Memory.cpp, Resize.h
    ``checkSetStorage``), ``torch.empty(..., pin_memory=True)`` from 2.7 gives a tensor on mps:0 (issue #181374;
    2.6 has no pinned allocator there: "Need to provide pin_memory allocator to use pin memory."). From 2.14
    (PR #181720) pinned memory is a pinned CPU tensor. DataLoader turns pinning off on MPS with a warning
    (torch/utils/data/dataloader.py, from 2.7).
    """
    out = run(
        "mps",
        """
        def pin():
            t = torch.ones(4).pin_memory()
            return [str(t.device), t.is_pinned()]
        def empty():
            t = torch.empty(4, pin_memory=True)
            return [str(t.device), t.is_pinned()]
        OUT["pin"] = caught(pin) or pin()
        OUT["empty"] = caught(empty) or empty()
        OUT["plain"] = torch.ones(4).is_pinned()
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2,
                                             pin_memory=True)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            OUT["loader"] = [str(next(iter(loader))[0].device), [str(w.message) for w in seen]]
        """,
    )
    assert out["plain"] is False
    if TORCH >= (2, 14):
        assert out["pin"] == ["cpu", True] and out["empty"] == ["cpu", True]
    else:
        assert out["pin"] == [
            "RuntimeError",
            'Attempted to set the storage of a tensor on device "cpu" to a storage on different device "mps:0".  '
            "This is no longer allowed; the devices must match.",
        ]
        if TORCH >= (2, 7):
            assert out["empty"] == ["mps:0", False]
        else:
            assert out["empty"] == ["RuntimeError", "Need to provide pin_memory allocator to use pin memory."]
    if TORCH >= (2, 7):
        assert out["loader"][0] == "cpu"
        assert any("not supported on MPS" in message for message in out["loader"][1]), out["loader"]


def test_events_synchronize_seeds_files_and_training_work_as_on_a_mac():
    """torch.mps.Event times on the host's clock (work runs as it is queued), synchronize returns, a seed gives
    the same numbers twice, files saved on mps load there or anywhere with map_location, and a model trains.

    Real: torch/mps/event.py (the bindings it calls), torch/mps/__init__.py (``manual_seed``), torch/serialization.py
    (``_mps_tag``: storages on a Mac are saved as "mps"; ``_mps_deserialize``).
    """
    out = run(
        "mps",
        """
        import io
        start, end = torch.mps.Event(enable_timing=True), torch.mps.Event(enable_timing=True)
        start.record(); torch.ones(256, 256, device="mps").sum(); end.record(); end.synchronize()
        torch.mps.synchronize()
        OUT["elapsed"] = start.elapsed_time(end)
        untimed = torch.mps.Event()
        untimed.record()
        OUT["untimed"] = caught(lambda: untimed.elapsed_time(end))
        torch.manual_seed(7); first = torch.randn(3, device="mps").cpu()
        torch.mps.manual_seed(7); second = torch.randn(3, device="mps").cpu()
        OUT["seeded"] = torch.equal(first, second)
        buffer = io.BytesIO()
        torch.save({"w": torch.arange(3.0, device="mps")}, buffer)
        buffer.seek(0)
        OUT["loaded"] = str(torch.load(buffer)["w"].device)
        buffer.seek(0)
        OUT["to_cpu"] = str(torch.load(buffer, map_location="cpu")["w"].device)
        OUT["tag"] = b"mps" in buffer.getvalue()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to("mps")
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        x, y = torch.randn(64, 8, device="mps"), torch.randn(64, 1, device="mps")
        losses = []
        for _ in range(30):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            losses.append(loss.item())
        OUT["trained"] = [losses[-1] < losses[0], str(next(iter(opt.state.values()))["exp_avg"].device)]
        """,
    )
    assert out["elapsed"] >= 0
    assert out["untimed"][0] == "RuntimeError" and "enable_timing=True" in out["untimed"][1]
    assert out["seeded"]
    assert out["loaded"] == "mps:0" and out["to_cpu"] == "cpu" and out["tag"]
    assert out["trained"] == [True, "mps:0"]


def test_autocast_and_grad_scaler_are_what_the_installed_torch_allows_on_mps():
    """Autocast runs float16 on MPS (from torch 2.5); GradScaler("mps") steps from 2.8, and on 2.6 and 2.7 fails
    where it takes the scale to float64 (issue #142397; PR #150255 skips that on MPS: torch/amp/grad_scaler.py)."""
    out = run(
        "mps",
        """
        model = torch.nn.Linear(8, 8).to("mps")
        x = torch.randn(4, 8, device="mps")
        with torch.autocast("mps", dtype=torch.float16):
            y = model(x)
        OUT["autocast"] = str(y.dtype)
        scaler = torch.amp.GradScaler("mps")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def step():
            scaler.scale(model(x).float().sum()).backward()
            scaler.step(opt)
            scaler.update()
        OUT["scaler"] = caught(step)
        """,
    )
    assert out["autocast"] == "torch.float16"
    if TORCH >= (2, 8):
        assert out["scaler"] is None
    else:
        assert out["scaler"] == ["TypeError", mps.FLOAT64_MESSAGE]


def test_the_profiler_records_the_cpu_alone_as_on_a_mac():
    """torch.profiler has no MPS activity, and no MPS memory reaches its memory columns.

    Real: torch/_C/_profiler.pyi (``ProfilerActivity``: no MPS member in any version); torch/autograd/profiler.py
    ``_parse_kineto_results`` counts CPU memory and CUDA/XPU/HIP/PrivateUse1 memory, not MPS's; issue #99037.
    """
    out = run(
        "mps",
        """
        from torch.profiler import ProfilerActivity, profile
        OUT["activities"] = sorted(str(a) for a in torch.profiler.supported_activities())
        OUT["has_mps"] = hasattr(ProfilerActivity, "MPS")
        w = torch.randn(512, 512, device="mps")
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            big = w @ w
        events = prof.key_averages()
        mm = [e for e in events if e.key == "aten::mm"]
        OUT["mm"] = [len(mm), mm[0].cpu_memory_usage if mm else None]
        OUT["table"] = prof.key_averages().table(row_limit=3)
        """,
    )
    assert out["activities"] == ["ProfilerActivity.CPU"] and not out["has_mps"]
    assert out["mm"] == [1, 0]  # the 1 MiB product is the GPU's memory: no CPU memory column counts it
    assert "CUDA" not in out["table"]


def test_every_mps_binding_keeps_the_real_signature():
    """Each function put on torch._C for a Mac takes the stub's parameters (torch/_C/__init__.pyi), and every
    ``torch._C._mps_*`` name torch/mps and torch/backends/mps call is answered by the simulation."""
    called = set()
    for folder in ("mps", "backends/mps"):
        for path in (TORCH_DIR / folder).glob("*.py"):
            called |= set(re.findall(r"\b_C\.(_mps_\w+)\b", path.read_text()))
    out = run(
        "mps",
        f"""
        import inspect
        OUT["bindings"] = {{}}
        for name in {sorted(called)!r}:
            value = getattr(torch._C, name, None)
            OUT["bindings"][name] = [getattr(value, "__module__", "") or "",
                                     [[p.name, p.kind.name, p.default is not p.empty]
                                      for p in inspect.signature(value).parameters.values()]
                                     if getattr(value, "__module__", "").startswith("gpulab") else None]
        """,
    )
    stubs = _stub_functions()
    # what a Mac's torch builds from Metal shaders or Metal captures, which the simulation does not run
    not_simulated = {
        "_mps_compileShader",
        "_mps_loadMetalllib",
        "_mps_loadMetallibFromPath",
        "_mps_host_alias_storage",
        "_mps_startCapture",
        "_mps_stopCapture",
    }
    for name, (module, params) in out["bindings"].items():
        if name in not_simulated:
            continue
        assert module.startswith("gpulab.simulated"), name
        if name in stubs:
            assert params == _stub_parameters(stubs[name]), (name, params)


def test_an_exercise_check_on_a_mac_records_on_a_simulated_t4_and_gives_the_mac_back():
    """TransferRecorder records on a simulated CUDA GPU: a simulated Mac gives way for its block, as MPS does to CUDA
    where both are there (at::getAccelerator asks CUDA first), and is back afterwards with its tensors and counters."""
    out = run(
        "mps",
        """
        from gpulab.checks import TransferRecorder
        kept = torch.ones(3, device="mps")
        held = torch.mps.current_allocated_memory()
        with TransferRecorder() as gpu:
            OUT["inside"] = [torch.backends.mps.is_available(), str(torch.accelerator.current_accelerator()),
                             str(torch.ones(2).to("cuda").device)]
            torch.ones(2, device="cuda").sum().item()
        OUT["reads"] = len(gpu.reads)
        OUT["after"] = [torch.backends.mps.is_available(), str(torch.accelerator.current_accelerator()),
                        (kept + 1).cpu().tolist(), torch.mps.current_allocated_memory() == held > 0,
                        torch.cuda.is_available()]
        """,
    )
    assert out["inside"] == [False, "cuda", "cuda:0"]
    assert out["reads"] == 1
    assert out["after"] == [True, "mps", [2.0, 2.0, 2.0], True, False]
