import subprocess
import sys

import torch

import gpulab
from gpulab import cli


def test_info_prints_the_versions_and_the_device_table(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"gpulab {gpulab.__version__} · torch {torch.__version__} · ")
    assert out.splitlines()[1].split()[:2] == ["device", "name"]


def test_info_runs_as_a_command():
    done = subprocess.run([sys.executable, "-m", "gpulab", "info"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "cpu" in done.stdout


def test_import_gpulab_loads_nothing_heavy():
    code = (
        "import sys, gpulab; "
        "print(sorted(m for m in ('matplotlib', 'ipywidgets', 'IPython', 'torch') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_lazy_modules_and_names_load_on_first_use():
    import gpulab
    from gpulab import devices, timing

    assert gpulab.widgets.Panel and gpulab.quiz.Quiz and gpulab.plots.new_figure
    assert gpulab.try_gpu is devices.try_gpu and gpulab.time_fn is timing.time_fn
    assert {"widgets", "try_all_gpus", "Timing"} <= set(dir(gpulab))
    try:
        gpulab.no_such_name  # noqa: B018 -- the lookup is what is tested
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("expected AttributeError")
