"""One correct way to time work on any device.

Accelerators run asynchronously: a call returns as soon as its kernels are queued. A timer
that does not wait for the device measures the queueing, not the work. :func:`time_fn`
warms up first (the first calls pay for kernel selection, caches and lazy allocation),
synchronises around every sample, repeats a short call enough times that the timer's own
overhead does not matter, and reports the median with its interquartile range.

A point is only as good as its spread. On a GPU, :func:`time_fn` warms up for a while (clocks
rise, caches and allocators fill for the new size), then repeats a point until its interquartile
range is within ``target_spread`` of the median or its budget is spent, as
``torch.utils.benchmark.Timer.adaptive_autorange`` does. :class:`Series` keeps each point's
median with its spread, which panels draw and records keep, and :func:`apart` says whether two
measured points differ by more than their spreads.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence

import torch

from .devices import best_device, synchronize
from .units import format_seconds  # gpulab.timing.format_seconds too, as before

__all__ = [
    "WIDE_SPREAD",
    "Points",
    "Series",
    "Timing",
    "apart",
    "copy_gbps",
    "crossover",
    "expected_seconds",
    "format_seconds",
    "fresh_memory_gbps",
    "is_wide",
    "matmul_gflops",
    "matmul_n_for",
    "measured_points",
    "noise_line",
    "ratio",
    "spread_of",
    "time_fn",
    "with_spread",
]

MODES = ("device", "wall")

# A point whose interquartile range is more than this fraction of its median is "within noise":
# figures draw it as such and panels draw no conclusion from it.
WIDE_SPREAD = 0.10
# On a GPU, time_fn repeats a point until its IQR is within this fraction of the median,
GPU_TARGET_SPREAD = 0.03
# after warming up for at least this long.
GPU_WARMUP_S = 0.02


@dataclasses.dataclass(frozen=True)
class Timing:
    """The result of :func:`time_fn`: seconds per call, one value per sample."""

    samples_s: tuple[float, ...]
    calls_per_sample: int
    device: str
    clock: str
    flops: float | None = None
    bytes_moved: float | None = None

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def iqr_s(self) -> float:
        """Interquartile range: the spread of the middle half of the samples."""
        q1, q3 = self._quartiles()
        return q3 - q1

    @property
    def q1_s(self) -> float:
        """The first quartile of the samples (the median itself with one sample)."""
        return self._quartiles()[0]

    @property
    def q3_s(self) -> float:
        """The third quartile of the samples."""
        return self._quartiles()[1]

    def _quartiles(self) -> tuple[float, float]:
        q1, _, q3 = _quartiles_of(self.samples_s)
        return q1, q3

    @property
    def relative_spread(self) -> float:
        """The interquartile range as a fraction of the median."""
        return self.iqr_s / self.median_s if self.median_s > 0 else 0.0

    @property
    def wide(self) -> bool:
        """Whether the spread is wide (over :data:`WIDE_SPREAD` of the median): the point is within noise."""
        return self.relative_spread > WIDE_SPREAD

    @property
    def num_samples(self) -> int:
        return len(self.samples_s)

    @property
    def gflops(self) -> float | None:
        """Achieved GFLOP/s (1 GFLOP = 1e9 floating-point operations), if told the flops."""
        return None if self.flops is None else self.flops / self.median_s / 1e9

    @property
    def tflops(self) -> float | None:
        return None if self.flops is None else self.flops / self.median_s / 1e12

    @property
    def gbps(self) -> float | None:
        """Achieved GB/s (1 GB = 1e9 bytes), if told the bytes moved."""
        return None if self.bytes_moved is None else self.bytes_moved / self.median_s / 1e9

    def rate(self) -> str:
        """The achieved rate as text, in the unit that reads best ("" when none is known)."""
        parts = []
        if self.flops is not None:
            parts.append(f"{self.tflops:.3g} TFLOP/s" if self.tflops >= 1 else f"{self.gflops:.3g} GFLOP/s")
        if self.bytes_moved is not None:
            parts.append(f"{self.gbps:.3g} GB/s")
        return ", ".join(parts)

    def __str__(self) -> str:
        text = (
            f"{format_seconds(self.median_s)} ± {format_seconds(self.iqr_s)} IQR "
            f"({self.num_samples} samples × {self.calls_per_sample} calls, {self.device}, {self.clock})"
        )
        rate = self.rate()
        return f"{text} · {rate}" if rate else text


def _wall_sample(fn: Callable[[], object], calls: int, device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize(device)
    return (time.perf_counter() - start) / calls


def _cuda_event_sample(fn: Callable[[], object], calls: int, device: torch.device) -> float:
    # Events are recorded on the device's stream, so they measure when the GPU started and
    # finished the work, without the host's bookkeeping between samples.
    with torch.cuda.device(device):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / calls


def _plan(call_s: float, min_samples: int, max_samples: int, budget_s: float, min_sample_s: float) -> tuple[int, int]:
    """How many calls per sample and how many samples :func:`time_fn` takes for a call of ``call_s``."""
    calls = min(max(1, math.ceil(min_sample_s / call_s)), 100_000)
    samples = min(max(min_samples, int(budget_s / (call_s * calls))), max_samples)
    return calls, samples


def expected_seconds(
    call_s: float,
    *,
    warmup: int = 2,
    min_samples: int = 5,
    max_samples: int = 100,
    budget_s: float = 0.25,
    min_sample_s: float = 2e-3,
) -> float:
    """About how long :func:`time_fn` runs, with these settings, for a call that takes ``call_s``.

    The warm-up calls (on a GPU at least the 20 ms :func:`time_fn` warms up for), the one call that sizes
    the samples, and the samples themselves, as :func:`time_fn` plans them; not the extra samples a GPU may
    take for a wide point. Panels use it to hide settings that would run too long.
    """
    call_s = max(call_s, 1e-9)
    calls, samples = _plan(call_s, min_samples, max_samples, budget_s, min_sample_s)
    warm_s = warmup * call_s
    if _real_accelerator(best_device()):
        warm_s = max(warm_s, GPU_WARMUP_S)
    return warm_s + call_s * (1 + calls * samples)


_RATES: dict[tuple, float] = {}


def matmul_gflops(device: torch.device | str, dtype: torch.dtype | str = torch.float32, n: int = 512) -> float:
    """GFLOP/s of an n×n matrix multiply on ``device``, measured once per session and remembered.

    A quick calibration, not a benchmark: panels use it to predict how long a setting takes.
    """
    device = torch.device(device)
    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    key = ("matmul", str(device), str(dtype), n)
    if key not in _RATES:
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        _RATES[key] = time_fn(lambda: a @ b, device=device, flops=2 * n**3, budget_s=0.02, min_samples=3).gflops
    return _RATES[key]


def matmul_n_for(
    seconds: float,
    device: torch.device | str,
    dtype: torch.dtype = torch.float32,
    *,
    step: int = 256,
    largest: int = 8192,
) -> int:
    """The largest n (a multiple of ``step``, at most ``largest``) whose n×n matmul takes about
    ``seconds`` on ``device``, by :func:`matmul_gflops`; at least ``step``, and small enough that
    three such matrices fit in half the free memory.

    A demonstration sized by it shows the same thing on a laptop CPU and on an H100, in about the
    same time.
    """
    from . import memory

    rate = matmul_gflops(device, dtype) * 1e9
    n = int((seconds * rate / 2) ** (1 / 3)) // step * step
    fits = memory.largest_square_n(device, matrices=3, dtype=dtype) // step * step
    return max(step, min(n, largest, fits))


def copy_gbps(source: torch.device | str, destination: torch.device | str, nbytes: int = 64 * 2**20) -> float:
    """GB/s of a ``nbytes`` copy from ``source`` to ``destination`` memory, measured once per session.

    Like :func:`matmul_gflops`, a calibration for predicting run times.
    """
    source, destination = torch.device(source), torch.device(destination)
    key = ("copy", str(source), str(destination), nbytes)
    if key not in _RATES:
        src = torch.empty(nbytes, dtype=torch.uint8, device=source)
        dst = torch.empty(nbytes, dtype=torch.uint8, device=destination)
        device = destination if destination.type != "cpu" else source
        _RATES[key] = time_fn(
            lambda: dst.copy_(src), device=device, mode="wall", bytes_moved=nbytes, budget_s=0.02, min_samples=3
        ).gbps
    return _RATES[key]


def fresh_memory_gbps(nbytes: int = 64 * 2**20) -> float:
    """GB/s at which new host memory is made and first filled, measured once per session.

    Large new tensors cost more than their fill: the operating system maps and zeroes every
    page on first touch, and on some machines that is several times slower than a copy.
    """
    key = ("fresh", nbytes)
    if key not in _RATES:
        _RATES[key] = time_fn(
            lambda: torch.ones(nbytes, dtype=torch.uint8),
            device="cpu",
            mode="wall",
            bytes_moved=nbytes,
            budget_s=0.02,
            min_samples=3,
            warmup=1,
        ).gbps
    return _RATES[key]


def time_fn(
    fn: Callable[[], object],
    *,
    device: torch.device | str | None = None,
    flops: float | None = None,
    bytes_moved: float | None = None,
    mode: str = "device",
    warmup: int = 2,
    min_samples: int = 5,
    max_samples: int = 100,
    budget_s: float = 0.25,
    min_sample_s: float = 2e-3,
    target_spread: float | None = None,
    warmup_s: float | None = None,
) -> Timing:
    """Time ``fn()`` (called with no arguments) on ``device``; return a :class:`Timing`.

    - ``device``: where ``fn`` does its work (default: :func:`gpulab.best_device`). Every
      sample waits for it to finish. On CUDA, ``mode="device"`` uses CUDA events.
    - ``mode="wall"``: host wall-clock time between two synchronisations. Use it for costs
      that live on the host, such as a loop that calls ``.item()`` every step.
    - ``flops`` / ``bytes_moved``: the work of one call, to report GFLOP/s or GB/s.
    - ``warmup`` calls run first and are not measured. A call shorter than
      ``min_sample_s`` is repeated within each sample, and samples are taken until
      ``budget_s`` is spent (at least ``min_samples``, at most ``max_samples``), as planned
      from one timed call; on a machine busier than that call showed, sampling stops at
      twice the planned time, once it has ``min_samples``.
    - ``target_spread``: once the planned samples are taken, keep sampling until the
      interquartile range is at most this fraction of the median, for up to four times
      ``budget_s`` more. Default: :data:`GPU_TARGET_SPREAD` on a GPU, none on a CPU (and on a
      simulated GPU, which is a CPU).
    - ``warmup_s``: warm up for at least this long as well as ``warmup`` calls, each call
      waited for (default: 20 ms on a GPU, whose clocks rise under load, none on a CPU).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if min_samples < 1 or max_samples < min_samples:
        raise ValueError(f"need 1 <= min_samples <= max_samples, got {min_samples} and {max_samples}")
    device = torch.device(device) if device is not None else best_device()
    gpu = _real_accelerator(device)
    if target_spread is None and gpu:
        target_spread = GPU_TARGET_SPREAD
    if warmup_s is None:
        warmup_s = GPU_WARMUP_S if gpu else 0.0
    warm_until, calls_made = time.perf_counter() + warmup_s, 0
    while calls_made < warmup or time.perf_counter() < warm_until:
        fn()
        calls_made += 1
        if warmup_s > 0:
            synchronize(device)
    estimate_s = max(_wall_sample(fn, 1, device), 1e-9)
    calls, samples = _plan(estimate_s, min_samples, max_samples, budget_s, min_sample_s)
    use_events = mode == "device" and device.type == "cuda"
    sample = _cuda_event_sample if use_events else _wall_sample
    # The plan rests on one call. On a busy machine the calls that follow can be many times
    # slower than that one (a process that shares the cores takes them away for whole time
    # slices), so sampling also stops, once it has min_samples, when it has run twice as long
    # as planned: the timer stays within its budget instead of running for minutes.
    deadline = time.perf_counter() + 2 * max(budget_s, estimate_s * calls * min_samples)
    samples_s = []
    while len(samples_s) < samples:
        samples_s.append(sample(fn, calls, device))
        if len(samples_s) >= min_samples and time.perf_counter() > deadline:
            break
    if target_spread is not None:
        # Repeat until the middle half of the samples is narrow, or the extra budget is spent.
        spread_deadline = time.perf_counter() + 4 * budget_s
        while (
            _relative_iqr(samples_s) > target_spread
            and time.perf_counter() < spread_deadline
            and len(samples_s) < 10 * max_samples
        ):
            samples_s.append(sample(fn, calls, device))
    return Timing(
        samples_s=tuple(samples_s),
        calls_per_sample=calls,
        device=str(device),
        clock="cuda events" if use_events else "wall clock",
        flops=flops,
        bytes_moved=bytes_moved,
    )


def _real_accelerator(device: torch.device) -> bool:
    from . import simulated

    return device.type != "cpu" and not simulated.is_simulating()


def _quartiles_of(samples: Sequence[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile); one sample is all three."""
    if len(samples) < 2:
        middle = statistics.median(samples)
        return middle, middle, middle
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, median, q3


def _relative_iqr(samples: Sequence[float]) -> float:
    if len(samples) < 2:
        return math.inf  # no spread to judge yet
    q1, median, q3 = _quartiles_of(samples)
    return (q3 - q1) / median if median > 0 else 0.0


def _median_and_spread(timing: Timing, convert: Callable[[float], float] | None) -> tuple[float, list[float]]:
    """``timing``'s median and ``[low, high]`` quartiles through ``convert`` (seconds where None); a rate's
    quartiles swap ends, so they are sorted."""
    convert = convert or (lambda seconds: seconds)
    return convert(timing.median_s), sorted((convert(timing.q1_s), convert(timing.q3_s)))


class Series(dict):
    """Measured series by name, each a list of medians, and each point's spread beside it.

    ``series.add(name, timing)`` appends the median of a :class:`Timing` to the series ``name``
    and its interquartile range to ``series.spread[name]``, as ``[low, high]``; ``value`` turns
    seconds into what is plotted (``lambda s: s * 1e3`` for milliseconds, ``lambda s: batch / s``
    for samples per second), for the median and both quartiles alike. ``series.put(name, timing)``
    keeps one measured value under ``name`` instead of a list (a time per step, say), its spread a
    single ``[low, high]``. A panel's experiment returns it in its result like a plain dict; the
    panel moves the spreads into the result's ``"spread"`` entry, which its figure draws and a
    record keeps.
    """

    def __init__(self, value: Callable[[float], float] | None = None):
        super().__init__()
        self.value = value
        self.spread: dict[str, list] = {}

    def add(self, name: str, timing: Timing, value: Callable[[float], float] | None = None) -> float:
        """Append ``timing``'s median (through ``value``, else the series' own) to ``name``; return it."""
        middle, spread = _median_and_spread(timing, value or self.value)
        self.setdefault(name, []).append(middle)
        self.spread.setdefault(name, []).append(spread)
        return middle

    def put(self, name: str, timing: Timing, value: Callable[[float], float] | None = None) -> float:
        """Keep ``timing``'s median (through ``value``, else the series' own) as the one value of ``name``."""
        middle, spread = _median_and_spread(timing, value or self.value)
        self[name] = middle
        self.spread[name] = spread
        return middle


class Points(list):
    """One measured series as a plain list of medians, each point's ``[low, high]`` in ``points.spread``
    (a :class:`Series` of one series, where the result keeps a list rather than a dict of lists)."""

    def __init__(self, value: Callable[[float], float] | None = None):
        super().__init__()
        self.value = value
        self.spread: list[list[float]] = []

    def add(self, timing: Timing, value: Callable[[float], float] | None = None) -> float:
        """Append ``timing``'s median (through ``value``, else the series' own); return it."""
        middle, spread = _median_and_spread(timing, value or self.value)
        self.append(middle)
        self.spread.append(spread)
        return middle


def with_spread(result):
    """``result`` with each top-level :class:`Series` made a plain dict (each :class:`Points` a plain list),
    their spreads under ``result["spread"]``.

    Other results are returned as they are.
    """
    measured = (Series, Points)
    if not isinstance(result, dict) or not any(isinstance(v, measured) for v in result.values()):
        return result
    plain = {
        key: (dict(value) if isinstance(value, Series) else list(value) if isinstance(value, Points) else value)
        for key, value in result.items()
    }
    spread = dict(plain.get("spread") or {})
    spread.update({key: value.spread for key, value in result.items() if isinstance(value, measured)})
    plain["spread"] = spread
    return plain


def _is_pair(spread) -> bool:
    return (
        isinstance(spread, (list, tuple)) and len(spread) == 2 and all(isinstance(end, (int, float)) for end in spread)
    )


def spread_of(result: dict, y: str, name: str | None, index: int | None = None) -> tuple[float, float] | None:
    """The ``[low, high]`` spread of point ``index`` of series ``name`` of ``result[y]``, if measured.

    ``name`` is None where ``result[y]`` is itself one series (a list); ``index`` is None where
    ``result[y][name]`` is one value, not a series."""
    points = (result.get("spread") or {}).get(y)
    if isinstance(points, dict):
        points = points.get(name) if name is not None else None
    elif name is not None:
        points = None
    if points is None:
        return None
    if _is_pair(points):
        return (points[0], points[1]) if index is None else None
    if index is None or index >= len(points) or points[index] is None:
        return None
    low, high = points[index]
    return low, high


def measured_points(result: dict):
    """Every point of ``result`` measured with a spread, as ``(y, name, index, value, spread)``: ``name`` None
    for a series that is a plain list, ``index`` None for one value kept by name."""
    for y, by_name in ((result.get("spread") or {}) if isinstance(result, dict) else {}).items():
        values = result.get(y)
        if isinstance(by_name, list) and isinstance(values, list):
            series = [(None, values)]
        elif isinstance(by_name, dict) and isinstance(values, dict):
            series = [(name, values.get(name)) for name in by_name]
        else:
            continue
        for name, these in series:
            if isinstance(these, (int, float)):
                yield y, name, None, these, spread_of(result, y, name)
                continue
            for index, value in enumerate(these or ()):
                if value is not None:
                    yield y, name, index, value, spread_of(result, y, name, index)


def is_wide(value: float, spread: tuple[float, float] | None) -> bool:
    """Whether a point's spread is more than :data:`WIDE_SPREAD` of its value."""
    if spread is None or not value:
        return False
    return (spread[1] - spread[0]) / abs(value) > WIDE_SPREAD


def noise_line(result) -> str:
    """One line saying how many of ``result``'s measured points are within noise ("" when none is, or
    nothing was measured with a spread): a panel adds it to its summary instead of drawing a conclusion."""
    points = list(measured_points(result)) if isinstance(result, dict) else []
    wide = sum(is_wide(value, spread) for _, _, _, value, spread in points)
    if not wide:
        return ""
    return (
        f"{wide} of the {len(points)} points measured here within noise (the middle half of their repeats spans more than "
        f"{WIDE_SPREAD:.0%} of the median; a busy machine?): a difference within their spread is no result"
    )


def apart(a: float, a_spread, b: float, b_spread) -> bool:
    """Whether two measured points differ by more than their spreads: their ``[low, high]`` ranges do not
    overlap (a wide range makes that harder, never impossible). Without spreads, a difference of more than
    :data:`WIDE_SPREAD` of the larger counts."""
    if a_spread is None or b_spread is None:
        return abs(a - b) > WIDE_SPREAD * max(abs(a), abs(b))
    return a_spread[1] < b_spread[0] or b_spread[1] < a_spread[0]


def ratio(result: dict, y: str, a: tuple, b: tuple) -> float | None:
    """Point ``a`` of ``result[y]`` over point ``b``, or None where the two are within noise of each other
    (see :func:`apart`): what a summary says instead of a ratio. ``a`` and ``b`` are ``(name, index)``: the
    series' name (None where ``result[y]`` is one list) and the point's position (None for a value kept by
    name; -1 for the last)."""

    def point(where: tuple) -> tuple[float, tuple[float, float] | None]:
        name, index = where
        values = result[y] if name is None else result[y][name]
        if index is None:
            return values, spread_of(result, y, name)
        index = range(len(values))[index]
        return values[index], spread_of(result, y, name, index)

    (a_value, a_spread), (b_value, b_spread) = point(a), point(b)
    if not b_value or not apart(a_value, a_spread, b_value, b_spread):
        return None
    return a_value / b_value


def crossover(sizes: Sequence[float], baseline_s: Sequence[float], candidate_s: Sequence[float]):
    """The smallest size from which ``candidate`` is faster than ``baseline`` at every larger size.

    Returns None when the candidate is not faster at the largest size. A single lucky
    point in the noise does not count: the candidate must stay ahead.
    """
    if not (len(sizes) == len(baseline_s) == len(candidate_s)):
        raise ValueError("sizes, baseline_s and candidate_s must have the same length")
    found = None
    for size, base, cand in reversed(list(zip(sizes, baseline_s, candidate_s))):
        if cand < base:
            found = size
        else:
            break
    return found
