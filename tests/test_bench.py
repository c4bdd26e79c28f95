"""gpulab bench: runs a lesson's code as the notebook would and records each named panel."""

import json
import os
import re
import subprocess
import sys

import pytest

from gpulab import bench, cli, course, reference

from conftest import ROOT, code_cell, notebook

SETUP = "import gpulab\n"

PANEL = '''
def sweep(largest, progress):
    sizes = gpulab.widgets.powers_of_two(1, largest)
    progress(1, 1)
    return {"sizes": sizes, "squares": [n * n for n in sizes]}

def draw(result, figure):
    figure.subplots().plot(result["sizes"], result["squares"])

panel = gpulab.widgets.Panel(sweep, {"largest": gpulab.widgets.log2_slider("largest", 2, 64, 16)},
                             plot=draw, summary=lambda r: f"{len(r['sizes'])} sizes", name=NAME)
panel
'''


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
    assert record["settings"] == {"largest": 16}                      # the panel's defaults
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
    broken = panel_cell("98_broken").replace('progress(1, 1)', 'raise RuntimeError("sensor unplugged")')
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
    lesson = write_lesson(tmp_path, "98_fake", SETUP, "open('scratch.txt', 'w').write('x')")
    bench.run_lesson(lesson, tmp_path / "out")
    assert not (tmp_path / "scratch.txt").exists()
    assert os.getcwd() == str(tmp_path)


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
    assert "97_good" in captured.err and "cell" in captured.err            # the progress bar
    record = json.loads((tmp_path / "out" / "97_squares.json").read_text())
    assert record["command"] == f"gpulab bench {tmp_path / 'out'} --root {tmp_path}"


def test_the_command_exits_2_without_notebooks(tmp_path):
    done = subprocess.run([sys.executable, "-m", "gpulab", "bench", str(tmp_path / "out"), "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("gpulab bench: no notebooks/ folder")


# ---------------------------------------------------------------- the real lessons


def lesson_sources():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = course.read_notebook(path)["cells"]
        yield path, "\n".join(course.cell_source(c) for c in cells if c["cell_type"] == "code")


def test_every_lesson_panel_has_a_unique_name_and_shows_its_reference():
    names = []
    for path, source in lesson_sources():
        panels = source.count("gpulab.widgets.Panel(")
        found = re.findall(r'\bname="([^"]+)"', source)
        assert len(found) == panels, f"{path.name}: {panels} panels, {len(found)} named"
        for name in found:
            assert name.startswith(path.stem[:3]), f"{path.name}: panel {name!r} should start with {path.stem[:3]!r}"
            assert f'gpulab.reference.load("{name}")' in source, f"{path.name}: panel {name!r} shows no reference"
        names += found
    assert len(names) == len(set(names)), f"panel names repeat: {names}"


def gpu_shaped_references():
    # Made-up records shaped like what `gpulab bench` writes on a CUDA machine. They exist only
    # to run the lessons' drawing code with a reference present; nothing here is shipped.
    sizes = [4096, 16384, 65536]
    device = {"device": "cuda:0", "name": "Test GPU", "type": "cuda"}
    header = {"device": device, "torch": "2.11.0", "recorded": "2026-11-21", "command": "gpulab bench out"}
    gbps = {f"{d} {m}": [1.0, 4.0, 9.0] for d in ("host→device", "device→host")
            for m in ("pageable", "pinned", "pinned + non_blocking")}
    return {
        "01_matmul": {**header, "result": {"sizes": [32, 64], "dtype": "float32",
                                           "seconds": {"cpu": [1e-5, 8e-5], "cuda:0": [2e-5, 2e-5]}}},
        "02_bandwidth": {**header, "result": {"device": "cuda:0", "sizes": sizes, "gbps": gbps,
                                              "pin_seconds": [1e-5, 2e-5, 5e-5]}},
        "02_sync": {**header, "result": {"device": "cuda:0", "steps": [1, 4, 16], "seconds_per_step": {
            ".item() every step": [3e-5, 3e-5, 3e-5], "log on the device, sync once": [3e-5, 1e-5, 6e-6]}}},
        "03_throughput": {**header, "result": {"batches": [8, 16], "width": 512,
                                               "samples_per_s": {"cpu": [1e4, 2e4], "cuda:0": [1e4, 3e4]}}},
        "03_placement": {**header, "result": {"device": "cuda:0", "batches": [16, 32], "ms_per_step": {
            "moved every step": [0.3, 0.5], "kept on the device": [0.2, 0.2],
            "moved every step, pinned + non_blocking": [0.25, 0.3]}}},
    }


def test_the_lessons_record_their_panels_and_draw_a_gpu_reference_beside_them(tmp_path, monkeypatch):
    references = tmp_path / "references"
    references.mkdir()
    fake = gpu_shaped_references()
    for name, record in fake.items():
        (references / f"{name}.json").write_text(json.dumps(record))
    monkeypatch.setattr(reference, "_folder", lambda: references)
    recorded = []
    for lesson in bench.find_lessons(ROOT):
        recorded += bench.run_lesson(lesson, tmp_path / "out")
    assert sorted(r.name for r in recorded) == sorted(fake), "every lesson panel is recorded, and each has a reference"
    for item in recorded:
        record = reference.validate(json.loads(item.json_path.read_text()), item.name)
        assert record["lesson"].startswith(item.name[:2]) and record["result"]
        assert item.png_path.read_bytes().startswith(b"\x89PNG")
    summaries = {r.name: r.summary for r in recorded}
    assert "reference Test GPU" in summaries["02_bandwidth"]
    bandwidth = json.loads((tmp_path / "out" / "02_bandwidth.json").read_text())["result"]
    assert bandwidth["sizes"][0] == 4096 and all(v > 0 for values in bandwidth["gbps"].values() for v in values)
