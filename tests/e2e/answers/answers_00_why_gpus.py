"""Answers students write for lesson 00's exercises: right ones score full marks, wrong ones lose
exactly the checks that enforce the constraints named beside them. See test_answers.py."""

RIGHT = {
    "intensity": [
        (
            "element_size of an empty tensor, step by step",
            """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    nbytes = torch.empty((), dtype=dtype).element_size()
    products = batch * out_channels * size**2 * in_channels * kernel**2
    inputs = batch * in_channels * size**2
    weights = out_channels * in_channels * kernel**2
    outputs = batch * out_channels * size**2
    return 2 * products / ((inputs + weights + outputs) * nbytes)


def chain_intensity(length, fused, dtype=torch.float32):
    nbytes = torch.empty((), dtype=dtype).element_size()
    if fused:
        return length / (2 * nbytes)
    return 1 / (2 * nbytes)
""",
        ),
        (
            "finfo bits, flops and bytes apart",
            """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    width = torch.finfo(dtype).bits // 8
    flops = 2.0 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = width * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                     + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    width = torch.finfo(dtype).bits // 8
    flops = length
    moved = 2 * width if fused else 2 * width * length
    return flops / moved
""",
        ),
        (
            "per element of the output",
            """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    per_output = 2 * in_channels * kernel * kernel
    outputs = batch * out_channels * size * size
    moved = dtype.itemsize * (batch * in_channels * size * size + in_channels * out_channels * kernel**2 + outputs)
    return float(per_output * outputs / moved)


def chain_intensity(length, fused, dtype=torch.float32):
    reads_and_writes = 2 if fused else 2 * length
    return float(length) / (reads_and_writes * dtype.itemsize)
""",
        ),
        (
            "0-dim tensors turned into floats, a helper for the bytes",
            """
import torch as t

def _bytes(dtype):
    return t.tensor(0, dtype=dtype).element_size()


def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=t.float32):
    flops = t.tensor(2.0 * in_channels * kernel**2) * batch * out_channels * size**2
    moved = _bytes(dtype) * (batch * in_channels * size**2 + out_channels * in_channels * kernel**2
                             + batch * out_channels * size**2)
    return (flops / moved).item()


def chain_intensity(length, fused, dtype=t.float32):
    trips = 1 if fused else length
    return float(length / (trips * 2 * _bytes(dtype)))
""",
        ),
    ],
    "amdahl": [
        (
            "search upwards, with the limit first",
            """
def parallel_fraction(speedup, processors):
    return (1 / speedup - 1) / (1 / processors - 1)


def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    n = 1
    while 1 / ((1 - p) + p / n) < target:
        n += 1
    return n
""",
        ),
        (
            "closed form, ceil",
            """
import math

def parallel_fraction(speedup, processors):
    return (1 - 1 / speedup) * processors / (processors - 1)


def processors_needed(target, p):
    serial = 1 - p
    if 1 / target <= serial:
        return None
    return max(1, math.ceil(p / (1 / target - serial) - 1e-9))
""",
        ),
        (
            "search with a cap",
            """
def parallel_fraction(speedup, processors):
    n = processors
    return n * (speedup - 1) / (speedup * (n - 1))


def processors_needed(target, p):
    for n in range(1, 1_000_000):
        if 1 / ((1 - p) + p / n) >= target:
            return n
    return None
""",
        ),
        (
            "solved for N, the limit as a product",
            """
from math import ceil

def parallel_fraction(speedup, processors):
    return (processors * speedup - processors) / (processors * speedup - speedup)


def processors_needed(target, p):
    if target <= 1:
        return 1
    if target * (1 - p) >= 1:
        return None
    return ceil(p * target / (1 - target * (1 - p)))
""",
        ),
        (
            "numpy, a helper for S(N), a while loop",
            """
import numpy as np

def speedup(n, p):
    return 1 / ((1 - p) + p / n)


def parallel_fraction(speedup, processors):
    return float((1 - 1 / np.float64(speedup)) / (1 - 1 / processors))


def processors_needed(target, p):
    limit = np.inf if p == 1 else 1 / (1 - p)
    if target >= limit:
        return None
    n = 1
    while speedup(n, p) < target:
        n += 1
    return n
""",
        ),
    ],
    "bound": [
        (
            "times compared",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    t_compute = flops / peak_flops
    t_memory = bytes_moved / bandwidth
    if overhead_s > t_compute and overhead_s > t_memory:
        return "overhead"
    if t_memory >= t_compute:
        return "memory"
    return "compute"
""",
        ),
        (
            "intensity against the ridge",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if overhead_s > max(flops / peak_flops, bytes_moved / bandwidth):
        return "overhead"
    ridge = peak_flops / bandwidth
    intensity = flops / bytes_moved
    return "compute" if intensity > ridge else "memory"
""",
        ),
        (
            "the longest of three",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    times = {"compute": flops / peak_flops, "memory": bytes_moved / bandwidth}
    slowest = "memory" if times["memory"] >= times["compute"] else "compute"
    return "overhead" if overhead_s > times[slowest] else slowest
""",
        ),
        (
            "cross-multiplied, no division",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if overhead_s * peak_flops > flops and overhead_s * bandwidth > bytes_moved:
        return "overhead"
    if bytes_moved * peak_flops >= flops * bandwidth:
        return "memory"
    return "compute"
""",
        ),
    ],
    "timer": [
        (
            "perf_counter and gpulab.synchronize",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        gpulab.synchronize(device)
        start = time.perf_counter()
        fn()
        gpulab.synchronize(device)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
""",
        ),
        (
            "CUDA events on CUDA, a stopwatch elsewhere",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1000)
        else:
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    samples.sort()
    return float(samples[len(samples) // 2])
""",
        ),
        (
            "torch.accelerator, nanoseconds, numpy's median",
            """
import numpy as np

def time_on_device(fn, device, warmup=3, repeats=10):
    def wait():
        if torch.device(device).type != "cpu":
            torch.accelerator.synchronize()
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        wait()
        t0 = time.perf_counter_ns()
        fn()
        wait()
        times.append((time.perf_counter_ns() - t0) / 1e9)
    return float(np.median(times))
""",
        ),
        (
            "names imported from time and statistics, torch.cuda only on CUDA",
            """
from time import perf_counter
from statistics import median as middle

def time_on_device(fn, device, warmup=3, repeats=10):
    on_cuda = torch.device(device).type == "cuda"

    def wait():
        if on_cuda:
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        wait()
        t0 = perf_counter()
        fn()
        wait()
        samples.append(perf_counter() - t0)
    return middle(samples)
""",
        ),
        (
            "the median by hand, lower middle for an even count",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    samples = []
    while len(samples) < repeats:
        gpulab.synchronize(device)
        start = time.perf_counter_ns()
        fn()
        gpulab.synchronize(device)
        samples.append((time.perf_counter_ns() - start) * 1e-9)
    samples = sorted(samples)
    return samples[(len(samples) - 1) // 2]
""",
        ),
    ],
}

_INTENSITY = """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = 2 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = dtype.itemsize * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                              + batch * out_channels * size * size)
    return flops / moved
"""

_FRACTION = """
def parallel_fraction(speedup, processors):
    return (1 - 1 / speedup) / (1 - 1 / processors)
"""

_TIMED = """
    samples = []
    for _ in range(repeats):
        gpulab.synchronize(device)
        start = time.perf_counter()
        fn()
        gpulab.synchronize(device)
        samples.append(time.perf_counter() - start)
"""

WRONG = {
    "intensity": [
        (
            "one FLOP per product",
            """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = batch * out_channels * size * size * in_channels * kernel * kernel
    moved = dtype.itemsize * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                              + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return length / (2 * dtype.itemsize * (1 if fused else length))
""",
            "conv-flops",
            False,
        ),
        (
            "forgets the filters",
            """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = 2 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = dtype.itemsize * (batch * in_channels * size * size + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return length / (2 * dtype.itemsize * (1 if fused else length))
""",
            "conv-bytes",
            False,
        ),
        (
            "always four bytes",
            """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = 2 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = 4 * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                 + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return length / (8 * (1 if fused else length))
""",
            "intensity-dtype",
            True,
        ),
        (
            "the fused chain in float32 bytes whatever the dtype",
            _INTENSITY
            + """

def chain_intensity(length, fused, dtype=torch.float32):
    if fused:
        return length / 8
    return 1 / (2 * dtype.itemsize)
""",
            "intensity-dtype",
            False,
        ),
        (
            "an unfused chain that only reads",
            _INTENSITY
            + """

def chain_intensity(length, fused, dtype=torch.float32):
    if fused:
        return length / (2 * dtype.itemsize)
    return 1 / dtype.itemsize
""",
            "chain-unfused",
            False,
        ),
        (
            "fusing changes nothing",
            _INTENSITY
            + """

def chain_intensity(length, fused, dtype=torch.float32):
    return 1 / (2 * dtype.itemsize)
""",
            "chain-fused",
            False,
        ),
        (
            "two FLOPs per elementwise operation",
            _INTENSITY
            + """

def chain_intensity(length, fused, dtype=torch.float32):
    return 2 * length / (2 * dtype.itemsize * (1 if fused else length))
""",
            "chain-flops",
            False,
        ),
        (
            "0-dim tensors, not floats",
            """
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = torch.tensor(2.0 * batch * out_channels * size * size * in_channels * kernel * kernel)
    moved = dtype.itemsize * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                              + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return torch.tensor(float(length)) / (2 * dtype.itemsize * (1 if fused else length))
""",
            "intensity-float",
            False,
        ),
    ],
    "amdahl": [
        (
            "speed-up over processors, not Amdahl",
            """
import math

def parallel_fraction(speedup, processors):
    return (speedup - 1) / (processors - 1)


def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    return max(1, math.ceil(p / (1 / target - (1 - p))))
""",
            "amdahl-fraction",
            False,
        ),
        (
            "rounds to the nearest",
            _FRACTION
            + """

def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    return max(1, round(p / (1 / target - (1 - p))))
""",
            "amdahl-smallest",
            False,
        ),
        (
            "a float, not a count",
            _FRACTION
            + """

def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    return max(1.0, p / (1 / target - (1 - p)))
""",
            "amdahl-smallest",
            False,
        ),
        (
            "more than the target, not at least",
            _FRACTION
            + """
import math

def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    return max(1, math.floor(p / (1 / target - (1 - p))) + 1)
""",
            "amdahl-reaches",
            False,
        ),
        (
            "searches while S(N) <= target",
            _FRACTION
            + """

def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    n = 1
    while 1 / ((1 - p) + p / n) <= target:
        n += 1
    return n
""",
            "amdahl-reaches",
            False,
        ),
        (
            "closed form without the limit",
            _FRACTION
            + """
import math

def processors_needed(target, p):
    return max(1, math.ceil(p / (1 / target - (1 - p))))
""",
            "amdahl-none",
            False,
        ),
        (
            "beyond the limit, not at it",
            _FRACTION
            + """
import math

def processors_needed(target, p):
    if target > 1 / (1 - p):
        return None
    return max(1, math.ceil(p / (1 / target - (1 - p))))
""",
            "amdahl-at-limit",
            False,
        ),
        (
            "searches for ever",
            _FRACTION
            + """

def processors_needed(target, p):
    n = 1
    while 1 / ((1 - p) + p / n) < target:
        n += 1
    return n
""",
            "amdahl-prompt",
            False,
        ),
    ],
    "bound": [
        (
            "intensity against 1 FLOP/B",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if overhead_s > max(flops / peak_flops, bytes_moved / bandwidth):
        return "overhead"
    return "compute" if flops / bytes_moved > 1 else "memory"
""",
            "bound-at-least",
            False,
        ),
        (
            "compute when the times are equal",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    compute_s, memory_s = flops / peak_flops, bytes_moved / bandwidth
    if overhead_s > max(compute_s, memory_s):
        return "overhead"
    return "memory" if memory_s > compute_s else "compute"
""",
            "bound-at-least",
            False,
        ),
        (
            "never overhead",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    return "memory" if bytes_moved / bandwidth >= flops / peak_flops else "compute"
""",
            "bound-overhead",
            False,
        ),
        (
            "overhead against the arithmetic only",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if flops / peak_flops < overhead_s:
        return "overhead"
    return "memory" if bytes_moved / bandwidth >= flops / peak_flops else "compute"
""",
            "bound-overhead",
            True,
        ),
        (
            "overhead against the bytes only",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if bytes_moved / bandwidth < overhead_s:
        return "overhead"
    return "memory" if bytes_moved / bandwidth >= flops / peak_flops else "compute"
""",
            "bound-longer-than-both",
            False,
        ),
        (
            "overhead against the sum of the times",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    compute_s, memory_s = flops / peak_flops, bytes_moved / bandwidth
    if overhead_s > compute_s + memory_s:
        return "overhead"
    return "memory" if memory_s >= compute_s else "compute"
""",
            "bound-longer-than-both",
            False,
        ),
        (
            "overhead when at least as long",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    compute_s, memory_s = flops / peak_flops, bytes_moved / bandwidth
    if overhead_s >= max(compute_s, memory_s):
        return "overhead"
    return "memory" if memory_s >= compute_s else "compute"
""",
            "bound-longer-than-both",
            False,
        ),
        (
            "the comparison the wrong way round",
            """
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    compute_s, memory_s = flops / peak_flops, bytes_moved / bandwidth
    if overhead_s > max(compute_s, memory_s):
        return "overhead"
    return "compute" if memory_s >= compute_s else "memory"
""",
            "bound-memory",
            False,
        ),
    ],
    "timer": [
        (
            "never waits for the device",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
""",
            "timer-wait-after",
            True,
        ),
        (
            "times the warm-up calls too",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    samples = []
    for _ in range(warmup + repeats):
        gpulab.synchronize(device)
        start = time.perf_counter()
        fn()
        gpulab.synchronize(device)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
""",
            "timer-warmup",
            True,
        ),
        (
            "three warm-up calls whatever warmup says",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(3):
        fn()
"""
            + _TIMED
            + """    return statistics.median(samples)
""",
            "timer-warmup",
            False,
        ),
        (
            "the mean of the samples",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
"""
            + _TIMED
            + """    return sum(samples) / len(samples)
""",
            "timer-median",
            True,
        ),
        (
            "the fastest sample",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
"""
            + _TIMED
            + """    return min(samples)
""",
            "timer-median",
            False,
        ),
        (
            "one stopwatch around all the repeats",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    gpulab.synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    gpulab.synchronize(device)
    return (time.perf_counter() - start) / repeats
""",
            "timer-one-call",
            False,
        ),
        (
            "starts the clock without waiting",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        gpulab.synchronize(device)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
""",
            "timer-wait-before",
            False,
        ),
        (
            "one more call to be sure it compiled",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    fn()
    for _ in range(warmup):
        fn()
"""
            + _TIMED
            + """    return statistics.median(samples)
""",
            "timer-calls",
            False,
        ),
        (
            "gpulab.time_fn's median",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    return gpulab.time_fn(fn, device=device, warmup=warmup, min_samples=repeats, max_samples=repeats).median_s
""",
            "timer-own",
            False,
        ),
        (
            "torch.cuda.synchronize everywhere",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
""",
            "timer-cpu",
            False,
        ),
        (
            "a device given as a string only",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    def wait():
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        wait()
        start = time.perf_counter()
        fn()
        wait()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
""",
            "timer-devices",
            False,
        ),
        (
            "milliseconds",
            """
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
"""
            + _TIMED.replace("time.perf_counter() - start", "(time.perf_counter() - start) * 1000")
            + """    return statistics.median(samples)
""",
            "timer-seconds",
            False,
        ),
    ],
}

EDGES = {
    "intensity": [
        (
            "a chain of one is the same fused or not, and intensity follows the dtype",
            """
assert chain_intensity(1, True) == chain_intensity(1, False) == 0.125
assert chain_intensity(6, True, torch.bfloat16) == 1.5 and chain_intensity(6, False, torch.float64) == 1 / 16
assert isinstance(conv2d_intensity(1, 1, 1, 1, 1), float)
# a 1x1 convolution of one pixel, one channel: 2 FLOPs for 3 values of 4 bytes
assert conv2d_intensity(1, 1, 1, 1, 1) == 2 / 12
""",
        ),
    ],
    "amdahl": [
        (
            "at the limit to within rounding: (10, 0.9) returns None, promptly",
            """
import threading
found = []
worker = threading.Thread(target=lambda: found.append(processors_needed(10, 0.9)), daemon=True)
worker.start()
worker.join(timeout=2)
assert not worker.is_alive(), "processors_needed(10, 0.9) did not return within 2 s"
assert found == [None], found
""",
        ),
        (
            "limits exact in floats, at and beyond",
            """
for target, p in ((4.0, 0.75), (16.0, 0.9375), (20.0, 0.95), (25.0, 0.95), (2.0, 0.0), (1.5, 0.0)):
    assert processors_needed(target, p) is None, (target, p, processors_needed(target, p))
""",
        ),
        (
            "S(N) exactly the target, target <= 1, p = 1",
            """
for target, p, expected in ((2.0, 0.75, 3), (4.0, 0.875, 7), (8.0, 0.9375, 15), (1.0, 0.5, 1), (0.3, 0.5, 1),
                            (1.0, 0.0, 1), (7.5, 1.0, 8), (8.0, 1.0, 8), (2**29, 1 - 2**-30, 2**30 - 1)):
    got = processors_needed(target, p)
    assert got == expected and isinstance(got, int), (target, p, got, expected)
""",
        ),
        (
            "agrees with a search wherever the target is not within rounding of an S(N)",
            """
def speedup(n, p):
    return 1 / ((1 - p) + p / n)

for p in (0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
    for target in (1.01, 1.2, 1.7, 2.5, 3.3, 9.0, 9.5, 19.0, 30.0, 99.0, 300.0):
        if target >= 1 / (1 - p):
            assert processors_needed(target, p) is None, (target, p)
            continue
        n = 1
        while speedup(n, p) < target:
            n += 1
        assert processors_needed(target, p) == n, (target, p, processors_needed(target, p), n)
""",
        ),
        (
            "p from a speed-up, at both ends",
            """
assert parallel_fraction(1.0, 8) == 0.0
assert abs(parallel_fraction(4.0, 4) - 1.0) < 1e-12
assert abs(parallel_fraction(1 / (0.25 + 0.75 / 3), 3) - 0.75) < 1e-12
""",
        ),
    ],
    "bound": [
        (
            "ties: equal times are memory-bound, a call as long as the longer time is not overhead",
            """
assert bound_by(2**31, 2**31, 2**40, 2**40, 2**-17) == "memory"
assert bound_by(2**23, 2**20, 2**40, 2**40, 2**-17) == "compute"
assert bound_by(2**20, 2**23, 2**40, 2**40, 2**-17) == "memory"
assert bound_by(2**20, 2**20, 2**40, 2**40, 2**-17) == "overhead"
assert bound_by(0, 0, 1e12, 1e12, 0.0) == "memory"
""",
        ),
    ],
    "timer": [
        (
            "no warm-up, one sample, on the CPU",
            """
got = time_on_device(lambda: None, "cpu", warmup=0, repeats=1)
assert isinstance(got, float) and 0 <= got < 0.1, got
calls = []
time_on_device(lambda: calls.append(1), torch.device("cpu"), warmup=2, repeats=4)
assert len(calls) == 6, calls
""",
        ),
    ],
}
