"""The ``gpulab`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _info(args: argparse.Namespace) -> int:
    import torch

    from . import __version__, devices

    print(
        f"gpulab {__version__} · torch {torch.__version__} · accelerator: {devices.accelerator_type() or 'none'} · best device: {devices.best_device()}"
    )
    print(devices.describe())
    return 0


def _headers(args: argparse.Namespace) -> int:
    from . import course

    root = Path(args.root)
    changed = course.sync_headers(root, check=args.check)
    if course.sync_readme(root, check=args.check):
        changed.append("README.md")
    if args.check:
        for relative in changed:
            print(f"{relative}: differs from what `gpulab headers` generates (run it)")
        return 1 if changed else 0
    for relative in changed:
        print(f"rewrote {relative}")
    return 0


def _slides(args: argparse.Namespace) -> int:
    from . import slides

    changed, problems = slides.sync_slides(Path(args.root), check=args.check)
    for relative, found in problems.items():
        for problem in found:
            print(f"{relative}: {problem}")
    if args.check:
        for relative in changed:
            print(f"{relative}: its slides differ from what `gpulab slides` generates (run it)")
        return 1 if changed or problems else 0
    for relative in changed:
        print(f"rewrote {relative}")
    return 1 if problems else 0


def _assign(args: argparse.Namespace) -> int:
    from . import grading

    changed = grading.assign(Path(args.root), check=args.check)
    for relative in changed:
        print(f"{relative}: out of date with solutions/ (run `gpulab assign`)" if args.check else f"wrote {relative}")
    return 1 if args.check and changed else 0


def _grade(args: argparse.Namespace) -> int:
    import importlib.util

    from . import grading
    from .grading import reports

    def refuse(message: str) -> int:
        print(f"gpulab grade: {message}", file=sys.stderr)
        return 2

    if importlib.util.find_spec("ipykernel") is None or importlib.util.find_spec("jupyter_client") is None:
        return refuse("grading runs each exercise in a Jupyter kernel: pip install 'gpulab[test]'")
    if args.jobs is not None and args.jobs < 1:
        return refuse(f"--jobs must be at least 1, got {args.jobs}")
    found = grading.submissions_in(args.submission)
    one = len(found) == 1 and not Path(args.submission[0]).is_dir() and args.csv is None
    if not found:
        return refuse(f"no notebooks in {', '.join(args.submission)}")
    try:
        results = grading.grade_many(
            [path for _, path in found],
            timeout=args.timeout,
            lesson=args.lesson,
            jobs=args.jobs,
            only=args.exercise,
            solutions=args.solutions,
            sandboxed=not args.no_sandbox,
            progress=not one,
        )
    except grading.SubmissionError as exc:
        return refuse(str(exc))
    if one:
        [result] = results
        if isinstance(result, grading.SubmissionError):
            return refuse(str(result))
        print(result.table())
        if args.json:
            reports.write_report(result, args.json)
        return 0

    folder = Path(args.reports) if args.reports else (Path(args.csv).with_suffix("") if args.csv else None)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    for (student, path), result in zip(found, results):
        if isinstance(result, grading.SubmissionError):
            print(f"{student}: not graded: {result}")
            continue
        print(f"{student}: {result.total:g} / {result.max_total:g}" + "".join(f" · {n}" for n in result.notes))
        if folder is not None:
            reports.write_report(result, folder / f"{reports.report_name(path, Path(args.submission[0]))}.json")
    if args.csv:
        graded = [(student, path, result) for (student, path), result in zip(found, results)]
        rows = reports.write_gradebook(args.csv, graded)
        print(f"{rows} submission(s) → {args.csv}" + (f", reports in {folder}" if folder else ""))
    return 0


def _autograder(args: argparse.Namespace) -> int:
    from . import grading
    from .grading import gradescope

    try:
        target = gradescope.build(
            args.lesson,
            Path(args.gradescope),
            solutions=args.solutions,
            timeout=args.timeout,
            hidden_visibility=args.hidden_visibility,
        )
    except (grading.SubmissionError, ValueError) as exc:
        print(f"gpulab autograder: {exc}", file=sys.stderr)
        return 2
    print(f"{target}: upload it as the autograder of the assignment for {args.lesson} on Gradescope")
    return 0


def _bench(args: argparse.Namespace) -> int:
    import shlex

    from tqdm.auto import tqdm

    from . import bench

    try:
        lessons = bench.find_lessons(Path(args.root), args.lesson or ())
    except bench.BenchError as exc:
        print(f"gpulab bench: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    command = "gpulab bench " + " ".join(shlex.quote(a) for a in args.argv)
    failed = 0
    written: list[bench.Recorded] = []
    for path in lessons:
        with tqdm(total=1, desc=path.stem, unit="cell", leave=True, file=sys.stderr) as bar:

            def progress(done: int, total: int, _lesson: str) -> None:
                bar.total = total
                bar.update(done - bar.n)

            try:
                recorded = bench.run_lesson(path, out, command=command, progress=progress)
            except bench.BenchError as exc:
                print(f"gpulab bench: {exc}", file=sys.stderr)
                failed += 1
                continue
        written += recorded
        for item in recorded:
            where = [str(item.json_path)] if item.json_path is not None else []
            where += [str(item.png_path) if item.json_path is None else item.png_path.name] if item.png_path else []
            line = f"  {item.name}: {item.elapsed_s:.1f} s → {', '.join(where) or 'nothing written'}"
            print(line + (f"\n    {item.summary}" if item.summary else ""))
    from . import simulated

    if simulated.is_simulating():
        print(
            f"{len(written)} experiment(s) ran on a simulated machine: figures in {out}, and no records "
            "(a simulated GPU's timings are this CPU's)" + (f"; {failed} lesson(s) failed" if failed else "")
        )
    else:
        print(f"{len(written)} experiment(s) recorded in {out}" + (f"; {failed} lesson(s) failed" if failed else ""))
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpulab", description="Helpers for the gpulab course.")
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="describe this machine's devices")
    info.set_defaults(handler=_info)

    headers = commands.add_parser(
        "headers", help="regenerate every notebook's title, badge and setup cell, and the README's lesson table"
    )
    headers.add_argument("--root", default=".", help="the course checkout (default: current directory)")
    headers.add_argument("--check", action="store_true", help="only report notebooks whose header differs")
    headers.set_defaults(handler=_headers)

    slides = commands.add_parser(
        "slides",
        help="regenerate every lesson's slide boundaries for lecture mode (make lecture LESSON=02)",
        description="Write each lesson's slideshow metadata from its structure: the title, one slide per "
        "## section, each experiment panel and each quiz question on a slide of its own (a section that "
        "starts mid-cell is split into a cell of its own). Also says what only the lesson can change.",
    )
    slides.add_argument("--root", default=".", help="the course checkout (default: current directory)")
    slides.add_argument(
        "--check", action="store_true", help="only report lessons whose slides differ, or that have problems"
    )
    slides.set_defaults(handler=_slides)

    assign = commands.add_parser("assign", help="write exercises/ from solutions/ (solutions removed)")
    assign.add_argument("--root", default=".", help="the course checkout (default: current directory)")
    assign.add_argument("--check", action="store_true", help="only report exercise notebooks that are out of date")
    assign.set_defaults(handler=_assign)

    bench = commands.add_parser(
        "bench",
        help="run the lessons' experiments headless at their defaults; write JSON and PNG plots",
        description="Run every lesson's experiment panels with their default settings, as the notebook "
        "would, and write NAME.json (the record gpulab.reference reads) and NAME.png for each. "
        "On a GPU machine, copy the JSON files into src/gpulab/reference_results/ to ship them "
        "as the reference readers see.",
    )
    bench.add_argument("out", help="folder to write the results into (created if needed)")
    bench.add_argument(
        "--lesson",
        action="append",
        metavar="N",
        help="only this lesson, by number (02) or name (02_copying); repeat for several",
    )
    bench.add_argument("--root", default=".", help="the course checkout (default: current directory)")
    bench.set_defaults(handler=_bench)

    grade = commands.add_parser(
        "grade",
        help="grade submitted exercise notebooks: one, several, or a folder of a class",
        description="Grade each exercise of each submission in a fresh Jupyter kernel inside a sandbox "
        "(bubblewrap on Linux). One notebook: print its table. Several, or a folder as a "
        "learning-management system exports it: one row per student in --csv, and one JSON "
        "report each in --reports.",
    )
    grade.add_argument("submission", nargs="+", help="the students' .ipynb files, or folders of them")
    grade.add_argument(
        "--solutions", metavar="DIR", help="the instructor's solution notebooks (default: the checkout's solutions/)"
    )
    grade.add_argument("--json", metavar="FILE", help="one submission: also write its scores as JSON")
    grade.add_argument("--csv", metavar="FILE", help="write the gradebook: a row per student, a column per exercise")
    grade.add_argument(
        "--reports",
        metavar="DIR",
        help="write each submission's JSON report here (default, with --csv: beside it, named after it)",
    )
    grade.add_argument("--jobs", type=int, metavar="N", help="kernels at a time (default: the number of cores)")
    grade.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="time limit for each cell (default: 30)"
    )
    grade.add_argument("--lesson", help="the lesson, e.g. 01_devices (default: from each notebook)")
    grade.add_argument(
        "--exercise",
        action="append",
        metavar="ID",
        help="grade only this exercise (its ID, as the table shows it); repeat for several",
    )
    grade.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run kernels without a sandbox: only to check your own work where none can be made",
    )
    grade.set_defaults(handler=_grade)

    autograder = commands.add_parser(
        "autograder",
        help="build a Gradescope autograder (a zip) for one lesson's exercises",
        description="Write the zip Gradescope runs for each submission of a lesson's exercise notebook: the "
        "lesson's checks (hidden ones included, no solutions), gpulab, setup.sh and run_autograder. "
        "Each check becomes a Gradescope test with its points and message.",
    )
    autograder.add_argument("lesson", help="the lesson, e.g. 04_memory")
    autograder.add_argument("--gradescope", required=True, metavar="ZIP", help="the zip to write")
    autograder.add_argument(
        "--solutions", metavar="DIR", help="the instructor's solution notebooks (default: the checkout's solutions/)"
    )
    autograder.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="time limit for each cell (default: 30)"
    )
    autograder.add_argument(
        "--hidden-visibility",
        default="after_published",
        choices=["visible", "hidden", "after_due_date", "after_published"],
        help="when students see the checks that hold hidden tests (default: after_published)",
    )
    autograder.set_defaults(handler=_autograder)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv[1:]
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
