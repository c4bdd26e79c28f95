"""Answers students write for lesson 09's exercises (see test_answers.py)."""

# A flat kernel over the n = rows * cols elements, as the solution's, with its parts replaced by each wrong answer.
_FLAT = """
@triton.jit
def bias_relu_kernel(x_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=MASK)
    b = tl.load(bias_ptr + BIAS, mask=MASK)
    tl.store(OUT_PTR + offsets, RESULT, mask=MASK)


def bias_relu(x, bias, out):
    n = x.numel()
    bias_relu_kernel[(GRID,)](x, bias, out, n, x.shape[1], BLOCK=1024)
"""


def flat(
    mask="mask", bias="offsets % cols", result="tl.maximum(x + b, 0.0)", grid="triton.cdiv(n, 1024)", out_ptr="out_ptr"
) -> str:
    return (
        _FLAT.replace("MASK", mask)
        .replace("BIAS", bias)
        .replace("RESULT", result)
        .replace("GRID", grid)
        .replace("OUT_PTR", out_ptr)
    )


_WHOLE = """
def standardise_whole(x, eps=1e-5):
BODY
"""


def whole(body: str) -> str:
    return _WHOLE.replace("BODY", body.strip("\n"))


_KERNELS = """
def kernels_in(events, device):
KERNELS_IN


def count_kernels(fn, x):
COUNT
"""

_KERNELS_IN = """
    if device.type == "cuda":
        return sum(1 for e in events if e.device_type == DeviceType.CUDA and not e.is_user_annotation
                   and not e.name.startswith(("Memcpy", "Memset")))
    operators = sum(1 for e in events if e.name.startswith("aten::")
                    and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))
    return operators + sum(1 for e in events if "cpp_fused" in e.name)
"""

_COUNT = """
    fn(x)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if x.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn(x)
        if x.device.type == "cuda":
            torch.cuda.synchronize()
    return kernels_in(prof.events(), x.device)
"""


def kernels(kernels_in: str = _KERNELS_IN, count: str = _COUNT) -> str:
    return _KERNELS.replace("KERNELS_IN", kernels_in.strip("\n")).replace("COUNT", count.strip("\n"))


_ANY_BATCH = """
def compile_for_any_batch(fn, backend):
BODY
"""


def any_batch(body: str) -> str:
    return _ANY_BATCH.replace("BODY", body.strip("\n"))


RIGHT = {
    "bias-relu": [
        (
            "a 2-D grid, a program per row and block of columns; torch.where's cousin tl.where; strides",
            """
@triton.jit
def row_block_kernel(x_ptr, bias_ptr, out_ptr, cols, row_stride, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0)
    columns = tl.program_id(1) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    inside = columns < cols
    values = tl.load(x_ptr + row * row_stride + columns, mask=inside, other=0.0)
    values += tl.load(bias_ptr + columns, mask=inside, other=0.0)
    tl.store(out_ptr + row * row_stride + columns, tl.where(values > 0, values, 0.0), mask=inside)


def bias_relu(x, bias, out):
    rows, cols = x.shape
    grid = (rows, triton.cdiv(cols, 128))
    row_block_kernel[grid](x, bias, out, cols, x.stride(0), BLOCK_COLS=128)
""",
        ),
        (
            "a program per row, looping over its columns in blocks",
            """
@triton.jit
def per_row(x_ptr, bias_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    start_of_row = tl.program_id(0) * cols
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        keep = c < cols
        v = tl.load(x_ptr + start_of_row + c, mask=keep) + tl.load(bias_ptr + c, mask=keep)
        tl.store(out_ptr + start_of_row + c, tl.maximum(v, 0), mask=keep)


def bias_relu(x, bias, out):
    rows, cols = x.shape
    block = min(triton.next_power_of_2(cols), 256)
    per_row[(rows,)](x, bias, out, cols, BLOCK=block)
""",
        ),
        (
            "a flat grid given as a function of the block; row and column from the index; a 512 block",
            """
@triton.jit
def kernel(X, B, OUT, total, width, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    idx = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    ok = idx < total
    row = idx // width
    col = idx - row * width
    y = tl.load(X + idx, mask=ok) + tl.load(B + col, mask=ok)
    y = tl.where(y < 0, 0.0, y)
    tl.store(OUT + idx, y, mask=ok)


def bias_relu(x, bias, out):
    total = x.numel()
    grid = lambda meta: (triton.cdiv(total, meta["BLOCK_SIZE"]),)
    kernel[grid](x, bias, out, total, x.shape[-1], BLOCK_SIZE=512)
    return out
""",
        ),
        (
            "the flat kernel, with a small block of 64: many programs",
            flat().replace("1024", "64"),
        ),
    ],
    "whole": [
        (
            "std_mean; divide by a spread replaced with 1 where it is tiny",
            whole("""
    spread, mean = torch.std_mean(x)
    return (x - mean) / torch.where(spread < eps, torch.ones_like(spread), spread)
"""),
        ),
        (
            "an arithmetic mask: 1 where the spread is small, 0 elsewhere",
            whole("""
    centred = x - x.mean()
    spread = x.std()
    small = (spread < eps).to(x.dtype)
    return centred / (spread * (1 - small) + small)
"""),
        ),
        (
            "the spread as the square root of the variance; torch.where with both branches written out",
            whole("""
    m = torch.mean(x)
    s = torch.sqrt(torch.var(x))
    return torch.where(s < eps, x - m, (x - m) / s)
"""),
        ),
    ],
    "kernels": [
        (
            "lesson 07's helper, gpulab.profiling.calls_by_your_code, and the aten names in it",
            """
import gpulab.profiling


def kernels_in(events, device):
    events = list(events)
    if device.type == "cuda":
        return len([e for e in events if e.device_type == DeviceType.CUDA and not e.is_user_annotation
                    and "Memcpy" not in e.name and "Memset" not in e.name])
    calls = gpulab.profiling.calls_by_your_code(events)
    operators = sum(count for name, count in calls.items() if name.startswith("aten::"))
    return operators + len([e for e in events if "cpp_fused" in e.name])


def count_kernels(fn, x):
    fn(x)
    if x.device.type == "cuda":
        torch.cuda.synchronize()
        activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    else:
        activities = [ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as p:
        fn(x)
        if x.device.type == "cuda":
            torch.cuda.synchronize()
    return kernels_in(p.events(), x.device)
""",
        ),
        (
            "a loop with a counter; the parent checked as not an operator",
            kernels(
                kernels_in="""
    count = 0
    for event in events:
        if device.type == "cuda":
            if event.device_type != DeviceType.CUDA or event.is_user_annotation:
                continue
            if event.name.startswith("Memcpy") or event.name.startswith("Memset"):
                continue
            count += 1
        elif "cpp_fused" in event.name:
            count += 1
        elif event.name.startswith("aten::"):
            parent = event.cpu_parent
            if parent is None or not parent.name.startswith("aten::"):
                count += 1
    return count
"""
            ),
        ),
        (
            "a warm-up of two calls; the profiler started and stopped by hand",
            kernels(
                count="""
    for _ in range(2):
        fn(x)
    activities = [ProfilerActivity.CPU]
    if x.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=activities)
    prof.start()
    fn(x)
    if x.device.type == "cuda":
        torch.cuda.synchronize()
    prof.stop()
    return kernels_in(prof.events(), x.device)
"""
            ),
        ),
    ],
    "any-batch": [
        (
            "mark_dynamic on every batch, before calling",
            """
import torch._dynamo


def compile_for_any_batch(fn, backend):
    compiled = torch.compile(fn, backend=backend)

    def run(x):
        torch._dynamo.mark_dynamic(x, 0)
        return compiled(x)

    return run
""",
        ),
        (
            "torch.compile as a decorator factory, dynamic=True",
            any_batch("""
    return torch.compile(backend=backend, dynamic=True)(fn)
"""),
        ),
        (
            "maybe_mark_dynamic, the first batch only, functools.wraps",
            """
import functools


def compile_for_any_batch(fn, backend):
    compiled = torch.compile(fn, backend=backend)
    seen = []

    @functools.wraps(fn)
    def run(batch):
        if not seen:
            torch._dynamo.maybe_mark_dynamic(batch, 0)
            seen.append(True)
        return compiled(batch)

    return run
""",
        ),
    ],
}

WRONG = {
    # (name, source, the constraint(s) it breaks, whether it must also fail on a busy machine)
    "bias-relu": [
        ("no mask: the last block reads and writes past the end", flat(mask="None"), "outside", True),
        (
            "a mask, but n // BLOCK programs: the last, partial block is never launched",
            flat(grid="n // 1024"),
            "any-shape",
            False,
        ),
        ("the bias read by the flat index, not per row", flat(bias="offsets"), "relu", False),
        ("x + bias, no relu", flat(result="x + b"), "relu", False),
        (
            "a tensor of its own for the result; the out given stays as it was",
            flat().replace("    n = x.numel()", "    out = torch.empty_like(x)\n    n = x.numel()")
            + "    return out\n",
            "out",
            False,
        ),
        (
            "PyTorch computes it, and copies it into out",
            """
def bias_relu(x, bias, out):
    out.copy_(torch.relu(x + bias))
""",
            "one-launch",
            True,
        ),
        (
            "two kernels: x + bias, then the relu",
            """
@triton.jit
def add_bias(x_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(bias_ptr + offsets % cols, mask=mask), mask=mask)


@triton.jit
def relu_in_place(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.maximum(tl.load(out_ptr + offsets, mask=mask), 0.0), mask=mask)


def bias_relu(x, bias, out):
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    add_bias[grid](x, bias, out, n, x.shape[1], BLOCK=1024)
    relu_in_place[grid](out, n, BLOCK=1024)
""",
            "one-launch",
            False,
        ),
        (
            "x + bias in PyTorch, only the relu in Triton",
            """
@triton.jit
def relu_kernel(in_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.maximum(tl.load(in_ptr + offsets, mask=mask), 0.0), mask=mask)


def bias_relu(x, bias, out):
    shifted = x + bias
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](shifted, out, x.numel(), BLOCK=1024)
""",
            "one-launch",
            False,
        ),
    ],
    "whole": [
        (
            "the population's spread, as numpy's std gives it (correction=0)",
            whole("""
    mean, spread = x.mean(), x.std(correction=0)
    return torch.where(spread < eps, x - mean, (x - mean) / spread)
"""),
            "values",
            False,
        ),
        (
            "the .item() kept, the choice made with torch.where",
            whole("""
    mean = x.mean().item()
    spread = x.std()
    return torch.where(spread < eps, x - mean, (x - mean) / spread)
"""),
            "one-graph",
            True,
        ),
        (
            "standardise itself, its breaks and all",
            whole("""
    return standardise(x, eps)
"""),
            "one-graph",
            False,
        ),
        (
            "the branch dropped: a constant input divides 0 by 0",
            whole("""
    return (x - x.mean()) / x.std()
"""),
            "branch",
            False,
        ),
        (
            "the spread clamped to eps: a constant input is divided by eps",
            whole("""
    return (x - x.mean()) / x.std().clamp(min=eps)
"""),
            "branch",
            False,
        ),
        (
            "eps ignored: 1e-5 written in",
            whole("""
    mean, spread = x.mean(), x.std()
    return torch.where(spread < 1e-5, x - mean, (x - mean) / spread)
"""),
            "branch",
            False,
        ),
        (
            "float64 throughout, for accuracy: a float32 x gives float64",
            whole("""
    x = x.double()
    mean, spread = x.mean(), x.std()
    return torch.where(spread < eps, x - mean, (x - mean) / spread)
"""),
            "keep",
            True,
        ),
        (
            "eps made a tensor on the CPU, of one element",
            whole("""
    mean, spread = x.mean(), x.std()
    return torch.where(spread < torch.tensor([eps]), x - mean, (x - mean) / spread)
"""),
            "keep",
            False,
        ),
    ],
    "kernels": [
        (
            "every aten event, an operator's inner calls too",
            kernels(
                kernels_in="""
    if device.type == "cuda":
        return sum(1 for e in events if e.device_type == DeviceType.CUDA and not e.is_user_annotation
                   and not e.name.startswith(("Memcpy", "Memset")))
    return sum(1 for e in events if e.name.startswith("aten::") or "cpp_fused" in e.name)
"""
            ),
            "operators",
            True,
        ),
        (
            "the operators alone: Inductor's kernels are not aten:: events",
            kernels(
                kernels_in="""
    if device.type == "cuda":
        return sum(1 for e in events if e.device_type == DeviceType.CUDA and not e.is_user_annotation
                   and not e.name.startswith(("Memcpy", "Memset")))
    return sum(1 for e in events if e.name.startswith("aten::")
               and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))
"""
            ),
            "inductor",
            False,
        ),
        (
            "every event the profiler recorded",
            kernels(
                kernels_in="""
    return len(list(events))
"""
            ),
            ("operators", "inductor", "cuda"),
            False,
        ),
        (
            "no warm-up: the first call of a compiled fn is profiled, its compilation with it",
            kernels(
                count="""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if x.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn(x)
        if x.device.type == "cuda":
            torch.cuda.synchronize()
    return kernels_in(prof.events(), x.device)
"""
            ),
            "warm-up",
            True,
        ),
        (
            "two calls profiled, as lesson 07 profiled several steps",
            kernels(
                count="""
    fn(x)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if x.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(2):
            fn(x)
        if x.device.type == "cuda":
            torch.cuda.synchronize()
    return kernels_in(prof.events(), x.device)
"""
            ),
            "one-call",
            False,
        ),
        (
            "on a GPU, everything it ran: copies, fills and labels' copies counted as kernels",
            kernels(
                kernels_in="""
    if device.type == "cuda":
        return sum(1 for e in events if e.device_type == DeviceType.CUDA)
    operators = sum(1 for e in events if e.name.startswith("aten::")
                    and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))
    return operators + sum(1 for e in events if "cpp_fused" in e.name)
"""
            ),
            "cuda",
            False,
        ),
        (
            "on a GPU, the labels' GPU-side copies counted as kernels",
            kernels(
                kernels_in="""
    if device.type == "cuda":
        return sum(1 for e in events if e.device_type == DeviceType.CUDA
                   and not e.name.startswith(("Memcpy", "Memset")))
    operators = sum(1 for e in events if e.name.startswith("aten::")
                    and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))
    return operators + sum(1 for e in events if "cpp_fused" in e.name)
"""
            ),
            "cuda",
            False,
        ),
    ],
    "any-batch": [
        (
            "plain torch.compile: the first batch's sizes, then a recompilation with a symbolic size",
            any_batch("""
    return torch.compile(fn, backend=backend)
"""),
            "once",
            True,
        ),
        (
            "dynamic=False: a compilation per batch size",
            any_batch("""
    return torch.compile(fn, backend=backend, dynamic=False)
"""),
            "once",
            False,
        ),
        (
            "the lesson's quick backend, not the one given",
            any_batch("""
    return torch.compile(fn, backend="eager", dynamic=True)
"""),
            "backend",
            False,
        ),
        (
            "a wrapper that marks the batch dynamic, and returns nothing",
            any_batch("""
    compiled = torch.compile(fn, backend=backend)

    def run(x):
        torch._dynamo.mark_dynamic(x, 0)
        compiled(x)

    return run
"""),
            "values",
            False,
        ),
    ],
}

EDGES = {
    "bias-relu": [
        (
            "a single row, a single column, and a column per element",
            """
for rows, cols in [(1, 5000), (300, 1), (1, 1024)]:
    x, bias = torch.randn(rows, cols).to(device), torch.randn(cols).to(device)
    out = torch.full_like(x, -1.0)
    bias_relu(x, bias, out)
    assert torch.allclose(out.cpu(), torch.relu(x + bias).cpu()), (rows, cols)
""",
        ),
        (
            "negative and zero sums give exactly 0",
            """
x = torch.tensor([[-1.0, 0.0, 2.0], [-3.0, -0.5, 0.5]], device=device)
bias = torch.tensor([1.0, 0.0, -2.0], device=device)
out = torch.full_like(x, -1.0)
bias_relu(x, bias, out)
assert out.cpu().tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], out
""",
        ),
    ],
    "whole": [
        (
            "two elements, and a spread exactly at eps is scaled",
            """
x = torch.tensor([1.0, 3.0])
assert torch.allclose(standardise_whole(x), standardise(x))
spread = float(torch.tensor([0.0, 1.0]).std())
assert torch.allclose(standardise_whole(torch.tensor([0.0, 1.0]), eps=spread), standardise(torch.tensor([0.0, 1.0]), eps=spread))
""",
        ),
        (
            "compiled with fullgraph=True, as the lesson does: no error, the same values",
            """
x = torch.randn(100) * 5
compiled = torch.compile(standardise_whole, fullgraph=True, backend="eager")
assert torch.allclose(compiled(x), standardise(x), atol=1e-6)
assert torch.allclose(compiled(torch.full((100,), 2.0)), standardise(torch.full((100,), 2.0)), atol=1e-6)
""",
        ),
    ],
    "kernels": [
        (
            "nothing to run: 0 kernels; a lone F.relu: 1",
            """
x = torch.randn(64)
assert count_kernels(lambda t: t, x) == 0
assert count_kernels(torch.relu, x) == 1
""",
        ),
        (
            "a profile with no events: 0 on either device",
            """
assert kernels_in([], torch.device("cpu")) == 0 and kernels_in([], torch.device("cuda", 0)) == 0
""",
        ),
    ],
    "any-batch": [
        (
            "a lambda of batches of 3 columns: its values, one compilation",
            """
torch._dynamo.reset()
graphs = []
def backend(gm, example_inputs):
    graphs.append(gm)
    return gm.forward
compiled = compile_for_any_batch(lambda x: x.relu() + 1, backend)
for shape in [(8, 3), (16, 3), (5, 3)]:
    x = torch.randn(shape)
    assert torch.equal(compiled(x), x.relu() + 1)
assert len(graphs) == 1, len(graphs)
""",
        ),
    ],
}
