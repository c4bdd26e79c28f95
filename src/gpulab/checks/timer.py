"""Recording the calls an answer makes to ``gpulab.time_fn``, for checks of how a student times."""

from __future__ import annotations

import contextlib
import dataclasses

from .replace import everywhere

__all__ = ["TimedCall", "recorded_time_fn"]


@dataclasses.dataclass
class TimedCall:
    """One call to ``gpulab.time_fn``: the function it timed and the keywords it was given."""

    fn: object
    kwargs: dict


@contextlib.contextmanager
def recorded_time_fn(namespace: dict | None = None, *, run: bool = True):
    """Record every call to ``gpulab.time_fn`` made inside the block, however it was imported.

    Yields the list of :class:`TimedCall`. ``namespace`` (a check passes ``globals()``) is
    searched for names bound to ``time_fn`` by ``from gpulab import time_fn``. With
    ``run=False`` the timed function is called once instead of being timed, and a Timing with
    no real measurement is returned: for checks on a simulated GPU, where nothing can be timed.
    """
    import gpulab
    from gpulab import timing

    real = timing.time_fn
    gpulab.time_fn  # noqa: B018 -- resolve the lazy attribute now, so the patch below restores it
    calls: list[TimedCall] = []

    def spy(fn, **kwargs):
        calls.append(TimedCall(fn, kwargs))
        if run:
            return real(fn, **kwargs)
        fn()
        return timing.Timing(
            samples_s=(1e-3,),
            calls_per_sample=1,
            device=str(kwargs.get("device")),
            clock="not timed",
            flops=kwargs.get("flops"),
            bytes_moved=kwargs.get("bytes_moved"),
        )

    # Only the names bound to time_fn are swapped and put back: the check's other variables stay.
    with everywhere(timing, "time_fn", spy, namespace):
        yield calls
