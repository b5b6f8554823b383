"""The outcome of an import: cases, leaks, skipped records, notes; its JSON form."""

from __future__ import annotations

import math
from typing import Any

from attrs import define, field

from pdeagent.cases.model import Case, ExprOrVector
from pdeagent.cases.upstream.limits import LEAK_TOLERANCE
from pdeagent.cases.upstream.oracle import ImportNote


@define(frozen=True)
class LeakReport:
    """A case whose boundary or initial data reveal the manufactured solution (SPEC §4)."""

    case_id: str
    upstream_id: str
    expressions: tuple[str, ...]
    """Which data leak: ``dirichlet`` and/or ``initial_condition``."""
    errors: dict[str, float]
    """Relative L2 error, on the scored grid points, of sampling each examined expression
    instead of solving (the leaking ones are below :data:`LEAK_TOLERANCE`)."""

    @property
    def error(self) -> float:
        """The smallest error among the leaking expressions."""
        return min(self.errors[name] for name in self.expressions)


@define(frozen=True)
class ForcingDifference:
    """The upstream ``source_term`` is not the forcing our operator gives for the solution."""

    case_id: str
    relative_difference: float
    """max |f_ours - f_upstream| / max(|f_ours|, |f_upstream|) over interior points (and
    times)."""
    upstream: ExprOrVector
    recomputed: ExprOrVector


@define
class UpstreamImport:
    """Outcome of :func:`import_upstream`."""

    cases: list[Case] = field(factory=list)
    """Every converted case. Each passes all checks of ``pdeagent cases validate`` except,
    possibly, the no-leak rule of SPEC §4 (the upstream Dirichlet data are kept as given)."""
    leaks: list[LeakReport] = field(factory=list)
    skipped: list[tuple[str, str]] = field(factory=list)
    """(upstream id, or ``line N`` when the record has none; reason)."""
    forcing_differences: list[ForcingDifference] = field(factory=list)
    notes: list[tuple[str, str]] = field(factory=list)
    """(case id, what was stated that the upstream record leaves implicit)."""
    import_notes: dict[str, list[ImportNote]] = field(factory=dict)
    """Case id -> the upstream oracles' implicit defaults stated in that case (field, value,
    why). Only cases with at least one such default appear."""
    rejected_by_validator: list[str] = field(factory=list)
    """Ids of cases that ``pdeagent cases validate`` rejects under its no-leak rule."""
    upstream_ids: dict[str, str] = field(factory=dict)
    """Case id -> upstream id."""
    cheat_errors: dict[str, dict[str, float]] = field(factory=dict)
    """Case id -> relative L2 error of each cheat examined (manufactured cases only)."""

    @property
    def manufactured(self) -> int:
        """Number of imported manufactured-solution cases (the only ones a leak is checked on)."""
        return sum(
            c.evaluation_metadata.construction_method == "manufactured_solution" for c in self.cases
        )

    @property
    def leak_share(self) -> float:
        """Leaking cases / imported cases (0 when nothing was imported)."""
        return len(self.leaks) / len(self.cases) if self.cases else 0.0

    def writable_cases(self) -> list[Case]:
        """The cases ``pdeagent cases validate`` accepts (all but the validator-rejected)."""
        rejected = set(self.rejected_by_validator)
        return [c for c in self.cases if c.id not in rejected]

    def skipped_by_reason(self) -> dict[str, int]:
        """Refusal reason -> number of records refused with it (most frequent first)."""
        counts: dict[str, int] = {}
        for _, why in self.skipped:
            counts[why] = counts.get(why, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def leak_summary(self) -> str:
        n, k, m = len(self.cases), len(self.leaks), self.manufactured
        return (
            f"{k} of {n} imported cases leak their solution through the boundary or initial "
            f"data ({100.0 * self.leak_share:.0f}%; {k} of {m} manufactured-solution cases, "
            "the only ones with a solution to leak)"
        )


def summary_dict(result: UpstreamImport) -> dict[str, Any]:
    """The report as JSON-able data (non-finite numbers as None)."""

    def num(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {
        "imported": len(result.cases),
        "manufactured": result.manufactured,
        "leaking": len(result.leaks),
        "leak_share": result.leak_share,
        "leak_tolerance": LEAK_TOLERANCE,
        "leaks": [
            {
                "case_id": r.case_id,
                "upstream_id": r.upstream_id,
                "expressions": list(r.expressions),
                "errors": {k: num(v) for k, v in r.errors.items()},
            }
            for r in result.leaks
        ],
        "skipped": [{"upstream": who, "reason": why} for who, why in result.skipped],
        "skipped_by_reason": [
            {"reason": why, "count": n} for why, n in result.skipped_by_reason().items()
        ],
        "import_notes": [
            {
                "case_id": case_id,
                "upstream_id": result.upstream_ids[case_id],
                "notes": [n.as_dict() for n in notes],
            }
            for case_id, notes in result.import_notes.items()
        ],
        "forcing_differences": [
            {"case_id": d.case_id, "relative_difference": num(d.relative_difference)}
            for d in result.forcing_differences
        ],
        "rejected_by_validator": list(result.rejected_by_validator),
        "notes": [{"case_id": c, "note": n} for c, n in result.notes],
    }
