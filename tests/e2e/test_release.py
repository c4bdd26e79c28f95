"""A release a class can pin: what ``python -m build`` makes of the work tree installs and works.

The work tree, as a commit of it would hold it, is copied aside and built there, without build isolation:
with this environment's setuptools (constraints.txt pins it), offline and in seconds. pip's isolated build of
the same tree, from the release's git tag, is what the setup-cell test of tests/e2e/test_colab.py runs.

Two wheels are checked: the one ``python -m build`` makes from the sdist (so the sdist builds, and holds all a
wheel needs: installing the sdist is that same build) and one built straight from the tree, as
``pip install "gpulab @ git+…@vX.Y.Z"`` builds it. Each is installed without its dependencies into a fresh
environment, which sees this one's packages through a ``.pth`` line: a path line, so this environment's own
``.pth`` files, its editable gpulab among them, are not read there. In it ``gpulab info`` runs, every import of
the lessons and exercises works, gpulab is the installed copy at this source's version, and ``gpulab.reference``
loads each H100 record. And the archives: the package whole and nothing beside it in the wheel, with its
dependencies and both licences in its metadata; the package and the release's papers in the sdist; no notebook
(so no solution) in either.
"""

from __future__ import annotations

import ast
import email.parser
import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

import gpulab
from gpulab import course, reference

from conftest import ROOT, copy_work_tree

PACKAGE = ROOT / "src" / "gpulab"
# Files of src/gpulab that are not shipped: the marker that kept the folder in git before it held records.
NOT_SHIPPED = {"reference_results/.keep"}
# What the sdist holds beside src/: the build's own files and the release's papers.
SDIST_TOP = {
    "PKG-INFO",
    "pyproject.toml",
    "setup.cfg",
    "MANIFEST.in",
    "README.md",
    "LICENSE",
    "LICENSE-CONTENT",
    "CHANGELOG.md",
    "CITATION.cff",
}
WHEELS = ("from the sdist", "from the tree")


def run(command: list, **options) -> subprocess.CompletedProcess:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=300, **options)
    assert done.returncode == 0, f"{' '.join(map(str, command))}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def clean_env() -> dict[str, str]:
    """The environment for what runs in a fresh venv: nothing of this work tree's on its path, no simulated GPU."""
    env = {**os.environ, "MPLBACKEND": "Agg", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for variable in ("PYTHONPATH", "GPULAB_SIMULATE", "VIRTUAL_ENV"):
        env.pop(variable, None)
    return env


def only(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, f"{folder}: {pattern} matches {found}"
    return found[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """{"sdist": …, "from the sdist": wheel, "from the tree": wheel}, built from copies of the work tree, and the
    "tree" the sdist was made from."""
    where = tmp_path_factory.mktemp("release")
    build = [sys.executable, "-m", "build", "--no-isolation"]
    for name in ("release", "checkout"):
        copy_work_tree(where / name)
    run([*build, "--outdir", where / "dist", where / "release"], env=clean_env())  # the sdist, then a wheel from it
    run([*build, "--wheel", "--outdir", where / "direct", where / "checkout"], env=clean_env())
    return {
        "tree": where / "release",
        "sdist": only(where / "dist", "gpulab-*.tar.gz"),
        "from the sdist": only(where / "dist", "gpulab-*.whl"),
        "from the tree": only(where / "direct", "gpulab-*.whl"),
    }


def package_files(built: dict[str, Path]) -> set[str]:
    """The files of gpulab that a release ships, relative to its folder: those of the copy of the tree it was built
    from (what git holds, so no stray file of this work tree), but for NOT_SHIPPED."""
    package = built["tree"] / "src" / "gpulab"
    return {path.relative_to(package).as_posix() for path in package.rglob("*") if path.is_file()} - NOT_SHIPPED


def sdist_members(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as archive:
        names = [member.name for member in archive.getmembers() if member.isfile()]
    top = f"gpulab-{gpulab.__version__}/"
    assert all(name.startswith(top) for name in names), names
    return [name.removeprefix(top) for name in names]


def test_the_sdist_holds_the_package_and_the_releases_papers_and_no_notebook(built):
    names = sdist_members(built["sdist"])
    assert not [name for name in names if name.endswith(".ipynb")], "a notebook in the sdist"
    assert {name for name in names if "/" not in name} == SDIST_TOP
    folders = {name.split("/", 1)[0] for name in names if "/" in name}
    assert folders == {"src"}, f"the sdist holds folders beside src/ (tests? notebooks? solutions?): {folders}"
    shipped = {name.removeprefix("src/gpulab/") for name in names if name.startswith("src/gpulab/")}
    expected = package_files(built)
    assert shipped == expected, (
        f"missing: {sorted(expected - shipped)}; not in the package: {sorted(shipped - expected)}"
    )
    with tarfile.open(built["sdist"]) as archive:
        info = archive.extractfile(f"gpulab-{gpulab.__version__}/PKG-INFO").read().decode()
    assert email.parser.Parser().parsestr(info)["Version"] == gpulab.__version__


@pytest.mark.parametrize("wheel", WHEELS)
def test_the_wheel_holds_the_package_its_dependencies_and_licences_and_no_notebook(built, wheel):
    with zipfile.ZipFile(built[wheel]) as archive:
        names = archive.namelist()
        info = f"gpulab-{gpulab.__version__}.dist-info"
        metadata = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        licences = {name: archive.read(f"{info}/licenses/{name}").decode() for name in ("LICENSE", "LICENSE-CONTENT")}
    assert not [name for name in names if name.endswith(".ipynb") or "solutions/" in name], "a notebook in the wheel"
    assert {name.split("/", 1)[0] for name in names} == {"gpulab", info}
    shipped = {name.removeprefix("gpulab/") for name in names if name.startswith("gpulab/")}
    expected = package_files(built)
    assert shipped == expected, (
        f"missing: {sorted(expected - shipped)}; not in the package: {sorted(shipped - expected)}"
    )
    assert metadata["Name"] == "gpulab" and metadata["Version"] == gpulab.__version__
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    required = [Requirement(line) for line in metadata.get_all("Requires-Dist")]
    assert {str(r) for r in required if r.marker is None} == {str(Requirement(line)) for line in declared}
    assert sorted(metadata.get_all("License-File")) == ["LICENSE", "LICENSE-CONTENT"]
    for name, text in licences.items():
        assert text == (ROOT / name).read_text(), f"the wheel's {name} is not the repository's"


def lesson_imports() -> list[str]:
    """Every import statement of the lessons and the exercises (the scripts they write for torchrun included), and
    ``import gpulab.X`` for each module of gpulab they reach as an attribute (``gpulab.widgets.Panel``)."""
    statements = set()
    for folder in ("notebooks", "exercises"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for cell in course.read_notebook(path)["cells"]:
                if cell["cell_type"] != "code":
                    continue
                source = course.cell_source(cell)
                if source.startswith("%%writefile"):
                    source = source.split("\n", 1)[1]
                try:
                    body = ast.parse(source).body
                except SyntaxError:  # an exercise's stub need not parse until it is answered: its import lines do
                    lines = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
                    body = [node for line in lines for node in ast.parse(line).body]
                statements |= {ast.unparse(node) for node in body if isinstance(node, ast.Import | ast.ImportFrom)}
                for name in set(re.findall(r"\bgpulab\.([a-z_]+)\b", source)):
                    if (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file():
                        statements.add(f"import gpulab.{name}")
    return sorted(statements)


CHECK = """\
import importlib.metadata, json, sys
failed = {}
for statement in json.load(open(sys.argv[1]))["imports"]:
    try:
        exec(statement, {})
    except Exception as error:
        failed[statement] = repr(error)
import gpulab, gpulab.reference
json.dump(
    {
        "failed": failed,
        "file": gpulab.__file__,
        "version": gpulab.__version__,
        "distribution": importlib.metadata.version("gpulab"),
        "path": sys.path,
        "records": {name: gpulab.reference.load(name) for name in gpulab.reference.names()},
        "labels": {name: gpulab.reference.gpu_label(gpulab.reference.load(name)) for name in gpulab.reference.names()},
    },
    open(sys.argv[2], "w"),
)
"""


def fresh_environment(where: Path, wheel: Path) -> Path:
    """A new venv at ``where`` holding the wheel, with this environment's packages visible to it; its Python."""
    run([sys.executable, "-m", "venv", "--without-pip", where])
    python = where / "bin" / "python"
    # pip of this environment installs into the new one; the wheel goes in before the .pth line is written, so pip
    # never sees this environment's editable gpulab there.
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel])
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (Path(purelib) / "gpulab-release-test-dependencies.pth").write_text("".join(f"{path}\n" for path in ours))
    return python


@pytest.mark.parametrize("wheel", WHEELS)
def test_the_wheel_installs_and_works_in_a_fresh_environment(built, wheel, tmp_path):
    python = fresh_environment(tmp_path / "venv", built[wheel])
    site_packages = Path(
        run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    )
    # ``gpulab info`` runs, from the console script of the fresh environment
    info = run([tmp_path / "venv" / "bin" / "gpulab", "info"], cwd=tmp_path, env=clean_env())
    assert info.stdout.startswith(f"gpulab {gpulab.__version__} · torch "), info.stdout

    imports = lesson_imports()
    for module in ("gpulab", "gpulab.figures", "gpulab.widgets", "gpulab.reference", "gpulab.distributed"):
        assert f"import {module}" in imports, f"the lessons' imports were not all found: {imports}"
    (tmp_path / "imports.json").write_text(json.dumps({"imports": imports}))
    # -I: neither the current folder nor PYTHONPATH is on the path; the fresh environment's .pth files are read
    run([python, "-I", "-c", CHECK, tmp_path / "imports.json", tmp_path / "found.json"], cwd=tmp_path, env=clean_env())
    found = json.loads((tmp_path / "found.json").read_text())
    assert not found["failed"], f"imports of the lessons that fail where the wheel is installed: {found['failed']}"
    assert Path(found["file"]).is_relative_to(site_packages), f"gpulab imported from {found['file']}, not the wheel"
    # the editable gpulab of this environment (its source folder on the path by a .pth file there) is not reachable
    editable = {str(PACKAGE.parent), str(Path(gpulab.__file__).parents[1])}
    assert not editable & set(found["path"]), found["path"]
    assert found["version"] == found["distribution"] == gpulab.__version__
    assert set(found["records"]) == {
        path.stem for path in (built["tree"] / "src/gpulab/reference_results").glob("*.json")
    }
    assert found["records"] == {name: reference.load(name) for name in reference.names()}
    assert found["records"] and all("H100" in label for label in found["labels"].values()), found["labels"]
