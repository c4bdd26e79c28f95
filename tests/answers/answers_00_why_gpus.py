"""Answers students write for lesson 00's exercises: right ones score full marks, wrong ones lose
exactly the checks named beside them. See test_answers.py."""

RIGHT = {
    "intensity": [
        ("element_size of an empty tensor, step by step", '''
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
'''),
        ("finfo bits, flops and bytes apart", '''
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
'''),
        ("per element of the output", '''
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    per_output = 2 * in_channels * kernel * kernel
    outputs = batch * out_channels * size * size
    moved = dtype.itemsize * (batch * in_channels * size * size + in_channels * out_channels * kernel**2 + outputs)
    return float(per_output * outputs / moved)


def chain_intensity(length, fused, dtype=torch.float32):
    reads_and_writes = 2 if fused else 2 * length
    return float(length) / (reads_and_writes * dtype.itemsize)
'''),
    ],
    "amdahl": [
        ("search upwards, with the limit first", '''
def parallel_fraction(speedup, processors):
    return (1 / speedup - 1) / (1 / processors - 1)


def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    n = 1
    while 1 / ((1 - p) + p / n) < target:
        n += 1
    return n
'''),
        ("closed form, ceil", '''
import math

def parallel_fraction(speedup, processors):
    return (1 - 1 / speedup) * processors / (processors - 1)


def processors_needed(target, p):
    serial = 1 - p
    if 1 / target <= serial:
        return None
    return max(1, math.ceil(p / (1 / target - serial) - 1e-9))
'''),
        ("search with a cap", '''
def parallel_fraction(speedup, processors):
    n = processors
    return n * (speedup - 1) / (speedup * (n - 1))


def processors_needed(target, p):
    for n in range(1, 1_000_000):
        if 1 / ((1 - p) + p / n) >= target:
            return n
    return None
'''),
    ],
    "bound": [
        ("times compared", '''
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    t_compute = flops / peak_flops
    t_memory = bytes_moved / bandwidth
    if overhead_s > t_compute and overhead_s > t_memory:
        return "overhead"
    if t_memory >= t_compute:
        return "memory"
    return "compute"
'''),
        ("intensity against the ridge", '''
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if overhead_s > max(flops / peak_flops, bytes_moved / bandwidth):
        return "overhead"
    ridge = peak_flops / bandwidth
    intensity = flops / bytes_moved
    return "compute" if intensity > ridge else "memory"
'''),
        ("the longest of three", '''
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    times = {"compute": flops / peak_flops, "memory": bytes_moved / bandwidth}
    slowest = "memory" if times["memory"] >= times["compute"] else "compute"
    return "overhead" if overhead_s > times[slowest] else slowest
'''),
    ],
    "timer": [
        ("perf_counter and gpulab.synchronize", '''
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
'''),
        ("CUDA events on CUDA, a stopwatch elsewhere", '''
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
'''),
        ("torch.accelerator, nanoseconds, numpy's median", '''
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
'''),
    ],
}

WRONG = {
    "intensity": [
        ("one FLOP per product", '''
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = batch * out_channels * size * size * in_channels * kernel * kernel
    moved = dtype.itemsize * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                              + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return length / (2 * dtype.itemsize * (1 if fused else length))
''', {"intensity-conv"}, False),
        ("forgets the filters", '''
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = 2 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = dtype.itemsize * (batch * in_channels * size * size + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return length / (2 * dtype.itemsize * (1 if fused else length))
''', {"intensity-conv"}, False),
        ("always four bytes", '''
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = 2 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = 4 * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                 + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return length / (8 * (1 if fused else length))
''', {"intensity-dtype"}, True),
        ("an unfused chain that only reads", '''
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = 2 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = dtype.itemsize * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                              + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    if fused:
        return length / (2 * dtype.itemsize)
    return 1 / dtype.itemsize
''', {"intensity-chain"}, False),
        ("fusing changes nothing", '''
def conv2d_intensity(batch, in_channels, out_channels, size, kernel, dtype=torch.float32):
    flops = 2 * batch * out_channels * size * size * in_channels * kernel * kernel
    moved = dtype.itemsize * (batch * in_channels * size * size + out_channels * in_channels * kernel * kernel
                              + batch * out_channels * size * size)
    return flops / moved


def chain_intensity(length, fused, dtype=torch.float32):
    return 1 / (2 * dtype.itemsize)
''', {"intensity-chain"}, False),
    ],
    "amdahl": [
        ("speed-up over processors, not Amdahl", '''
import math

def parallel_fraction(speedup, processors):
    return (speedup - 1) / (processors - 1)


def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    return max(1, math.ceil(p / (1 / target - (1 - p))))
''', {"amdahl-fraction"}, False),
        ("rounds to the nearest", '''
def parallel_fraction(speedup, processors):
    return (1 - 1 / speedup) / (1 - 1 / processors)


def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    return max(1, round(p / (1 / target - (1 - p))))
''', {"amdahl-processors"}, False),
        ("a float, not a count", '''
def parallel_fraction(speedup, processors):
    return (1 - 1 / speedup) / (1 - 1 / processors)


def processors_needed(target, p):
    if target >= 1 / (1 - p):
        return None
    return max(1.0, p / (1 / target - (1 - p)))
''', {"amdahl-processors"}, False),
        ("closed form without the limit", '''
import math

def parallel_fraction(speedup, processors):
    return (1 - 1 / speedup) / (1 - 1 / processors)


def processors_needed(target, p):
    return max(1, math.ceil(p / (1 / target - (1 - p))))
''', {"amdahl-unreachable"}, False),
        ("searches for ever", '''
def parallel_fraction(speedup, processors):
    return (1 - 1 / speedup) / (1 - 1 / processors)


def processors_needed(target, p):
    n = 1
    while 1 / ((1 - p) + p / n) < target:
        n += 1
    return n
''', {"amdahl-unreachable"}, False),
    ],
    "bound": [
        ("intensity against 1 FLOP/B", '''
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if overhead_s > max(flops / peak_flops, bytes_moved / bandwidth):
        return "overhead"
    return "compute" if flops / bytes_moved > 1 else "memory"
''', {"bound-ridge"}, False),
        ("never overhead", '''
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    return "memory" if bytes_moved / bandwidth >= flops / peak_flops else "compute"
''', {"bound-regimes", "bound-overhead"}, False),
        ("overhead against the arithmetic only", '''
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    if flops / peak_flops < overhead_s:
        return "overhead"
    return "memory" if bytes_moved / bandwidth >= flops / peak_flops else "compute"
''', {"bound-regimes", "bound-overhead"}, True),
        ("the comparison the wrong way round", '''
def bound_by(flops, bytes_moved, peak_flops, bandwidth, overhead_s):
    compute_s, memory_s = flops / peak_flops, bytes_moved / bandwidth
    if overhead_s > max(compute_s, memory_s):
        return "overhead"
    return "compute" if memory_s >= compute_s else "memory"
''', {"bound-regimes", "bound-ridge", "bound-overhead"}, False),
    ],
    "timer": [
        ("never waits for the device", '''
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
''', {"timer-waits"}, True),
        ("times the warm-up calls too", '''
def time_on_device(fn, device, warmup=3, repeats=10):
    samples = []
    for _ in range(warmup + repeats):
        gpulab.synchronize(device)
        start = time.perf_counter()
        fn()
        gpulab.synchronize(device)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
''', {"timer-warmup"}, True),
        ("the mean of the samples", '''
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
    return sum(samples) / len(samples)
''', {"timer-median"}, True),
        ("torch.cuda.synchronize everywhere", '''
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
''', {"timer-cpu"}, False),
        ("milliseconds", '''
def time_on_device(fn, device, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        gpulab.synchronize(device)
        start = time.perf_counter()
        fn()
        gpulab.synchronize(device)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)
''', {"timer-waits", "timer-cpu"}, False),
    ],
}
