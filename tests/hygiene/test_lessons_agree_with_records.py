"""What the course says a GPU does, held to what a real GPU recorded.

Every sentence of a lesson (or of its solutions, a figure's legend, the README) that states what a GPU
does and that the shipped records can show — a figure, a ratio, which of two numbers is larger, which
rows a CUDA profile holds, which backend and device an experiment ran on — is a claim in
``tests/hygiene/claims/claims_NN_name.py``: ``CLAIMS = [Claim(sentence, check), ...]``. The test finds the
sentence, quoted, in the file it names (reworded, it must be read again against the record), then runs
``check(records)``, which asserts what the sentence says of the records.

The records are the H100 SXM runs: ``src/gpulab/reference_results/NAME.json`` (what ``gpulab bench``
measured, one per panel) and ``tools/gpu-runner/records/2026-11-25-h100/`` (that run's logs and the probe of
what the simulation models); later runs of a few lessons keep their logs in folders of their own beside it
(``2026-11-27-h100/``: lesson 09). A record stands for what ran: the lesson 06 panels ran gloo
between host processes, so no claim about NCCL or a GPU's links may be checked against them.

Each claim module also holds ``UNSHOWN = [Unshown(sentence, why), ...]``: sentences about a GPU that no
shipped record can confirm (a data sheet's figure, a published measurement, what ran only on the host),
and why; the test requires that they are still in the text, so the list stays true. Each claim module imports ``Claim`` and ``Unshown`` from ``claim_kinds``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from gpulab import course, reference

from conftest import ROOT

CLAIMS = ROOT / "tests" / "hygiene" / "claims"
RUN = ROOT / "tools" / "gpu-runner" / "records" / "2026-11-25-h100"
RESULTS = ROOT / "src" / "gpulab" / "reference_results"


class Watched(list):
    """A recorded series that remembers which of its points were read: by index, slice, iteration, search,
    comparison, copy or print."""

    def __init__(self, values, read: set, where: tuple):
        super().__init__(values)
        self._read, self._where = read, where

    def _mark(self, indices) -> None:
        self._read.update((*self._where, i) for i in indices)

    def _all(self) -> None:
        self._mark(range(len(self)))

    def __getitem__(self, index):
        self._mark(range(len(self))[index] if isinstance(index, slice) else [range(len(self))[index]])
        return super().__getitem__(index)

    def __iter__(self):
        self._all()
        return super().__iter__()

    def __reversed__(self):
        self._all()
        return super().__reversed__()

    def __contains__(self, value):
        self._all()
        return super().__contains__(value)

    def __eq__(self, other):
        self._all()
        return super().__eq__(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __add__(self, other):
        self._all()
        return list(super().__iter__()) + list(other)

    def __repr__(self):
        self._all()
        return super().__repr__()

    def index(self, value, *args):
        self._all()
        return super().index(value, *args)

    def count(self, value):
        self._all()
        return super().count(value)

    def copy(self):
        self._all()
        return list(super().__iter__())

    def pop(self, index=-1):
        self._mark([range(len(self))[index]])
        return super().pop(index)


class WatchedValues(dict):
    """Recorded values kept by name (one time per step of each format, say) that remember which were read:
    by key, ``get``, ``values``, ``items``, comparison, copy or print."""

    def __init__(self, values, read: set, where: tuple):
        super().__init__(values)
        self._read, self._where = read, where

    def _mark(self, names) -> None:
        self._read.update((*self._where, name, None) for name in names)

    def __getitem__(self, name):
        self._mark([name])
        return super().__getitem__(name)

    def get(self, name, default=None):
        if name in self:
            self._mark([name])
        return super().get(name, default)

    def values(self):
        self._mark(list(self.keys()))
        return super().values()

    def items(self):
        self._mark(list(self.keys()))
        return super().items()

    def __eq__(self, other):
        self._mark(list(self.keys()))
        return super().__eq__(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        self._mark(list(self.keys()))
        return super().__repr__()

    def copy(self):
        self._mark(list(self.keys()))
        return dict(super().items())


class Records:
    """The H100 SXM run's records: ``result(name)`` is a panel's result, ``record(name)`` its whole record
    (device, torch, settings), ``log(file)`` and ``probe`` the run's logs and probe.

    The series of a result remember which points a check read: ``noise_read()`` lists those the record marks
    within noise (its ``"noisy"`` field, :func:`gpulab.reference.noisy_points`), which no comparison may rest on."""

    def __init__(self, results: Path = RESULTS):
        self.read: set = set()
        self.noisy: set = set()
        self.results = results

    def record(self, name: str) -> dict:
        record = json.loads((self.results / f"{name}.json").read_text())
        result, marks = record["result"], (record.get("noisy") or {}).get("points", {})
        for y, by_name in marks.items():
            if isinstance(by_name, list):  # result[y] is one series
                xs = result[reference.x_key(record, y)]
                self.noisy.update((name, y, None, xs.index(x)) for x in by_name)
                continue
            for series, marked in by_name.items():
                if marked == [None]:  # one value kept by name
                    self.noisy.add((name, y, series, None))
                    continue
                xs = result[reference.x_key(record, y)]
                self.noisy.update((name, y, series, xs.index(x)) for x in marked)
        timed = {y for y, *_ in reference.WORK_AXES.get(name, ())} | set(marks) | set(result.get("spread") or {})
        for y in timed:
            if isinstance(result[y], list):
                result[y] = Watched(result[y], self.read, (name, y, None))
                continue
            for series, values in result[y].items():
                if isinstance(values, list):
                    result[y][series] = Watched(values, self.read, (name, y, series))
            if any(isinstance(values, (int, float)) for values in result[y].values()):
                result[y] = WatchedValues(result[y], self.read, (name, y))
        return record

    def result(self, name: str) -> dict:
        return self.record(name)["result"]

    def clean(self, name: str, y: str, series: str | None) -> tuple[list, list]:
        """The points of a series that its record does not mark within noise, as (xs, values); reading them
        this way reads no noisy point."""
        record = json.loads((self.results / f"{name}.json").read_text())
        result = record["result"]
        noisy = reference.noisy(record, y, series)
        values = result[y] if series is None else result[y][series]
        pairs = [(x, v) for x, v in zip(result[reference.x_key(record, y)], values) if x not in noisy]
        return [x for x, _ in pairs], [v for _, v in pairs]

    def noise_read(self) -> list:
        """The points within noise that were read, as (record, series key, series, index)."""
        return sorted(self.read & self.noisy, key=repr)

    def log(self, file: str, run: str = RUN.name) -> str:
        """A log of the 2026-11-25 run, or of another run in ``tools/gpu-runner/records/`` named by ``run``."""
        return (RUN.parent / run / file).read_text()

    @property
    def probe(self) -> dict:
        return json.loads((RUN / "probe.json").read_text())


def plain(text: str) -> str:
    """Text as read: no emphasis, code ticks, escapes or line breaks."""
    return " ".join(re.sub(r"[*`\\]", "", text).split())


def text_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        return "\n".join(course.cell_source(cell) for cell in course.read_notebook(path)["cells"])
    return path.read_text()


def modules() -> dict[str, object]:
    found = {}
    for path in sorted(CLAIMS.glob("claims_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found[path.stem.removeprefix("claims_")] = module
    return found


MODULES = modules()
CASES = [
    pytest.param(lesson, claim, id=f"{lesson}: {claim.sentence[:70]}")
    for lesson, module in MODULES.items()
    for claim in module.CLAIMS
]
UNSHOWN = [
    pytest.param(lesson, unshown, id=f"{lesson}: {unshown.sentence[:70]}")
    for lesson, module in MODULES.items()
    for unshown in getattr(module, "UNSHOWN", [])
]


def where(lesson: str, claim_where: str | None) -> Path:
    return ROOT / (claim_where or f"notebooks/{lesson}.ipynb")


def test_every_lesson_has_its_claims_listed():
    lessons = {path.stem for path in (ROOT / "notebooks").glob("*.ipynb")}
    assert lessons <= set(MODULES), f"no tests/hygiene/claims/claims_NAME.py for {sorted(lessons - set(MODULES))}"


@pytest.mark.parametrize("lesson, claim", CASES)
def test_what_a_lesson_says_a_gpu_did_is_what_the_h100_recorded(lesson, claim):
    path = where(lesson, claim.where)
    assert plain(claim.sentence) in plain(text_of(path)), (
        f"{path.relative_to(ROOT)} no longer says {claim.sentence!r}: read the new words against the record"
    )
    records = Records()
    claim.check(records)
    if claim.about_noise:
        assert records.noise_read(), (
            "the sentence says these points are within noise, but the check read none marked so"
        )
    else:
        assert not records.noise_read(), (
            f"the check reads points the records mark within noise ({reference.NOISE_RULE}): "
            f"{records.noise_read()}; a sentence may not rest on them — drop it, or say they are within noise "
            "(Claim(..., about_noise=True))"
        )


@pytest.mark.parametrize("lesson, unshown", UNSHOWN)
def test_a_sentence_no_record_can_show_is_still_the_one_listed(lesson, unshown):
    assert unshown.why.strip(), f"{lesson}: say why no record shows {unshown.sentence!r}"
    path = where(lesson, unshown.where)
    assert plain(unshown.sentence) in plain(text_of(path)), (
        f"{path.relative_to(ROOT)} no longer says {unshown.sentence!r}"
    )


def test_a_claim_fails_where_the_record_does_not_show_it():
    def pinned_beats_pageable(records):
        gbps = records.result("02_bandwidth")["gbps"]
        assert max(gbps["host→device pinned"]) > max(gbps["host→device pageable"])

    def pageable_beats_pinned(records):
        gbps = records.result("02_bandwidth")["gbps"]
        assert max(gbps["host→device pageable"]) > max(gbps["host→device pinned"])

    pinned_beats_pageable(Records())
    with pytest.raises(AssertionError):
        pageable_beats_pinned(Records())


def test_a_check_that_reads_a_point_within_noise_is_caught_however_it_reads_it():
    # 03_placement marks the kept step at batch 32 within noise: every way of reading it is seen
    kept = "kept on the device"
    reads = [
        lambda r: r.result("03_placement")["ms_per_step"][kept][1],
        lambda r: max(r.result("03_placement")["ms_per_step"][kept]),
        lambda r: r.result("03_placement")["ms_per_step"][kept][:2],
        lambda r: 3.9 in r.result("03_placement")["ms_per_step"][kept],
        lambda r: r.result("03_placement")["ms_per_step"][kept].index(0.5546360015869141),
        lambda r: list(reversed(r.result("03_placement")["ms_per_step"][kept])),
        lambda r: r.result("03_placement")["ms_per_step"][kept].copy(),
        lambda r: f"{r.result('03_placement')['ms_per_step'][kept]}",
    ]
    for read in reads:
        records = Records()
        read(records)
        assert (("03_placement", "ms_per_step", kept, 1)) in records.noise_read()
    records = Records()
    assert records.clean("03_placement", "ms_per_step", kept) == ([128, 256], [0.6410613258679707, 0.5546360015869141])
    records.result("03_placement")["ms_per_step"][kept][-1]  # a clean point
    assert records.noise_read() == []


def test_a_value_or_a_plain_series_within_noise_is_caught_when_read(tmp_path):
    # A record whose time per step is one value per format, and whose pin_seconds is a plain list: the
    # values within noise are the wide ones, and reading them is seen as reading any series' point is
    record = {
        "name": "05_step",
        "result": {
            "sizes": [1, 2],
            "ms_per_step": {"float32": 1.0, "bfloat16": 2.0},
            "pin_seconds": [1.0, 2.0],
            "spread": {
                "ms_per_step": {"float32": [0.99, 1.01], "bfloat16": [1.5, 2.5]},
                "pin_seconds": [[0.5, 1.5], [1.99, 2.01]],
            },
        },
    }
    record["noisy"] = reference.noise_mark(record)
    assert record["noisy"]["points"] == {"ms_per_step": {"bfloat16": [None]}, "pin_seconds": [1]}
    (tmp_path / "05_step.json").write_text(json.dumps(record))
    reads = [
        lambda r: r.result("05_step")["ms_per_step"]["bfloat16"],
        lambda r: r.result("05_step")["ms_per_step"].get("bfloat16"),
        lambda r: max(r.result("05_step")["ms_per_step"].values()),
        lambda r: dict(r.result("05_step")["ms_per_step"].items()),
        lambda r: f"{r.result('05_step')['ms_per_step']}",
        lambda r: r.result("05_step")["pin_seconds"][0],
        lambda r: sum(r.result("05_step")["pin_seconds"]),
    ]
    for read in reads:
        records = Records(tmp_path)
        read(records)
        assert records.noise_read(), read
    records = Records(tmp_path)
    records.result("05_step")["ms_per_step"]["float32"]
    records.result("05_step")["pin_seconds"][1]
    assert records.noise_read() == []
    assert records.clean("05_step", "pin_seconds", None) == ([2], [2.0])
