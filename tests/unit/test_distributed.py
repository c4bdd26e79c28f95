"""gpulab.distributed: real torchrun runs of gloo processes on this machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from unittest import mock

import pytest
import torch
import torch.distributed as dist

from gpulab import _processes, distributed

from conftest import simulates


@pytest.fixture(autouse=True)
def scratch(tmp_path, monkeypatch):
    """Runs keep their files under this test's folder (the real scratch folder goes only at exit)."""
    (tmp_path / "scratch").mkdir()
    monkeypatch.setattr(distributed, "_SCRATCH", tmp_path / "scratch")


# Every script notes its rank's pid beside itself as it starts: a rank forked by torchrun has the launcher's
# command line, not the script's, so only the note tells it apart.
NOTE_PID = "import os as _os; open(f'{__file__}.pid-{_os.getpid()}', 'w').close()\n"


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(NOTE_PID + textwrap.dedent(source))
    return path


def ranks_left(script: Path) -> list[str]:
    """The ranks of ``script``'s runs (noted by the pid they wrote), and processes naming it, still running."""
    alive = []
    for note in script.parent.glob(f"{script.name}.pid-*"):
        pid = note.name.rsplit("-", 1)[1]
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(f"rank pid {pid}")
    return alive + processes_naming(str(script))


def processes_naming(text: str) -> list[str]:
    """Command lines of the running processes (this one aside) that mention ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="ignore")
            except OSError:
                continue
            if text in cmdline:
                found.append(cmdline)
    return found


def torchruns_left() -> list[int]:
    """The torchruns forked by this Python's launcher that are still running."""
    launcher = distributed._LAUNCHER
    if launcher is None:
        return []
    return [
        pid
        for pid, stat in _processes.other_processes("stat")
        if int(stat.rsplit(b")", 1)[1].split()[1]) == launcher.pid
    ]


HANG = """
    import time
    import torch, torch.distributed as dist
    import gpulab.distributed as gd

    gd.init_process_group()
    if dist.get_rank() == 0:
        print("waiting in all_reduce", flush=True)
        dist.all_reduce(torch.ones(1))       # rank 1 never joins
    else:
        print("sleeping", flush=True)
        time.sleep(300)
"""


def test_a_run_gives_back_rank_0s_result_every_ranks_log_and_its_progress(tmp_path, capsys):
    script = write(
        tmp_path,
        "sum.py",
        """
        import torch, torch.distributed as dist
        import gpulab.distributed as gd

        device = gd.init_process_group()
        rank = dist.get_rank()
        total = torch.tensor([float(rank + 1)], device=device)
        dist.all_reduce(total)
        print(f"rank {rank} of {dist.get_world_size()}: sum {total.item():g}, {torch.get_num_threads()} threads")
        for step in range(3):
            gd.report_progress(step + 1, 3)
        gd.save_result({"sum": total.item(), "world": dist.get_world_size(), "backend": dist.get_backend()})
        gd.finish()
        print("never printed: finish() is the end")
    """,
    )
    seen = []
    run = distributed.torchrun(script, 3, threads=1, progress=lambda done, total: seen.append((done, total)))
    assert run.ok and run.returncode == 0
    assert run.result == {"sum": 6.0, "world": 3, "backend": "gloo"}
    assert run.logs == {rank: f"rank {rank} of 3: sum 6, 1 threads" for rank in range(3)}
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert run.command[:3] == ["torchrun", "--standalone", "--nproc_per_node=3"]
    printed = capsys.readouterr().out
    assert (
        printed.startswith("$ torchrun --standalone --nproc_per_node=3 ") and "(gloo, 1 thread per process)" in printed
    )
    assert all(f"[rank {rank}] rank {rank} of 3: sum 6" in printed for rank in range(3))
    assert not ranks_left(script) and not torchruns_left()
    assert not list(distributed.scratch_folder().glob("run-*")), "a run's logs and result files are removed after it"


def test_a_failing_rank_raises_with_its_traceback_and_stops_the_others(tmp_path):
    script = write(
        tmp_path,
        "fails.py",
        """
        import time
        import torch.distributed as dist
        import gpulab.distributed as gd

        gd.init_process_group()
        print("started", flush=True)
        if dist.get_rank() == 1:
            raise ValueError("rank 1 has bad data")
        time.sleep(300)                       # rank 0 would wait for ever
    """,
    )
    with pytest.raises(distributed.RankFailed) as failure:
        distributed.torchrun(script, 2, echo=False, timeout_s=60)
    message = str(failure.value)
    assert message.startswith("rank 1 failed:\nTraceback") and "ValueError: rank 1 has bad data" in message
    assert "[rank1]" not in message, "torch's rank prefix is taken off the traceback's lines"
    assert not ranks_left(script) and not torchruns_left()

    run = distributed.torchrun(script, 2, echo=False, check=False)
    assert not run.ok and "ValueError: rank 1 has bad data" in run.failure()
    assert run.logs[0].startswith("started")


def test_a_killed_rank_is_reported_from_torchruns_own_account(tmp_path):
    script = write(
        tmp_path,
        "killed.py",
        """
        import os, signal
        import gpulab.distributed as gd

        gd.init_process_group()
        os.kill(os.getpid(), signal.SIGKILL)
    """,
    )
    run = distributed.torchrun(script, 2, echo=False, check=False)
    assert not run.ok
    assert run.failure().startswith(f"torchrun exited with status {run.returncode}") and "SIGKILL" in run.failure()


def test_a_hang_ends_at_the_timeout_with_a_clear_message_and_nothing_left(tmp_path):
    script = write(tmp_path, "hangs.py", HANG)
    start = time.monotonic()
    with pytest.raises(distributed.DistributedTimeout) as timeout:
        distributed.torchrun(script, 2, timeout_s=8, echo=False)
    assert time.monotonic() - start < 8 + 10
    message = str(timeout.value)
    assert "did not finish within 8 s" in message and "same collective calls" in message
    assert "rank 0, last lines:\nwaiting in all_reduce" in message and "rank 1, last lines:\nsleeping" in message
    assert not ranks_left(script) and not torchruns_left()


GROUP_TIMEOUT = """
    import sys, time
    from datetime import timedelta
    import torch, torch.distributed as dist
    import gpulab.distributed as gd

    gd.init_process_group(timeout_s=2)
    own = {"own": {"timeout": timedelta(seconds=2)}, "default": {}}[sys.argv[1]]
    group = dist.new_group([0, 1], **own)           # every rank makes the group
    if dist.get_rank() == 0:
        print("waiting in all_reduce", flush=True)
        dist.all_reduce(torch.ones(1), group=group)  # rank 1 never joins
    else:
        time.sleep(300)
"""


def test_the_timeout_ends_a_wait_in_the_default_group_only_and_new_group_takes_its_own(tmp_path):
    script = write(tmp_path, "group_timeout.py", GROUP_TIMEOUT)
    start = time.monotonic()
    with pytest.raises(distributed.RankFailed, match="rank 0 failed"):
        distributed.torchrun(script, 2, args=["own"], echo=False, timeout_s=30)
    assert time.monotonic() - start < 25, "a group given timeout= raises once it has waited that long"
    with pytest.raises(distributed.DistributedTimeout) as waiting:
        distributed.torchrun(script, 2, args=["default"], echo=False, timeout_s=8)
    assert "rank 0, last lines:\nwaiting in all_reduce" in str(waiting.value), (
        "a group made without timeout= has the backend's default (30 minutes for gloo), not init_process_group's 2 s"
    )
    assert not ranks_left(script) and not torchruns_left()


def test_an_interrupted_run_stops_every_rank(tmp_path):
    script = write(tmp_path, "interrupted.py", HANG)
    # The driver stands for a notebook's kernel, which has Python's SIGINT handler: a test runner started in
    # the background (SIGINT ignored, as POSIX shells do for asynchronous jobs) must not pass its own on.
    driver = subprocess.Popen(
        [sys.executable, "-c", f"import gpulab.distributed as d; d.torchrun({str(script)!r}, 2, timeout_s=120)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines = []
    for line in driver.stdout:  # wait until both ranks are running
        lines.append(line)
        if sum("] waiting" in seen or "] sleeping" in seen for seen in lines) == 2:
            break
    driver.send_signal(signal.SIGINT)  # what the notebook's interrupt button does to the kernel
    rest, _ = driver.communicate(timeout=60)
    assert "interrupted: the 2 ranks were stopped" in rest and "KeyboardInterrupt" in rest
    assert not ranks_left(script) and not torchruns_left()


PARENTS = """
    import os
    import gpulab.distributed as gd

    gd.init_process_group()
    agent = os.getppid()                                    # the torchrun that started this rank
    with open(f"/proc/{agent}/stat") as stat:
        launcher = int(stat.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{agent}/cmdline", "rb") as cmdline:
        command = cmdline.read().replace(b"\\0", b" ").decode()
    gd.save_result({"agent": agent, "launcher": launcher, "command": command})
    gd.finish()
"""


def test_each_run_is_a_fresh_torchrun_forked_from_one_launcher_that_ends_with_its_python(tmp_path):
    script = write(tmp_path, "parents.py", PARENTS)
    first = distributed.torchrun(script, 2, echo=False).result
    launcher = distributed._LAUNCHER
    second = distributed.torchrun(script, 2, echo=False).result
    assert distributed._LAUNCHER is launcher and first["launcher"] == second["launcher"] == launcher.pid
    assert first["agent"] != second["agent"], "every run has a torchrun of its own"
    assert not torchruns_left()

    launcher.kill()  # a launcher that died is started again
    launcher.wait()
    third = distributed.torchrun(script, 2, echo=False).result
    assert third["launcher"] == distributed._LAUNCHER.pid != launcher.pid

    driver = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import gpulab.distributed as d; print(d.torchrun({str(script)!r}, 2, echo=False).result['launcher'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    gone = int(driver.stdout)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{gone}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{gone}").exists(), "a launcher ends with the Python that started it"


AS_PYTHON_RUNS_IT = """
    import atexit, os, sys
    preloaded = "torch" in sys.modules                      # forked from a torchrun that has imported torch
    dynamo = "torch._dynamo" in sys.modules                 # what DDP's constructor imports, imported already
    import torch, torch.distributed as dist
    import gpulab.distributed as gd
    from neighbour import WORD                              # the script's folder is sys.path[0]

    gd.init_process_group()
    atexit.register(lambda rank=dist.get_rank(): open(f"{__file__}.exited-{rank}", "w").close())
    if dist.get_rank() == 0:
        gd.save_result({"argv": sys.argv, "name": __name__, "word": WORD, "threads": torch.get_num_threads(),
                        "preloaded": preloaded, "dynamo": dynamo, "rank": os.environ["RANK"],
                        "run": os.environ[gd.MARK_VARIABLE], "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
                        "gpus": torch.cuda.device_count(),
                        "session": os.getsid(0) == os.getpid(), "unbuffered": sys.stdout.write_through})
    print("last words", flush=True)
    dist.destroy_process_group()
    sys.exit(int(sys.argv[2]))
"""


def test_a_rank_is_forked_from_torchrun_and_runs_the_script_as_python_would(tmp_path):
    script = write(tmp_path, "as_python.py", AS_PYTHON_RUNS_IT)
    (tmp_path / "neighbour.py").write_text("WORD = 'beside the script'\n")
    run = distributed.torchrun(script, 2, args=["one", 0], threads=1, echo=False)
    forks = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 11)
    assert run.result["preloaded"] == forks, "from torch 2.11 the rank is forked from torchrun, before as a new Python"
    assert run.result["dynamo"] == forks, "a forked rank finds torch._dynamo imported (DDP imports it: seconds)"
    assert run.result["argv"] == [str(script), "one", "0"] and run.result["name"] == "__main__"
    assert run.result["word"] == "beside the script" and run.result["threads"] == 1 and run.result["rank"] == "0"
    assert run.result["session"] and run.result["unbuffered"] and len(run.result["run"]) == 32
    assert run.logs == {0: "last words", 1: "last words"}
    assert sorted(p.name for p in tmp_path.glob("as_python.py.exited-*")) == [
        "as_python.py.exited-0",
        "as_python.py.exited-1",
    ]
    failed = distributed.torchrun(script, 2, args=["two", 3], echo=False, check=False)
    assert not failed.ok and failed.returncode != 0 and failed.logs[1] == "last words", (
        "sys.exit(3) in a rank fails the run, as it would in a Python"
    )
    # CUDA reads CUDA_VISIBLE_DEVICES as it initialises, which the launcher has not: a run that changes it is
    # forked all the same, and its ranks see their own value (a simulated machine's: below).
    hidden = distributed.torchrun(script, 2, args=["hidden", 0], echo=False, env={"CUDA_VISIBLE_DEVICES": ""}).result
    assert hidden["preloaded"] == forks and hidden["visible"] == "" and hidden["gpus"] == 0
    # A run whose environment changes what a Python reads as it starts (here PYTHONPATH) starts new Pythons.
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "neighbour.py").write_text("WORD = 'on the new path'\n")
    (tmp_path / "neighbour.py").unlink()
    paths = os.pathsep.join(filter(None, [str(extra), os.environ.get("PYTHONPATH")]))
    fresh = distributed.torchrun(script, 2, args=["new", 0], echo=False, env={"PYTHONPATH": paths}).result
    assert not fresh["preloaded"] and fresh["word"] == "on the new path" and fresh["argv"][1:] == ["new", "0"]
    assert not ranks_left(script) and not torchruns_left()


@simulates
def test_a_simulated_machine_starts_new_ranks_where_a_run_changes_the_gpus_they_see(tmp_path):
    # A simulated node reads CUDA_VISIBLE_DEVICES as Python starts (gpulab.simulated.runtime.visible_devices): a run
    # that changes it gets ranks that are new Pythons, which see the GPUs it names.
    script = write(tmp_path, "as_python.py", AS_PYTHON_RUNS_IT)
    (tmp_path / "neighbour.py").write_text("WORD = 'beside the script'\n")
    driver = f"""
import json, gpulab.distributed as gd
gd._SCRATCH = __import__("pathlib").Path({str(tmp_path / "scratch")!r})
same = gd.torchrun({str(script)!r}, 2, args=["same", 0], echo=False).result
two = gd.torchrun({str(script)!r}, 2, args=["two", 0], echo=False, env={{"CUDA_VISIBLE_DEVICES": "1,2"}}).result
print(json.dumps([[r["preloaded"], r["gpus"]] for r in (same, two)]))
"""
    env = {key: value for key, value in os.environ.items() if key != "CUDA_VISIBLE_DEVICES"}
    done = subprocess.run(
        [sys.executable, "-c", driver],
        env=dict(env, GPULAB_SIMULATE="4xh100"),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    forks = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 11)
    assert json.loads(done.stdout.splitlines()[-1]) == [[forks, 4], [False, 2]]
    assert not ranks_left(script)


DEAF = """
    import signal, time
    import gpulab.distributed as gd

    signal.signal(signal.SIGTERM, signal.SIG_IGN)           # torchrun's SIGTERM does not stop it
    gd.init_process_group()
    print("deaf", flush=True)
    time.sleep(300)
"""


def test_a_forked_rank_that_ignores_sigterm_is_stopped_all_the_same(tmp_path):
    # A forked rank's /proc environment is the launcher's, without the run's mark: the run finds it by the pid
    # torchrun noted as it forked it (and stops what it started through its session).
    script = write(tmp_path, "deaf.py", DEAF)
    with pytest.raises(distributed.DistributedTimeout):
        distributed.torchrun(script, 2, echo=False, timeout_s=6)
    assert len(list(tmp_path.glob("deaf.py.pid-*"))) == 2
    assert not ranks_left(script) and not torchruns_left()


def test_where_python_cannot_fork_the_torchrun_command_runs_the_script(tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "_launcher", lambda: None)
    run = distributed.torchrun(write(tmp_path, "parents.py", PARENTS), 2, echo=False)
    assert run.ok and "-m torch.distributed.run --standalone --nproc_per_node=2" in run.result["command"]
    failing = write(tmp_path, "fails.py", "import gpulab.distributed as gd\ngd.init_process_group()\n1 / 0\n")
    with pytest.raises(distributed.RankFailed, match="ZeroDivisionError"):
        distributed.torchrun(failing, 2, echo=False)
    assert not ranks_left(failing)


def test_a_run_stopped_before_the_launcher_took_it_never_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "_LAUNCHER", None)
    asleep = tmp_path / "asleep_launcher.py"
    asleep.write_text(
        f"import runpy, time\ntime.sleep(4)\nrunpy.run_path({str(distributed._LAUNCHER_SCRIPT)!r}, "
        "run_name='__main__')\n"
    )
    monkeypatch.setattr(distributed, "_LAUNCHER_SCRIPT", asleep)
    ran = tmp_path / "ran"
    script = write(tmp_path, "marks.py", f"open({str(ran)!r}, 'w').close()\n")
    with pytest.raises(distributed.DistributedTimeout):
        distributed.torchrun(script, 2, echo=False, timeout_s=1)  # the launcher is still asleep
    assert distributed.torchrun(write(tmp_path, "parents.py", PARENTS), 2, echo=False).ok
    assert not ran.exists(), "the withdrawn run was skipped; the next one ran"
    distributed._end_launcher(distributed._LAUNCHER)


def test_a_launcher_that_cannot_start_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "_LAUNCHER", None)
    broken = tmp_path / "broken_launcher.py"
    broken.write_text("raise SystemExit('no torch here')\n")
    monkeypatch.setattr(distributed, "_LAUNCHER_SCRIPT", broken)
    with pytest.raises(distributed.RankFailed, match="(?s)launcher ended \\(status 1\\).*no torch here"):
        distributed.torchrun(write(tmp_path, "x.py", "pass\n"), 2, echo=False)


def test_the_scratch_folder_goes_when_python_exits():
    printed = subprocess.run(
        [sys.executable, "-c", "import gpulab.distributed as d; print(d.scratch_folder())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(printed).name.startswith("gpulab-scripts-") and not Path(printed).exists()


def test_a_killed_pythons_scratch_folder_is_removed(tmp_path):
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, gpulab.distributed as d; "
            "print(d.scratch_folder(), flush=True); os.kill(os.getpid(), signal.SIGKILL)",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, TMPDIR=str(tmp_path)),
    )
    left = Path(killed.stdout.strip())
    assert left.parent == tmp_path and left.name.startswith("gpulab-scripts-")
    deadline = time.monotonic() + 10
    while left.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left.exists(), "a killed kernel runs no atexit: its janitor removes the folder"


def test_orphaned_scratch_folders_are_swept_by_the_next_python(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(distributed, "_SCRATCH", None)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f"gpulab-scripts-{gone.stdout.strip()}-abc"  # a Python that no longer runs
    alive = tmp_path / f"gpulab-scripts-{os.getpid()}-def"
    orphan.mkdir()
    alive.mkdir()
    mine = distributed.scratch_folder()
    assert not orphan.exists() and alive.is_dir() and mine.is_dir()


def test_a_missing_script_or_no_processes_is_refused_at_once(tmp_path):
    with pytest.raises(FileNotFoundError, match="write it first"):
        distributed.torchrun(tmp_path / "nothing.py", 2)
    with pytest.raises(ValueError, match="at least 1"):
        distributed.torchrun(write(tmp_path, "x.py", "pass\n"), 0)


@pytest.mark.parametrize(
    "gpus, nproc, nccl, expected",
    [
        (0, 2, False, "gloo"),
        (1, 2, True, "gloo"),
        (2, 2, True, "nccl"),
        (8, 4, True, "nccl"),
        (2, 2, False, "gloo"),
    ],
)
def test_nccl_only_when_every_process_has_a_gpu_of_its_own(gpus, nproc, nccl, expected):
    with (
        mock.patch("torch.cuda.is_available", return_value=gpus > 0),
        mock.patch("torch.cuda.device_count", return_value=gpus),
        mock.patch.object(dist, "is_nccl_available", return_value=nccl),
    ):
        assert distributed.backend_for(nproc) == expected


def test_save_result_outside_a_run_prints_and_on_other_ranks_does_nothing(capsys, monkeypatch):
    monkeypatch.delenv(distributed.RESULT_VARIABLE, raising=False)
    monkeypatch.setenv("RANK", "1")
    distributed.save_result({"a": 1})
    assert capsys.readouterr().out == ""
    monkeypatch.setenv("RANK", "0")
    distributed.save_result({"a": 1})
    assert capsys.readouterr().out == 'result: {"a": 1}\n'
