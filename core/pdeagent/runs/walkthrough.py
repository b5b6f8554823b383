"""Walkthrough pages of ``pdeagent report`` (issue #23): one static page per graded
attempt, with the case, the verdict, the code, the diagnostics and pictures of the
fields on the evaluation grid, written from the run folder alone.

Layout of the report folder (every link relative, so the folder works from ``file://``
and any static host): ``report.html`` (the tables), ``leaderboard.html`` and one page
per attempt at :func:`walkthrough_relpath` with its pictures beside it.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pdeagent.runs.layout import path_component

WALKTHROUGH_DIR = "cases"
"""Top folder of the walkthrough pages inside the report folder."""


def walkthrough_relpath(
    run_index: int, run_id: str, track: str, model: str, case_id: str, attempt: int
) -> PurePosixPath:
    """The page of one attempt, relative to the report folder:
    ``cases/<run index>-<run id>/<track>/<model>/<case id>/attempt-<k>/index.html`` (the
    run index keeps two runs with the same id apart; every part a safe path component)."""
    run = path_component(f"{run_index}-{run_id}")
    parts = (WALKTHROUGH_DIR, run, path_component(track), path_component(model),
             path_component(case_id), f"attempt-{int(attempt)}", "index.html")  # fmt: skip
    return PurePosixPath(*parts)
