"""Validation of case records: JSON Schema, structure, then semantic checks.

Every finding is a :class:`Problem` naming the case, the line of the file, the
dotted field path and a message. The checks, in order:

1. JSON Schema (``schema/case.schema.json``, Draft 2020-12). A record with schema
   errors gets no further checks (they would only repeat the same fault).
2. Structuring with the one cattrs converter of :mod:`pdeagent.cases.model`.
3. Semantic checks (:mod:`pdeagent.cases.semantic_checks`): family rules, expressions, geometry
   and boundary tags, evaluation grid, output arrays (and a flow case's pressure
   entry: its normalization must be the one its boundary conditions imply), libraries,
   construction method, thresholds, and the no-leak rule of SPEC §4 (a Dirichlet or
   initial expression of an MMS case must not equal the manufactured solution inside).

Decisions:

- Expressions may reference *numeric* case parameters by name (``kappa*x``); a
  parameter given as an expression cannot be referenced (no chains, no cycles).
  A parameter may not be named like a coordinate, ``pi`` or a function
  (:data:`pdeagent.cases.expressions.RESERVED_NAMES`); ``E`` is tolerated as a
  parameter name (Young's modulus), but then no expression of that case may use
  the name ``E`` (it would be ambiguous with Euler's number).
- A ``reference_numerical`` case needs a ``reference_config`` with at least
  :data:`REFERENCE_CONFIG_KEYS` (plus ``time_step`` when transient).

Findings are :class:`Problem` records (:mod:`pdeagent.cases.problems`); this module
reads files, runs the three steps and re-exports the names its importers use.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import cattrs
from jsonschema import Draft202012Validator

from pdeagent.cases.model import case_from_dict
from pdeagent.cases.problems import Problem, problems_as_dicts, problems_summary
from pdeagent.cases.semantic_checks import (
    BOUNDS_TOL,
    DERIVED_SCALAR_OUTPUTS,
    ELASTIC_PARAMETER_SETS,
    LEAK_TOLERANCE,
    MAX_GRID_POINTS,
    PRIMARY_QUANTITIES,
    REFERENCE_CONFIG_KEYS,
    THRESHOLD_RTOL,
    _RecordChecker,
)

KNOWN_LIBRARIES: tuple[str, ...] = ("dolfinx", "firedrake", "dealii")
"""The tracks the shipped benchmark dataset names: what a case may list in
``supported_libraries`` when the caller passes no names (validating a dataset without
plugins loaded). Callers with a plugin host pass its names instead
(:meth:`pdeagent.plugins.PluginHost.library_names`: the registered tracks plus these)."""


@cache
def case_schema() -> dict[str, Any]:
    """The JSON Schema of one case record (shipped in the package)."""
    text = resources.files("pdeagent.cases").joinpath("schema/case.schema.json").read_text()
    return json.loads(text)


@cache
def _schema_validator() -> Draft202012Validator:
    return Draft202012Validator(case_schema())


def _json_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _non_finite_paths(obj: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[Any, ...]]:
    if isinstance(obj, float) and not math.isfinite(obj):
        yield path
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _non_finite_paths(value, (*path, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _non_finite_paths(value, (*path, i))


def _schema_problems(record: Any, case_id: str | None, line: int | None) -> list[Problem]:
    problems = []
    errors = sorted(_schema_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    for error in errors:
        parts = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [p for p in error.validator_value if p not in error.instance]
            named = [p for p in missing if repr(p) in error.message]
            if named:
                parts.append(named[0])
                problems.append(Problem(case_id, line, _json_path(parts), "is required"))
                continue
        problems.append(Problem(case_id, line, _json_path(parts), _short(error.message)))
    for path in _non_finite_paths(record):
        problems.append(Problem(case_id, line, _json_path(path), "number must be finite"))
    return problems


def _structure_problems(exc: Exception, case_id: str | None, line: int | None) -> list[Problem]:
    problems = []
    for message in cattrs.transform_error(exc):
        text, _, path = message.rpartition(" @ ")
        field = re.sub(r"\['([^']*)'\]", r".\1", path.removeprefix("$")).lstrip(".")
        problems.append(Problem(case_id, line, field, _short(text or message)))
    return problems


def validate_records(
    records: Sequence[Any],
    *,
    known_libraries: Iterable[str] = KNOWN_LIBRARIES,
    lines: Sequence[int | None] | None = None,
) -> list[Problem]:
    """Validate case records (parsed JSON objects); returns all problems found.

    ``lines``: the file line of each record (for messages), if known.
    """
    tracks = frozenset(known_libraries)
    problems: list[Problem] = []
    first_seen: dict[str, int | None] = {}
    for index, record in enumerate(records):
        line = lines[index] if lines is not None else None
        raw_id = record.get("id") if isinstance(record, dict) else None
        case_id = raw_id if isinstance(raw_id, str) and raw_id else None
        if case_id is not None:
            if case_id in first_seen:
                where = first_seen[case_id]
                at = f" (first at line {where})" if where is not None else ""
                problems.append(Problem(case_id, line, "id", f"duplicate id{at}"))
            else:
                first_seen[case_id] = line if line is not None else index + 1
        found = _schema_problems(record, case_id, line)
        if found:
            problems.extend(found)
            continue
        try:
            case = case_from_dict(record)
        except Exception as exc:
            problems.extend(_structure_problems(exc, case_id, line))
            continue
        problems.extend(_RecordChecker(case, line, tracks).run())
    return problems


def read_jsonl(path: str | Path) -> tuple[list[Any], list[int], list[Problem]]:
    """Read a JSON Lines file: (records, their line numbers, problems of unreadable lines)."""

    def reject_constant(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name}")

    records: list[Any] = []
    lines: list[int] = []
    problems: list[Problem] = []
    text = Path(path).read_text(encoding="utf-8")
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw, parse_constant=reject_constant)
        except ValueError as exc:
            problems.append(Problem(None, number, "", f"not valid JSON: {exc}"))
            continue
        records.append(record)
        lines.append(number)
    return records, lines, problems


def _missing_references(dataset_dir: Path, records: list[Any], lines: list[int]) -> list[Problem]:
    """A problem for each record whose ``reference_path`` names no file beside the
    dataset (relative paths only: the arrays travel with the dataset)."""
    found = []
    for record, line in zip(records, lines, strict=True):
        meta = record.get("evaluation_metadata") if isinstance(record, dict) else None
        ref = meta.get("reference_path") if isinstance(meta, dict) else None
        if not isinstance(ref, str) or not ref:
            continue
        if not (dataset_dir / ref).is_file():
            found.append(
                Problem(
                    record.get("id") if isinstance(record.get("id"), str) else None,
                    line,
                    "evaluation_metadata.reference_path",
                    f"reference file {dataset_dir / ref} not found",
                )
            )
    return found


def validate_file(
    path: str | Path,
    *,
    known_libraries: Iterable[str] = KNOWN_LIBRARIES,
    check_references: bool = False,
) -> list[Problem]:
    """Validate a JSON Lines case file (one record per non-blank line); with
    ``check_references``, also that every ``reference_path`` names a file beside it."""
    records, lines, problems = read_jsonl(path)
    problems.extend(validate_records(records, known_libraries=known_libraries, lines=lines))
    if check_references:
        problems.extend(_missing_references(Path(path).parent, records, lines))
    problems.sort(key=lambda p: p.line if p.line is not None else 0)
    return problems


__all__ = [
    "BOUNDS_TOL",
    "DERIVED_SCALAR_OUTPUTS",
    "ELASTIC_PARAMETER_SETS",
    "KNOWN_LIBRARIES",
    "LEAK_TOLERANCE",
    "MAX_GRID_POINTS",
    "PRIMARY_QUANTITIES",
    "REFERENCE_CONFIG_KEYS",
    "THRESHOLD_RTOL",
    "Problem",
    "case_schema",
    "problems_as_dicts",
    "problems_summary",
    "read_jsonl",
    "validate_file",
    "validate_records",
]
