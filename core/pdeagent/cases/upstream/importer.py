"""Entry point: read the file, convert and check each record, collect the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pdeagent.cases.model import case_from_dict
from pdeagent.cases.upstream.checks import (
    _check_consistency,
    _forcing_difference,
    _inner_points,
    _leak_errors,
)
from pdeagent.cases.upstream.convert import _convert
from pdeagent.cases.upstream.limits import LEAK_TOLERANCE, MAX_ID_CHARS, MAX_RECORDS
from pdeagent.cases.upstream.reading import _lines, _parse_line, _Skip, sanitize_id
from pdeagent.cases.upstream.report import ForcingDifference, LeakReport, UpstreamImport
from pdeagent.cases.validate import KNOWN_LIBRARIES, validate_records
from pdeagent.geometry import evaluation_mask, get_geometry

_LEAK_RULE_MARK = "SPEC §4 leak"
"""Marker of the validator's no-leak problems (pdeagent.cases.validate.check_leaks)."""


# ----------------------------------------------------------------------------- entry point


def _validation_problems(record: dict[str, Any]) -> tuple[list[str], bool]:
    """(problems other than the no-leak rule, whether the no-leak rule fired)."""
    problems = validate_records([record], known_libraries=KNOWN_LIBRARIES)
    leak = any(_LEAK_RULE_MARK in p.message for p in problems)
    other = [
        f"{p.field}: {p.message}" if p.field else p.message
        for p in problems
        if _LEAK_RULE_MARK not in p.message
    ]
    return other, leak


def import_upstream(path: Path) -> UpstreamImport:
    """Convert an upstream ``benchmark_v2.jsonl`` file; never raises on a bad record.

    Raises OSError only when the file itself cannot be opened.
    """
    result = UpstreamImport()
    first_line: dict[str, int] = {}
    records = 0
    for number, text, problem in _lines(Path(path)):
        label = f"line {number}"
        if problem is not None:
            result.skipped.append((label, problem))
            continue
        assert text is not None
        if not text.strip():
            continue
        records += 1
        if records > MAX_RECORDS:
            result.skipped.append((label, f"more than {MAX_RECORDS} records; the rest is unread"))
            break
        try:
            raw = _parse_line(text)
            if not isinstance(raw, dict):
                raise _Skip("record is not a JSON object")
            upstream_id = raw.get("id")
            if not isinstance(upstream_id, str) or not upstream_id.strip():
                raise _Skip("record has no string id")
            label = upstream_id[:MAX_ID_CHARS]
            case_id = sanitize_id(upstream_id)
            if case_id == "upstream":
                raise _Skip("id has no character in [a-z0-9_]")
            if case_id in first_line:
                raise _Skip(f"duplicate id {case_id} (first at line {first_line[case_id]})")
            first_line[case_id] = number
            _import_record(raw, case_id, upstream_id, result)
        except _Skip as exc:
            result.skipped.append((label, str(exc)))
        except Exception as exc:  # hostile input must never crash the import
            result.skipped.append((label, f"cannot convert: {type(exc).__name__}: {exc}"))
    return result


def _import_record(
    raw: dict[str, Any], case_id: str, upstream_id: str, result: UpstreamImport
) -> None:
    converted = _convert(raw, case_id)
    problems, leak_rule = _validation_problems(converted.record)
    if problems:
        shown = "; ".join(problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise _Skip(f"fails validation: {shown}{more}")
    case = case_from_dict(converted.record)
    spec = case.case_spec
    geometry = get_geometry(spec.domain.type, spec.domain.geometry_params)
    try:
        scored = evaluation_mask(spec.eval_grid, geometry).scored
    except ValueError as exc:
        raise _Skip(str(exc)) from None
    inner = _inner_points(case, scored)

    difference = None
    errors: dict[str, float] = {}
    if converted.exact is not None:
        _check_consistency(case, geometry, inner, converted.exact)
        if converted.upstream_forcing is not None:
            difference = _forcing_difference(case, inner, converted.upstream_forcing)
        errors = _leak_errors(case, geometry, scored)

    result.cases.append(case)
    result.upstream_ids[case.id] = upstream_id
    result.notes.extend((case.id, note) for note in converted.notes)
    if converted.defaults:
        result.import_notes[case.id] = list(converted.defaults)
    if leak_rule:
        result.rejected_by_validator.append(case.id)
    if errors:
        result.cheat_errors[case.id] = errors
    if difference is not None:
        assert converted.upstream_forcing is not None
        result.forcing_differences.append(
            ForcingDifference(
                case.id, difference, converted.upstream_forcing, spec.pde.forcing["f"]
            )
        )
    leaking = tuple(k for k, e in errors.items() if e < LEAK_TOLERANCE)
    if leaking:
        result.leaks.append(LeakReport(case.id, upstream_id, leaking, errors))
