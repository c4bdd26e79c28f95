"""The sandbox: hostile answers, one kind each, cannot fool the checks, outlive their kernel, exceed their
limits or reach the grader; and kernels work wherever the temporary folder is, forked from a zygote or not."""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import gpulab
from gpulab import _processes, grading
from gpulab.grading import sandbox

from conftest import ROOT
from tiny_lesson import CORRECT, SANDBOXED, TIMEOUT, grade, needs_sandbox, points, run_grade, submit, tiny_solutions


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_solutions(tmp_path_factory)


LIMIT = sandbox.Limits().memory_bytes
MARKER = "gpulab-test-outlives-" + os.urandom(4).hex()


def running_with_marker() -> list[bytes]:
    return [cmd for _, cmd in _processes.other_processes("cmdline") if MARKER.encode() in cmd]


def test_the_sandboxs_first_processes_are_files_of_the_package_it_shows_its_kernels():
    for script in (sandbox.KERNEL_ENTRY, sandbox.ZYGOTE, sandbox.KERNEL_SYS_PATH):
        assert script.is_file() and script.parent == Path(grading.__file__).parent, script
    if SANDBOXED:
        shown = sandbox._python_paths()
        assert any(str(sandbox.ZYGOTE).startswith(folder.rstrip("/") + "/") for folder in shown), shown


# student → {exercise: answer}: each submission attacks all four exercises, one way each
ATTACKS = {
    "hooks": {
        # An exception handler that swallows every error: IPython then shows no traceback.
        "add": "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\ndef add(a, b):\n    return 0",
        # Every later cell becomes `pass`: every check 'passes'.
        "square": "get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\ndef square(x):\n    return 0",
        # Every assert removed from the cells that follow.
        "root": (
            "import ast\nclass NoAssert(ast.NodeTransformer):\n    def visit_Assert(self, node):\n"
            "        return ast.Pass()\nget_ipython().ast_transformers.append(NoAssert())\n"
            "def root(x):\n    return 0"
        ),
        # No traceback shown, ever.
        "const": "get_ipython()._showtraceback = lambda *a, **k: None\nANSWER = 41",
    },
    "unrendered": {
        "add": "def add(a, b):\n    raise ExceptionGroup('nothing here', [ValueError('no')])",
        "square": (
            "class Quiet(Exception):\n    def _render_traceback_(self):\n        raise RuntimeError('cannot')\n"
            "def square(x):\n    raise Quiet()"
        ),
        # What a check calls, patched to agree with anything.
        "root": "import math\nmath.isclose = lambda *a, **k: True\ndef root(x):\n    return -1",
        "const": "import builtins\nbuiltins.isinstance = lambda *a: True\nANSWER = 41",
    },
    "greedy": {
        # A file larger than the limit (sparse: nothing is really written if the limit fails).
        "add": (
            f"try:\n    with open('big', 'wb') as handle:\n        handle.seek({sandbox.Limits().file_bytes})\n"
            "        handle.write(b'x')\n    def add(a, b):\n        return 0\nexcept OSError:\n"
            "    def add(a, b):\n        return a + b"
        ),
        "square": (
            "import os\nfor _ in range(400):\n    if os.fork() == 0:\n        import time\n"
            "        time.sleep(600)\n        os._exit(0)\ndef square(x):\n    return x * x"
        ),
        "root": (
            "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)  # "
            + MARKER
            + "'], start_new_session=True)\ndef root(x):\n    return x ** 0.5"
        ),
        "const": f"ANSWER = len(bytearray({LIMIT} + 2**30))",
    },
}


def _reach(hidden, read_only):
    """An answer that tries to change every target and to see the hidden ones; right only if it could not."""
    return (
        "import os\nreached = []\n"
        f"for target in {[str(t) for t in hidden + read_only]!r}:\n"
        "    try:\n        with open(target, 'a') as handle:\n            handle.write('# changed')\n"
        "        reached.append(target)\n    except OSError:\n"
        f"        if target in {[str(t) for t in hidden]!r} and os.path.exists(target):\n"
        "            reached.append(target)\nANSWER = 42 if not reached else reached"
    )


@pytest.fixture(scope="module")
def attacked(tiny, tmp_path_factory):
    """A class of hostile submissions graded at once, as a folder, two kernels at a time."""
    folder = tmp_path_factory.mktemp("class")
    for student, answers in ATTACKS.items():
        (folder / student).mkdir()
        submit(folder / student, answers, name="01_devices.ipynb")
    (folder / "reacher").mkdir()
    hidden = [
        tiny / "01_devices.ipynb",
        ROOT / "solutions",
        folder / "reacher" / "01_devices.ipynb",
        ROOT / "pyproject.toml",
        ROOT / "tests" / "answers",
    ]
    read_only = [Path(grading.__file__), sandbox.ZYGOTE, Path(gpulab.__file__)]
    guarded = hidden + read_only
    submit(folder / "reacher", dict(CORRECT, const=_reach(hidden, read_only)), name="01_devices.ipynb")
    watched = [*folder.rglob("*.ipynb"), *(path for path in guarded if path.is_file())]
    hashes = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in watched}
    out = tmp_path_factory.mktemp("reports")
    done = run_grade(folder, "--reports", str(out), "--jobs", "2", solutions=tiny)
    reports = {p.stem.split("__")[0]: json.loads(p.read_text()) for p in out.glob("*.json")}
    changed = [path for path, digest in hashes.items() if hashlib.sha256(path.read_bytes()).hexdigest() != digest]
    return {"done": done, "reports": reports, "changed": changed}


@needs_sandbox
def test_ipython_hooks_and_unrendered_exceptions_score_nothing(attacked):
    assert attacked["done"].returncode == 0, attacked["done"].stderr
    assert points(attacked["reports"]["hooks"]) == {"add": 0, "square": 0, "root": 0, "const": 0}
    assert points(attacked["reports"]["unrendered"]) == {"add": 0, "square": 0, "root": 0, "const": 0}


@needs_sandbox
def test_tampering_that_makes_checks_pass_is_caught_by_canaries_and_said(attacked):
    hooks, unrendered = attacked["reports"]["hooks"], attacked["reports"]["unrendered"]
    for report, exercise in ((hooks, "square"), (hooks, "root"), (unrendered, "root")):
        assert any(
            note.startswith(f"exercise '{exercise}' scores 0: a check that must fail") for note in report["notes"]
        ), report["notes"]
    checks = {c["check"]: c for e in hooks["exercises"] for c in e["checks"]}
    assert checks["square-0"]["outcome"] == "tampered"


@needs_sandbox
def test_limits_hold_and_nothing_a_submission_starts_outlives_it(attacked):
    report = attacked["reports"]["greedy"]
    assert points(report) == {"add": 3, "square": 0, "root": 1, "const": 0}, report
    checks = {c["check"]: c for e in report["exercises"] for c in e["checks"]}
    assert "MemoryError" in checks["const-0"]["message"]
    assert "BlockingIOError" in checks["square-0"]["message"], checks["square-0"]
    assert not running_with_marker()


@needs_sandbox
def test_a_submission_cannot_reach_the_grader_its_report_or_the_solutions(attacked):
    assert points(attacked["reports"]["reacher"])["const"] == 1, attacked["reports"]["reacher"]
    assert attacked["changed"] == []
    assert not (Path(grading.__file__).parents[1] / "solutions").exists(), "the solutions do not ship in the package"


@needs_sandbox
def test_a_stopped_kernel_costs_its_timeout_and_nothing_more(tiny, tmp_path):
    answers = dict(CORRECT, add="import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)")
    start = time.monotonic()
    report = grade(submit(tmp_path, answers), tiny)
    assert time.monotonic() - start < 3 * float(TIMEOUT) + 30
    assert {e: p for e, (p, _) in report.by_exercise().items()} == {"add": 0, "square": 2, "root": 1, "const": 1}


WHERE = [pytest.param(True, marks=needs_sandbox, id="sandboxed"), pytest.param(False, id="no-sandbox")]


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "started"])
@pytest.mark.parametrize("sandboxed", WHERE)
@pytest.mark.parametrize("length", [49, 200], ids=["macos-length", "longer"])
def test_the_grader_works_wherever_the_temporary_folder_is(tiny, tmp_path, monkeypatch, sandboxed, fork, length):
    # A kernel's sockets live in the temporary folder, and a Unix socket's path holds 104 to 108 bytes.
    # macOS's TMPDIR, /var/folders/xx/…/T/, is 49 bytes long; the kernel's folders add more.
    deep = tmp_path / "T"
    while len(str(deep)) < length:
        deep = deep / ("d" * min(40, length - len(str(deep)) - 1 or 1))
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    report = grading.grade(
        submit(tmp_path, CORRECT), timeout=float(TIMEOUT), solutions=tiny, sandboxed=sandboxed, fork=fork
    )
    assert report.total == report.max_total == 7, report.table()
    assert list(deep.iterdir()) == []


@pytest.mark.parametrize("sandboxed", WHERE)
def test_a_zygotes_kernels_start_alone_whatever_the_one_before_left(tmp_path, sandboxed):
    # Files in /tmp and /dev/shm, processes that left the kernel's session, changes to imported modules:
    # none of it reaches the next kernel.
    # (bubblewrap's /dev/shm may not be writable at all; where it is, what is left there goes too)
    leave = (
        "import math, os, subprocess, sys\nopen('left', 'w').write('x')\ntry:\n"
        "    open('/dev/shm/left', 'w').write('x')\nexcept OSError:\n    pass\n"
        "math.pi = 3\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)  # " + MARKER + "'],"
        " start_new_session=True)"
    )
    # What the zygote imported is frozen out of the kernels' garbage collections (gc.freeze): a gc.collect() in
    # an answer walks the kernel's own objects, not torch's hundreds of thousands.
    # The zygote's own folder (the grader's modules) is not on the path its kernels inherit.
    check = (
        "import gc, math, os, sys\nassert not os.path.exists('left'), os.listdir('.')\nassert math.pi > 3.14\n"
        "assert not [p for p in sys.path if p.rstrip('/').endswith('gpulab/grading')], sys.path\n"
        "assert not os.path.exists('/dev/shm/left') or not " + repr(sandboxed) + "\n"
        "assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()"
    )
    with sandbox.Zygote(tmp_path / "zygote", sandboxed=sandboxed, slot=7, preload=()) as zygote:
        for _ in range(2):
            with zygote.kernel() as kernel:
                assert kernel.execute(check, 30).status == "ok", kernel.execute(check, 30)
                assert kernel.execute(leave, 30).status == "ok"
            assert not running_with_marker()
        with zygote.kernel() as kernel:
            assert kernel.execute("import os\nos._exit(3)", 30).status == "died"
            assert not kernel.alive
        with zygote.kernel() as kernel:  # a kernel that died leaves the zygote working
            assert kernel.execute("x = 1", 30).status == "ok"
        if not sandboxed:  # one that removed its folder ends the zygote, and says so
            with zygote.kernel() as kernel:
                assert kernel.execute("import os, shutil\nshutil.rmtree(os.getcwd())", 30).status == "ok"
            assert not zygote.alive
    if not sandboxed:
        Path("/dev/shm/left").unlink(missing_ok=True)
    assert not (tmp_path / "zygote").exists()


@pytest.mark.parametrize("sandboxed", WHERE)
def test_a_kernel_started_alone_runs_as_its_limits_say(tmp_path, sandboxed):
    limits = sandbox.Limits(cpu_s=77, file_bytes=5 * 2**20)
    with sandbox.Kernel(tmp_path / "alone", sandboxed=sandboxed, limits=limits, slot=9) as kernel:
        check = (
            "import resource\nassert resource.getrlimit(resource.RLIMIT_CPU) == (77, 77)\n"
            f"assert resource.getrlimit(resource.RLIMIT_FSIZE) == ({5 * 2**20}, {5 * 2**20})"
        )
        reply = kernel.execute(check, 30)
        assert reply.status == "ok", reply
    assert not (tmp_path / "alone").exists()


def test_without_a_sandbox_the_grader_says_so_and_goes_on_only_when_told(tiny, tmp_path):
    path = submit(tmp_path, CORRECT)
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))  # no bwrap on this PATH
    refused = subprocess.run(
        [sys.executable, "-m", "gpulab", "grade", str(path), "--solutions", str(tiny)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "no sandbox" in refused.stderr and "--no-sandbox" in refused.stderr
    graded = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpulab",
            "grade",
            str(path),
            "--solutions",
            str(tiny),
            "--no-sandbox",
            "--timeout",
            TIMEOUT,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert graded.returncode == 0, graded.stderr
    assert "total: 7 / 7" in graded.stdout and "graded without a sandbox" in graded.stdout
