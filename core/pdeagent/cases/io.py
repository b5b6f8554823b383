"""Loading case files (JSON Lines) and looking cases up by id."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from pdeagent.cases.model import Case, case_from_dict
from pdeagent.cases.validate import (
    KNOWN_LIBRARIES,
    Problem,
    problems_summary,
    read_jsonl,
    validate_records,
)


class CaseFileError(ValueError):
    """A case file failed validation; ``problems`` holds every finding."""

    def __init__(self, path: str | Path, problems: list[Problem], *, shown: int = 10) -> None:
        self.path = Path(path)
        self.problems = problems
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(
            f"invalid case file {self.path} ({count} {noun}):\n"
            + problems_summary(problems, limit=shown)
        )


class CaseNotFoundError(KeyError):
    """No case with the requested id (the message lists close matches)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def load_cases(path: str | Path, *, known_libraries: Iterable[str] = KNOWN_LIBRARIES) -> list[Case]:
    """Validate and load every case of a JSON Lines file.

    Raises :class:`CaseFileError` if any record is invalid (nothing is loaded then).
    """
    records, lines, problems = read_jsonl(path)
    problems.extend(validate_records(records, known_libraries=known_libraries, lines=lines))
    if problems:
        problems.sort(key=lambda p: p.line if p.line is not None else 0)
        raise CaseFileError(path, problems)
    return [case_from_dict(record) for record in records]


def find_case(cases: Iterable[Case], case_id: str) -> Case:
    """The case with id ``case_id``; :class:`CaseNotFoundError` (a KeyError) otherwise."""
    cases = list(cases)
    for case in cases:
        if case.id == case_id:
            return case
    ids = [case.id for case in cases]
    close = difflib.get_close_matches(case_id, ids, n=5, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    raise CaseNotFoundError(f"no case with id {case_id!r} among {len(ids)} cases{hint}")
