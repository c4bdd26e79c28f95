"""The README's recipes, "Adding a panel" and "Adding an exercise", followed step by step on a made-up
lesson, 98_demo, in a folder of its own: if a step stops working as the README says, a test here fails."""

import importlib.util
import shutil

import pytest

from gpulab import bench, course, figures, grading, plots, reference

from conftest import ROOT, code_cell, notebook

LESSON = "98_demo"
PUBLISHED_KEY = "copy-t4-pcie"


@pytest.fixture
def registry(monkeypatch):
    """The figures' registry and the course's lessons, as they were again after the test."""
    monkeypatch.setattr(figures, "PANELS", dict(figures.PANELS))
    monkeypatch.setitem(course.LESSONS, LESSON, "A made-up lesson")


@pytest.fixture
def records(tmp_path, monkeypatch):
    """An empty reference_results folder: what ships before the panel's GPU run."""
    folder = tmp_path / "reference_results"
    folder.mkdir()
    monkeypatch.setattr(reference, "_folder", lambda: folder)
    return folder


def header_cells(relative):
    title, setup = course.header_cells(relative)
    return [
        {"cell_type": "markdown", "id": "title", "metadata": {}, "source": title},
        dict(code_cell(setup), id="setup"),
    ]


# ---------------------------------------------------------------- adding a panel

SWEEP = """
import gpulab

def squares(largest, progress):
    sizes = gpulab.widgets.powers_of_two(1, largest)
    progress(1, 1)
    return {"device": "cpu", "sizes": sizes, "seconds": {"cpu": [n * 1e-6 for n in sizes]}}
"""
PANEL = """
demo_panel = gpulab.widgets.Panel(
    squares,
    {"largest": gpulab.widgets.log2_slider("largest", 2, 64, 16)},
    plot=gpulab.figures.demo,
    estimate_s=lambda largest: largest * 1e-6,
    title="A made-up experiment",
)
demo_panel
"""


def test_adding_a_panel(tmp_path, registry, records, monkeypatch):
    # 1. The figure, registered under the panel's name: the one place the name is written.
    @figures.panel(LESSON, published=(PUBLISHED_KEY,))
    def demo(result, figure):
        record = reference.load(demo.panel_name)
        ax = figure.subplots()
        plots.series(ax, result, x="sizes", y="seconds", scale=1e6, by_device=True, reference=record)
        if record is None:
            plots.note(figure, reference.NOT_RECORDED)
        plots.legend(figure)

    monkeypatch.setattr(figures, "demo", demo, raising=False)  # as `def demo` in figures.py makes it
    assert figures.PANELS[LESSON] is demo and demo.panel_name == LESSON

    # 2. The panel in the lesson, with no name of its own: it takes its figure's.
    relative = f"notebooks/{LESSON}.ipynb"
    lesson = tmp_path / relative
    lesson.parent.mkdir()
    course.write_notebook(
        notebook(header_cells(relative) + [dict(code_cell(SWEEP), id="sweep"), dict(code_cell(PANEL), id="panel")]),
        lesson,
    )
    assert "name=" not in PANEL

    # 3. Its record: gpulab bench runs the lesson and writes NAME.json and NAME.png under the figure's name.
    assert bench.find_lessons(tmp_path, ["98"]) == [lesson]
    (recorded,) = bench.run_lesson(lesson, tmp_path / "bench-results")
    assert recorded.name == LESSON and recorded.panel.name == LESSON and recorded.panel.plot is demo
    assert recorded.json_path.name == f"{LESSON}.json" and recorded.png_path.read_bytes().startswith(b"\x89PNG")
    before = plots.new_figure()
    demo(recorded.panel.result, before)
    assert reference.NOT_RECORDED in before._supxlabel.get_text()

    # Copied into reference_results/, the record is the one the figure draws beside the reader's curve.
    shutil.copy(recorded.json_path, records / recorded.json_path.name)
    assert reference.names() == [LESSON] and reference.load(demo) == reference.load(LESSON)
    after = plots.new_figure()
    demo(recorded.panel.result, after)
    gids = [line.get_gid() for line in after.axes[0].get_lines()]
    assert "yours|cpu" in gids and after._supxlabel is None
    assert reference.describe(demo).startswith("reference: ")

    # 4. Published figures: named by key where the figure is registered.
    assert [entry.key for entry in reference.published(demo.published_keys)] == [PUBLISHED_KEY]


def test_a_panel_without_a_registered_figure_is_not_recorded(tmp_path, registry):
    # The step the recipe cannot skip: a plot that is no registered figure gives the panel no name.
    relative = f"notebooks/{LESSON}.ipynb"
    lesson = tmp_path / relative
    lesson.parent.mkdir()
    unregistered = PANEL.replace("plot=gpulab.figures.demo", "plot=lambda result, figure: figure.subplots()")
    course.write_notebook(
        notebook(
            header_cells(relative) + [dict(code_cell(SWEEP), id="sweep"), dict(code_cell(unregistered), id="panel")]
        ),
        lesson,
    )
    assert bench.run_lesson(lesson, tmp_path / "bench-results") == []


# ---------------------------------------------------------------- adding an exercise

TASK = (
    "**Exercise (scale).** Write `scale(values, factor)`: it returns a new list with each value multiplied by "
    "`factor`, and leaves `values` unchanged."
)
CONSTRAINTS = {"each-value": "each value multiplied by `factor`", "untouched": "leaves `values` unchanged"}
ANSWER = """def scale(values, factor):
    ### BEGIN SOLUTION
    return [value * factor for value in values]
    ### END SOLUTION"""
CHECKS = [
    (
        {"check": "scale-values", "exercise": "scale", "points": 2, "enforces": ["each-value"]},
        'assert scale([1, 2], 3) == [3, 6], f"expected [3, 6], got {scale([1, 2], 3)}"\n'
        "### BEGIN HIDDEN TESTS\n"
        'assert scale([0.5], -2) == [-1.0], f"expected [-1.0], got {scale([0.5], -2)}"\n'
        "### END HIDDEN TESTS",
    ),
    (
        {"check": "scale-untouched", "exercise": "scale", "points": 1, "enforces": ["each-value", "untouched"]},
        "values = [1, 2]\n"
        'assert scale(values, 3) == [3, 6] and values == [1, 2], f"expected [3, 6] and [1, 2] unchanged, found {values}"',
    ),
]
ANSWERS = '''"""Answers students write for lesson 98's exercise (see test_answers.py)."""

RIGHT = {
    "scale": [
        ("a loop", "def scale(values, factor):\\n    out = []\\n    for v in values:\\n"
                   "        out.append(v * factor)\\n    return out"),
        ("map", "def scale(values, factor):\\n    return list(map(lambda v: v * factor, values))"),
        ("a copy scaled in place", "def scale(values, factor):\\n    out = list(values)\\n"
                                   "    for i, v in enumerate(out):\\n        out[i] = v * factor\\n    return out"),
    ],
}

WRONG = {
    "scale": [
        ("adds the factor", "def scale(values, factor):\\n    return [v + factor for v in values]", "each-value",
         False),
        ("scales the list it was given", "def scale(values, factor):\\n    values[:] = [v * factor for v in values]\\n"
                                         "    return values", "untouched", False),
    ],
}

EDGES = {"scale": [("an empty list", "assert scale([], 5) == []")]}
'''


def solution_notebook():
    relative = f"solutions/{LESSON}.ipynb"
    cells = header_cells(relative) + [
        {"cell_type": "markdown", "id": "task", "metadata": {}, "source": TASK},
        dict(code_cell(ANSWER, {"gpulab": {"answer": "scale", "constraints": CONSTRAINTS}}), id="answer"),
    ]
    cells += [dict(code_cell(source, {"gpulab": role}), id=role["check"]) for role, source in CHECKS]
    return notebook(cells, gpulab={"lesson": LESSON})


def answers_test_module(root, monkeypatch):
    """tests/e2e/test_answers.py, reading the made-up lesson's solutions, exercises and answers under ``root``."""
    spec = importlib.util.spec_from_file_location("recipe_test_answers", ROOT / "tests" / "e2e" / "test_answers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", root)
    monkeypatch.setattr(module, "ANSWERS", root / "tests" / "e2e" / "answers")
    monkeypatch.setattr(module, "LESSONS", [LESSON])
    return module


def test_adding_an_exercise(tmp_path, registry, monkeypatch):
    # 1-2. The solution notebook: the task, the answer cell and its check cells, with their roles.
    (tmp_path / "solutions").mkdir()
    course.write_notebook(solution_notebook(), tmp_path / "solutions" / f"{LESSON}.ipynb")

    # 3. gpulab assign: the exercise, with a stub for the answer and no hidden tests.
    assert grading.assign(tmp_path) == [f"exercises/{LESSON}.ipynb"]
    assert grading.assign(tmp_path, check=True) == []
    exercise = course.read_notebook(tmp_path / "exercises" / f"{LESSON}.ipynb")
    sources = [course.cell_source(cell) for cell in exercise["cells"]]
    assert any("raise NotImplementedError()" in source and "def scale" in source for source in sources)
    assert not any("HIDDEN" in source or "value * factor" in source for source in sources)

    # 4. The answers, as tests/e2e/test_answers.py reads them.
    answers = tmp_path / "tests" / "e2e" / "answers"
    answers.mkdir(parents=True)
    (answers / f"answers_{LESSON}.py").write_text(ANSWERS, encoding="utf-8")
    checks = answers_test_module(tmp_path, monkeypatch)
    checks.test_every_exercise_has_right_and_wrong_answers()
    checks.test_every_constraint_of_every_task_is_quoted_and_enforced_by_a_check(LESSON)
    checks.test_every_constraint_has_a_wrong_answer_that_breaks_it_alone(LESSON)
    checks.test_reference_solutions_are_right_at_their_edges(LESSON)

    # The grader, on every round of answers: full marks for the right ones, exactly the enforcing checks lost
    # for the wrong ones, every check lost for an answer that does nothing; the exercise as handed out scores 0.
    submissions = [
        checks.submission(LESSON, checks.round_of(LESSON, number)[0], tmp_path / f"round-{number}.ipynb")
        for number in range(checks.rounds(LESSON))
    ]
    untouched = tmp_path / "exercises" / f"{LESSON}.ipynb"
    *reports, handed_out = grading.grade_many(
        submissions + [untouched], timeout=30, solutions=tmp_path / "solutions", sandboxed=False
    )
    assert len(reports) >= 7  # three right, two wrong, three that do nothing
    for number, report in enumerate(reports):
        ((what, fails),) = checks.round_of(LESSON, number)[1].values()
        assert set(checks.failed_checks(report)["scale"]) == fails, f"{what}: {checks.failed_checks(report)}"
        assert (report.total == report.max_total) == (not fails), f"{what}: {report.total} of {report.max_total}"
    assert reports[0].total == reports[0].max_total == 3
    assert handed_out.total == 0 and handed_out.max_total == 3
