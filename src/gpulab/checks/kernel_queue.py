"""A device that runs work after the host has queued it, on a simulated clock.

A GPU does not run a kernel when Python calls it: the call puts the kernel in a queue and
returns, and the GPU works through the queue on its own. A stopwatch on the host therefore
reads the time to *queue* the work unless it waits for the device first. This module lets any
machine show that, and lets an exercise check a timer by what it measures::

    with SimulatedQueue("cuda") as gpu:
        matmul = gpu.kernel(2e-3)            # each call queues 2 ms of work
        seconds = my_timer(matmul, "cuda")   # a correct timer reports about 2 ms

Inside the ``with`` block time stands still except as the simulation moves it:

- the host's clocks (``time.perf_counter``, ``time.time``, ``time.monotonic`` and their ``_ns``
  forms, ``timeit.default_timer``) read the simulated host time;
- calling a kernel costs the host ``launch_s``; on ``"cuda"`` the kernel then runs on the device
  once everything queued before it has finished, while on ``"cpu"`` it runs at once, on the host;
- ``torch.cuda.synchronize``, ``torch.accelerator.synchronize`` and ``gpulab.synchronize`` move
  the host's clock to the moment the device's queue is empty; ``torch.cuda.Event`` records when
  the queue reaches it (``elapsed_time`` before the end event has happened raises, as CUDA does);
- on ``"cpu"`` the machine has no accelerator: ``torch.cuda`` and ``torch.accelerator`` say so,
  and their synchronize functions raise as they do on a machine without a GPU;
- each of these is replaced wherever code finds it (:func:`~.replace.everywhere`): names an answer
  took before the block (``from time import perf_counter``, ``from torch.cuda import synchronize``)
  in the module that enters the block, in a notebook's globals and in any loaded module read the
  simulation too.

Nothing real is timed or computed: the simulation is for what a timer does, not for numbers.
"""

from __future__ import annotations

import contextlib
import sys
import time
import timeit

import torch

from .device_presence import no_accelerator, no_gpu, presence_patches
from .replace import everywhere

__all__ = ["Kernel", "SimulatedQueue"]


class Kernel:
    """A function of no arguments; each call queues one kernel on a :class:`SimulatedQueue`.

    ``calls`` counts the calls. ``seconds_of(n)`` is how long the n-th call (from 1) runs.
    """

    def __init__(self, queue: SimulatedQueue, seconds_of):
        self.queue = queue
        self.seconds_of = seconds_of
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        self.queue._launch(self.seconds_of(self.calls))


class SimulatedQueue:
    """A simulated ``"cuda"`` GPU with a queue, or a ``"cpu"`` machine without one (see the module)."""

    def __init__(self, device: str | torch.device = "cuda", *, launch_s: float = 10e-6):
        self.device = torch.device(device)
        if self.device.type not in ("cuda", "cpu"):
            raise ValueError(f"SimulatedQueue simulates a cuda GPU or a cpu, not {self.device.type!r}")
        self.launch_s = launch_s
        self.host_s = 1000.0  # the host's clock, in seconds
        self.idle_from_s = self.host_s  # when the device will have finished all it was given
        self.launches = 0
        self.syncs = 0
        self._stack: contextlib.ExitStack | None = None

    # -- what code running inside the block sees

    def kernel(
        self,
        seconds: float,
        *,
        first_calls: int = 0,
        first_s: float | None = None,
        slow: dict[int, float] | None = None,
    ) -> Kernel:
        """A kernel that runs ``seconds`` per call on the device.

        The first ``first_calls`` calls take ``first_s`` instead (a warm-up: a first call that
        pays for setting things up), and a call whose number is a key of ``slow`` takes that
        many seconds (a hiccup, as when another program takes the device for a moment).
        """
        slow = dict(slow or {})

        def seconds_of(number: int) -> float:
            if number in slow:
                return slow[number]
            if number <= first_calls and first_s is not None:
                return first_s
            return seconds

        return Kernel(self, seconds_of)

    def synchronize(self, *args, **kwargs) -> None:
        """Wait, on the host, until the device has finished everything queued."""
        self.syncs += 1
        self.host_s = max(self.host_s, self.idle_from_s)

    # -- the simulation

    def _launch(self, seconds: float) -> None:
        self.launches += 1
        self.host_s += self.launch_s
        if self.device.type == "cpu":
            self.host_s += seconds
            self.idle_from_s = self.host_s
        else:
            self.idle_from_s = max(self.idle_from_s, self.host_s) + seconds

    def _clocks(self) -> dict:
        def seconds() -> float:
            return self.host_s

        def nanoseconds() -> int:
            return int(round(self.host_s * 1e9))

        epoch = 1.7e9  # time.time() reads like a date
        return {
            "perf_counter": seconds,
            "perf_counter_ns": nanoseconds,
            "monotonic": seconds,
            "monotonic_ns": nanoseconds,
            "time": lambda: epoch + self.host_s,
            "time_ns": lambda: int(round((epoch + self.host_s) * 1e9)),
        }

    def _device_patches(self) -> dict:
        queue = self

        class Event:
            def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
                self.enable_timing, self.at = enable_timing, None

            def record(self, stream=None) -> None:
                # Reached when everything queued before it has run.
                self.at = max(queue.idle_from_s, queue.host_s)

            def query(self) -> bool:
                return self.at is None or queue.host_s >= self.at

            def synchronize(self) -> None:
                if self.at is not None:
                    queue.host_s = max(queue.host_s, self.at)

            def wait(self, stream=None) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                if not (self.enable_timing and end.enable_timing):
                    raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
                if self.at is None or end.at is None:
                    raise RuntimeError("Both events must be recorded before calculating elapsed time.")
                if queue.host_s < end.at:
                    raise RuntimeError(
                        "CUDA error: device not ready (the end event has not happened yet: "
                        "synchronize before reading elapsed_time)"
                    )
                return (end.at - self.at) * 1e3

        class Stream:
            def synchronize(self) -> None:
                queue.synchronize()

            def record_event(self, event: Event | None = None) -> Event:
                event = event or Event()
                event.record(self)
                return event

            def wait_event(self, event: Event) -> None:
                pass

        @contextlib.contextmanager
        def on_device(device=None):
            yield

        gpu = self.device.type == "cuda"
        patches = presence_patches(gpu)
        patches[torch.cuda].update(
            {
                "synchronize": self.synchronize if gpu else no_gpu,
                "Event": Event if gpu else no_gpu,
                "current_stream": (lambda device=None: Stream()) if gpu else no_gpu,
                "device": on_device,
            }
        )
        if torch.accelerator in patches:
            patches[torch.accelerator]["synchronize"] = self.synchronize if gpu else no_accelerator
        return patches

    def __enter__(self) -> SimulatedQueue:
        namespace = sys._getframe(1).f_globals  # the module entering the block: names it took before
        clocks = self._clocks()
        replacements = {time: clocks, timeit: {"default_timer": clocks["perf_counter"]}, **self._device_patches()}
        stack = contextlib.ExitStack()
        for owner, functions in replacements.items():
            for name, replacement in functions.items():
                stack.enter_context(everywhere(owner, name, replacement, namespace, main=True, create=True))
        self._stack = stack
        return self

    def __exit__(self, *exc_info) -> None:
        stack, self._stack = self._stack, None
        stack.close()
