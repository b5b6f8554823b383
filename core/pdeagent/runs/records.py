"""The record of one attempt of a run (``report.json`` in the attempt's directory).

Written last, atomically: an attempt directory with a valid ``report.json`` is
finished; anything else (no file, a truncated or corrupted one, a foreign schema,
values of the wrong JSON type, a report of another attempt, a symlink or a
directory in its place) is redone on ``--resume`` and never trusted.
``pdeagent report`` reads only these files (plus ``run.json``), so everything a
report needs is here: the verdict, the measured error and runtime, the thresholds'
bases (for threshold sensitivity), the case's family / geometry / math types,
diagnostics, tokens and cost.
"""

from __future__ import annotations

import json
import math
import shutil
import typing
from pathlib import Path
from typing import Any

import cattrs
from attrs import define, field

from pdeagent.fileio import atomic_write_json
from pdeagent.runs.layout import path_component

ATTEMPT_SCHEMA_VERSION = 1
VERDICTS = ("PASS", "F-Exec", "F-Acc", "F-Time", "F-Gen", "ERROR")
"""``ERROR``: the harness could not grade (sandbox unavailable, harness failure); an
infrastructure failure, never counted for or against the model."""
MAX_REPORT_BYTES = 4_000_000
GRADED_FIELDS = (
    "verdict", "reason", "message", "error", "runtime_sec", "runtime_samples",
    "repeat_errors", "protocol", "compile_time_sec", "accuracy_run_wall_sec", "thresholds",
    "metrics", "diagnostics", "stderr_excerpt",
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
    repeat_errors: list[float] = field(factory=list)
    """Error of each timed repeat's own output."""
    protocol: int | None = None
    """Timing protocol the attempt was graded with (None: written before protocols)."""
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
    dropped_exchanges: int = 0
    """Feedback mode: earlier exchanges left out of the conversation to fit the model's
    context (the oldest middle ones; 0 in reports written before conversations)."""
    agent: dict[str, Any] | None = None
    """Agent mode: how the episode went (``status``, ``turns``, ``tool_calls``,
    ``tool_time_sec``, ``submitted_path``, ``transcript``: the file beside the report);
    None in other modes."""
    evaluation_wall_sec: float | None = None
    """Wall time of the whole evaluation in the harness (build, runs, grading)."""
    stderr_excerpt: str = ""
    calibrated_on: dict[str, Any] | None = None
    """Where the thresholds it was graded with were calibrated (machine fingerprint,
    sandbox ``backend``, track, library, date); None: not graded, explicit thresholds,
    or a report written before this was recorded."""
    schema_version: int = ATTEMPT_SCHEMA_VERSION

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"


_converter = cattrs.Converter(forbid_extra_keys=False)


def _strict_scalar(kinds: tuple[type, ...], name: str, convert: Any = None) -> Any:
    """A structure hook taking only JSON values of ``kinds`` (cattrs alone would turn
    ``"false"`` into True, ``"0"`` into 0 and ``"abc"`` into ``["a", "b", "c"]``)."""

    def hook(value: Any, _type: Any) -> Any:
        if isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds):
            raise TypeError(f"expected {name}, got {value!r}")
        return value if convert is None else convert(value)

    return hook


_converter.register_structure_hook(str, _strict_scalar((str,), "a string"))
_converter.register_structure_hook(int, _strict_scalar((int,), "an integer"))
_converter.register_structure_hook(float, _strict_scalar((int, float), "a number", float))
_converter.register_structure_hook(bool, _strict_scalar((bool,), "true or false"))


def _structure_list(value: Any, type_: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {value!r}")
    (item,) = typing.get_args(type_) or (Any,)
    return [_converter.structure(v, item) for v in value]


_converter.register_structure_hook_func(lambda t: typing.get_origin(t) is list, _structure_list)

_MEASURED = ("runtime_sec", "compile_time_sec", "accuracy_run_wall_sec", "cost_usd",
             "generation_sec", "evaluation_wall_sec")  # fmt: skip
"""Numbers that are finite (or null) in every report the harness writes."""


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
    if not isinstance(data.get("tokens", {}), dict):
        raise ValueError("malformed report: tokens is not a JSON object")
    try:
        report = _converter.structure(data, AttemptReport)
    except cattrs.BaseValidationError as exc:
        raise ValueError(f"malformed report: {'; '.join(cattrs.transform_error(exc))}") from None
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"malformed report: {exc}") from None
    if report.verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {report.verdict!r}")
    if report.attempt < 0:
        raise ValueError("negative attempt")
    # A non-finite error is a verdict of its own (F-Acc error_not_finite); anywhere
    # else it is a corruption.
    error_ok = _finite_or_none(report.error) or (
        report.verdict == "F-Acc"
        and report.reason == "error_not_finite"
        and not (report.error is not None and report.error < 0)
    )
    measured = [getattr(report, name) for name in _MEASURED] + report.runtime_samples
    if not (error_ok and all(map(_finite_or_none, measured))):
        raise ValueError("error/runtime/cost must be finite numbers or null")
    return report


def _in_its_directory(path: Path, report: AttemptReport) -> bool:
    """Whether ``path`` is ``.../<track>/<model>/<case>/attempt-<k>/report.json`` of
    this report (a report copied or moved into another attempt's folder is not)."""
    expected = (
        path_component(report.track),
        path_component(report.model),
        path_component(report.case_id),
        f"attempt-{report.attempt}",
    )
    return path.parts[-5:-1] == expected


def write_attempt(path: Path, report: AttemptReport) -> None:
    if path.is_dir() and not path.is_symlink():  # garbage where the report goes
        shutil.rmtree(path)
    atomic_write_json(path, attempt_to_dict(report))


def read_attempt(path: Path) -> AttemptReport | None:
    """The report at ``path`` (``RUN/<track>/<model>/<case>/attempt-<k>/report.json``),
    or None when it is missing, truncated, malformed, a symlink, or the report of
    another attempt."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_REPORT_BYTES:
            return None
        report = attempt_from_dict(json.loads(path.read_text(encoding="utf-8")))
        return report if _in_its_directory(path, report) else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
