"""The ``gpulab`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _info(args: argparse.Namespace) -> int:
    import torch

    from . import devices

    print(f"torch {torch.__version__} · accelerator: {devices.accelerator_type() or 'none'} · best device: {devices.best_device()}")
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


def _assign(args: argparse.Namespace) -> int:
    from . import grading

    changed = grading.assign(Path(args.root), check=args.check)
    for relative in changed:
        print(f"{relative}: out of date with solutions/ (run `gpulab assign`)" if args.check else f"wrote {relative}")
    return 1 if args.check and changed else 0


def _grade(args: argparse.Namespace) -> int:
    import json

    import importlib.util

    if importlib.util.find_spec("nbval") is None:
        print("gpulab grade: grading runs the checks with nbval, which is not installed: "
              "pip install 'gpulab[test]'", file=sys.stderr)
        return 2
    from . import grading

    try:
        report = grading.grade(Path(args.submission), timeout=args.timeout, lesson=args.lesson)
    except grading.SubmissionError as exc:
        print(f"gpulab grade: {exc}", file=sys.stderr)
        return 2
    print(report.table())
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpulab", description="Helpers for the gpulab course.")
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="describe this machine's devices")
    info.set_defaults(handler=_info)

    headers = commands.add_parser("headers", help="regenerate every notebook's title, badge and setup cell, and the README's lesson table")
    headers.add_argument("--root", default=".", help="the course checkout (default: current directory)")
    headers.add_argument("--check", action="store_true", help="only report notebooks whose header differs")
    headers.set_defaults(handler=_headers)

    assign = commands.add_parser("assign", help="write exercises/ from solutions/ (solutions removed)")
    assign.add_argument("--root", default=".", help="the course checkout (default: current directory)")
    assign.add_argument("--check", action="store_true", help="only report exercise notebooks that are out of date")
    assign.set_defaults(handler=_assign)

    grade = commands.add_parser("grade", help="grade a submitted exercise notebook")
    grade.add_argument("submission", help="the student's .ipynb")
    grade.add_argument("--json", metavar="FILE", help="also write the scores as JSON")
    grade.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                       help="time limit for each cell (default: 30)")
    grade.add_argument("--lesson", help="the lesson, e.g. 01_devices (default: from the notebook)")
    grade.set_defaults(handler=_grade)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
