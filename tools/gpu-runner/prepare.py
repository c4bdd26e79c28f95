"""Download, where a package registry can be reached, what an offline GPU machine needs for the suite.

    python tools/gpu-runner/prepare.py                    # for Python 3.12 on x86-64 Linux
    python tools/gpu-runner/prepare.py --python 3.11 --dest /tmp/wheels

The GPU machine already has torch, numpy, matplotlib, pytest and the other packages named in
on-the-gpu-machine.txt, but nothing of the Jupyter stack that nbval drives. This fetches the
packages of gpulab and of its [test] extra that the machine lacks — pinned to the versions in
constraints.txt — as wheels for the machine's Python, with all their dependencies, and then
removes the wheels of packages the machine has. run.sh installs what is left, there, with no
network. gpulab itself travels as source (src/).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PLATFORMS = [
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def on_the_machine(path: Path = HERE / "on-the-gpu-machine.txt") -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {normalized(line) for line in lines if line}


def requirements(root: Path = ROOT, have: set[str] | None = None) -> list[str]:
    """The packages of gpulab and of its [test] extra that the machine lacks, as constraints.txt pins them."""
    have = on_the_machine() if have is None else have
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    pins = {}
    for line in (root / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[normalized(name)] = version.strip()
    names = [normalized(re.split(r"[<>=!~ \[;]", requirement, maxsplit=1)[0]) for requirement in wanted]
    return [f"{name}=={pins[name]}" if name in pins else name for name in names if name not in have]


def download_command(dest: Path, python: str, wanted: list[str]) -> list[str]:
    platforms = [flag for platform in PLATFORMS for flag in ("--platform", platform)]
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--python-version",
        python,
        "--implementation",
        "cp",
        *platforms,
        "--dest",
        str(dest),
        *wanted,
    ]


def prune(dest: Path, have: set[str]) -> list[str]:
    """Remove the wheels of packages the machine already has; return their file names."""
    removed = []
    for wheel in sorted(dest.glob("*.whl")):
        if normalized(wheel.name.split("-")[0]) in have:
            wheel.unlink()
            removed.append(wheel.name)
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="3.12", help="the GPU machine's Python version (default: 3.12)")
    parser.add_argument(
        "--dest", type=Path, default=HERE / "wheels", help="where the wheels go (default: wheels/ here)"
    )
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    wanted = requirements()
    print("downloading", " ".join(wanted), "and their dependencies for Python", args.python)
    done = subprocess.run(download_command(args.dest, args.python, wanted))
    if done.returncode != 0:
        print("prepare.py: pip could not download the wheels (is a package registry reachable?)", file=sys.stderr)
        return done.returncode
    removed = prune(args.dest, on_the_machine())
    kept = sorted(p.name for p in args.dest.glob("*.whl"))
    size = sum(p.stat().st_size for p in args.dest.glob("*.whl")) / 2**20
    print(f"{len(kept)} wheels, {size:.1f} MiB, in {args.dest} ({len(removed)} left out: the machine has them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
