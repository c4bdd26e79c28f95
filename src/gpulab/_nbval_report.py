"""A pytest plugin the grader loads next to nbval: it records the outcome of each check cell.

Results go, as JSON keyed by check ID (and ``answer:ID`` for answer cells), to the file named
by ``GPULAB_GRADE_RESULTS``.
"""

import json
import os
import re

import pytest

MESSAGE_LIMIT = 300
_results: dict[str, dict] = {}


def one_line(text: str) -> str:
    """The line of a failure report that says what went wrong (the exception's), ANSI codes removed."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    pattern = re.compile(r"^(\w+(Error|Exception|Interrupt|Exit)|Timeout of)\b")
    chosen = next((line for line in reversed(lines) if pattern.match(line)), lines[-1] if lines else "")
    return chosen[:MESSAGE_LIMIT]


def _key(item) -> str | None:
    """``check-id`` for a check cell, ``answer:exercise-id`` for an answer cell, else None."""
    cell = getattr(item, "cell", None)
    role = cell.get("metadata", {}).get("gpulab", {}) if cell is not None else {}
    if not isinstance(role, dict):
        return None
    if "check" in role:
        return role["check"]
    return f"answer:{role['answer']}" if "answer" in role else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    check = _key(item)
    if check is None or (report.when != "call" and not report.failed):
        return
    if report.passed:
        _results[check] = {"outcome": "passed"}
        return
    text = report.longreprtext or ""
    if "Timeout of" in text and "exceeded" in text:
        kind = "timeout"
    elif "Kernel dead" in text or "Kernel died" in text:
        kind = "error"
    else:
        kind = "failed" if "AssertionError" in text else "error"
    _results[check] = {"outcome": kind, "message": one_line(text)}


def pytest_sessionfinish(session):
    path = os.environ.get("GPULAB_GRADE_RESULTS")
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(_results, handle)
