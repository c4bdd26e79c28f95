"""What grading a class gives: a report per submission, one JSON file each, and one CSV gradebook.

A :class:`Report` holds a :class:`CheckResult` for every check of the exercises graded, and notes
on the whole submission (an answer cell it lacked, a kernel tampered with, no sandbox). It prints
as a table (:meth:`Report.table`) and writes as JSON (:func:`write_report`); a class's reports
become one CSV gradebook, a row per student and a column per exercise (:func:`write_gradebook`).
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

from .notebooks import SubmissionError, check_role

__all__ = ["MESSAGE_LIMIT", "CheckResult", "Report", "report_name", "report_of", "write_gradebook", "write_report"]

MESSAGE_LIMIT = 300  # characters of a check's message in a report


@dataclasses.dataclass
class CheckResult:
    """One check's score, its outcome, and why it did not pass."""

    exercise: str
    check: str
    points: float
    max_points: float
    outcome: str  # passed, failed, error, timeout, not run, tampered
    message: str = ""


@dataclasses.dataclass
class Report:
    """What one submission scored: every check of the exercises graded, and notes on the whole."""

    submission: str
    lesson: str
    checks: list[CheckResult]
    notes: list[str]

    @property
    def total(self) -> float:
        return sum(c.points for c in self.checks)

    @property
    def max_total(self) -> float:
        return sum(c.max_points for c in self.checks)

    def by_exercise(self) -> dict[str, tuple[float, float]]:
        scores: dict[str, tuple[float, float]] = {}
        for c in self.checks:
            points, maximum = scores.get(c.exercise, (0, 0))
            scores[c.exercise] = (points + c.points, maximum + c.max_points)
        return scores

    def as_dict(self) -> dict:
        return {
            "submission": self.submission,
            "lesson": self.lesson,
            "total": self.total,
            "max": self.max_total,
            "exercises": [
                {
                    "id": exercise,
                    "points": points,
                    "max": maximum,
                    "checks": [dataclasses.asdict(c) for c in self.checks if c.exercise == exercise],
                }
                for exercise, (points, maximum) in self.by_exercise().items()
            ],
            "notes": self.notes,
        }

    def table(self) -> str:
        rows = [("exercise", "check", "points", "max", "why not")]
        for c in self.checks:
            rows.append(
                (
                    c.exercise,
                    c.check,
                    f"{c.points:g}",
                    f"{c.max_points:g}",
                    "" if c.outcome == "passed" else f"{c.outcome}: {c.message}".rstrip(": "),
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(value.ljust(width) for value, width in zip(r[:4], widths)) + "  " + r[4] for r in rows]
        lines.insert(1, "-" * len(lines[0]))
        lines.append(f"total: {self.total:g} / {self.max_total:g}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def report_of(path: Path, lesson: str, parts: dict, solution: dict, outcomes: dict, notes: list[str]) -> Report:
    """The report on one submission from what its kernels said: ``outcomes`` maps each exercise to its
    ``{key: {"outcome", "message"}}`` (a check's id, ``answer:ID``, ``kernel``, ``tampered``); ``parts`` is
    the solution's :func:`~gpulab.grading.notebooks.exercises`, those graded."""
    checks = []
    for exercise, part in parts.items():
        outcome = outcomes.get(exercise, {})
        tampered = outcome.get("tampered")
        if tampered:
            notes.append(f"exercise {exercise!r} scores 0: {tampered['message']}")
        for index in part["checks"]:
            role = check_role(solution["cells"][index])
            result = (
                outcome.get(role["check"])
                or outcome.get("kernel")
                or {"outcome": "not run", "message": "never reached"}
            )
            passed = result["outcome"] == "passed" and not tampered
            message = "" if passed else result.get("message", "")
            if tampered and result["outcome"] == "passed":
                result, message = tampered, tampered["message"]
            answer = outcome.get(f"answer:{exercise}")
            if not passed and not tampered and answer and answer["outcome"] != "passed":
                # The check failed because the answer cell itself did: say so first.
                message = f"your answer cell failed ({answer['message']}); then {message}"[:MESSAGE_LIMIT]
            checks.append(
                CheckResult(
                    exercise, role["check"], role["points"] if passed else 0, role["points"], result["outcome"], message
                )
            )
    return Report(str(path), lesson, checks, notes)


def write_report(report: Report, path: Path | str) -> None:
    """Write ``report`` as JSON (:meth:`Report.as_dict`) to ``path``."""
    Path(path).write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")


def report_name(path: Path, submitted: Path) -> str:
    """The name (without ``.json``) of the report on ``path``, one of the submissions found in ``submitted``:
    its path inside that folder with ``__`` between the parts (a folder per student), or its own name."""
    if Path(submitted).is_dir():
        return "__".join(Path(path).relative_to(submitted).with_suffix("").parts)
    return Path(path).stem


def write_gradebook(path: Path | str, graded: list[tuple[str, Path, Report | SubmissionError]]) -> int:
    """Write the CSV gradebook of ``graded`` (student, submission, its report or why it was not graded) to
    ``path``: a row per submission, a column per exercise any report has, then total, max and status. Returns the
    number of rows."""
    columns: list[str] = []
    for _, _, result in graded:
        if isinstance(result, Report):
            columns += [exercise for exercise in result.by_exercise() if exercise not in columns]
    rows = []
    for student, submission, result in graded:
        row = {"student": student, "submission": str(submission)}
        if isinstance(result, SubmissionError):
            row.update(status=str(result))
        else:
            row.update(
                lesson=result.lesson,
                total=f"{result.total:g}",
                max=f"{result.max_total:g}",
                status="; ".join(result.notes) or "graded",
            )
            row.update({exercise: f"{points:g}" for exercise, (points, _) in result.by_exercise().items()})
        rows.append(row)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["student", "submission", "lesson", *columns, "total", "max", "status"])
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)
