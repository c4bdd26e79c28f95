"""Reports and the gradebook: a report per submission (a table, JSON), and a class's CSV gradebook, a row
per student and a column per exercise."""

import csv
import io
import json
from pathlib import Path

import pytest

from gpulab import grading
from gpulab.grading import reports

from tiny_lesson import CORRECT, run_grade, submit, tiny_solutions


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_solutions(tmp_path_factory)


def _report(name="a.ipynb", lesson="01_devices", notes=()):
    checks = [
        reports.CheckResult("add", "add-0", 1, 1, "passed"),
        reports.CheckResult("add", "add-1", 0, 2, "failed", "AssertionError: expected 3, got 4"),
        reports.CheckResult("square", "square-0", 2, 2, "passed"),
    ]
    return reports.Report(name, lesson, checks, list(notes))


def test_a_report_sums_its_checks_by_exercise_and_says_why_a_check_lost_its_points(tmp_path):
    report = _report(notes=["no answer cell for exercise 'root'"])
    assert (report.total, report.max_total) == (3, 5)
    assert report.by_exercise() == {"add": (1, 3), "square": (2, 2)}
    table = report.table()
    assert "failed: AssertionError: expected 3, got 4" in table and "total: 3 / 5" in table
    assert table.splitlines()[-1] == "note: no answer cell for exercise 'root'"
    reports.write_report(report, tmp_path / "a.json")
    written = json.loads((tmp_path / "a.json").read_text())
    assert written == report.as_dict()
    assert [(e["id"], e["points"], e["max"], len(e["checks"])) for e in written["exercises"]] == [
        ("add", 1, 3, 2),
        ("square", 2, 2, 1),
    ]


def test_a_report_is_named_after_its_students_folder_or_its_own_name(tmp_path):
    assert reports.report_name(tmp_path / "jane" / "01_devices.ipynb", tmp_path) == "jane__01_devices"
    assert reports.report_name(tmp_path / "doe_01_devices.ipynb", tmp_path) == "doe_01_devices"
    assert reports.report_name(tmp_path / "x.ipynb", tmp_path / "x.ipynb") == "x"


def test_the_gradebook_has_a_column_per_exercise_and_a_row_per_submission(tmp_path):
    other = reports.Report(
        "b.ipynb",
        "01_devices",
        [reports.CheckResult("root", "root-0", 0, 1, "error", "x")],
        ["graded without a sandbox"],
    )
    graded = [
        ("jane", Path("jane/a.ipynb"), _report()),
        ("john", Path("b.ipynb"), other),
        ("broken", Path("broken.ipynb"), grading.SubmissionError("broken.ipynb: the file is empty")),
    ]
    assert reports.write_gradebook(tmp_path / "grades.csv", graded) == 3
    rows = list(csv.DictReader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert list(rows[0]) == ["student", "submission", "lesson", "add", "square", "root", "total", "max", "status"]
    assert [(r["student"], r["add"], r["root"], r["total"], r["max"], r["status"]) for r in rows] == [
        ("jane", "1", "", "3", "5", "graded"),
        ("john", "", "0", "0", "1", "graded without a sandbox"),
        ("broken", "", "", "", "", "broken.ipynb: the file is empty"),
    ]


def test_a_class_becomes_one_gradebook_and_a_report_per_student(tiny, tmp_path):
    folder = tmp_path / "class"
    for student, answers in (("jane", CORRECT), ("john", dict(CORRECT, const="ANSWER = 41"))):
        (folder / student).mkdir(parents=True)
        submit(folder / student, answers, name="01_devices.ipynb")
    (folder / "broken.ipynb").write_text('{"cells": [')
    done = run_grade(folder, "--csv", str(tmp_path / "grades.csv"), "--jobs", "2", solutions=tiny)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert [r["student"] for r in rows] == ["broken", "jane", "john"]
    assert list(rows[0]) == [
        "student",
        "submission",
        "lesson",
        "add",
        "square",
        "root",
        "const",
        "total",
        "max",
        "status",
    ]
    by_student = {r["student"]: r for r in rows}
    assert by_student["jane"]["total"] == "7" and by_student["jane"]["max"] == "7"
    assert by_student["john"]["const"] == "0" and by_student["john"]["lesson"] == "01_devices"
    assert "invalid JSON" in by_student["broken"]["status"] and by_student["broken"]["total"] == ""
    written = {p.name: json.loads(p.read_text()) for p in (tmp_path / "grades").glob("*.json")}
    assert sorted(written) == ["jane__01_devices.json", "john__01_devices.json"]
    assert written["john__01_devices.json"]["total"] == 6
    assert "grading" in done.stderr, "a progress bar"
    assert "3 submission(s) → " in done.stdout
