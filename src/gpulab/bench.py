"""``gpulab bench``: run the lessons' experiments headless and record what they measured.

Each experiment panel of a lesson has the name its figure was registered under
(``Panel(..., plot=gpulab.figures.bandwidth)`` is ``"02_bandwidth"``, see :func:`gpulab.figures.panel`).
The bench executes the lesson notebook's code cells in order, in an IPython shell of its own, as a
reader's kernel would: every panel runs once with its default settings when its cell displays it.
After each cell it looks for panels among the shell's variables, and for each named panel that ran it writes

- ``NAME.json``: a record in :mod:`gpulab.reference`'s format (the device, torch's version,
  the date, the command, the settings and the panel's result), and
- ``NAME.png``: the panel's plot.

On a simulated machine (``GPULAB_SIMULATE``) it runs the panels and draws their plots, and writes
no record: what a simulated GPU measures is this CPU's speed.

The experiment code is therefore the lesson's own, never a second copy. Records made on a
GPU and copied into ``src/gpulab/reference_results/`` ship with the package and are shown to
readers beside their own results.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["BenchError", "Recorded", "find_lessons", "record_of", "record_panels", "run_lesson"]


class BenchError(Exception):
    """A lesson could not be run to the end; the message says which cell failed and why."""


@dataclasses.dataclass
class Recorded:
    """What the bench wrote for one panel."""

    name: str
    lesson: str
    json_path: Path | None  # None on a simulated machine: no record
    png_path: Path | None
    elapsed_s: float
    summary: str
    panel: Any = dataclasses.field(default=None, repr=False)  # the Panel itself, for a caller that redraws it


def find_lessons(root: Path, selected: Iterable[str] = ()) -> list[Path]:
    """The lesson notebooks under ``root/notebooks``, or those whose number or name is in ``selected``."""
    folder = Path(root) / "notebooks"
    if not folder.is_dir():
        raise BenchError(
            f"no notebooks/ folder in {Path(root).resolve()}: run gpulab bench from the course checkout, or pass --root"
        )
    lessons = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    selected = list(selected)
    if not selected:
        return lessons
    chosen = [p for p in lessons if p.stem in selected or p.stem[:2] in selected]
    unknown = [s for s in selected if not any(p.stem == s or p.stem[:2] == s for p in lessons)]
    if unknown:
        names = ", ".join(p.stem for p in lessons) or "none"
        raise BenchError(f"no lesson {', '.join(unknown)} (there are: {names})")
    return chosen


def _jsonable(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:  # numpy and torch scalars
        import numbers

        if isinstance(value, numbers.Number):
            return value.item() if hasattr(value, "item") else float(value)
        if hasattr(value, "item") and getattr(value, "numel", lambda: 0)() == 1:
            return value.item()
    except (TypeError, ValueError):
        pass
    raise BenchError(
        f"{where} holds a {type(value).__name__}, which a JSON record cannot: "
        "return plain numbers, strings, lists and dicts from the experiment"
    )


def record_of(panel, lesson: str, command: str) -> dict[str, Any]:
    """The JSON record of a panel's last run (see :func:`gpulab.reference.load`).

    Raises :class:`BenchError` on a simulated machine: its timings are the CPU's, never a GPU's record.
    """
    import torch

    from . import __version__, devices, reference, simulated

    if simulated.is_simulating():
        raise BenchError(
            f"{panel.name}: this machine is simulated (GPULAB_SIMULATE): its results are not a GPU's, "
            "and no reference record is made of them"
        )

    infos = devices.describe()
    best = str(devices.best_device())
    device = next((info for info in infos if info.device == best), infos[-1])
    record = {
        "name": panel.name,
        "lesson": lesson,
        "device": dataclasses.asdict(device),
        "devices": [dataclasses.asdict(info) for info in infos],
        "torch": torch.__version__,
        "gpulab": __version__,
        "recorded": datetime.date.today().isoformat(),
        "command": command,
        "settings": _jsonable(panel.values, "settings"),
        "elapsed_s": panel.elapsed_s,
        "experiment_s": panel.experiment_s,
        # What the panel predicted the experiment would take (its estimate_s), to compare with experiment_s.
        "estimated_s": panel.estimate_s(**panel.values) if panel.estimate_s is not None else None,
        "result": _jsonable(panel.result, f"{panel.name}'s result"),
    }
    # The points a reader cannot tell from noise, by the spreads the panel measured (see gpulab.reference).
    mark = reference.noise_mark(record)
    if mark is not None:
        record["noisy"] = mark
    return record


def _code_cells(path: Path) -> list[str]:
    from . import course

    return [course.cell_source(cell) for cell in course.read_notebook(path)["cells"] if cell["cell_type"] == "code"]


_SHELL = None


def _own_shell(InteractiveShell):
    # The bench resets its shell's namespace between lessons, so it must never borrow the shell
    # of a running Jupyter kernel: that would wipe the reader's variables.
    global _SHELL
    if InteractiveShell.initialized() and InteractiveShell.instance() is not _SHELL:
        raise BenchError(
            "the bench runs lessons in an IPython shell of its own and cannot run inside "
            "one that is already running: use `gpulab bench` in a terminal, or `!gpulab bench …` in a cell"
        )
    if _SHELL is None:
        _SHELL = InteractiveShell.instance()
    return _SHELL


def run_lesson(
    path: Path,
    out: Path,
    *,
    command: str = "gpulab bench",
    progress: Callable[[int, int, str], None] | None = None,
) -> list[Recorded]:
    """Run one lesson notebook's code cells and record each named panel into ``out``.

    ``progress(done, total, text)`` is called after every cell. Raises :class:`BenchError`
    when a cell fails, when a panel's run fails, or when two panels share a name.
    """
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from . import distributed
    from .widgets import _release_memory

    path, out = Path(path), Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cells = _code_cells(path)
    shell = _own_shell(InteractiveShell)
    shell.reset(new_session=False)
    recorded: list[Recorded] = []
    seen: set[int] = set()
    here = os.getcwd()
    try:
        with tempfile.TemporaryDirectory(prefix="gpulab-bench-") as scratch:
            os.chdir(scratch)  # files a lesson writes land here, not in the checkout
            for number, source in enumerate(cells, start=1):
                with capture_output() as captured:
                    result = shell.run_cell(source, store_history=False)
                if not result.success:
                    error = result.error_in_exec or result.error_before_exec
                    detail = f"{type(error).__name__}: {error}" if error is not None else "it failed"
                    tail = captured.stdout[-2000:].strip()
                    raise BenchError(f"{path.name}, code cell {number}: {detail}" + (f"\n{tail}" if tail else ""))
                recorded += record_panels(shell.user_ns, path.stem, out, command=command, seen=seen, recorded=recorded)
                if progress is not None:
                    progress(number, len(cells), path.stem)
    finally:
        os.chdir(here)
        distributed.remove_scratch_folder()  # the scripts a lesson wrote (lesson 06) go with it
        if "torch._dynamo" in sys.modules:
            # torch.compile keeps entries in the compiled functions' globals, the lesson's namespace:
            # drop its caches while that namespace still exists, or their clean-up fails noisily later.
            sys.modules["torch._dynamo"].reset()
        shell.reset(new_session=False)
        _release_memory()
    return recorded


def record_panels(
    namespace: dict,
    lesson: str,
    out: Path,
    *,
    command: str = "gpulab bench",
    seen: set[int] | None = None,
    recorded: list[Recorded] = (),
) -> list[Recorded]:
    """Record every named panel in ``namespace`` that has run and is not in ``seen`` (ids, updated).

    :func:`run_lesson` calls it after each cell; a kernel that has run a lesson calls it once
    with its own namespace (``get_ipython().user_ns``). Raises :class:`BenchError` for a panel
    whose run failed, or a name already in ``recorded`` or used twice.
    """
    from . import plots
    from .widgets import Panel

    seen = set() if seen is None else seen
    new: list[Recorded] = []
    for value in list(namespace.values()):
        if not isinstance(value, Panel) or id(value) in seen or value.runs == 0:
            continue
        seen.add(id(value))
        if value.name is None:
            continue
        if value.error is not None:
            raise BenchError(f"{lesson}: panel {value.name!r} failed: {type(value.error).__name__}: {value.error}")
        if any(r.name == value.name for r in [*recorded, *new]):
            raise BenchError(f"{lesson}: two panels are named {value.name!r}")
        new.append(_write(value, lesson, Path(out), command, plots))
    return new


def _write(panel, lesson: str, out: Path, command: str, plots) -> Recorded:
    from . import simulated

    json_path = None
    if not simulated.is_simulating():  # a simulated machine's panels draw their figures, and record nothing
        record = record_of(panel, lesson, command)
        json_path = out / f"{panel.name}.json"
        json_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    png_path = None
    if panel.plot is not None:
        figure = plots.new_figure(panel.figsize)
        panel.plot(panel.result, figure)
        png_path = plots.save(figure, out / f"{panel.name}.png")
    return Recorded(panel.name, lesson, json_path, png_path, panel.elapsed_s or 0.0, panel.summary_line, panel)
