"""Validation findings: :class:`Problem` and its text and JSON forms."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import define


@define(frozen=True)
class Problem:
    """One validation finding."""

    case_id: str | None
    line: int | None
    field: str
    """Dotted path in the record, e.g. ``case_spec.bc.dirichlet[0].boundary``."""
    message: str

    def __str__(self) -> str:
        where = f"case {self.case_id}" if self.case_id else "record"
        if self.line is not None:
            where += f" (line {self.line})"
        if self.field:
            where += f": {self.field}"
        return f"{where}: {self.message}"


def problems_summary(problems: Sequence[Problem], limit: int = 10) -> str:
    """The first ``limit`` problems, one per line, plus a count of the rest."""
    lines = [str(p) for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more")
    return "\n".join(lines)


def problems_as_dicts(problems: Iterable[Problem]) -> list[Mapping[str, Any]]:
    """Problems as JSON-able dicts (for ``--json`` output)."""
    return [
        {"case_id": p.case_id, "line": p.line, "field": p.field, "message": p.message}
        for p in problems
    ]
