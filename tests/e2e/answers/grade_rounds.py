"""Grade one lesson's answer rounds, as tests/e2e/test_answers.py hands them in, in a Python of its own.

    python grade_rounds.py PLAN.json RESULTS.pickle

PLAN: ``{"lesson": stem, "submissions": [[path, [exercise, ...]], ...], "sandboxed": bool}``. RESULTS: the
list :func:`gpulab.grading.grade_many` returns (a Report, or the SubmissionError that says why not, for each
submission in the plan's order), pickled. tests/e2e/test_answers.py starts this for every lesson as soon as the
session's tests are collected, so that the grading runs beside the rest of the suite; its tests read the results.
"""

import json
import pickle
import sys
from pathlib import Path

from gpulab import grading


def main(plan_path: str, results_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    paths = [Path(path) for path, _ in plan["submissions"]]
    found = grading.grade_many(
        paths,
        timeout=60,
        lesson=plan["lesson"],
        only={Path(path): exercises for path, exercises in plan["submissions"]},
        sandboxed=plan["sandboxed"],
    )
    partial = Path(results_path + ".partial")
    partial.write_bytes(pickle.dumps(found))
    partial.replace(results_path)


if __name__ == "__main__":
    main(*sys.argv[1:])
