"""Replacing a function for a while wherever code will find it: the one way checks and their recorders do it."""

from __future__ import annotations

import contextlib
import sys
import types


def _global_names(function) -> set[str]:
    """The global names ``function`` (and the functions defined in it) look up."""
    names, codes = set(), [getattr(function, "__code__", None)]
    while codes:
        code = codes.pop()
        if code is not None:
            names.update(code.co_names)
            codes.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return names


@contextlib.contextmanager
def everywhere(
    owner, name: str, replacement, namespace: dict | None = None, *, main: bool = False, create: bool = False
):
    """``owner.name`` is ``replacement`` inside the block, and so is every other place code takes it from:
    each loaded module that holds the same object under ``name`` (``torch.serialization.save`` is
    ``torch.save``), and every name bound to it in ``namespace`` — and, with ``main``, in ``__main__``
    (a notebook's globals: ``from torch import save as store``). A name the replacement itself looks
    up keeps the original (``real_save = torch.save`` called by the replacement). Only the modules' own
    dicts are read, so no lazy attribute runs. Everything is put back after. Yields the original.

    An ``owner`` without ``name`` raises AttributeError; with ``create`` it has ``replacement`` under that
    name for the block instead (a function this torch lacks, simulated as a newer one has it), loses
    it after, and None is yielded.
    """
    own_dict = vars(owner)
    if create and not hasattr(owner, name):
        setattr(owner, name, replacement)
        try:
            yield None
        finally:
            if name in own_dict:
                delattr(owner, name)
        return
    original = getattr(owner, name)
    owned = name in own_dict
    holders = [
        vars(module)
        for module in list(sys.modules.values())
        if isinstance(module, types.ModuleType) and vars(module) is not own_dict
    ]
    same_name = [holder for holder in holders if holder.get(name) is original]
    candidates = [namespace, vars(sys.modules["__main__"]) if main and "__main__" in sys.modules else None]
    spaces = {id(space): space for space in candidates if space is not None}
    used = _global_names(replacement)
    aliases = [
        (space, key)
        for space in spaces.values()
        for key, value in list(space.items())
        if value is original and key not in used and not (space is own_dict and key == name)
    ]
    setattr(owner, name, replacement)
    for holder in same_name:
        holder[name] = replacement
    for space, key in aliases:
        space[key] = replacement
    try:
        yield original
    finally:
        if owned:
            setattr(owner, name, original)
        else:
            delattr(owner, name)  # it was inherited: the class's base has it again
        for holder in same_name:
            if holder.get(name) is replacement:
                holder[name] = original
        for space, key in aliases:
            if space.get(key) is replacement:
                space[key] = original


def patched(owner, name: str, replacement, namespace: dict | None = None):
    """Replace ``owner.name`` by ``replacement`` inside the block, wherever an answer finds it.

    For a check that watches or fakes what an answer calls. An answer may have taken the name
    before the check ran — ``from torch import save``, ``from torch import save as store``,
    ``save = torch.save`` — so besides ``owner``, every loaded module that holds the same object
    under ``name`` (``torch.serialization.save`` is ``torch.save``) and every name bound to it in
    ``namespace`` (a check passes ``globals()``) are swapped too, and put back after — except the names
    the replacement itself calls the original by. Yields the original.
    """
    return everywhere(owner, name, replacement, namespace)
