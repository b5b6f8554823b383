"""The report of one graded execution (``report.json``)."""

from __future__ import annotations

from typing import Any

from attrs import asdict, define, field

REPORT_SCHEMA_VERSION = 1


@define
class Report:
    case_id: str
    track: str
    verdict: str | None
    """PASS / F-Exec / F-Acc / F-Time / F-Gen; None when only measuring (calibration)."""
    reason: str | None = None
    """Machine-readable F-Exec reason."""
    message: str = ""
    error: float | None = None
    """The verdict error (:func:`pdeagent.scoring.metrics.case_error`): the relative L2 error
    over scored points and components; for a flow output with a pressure the larger of the
    velocity's and the pressure's (``metrics["rel_l2_groups"]`` holds both)."""
    runtime_sec: float | None = None
    """Median of the timed repeats (SPEC §7)."""
    runtime_samples: list[float] = field(factory=list)
    repeat_errors: list[float] = field(factory=list)
    """Error of each timed repeat's own output (every repeat is checked and gated)."""
    protocol: int | None = None
    """The timing protocol the program was run with (see :mod:`pdeagent.cases.model`)."""
    compile_time_sec: float | None = None
    accuracy_run_wall_sec: float | None = None
    thresholds: dict[str, Any] | None = None
    metrics: dict[str, Any] = field(factory=dict)
    diagnostics: dict[str, Any] = field(factory=dict)
    execution: dict[str, Any] = field(factory=dict)
    stdout_excerpt: str = ""
    stderr_excerpt: str = ""
    schema_version: int = REPORT_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema_version": data.pop("schema_version"), **data}
