"""``pdeagent cases add-track``: give a dataset a track's thresholds.

The dataset is built and calibrated on one track (``pdeagent cases build``); every
other track that supports a case needs its own baseline error and time for it. This
runs the track's calibration baseline on each case the track supports and lacks
thresholds for, through the sandbox and the timing protocol
(:func:`pdeagent.evaluation.calibration.calibrate_case`), and writes the dataset
again with ``thresholds[track]`` added to those cases and the new version.

- Every measurement is stored under ``build_dir/track-thresholds/<track>/`` as soon
  as it is made, keyed by the case record and the baseline's source, so an
  interrupted run resumes and a changed case or baseline is measured again.
- The baseline must be competent on every case (error below
  :data:`pdeagent.cases.build.E_BASE_LIMIT`): one failure or incompetent case and
  nothing is written; the message names each case and why.
- The version rule (:mod:`pdeagent.cases.versioning`): thresholds added for a track
  that had none on a case leave every existing score comparable, a minor change;
  :func:`pdeagent.cases.versioning.check_bump` refuses a smaller bump.
- Cases are measured one at a time: their times are the thresholds, and a parallel
  run would measure them under contention.
- A track that declares :class:`~pdeagent.stages.Capabilities` (``Track.capabilities``)
  is offered every case they match (:func:`exclusion`): such a case gets the track added
  to ``supported_libraries`` along with its thresholds. When nothing is left to add, the
  error says which capability excluded how many cases.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attrs import define, field

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.build import E_BASE_LIMIT
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case, case_from_dict, case_to_dict, converter
from pdeagent.cases.validate import KNOWN_LIBRARIES, problems_summary, validate_records
from pdeagent.cases.versioning import check_bump
from pdeagent.evaluation.calibration import CalibrationError, calibrate_case
from pdeagent.evaluation.null import NullTiming, measure_null, null_source
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL, EvaluationSetupError
from pdeagent.fileio import atomic_write_bytes
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Sandbox
from pdeagent.scratch import scratch_dir
from pdeagent.stages import CAPABILITY_ORDER, Capabilities, Track

STORE_SCHEMA = 1


class TrackThresholdsError(RuntimeError):
    """The track's thresholds could not be added (nothing was written)."""


@define
class TrackThresholdsResult:
    output: Path
    measured: list[str] = field(factory=list)
    """Cases measured in this run."""
    reused: list[str] = field(factory=list)
    """Cases whose stored measurement was still valid."""
    version: str = ""
    offered: list[str] = field(factory=list)
    """Cases the track's capabilities match that did not list it in
    ``supported_libraries`` (it is added to them)."""


def _key(case: Case, source: str) -> str:
    record = case_to_dict(case)
    record.pop("dataset_version", None)
    record["evaluation_metadata"].pop("thresholds", None)
    blob = json.dumps([record, source, CURRENT_PROTOCOL], sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def case_requirements(case: Case) -> dict[str, set[Any]]:
    """What a case needs of a track, per capability of :class:`Capabilities`."""
    spec = case.case_spec
    output = spec.output
    outputs = {"vector" if output.components else "scalar"}
    if output.pressure is not None:
        outputs.add("pressure")
    bcs = {kind for kind in ("dirichlet", "neumann", "robin", "periodic") if getattr(spec.bc, kind)}
    return {
        "families": {case.family},
        "domains": {spec.domain.type},
        "dimensions": {spec.eval_grid.dim},
        "time_dependence": {"steady" if spec.pde.time is None else "transient"},
        "outputs": outputs,
        "boundary_conditions": bcs,
    }


def exclusion(capabilities: Capabilities, case: Case) -> tuple[str, str] | None:
    """The first capability (in :data:`~pdeagent.stages.CAPABILITY_ORDER`) that does not
    cover ``case``, with the missing value (``("families", "poisson")``); None when the
    case matches."""
    needs = case_requirements(case)
    for name in CAPABILITY_ORDER:
        declared = getattr(capabilities, name)
        if declared is None:
            continue
        missing = sorted(needs[name] - set(declared), key=str)
        if missing:
            return name, ",".join(map(str, missing))
    return None


def matching_cases(capabilities: Capabilities, cases: list[Case]) -> list[Case]:
    """The cases ``capabilities`` cover."""
    return [c for c in cases if exclusion(capabilities, c) is None]


def _why_none(track: Track, cases: list[Case], dataset: Path) -> str:
    """The one-line reason no case of ``dataset`` is left to add for ``track``."""
    caps = track.capabilities
    listed = [c for c in cases if track.name in c.supported_libraries]
    if caps is None:
        if listed:
            return (
                f"no case of {dataset.name} supported by track {track.name!r} lacks its "
                f"thresholds ({len(listed)} list it, all have them)"
            )
        return (
            f"0 of {len(cases)} cases of {dataset.name} list track {track.name!r} in "
            "supported_libraries, and the track declares no capabilities: give its Track "
            "a `capabilities=Capabilities(families=...)` (docs/plugins.md, Capabilities)"
        )
    excluded: dict[str, dict[str, int]] = {}
    matched = 0
    for case in cases:
        why = exclusion(caps, case)
        if why is None:
            matched += 1
        else:
            counts = excluded.setdefault(why[0], {})
            counts[why[1]] = counts.get(why[1], 0) + 1
    if matched:
        return (
            f"no case of {dataset.name} supported by track {track.name!r} lacks its "
            f"thresholds ({matched} of {len(cases)} cases match its capabilities, all "
            "have them)"
        )
    parts = []
    for name in CAPABILITY_ORDER:
        if name in excluded:
            counts = excluded[name]
            top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            shown = ", ".join(f"{value}: {n}" for value, n in top[:6])
            more = f", +{len(top) - 6} more" if len(top) > 6 else ""
            parts.append(f"{name} not declared ({shown}{more})")
    return f"0 of {len(cases)} cases of {dataset.name} match track {track.name!r}: " + "; ".join(
        parts
    )


def _offer(track: Track, case: Case) -> Case:
    """``case`` with ``track`` added to its supported_libraries."""
    record = case_to_dict(case)
    record["supported_libraries"] = [*record["supported_libraries"], track.name]
    return case_from_dict(record)


def add_track_thresholds(
    host: PluginHost,
    track: Track,
    dataset: Path,
    *,
    output: Path,
    version: str,
    sandbox: Sandbox,
    build_dir: Path,
    known_libraries: tuple[str, ...] | frozenset[str] = tuple(KNOWN_LIBRARIES),
    progress: Callable[[str, int, int], None] | None = None,
    case_ids: Sequence[str] | None = None,
) -> TrackThresholdsResult:
    """Measure and add ``track``'s thresholds to every case of ``dataset`` the track
    supports (lists it, or its capabilities match) and that has none yet (only those of
    ``case_ids`` when given); write the dataset with ``version`` to ``output``."""
    dataset = Path(dataset).resolve()
    cases = load_cases(dataset, known_libraries=known_libraries)
    chosen = None if case_ids is None else set(case_ids)
    if chosen is not None:
        unknown = sorted(chosen - {c.id for c in cases})
        if unknown:
            raise TrackThresholdsError(
                f"{len(unknown)} of the --cases ids are not in {dataset.name} (e.g. {unknown[0]})"
            )
    offered: set[str] = set()
    if track.capabilities is not None:
        offered = {
            c.id
            for c in matching_cases(track.capabilities, cases)
            if track.name not in c.supported_libraries and (chosen is None or c.id in chosen)
        }
    todo = [
        _offer(track, c) if c.id in offered else c
        for c in cases
        if (track.name in c.supported_libraries or c.id in offered)
        and track.name not in c.evaluation_metadata.thresholds
        and (chosen is None or c.id in chosen)
    ]
    if not todo:
        if chosen is not None:
            raise TrackThresholdsError(
                f"none of the {len(chosen)} --cases is left to add for track {track.name!r} "
                "(each is already calibrated on it, or outside its capabilities); without "
                "--cases: " + _why_none(track, cases, dataset)
            )
        raise TrackThresholdsError(_why_none(track, cases, dataset))
    check_inputs(host, track, cases, todo, dataset)
    store = Path(build_dir) / "track-thresholds" / track.name
    store.mkdir(parents=True, exist_ok=True)
    result = TrackThresholdsResult(output=Path(output), offered=sorted(offered))
    failures: list[str] = []
    measured: dict[str, dict[str, Any]] = {}
    null: NullTiming | None = None  # measured with the first case, reused for the others
    for done, case in enumerate(todo):
        if progress is not None:
            progress(f"{track.name} thresholds", done, len(todo))
        view = agent_view(case, track.name)
        source = host.hook.pdeagent_calibration_source(
            track=track,
            case_view=view,
            calibration_config=case.evaluation_metadata.calibration_config,
        )
        if source is None:
            failures.append(f"{case.id}: track {track.name!r} has no calibration baseline")
            continue
        key = _key(case, source)
        path = store / f"{case.id}.json"
        stored = _read(path, key)
        if stored is not None:
            result.reused.append(case.id)
        else:
            with scratch_dir("pdeagent-thr-") as tmp:
                try:
                    if null is None:
                        null = measure_null(
                            host, track, case, sandbox=sandbox, workroot=Path(tmp) / "null",
                            dataset_dir=dataset.parent,
                        )  # fmt: skip
                    th = calibrate_case(
                        host, track, case, sandbox=sandbox, workroot=Path(tmp) / "w",
                        dataset_dir=dataset.parent, source=source, null=null,
                    )  # fmt: skip
                except (CalibrationError, EvaluationSetupError) as exc:
                    failures.append(f"{case.id}: {str(exc).splitlines()[0][:300]}")
                    continue
            stored = converter.unstructure(th)
            atomic_write_bytes(
                path,
                json.dumps({"schema": STORE_SCHEMA, "key": key, "thresholds": stored}).encode(),
            )
            result.measured.append(case.id)
        if not stored["e_base"] < E_BASE_LIMIT:
            failures.append(
                f"{case.id}: the baseline's error {stored['e_base']:.3g} is not below "
                f"{E_BASE_LIMIT} (not a competent baseline)"
            )
            continue
        measured[case.id] = stored
    if progress is not None:
        progress(f"{track.name} thresholds", len(todo), len(todo))
    if failures:
        raise TrackThresholdsError(
            f"{len(failures)} of {len(todo)} cases have no usable {track.name} baseline; "
            "nothing written:\n  " + "\n  ".join(failures[:40])
        )
    records = []
    for case in cases:
        record = case_to_dict(case)
        record["dataset_version"] = version
        if case.id in measured:
            record["evaluation_metadata"]["thresholds"][track.name] = measured[case.id]
            if case.id in offered:
                record["supported_libraries"] = [*record["supported_libraries"], track.name]
        records.append(case_to_dict(case_from_dict(record)))
    problems = validate_records(records, known_libraries=known_libraries)
    if problems:
        summary = problems_summary(problems)
        raise TrackThresholdsError(f"the new dataset does not validate:\n{summary}")
    new_cases = [case_from_dict(r) for r in records]
    check_bump(cases, new_cases, old_dir=dataset.parent, new_dir=dataset.parent)
    copy_references(cases, dataset.parent, Path(output).resolve().parent)
    text = "\n".join(json.dumps(r, sort_keys=False) for r in records) + "\n"
    atomic_write_bytes(Path(output), text.encode("utf-8"))
    result.version = version
    return result


def check_inputs(
    host: PluginHost, track: Track, cases: list[Case], todo: list[Case], dataset: Path
) -> None:
    """What add-track needs before it measures anything (:class:`TrackThresholdsError`
    otherwise): every no-exact case's reference arrays beside the dataset file (grading
    and the written dataset need them), the track's null program (t_null) and a
    calibration baseline for the cases to measure."""
    missing = [
        c.id
        for c in cases
        if c.evaluation_metadata.reference_path
        and not (dataset.parent / c.evaluation_metadata.reference_path).is_file()
    ]
    if missing:
        raise TrackThresholdsError(
            f"{len(missing)} no-exact cases lack their reference arrays beside {dataset.name} "
            f"(e.g. {missing[0]}: {dataset.parent / _reference_path(cases, missing[0])}): a "
            "dataset file needs the references/ folder it names next to it; copy the folder "
            "too (nothing was measured)"
        )
    try:
        null_source(host, track, todo[0])
    except EvaluationSetupError as exc:
        raise TrackThresholdsError(f"{exc} (nothing was measured)") from None


def _reference_path(cases: list[Case], case_id: str) -> str:
    return str(next(c for c in cases if c.id == case_id).evaluation_metadata.reference_path)


def copy_references(cases: list[Case], source_dir: Path, target_dir: Path) -> list[Path]:
    """Copy the reference arrays of ``cases`` (``reference_path``, relative to the dataset
    file) from ``source_dir`` to ``target_dir``, so a dataset written elsewhere grades
    its no-exact cases; the copies made. An identical file already there is kept; a
    different one is an error (nothing is overwritten)."""
    if source_dir.resolve() == target_dir.resolve():
        return []
    copied: list[Path] = []
    for case in cases:
        relative = case.evaluation_metadata.reference_path
        if not relative:
            continue
        src, dst = source_dir / relative, target_dir / relative
        if not src.is_file():
            raise TrackThresholdsError(f"case {case.id}: reference file {src} not found")
        if dst.exists():
            if dst.read_bytes() != src.read_bytes():
                raise TrackThresholdsError(
                    f"case {case.id}: {dst} exists and differs from {src}; remove it or "
                    "write the dataset to another directory"
                )
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        copied.append(dst)
    return copied


def _read(path: Path, key: str) -> dict[str, Any] | None:
    """A stored measurement for exactly this case and baseline, or None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != STORE_SCHEMA or data.get("key") != key:
        return None
    thresholds = data.get("thresholds")
    return thresholds if isinstance(thresholds, dict) and "e_base" in thresholds else None
