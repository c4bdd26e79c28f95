"""Finding and ending processes (gpulab._processes), and every Python gpulab starts being a file it runs by path."""

import ast
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

import gpulab
from gpulab import _processes

needs_proc = pytest.mark.skipif(not Path("/proc").is_dir(), reason="no /proc here")


def _sleeper(tmp_path, *, env=None, cwd=None, words=""):
    script = tmp_path / f"sleeper_{uuid.uuid4().hex[:8]}.py"
    script.write_text("import time\ntime.sleep(600)\n")
    return subprocess.Popen(
        [sys.executable, str(script), *([words] if words else [])],
        env=dict(os.environ, **(env or {})),
        cwd=cwd,
        start_new_session=True,
    )


def _gone(process, seconds=10):
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


@needs_proc
def test_a_process_is_found_by_the_mark_in_its_environment_and_not_this_one(tmp_path, monkeypatch):
    mark = uuid.uuid4().hex
    monkeypatch.setenv("GPULAB_TEST_MARK", mark)  # this Python's own is never listed
    process = _sleeper(tmp_path, env={"GPULAB_TEST_MARK": mark})
    try:
        deadline = time.monotonic() + 10
        while process.pid not in _processes.processes_marked("GPULAB_TEST_MARK", mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes.processes_marked("GPULAB_TEST_MARK", mark) == [process.pid]
        assert _processes.processes_marked("GPULAB_TEST_MARK", mark[:-1]) == []
        assert os.getpid() not in [pid for pid, _ in _processes.other_processes("stat")]
        assert _processes.running(process.pid) and _processes.stat_fields(process.pid)[0] in "RS"
    finally:
        _processes.end_group(process)
    assert process.returncode == -9 and not _processes.running(process.pid)
    assert _processes.stat_fields(process.pid) == []


@needs_proc
def test_processes_are_ended_by_a_word_in_their_command_line_or_by_the_folder_they_work_in(tmp_path):
    word = f"gpulab-test-{uuid.uuid4().hex}"
    named = _sleeper(tmp_path, words=word)
    (tmp_path / "inside" / "deeper").mkdir(parents=True)
    (tmp_path / "inside-not").mkdir()
    working = _sleeper(tmp_path, cwd=tmp_path / "inside" / "deeper")
    beside = _sleeper(tmp_path, cwd=tmp_path / "inside-not")
    try:
        time.sleep(0.3)
        _processes.kill_processes_mentioning(word)
        assert _gone(named)
        _processes.kill_processes_working_in(str(tmp_path / "inside"))
        assert _gone(working)
        assert beside.poll() is None, "a folder whose name only starts the same is another folder"
    finally:
        for process in (named, working, beside):
            _processes.end_group(process)


def test_a_process_that_is_gone_is_ended_without_a_word():
    done = subprocess.Popen([sys.executable, "-I", "-S", "-V"], stdout=subprocess.DEVNULL, start_new_session=True)
    done.wait()
    _processes.end_group(done)  # nothing to kill: no error
    assert not _processes.running(done.pid)


# ---------------------------------------------------------------- no Python source in strings


RUNNABLE = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.While, ast.For)


def code_in_strings(source: str) -> list[str]:
    """Where a module holds a Python program in a string to run: a command line with ``-c`` (``python -c CODE``,
    ``python -Ic CODE``), ``exec``/``eval``/``compile`` of a string written in the module, or a string of several
    lines that is a program (it imports, defines or loops). A docstring is no program; a one-line ``.pth`` line,
    which ``site`` runs, is a line of a file, not a program here."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    constants = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            for element in node.elts:
                if (
                    isinstance(element, ast.Constant)
                    and isinstance(element.value, str)
                    and element.value.startswith("-")
                    and not element.value.startswith("--")
                    and element.value.endswith("c")
                    and element.value[1:].isalpha()
                ):
                    found.append(f"line {node.lineno}: a command line with {element.value}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.args
            and node.func.id in ("exec", "eval", "compile")
        ):
            code = node.args[0]
            if (isinstance(code, ast.Constant) and isinstance(code.value, str)) or (
                isinstance(code, ast.Name) and code.id in constants
            ):
                found.append(f"line {node.lineno}: {node.func.id} of a string written here")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and "\n" in node.value.strip()
        ):
            try:
                program = ast.parse(textwrap.dedent(node.value))
            except (SyntaxError, ValueError):
                continue
            if len(program.body) > 1 and any(isinstance(part, RUNNABLE) for part in ast.walk(program)):
                found.append(f"line {node.lineno}: a program in a string ({node.value.strip().splitlines()[0][:40]!r})")
    return found


def test_the_check_finds_code_run_from_strings_as_gpulab_once_held_it():
    janitor = textwrap.dedent('''
        import subprocess, sys
        _JANITOR = """import os, shutil, sys, time
        while os.getppid() == int(sys.argv[2]):
            time.sleep(0.2)
        shutil.rmtree(sys.argv[1], ignore_errors=True)
        """
        subprocess.Popen([sys.executable, "-c", _JANITOR, "folder", "1"])
        ''')
    assert len(code_in_strings(janitor)) == 2
    assert code_in_strings('import sys\ncommand = (sys.executable, "-Ic", "print(1)")\n')
    assert code_in_strings('PROBE = "import json"\nexec(PROBE)\n')
    assert code_in_strings('exec("x = 1")\n')
    assert not code_in_strings(
        '"""A docstring.\n\nimport this\nimport that\n"""\nLINE = "import os; os.getpid()\\n"\n'
        'ARGS = ["-s", "--count", "-v"]\n'
    )


def test_no_module_of_gpulab_runs_python_written_in_a_string():
    package = Path(gpulab.__file__).parent
    found = {
        str(path.relative_to(package)): where
        for path in sorted(package.rglob("*.py"))
        if (where := code_in_strings(path.read_text(encoding="utf-8")))
    }
    assert found == {}, f"run these as .py files of the package, by path: {found}"
