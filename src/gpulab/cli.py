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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpulab", description="Helpers for the gpulab course.")
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="describe this machine's devices")
    info.set_defaults(handler=_info)

    headers = commands.add_parser("headers", help="regenerate every notebook's title, badge and setup cell, and the README's lesson table")
    headers.add_argument("--root", default=".", help="the course checkout (default: current directory)")
    headers.add_argument("--check", action="store_true", help="only report notebooks whose header differs")
    headers.set_defaults(handler=_headers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
