"""Calibration on the user's machine: e_base and t_base of the track's own baseline.

The baseline source comes from the track (``pdeagent_calibration_source``) and is
graded by :func:`pdeagent.evaluation.pipeline.evaluate_source` without thresholds, so
it goes through exactly the sandbox and timing protocol submissions go through.
Results are stored per dataset file (by content hash) and track, one JSON file,
written atomically after every case so an interrupted calibration keeps its work.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import LEGACY_PROTOCOL, PRISTINE_PROTOCOL, Case, Thresholds, converter
from pdeagent.evaluation.null import NullTiming, measure_null
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL, EvaluationSetupError, evaluate_source
from pdeagent.evaluation.speed_sample import (
    E_BASE_TOLERANCE,
    SampledCase,
    SpeedSample,
    SpeedSampleError,
    case_ratio,
    movable,
    moved,
    sample_ratio,
)
from pdeagent.machine import fingerprint
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Sandbox
from pdeagent.scoring.verdict import TAU_ACC_MAX, spread, timing_noise
from pdeagent.scoring.verdict import thresholds as compute_thresholds
from pdeagent.stages import Track

STORE_SCHEMA_VERSION = 1


class CalibrationError(RuntimeError):
    """The baseline failed on a case (the case, not the submission, is at fault)."""


def calibrate_case(
    host: PluginHost,
    track: Track,
    case: Case,
    *,
    sandbox: Sandbox,
    workroot: Path,
    dataset_dir: Path | None = None,
    cache_dir: Path | None = None,
    reference: dict | None = None,
    source: str | None = None,
    null: NullTiming | None = None,
    protocol: int = CURRENT_PROTOCOL,
) -> Thresholds:
    """Measure e_base / t_base of the track's baseline (``source`` when the caller already
    fetched it from ``pdeagent_calibration_source``) with ``protocol``.

    Under the pristine protocol the thresholds carry ``t_null`` (from ``null``, the
    caller's measurement of the track's null program on this machine
    (:func:`~pdeagent.evaluation.null.measure_null`), else measured here), the timing
    noise ``t_noise`` (the larger spread of the null program's and the baseline's timed
    repeats) and use the solve time rule; ``cache_dir`` (a cache shared across runs) is
    only for the legacy protocol.
    """

    if source is None:
        view = agent_view(case, track.name)
        source = host.call_track_hook(
            track,
            "pdeagent_calibration_source",
            case_view=view,
            calibration_config=case.evaluation_metadata.calibration_config,
        )
    if source is None:
        raise EvaluationSetupError(f"track {track.name!r} provides no calibration baseline")
    report = evaluate_source(
        host,
        track,
        case,
        source,
        sandbox=sandbox,
        workroot=workroot,
        thresholds=None,
        dataset_dir=dataset_dir,
        cache_dir=cache_dir if protocol == LEGACY_PROTOCOL else None,
        reference=reference,
        protocol=protocol,
    )
    if report.verdict is not None or report.error is None or report.runtime_sec is None:
        raise CalibrationError(
            f"case {case.id}: the {track.name} baseline failed ({report.reason}): "
            f"{report.message}\n{report.stderr_excerpt[-1500:]}"
        )
    pristine = protocol >= PRISTINE_PROTOCOL
    t_null = t_noise = None
    if pristine:
        if null is None:
            null = measure_null(
                host,
                track,
                case,
                sandbox=sandbox,
                workroot=workroot.with_name(workroot.name + "-null"),
                dataset_dir=dataset_dir,
                reference=reference,
                protocol=protocol,
            )
        t_null = null.t_null
        t_noise = timing_noise(null.samples, report.runtime_samples)
    cfg = case.evaluation_config
    tau_acc, tau_time = compute_thresholds(
        report.error,
        report.runtime_sec,
        alpha_acc=cfg.alpha_acc,
        alpha_time=cfg.alpha_time,
        tau_min=cfg.tau_min,
        t_null=t_null,
        tau_acc_max=TAU_ACC_MAX if pristine else None,
        t_noise=t_noise,
    )
    return Thresholds(
        e_base=report.error,
        t_base=report.runtime_sec,
        tau_acc=tau_acc,
        tau_time=tau_time,
        calibrated_on={
            **fingerprint(),
            **track_identity(track),
            "backend": sandbox.name,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
        protocol=protocol,
        t_null=t_null,
        t_noise=t_noise,
    )


def track_identity(track: Track) -> dict[str, str]:
    """The track and library a calibration was measured with (part of ``calibrated_on``)."""
    version = f" {track.library_version}" if track.library_version else ""
    return {"track": track.name, "library": f"{track.library}{version}"}


def store_path(cases_file: Path, track: str) -> Path:
    """Where local calibrations of ``cases_file`` on ``track`` live."""
    digest = hashlib.sha256(cases_file.read_bytes()).hexdigest()[:16]
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pdeagent" / "calibration" / digest / f"{track}.json"


class LocalCalibration:
    """Thresholds measured on this machine for one dataset file and track: per case
    (``pdeagent calibrate``), and a speed sample that moves every other case's shipped
    thresholds here (``pdeagent calibrate --speed-sample N``,
    :mod:`pdeagent.evaluation.speed_sample`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cases: dict[str, Thresholds] = {}
        self.speed_sample: SpeedSample | None = None
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("schema_version") != STORE_SCHEMA_VERSION:
                    raise ValueError("unknown schema_version")
                self.cases = {
                    cid: converter.structure(th, Thresholds) for cid, th in data["cases"].items()
                }
                if data.get("speed_sample") is not None:
                    self.speed_sample = converter.structure(data["speed_sample"], SpeedSample)
            except (ValueError, KeyError, TypeError) as exc:
                raise EvaluationSetupError(
                    f"local calibration file {path} is unreadable ({exc}); delete it to recalibrate"
                ) from None

    def get(self, case_id: str) -> Thresholds | None:
        """The case's own local calibration (None: not calibrated per case)."""
        return self.cases.get(case_id)

    def for_case(self, case: Case, track: str) -> Thresholds | None:
        """What grades ``case`` on this machine: its own local calibration, else its
        shipped thresholds moved here by the speed sample (when there is one and they
        can be moved), else None (the shipped thresholds grade it as they are)."""
        own = self.cases.get(case.id)
        if own is not None or self.speed_sample is None:
            return own
        shipped = case.evaluation_metadata.thresholds.get(track)
        if shipped is None or not movable(shipped):
            return None
        return moved(shipped, self.speed_sample, case.evaluation_config)

    def put_speed_sample(self, sample: SpeedSample) -> None:
        self.speed_sample = sample
        self.save()

    def put(self, case_id: str, thresholds: Thresholds) -> None:
        self.cases[case_id] = thresholds
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {
            "schema_version": STORE_SCHEMA_VERSION,
            "cases": {cid: converter.unstructure(th) for cid, th in sorted(self.cases.items())},
        }
        if self.speed_sample is not None:
            data["speed_sample"] = converter.unstructure(self.speed_sample)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".calibration-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, self.path)


def measure_speed_sample(
    host: PluginHost,
    track: Track,
    chosen: Sequence[Case],
    *,
    sandbox: Sandbox,
    workroot: Path,
    dataset_dir: Path | None,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> SpeedSample:
    """Time the ``chosen`` cases (drawn from :func:`eligible_cases` by the caller's
    stratified sample with ``seed``) and the null program here, return the sample
    (module doc). Raises :class:`SpeedSampleError`; a failing baseline raises
    :class:`pdeagent.evaluation.calibration.CalibrationError`."""
    if not chosen:
        raise SpeedSampleError("no case to sample")
    not_movable = [
        c.id
        for c in chosen
        if track.name not in c.supported_libraries
        or not movable(c.evaluation_metadata.thresholds.get(track.name))
    ]
    if not_movable:
        raise SpeedSampleError(
            f"thresholds a speed sample cannot move (legacy, or not on track "
            f"{track.name!r}): {', '.join(not_movable[:5])}"
        )
    null: NullTiming | None = None
    sampled: list[SampledCase] = []
    for i, case in enumerate(chosen):
        if progress is not None:
            progress(f"speed sample: {case.id}", i, len(chosen))
        shipped = case.evaluation_metadata.thresholds[track.name]
        if null is None:
            null = measure_null(
                host, track, case, sandbox=sandbox, workroot=workroot / "null",
                dataset_dir=dataset_dir, protocol=shipped.protocol,
            )  # fmt: skip
        here = calibrate_case(
            host, track, case, sandbox=sandbox, workroot=workroot / f"case-{i}",
            dataset_dir=dataset_dir, null=null, protocol=shipped.protocol,
        )  # fmt: skip
        low, high = shipped.e_base / E_BASE_TOLERANCE, shipped.e_base * E_BASE_TOLERANCE
        if not low <= here.e_base <= high:
            raise SpeedSampleError(
                f"case {case.id}: the {track.name} baseline's error here is {here.e_base:.3g}, "
                f"shipped {shipped.e_base:.3g}: this runtime does not reproduce the reference "
                "machine's (another library build?); calibrate per case instead"
            )
        sampled.append(
            SampledCase(
                case=case.id,
                t_base=shipped.t_base,
                t_null=float(shipped.t_null or 0.0),
                t_base_here=here.t_base,
                e_base=shipped.e_base,
                e_base_here=here.e_base,
                ratio=case_ratio(shipped, null.t_null, here.t_base),
            )
        )
    if progress is not None:
        progress("speed sample", len(chosen), len(chosen))
    assert null is not None
    return SpeedSample(
        ratio=sample_ratio(sampled),
        t_null=null.t_null,
        null_spread=spread(null.samples),
        cases=sampled,
        seed=seed,
        calibrated_on={
            **fingerprint(),
            **track_identity(track),
            "backend": sandbox.name,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        },
    )
