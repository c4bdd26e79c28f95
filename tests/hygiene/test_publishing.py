"""What a department needs to adopt the course: its licences, how to cite it, how to change it, what changed.

The code is MIT (``LICENSE``), the lessons' text and figures CC BY 4.0 (``LICENSE-CONTENT``); the package's
metadata and the README name both. ``CITATION.cff`` is CFF 1.2 (``cffconvert --validate`` accepts it; here its
required fields and their agreement with the package are held). ``CONTRIBUTING.md`` names the commands a change
needs, and ``CHANGELOG.md`` keeps the Keep a Changelog form.
"""

import re

import tomllib
import yaml

import gpulab
from gpulab import course

from conftest import ROOT

KEEP_A_CHANGELOG = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_code_is_mit_and_the_package_says_so():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text and 'THE SOFTWARE IS PROVIDED "AS IS"' in text
    project = pyproject()
    assert "MIT" in project["license"].split(" AND ")  # an SPDX expression (PEP 639)
    assert {"LICENSE", "LICENSE-CONTENT"} <= set(project["license-files"])


def test_the_lessons_text_and_figures_are_cc_by_4_and_the_package_says_so():
    text = (ROOT / "LICENSE-CONTENT").read_text()
    assert text.startswith("Creative Commons Attribution 4.0 International (CC BY 4.0)")
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in text
    assert "CC-BY-4.0" in pyproject()["license"].split(" AND ")


def test_the_readme_names_both_licences_and_their_files():
    readme = (ROOT / "README.md").read_text()
    section = " ".join(readme.split("## Licence, citing and contributing", 1)[1].split("\n## ", 1)[0].split())
    for words in (
        "MIT License",
        "`LICENSE`",
        "Creative Commons Attribution 4.0",
        "`LICENSE-CONTENT`",
        "`CITATION.cff`",
        "`CONTRIBUTING.md`",
        "`CHANGELOG.md`",
    ):
        assert words in section, f"the README's licence section does not say {words}"


def test_citation_cff_has_cff_1_2s_required_fields_and_agrees_with_the_package():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert citation["message"].strip() and citation["title"].strip()
    assert citation["authors"] and all(
        author.get("name") or author.get("family-names") for author in citation["authors"]
    )
    assert citation["version"] == gpulab.__version__, "cutting a release updates CITATION.cff (README, Releases)"
    assert set(citation["license"]) == {"MIT", "CC-BY-4.0"}
    assert citation["repository-code"] == f"https://github.com/{course.REPOSITORY}"


def test_contributing_names_the_commands_a_change_needs():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for command in ("make check", "make test", "gpulab assign", "gpulab headers", "GPULAB_SIMULATE=t4"):
        assert command in text, f"CONTRIBUTING.md does not say how to run {command}"
    section = re.search(r"README's section \*\*(.+?)\*\*", text).group(1)
    assert f"## {section}" in (ROOT / "README.md").read_text(), f"the README has no section {section!r}"


def test_the_changelog_keeps_a_changelogs_form():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog\n") and "keepachangelog.com" in text
    releases = re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)
    assert releases and releases[0] == "Unreleased", "the newest section comes first and is Unreleased"
    kinds = set(re.findall(r"^### (.+)$", text, flags=re.M))
    assert kinds and kinds <= KEEP_A_CHANGELOG, f"sections Keep a Changelog does not name: {kinds - KEEP_A_CHANGELOG}"


def test_the_newest_release_in_the_changelog_is_the_packages_version_and_the_citations():
    # main's version is the last release's (its notebooks install that tag) until the next one is cut
    text = (ROOT / "CHANGELOG.md").read_text()
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", text, flags=re.M)
    assert released, "no release in the changelog"
    version, date = released[0]
    assert version == gpulab.__version__
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert (citation["version"], str(citation["date-released"])) == (version, date)
    links = dict(re.findall(r"^\[([^\]]+)\]: (\S+)$", text, flags=re.M))
    assert links["Unreleased"].endswith(f"/compare/v{version}...HEAD")
    assert links[version].endswith(f"/releases/tag/v{version}")


def test_the_pages_workflow_publishes_what_make_site_builds():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    steps = workflow["jobs"]["build"]["steps"]
    assert {"run": "make site"} in steps
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "site"
    assert any(step.get("uses", "").startswith("actions/deploy-pages") for step in workflow["jobs"]["deploy"]["steps"])
    assert re.search(r"^site: ", (ROOT / "Makefile").read_text(), flags=re.M)
    assert "/site/" in (ROOT / ".gitignore").read_text().split()  # built, never committed


def test_the_version_is_written_once_in_the_package():
    project = pyproject()
    assert "version" not in project and "version" in project["dynamic"]
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "gpulab.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", gpulab.__version__)


def test_the_readme_says_how_a_release_is_cut_and_how_a_semester_is_pinned():
    readme = (ROOT / "README.md").read_text()
    section = " ".join(readme.split("## Releases", 1)[1].split("\n## ", 1)[0].split())
    for words in (
        "`__version__`",
        "`CHANGELOG.md`",
        "`CITATION.cff`",
        "gpulab headers",
        "make test",
        "git tag -a vX.Y.Z",
        "git push origin main vX.Y.Z",
        "git clone --branch vX.Y.Z",
        f'pip install "gpulab @ git+https://github.com/{course.REPOSITORY}@vX.Y.Z"',
    ):
        assert words in section, f"the README's Releases section does not say {words}"
