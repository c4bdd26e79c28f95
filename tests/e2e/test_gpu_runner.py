"""The GPU runner and CI, in the parts a CPU machine can check.

The GPU run comes in parts short enough for a machine lent for minutes (tools/gpu-runner/parts.py),
most valuable first; each part must refuse a machine without CUDA in one line, as `make test-gpu` and
run.sh must, and unknown parts must be refused before anything runs. A part cut off at its limit must
stop everything it started and say so in its result.txt, with what had finished. prepare.py must ask
for exactly the packages an offline GPU machine lacks, pinned as the suite is tested; the workflows
must call Makefile targets that exist; and a skip for want of CUDA or Chromium must fail the run where
the machine is required to have them.
"""

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from conftest import ROOT

RUNNER = ROOT / "tools" / "gpu-runner"
sys.path.insert(0, str(RUNNER))
import parts  # noqa: E402
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


# ---------------------------------------------------------------- the parts, in order

PARTS = parts.build_parts()


def test_the_parts_run_most_valuable_first_records_then_cuda_tests_and_solutions_then_answers():
    names = list(PARTS)
    assert names[:3] == ["records", "cuda-tests", "solutions"]
    assert names[3:] == [f"answers-{stem[:2]}" for stem in parts.lessons()] and len(names) > 3
    assert parts.expand(["all"], PARTS) == names
    assert parts.expand(["answers"], PARTS) == names[3:]
    assert parts.expand(["solutions", "records", "solutions"], PARTS) == ["solutions", "records"]
    # Within the records part, the records come first: the bench's before the lessons under nbval.
    steps = [step.name for step in PARTS["records"].steps(Path("/out/records"))]
    assert steps.index("probe") < steps.index("lessons") and steps.index("bench") < steps.index("lessons")


def pytest_paths(part: parts.Part) -> list[str]:
    """The paths the part's pytest steps run."""
    return [
        word
        for step in part.steps(Path("/out"))
        if "pytest" in step.command
        for word in step.command[step.command.index("pytest") :]
        if (ROOT / word).exists()
    ]


def test_the_parts_run_every_lesson_solution_cuda_test_and_answer():
    assert pytest_paths(PARTS["records"]) == ["notebooks"]
    assert pytest_paths(PARTS["solutions"]) == ["solutions"]
    assert pytest_paths(PARTS["cuda-tests"]) == ["tests/unit"]
    for name in ("records", "solutions", "cuda-tests"):
        assert all(
            step.env.get("GPULAB_REQUIRE_CUDA") == "1"
            for step in PARTS[name].steps(Path("/out"))
            if "pytest" in step.command
        ), name
    # Every CUDA test (marked @requires_cuda, tests/conftest.py) lives where the cuda-tests part runs.
    marked = {
        path.relative_to(ROOT)
        for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(r"^@requires_cuda\b", path.read_text(), flags=re.M)
    }
    assert marked and all(path.parts[:2] == ("tests", "unit") for path in marked), marked
    # The answers parts grade every lesson once: each its own -k.
    selected = []
    for name in parts.expand(["answers"], PARTS):
        (step,) = PARTS[name].steps(Path("/out"))
        assert pytest_paths(PARTS[name]) == ["tests/e2e/test_answers.py"]
        selected.append(step.command[step.command.index("-k") + 1])
    assert selected == sorted(path.stem for path in (ROOT / "solutions").glob("*.ipynb"))


def test_the_bench_writes_into_the_records_part_or_where_make_test_gpu_says(tmp_path):
    (bench,) = [step for step in PARTS["records"].steps(tmp_path / "records") if step.name == "bench"]
    assert bench.command[-3:] == ["gpulab", "bench", str(tmp_path / "records" / "bench-results")]
    # make test-gpu BENCH_OUT=bench-results (as .github/workflows/gpu.yml runs it): its records go there.
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho True\n")  # a Python whose torch finds a GPU, for make's check alone
    fake.chmod(0o755)
    for extra, bench_out in (([], None), (["BENCH_OUT=bench-results", "PART=records"], ROOT / "bench-results")):
        done = subprocess.run(
            ["make", "--no-print-directory", "-n", "test-gpu", f"GPU_PYTHON={fake}", *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        (command,) = [shlex.split(line) for line in done.stdout.splitlines() if "parts.py" in line]
        assert command[:2] == [str(fake), "tools/gpu-runner/parts.py"]
        args = parts.build_parser().parse_args(command[2:])
        assert args.parts == (["records"] if bench_out else ["all"]) and args.limit == parts.LIMIT_S
        assert (ROOT / args.bench_out if args.bench_out else None) == bench_out


def test_run_sh_help_lists_the_parts_in_order_with_how_long_each_takes():
    done = subprocess.run(
        ["bash", str(RUNNER / "run.sh"), "--help"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHON=sys.executable),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    listed = re.findall(r"^  ([a-z][\w-]+) ", done.stdout.split("the parts, in the order")[1], flags=re.M)
    assert listed == [*PARTS, "answers"], done.stdout
    for part in PARTS.values():
        assert part.estimate in done.stdout and "min" in part.estimate


# ---------------------------------------------------------------- refusing a machine without CUDA, or an unknown part


def one_line_on_stderr(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


@no_cuda_here
def test_make_test_gpu_refuses_a_machine_without_cuda_in_one_line():
    for part in ([], ["PART=records"]):
        done = subprocess.run(
            ["make", "--no-print-directory", "test-gpu", f"GPU_PYTHON={sys.executable}", *part],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode != 0
        assert "needs a CUDA GPU" in one_line_on_stderr(done)
        assert "passed" not in done.stdout  # nothing ran


@no_cuda_here
@pytest.mark.parametrize("part", [*PARTS, "all", "answers"])
def test_each_part_refuses_a_machine_without_cuda_in_one_line(tmp_path, capsys, part):
    assert parts.main([str(tmp_path / "out"), part]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.count("\n") == 1 and "needs a CUDA GPU" in said.err
    assert not (tmp_path / "out").exists()


@no_cuda_here
def test_parts_py_refuses_a_machine_without_cuda_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(RUNNER / "parts.py"), str(tmp_path / "out"), "records"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "needs a CUDA GPU" in one_line_on_stderr(done)
    assert not (tmp_path / "out").exists()


@no_cuda_here
def test_run_sh_refuses_a_machine_without_cuda_and_says_why(tmp_path):
    for part in ([], ["records"]):
        done = subprocess.run(
            ["bash", str(RUNNER / "run.sh"), str(tmp_path / "out"), *part],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHON=sys.executable),
            timeout=120,
        )
        assert done.returncode == 2
        assert "needs a CUDA GPU" in one_line_on_stderr(done) and done.stdout == ""
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("runner", ["parts.py", "run.sh"])
def test_an_unknown_part_is_refused_before_anything_runs_naming_the_parts(tmp_path, runner):
    command = [sys.executable, str(RUNNER / "parts.py")] if runner == "parts.py" else ["bash", str(RUNNER / "run.sh")]
    done = subprocess.run(
        [*command, str(tmp_path / "out"), "records", "recrods"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHON=sys.executable),
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    line = one_line_on_stderr(done)
    assert "unknown part 'recrods'" in line and ", ".join(PARTS) in line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- a part under its limit


def made_up(*steps: parts.Step) -> parts.Part:
    return parts.Part("made-up", "a part for the tests", "seconds", lambda folder: list(steps))


def shell(name: str, script: str, **fields) -> parts.Step:
    return parts.Step(name, ["sh", "-c", script], **fields)


def result_of(out: Path, name: str = "made-up") -> list[str]:
    return (out / name / "result.txt").read_text().splitlines()


def test_a_part_cut_off_at_its_limit_says_so_and_what_had_finished(tmp_path):
    part = made_up(
        shell("first", "echo '=============== 3 passed in 0.20s ==============='"),
        shell(
            "second",
            "echo 'tests/x.py::test_a PASSED'; echo 'tests/x.py::test_b FAILED'; "
            "printf 'tests/x.py::test_c '; exec sleep 30",
        ),
        shell("third", "echo should not run > third-ran"),
    )
    started = time.monotonic()
    status = parts.run_part(part, tmp_path, limit_s=1)
    assert time.monotonic() - started < 1 + parts.KILL_GRACE_S  # stopped at its limit, not after the sleep
    assert status == parts.CUT_OFF == 124
    head, *lines = result_of(tmp_path)
    assert head.startswith("made-up: cut off after 1 s at its 1 s limit: first finished, second was running"), head
    assert "1 passed, 1 failed so far" in head and "running tests/x.py::test_c" in head
    assert lines[0] == "  first: exit 0 in 0 s · 3 passed in 0.20s"
    assert lines[1].startswith("  second: cut off after 1 s · 1 passed, 1 failed so far")
    assert lines[2] == "  third: not started"
    assert "tests/x.py::test_b FAILED" in (tmp_path / "made-up" / "second.log").read_text()  # the log, as it came
    assert not (parts.ROOT / "third-ran").exists()


def test_the_limit_in_minutes_is_named_as_such():
    assert parts.limit_words(480) == "the 8-minute limit" and parts.limit_words(90) == "its 90 s limit"


def test_a_cut_off_part_leaves_nothing_running(tmp_path):
    pid_file = tmp_path / "pid"
    part = made_up(shell("spawns", f"sleep 60 & echo $! > {pid_file}; wait"))
    assert parts.run_part(part, tmp_path, limit_s=1) == parts.CUT_OFF
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists() or stat.read_text().split(")")[-1].split()[0] == "Z":
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("the step's child outlived the part")


def test_a_cut_off_part_counts_the_records_written_so_far_and_keeps_a_steps_own_output(tmp_path):
    records = tmp_path / "made-up" / "records"
    part = made_up(
        shell("probe", 'echo \'{"name": "GPU"}\'; echo a warning >&2', stdout="probe.json"),
        shell(
            "bench",
            f"mkdir -p {records}; echo 1 > {records}/00_a.json; echo 1 > {records}/01_b.json; "
            "echo 1 > {records}/01_b.png; exec sleep 30",
            records="records",
        ),
    )
    assert parts.run_part(part, tmp_path, limit_s=2) == parts.CUT_OFF
    folder = tmp_path / "made-up"
    assert (folder / "probe.json").read_text() == '{"name": "GPU"}\n'
    assert (folder / "probe.log").read_text() == "a warning\n"
    head, probe, bench = result_of(tmp_path)
    assert "bench was running (2 record(s) in records: 00_a, 01_b)" in head
    assert probe.startswith("  probe: exit 0") and probe.endswith("wrote probe.json")


def test_a_part_that_ends_in_time_says_how_each_step_ended(tmp_path):
    part = made_up(shell("fails", "echo '====== 1 failed, 2 passed in 0.50s ======'; exit 3"), shell("passes", "true"))
    assert parts.run_part(part, tmp_path, limit_s=60) == 3
    head, fails, passes = result_of(tmp_path)
    assert re.fullmatch(r"made-up: failed in \d+ s", head), head
    assert fails == "  fails: exit 3 in 0 s · 1 failed, 2 passed in 0.50s" and passes == "  passes: exit 0 in 0 s"
    assert parts.run_part(made_up(shell("passes", "true")), tmp_path, limit_s=60) == 0
    assert result_of(tmp_path)[0].startswith("made-up: passed in ")


def test_the_calls_budget_cuts_a_part_short_and_leaves_the_next_unstarted(tmp_path):
    slow = parts.Part("slow", "", "", lambda folder: [parts.Step("sleeps", ["sleep", "30"])])
    after = parts.Part("after", "", "", lambda folder: [parts.Step("marks", ["touch", str(tmp_path / "ran")])])
    status = parts.run_parts([slow, after], tmp_path, limit_s=60, budget_s=2, shortest_start_s=1)
    assert status == parts.CUT_OFF
    assert result_of(tmp_path, "slow")[0].startswith("slow: cut off after 2 s at the call's 2 s budget")
    assert re.fullmatch(r"after: not started: \d s of the call's 2 s budget were left", result_of(tmp_path, "after")[0])
    assert not (tmp_path / "ran").exists()


def test_run_sh_without_wheels_says_to_prepare_them(tmp_path):
    # A copy of the runner with no wheels/ beside it.
    (tmp_path / "tools" / "gpu-runner").mkdir(parents=True)
    copy = tmp_path / "tools" / "gpu-runner" / "run.sh"
    copy.write_text((RUNNER / "run.sh").read_text())
    done = subprocess.run(
        ["bash", str(copy), "--check", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHON=sys.executable),
        timeout=60,
    )
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
    assert any(item.startswith("matplotlib==") for item in wanted)
    assert any(item.startswith("pytest==") for item in wanted)
    assert not any(item.startswith(("torch", "numpy")) for item in wanted)


def test_prepare_downloads_wheels_only_for_the_machines_python(tmp_path):
    command = prepare.download_command(tmp_path, "3.12", ["nbval==0.11.0"])
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--only-binary=:all:" in command and command[command.index("--python-version") + 1] == "3.12"
    assert command[command.index("--dest") + 1] == str(tmp_path) and command[-1] == "nbval==0.11.0"
    platforms = [command[i + 1] for i, word in enumerate(command) if word == "--platform"]
    assert platforms and all(p.endswith("x86_64") for p in platforms)


def test_prune_removes_the_wheels_of_packages_the_machine_has(tmp_path):
    for name in (
        "attrs-25.4.0-py3-none-any.whl",
        "typing_extensions-4.15.0-py3-none-any.whl",
        "nbval-0.11.0-py2.py3-none-any.whl",
        "jupyter_client-8.10.0-py3-none-any.whl",
    ):
        (tmp_path / name).write_bytes(b"")
    removed = prepare.prune(tmp_path, {"attrs", "typing-extensions"})
    assert removed == ["attrs-25.4.0-py3-none-any.whl", "typing_extensions-4.15.0-py3-none-any.whl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "jupyter_client-8.10.0-py3-none-any.whl",
        "nbval-0.11.0-py2.py3-none-any.whl",
    ]


def test_the_wheels_folder_is_ignored_by_git():
    done = subprocess.run(["git", "check-ignore", "-q", "tools/gpu-runner/wheels/x.whl"], cwd=ROOT)
    assert done.returncode == 0


# ---------------------------------------------------------------- a required machine may not skip

SKIPPING = """
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
"""


@pytest.mark.parametrize(
    "required, failing",
    [({}, set()), ({"GPULAB_REQUIRE_CUDA": "1"}, {"test_cuda"}), ({"GPULAB_REQUIRE_BROWSER": "1"}, {"test_browser"})],
)
def test_a_skip_for_want_of_a_required_machine_is_a_failure(tmp_path, required, failing):
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_REQUIRE_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**env, **required},
        timeout=120,
    )
    # A skip decided at setup becomes an error of the setup, one at the call a failure: both fail the run.
    failed = set(re.findall(r"^(?:FAILED|ERROR) \S+::(\w+)", done.stdout, flags=re.M))
    assert failed == failing, done.stdout
    assert done.returncode == (1 if failing else 0), done.stdout
