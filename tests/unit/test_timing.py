import statistics
import time

import pytest
import torch
import torch.utils.benchmark as benchmark

import gpulab
from gpulab import timing
from gpulab.timing import Timing, crossover, time_fn

from conftest import requires_cuda


def _spin(seconds, lasted=None):
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        pass
    if lasted is not None:
        lasted.append(time.perf_counter() - start)


def test_times_a_known_busy_wait_within_a_few_percent():
    # A busy wait lasts what it says, unlike time.sleep, whose overshoot is up to the OS
    # (a loaded CI machine once woke 2.7 ms late from a 20 ms sleep).
    # What each wait really lasted is the truth to compare with: on a loaded machine the OS may pause one.
    lasted = []
    result = time_fn(lambda: _spin(0.02, lasted), device="cpu", mode="wall", min_samples=5, budget_s=0.2)
    assert result.median_s == pytest.approx(statistics.median(lasted[-result.num_samples :]), rel=0.05)
    assert result.median_s >= 0.02
    assert result.num_samples >= 5
    assert result.calls_per_sample == 1


def test_a_sleep_is_never_timed_shorter_than_it_sleeps():
    result = time_fn(lambda: time.sleep(0.02), device="cpu", mode="wall", min_samples=5, budget_s=0.2)
    assert 0.02 <= result.median_s < 0.05


def test_agrees_with_torch_utils_benchmark_on_a_cpu_matmul():
    # On a small shared machine another process can slow one measurement window down, so
    # the two timers take turns three times and the best median of each is compared.
    # One thread for both: torch.utils.benchmark's default, and the least disturbed.
    a = torch.randn(384, 384)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ours, theirs = [], []
        for _ in range(3):
            ours.append(time_fn(lambda: a @ a, device="cpu", budget_s=0.3).median_s)
            theirs.append(
                benchmark.Timer("a @ a", globals={"a": a}, num_threads=1).blocked_autorange(min_run_time=0.3).median
            )
    finally:
        torch.set_num_threads(threads)
    assert min(ours) == pytest.approx(min(theirs), rel=0.2), (ours, theirs)


def test_warmup_calls_are_not_measured():
    calls = []

    def slow_first_call():
        calls.append(None)
        time.sleep(0.2 if len(calls) == 1 else 0.002)

    result = time_fn(slow_first_call, device="cpu", warmup=1, budget_s=0.05, min_samples=5)
    assert max(result.samples_s) < 0.1


def test_short_calls_are_repeated_within_a_sample():
    result = time_fn(lambda: None, device="cpu", min_sample_s=1e-3)
    assert result.calls_per_sample > 100
    assert result.median_s < 1e-4


def test_every_sample_waits_for_the_device(monkeypatch):
    waits = []
    monkeypatch.setattr(timing, "synchronize", lambda device: waits.append(device))
    result = time_fn(lambda: time.sleep(0.001), device="cpu", min_samples=4, max_samples=4, budget_s=0)
    # One estimate plus four samples, each synchronised before and after.
    assert len(waits) == 2 * (1 + result.num_samples)
    assert all(device == torch.device("cpu") for device in waits)


def test_rates_follow_from_the_median():
    result = Timing(
        samples_s=(1.0, 2.0, 3.0), calls_per_sample=1, device="cpu", clock="wall clock", flops=4e12, bytes_moved=6e9
    )
    assert result.median_s == 2.0
    assert result.gflops == pytest.approx(2000.0)
    assert result.tflops == pytest.approx(2.0)
    assert result.gbps == pytest.approx(3.0)  # 1 GB = 1e9 bytes
    assert "2 TFLOP/s" in str(result) and "3 GB/s" in str(result)


def test_iqr_is_the_spread_of_the_middle_half():
    result = Timing(samples_s=(1.0, 2.0, 3.0, 4.0, 5.0), calls_per_sample=1, device="cpu", clock="wall clock")
    assert result.iqr_s == pytest.approx(2.0)
    assert result.gflops is None and result.gbps is None and result.rate() == ""


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        time_fn(lambda: None, mode="fast")
    with pytest.raises(ValueError, match="min_samples"):
        time_fn(lambda: None, min_samples=0)


def test_crossover_needs_the_candidate_to_stay_ahead():
    sizes = [1, 2, 4, 8, 16]
    assert crossover(sizes, [1, 1, 1, 1, 1], [2, 2, 0.5, 0.5, 0.5]) == 4
    # ahead once at 2, behind at 4, ahead from 8 on: the crossover is 8
    assert crossover(sizes, [1, 1, 1, 1, 1], [2, 0.5, 2, 0.5, 0.5]) == 8
    assert crossover(sizes, [1, 1, 1, 1, 1], [0.5, 0.5, 0.5, 0.5, 2]) is None
    with pytest.raises(ValueError):
        crossover([1, 2], [1], [1, 2])


@requires_cuda
def test_cuda_events_time_gpu_work_that_a_stopwatch_misses():
    device = gpulab.gpu(0)
    a = torch.randn(4096, 4096, device=device)
    result = time_fn(lambda: a @ a, device=device, flops=2 * 4096**3)
    assert result.clock == "cuda events"
    wall = time_fn(lambda: a @ a, device=device, mode="wall")
    assert wall.clock == "wall clock"
    # Both wait for the GPU, so both measure the same work.
    assert result.median_s == pytest.approx(wall.median_s, rel=0.5)
    reference = benchmark.Timer("a @ a", globals={"a": a}).blocked_autorange(min_run_time=0.5)
    assert result.median_s == pytest.approx(reference.median, rel=0.35)


@requires_cuda
def test_on_a_real_gpu_a_point_is_warmed_up_and_repeated_to_a_narrow_spread():
    device = gpulab.gpu(0)
    assert timing._real_accelerator(device)
    a = torch.randn(1024, 1024, device=device)
    calls = []

    def work():
        calls.append(1)
        return a @ a

    result = time_fn(work, device=device, budget_s=0.05)
    # a matmul on a GPU is steady: the IQR comes within the target, or the extra budget ran out trying
    assert result.relative_spread <= timing.GPU_TARGET_SPREAD or result.num_samples > 5
    calls.clear()
    time_fn(work, device=device, min_samples=1, max_samples=1, budget_s=0, min_sample_s=0, target_spread=1.0)
    # 20 ms of warm-up (a 1024² float32 matmul: under 0.3 ms even on a T4), one call to plan, one sample
    assert len(calls) - 2 > 10, len(calls)


@pytest.mark.parametrize("call_s", [1e-6, 3e-4, 0.01, 0.2, 2.0])
def test_expected_seconds_follows_the_plan_time_fn_makes(monkeypatch, call_s):
    # time_fn is driven with a fake clock in which every call takes call_s; the calls it
    # makes, warm-up included, must be the ones expected_seconds charges for.
    made = []

    def fake_sample(fn, calls, device):
        made.append(calls)
        return call_s

    monkeypatch.setattr(timing, "_wall_sample", fake_sample)
    warmups = []
    time_fn(lambda: warmups.append(1), device="cpu", mode="wall", budget_s=0.1, warmup=3)
    assert timing.expected_seconds(call_s, budget_s=0.1, warmup=3) == pytest.approx(call_s * (len(warmups) + sum(made)))


def test_sampling_stops_in_time_when_the_machine_slows_down_after_the_plan(monkeypatch):
    # A fake clock: the call that sizes the samples takes 0.1 ms, every later call 5 ms, as when
    # another process takes the cores away. Planned from the quick call, 50 samples of 20 calls
    # would run 5 s; the timer stops at twice its plan, with its minimum of samples.
    clock = [0.0]
    made = []

    def fake_sample(fn, calls, device):
        call_s = 1e-4 if not made else 5e-3
        made.append(calls)
        clock[0] += calls * call_s
        return call_s

    monkeypatch.setattr(timing, "_wall_sample", fake_sample)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    result = time_fn(lambda: None, device="cpu", mode="wall", warmup=0, budget_s=0.1, min_samples=5)
    assert result.calls_per_sample == 20
    assert result.num_samples == 5
    assert result.median_s == 5e-3
    assert clock[0] < 1.0


def test_a_steady_machine_takes_every_planned_sample(monkeypatch):
    clock = [0.0]

    def fake_sample(fn, calls, device):
        clock[0] += calls * 1e-4
        return 1e-4

    monkeypatch.setattr(timing, "_wall_sample", fake_sample)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    result = time_fn(lambda: None, device="cpu", mode="wall", warmup=0, budget_s=0.1, min_samples=5)
    assert result.num_samples == 50  # 0.1 s of budget in samples of 20 calls of 0.1 ms


def test_expected_seconds_grows_with_the_call_and_a_quick_call_costs_the_budget():
    assert timing.expected_seconds(1e-6, budget_s=0.1) == pytest.approx(0.1, rel=0.05)
    assert timing.expected_seconds(1.0) == pytest.approx(8.0)  # 2 warm-up + 1 sizing + 5 samples
    assert timing.expected_seconds(2.0) > timing.expected_seconds(1.0)


def test_calibration_rates_are_measured_once_and_remembered():
    first = timing.matmul_gflops("cpu", "float32", n=64)
    assert first > 0 and timing.matmul_gflops("cpu", torch.float32, n=64) == first
    assert timing.copy_gbps("cpu", "cpu", nbytes=2**16) > 0
    assert timing.fresh_memory_gbps(nbytes=2**20) == timing.fresh_memory_gbps(nbytes=2**20) > 0


def test_matmul_n_for_sizes_a_multiply_by_the_measured_rate(monkeypatch):
    from gpulab import memory

    rates = {"slow": 1.0, "laptop": 100.0, "h100": 5e4}  # GFLOP/s
    monkeypatch.setattr(memory, "largest_square_n", lambda device, matrices, dtype: 100_000)
    for name, gflops in rates.items():
        monkeypatch.setattr(timing, "matmul_gflops", lambda device, dtype=torch.float32, n=512, g=gflops: g)
        n = timing.matmul_n_for(0.05, "cpu")
        assert n % 256 == 0 and 256 <= n <= 8192, (name, n)
        if 256 < n < 8192:
            assert 2 * n**3 / (gflops * 1e9) <= 0.05 < 2 * (n + 256) ** 3 / (gflops * 1e9), (name, n)
    assert [timing.matmul_n_for(0.05, "cpu") for _ in "x"] == [8192]  # 50 TFLOP/s: the largest
    monkeypatch.setattr(timing, "matmul_gflops", lambda device, dtype=torch.float32, n=512: 100.0)
    assert timing.matmul_n_for(0.05, "cpu") == 1280  # (0.05 × 1e11 / 2)^(1/3) ≈ 1357
    assert timing.matmul_n_for(1e-9, "cpu") == 256  # never below one step
    monkeypatch.setattr(memory, "largest_square_n", lambda device, matrices, dtype: 1000)
    assert timing.matmul_n_for(10.0, "cpu") == 768  # three matrices must fit


def _fake_clock(monkeypatch, sample_values):
    """time_fn's samples come from ``sample_values`` (an iterator of seconds per call) on a fake clock."""
    clock = [0.0]

    def fake_sample(fn, calls, device):
        value = next(sample_values)
        clock[0] += calls * value
        return value

    monkeypatch.setattr(timing, "_wall_sample", fake_sample)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    return clock


def _planned(min_samples=10, **options):
    """time_fn on the fake clock: a 1 ms plan, samples of at least 1 ms, a budget of 10 ms, no warm-up."""
    return time_fn(
        lambda: None,
        device="cpu",
        mode="wall",
        warmup=0,
        budget_s=0.01,
        min_samples=min_samples,
        max_samples=10,
        min_sample_s=1e-3,
        **options,
    )


def test_a_wide_point_is_repeated_until_its_spread_is_small(monkeypatch):
    # The first ten samples alternate 1 and 2 ms (IQR 100% of the median); every later one is 1 ms: the timer
    # keeps sampling past its plan until the middle half of the samples is within 3% of the median.
    values = iter([1e-3] + [1e-3, 2e-3] * 5 + [1e-3] * 1000)
    _fake_clock(monkeypatch, values)
    result = _planned(target_spread=0.03)
    assert result.num_samples > 10
    assert result.relative_spread <= 0.03
    assert result.median_s == 1e-3


def test_a_point_that_stays_wide_stops_when_its_extra_budget_is_spent(monkeypatch):
    values = iter([1e-3] + [1e-3, 3e-3] * 10_000)
    clock = _fake_clock(monkeypatch, values)
    result = _planned(min_samples=4, target_spread=0.03)
    assert result.relative_spread > 0.03 and result.wide
    assert clock[0] < 0.01 * 2 + 4 * 0.01 + 0.01  # the plan, at most twice over, then four budgets more


def test_a_cpu_takes_no_extra_samples_unless_asked(monkeypatch):
    values = iter([1e-3] + [1e-3, 2e-3] * 1000)
    _fake_clock(monkeypatch, values)
    result = _planned()
    assert result.num_samples == 10 and result.wide


def test_warm_up_lasts_its_time_as_well_as_its_calls(monkeypatch):
    clock = _fake_clock(monkeypatch, iter([1e-3] * 10))
    calls = []

    def work():  # 1 ms a call on the fake clock
        calls.append(1)
        clock[0] += 1e-3

    time_fn(work, device="cpu", mode="wall", warmup=2, warmup_s=0.03, min_samples=1, max_samples=1, budget_s=0.0)
    assert len(calls) == 30  # 30 ms of warm-up at 1 ms a call, more than the 2 calls asked for


def test_quartiles_and_the_relative_spread():
    t = Timing(samples_s=(1.0, 2.0, 3.0, 4.0, 5.0), calls_per_sample=1, device="cpu", clock="wall clock")
    assert (t.q1_s, t.median_s, t.q3_s) == (2.0, 3.0, 4.0)
    assert t.relative_spread == pytest.approx(2 / 3) and t.wide
    one = Timing(samples_s=(2.0,), calls_per_sample=1, device="cpu", clock="wall clock")
    assert (one.q1_s, one.q3_s, one.relative_spread, one.wide) == (2.0, 2.0, 0.0, False)


def test_a_series_keeps_each_median_with_its_spread_in_the_unit_plotted():
    fast = Timing(samples_s=(1e-3, 2e-3, 3e-3), calls_per_sample=1, device="cpu", clock="wall clock")
    slow = Timing(samples_s=(4e-3, 4e-3, 4e-3), calls_per_sample=1, device="cpu", clock="wall clock")
    ms = gpulab.Series(lambda s: s * 1e3)
    ms.add("a", fast)
    ms.add("a", slow)
    rate = gpulab.Series()
    rate.add("b", fast, lambda s: 64 / s)  # samples per second: the quartiles swap ends
    assert ms == {"a": [pytest.approx(2.0), pytest.approx(4.0)]}
    assert ms.spread == {"a": [[pytest.approx(1.5), pytest.approx(2.5)], [pytest.approx(4.0), pytest.approx(4.0)]]}
    low, high = rate.spread["b"][0]
    assert low == pytest.approx(64 / 2.5e-3) and high == pytest.approx(64 / 1.5e-3)
    result = timing.with_spread({"ms": ms, "rate": rate, "device": "cpu"})
    assert (
        type(result["ms"]) is dict and result["spread"]["ms"] == ms.spread and result["spread"]["rate"] == rate.spread
    )
    assert timing.with_spread({"ms": {"a": [1.0]}}) == {"ms": {"a": [1.0]}}  # nothing measured with a spread


def test_one_value_by_name_and_a_plain_list_keep_their_spreads_too():
    fast = Timing(samples_s=(1e-3, 2e-3, 3e-3), calls_per_sample=1, device="cpu", clock="wall clock")
    steady = Timing(samples_s=(4e-3, 4e-3, 4e-3), calls_per_sample=1, device="cpu", clock="wall clock")
    per_step = gpulab.Series(lambda s: s * 1e3)
    assert per_step.put("float32", fast) == pytest.approx(2.0)
    per_step.put("bfloat16", steady)
    pins = timing.Points()
    pins.add(steady)
    pins.add(fast, lambda s: s * 1e3)
    result = timing.with_spread({"ms": per_step, "pin": pins})
    assert type(result["pin"]) is list and result["pin"] == [pytest.approx(4e-3), pytest.approx(2.0)]
    assert result["ms"] == {"float32": pytest.approx(2.0), "bfloat16": pytest.approx(4.0)}
    assert timing.spread_of(result, "ms", "float32") == (pytest.approx(1.5), pytest.approx(2.5))
    assert timing.spread_of(result, "ms", "float32", 0) is None  # one value: no point 0 of a series
    assert timing.spread_of(result, "pin", None, 1) == (pytest.approx(1.5), pytest.approx(2.5))
    assert timing.spread_of(result, "pin", "a name", 1) is None and timing.spread_of(result, "pin", None) is None
    points = list(timing.measured_points(result))
    assert [(y, name, index) for y, name, index, _, _ in points] == [
        ("ms", "float32", None),
        ("ms", "bfloat16", None),
        ("pin", None, 0),
        ("pin", None, 1),
    ]
    assert timing.noise_line(result).startswith(
        "2 of the 4 points measured here within noise"
    )  # fast is wide: 1 ms of 2


def test_a_ratio_is_given_only_where_the_two_points_are_apart():
    result = {
        "ms": {"a": [1.0, 2.0], "b": [1.0, 1.02]},
        "step": {"x": 3.0, "y": 1.0},
        "spread": {
            "ms": {"a": [[0.9, 1.1], [1.9, 2.1]], "b": [[0.9, 1.1], [1.0, 1.05]]},
            "step": {"x": [2.9, 3.1], "y": [0.99, 1.01]},
        },
    }
    assert timing.ratio(result, "ms", ("a", -1), ("b", -1)) == pytest.approx(2.0 / 1.02)
    assert timing.ratio(result, "ms", ("a", 0), ("b", 0)) is None  # the same range: within noise
    assert timing.ratio(result, "ms", ("b", 1), ("b", 0)) is None  # 1.02 vs 1.0, their ranges overlapping
    assert timing.ratio(result, "step", ("x", None), ("y", None)) == pytest.approx(3.0)
    assert timing.ratio({"t": [1.0, 1.05]}, "t", (None, 1), (None, 0)) is None  # no spread: within 10%
    assert timing.ratio({"t": [1.0, 1.5]}, "t", (None, 1), (None, 0)) == pytest.approx(1.5)


def test_two_points_are_apart_only_beyond_their_spreads():
    assert timing.apart(1.0, (0.98, 1.02), 1.5, (1.48, 1.53))
    assert not timing.apart(1.0, (0.98, 1.02), 1.01, (1.0, 1.03))  # overlapping
    assert timing.apart(1.0, (0.8, 1.3), 2.0, (1.95, 2.05))  # one point is wide, and still far from the other
    assert not timing.apart(1.0, (0.8, 1.3), 1.25, (1.2, 1.3))  # a wide range reaching the other
    assert timing.apart(1.0, None, 1.2, None) and not timing.apart(1.0, None, 1.05, None)


def test_a_panel_says_how_many_points_are_within_noise():
    result = {"ms": {"a": [1.0, 2.0, 3.0]}, "spread": {"ms": {"a": [[0.99, 1.01], [1.0, 3.0], [2.9, 3.1]]}}}
    line = timing.noise_line(result)
    assert line.startswith("1 of the 3 points measured here within noise")
    result["spread"]["ms"]["a"][1] = [1.99, 2.01]
    assert timing.noise_line(result) == "" and timing.noise_line({"ms": {"a": [1.0]}}) == ""


def test_on_a_gpu_a_point_is_repeated_to_the_gpu_target_and_warmed_for_a_while(monkeypatch):
    # What time_fn does by default on a real GPU, shown on the CPU with the GPU test answered yes.
    monkeypatch.setattr(timing, "_real_accelerator", lambda device: True)
    monkeypatch.setattr(timing, "synchronize", lambda device: None)
    values = iter([1e-3] + [1e-3, 2e-3] * 5 + [1e-3] * 1000)
    clock = _fake_clock(monkeypatch, values)
    warm = []

    def call():  # a warm-up call of 1 ms on the fake clock
        warm.append(1)
        clock[0] += 1e-3

    result = time_fn(
        call, device="cpu", mode="wall", warmup=0, budget_s=0.01, min_samples=10, max_samples=10, min_sample_s=1e-3
    )
    assert result.num_samples > 10 and result.relative_spread <= timing.GPU_TARGET_SPREAD
    assert len(warm) == 20  # 20 ms of warm-up at 1 ms a call, with no warm-up calls asked for


def test_a_simulated_gpu_is_timed_as_the_cpu_it_is():
    import os
    import subprocess
    import sys

    script = "import torch, gpulab.timing as t; print(t._real_accelerator(torch.device('cuda')))"
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "GPULAB_SIMULATE": "t4"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_on_a_gpu_the_expected_time_counts_the_warm_up(monkeypatch):
    on_cpu = timing.expected_seconds(1e-5)
    monkeypatch.setattr(timing, "_real_accelerator", lambda device: True)
    assert timing.expected_seconds(1e-5) == pytest.approx(on_cpu - 2e-5 + timing.GPU_WARMUP_S)
