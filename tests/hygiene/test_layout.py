"""The layout shows the parts: every module's name says which one it is, and the unit tests mirror the package.

- No two modules of gpulab share a name, in whatever packages they sit (``gpulab.memory`` beside a
  ``gpulab.simulated.memory`` made a reader ask which one a traceback meant), and no module is named
  like a package.
- ``tests/unit/`` mirrors ``src/gpulab/``: ``tests/unit/PATH/test_NAME.py`` tests the module
  ``src/gpulab/PATH/NAME.py``, or the package ``PATH`` itself when NAME is the package's name.
- The README's layout names every package and module, so a newcomer finds each one there.
- No two test modules share a file name (pytest imports each by it).
"""

import collections
import re

from conftest import ROOT

PACKAGE = ROOT / "src" / "gpulab"
UNIT = ROOT / "tests" / "unit"


def modules() -> list[str]:
    """Every module of gpulab as a dotted path below it (``checks.replace``), packages included."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and parts[-1] != "__main__":
            found.append(".".join(parts))
    return found


def test_no_two_modules_share_a_name():
    by_name = collections.defaultdict(list)
    for module in modules():
        by_name[module.rsplit(".", 1)[-1].lstrip("_")].append(f"gpulab.{module}")
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"modules that share a name: {shared}"


def test_the_unit_tests_mirror_the_package():
    known = {module.replace("._", ".").lstrip("_") for module in modules()}  # _processes: test_processes.py
    strays = []
    for test in sorted(UNIT.rglob("test_*.py")):
        folder = test.parent.relative_to(UNIT).parts
        name = test.stem.removeprefix("test_")
        module = ".".join((*folder, name))
        if module not in known and not (folder and name == folder[-1]):
            strays.append(test.relative_to(ROOT).as_posix())
    assert not strays, f"unit tests that name no module of src/gpulab at their place: {strays}"


def test_the_unit_test_folders_are_the_packages():
    packages = {path.parent.relative_to(PACKAGE) for path in PACKAGE.rglob("__init__.py")}
    folders = {path.relative_to(UNIT) for path in UNIT.rglob("*") if path.is_dir() and path.name != "__pycache__"}
    assert folders <= packages, (
        f"folders of tests/unit that are no package of gpulab: {sorted(map(str, folders - packages))}"
    )


def test_the_readme_layout_names_every_module():
    readme = (ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", layout))
    missing = [module for module in modules() if module.rsplit(".", 1)[-1] not in words]
    assert not missing, f"README's Layout does not name {missing}"


def test_every_test_module_has_a_name_of_its_own():
    # pytest imports a test module by its file's name, from its folder: two of one name, and one is not collected.
    by_name = collections.defaultdict(list)
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name != "__init__.py":
            by_name[path.stem].append(path.relative_to(ROOT).as_posix())
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"test modules that share a name: {shared}"
