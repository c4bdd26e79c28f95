"""gpulab.checks.SimulatedQueue: kernels on a simulated clock, for checks of timers."""

import time
import timeit

import pytest
import torch

import gpulab
from gpulab.checks import SimulatedQueue


def stopwatch(work, wait=None, wait_first=False):
    if wait_first and wait:
        wait()
    start = time.perf_counter()
    work()
    if wait:
        wait()
    return time.perf_counter() - start


def test_a_stopwatch_without_a_sync_reads_the_launch_and_with_one_the_work():
    with SimulatedQueue("cuda", launch_s=10e-6) as gpu:
        matmul = gpu.kernel(2e-3)
        assert stopwatch(matmul) == pytest.approx(10e-6)
        # The first kernel is still running: a sync after the second waits for both.
        assert stopwatch(matmul, torch.cuda.synchronize) == pytest.approx(10e-6 + 2e-3 + 2e-3 - 10e-6)
        assert stopwatch(matmul, torch.cuda.synchronize, wait_first=True) == pytest.approx(2e-3 + 10e-6)
        assert matmul.calls == 3 and gpu.launches == 3 and gpu.syncs == 3


def test_every_way_of_waiting_for_the_device_waits():
    # Looked up inside the block, as code in a check would.
    for wait in (
        lambda: torch.cuda.synchronize(),
        lambda: torch.accelerator.synchronize(),
        lambda: gpulab.synchronize("cuda"),
        lambda: torch.cuda.current_stream().synchronize(),
    ):
        with SimulatedQueue("cuda") as gpu:
            work = gpu.kernel(1e-3)
            assert stopwatch(work, wait) == pytest.approx(1e-3 + 10e-6)


def test_every_host_clock_is_simulated_and_given_back():
    real = (time.perf_counter, time.time, time.monotonic, time.perf_counter_ns, timeit.default_timer)
    with SimulatedQueue("cuda") as gpu:
        work = gpu.kernel(5e-3)
        readings = [
            time.perf_counter(),
            time.time(),
            time.monotonic(),
            time.perf_counter_ns() / 1e9,
            time.time_ns() / 1e9,
            time.monotonic_ns() / 1e9,
            timeit.default_timer(),
        ]
        work()
        torch.cuda.synchronize()
        later = [
            time.perf_counter(),
            time.time(),
            time.monotonic(),
            time.perf_counter_ns() / 1e9,
            time.time_ns() / 1e9,
            time.monotonic_ns() / 1e9,
            timeit.default_timer(),
        ]
    assert all(b - a == pytest.approx(5e-3 + 10e-6, abs=1e-6) for a, b in zip(readings, later))
    assert (time.perf_counter, time.time, time.monotonic, time.perf_counter_ns, timeit.default_timer) == real


def test_events_time_the_device_and_refuse_to_answer_before_the_end_has_happened():
    with SimulatedQueue("cuda") as gpu:
        work = gpu.kernel(3e-3)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        with pytest.raises(RuntimeError, match="not ready"):
            start.elapsed_time(end)
        assert not end.query()
        end.synchronize()
        assert end.query() and start.elapsed_time(end) == pytest.approx(3.01)  # milliseconds
        with pytest.raises(RuntimeError, match="enable_timing"):
            torch.cuda.Event().elapsed_time(end)


def test_gpulab_time_fn_skips_the_warm_up_and_waits_for_the_work():
    with SimulatedQueue("cuda") as gpu:
        work = gpu.kernel(1e-3, first_calls=2, first_s=0.2)
        result = gpulab.time_fn(work, device="cuda", warmup=2, min_samples=5, max_samples=5)
    assert result.clock == "cuda events"
    assert result.median_s == pytest.approx(1e-3, rel=0.02)
    assert max(result.samples_s) < 2e-3


def test_a_hiccup_moves_the_mean_but_not_the_median():
    samples = []
    with SimulatedQueue("cuda") as gpu:
        work = gpu.kernel(1e-3, slow={3: 0.05})
        for _ in range(5):
            samples.append(stopwatch(work, torch.cuda.synchronize, wait_first=True))
    assert sorted(samples)[2] == pytest.approx(1.01e-3) and sum(samples) / 5 > 10e-3


def test_the_cpu_runs_its_work_at_once_and_has_no_gpu_to_wait_for():
    with SimulatedQueue("cpu") as machine:
        work = machine.kernel(1e-3)
        assert stopwatch(work) == pytest.approx(1e-3 + 10e-6)
        assert not torch.cuda.is_available() and not torch.accelerator.is_available()
        assert gpulab.best_device() == torch.device("cpu")
        gpulab.synchronize("cpu")  # nothing to wait for, and no error
        for wait in (
            lambda: torch.cuda.synchronize(),
            lambda: torch.accelerator.synchronize(),
            lambda: torch.cuda.Event(),
        ):
            with pytest.raises(RuntimeError):
                wait()


def test_only_cuda_and_cpu_are_simulated():
    with pytest.raises(ValueError, match="mps"):
        SimulatedQueue("mps")


def test_names_an_answer_took_before_the_block_read_the_simulation_and_are_given_back():
    # A notebook's answer cell: its own names for the clock and the wait, taken before the check cell ran.
    answer = {}
    exec(
        "from time import perf_counter as clock\nfrom torch.cuda import synchronize as wait\n"
        "def timed(work):\n    wait()\n    start = clock()\n    work()\n    wait()\n    return clock() - start",
        answer,
    )
    exec(
        "from gpulab.checks import SimulatedQueue\n"
        "with SimulatedQueue('cuda') as gpu:\n    seconds = timed(gpu.kernel(2e-3))",
        answer,
    )
    assert answer["seconds"] == pytest.approx(2e-3 + 10e-6) and answer["gpu"].syncs == 2
    assert answer["clock"] is time.perf_counter and answer["wait"] is torch.cuda.synchronize


def test_a_queue_entered_through_an_exit_stack_still_reaches_the_notebooks_names(monkeypatch):
    import contextlib
    import sys
    import types

    notebook = types.ModuleType("__main__")
    exec("from time import perf_counter as clock", vars(notebook))
    monkeypatch.setitem(sys.modules, "__main__", notebook)
    with contextlib.ExitStack() as stack:
        gpu = stack.enter_context(SimulatedQueue("cuda"))
        start = notebook.clock()
        gpu.kernel(1e-3)()
        assert notebook.clock() - start == pytest.approx(10e-6)
    assert notebook.clock is time.perf_counter
