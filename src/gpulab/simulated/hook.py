"""The start-up hook: ``GPULAB_SIMULATE=<machine>`` makes every Python of the environment simulate.

``python -m gpulab.simulated.hook --install`` writes ``gpulab-simulate.pth`` into the
environment's site-packages (``make`` does it for ``.venv``). Python runs its one line at every
start; without ``GPULAB_SIMULATE`` the line does nothing else. With it, a finder waits on
``sys.meta_path`` for ``torch._C``: when torch loads it, the simulated CUDA bindings are put on
it before ``torch.cuda`` is imported, and the rest follows when ``import torch`` returns. A
Python that never imports torch (pip, Jupyter's server) only imports this small module.

Children inherit the environment, so torchrun's ranks, DataLoader workers started with spawn,
the grader's kernels and any ``subprocess`` Python see the same machine.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import sysconfig

__all__ = ["install_pth", "start_from_environment", "when_torch_loads"]

PTH_NAME = "gpulab-simulate.pth"
PTH_LINE = (
    "import os; os.environ.get('GPULAB_SIMULATE') and "
    "__import__('gpulab.simulated.hook').simulated.hook.start_from_environment()\n"
)


_started = False


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds ``torch._C`` and ``torch`` as the other finders do, and runs the simulation's two halves."""

    def __init__(self, name: str):
        self.name = name

    def find_spec(self, fullname, path, target=None):
        if fullname not in ("torch", "torch._C"):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module
        after = self._after_c if fullname == "torch._C" else self._after_torch

        def exec_module(module):
            real_exec(module)
            after(module)

        spec.loader.exec_module = exec_module
        return spec

    def _after_c(self, module) -> None:
        from . import install

        torch = sys.modules["torch"]
        if not hasattr(torch, "_C"):
            torch._C = module  # the import system binds it on the package only once this returns
        install.start_runtime(self.name, torch)

    def _after_torch(self, module) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        from . import install

        if install.running() is not None:
            install.finish(module)


def start_from_environment() -> None:
    """``GPULAB_SIMULATE=<machine>``: run by the .pth line; a bad name is one line on stderr."""
    global _started
    from . import machines

    name = os.environ.get("GPULAB_SIMULATE", "").strip()
    if not name or _started:  # a venv's lib64 -> lib link makes site read the .pth twice
        return
    _started = True
    try:
        machines.parse(name)
    except ValueError as error:
        print(f"gpulab: {error}; not simulating", file=sys.stderr)
        return
    when_torch_loads(name)


def when_torch_loads(name: str) -> None:
    """Simulate ``name`` from the moment torch is imported (now, if it already is)."""
    if "torch" in sys.modules:
        from . import install

        install.start(name)
        return
    sys.meta_path.insert(0, _TorchFinder(name))


def install_pth(site_packages: str | None = None) -> str:
    """Write the start-up hook into ``site_packages`` (this environment's by default); its path."""
    folder = site_packages or sysconfig.get_paths()["purelib"]
    path = os.path.join(folder, PTH_NAME)
    with open(path, "w") as handle:
        handle.write(PTH_LINE)
    return path


if __name__ == "__main__":
    if sys.argv[1:] != ["--install"]:
        sys.exit("usage: python -m gpulab.simulated.hook --install")
    print(f"wrote {install_pth()}")
