"""What exercise check cells use to see what an answer did, however it was written.

- :func:`patched` (:mod:`.replace`): replace a function for the length of a block wherever an answer
  finds it — the one way every recorder here replaces torch's and gpulab's functions;
- :func:`recorded_time_fn` (:mod:`.timer`): the calls an answer makes to ``gpulab.time_fn``.
"""

from __future__ import annotations

import importlib

__all__ = ["TimedCall", "patched", "recorded_time_fn"]

_LAZY = {"TimedCall": "timer", "recorded_time_fn": "timer", "patched": "replace"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value
