"""The grader as a package: the names its old module exported still import from ``gpulab.grading`` (exercise
notebooks already handed out use some of them), each part is a module of its own name, and the grader
imports nothing of lesson 06's launcher."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import gpulab.grading

# What `gpulab.grading` exported as one module; check cells use patched, recorded_time_fn and TimedCall.
OLD_NAMES = [
    "CheckResult",
    "Report",
    "SubmissionError",
    "TimedCall",
    "assign",
    "grade",
    "grade_many",
    "kill_processes_mentioning",
    "lesson_in_name",
    "load_submission",
    "make_exercise",
    "patched",
    "recorded_time_fn",
    "solution_path",
    "solutions_folder",
    "submissions_in",
]


@pytest.mark.parametrize("name", OLD_NAMES)
def test_every_name_the_grading_module_exported_imports_from_gpulab_grading(name):
    namespace = {}
    exec(f"from gpulab.grading import {name}", namespace)
    assert namespace[name] is getattr(gpulab.grading, name)
    assert name in gpulab.grading.__all__


def test_check_cells_old_paths_give_gpulab_checks_helpers():
    import gpulab
    import gpulab.checks

    for name in ("patched", "recorded_time_fn", "TimedCall"):
        assert getattr(gpulab.grading, name) is getattr(gpulab.checks, name)
    assert gpulab.grading.recorded_time_fn is gpulab.checks.recorded_time_fn  # as lesson 01's checks call it


def test_recorded_time_fn_by_its_old_path_sees_every_way_of_calling_it_and_leaves_the_namespace_as_it_was():
    import gpulab
    from gpulab import timing

    namespace = {"time_fn": timing.time_fn, "other": 1}
    with gpulab.grading.recorded_time_fn(namespace) as calls:
        gpulab.time_fn(lambda: None, device="cpu", budget_s=0.01, flops=10)
        namespace["time_fn"](lambda: None, device="cpu", budget_s=0.01)
        timing.time_fn(lambda: None, device="cpu", budget_s=0.01)
        namespace["made_inside"] = True
    assert [call.kwargs.get("flops") for call in calls] == [10, None, None]
    assert namespace == {"time_fn": timing.time_fn, "other": 1, "made_inside": True}
    assert gpulab.time_fn is timing.time_fn


def test_recorded_time_fn_by_its_old_path_can_call_instead_of_timing():
    ran = []
    with gpulab.grading.recorded_time_fn(run=False) as calls:
        from gpulab import timing

        result = timing.time_fn(lambda: ran.append(1), device="cuda:0", bytes_moved=8)
    assert ran == [1] and len(calls) == 1
    assert result.clock == "not timed" and result.bytes_moved == 8 and result.device == "cuda:0"


def test_patched_by_its_old_path_reaches_every_name_an_answer_took_and_puts_them_back():
    import torch
    from torch import save as store

    from gpulab.grading import patched

    namespace = {"store": store, "save": torch.save, "other": len}
    calls = []
    with patched(torch, "save", lambda *args, **kwargs: calls.append(args[1]), namespace) as real:
        namespace["store"](1, "a")
        namespace["save"](1, "b")
        torch.save(1, "c")
        torch.serialization.save(1, "d")  # the same function, under its own module
        assert namespace["other"] is len
    assert calls == ["a", "b", "c", "d"]
    assert torch.save is real and torch.serialization.save is real
    assert namespace == {"store": real, "save": real, "other": len}


def test_patched_by_its_old_path_leaves_the_name_its_replacement_calls_the_original_by():
    import io

    import torch

    # A check script's own `real_save = torch.save`, called by its replacement: swapping it would recurse for ever.
    script = {"torch": torch, "written": []}
    exec("real_save = torch.save\ndef watched(obj, f):\n    written.append(f)\n    return real_save(obj, f)", script)
    with gpulab.grading.patched(torch, "save", script["watched"], script):
        torch.save(1, io.BytesIO())
    assert len(script["written"]) == 1 and script["real_save"] is torch.save


def test_each_part_is_a_module_and_its_docstring_names_it():
    # That each is named once in gpulab: tests/hygiene/test_layout.py, for the whole package.
    names = {path.stem for path in Path(gpulab.grading.__file__).parent.glob("*.py")} - {"__init__"}
    assert {"notebooks", "runner", "reports", "sandbox", "gradescope", "zygote", "kernel_entry"} <= names
    for name in names:
        importlib.import_module(f"gpulab.grading.{name}")  # a script run by path does nothing when imported
    for part in ("notebooks", "runner", "reports", "sandbox", "gradescope"):
        assert f":mod:`~gpulab.grading.{part}`" in gpulab.grading.__doc__, part
    for old in ("gpulab.sandbox", "gpulab.gradescope"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)


def test_the_grader_imports_nothing_of_lesson_06s_launcher():
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, gpulab.grading, gpulab.grading.gradescope; "
            "print(sorted(m for m in sys.modules if m.startswith('gpulab')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "gpulab._processes" in loaded and "gpulab.distributed" not in loaded, loaded
