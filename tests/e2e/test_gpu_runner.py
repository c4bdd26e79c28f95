"""The GPU runner and CI, in the parts a CPU machine can check.

`make test-gpu` and tools/gpu-runner/run.sh must refuse a machine without CUDA in one line;
prepare.py must ask for exactly the packages an offline GPU machine lacks, pinned as the suite
is tested; the workflows must call Makefile targets that exist; and a skip for want of CUDA or
Chromium must fail the run where the machine is required to have them.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from conftest import ROOT

RUNNER = ROOT / "tools" / "gpu-runner"
sys.path.insert(0, str(RUNNER))
import prepare  # noqa: E402

no_cuda_here = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.M))


def workflow_commands(name: str) -> list[str]:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    return [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]


# ---------------------------------------------------------------- CI and the workflows


def test_ci_installs_chromium_and_requires_the_browser_tests_then_runs_the_readme_command():
    script = (ROOT / ".ci" / "run").read_text()
    assert "apt-get install" in script and "chromium" in script
    assert "GPULAB_REQUIRE_BROWSER=1" in script
    assert script.strip().splitlines()[-1] == "make test"
    assert "make test " in (ROOT / "README.md").read_text()


def test_workflows_call_targets_the_makefile_has():
    targets = makefile_targets()
    assert {"test", "test-gpu", "lab"} <= targets
    assert workflow_commands("ci.yml") == ["bash .ci/run"]
    gpu = workflow_commands("gpu.yml")
    called = [word for command in gpu for word in re.findall(r"\bmake\s+([\w-]+)", command)]
    assert called == ["test-gpu"] and set(called) <= targets
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "gpu.yml").read_text())
    steps = workflow["jobs"]["test-gpu"]["steps"]
    bench_out = re.search(r"BENCH_OUT=(\S+)", " ".join(gpu)).group(1)
    uploads = [step["with"]["path"].rstrip("/") for step in steps if "upload-artifact" in step.get("uses", "")]
    assert uploads == [bench_out], "the artifact must be the folder make test-gpu writes the records to"
    assert "gpu" in workflow["jobs"]["test-gpu"]["runs-on"] and "self-hosted" in workflow["jobs"]["test-gpu"]["runs-on"]


# ---------------------------------------------------------------- refusing a machine without CUDA


@no_cuda_here
def test_make_test_gpu_refuses_a_machine_without_cuda_in_one_line():
    done = subprocess.run(["make", "--no-print-directory", "test-gpu", f"GPU_PYTHON={sys.executable}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "needs a CUDA GPU" in lines[0], done.stderr
    assert "passed" not in done.stdout  # nothing ran


@no_cuda_here
def test_run_sh_refuses_a_machine_without_cuda_and_says_why(tmp_path):
    done = subprocess.run(["bash", str(RUNNER / "run.sh"), str(tmp_path / "out")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHON=sys.executable), timeout=120)
    assert done.returncode == 2
    assert "needs a CUDA GPU" in done.stdout + done.stderr
    assert not (tmp_path / "out").exists()


def test_run_sh_without_wheels_says_to_prepare_them(tmp_path):
    # A copy of the runner with no wheels/ beside it.
    (tmp_path / "tools" / "gpu-runner").mkdir(parents=True)
    copy = tmp_path / "tools" / "gpu-runner" / "run.sh"
    copy.write_text((RUNNER / "run.sh").read_text())
    done = subprocess.run(["bash", str(copy), "--check", str(tmp_path / "out")], capture_output=True, text=True,
                          env=dict(os.environ, PYTHON=sys.executable), timeout=60)
    assert done.returncode == 2 and "prepare.py" in done.stdout + done.stderr


# ---------------------------------------------------------------- prepare.py


def constraint_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[prepare.normalized(name)] = version
    return pins


def test_prepare_asks_for_the_jupyter_stack_pinned_and_nothing_the_machine_has():
    wanted = prepare.requirements()
    names = {prepare.normalized(item.split("==")[0]) for item in wanted}
    assert {"nbval", "nbclient", "nbformat", "ipykernel", "ipywidgets"} <= names
    assert not names & prepare.on_the_machine(), "the machine's own packages (torch above all) must not be replaced"
    assert "torch" not in names and "numpy" not in names and "pytest" not in names
    pins = constraint_pins()
    for item in wanted:
        name = prepare.normalized(item.split("==")[0])
        if name in pins:
            assert item == f"{name}=={pins[name]}", f"{item}: constraints.txt pins {pins[name]}"


def test_prepare_asks_for_a_package_the_machine_lacks_even_if_it_is_usually_there(tmp_path):
    wanted = prepare.requirements(have={"torch", "numpy"})
    assert any(item.startswith("matplotlib==") for item in wanted) and any(item.startswith("pytest==") for item in wanted)
    assert not any(item.startswith(("torch", "numpy")) for item in wanted)


def test_prepare_downloads_wheels_only_for_the_machines_python(tmp_path):
    command = prepare.download_command(tmp_path, "3.12", ["nbval==0.11.0"])
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--only-binary=:all:" in command and command[command.index("--python-version") + 1] == "3.12"
    assert command[command.index("--dest") + 1] == str(tmp_path) and command[-1] == "nbval==0.11.0"
    platforms = [command[i + 1] for i, word in enumerate(command) if word == "--platform"]
    assert platforms and all(p.endswith("x86_64") for p in platforms)


def test_prune_removes_the_wheels_of_packages_the_machine_has(tmp_path):
    for name in ("attrs-25.4.0-py3-none-any.whl", "typing_extensions-4.15.0-py3-none-any.whl",
                 "nbval-0.11.0-py2.py3-none-any.whl", "jupyter_client-8.10.0-py3-none-any.whl"):
        (tmp_path / name).write_bytes(b"")
    removed = prepare.prune(tmp_path, {"attrs", "typing-extensions"})
    assert removed == ["attrs-25.4.0-py3-none-any.whl", "typing_extensions-4.15.0-py3-none-any.whl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["jupyter_client-8.10.0-py3-none-any.whl",
                                                         "nbval-0.11.0-py2.py3-none-any.whl"]


def test_the_wheels_folder_is_ignored_by_git():
    done = subprocess.run(["git", "check-ignore", "-q", "tools/gpu-runner/wheels/x.whl"], cwd=ROOT)
    assert done.returncode == 0


# ---------------------------------------------------------------- a required machine may not skip

SKIPPING = '''
import pytest

@pytest.mark.skipif(True, reason="needs a CUDA GPU; this machine has none")
def test_cuda():
    pass

@pytest.mark.skipif(True, reason="needs Chromium, JupyterLab and playwright: no Chromium")
def test_browser():
    pass

@pytest.mark.skipif(True, reason="needs 2 processes")
def test_other():
    pass
'''


@pytest.mark.parametrize("required, failing", [({}, set()), ({"GPULAB_REQUIRE_CUDA": "1"}, {"test_cuda"}),
                                               ({"GPULAB_REQUIRE_BROWSER": "1"}, {"test_browser"})])
def test_a_skip_for_want_of_a_required_machine_is_a_failure(tmp_path, required, failing):
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_REQUIRE_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-c", os.devnull,
                           "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, env={**env, **required}, timeout=120)
    # A skip decided at setup becomes an error of the setup, one at the call a failure: both fail the run.
    failed = set(re.findall(r"^(?:FAILED|ERROR) \S+::(\w+)", done.stdout, flags=re.M))
    assert failed == failing, done.stdout
    assert done.returncode == (1 if failing else 0), done.stdout
