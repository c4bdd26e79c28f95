"""The grader: exercises made from solutions, and a student's answers graded by the instructor's checks.

Its parts:

- :mod:`~gpulab.grading.notebooks`: the roles of a solution notebook's cells (answer, check, canary),
  the exercise made from it (:func:`make_exercise`, :func:`assign`), and the submissions read
  (:func:`load_submission`, :class:`SubmissionError`, :func:`submissions_in`);
- :mod:`~gpulab.grading.runner`: :func:`grade` and :func:`grade_many` run each exercise — setup,
  answer, checks and canaries — in a fresh kernel;
- :mod:`~gpulab.grading.reports`: :class:`Report` and :class:`CheckResult`, a JSON report per
  submission and the class's CSV gradebook;
- :mod:`~gpulab.grading.sandbox`: the kernel for untrusted code, in bubblewrap, and the zygote
  that forks such kernels; its first processes are the scripts ``kernel_entry.py`` and
  ``zygote.py``, run by path;
- :mod:`~gpulab.grading.gradescope`: an autograder for Gradescope, made from a lesson's solutions.

Check cells' helpers live in :mod:`gpulab.checks`; ``gpulab.grading.patched``,
``recorded_time_fn`` and ``TimedCall`` stay here too, for the exercise notebooks already handed out.
"""

from __future__ import annotations

from .._processes import kill_processes_mentioning
from ..checks import TimedCall, patched, recorded_time_fn  # check cells' old import path
from .notebooks import (
    SubmissionError,
    assign,
    lesson_in_name,
    load_submission,
    make_exercise,
    solution_path,
    solutions_folder,
    submissions_in,
)
from .reports import CheckResult, Report
from .runner import grade, grade_many

__all__ = [
    "CheckResult",
    "Report",
    "SubmissionError",
    "TimedCall",
    "assign",
    "grade",
    "grade_many",
    "kill_processes_mentioning",
    "lesson_in_name",
    "load_submission",
    "make_exercise",
    "patched",
    "recorded_time_fn",
    "solution_path",
    "solutions_folder",
    "submissions_in",
]
