"""A pytest plugin for nbval runs on a simulated machine: every cell's output, read as a student would.

tests/e2e/test_simulated_course.py runs ``pytest -p nbval_outputs notebooks solutions`` with
``GPULAB_SIMULATE`` set and this folder on ``PYTHONPATH``. For every executed cell the plugin

- fails the cell when its output says it needs hardware the simulated machine has ("needs a CUDA
  GPU — this machine has none" on a simulated T4, "needs 2 GPUs" on four H100s, "needs an
  accelerator" on a Mac): the branch a reader with that GPU runs is the one that must have run;
- writes the cell's source and output to ``$GPULAB_NBVAL_OUTPUTS/<folder>/<notebook>.txt``, to be
  read cell by cell;
- with ``$GPULAB_NBVAL_BENCH`` set, records a lesson's panels when its last cell has run, in the
  kernel that ran them, as ``gpulab bench`` records them (:func:`gpulab.bench.record_panels`): a
  figure per named panel in that folder, and ``<lesson>.json`` listing them with their summaries
  and every panel's status line (or the error).
  The lesson's code runs once for nbval and the bench both.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest

_COUNT = r"(?P<n>a|an|one|two|three|four|\d+)"
_GPU = r"(?:CUDA |NVIDIA )?(?:GPU|accelerator)s?\b"
# What the lessons print where hardware is missing, in the words they use.
_CLAIMS = (
    re.compile(rf"\bneeds? {_COUNT} {_GPU}", re.I),  # needs a CUDA GPU …, needs 2 GPUs
    re.compile(rf"\b{_COUNT} {_GPU} (?:needed|required)", re.I),  # two GPUs needed for …
    re.compile(r"\bthis machine has (?P<none>none|0|no \w+|cpu)\b", re.I),  # — this machine has none
    re.compile(r"\b(?P<none>no) (?:CUDA )?GPUs?\b(?! per)", re.I),  # no CUDA GPUs: the lesson runs gloo …
)
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4}


_CUDA = re.compile(r"\b(?:CUDA|NVIDIA|NCCL)\b")


def contradictions(text: str, gpus: int, cuda: int | None = None) -> list[str]:
    """The lines of ``text`` that say the machine lacks hardware it has: ``gpus`` GPUs, ``cuda`` of them CUDA's
    (all of them unless said: a Mac has one GPU and no CUDA GPU). A line that names CUDA (or NVIDIA, NCCL)
    is read against the CUDA GPUs; any other, against every GPU."""
    cuda = gpus if cuda is None else cuda
    found = []
    for line in text.splitlines():
        for claim in _CLAIMS:
            match = claim.search(line)
            if match is None:
                continue
            groups = match.groupdict()
            needed = 1 if groups.get("none") else _WORDS.get(groups["n"].lower()) or int(groups["n"])
            if (cuda if _CUDA.search(line) else gpus) >= needed:
                found.append(line.strip())
                break
    return found


def text_of(outputs) -> str:
    """The text a reader sees in a cell's outputs: streams, plain text and HTML without tags, errors."""
    parts = []
    for output in outputs or ():
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(output.get("text", ""))
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            if "text/html" in data:
                parts.append(html.unescape(re.sub(r"<[^>]+>", " ", "".join(data["text/html"]))))
            elif "text/markdown" in data:
                parts.append("".join(data["text/markdown"]))
            elif "text/plain" in data and "application/vnd.jupyter.widget-view+json" not in data:
                parts.append("".join(data["text/plain"]))
        elif kind == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}")
    return "".join(parts)


def _gpus() -> tuple[int, int]:
    """The simulated machine's GPUs, and how many of them are CUDA's."""
    from gpulab.simulated import machines

    specs = machines.parse(os.environ["GPULAB_SIMULATE"])
    return len(specs), sum(spec.device_type == "cuda" for spec in specs)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when != "call" or not hasattr(item, "test_outputs") or not hasattr(item, "cell_num"):
        return
    report = outcome.get_result()
    text = text_of(item.test_outputs)
    folder = os.environ.get("GPULAB_NBVAL_OUTPUTS")
    if folder:
        path = Path(item.fspath)
        log = Path(folder) / path.parent.name / f"{path.stem}.txt"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as out:
            out.write(f"──── cell {item.cell_num} ({report.outcome}) ────\n{item.cell.source}\n──── output\n{text}\n")
    if report.passed and os.environ.get("GPULAB_SIMULATE"):
        wrong = contradictions(text, *_gpus())
        if wrong:
            report.outcome = "failed"
            report.longrepr = (
                f"on a simulated {os.environ['GPULAB_SIMULATE']} this cell says it lacks hardware the "
                "machine has:\n  " + "\n  ".join(wrong)
            )


_RECORD = """
def _gpulab_record_panels():
    import html, json, re, traceback
    from gpulab import bench, widgets
    try:
        namespace = get_ipython().user_ns
        recorded = bench.record_panels(namespace, {lesson!r}, {folder!r})
        found = {{"panels": {{r.name: {{"png": str(r.png_path), "summary": r.summary}} for r in recorded}},
                 "statuses": [html.unescape(re.sub("<[^>]+>", "", value.status.value))
                              for value in namespace.values() if isinstance(value, widgets.Panel)]}}
    except Exception as error:
        found = {{"error": "".join(traceback.format_exception_only(error)).strip()}}
    with open({result!r}, "w") as out:
        json.dump(found, out)
_gpulab_record_panels()
del _gpulab_record_panels
"""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    # Before nbval's own teardown of the notebook, which stops its kernel.
    folder = os.environ.get("GPULAB_NBVAL_BENCH")
    last = nextitem is None or nextitem.parent is not item.parent
    if folder and last and hasattr(item, "cell_num") and Path(item.fspath).parent.name == "notebooks":
        kernel, lesson = item.parent.kernel, Path(item.fspath).stem
        result = Path(folder) / f"{lesson}.json"
        Path(folder).mkdir(parents=True, exist_ok=True)
        if kernel.is_alive() and not item.parent.timed_out:
            code = _RECORD.format(lesson=lesson, folder=str(Path(folder) / lesson), result=str(result))
            kernel.await_reply(kernel.execute_cell_input(code, allow_stdin=False), timeout=300)
        if not result.exists():
            result.write_text(json.dumps({"error": "the lesson's kernel did not run to its end"}))
    yield
