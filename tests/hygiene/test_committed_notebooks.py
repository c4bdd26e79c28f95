"""Committed notebooks are sources: no outputs, no execution counts, no widget state."""

import nbformat
import pytest

from gpulab import course

from conftest import ROOT

NOTEBOOKS = sorted(p for folder in course.FOLDERS for p in (ROOT / folder).glob("*.ipynb"))
IDS = [p.relative_to(ROOT).as_posix() for p in NOTEBOOKS]


def test_there_are_lessons():
    assert (ROOT / "notebooks" / "01_devices.ipynb") in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_valid_and_clean(path):
    notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(notebook)
    assert notebook.nbformat == 4
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {index} has outputs"
            assert cell.execution_count is None, f"cell {index} has an execution count"
    assert "widgets" not in notebook.metadata, "widget state is saved in the metadata"
    assert notebook.metadata.kernelspec.name == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_starts_with_the_generated_header(path):
    relative = path.relative_to(ROOT).as_posix()
    notebook = course.read_notebook(path)
    assert course.header_matches(notebook, relative), f"run `gpulab headers` to regenerate {relative}'s header"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_lesson_follows_the_skeleton(path):
    notebook = course.read_notebook(path)
    text = "\n".join(course.cell_source(c) for c in notebook["cells"])
    for heading in ("**In this lesson**", "## Summary", "## Check your understanding", "## Exercises"):
        assert heading in text, f"{path.name} lacks {heading!r}"
    assert "gpulab.widgets.Panel(" in text, f"{path.name} has no live experiment panel"
    assert "Quiz(" in text
    assert sum("NBVAL_CHECK_OUTPUT" in course.cell_source(c) for c in notebook["cells"]) >= 1
