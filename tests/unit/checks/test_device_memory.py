"""gpulab.checks.SimulatedMemory: a simulated device's memory counters, for checks of memory trackers."""

import pytest
import torch

from gpulab.checks import SimulatedMemory

MiB, GiB = 2**20, 2**30


def test_simulated_memory_counts_blocks_and_runs_out_like_cuda():
    real_available = torch.cuda.is_available()
    with SimulatedMemory("cuda", total=2**30) as gpu:
        assert torch.cuda.is_available() and torch.accelerator.is_available()
        weights = gpu.allocate(300 * MiB)
        torch.cuda.reset_peak_memory_stats()
        spike = gpu.allocate(200 * MiB)
        spike.free()
        spike.free()  # freeing twice frees once
        assert torch.cuda.memory_allocated() == torch.accelerator.memory_allocated() == 300 * MiB
        assert torch.cuda.max_memory_allocated("cuda:0") == 500 * MiB
        assert torch.cuda.mem_get_info() == (2**30 - 300 * MiB, 2**30)
        with pytest.raises(torch.OutOfMemoryError, match="CUDA out of memory. Tried to allocate 1024.00 MiB"):
            gpu.allocate(2**30)
        assert gpu.allocated == 300 * MiB and gpu.failures == 1
        del weights
        assert torch.cuda.memory_allocated() == 0
    assert torch.cuda.is_available() == real_available


def test_a_simulated_machine_without_a_gpu_refuses_like_one():
    with SimulatedMemory("cpu"):
        assert not torch.cuda.is_available()
        assert torch.accelerator.current_accelerator() is None
        for query in (torch.cuda.memory_allocated, torch.cuda.max_memory_allocated, torch.accelerator.memory_allocated):
            with pytest.raises(RuntimeError):
                query()
    with pytest.raises(ValueError):
        SimulatedMemory("mps")


def test_simulated_memory_with_a_cache_tells_allocated_from_reserved():
    """SimulatedMemory(cache=True) goes through the caching allocator's model (gpulab.simulated.allocator):
    torch.cuda.memory_allocated falls when a block is freed, memory_reserved keeps the segment (CCA free_block
    caches it) until empty_cache releases it."""
    with SimulatedMemory("cuda", total=GiB, cache=True) as memory:
        weights = memory.allocate(300 * MiB)
        spike = memory.allocate(200 * MiB)
        assert (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()) == (500 * MiB, 500 * MiB)
        del spike
        assert (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()) == (300 * MiB, 500 * MiB)
        assert torch.cuda.mem_get_info() == (GiB - 500 * MiB, GiB) and memory.reserved == 500 * MiB
        torch.cuda.reset_peak_memory_stats()
        assert (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()) == (300 * MiB, 500 * MiB)
        small = memory.allocate(100 * MiB)  # from the cached segment: nothing new reserved
        assert (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()) == (400 * MiB, 500 * MiB)
        assert torch.cuda.memory_stats()["allocated_bytes.all.peak"] == 400 * MiB
        assert torch.accelerator.memory_allocated() == 400 * MiB
        del small
        torch.cuda.empty_cache()
        assert (torch.cuda.memory_allocated(), torch.cuda.memory_reserved()) == (300 * MiB, 300 * MiB)
        tiny = memory.allocate(1000)
        assert tiny.nbytes == 1000 and memory.allocated == 300 * MiB + 1024  # rounded to 512 bytes
        del tiny
        with pytest.raises(torch.OutOfMemoryError, match="Tried to allocate 1024.00 MiB"):
            memory.allocate(GiB)
        assert memory.failures == 1 and memory.allocated == 300 * MiB
        del weights
    assert SimulatedMemory("cuda").reserved == 0


def test_simulated_memory_answers_names_taken_before_it_started():
    """A tracker written `from torch.cuda import memory_allocated` reads the simulated counters too."""
    from torch.cuda import max_memory_allocated, memory_allocated

    with SimulatedMemory("cuda", cache=True) as memory:
        block = memory.allocate(3 * MiB)
        assert memory_allocated() == max_memory_allocated() == 3 * MiB
        del block
        assert memory_allocated() == 0 and torch.cuda.memory_reserved() == 20 * MiB
    assert torch.cuda.memory_allocated is memory_allocated


def test_a_tracker_in_a_notebook_reads_the_simulated_machine_by_the_names_it_took(monkeypatch):
    import contextlib
    import sys
    import types

    notebook = types.ModuleType("__main__")
    # Functions that ask the device itself, not another function the simulation replaces.
    exec(
        "from torch.cuda import is_available as has_gpu\nfrom torch.cuda import mem_get_info as free_and_total",
        vars(notebook),
    )
    monkeypatch.setitem(sys.modules, "__main__", notebook)
    with contextlib.ExitStack() as stack:  # entered from elsewhere than the notebook's own code
        gpu = stack.enter_context(SimulatedMemory("cuda", total=GiB))
        block = gpu.allocate(5 * MiB)
        assert notebook.has_gpu() and notebook.free_and_total() == (GiB - 5 * MiB, GiB)
        del block
    assert notebook.has_gpu is torch.cuda.is_available and notebook.free_and_total is torch.cuda.mem_get_info
