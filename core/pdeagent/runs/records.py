"""The record of one attempt of a run (``report.json`` in the attempt's directory).

Written last, atomically: an attempt directory with a valid ``report.json`` is
finished; anything else (no file, a truncated or corrupted one, a foreign schema)
is redone on ``--resume`` and never trusted. ``pdeagent report`` reads only these
files (plus ``run.json``), so everything a report needs is here: the verdict, the
measured error and runtime, the thresholds' bases (for threshold sensitivity), the
case's family / geometry / math types, diagnostics, tokens and cost.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import cattrs
from attrs import define, field

from pdeagent.fileio import atomic_write_json

ATTEMPT_SCHEMA_VERSION = 1
VERDICTS = ("PASS", "F-Exec", "F-Acc", "F-Time", "F-Gen", "ERROR")
"""``ERROR``: the harness could not grade (sandbox unavailable, harness failure); an
infrastructure failure, never counted for or against the model."""
MAX_REPORT_BYTES = 4_000_000
GRADED_FIELDS = (
    "verdict", "reason", "message", "error", "runtime_sec", "runtime_samples",
    "compile_time_sec", "accuracy_run_wall_sec", "thresholds", "metrics", "diagnostics",
    "stderr_excerpt",
)  # fmt: skip
"""Fields copied as they are from the evaluation's :class:`~pdeagent.evaluation.report.Report`."""


@define
class Tokens:
    input: int | None = None
    output: int | None = None


@define
class AttemptReport:
    track: str
    provider: str
    model: str
    case_id: str
    attempt: int
    mode: str
    verdict: str
    reason: str | None = None
    message: str = ""
    infrastructure: bool = False
    """True when the failure is the harness's or the provider's (no reply, sandbox
    unavailable): kept apart from model failures, redone by ``--rerun-errors``."""
    family: str = ""
    geometry: str = ""
    math_type: list[str] = field(factory=list)
    dimension: int | None = None
    error: float | None = None
    """Relative L2 error on the evaluation grid (None when not measured)."""
    runtime_sec: float | None = None
    runtime_samples: list[float] = field(factory=list)
    compile_time_sec: float | None = None
    accuracy_run_wall_sec: float | None = None
    thresholds: dict[str, Any] | None = None
    """``tau_acc``, ``tau_time``, ``e_base``, ``t_base``, ``source`` as graded."""
    alphas: dict[str, float] = field(factory=dict)
    """``alpha_acc``, ``alpha_time``, ``tau_min`` the thresholds were computed with."""
    metrics: dict[str, Any] = field(factory=dict)
    diagnostics: dict[str, Any] = field(factory=dict)
    tokens: Tokens = field(factory=Tokens)
    cost_usd: float | None = None
    cached: bool = False
    generation_sec: float | None = None
    """Wall time of the provider call (0 when served from the cache or the saved run)."""
    evaluation_wall_sec: float | None = None
    """Wall time of the whole evaluation in the harness (build, runs, grading)."""
    stderr_excerpt: str = ""
    schema_version: int = ATTEMPT_SCHEMA_VERSION

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"


_converter = cattrs.Converter(forbid_extra_keys=False)


def _finite_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and math.isfinite(value))


def attempt_to_dict(report: AttemptReport) -> dict[str, Any]:
    return _converter.unstructure(report)


def attempt_from_dict(data: Any) -> AttemptReport:
    """Parse and check a report; raises ValueError on anything malformed."""
    if not isinstance(data, dict):
        raise ValueError("report is not a JSON object")
    if data.get("schema_version") != ATTEMPT_SCHEMA_VERSION:
        raise ValueError(f"unknown report schema_version {data.get('schema_version')!r}")
    try:
        report = _converter.structure(data, AttemptReport)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"malformed report: {exc}") from None
    if report.verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {report.verdict!r}")
    if report.attempt < 0:
        raise ValueError("negative attempt")
    if not (_finite_or_none(report.error) and _finite_or_none(report.runtime_sec)):
        raise ValueError("error/runtime must be finite numbers or null")
    return report


def write_attempt(path: Path, report: AttemptReport) -> None:
    atomic_write_json(path, attempt_to_dict(report))


def read_attempt(path: Path) -> AttemptReport | None:
    """The report at ``path``, or None when it is missing, truncated or malformed."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_REPORT_BYTES:
            return None
        return attempt_from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
