"""gpulab bench: runs a lesson's code as the notebook would and records each named panel."""

import json
import os
import re
import subprocess
import sys

import pytest
import torch

from gpulab import bench, cli, course, distributed, figures, plots, reference, widgets
from gpulab.memory import TensorLedger
from gpulab.widgets import Panel

from conftest import ROOT, code_cell, notebook, requires_cuda, simulates

SETUP = "import gpulab\n"

PANEL = """
def sweep(largest, progress):
    sizes = gpulab.widgets.powers_of_two(1, largest)
    progress(1, 1)
    return {"sizes": sizes, "squares": [n * n for n in sizes]}

def draw(result, figure):
    figure.subplots().plot(result["sizes"], result["squares"])

panel = gpulab.widgets.Panel(sweep, {"largest": gpulab.widgets.log2_slider("largest", 2, 64, 16)},
                             plot=draw, summary=lambda r: f"{len(r['sizes'])} sizes", name=NAME)
panel
"""


def write_lesson(root, stem, *sources):
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": f"# {stem}"}]
    cells += [dict(code_cell(source), id=f"c{i}") for i, source in enumerate(sources)]
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    course.write_notebook(notebook(cells), root / "notebooks" / f"{stem}.ipynb")
    return root / "notebooks" / f"{stem}.ipynb"


def panel_cell(name):
    return PANEL.replace("NAME", repr(name))


def test_a_named_panel_is_recorded_as_json_and_png(tmp_path):
    lesson = write_lesson(tmp_path, "98_fake", SETUP, panel_cell("98_squares"))
    recorded = bench.run_lesson(lesson, tmp_path / "out", command="gpulab bench out")
    assert [r.name for r in recorded] == ["98_squares"]
    record = json.loads((tmp_path / "out" / "98_squares.json").read_text())
    assert reference.validate(record, "98_squares") is record
    assert record["lesson"] == "98_fake" and record["command"] == "gpulab bench out"
    assert record["settings"] == {"largest": 16}  # the panel's defaults
    assert record["result"] == {"sizes": [1, 2, 4, 8, 16], "squares": [1, 4, 16, 64, 256]}
    assert record["device"]["type"] in {"cpu", "cuda", "mps", "xpu"}
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", record["recorded"])
    assert (tmp_path / "out" / "98_squares.png").read_bytes().startswith(b"\x89PNG")
    assert recorded[0].summary == "5 sizes"


def test_unnamed_panels_are_run_but_not_recorded(tmp_path):
    lesson = write_lesson(tmp_path, "98_fake", SETUP, panel_cell(None))
    assert bench.run_lesson(lesson, tmp_path / "out") == []
    assert list((tmp_path / "out").iterdir()) == []


def test_a_failing_cell_names_the_lesson_and_the_cell(tmp_path):
    lesson = write_lesson(tmp_path, "98_fake", SETUP, "print('working')\n1 / 0")
    with pytest.raises(bench.BenchError, match=r"98_fake.ipynb, code cell 2: ZeroDivisionError"):
        bench.run_lesson(lesson, tmp_path / "out")


def test_a_failing_panel_is_an_error_not_a_record(tmp_path):
    broken = panel_cell("98_broken").replace("progress(1, 1)", 'raise RuntimeError("sensor unplugged")')
    lesson = write_lesson(tmp_path, "98_fake", SETUP, broken)
    with pytest.raises(bench.BenchError, match="panel '98_broken' failed: RuntimeError: sensor unplugged"):
        bench.run_lesson(lesson, tmp_path / "out")
    assert not (tmp_path / "out" / "98_broken.json").exists()


def test_a_result_json_cannot_hold_is_explained(tmp_path):
    odd = panel_cell("98_odd").replace('return {"sizes"', 'return {"when": object(), "sizes"')
    lesson = write_lesson(tmp_path, "98_fake", SETUP, odd)
    with pytest.raises(bench.BenchError, match=r"98_odd's result\['when'\] holds a object"):
        bench.run_lesson(lesson, tmp_path / "out")


def test_two_panels_with_one_name_are_refused(tmp_path):
    lesson = write_lesson(tmp_path, "98_fake", SETUP, panel_cell("98_same"), panel_cell("98_same"))
    with pytest.raises(bench.BenchError, match="two panels are named '98_same'"):
        bench.run_lesson(lesson, tmp_path / "out")


def test_files_a_lesson_writes_stay_out_of_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lesson = write_lesson(
        tmp_path,
        "98_fake",
        SETUP,
        "open('scratch.txt', 'w').write('x')",
        "scripts = gpulab.distributed.scratch_folder(); (scripts / 'job.py').write_text('pass')",
    )
    monkeypatch.setattr(distributed, "_SCRATCH", None)
    monkeypatch.setattr(distributed, "_remove_orphans", lambda: None)
    monkeypatch.setattr(distributed.subprocess, "Popen", lambda *args, **kwargs: None)  # no janitor for this test
    monkeypatch.setattr(distributed.tempfile, "tempdir", str(tmp_path))
    bench.run_lesson(lesson, tmp_path / "out")
    assert not (tmp_path / "scratch.txt").exists()
    assert os.getcwd() == str(tmp_path)
    assert not list(tmp_path.glob("gpulab-scripts-*")), "the scripts a lesson wrote go with it"


def test_lessons_run_in_a_clean_namespace(tmp_path):
    first = write_lesson(tmp_path, "97_first", SETUP, "leftover = 1")
    second = write_lesson(tmp_path, "98_second", SETUP, "assert 'leftover' not in globals()")
    bench.run_lesson(first, tmp_path / "out")
    bench.run_lesson(second, tmp_path / "out")


def test_the_bench_never_borrows_a_running_shell(tmp_path, monkeypatch):
    # Inside a Jupyter kernel, resetting the shell would wipe the reader's variables.
    from IPython.core.interactiveshell import InteractiveShell

    lesson = write_lesson(tmp_path, "98_fake", SETUP, "x = 1")
    monkeypatch.setattr(bench, "_SHELL", None)
    monkeypatch.setattr(InteractiveShell, "initialized", classmethod(lambda cls: True))
    with pytest.raises(bench.BenchError, match="cannot run inside one that is already running"):
        bench.run_lesson(lesson, tmp_path / "out")


def test_lessons_are_chosen_by_number_or_name(tmp_path):
    write_lesson(tmp_path, "97_first", SETUP)
    write_lesson(tmp_path, "98_second", SETUP)
    assert [p.stem for p in bench.find_lessons(tmp_path)] == ["97_first", "98_second"]
    assert [p.stem for p in bench.find_lessons(tmp_path, ["98"])] == ["98_second"]
    assert [p.stem for p in bench.find_lessons(tmp_path, ["97_first"])] == ["97_first"]
    with pytest.raises(bench.BenchError, match="no lesson 42"):
        bench.find_lessons(tmp_path, ["42"])
    with pytest.raises(bench.BenchError, match="no notebooks/ folder"):
        bench.find_lessons(tmp_path / "elsewhere")


def test_the_command_reports_progress_files_and_failures(tmp_path, capsys):
    write_lesson(tmp_path, "97_good", SETUP, panel_cell("97_squares"))
    write_lesson(tmp_path, "98_bad", SETUP, "raise ValueError('nope')")
    code = cli.main(["bench", str(tmp_path / "out"), "--root", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1
    assert "97_squares" in captured.out and "97_squares.json" in captured.out
    assert "1 experiment(s) recorded" in captured.out and "1 lesson(s) failed" in captured.out
    assert "98_bad.ipynb, code cell 2: ValueError: nope" in captured.err
    assert "97_good" in captured.err and "cell" in captured.err  # the progress bar
    record = json.loads((tmp_path / "out" / "97_squares.json").read_text())
    assert record["command"] == f"gpulab bench {tmp_path / 'out'} --root {tmp_path}"


def test_the_command_exits_2_without_notebooks(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "bench", str(tmp_path / "out"), "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith("gpulab bench: no notebooks/ folder")


# ---------------------------------------------------------------- the real lessons


def lesson_sources():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = course.read_notebook(path)["cells"]
        yield path, "\n".join(course.cell_source(c) for c in cells if c["cell_type"] == "code")


def test_every_lesson_panel_is_drawn_and_named_by_its_figure_and_sized_by_an_estimate():
    names = []
    for path, source in lesson_sources():
        panels = source.count("gpulab.widgets.Panel(")
        drawn_by = re.findall(r"\bplot=gpulab\.figures\.(\w+)", source)
        assert len(drawn_by) == source.count("estimate_s=") == panels, (
            f"{path.name}: every panel is drawn by a gpulab.figures function and sized by an estimate_s"
        )
        assert not re.search(r'\bname="\d\d_', source), f"{path.name}: a panel's name is its figure's, not given again"
        for function in drawn_by:
            name = getattr(getattr(figures, function), "panel_name", None)
            assert figures.PANELS.get(name) is getattr(figures, function), (
                f"{path.name}: gpulab.figures.{function} is no panel's figure (register it with @figures.panel)"
            )
            assert name.startswith(path.stem[:3]), f"{path.name}: panel {name!r} should start with {path.stem[:3]!r}"
        names += drawn_by
    assert len(names) == len(set(names)), f"a figure draws two panels: {names}"


@pytest.fixture(scope="module")
def lesson_04(tmp_path_factory):
    """The namespace of lesson 04's code cells, run as plain Python (panels are made, not shown)."""
    from IPython.display import display

    namespace = {"display": display, "__name__": "lesson_04"}
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("lesson-04"))
    try:
        for cell in course.read_notebook(ROOT / "notebooks" / "04_memory.ipynb")["cells"]:
            if cell["cell_type"] == "code":
                exec(compile(course.cell_source(cell), "04_memory.ipynb", "exec"), namespace)
    finally:
        os.chdir(here)
    return namespace


def test_the_largest_batch_is_found_by_bisection_with_the_out_of_memory_error_caught(lesson_04):
    namespace = lesson_04
    tried = []

    def estimate(batch):
        tried.append(batch)
        return 8 * 2**20 + 18_000 * batch

    budget = 32 * 2**20
    best, back = namespace["largest_batch_within"](budget, torch.device("cpu"), estimate)
    assert best == (budget - 8 * 2**20) // 18_000 and back is None  # nothing was allocated on the CPU
    assert len(tried) <= 26, f"bisection over 2**24 sizes took {len(tried)} tries"
    assert namespace["largest_batch_within"](2**20, torch.device("cpu"), estimate) == (None, None)


def test_a_panel_that_runs_out_of_memory_gives_it_all_back_and_runs_again(lesson_04):
    # The lesson's own allocate() raises torch.OutOfMemoryError past the pretend card on a CPU, and
    # really runs out on a GPU: the same except path either way.
    namespace = lesson_04
    device = namespace["device"]
    ledger = TensorLedger(device)

    def greedy_step(progress, fail):
        kept = namespace["allocate"](64 * 2**20)  # what the step holds when it runs out
        if fail:
            namespace["allocate"](namespace["too_much"])
        return kept.numel()

    panel = Panel(greedy_step, {"fail": widgets.checkbox("fail", True)})
    with ledger:
        assert panel.run() is None
    assert isinstance(panel.error, torch.OutOfMemoryError) and "out of memory" in panel.status.value
    assert ledger.live_bytes == 0, f"{ledger.live_bytes:,} bytes of the failed run are still allocated"
    panel.controls["fail"].value = False
    assert panel.run() == 64 * 2**20 and panel.error is None


@requires_cuda
def test_on_cuda_the_budget_really_limits_the_process_and_memory_comes_back(lesson_04):
    namespace = lesson_04
    device = torch.device("cuda", torch.cuda.current_device())
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated(device)
    best, back = namespace["largest_batch_within"](512 * 2**20, device, lambda batch: 0)
    assert best is not None and back is True
    assert torch.cuda.memory_allocated(device) == before
    big = torch.empty(768 * 2**20, dtype=torch.uint8, device=device)  # over the budget: the limit was lifted
    del big


@simulates
def test_on_a_simulated_machine_the_bench_draws_figures_and_records_nothing(tmp_path):
    """A simulated GPU's timings are this CPU's: no reference record may come of them (issue: point 3)."""
    write_lesson(
        tmp_path, "98_fake", SETUP + "import torch\nassert torch.cuda.is_available()\n", panel_cell("98_squares")
    )
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "bench", str(tmp_path / "out"), "--root", str(tmp_path)],
        env={**os.environ, "GPULAB_SIMULATE": "t4"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["98_squares.png"]
    assert "simulated machine" in done.stdout and "no records" in done.stdout
    from gpulab import simulated

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulated, "is_simulating", lambda: True)
        with pytest.raises(bench.BenchError, match="simulated"):
            bench.record_of(Panel(lambda progress: {}, {}, name="98_x"), "98_fake", "gpulab bench")


@simulates
def test_a_figure_drawn_on_a_simulated_machine_says_so():
    """Nothing simulated passes for a GPU's result: every figure gpulab makes there carries the note, and
    every panel's status line."""
    code = (
        "from gpulab import plots\nfrom gpulab.widgets import Panel\nimport torch\nassert torch.cuda.is_available()\n"
        "panel = Panel(lambda progress: {}, {}, summary=lambda result: 'ran')\npanel.run()\n"
        "print(plots.SIMULATED_NOTE in plots.new_figure().__dict__.get('_gpulab_notes', []),"
        " panel.summary_line)"
    )
    outputs = {}
    for machine in ("t4", None):
        env = {k: v for k, v in os.environ.items() if k != "GPULAB_SIMULATE"}
        if machine:
            env["GPULAB_SIMULATE"] = machine
        done = subprocess.run(
            [sys.executable, "-c", code if machine else code.replace("assert torch", "# ")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        outputs[machine] = done.stdout.strip() or done.stderr[-500:]
    # and so does a panel's status line
    assert outputs == {"t4": f"True ran · {plots.SIMULATED_LINE}", None: "False ran"}
