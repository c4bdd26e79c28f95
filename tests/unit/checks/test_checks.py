"""The names check cells import: gpulab.checks exports every recorder, and the paths exercise notebooks already
handed out import them by (gpulab.simulated, gpulab.grading) give the same objects."""

import importlib

import pytest

import gpulab.checks

OLD_PATHS = [
    ("gpulab.simulated", "SimulatedGPU", "TransferRecorder"),
    ("gpulab.simulated", "SimulatedMemory", "SimulatedMemory"),
    ("gpulab.simulated", "SimulatedQueue", "SimulatedQueue"),
    ("gpulab.simulated", "FACTORY_OPS", "FACTORY_OPS"),
    ("gpulab.simulated", "aten_ops", "aten_ops"),
    ("gpulab.simulated", "Copy", "Copy"),
    ("gpulab.simulated", "Read", "Read"),
    ("gpulab.grading", "patched", "patched"),
    ("gpulab.grading", "recorded_time_fn", "recorded_time_fn"),
    ("gpulab.grading", "TimedCall", "TimedCall"),
]


@pytest.mark.parametrize("module, old, new", OLD_PATHS)
def test_an_old_import_path_gives_the_object_of_gpulab_checks(module, old, new):
    namespace = {}
    exec(f"from {module} import {old}", namespace)
    assert namespace[old] is getattr(gpulab.checks, new)


def test_gpulab_checks_exports_each_name_it_lists_and_its_docstring_names_each_part():
    for name in gpulab.checks.__all__:
        assert getattr(gpulab.checks, name) is not None
        assert name in gpulab.checks.__doc__, f"gpulab.checks' docstring does not name {name}"
    for module in set(gpulab.checks._LAZY.values()):
        assert f":mod:`.{module}`" in gpulab.checks.__doc__, module
    assert not hasattr(gpulab.checks, "SimulatedGPU")  # only its new name here


def test_every_module_of_gpulab_checks_imports():
    # That no module shares its name with another of gpulab: tests/hygiene/test_layout.py, for the whole package.
    import pathlib

    names = {path.stem for path in pathlib.Path(gpulab.checks.__file__).parent.glob("*.py")} - {"__init__"}
    assert names
    for name in names:
        importlib.import_module(f"gpulab.checks.{name}")
