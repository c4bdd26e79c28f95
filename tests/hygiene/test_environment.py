"""environment.yml, pyproject.toml, the constraints files and the Makefile agree."""

import re

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from conftest import ROOT

CONDA_NAMES = {"pytorch": "torch", "python-build": "build"}


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def declared_by_pyproject():
    project = pyproject()["project"]
    requirements = list(project["dependencies"])
    for items in project["optional-dependencies"].values():
        requirements += [r for r in items if not r.startswith("gpulab")]
    return {Requirement(r).name.lower(): str(Requirement(r).specifier) for r in requirements}


def declared_by_environment():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    declared = {}
    # conda's packages, and the few that conda-forge lacks, installed by pip
    pip_section = [item for entry in environment["dependencies"] if isinstance(entry, dict) for item in entry["pip"]]
    for item in environment["dependencies"] + [i for i in pip_section if not i.startswith("-")]:
        if isinstance(item, dict) or item.split(">")[0].split("=")[0].split("<")[0] in {"python", "pip"}:
            continue
        requirement = Requirement(item)
        declared[CONDA_NAMES.get(requirement.name, requirement.name).lower()] = str(requirement.specifier)
    return declared


def constraints(name):
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            pins[requirement.name.lower().replace("_", "-")] = requirement
    return pins


def test_environment_yml_declares_what_pyproject_declares():
    assert declared_by_environment() == declared_by_pyproject()


def test_environment_yml_installs_gpulab_itself():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))
    assert "-e ." in pip_section


def test_package_asks_only_a_loose_torch():
    torch_spec = Requirement(next(r for r in pyproject()["project"]["dependencies"] if r.startswith("torch"))).specifier
    assert str(torch_spec) == ">=2.6"
    assert Version("2.6.0") in torch_spec and Version("3.0") in torch_spec


def test_constraints_pin_torch_and_satisfy_the_package():
    declared = {
        Requirement(r).name.lower().replace("_", "-"): Requirement(r).specifier
        for r in pyproject()["project"]["dependencies"]
    }
    for name in ("constraints.txt", "constraints-colab.txt"):
        pins = constraints(name)
        assert str(pins["torch"].specifier).startswith("=="), name
        for package, requirement in pins.items():
            if package in declared:
                pinned = Version(str(requirement.specifier).lstrip("="))
                assert pinned in declared[package], f"{name}: {package} {pinned} violates {declared[package]}"
    assert str(constraints("constraints-colab.txt")["ipywidgets"].specifier) == "==7.7.1"


def test_makefile_installs_with_the_constraints_and_ci_runs_make_test():
    makefile = (ROOT / "Makefile").read_text()
    assert "-c constraints.txt" in makefile and "-c constraints-colab.txt" in makefile
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
