"""Loading case files (JSON Lines) and looking cases up by id."""

from __future__ import annotations

import difflib
import hashlib
import os
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
    A file validated before, byte for byte, by the same validator is not validated
    again (see :func:`_validated_marker`); schema, parse and every other check
    still ran on exactly these bytes once.
    """
    records, lines, problems = read_jsonl(path)
    marker = _validated_marker(path, known_libraries)
    if problems or marker is None or not marker.exists():
        problems.extend(validate_records(records, known_libraries=known_libraries, lines=lines))
        if problems:
            problems.sort(key=lambda p: p.line if p.line is not None else 0)
            raise CaseFileError(path, problems)
        if marker is not None:
            try:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
            except OSError:
                pass  # an unwritable cache only costs the next load its validation time
    return [case_from_dict(record) for record in records]


def _validator_digest() -> str:
    """Hash of the validation code: a changed validator re-validates every file."""
    from pdeagent.cases import expressions, mms, validate

    digest = hashlib.sha256()
    for module in (validate, expressions, mms):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()


def _validated_marker(path: str | Path, known_libraries: Iterable[str]) -> Path | None:
    """Where a successful full validation of exactly these bytes is remembered.

    The key covers the file's bytes, the known libraries and the validator's own
    code, so only an identical file checked by an identical validator skips the
    (symbolic, tens of seconds for the 645-case dataset) validation. ``None`` when
    the file cannot be read (the normal path reports that).
    """
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    key = hashlib.sha256()
    key.update(hashlib.sha256(data).digest())
    key.update(",".join(sorted(known_libraries)).encode())
    key.update(_validator_digest().encode())
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pdeagent" / "validated" / key.hexdigest()


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
