"""The GPU run in parts, each short enough for a GPU machine lent for minutes, most valuable first.

    python3 tools/gpu-runner/parts.py OUT PART...      # run.sh and `make test-gpu` call this
    python3 tools/gpu-runner/parts.py --help           # the parts, in order, with how long each takes

Each part runs its steps in order under one time limit (8 minutes unless --limit says otherwise) and
writes into OUT/PART/: each step's log (STEP.log), what it records (probe.json, bench-results/, ...)
as it goes, and result.txt, which says how the part ended: each step's exit status and pytest's
summary line, or "cut off after N s at the 8-minute limit" and what had finished by then. A part
cut off is stopped with everything it started, and its later steps do not start; a part's failing
step does not stop the next.

--budget caps the whole call: a part gets at most what is left of it, and starts only with a minute
left. On a machine without a CUDA GPU, or given a part it does not know, it says so in one line and
runs nothing.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LIMIT_S = 8 * 60
SHORTEST_START_S = 60  # under --budget, a part starts only with this much of the call left
KILL_GRACE_S = 10  # after SIGINT, before SIGKILL
CUT_OFF = 124  # the exit status of a part cut off at its limit, as timeout(1) has it
OUTCOME = re.compile(r"^(\S.*?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
TEST_ID = re.compile(r"^\S+::\S")  # pytest -v names a test before it runs it, its outcome after
SUMMARY = re.compile(r"^=+ .*\b(passed|failed|error|errors|skipped|deselected|no tests ran)\b.* =+$")


@dataclasses.dataclass
class Step:
    """One command of a part, run in the checkout; its output goes to NAME.log in the part's folder."""

    name: str
    command: list[str]
    stdout: str | None = None  # a file in the part's folder for its standard output (NAME.log keeps stderr)
    records: str | None = None  # a folder (in the part's folder unless absolute) it writes records into
    env: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Part:
    name: str
    what: str
    estimate: str  # how long it takes on an H100, and what that rests on
    steps: Callable[[Path], list[Step]]  # the part's folder -> its steps


def pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-v", "--durations=20", *args]


REQUIRE_CUDA = {"GPULAB_REQUIRE_CUDA": "1"}  # a CUDA test that skips fails the run (tests/conftest.py)


def lessons() -> list[str]:
    return sorted(path.stem for path in (ROOT / "solutions").glob("*.ipynb"))


def answers_part(stem: str) -> Part:
    return Part(
        f"answers-{stem[:2]}",
        f"{stem}'s exercises graded: tests/e2e/test_answers.py -k {stem}",
        "3 to 5 min each, a guess: the H100 graded about 44 rounds, some two lessons, in one 10-minute command",
        lambda folder: [Step("answers", pytest("tests/e2e/test_answers.py", "-k", stem), env=REQUIRE_CUDA)],
    )


def build_parts(bench_out: Path | None = None) -> dict[str, Part]:
    """Every part, in the order `all` runs them; the bench writes into ``bench_out`` if given."""
    records = Part(
        "records",
        "gpulab info, probe.py, `gpulab bench` (a reference record per panel), every lesson under nbval",
        "about 7 min on the H100 SXM: the probe a few seconds, the bench about 3 (its panels took 61 s), the lessons "
        "217 s",
        lambda folder: [
            Step("devices", [sys.executable, "-m", "gpulab", "info"], stdout="devices.txt"),
            Step("probe", [sys.executable, str(HERE / "probe.py")], stdout="probe.json"),
            Step(
                "bench",
                [sys.executable, "-m", "gpulab", "bench", str(bench_out or folder / "bench-results")],
                records=str(bench_out or folder / "bench-results"),
            ),
            Step("lessons", pytest("notebooks"), env=REQUIRE_CUDA),
        ],
    )
    cuda_tests = Part(
        "cuda-tests",
        "the unit tests (tests/unit, where every CUDA test is), no CUDA test skipped",
        "about 3 min, a guess: not yet timed on a GPU; make check runs them and more in under 5 on 2 CPU cores",
        lambda folder: [Step("unit", pytest("tests/unit"), env=REQUIRE_CUDA)],
    )
    solutions = Part(
        "solutions",
        "every solution notebook under nbval",
        "about 4.5 min: not timed whole on the H100 (195 cells passed before its command ran out)",
        lambda folder: [Step("solutions", pytest("solutions"), env=REQUIRE_CUDA)],
    )
    parts = [records, cuda_tests, solutions, *(answers_part(stem) for stem in lessons())]
    return {part.name: part for part in parts}


GROUPS = {"all": lambda parts: list(parts), "answers": lambda parts: [n for n in parts if n.startswith("answers-")]}


def expand(names: list[str], parts: dict[str, Part]) -> list[str]:
    """The parts ``names`` asks for, groups expanded, each once; ValueError for a name that is none."""
    chosen: list[str] = []
    for name in names:
        if name not in parts and name not in GROUPS:
            raise ValueError(f"unknown part {name!r}; the parts, in order: {', '.join(parts)} (or {', '.join(GROUPS)})")
        for part in GROUPS[name](parts) if name in GROUPS else [name]:
            if part not in chosen:
                chosen.append(part)
    return chosen


def limit_words(seconds: float) -> str:
    return f"the {seconds / 60:g}-minute limit" if seconds >= 60 and seconds % 60 == 0 else f"its {seconds:g} s limit"


# ---------------------------------------------------------------- running a part


@dataclasses.dataclass
class Ran:
    """How one step ended: its exit status (None: cut off), its seconds and what it had done."""

    step: Step
    status: int | None
    seconds: float
    done: str

    def line(self) -> str:
        seconds = f"{self.seconds:.0f} s"
        how = f"cut off after {seconds}" if self.status is None else f"exit {self.status} in {seconds}"
        return f"{self.step.name}: {how}" + (f" · {self.done}" if self.done else "")


def _copy(pipe, log) -> None:
    """Copy a step's output, line by line as it comes, into its log and onto this process's stdout."""
    for line in iter(pipe.readline, b""):
        if log.closed:  # the step is over; what a process it left behind still writes is not its output
            return
        log.write(line)
        log.flush()
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def _interruptible() -> None:
    """In a step's process, before it starts: Ctrl-C ends it. A runner started in the background of a shell has
    SIGINT ignored, which its steps would inherit through exec, and every step cut off would then wait out the
    grace period before it was killed."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(process: subprocess.Popen) -> None:
    """End the step and everything it started (its own process group): first as Ctrl-C would, so that pytest
    writes its summary and temporary folders go, then whatever is left, at once."""
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=KILL_GRACE_S)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def what_it_did(step: Step, folder: Path, cut_off: bool) -> str:
    """pytest's summary line, or its counts so far and the test it was running; the records it wrote."""
    words = []
    log = folder / f"{step.name}.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    summary = [line.strip(" =") for line in lines if SUMMARY.match(line.strip())]
    counts = collections.Counter(match.group(2).lower() for match in map(OUTCOME.match, lines) if match)
    if summary:
        words.append(summary[-1])
    elif counts:
        words.append(", ".join(f"{n} {outcome}" for outcome, n in counts.items()) + (" so far" if cut_off else ""))
    running = [line.strip() for line in lines if TEST_ID.match(line) and not OUTCOME.match(line)]
    if cut_off and running:
        words.append(f"running {running[-1]}")
    if step.records is not None:
        written = sorted(path.stem for path in Path(folder, step.records).glob("*.json"))
        words.append(f"{len(written)} record(s) in {step.records}" + (f": {', '.join(written)}" if written else ""))
    if step.stdout is not None and (folder / step.stdout).exists():
        words.append(f"wrote {step.stdout}")
    return " · ".join(words)


def run_step(step: Step, folder: Path, seconds: float) -> Ran:
    """Run ``step`` in the checkout for at most ``seconds``; its output goes to its log as it comes."""
    started = time.monotonic()
    log_path = folder / f"{step.name}.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg", "JUPYTER_PLATFORM_DIRS": "1", **step.env}
    with open(log_path, "wb") as log:
        stdout = open(folder / step.stdout, "wb") if step.stdout else subprocess.PIPE
        process = subprocess.Popen(
            step.command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE if step.stdout else subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_interruptible,
        )
        if step.stdout:
            stdout.close()
        # A daemon: a process the step started in a session of its own may hold the pipe open after the step ends.
        reader = threading.Thread(target=_copy, args=(process.stderr or process.stdout, log), daemon=True)
        reader.start()
        try:
            status = process.wait(timeout=max(seconds, 0))
        except subprocess.TimeoutExpired:
            _stop(process)
            status = None
        reader.join(timeout=5)
    if step.stdout and log_path.stat().st_size == 0:
        log_path.unlink()
    return Ran(step, status, time.monotonic() - started, what_it_did(step, folder, cut_off=status is None))


def run_part(part: Part, out: Path, limit_s: float = LIMIT_S, limit_name: str | None = None) -> int:
    """Run ``part`` into OUT/PART/ under ``limit_s``; write its result.txt; return 0, its first failing exit or 124.

    ``limit_name`` names the limit in result.txt when it is not the part's own (the call's budget).
    """
    folder = Path(out).resolve() / part.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.txt").write_text(f"{part.name}: running since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
    started = time.monotonic()
    ran: list[Ran] = []
    steps = part.steps(folder)
    for step in steps:
        print(f"== {part.name} / {step.name}: {' '.join(step.command)}", flush=True)
        ran.append(run_step(step, folder, limit_s - (time.monotonic() - started)))
        if ran[-1].status is None:
            break
    seconds = time.monotonic() - started
    failed = [r.status for r in ran if r.status not in (0, None)]
    if ran and ran[-1].status is None:
        finished = [r.step.name for r in ran[:-1]]
        head = (
            f"{part.name}: cut off after {seconds:.0f} s at {limit_name or limit_words(limit_s)}: "
            + (f"{', '.join(finished)} finished, " if finished else "")
            + f"{ran[-1].step.name} was running"
            + (f" ({ran[-1].done})" if ran[-1].done else "")
        )
        status = CUT_OFF
    else:
        head = f"{part.name}: {'failed' if failed else 'passed'} in {seconds:.0f} s"
        status = failed[0] if failed else 0
    lines = [head, *(f"  {r.line()}" for r in ran), *(f"  {step.name}: not started" for step in steps[len(ran) :])]
    (folder / "result.txt").write_text("\n".join(lines) + "\n")
    print(f"\n== {head}", flush=True)
    return status


def run_parts(
    parts: list[Part],
    out: Path,
    limit_s: float = LIMIT_S,
    budget_s: float | None = None,
    shortest_start_s: float = SHORTEST_START_S,
) -> int:
    """Run ``parts`` in order, each under ``limit_s`` and all under ``budget_s``; return 0 or the first part's status
    that was not (a part left no time to start is written as not started, status 124)."""
    started = time.monotonic()
    statuses = []
    for part in parts:
        limit, limit_name = limit_s, None
        if budget_s is not None:
            left = budget_s - (time.monotonic() - started)
            if left < shortest_start_s:
                folder = Path(out) / part.name
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "result.txt").write_text(
                    f"{part.name}: not started: {max(left, 0):.0f} s of the call's {budget_s:g} s budget were left\n"
                )
                statuses.append(CUT_OFF)
                continue
            if left < limit_s:
                limit, limit_name = left, f"the call's {budget_s:g} s budget"
        statuses.append(run_part(part, out, limit, limit_name))
    return next((status for status in statuses if status != 0), 0)


# ---------------------------------------------------------------- the command line


def describe(parts: dict[str, Part]) -> str:
    """The parts in order, each with what it runs and (where it differs from the part before's) how long it takes."""
    lines = [f"the parts, in the order `all` runs them, each under a limit of {LIMIT_S // 60} minutes (--limit):"]
    estimate = None
    for part in parts.values():
        lines.append(f"  {part.name:<11} {part.what}")
        if part.estimate != estimate:
            lines.append(f"  {'':<11} {part.estimate}")
        estimate = part.estimate
    lines.append(f"  {'answers':<11} every answers-NN part;  all: every part")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=describe(build_parts()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", type=Path, help="the folder each part writes its own folder into")
    parser.add_argument("parts", nargs="*", default=["all"], metavar="PART", help="the parts to run (default: all)")
    parser.add_argument("--limit", type=float, default=LIMIT_S, help=f"each part's seconds (default: {LIMIT_S})")
    parser.add_argument("--budget", type=float, help="the whole call's seconds; a part gets at most what is left")
    parser.add_argument(
        "--bench-out", type=Path, help="where the bench writes its records (default: OUT/records/bench-results)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check the machine and the names, print each part's steps, run nothing"
    )
    return parser


def cuda_missing() -> str | None:
    try:
        import torch
    except ImportError:
        return "no torch on this machine"
    return None if torch.cuda.is_available() else f"torch {torch.__version__} finds none on this machine"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    parts = build_parts(args.bench_out.resolve() if args.bench_out else None)
    try:
        chosen = expand(args.parts, parts)
    except ValueError as exc:
        print(f"parts.py: {exc}", file=sys.stderr)
        return 2
    if (missing := cuda_missing()) is not None:
        print(f"parts.py: the GPU run needs a CUDA GPU: {missing}", file=sys.stderr)
        return 2
    out = args.out.resolve()
    if args.dry_run:
        for name in chosen:
            print(f"{name} (at most {args.limit:g} s):")
            for step in parts[name].steps(out / name):
                print(f"  {step.name}: {' '.join(step.command)}")
        return 0
    status = run_parts([parts[name] for name in chosen], out, args.limit, args.budget)
    print("\n".join((out / name / "result.txt").read_text().rstrip() for name in chosen))
    return status


if __name__ == "__main__":
    sys.exit(main())
