"""The runner: each exercise of each submission graded in a fresh kernel inside a sandbox.

:func:`grade` takes a student's answer cells (matched by ID, never by position), and runs each
exercise — setup cells, the student's answer, the instructor's checks, canaries among them — in a
fresh kernel inside a sandbox (:mod:`gpulab.grading.sandbox`), so that a hang, a crash or a hostile
answer costs only that exercise. A check passes only when its cell's execute reply says ``ok``.
:func:`grade_many` grades a class, ``jobs`` kernels at a time.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import sys
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import course
from . import sandbox
from .notebooks import (
    STUB,
    SubmissionError,
    answer_id,
    cell_role,
    exercises,
    lesson_of,
    load_submission,
    solution_path,
    solutions_folder,
)
from .reports import MESSAGE_LIMIT, Report, report_of

__all__ = ["grade", "grade_many"]


# Tampering that makes a failing assertion pass — an IPython hook, a patched torch.allclose or
# isinstance, a kernel that replies "ok" to everything — also makes a check pass that the grader
# knows must fail. Such canary cells run among an exercise's checks, after the answer, each with
# fresh random names and values; one that does not fail with its own message scores the exercise 0.
# An instructor adds canaries of an exercise's own in the solution notebook: cells with
# {"canary": ID, "exercise": ID} (tagged raises-exception, so that nbval expects them to fail).
_CANARIES = (
    "{a} = {x}\nassert {a} == {y}, f'expected {y}, got {{{a}}}'",
    "import math\n{a} = {x}.5\nassert math.isclose({a}, {y}.25), f'expected about {y}.25, got {{{a}}}'",
    "{a} = {x}\nassert isinstance({a}, str), f'expected a str, got {{{a}!r}}'",
    "import sys\n{b} = sys.modules.get('torch')\n{a} = [{x}.0]\nif {b} is not None:\n"
    "    assert {b}.allclose({b}.tensor({a}), {b}.tensor([{y}.5])), f'expected [{y}.5], got {{{a}}}'\n"
    "else:\n    assert {a} == [{y}.5], f'expected [{y}.5], got {{{a}}}'",
    "import sys\n{b} = sys.modules.get('numpy')\n{a} = {x}.0\nif {b} is not None:\n"
    "    assert {b}.isclose({a}, {y}.5), f'expected {y}.5, got {{{a}}}'\n"
    "else:\n    assert abs({a} - {y}.5) < 0.5, f'expected {y}.5, got {{{a}}}'",
)
_WORDS = ("result", "value", "got", "out", "total", "measured", "size", "count", "expected", "seen")


def _canary(kind: int, rng) -> tuple[str, str]:
    """(source, message): a cell that looks like a check and must fail with AssertionError(message)."""
    while True:
        a = b = ""
        while a == b:
            a, b = (f"_{rng.choice(_WORDS)}{rng.randint(0, 999)}" for _ in "ab")
        x = rng.randint(2, 10**5)
        y = x + rng.randint(x // 5 + 1, x + 999)  # far apart for every tolerance: rtol 1e-5 and beyond
        source = _CANARIES[kind % len(_CANARIES)].format(a=a, b=b, x=x, y=y)
        try:  # the message it fails with, here, in a Python nobody tampered with
            exec(compile(source, "<canary>", "exec"), {"__builtins__": __builtins__})
        except AssertionError as failure:
            return source, str(failure)


@dataclasses.dataclass
class _Cell:
    kind: str  # setup, answer, check, canary
    key: str  # check id, answer:ID, canary:ID
    source: str
    nonce: str = ""


def _plan(solution: dict, exercise: str, answer_source: str, rng) -> list[_Cell]:
    """The cells that grade ``exercise``: the setup, the student's answer, its checks, canaries among them."""
    cells, checks = [], []
    for cell in solution["cells"]:
        if cell.get("cell_type") != "code":
            continue
        role = cell_role(cell)
        if (answer := answer_id(cell)) is not None:
            if answer == exercise:
                cells.append(_Cell("answer", f"answer:{exercise}", answer_source))
        elif "check" in role:
            if role.get("exercise") == exercise:
                checks.append(_Cell("check", role["check"], course.cell_source(cell)))
        elif "canary" in role:
            if role.get("exercise") == exercise:
                checks.append(_Cell("canary", f"canary:{role['canary']}", course.cell_source(cell)))
        elif "hints" in role:  # for the student to read: nothing the grade depends on
            continue
        elif not checks:
            cells.append(_Cell("setup", "", course.cell_source(cell)))
    kinds = list(range(len(_CANARIES)))
    rng.shuffle(kinds)
    for kind in kinds:  # anywhere after the first check: each gap is as likely
        source, nonce = _canary(kind, rng)
        checks.insert(rng.randint(1, len(checks)), _Cell("canary", "canary", source, nonce))
    return cells + checks


def _grade_exercise(
    solution: dict,
    exercise: str,
    answer_source: str,
    timeout: float,
    folder: Path,
    threads: int,
    slot: int,
    sandboxed: bool,
    limits,
    zygote=None,
) -> dict:
    """{key: {"outcome", "message"}} for the answer and every check, and "tampered" if a canary passed."""
    import random

    rng = random.Random(secrets.randbits(64))
    plan = _plan(solution, exercise, answer_source, rng)
    # A kernel that does not start, or a setup that does not run, is the machine's doing, not the answer's
    # (nothing of it has run yet): on a busy machine (many kernels importing a CUDA build of torch at once) it
    # happens. Such an exercise is graded once more in a fresh kernel.
    for _ in range(2):
        results = _grade_once(plan, timeout, folder, threads, slot, sandboxed, limits, zygote)
        if "kernel" not in results:
            break
    return results


def _grade_once(
    plan: list, timeout: float, folder: Path, threads: int, slot: int, sandboxed: bool, limits, zygote
) -> dict:
    results: dict[str, dict] = {}
    try:
        if zygote is not None:
            kernel = zygote().kernel(start_timeout=max(60.0, timeout))
        else:
            kernel = sandbox.Kernel(
                folder, sandboxed=sandboxed, limits=limits, threads=threads, slot=slot, start_timeout=max(60.0, timeout)
            )
    except sandbox.KernelDied as died:
        return {"kernel": {"outcome": "error", "message": str(died)}}
    with kernel:
        for cell in plan:
            if not kernel.alive:
                break
            reply = kernel.execute(cell.source, timeout)
            if cell.kind == "canary":
                if why := _canary_broken(reply, cell.nonce, kernel.alive):
                    results["tampered"] = {
                        "outcome": "tampered",
                        "message": (f"a check that must fail {why}: something in the answer changed how checks run"),
                    }
                    break
                continue
            if cell.kind == "setup":
                if reply.status != "ok":
                    why = _verdict(reply, timeout).get("message", reply.status)
                    return {
                        "kernel": {
                            "outcome": "error",
                            "message": (
                                f"the exercise's setup did not run before your answer ({why}); not your answer's doing: "
                                "grade it again"
                            )[:MESSAGE_LIMIT],
                        }
                    }
                continue
            results[cell.key] = _verdict(reply, timeout)
    return results


def _canary_broken(reply, message: str, alive: bool) -> str:
    """How a canary's reply shows tampering ("" if it failed as it must; a dead kernel shows nothing).

    The grader's canaries must fail with their own AssertionError; an instructor's (no message) with any error.
    """
    if reply.status == "ok":
        return "passed"
    if reply.status == "timeout" and alive:
        return "did not finish"
    if reply.status == "error" and message and (reply.ename != "AssertionError" or message not in reply.evalue):
        return f"raised {reply.ename} instead of its own AssertionError"
    return ""


def _verdict(reply, timeout: float) -> dict:
    if reply.status == "ok":
        return {"outcome": "passed"}
    if reply.status == "timeout":
        return {"outcome": "timeout", "message": f"Timeout of {timeout:g} seconds exceeded"}
    if reply.status == "died":
        return {"outcome": "error", "message": reply.evalue}
    message = f"{reply.ename}: {reply.evalue}".rstrip(": ")[:MESSAGE_LIMIT]
    return {"outcome": "failed" if reply.ename == "AssertionError" else "error", "message": message}


@dataclasses.dataclass
class _Submission:
    path: Path
    lesson: str = ""
    solution: dict | None = None
    parts: dict = dataclasses.field(default_factory=dict)
    answers: dict = dataclasses.field(default_factory=dict)
    notes: list = dataclasses.field(default_factory=list)
    error: str = ""
    outcomes: dict = dataclasses.field(default_factory=dict)


def _prepare(path: Path, lesson: str | None, only: list[str] | None, folder: Path, solutions: dict) -> _Submission:
    item = _Submission(Path(path))
    try:
        submission = load_submission(item.path)
        item.lesson = lesson_of(submission, item.path, lesson, folder)
        if item.lesson not in solutions:
            source = solution_path(item.lesson, folder)
            notebook = load_submission(source)
            solutions[item.lesson] = (notebook, exercises(notebook))
        item.solution, parts = solutions[item.lesson]
    except SubmissionError as exc:
        item.error = str(exc)
        return item
    except ValueError as exc:  # the instructor's notebook breaks a rule of roles
        item.error = f"the solution notebook for {item.lesson}: {exc}"
        return item
    if only:
        unknown = sorted(set(only) - set(parts))
        if unknown:
            item.error = f"lesson {item.lesson} has no exercise {', '.join(unknown)} (it has {', '.join(parts)})"
            return item
        parts = {exercise: part for exercise, part in parts.items() if exercise in only}
    item.parts = parts
    for exercise in parts:
        found = [c for c in submission["cells"] if answer_id(c) == exercise]
        if found:
            item.answers[exercise] = course.cell_source(found[0])
        else:
            item.notes.append(f"no answer cell for exercise {exercise!r} (deleted, or its metadata removed?)")
            item.answers[exercise] = "\n".join(STUB)
    return item


def grade_many(
    paths: list[Path],
    *,
    timeout: float = 30.0,
    lesson: str | None = None,
    jobs: int | None = None,
    only: list[str] | dict | None = None,
    solutions: Path | str | None = None,
    sandboxed: bool = True,
    limits=None,
    progress: bool = False,
    fork: bool | None = None,
) -> list[Report | SubmissionError]:
    """Grade submissions, each exercise in a kernel of its own, ``jobs`` kernels at a time.

    ``only`` names the exercises to grade (default: all): a list for every submission, or a dict
    from a submission's path to its own list.

    With ``fork`` (the default where :func:`~gpulab.grading.sandbox.can_fork`) each of the ``jobs`` sandboxes is a
    :class:`~gpulab.grading.sandbox.Zygote` that imports torch once and forks a fresh kernel for each exercise;
    without, every kernel starts Python anew in a sandbox of its own.

    Returns, in the order given, a :class:`Report` for each submission, or the
    :class:`SubmissionError` that says why it could not be graded. Raises :class:`SubmissionError`
    when nothing can be graded (no solutions; no sandbox while ``sandboxed``).
    """
    folder = solutions_folder(solutions)
    if sandboxed and sandbox.unavailable():
        raise SubmissionError(
            f"{sandbox.unavailable()}; pass --no-sandbox to grade without one "
            "(only to check your own work: nothing then stops a submission reaching the grader)"
        )
    limits = limits or sandbox.Limits(cpu_s=int(max(60, timeout * 20)))
    cache: dict = {}
    items = [
        _prepare(path, lesson, only.get(path) if isinstance(only, dict) else only, folder, cache) for path in paths
    ]
    tasks = [(item, exercise) for item in items if not item.error for exercise in item.parts]
    cores = os.cpu_count() or 1
    jobs = max(1, min(jobs or cores, len(tasks) or 1))
    threads = max(1, cores // jobs)
    slots = list(range(jobs))
    lock = threading.Lock()
    fork = sandbox.can_fork() if fork is None else fork
    zygotes: dict[int, sandbox.Zygote] = {}
    # What the kernels would import first: torch, where a solution does (each exercise's setup does), and
    # torch._dynamo, which torch imports at the first call that goes through a torch function or dispatch
    # mode (seconds: gpulab's simulated GPUs are such modes).
    uses_torch = any(
        re.search(r"^\s*(import|from)\s+torch\b", course.cell_source(cell), re.M)
        for notebook, _ in cache.values()
        for cell in notebook["cells"]
        if cell.get("cell_type") == "code"
    )
    preload = ("torch", "torch._dynamo") if uses_torch else ()

    def zygote_of(slot: int):
        def made() -> sandbox.Zygote:
            zygote = zygotes.get(slot)
            if zygote is not None and not zygote.alive:
                zygote.close()
                zygote = None
            if zygote is None:
                zygote = zygotes[slot] = sandbox.Zygote(
                    Path(workdir) / f"slot-{slot}",
                    sandboxed=sandboxed,
                    limits=limits,
                    threads=threads,
                    slot=slot,
                    preload=preload,
                    start_timeout=max(120.0, timeout),
                )
            return zygote

        return made if fork else None

    bar = None
    if progress and tasks:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), desc="grading", unit="exercise", file=sys.stderr)

    def run(task):
        item, exercise = task
        with lock:
            slot = slots.pop()
        try:
            return _grade_exercise(
                item.solution,
                exercise,
                item.answers[exercise],
                timeout,
                Path(workdir) / f"{uuid.uuid4().hex[:12]}-{exercise}",
                threads,
                slot,
                sandboxed,
                limits,
                zygote_of(slot),
            )
        finally:
            with lock:
                slots.append(slot)
            if bar is not None:
                bar.update()

    with tempfile.TemporaryDirectory(prefix="gpulab-grade-") as workdir:
        os.chmod(workdir, 0o711)  # each kernel's user reaches its own folder, and only that
        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for (item, exercise), outcome in zip(tasks, pool.map(run, tasks)):
                    item.outcomes[exercise] = outcome
        finally:
            for zygote in zygotes.values():
                zygote.close()
    if bar is not None:
        bar.close()
    notes = [] if sandboxed else ["graded without a sandbox (--no-sandbox)"]
    return [
        SubmissionError(item.error)
        if item.error
        else report_of(item.path, item.lesson, item.parts, item.solution, item.outcomes, item.notes + notes)
        for item in items
    ]


def grade(
    submission_path: Path,
    *,
    timeout: float = 30.0,
    lesson: str | None = None,
    workers: int = 2,
    only: list[str] | None = None,
    solutions: Path | str | None = None,
    sandboxed: bool = True,
    fork: bool | None = None,
) -> Report:
    """Grade one submitted exercise notebook; raise :class:`SubmissionError` if it cannot be graded.

    ``only`` names the exercises to grade (default: all), e.g. to regrade one of them.
    """
    cores = os.cpu_count() or 1
    [result] = grade_many(
        [Path(submission_path)],
        timeout=timeout,
        lesson=lesson,
        only=only,
        solutions=solutions,
        sandboxed=sandboxed,
        jobs=max(1, min(workers, cores)),
        fork=fork,
    )
    if isinstance(result, SubmissionError):
        raise result
    return result
