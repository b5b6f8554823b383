"""``pdeagent cases frontier``: a track's thresholds by the frontier rule (dataset 2.0).

Two steps, so a measurement that spans sessions is never lost:

1. :func:`measure_frontier` runs :func:`pdeagent.evaluation.frontier_calibration.
   calibrate_frontier` on each selected case the track supports, one case at a time
   (every time decides the choice, so nothing runs beside it), and stores each result as
   soon as it is made under ``store/<track>/<case>.json``, keyed by what determines it:
   the case record (without its thresholds and calibration settings), the track's ladder
   for it, its baseline solver source, the protocol and the rule. A stored result whose key
   still matches is reused; a changed case, ladder or solver is measured again. The track's
   null program is timed once per call (``t_null``) and recorded with every case.
2. :func:`apply_frontier` writes the dataset with every supported case's
   ``thresholds[track]`` and ``calibration_config[track]`` (the chosen configuration)
   replaced by the stored results. It writes nothing unless every supported case has a
   valid result whose stored choice recomputes from its trial table by the rule, and whose
   baseline passes its own gate (``e_base <= tau_acc``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attrs import define, field

from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case, case_from_dict, case_to_dict, converter
from pdeagent.cases.validate import KNOWN_LIBRARIES, problems_summary, validate_records
from pdeagent.cases.versioning import check_bump
from pdeagent.evaluation.calibration import CalibrationError
from pdeagent.evaluation.frontier import RULE_NAME, SCREENED_RULE_NAME, budget_for, recompute
from pdeagent.evaluation.frontier_calibration import (
    baseline_source,
    calibrate_frontier,
    frontier_rule,
    ladder_for,
)
from pdeagent.evaluation.null import NullTiming, measure_null
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL, EvaluationSetupError
from pdeagent.evaluation.reference import ReferenceUnavailable, reference_fields
from pdeagent.fileio import atomic_write_bytes
from pdeagent.machine import fingerprint
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Sandbox
from pdeagent.scratch import scratch_dir
from pdeagent.stages import Track

STORE_SCHEMA = 1
RULES = (RULE_NAME, SCREENED_RULE_NAME)
"""The rules a stored choice may carry: both choose by the same rule from their trial
table (:func:`pdeagent.evaluation.frontier.recompute`); frontier-2's table is screened."""
DEFAULT_STORE = Path("cases") / "frontier"
"""In the repository, so partial progress of a long measurement can be committed."""


class FrontierThresholdsError(RuntimeError):
    """The frontier thresholds could not be applied (nothing was written)."""


@define
class FrontierResult:
    measured: list[str] = field(factory=list)
    reused: list[str] = field(factory=list)
    failed: list[tuple[str, str]] = field(factory=list)
    """(case id, why) of cases whose calibration failed (stored too: not retried until
    their key changes or ``retry_failed``)."""
    skipped: list[tuple[str, str]] = field(factory=list)
    """(case id, why) of cases that could not be measured because an input is missing
    (a no-exact case's reference arrays, made by its reference study); nothing stored."""
    null: NullTiming | None = None
    """The null program's timing, measured once per call (its spread enters every
    case's t_noise)."""
    seconds: float = 0.0

    @property
    def t_null(self) -> float | None:
        return None if self.null is None else self.null.t_null


def store_key(host: PluginHost, track: Track, case: Case, rule: str | None = None) -> str:
    """What a stored result depends on (see the module doc)."""
    record = case_to_dict(case)
    record.pop("dataset_version", None)
    meta = record["evaluation_metadata"]
    meta.pop("thresholds", None)
    meta.pop("calibration_config", None)
    blob = json.dumps(
        {
            "record": record,
            "ladder": ladder_for(host, track, case),
            "source": baseline_source(host, track, case, {}),
            "protocol": CURRENT_PROTOCOL,
            "rule": frontier_rule(host, track, case, rule),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _path(store: Path, track: Track, case_id: str) -> Path:
    return store / track.name / f"{case_id}.json"


def read_stored(store: Path, track: Track, case_id: str, key: str | None) -> dict[str, Any] | None:
    """The stored result of a case (``key`` None: whatever key), or None."""
    try:
        data = json.loads(_path(store, track, case_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != STORE_SCHEMA:
        return None
    if key is not None and data.get("key") != key:
        return None
    return data


def measure_frontier(
    host: PluginHost,
    track: Track,
    dataset: Path,
    *,
    sandbox: Sandbox,
    store: Path = DEFAULT_STORE,
    case_ids: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    limit: int | None = None,
    retry_failed: bool = False,
    known_libraries: Sequence[str] = tuple(KNOWN_LIBRARIES),
    progress: Callable[[str, int, int], None] | None = None,
    rule: str | None = None,
) -> FrontierResult:
    """Measure (or reuse) the frontier thresholds of the selected cases; see the module doc.
    ``limit`` bounds the number of new measurements of this call; ``rule`` forces a rule
    (:func:`pdeagent.evaluation.frontier_calibration.frontier_rule`)."""
    started = time.perf_counter()
    dataset = Path(dataset).resolve()
    cases = [
        c
        for c in load_cases(dataset, known_libraries=known_libraries)
        if track.name in c.supported_libraries
        and (not case_ids or c.id in case_ids)
        and (not families or c.family in families)
    ]
    if case_ids:
        missing = sorted(set(case_ids) - {c.id for c in cases})
        if missing:
            raise FrontierThresholdsError(
                f"not in {dataset.name} for track {track.name!r}: {', '.join(missing)}"
            )
    result = FrontierResult()
    todo: list[tuple[Case, str]] = []
    for case in cases:
        key = store_key(host, track, case, rule)
        stored = read_stored(store, track, case.id, key)
        if stored is not None and (stored.get("thresholds") or not retry_failed):
            if stored.get("thresholds"):
                result.reused.append(case.id)
            else:
                result.failed.append((case.id, str(stored.get("failure"))))
            continue
        todo.append((case, key))
    if limit is not None:
        todo = todo[:limit]
    for done, (case, key) in enumerate(todo):
        if progress is not None:
            progress(f"{track.name} frontier {case.id}", done, len(todo))
        try:  # once per case, not per rung; a missing reference is an input, not a result
            reference = reference_fields(case, dataset.parent)
        except ReferenceUnavailable as exc:
            result.skipped.append((case.id, str(exc)))
            continue
        with scratch_dir("pdeagent-frontier-") as tmp:
            work = Path(tmp)
            if result.null is None:
                result.null = measure_null(
                    host, track, case, sandbox=sandbox, workroot=work / "null",
                    dataset_dir=dataset.parent,
                )  # fmt: skip
            t0 = time.perf_counter()
            record: dict[str, Any] = {"schema": STORE_SCHEMA, "key": key, "case": case.id}
            try:
                th = calibrate_frontier(
                    host, track, case, sandbox=sandbox, workroot=work / "frontier",
                    null=result.null, dataset_dir=dataset.parent, reference=reference, rule=rule,
                )  # fmt: skip
            except CalibrationError as exc:
                record["failure"] = str(exc)[:3000]
                result.failed.append((case.id, record["failure"]))
            else:
                record["thresholds"] = converter.unstructure(th)
                result.measured.append(case.id)
            record["seconds"] = round(time.perf_counter() - t0, 2)
            record["machine"] = fingerprint()
        atomic_write_bytes(
            _path(store, track, case.id), json.dumps(record, indent=1, sort_keys=True).encode()
        )
    if progress is not None:
        progress(f"{track.name} frontier", len(todo), len(todo))
    result.seconds = time.perf_counter() - started
    return result


def check_stored(thresholds: dict[str, Any], case: Case) -> list[str]:
    """Problems of a stored frontier result for ``case``: the choice must recompute from
    the trial table by the rule, the thresholds must be the chosen configuration's, and the
    baseline must pass its own accuracy gate."""
    problems = []
    selection = thresholds.get("selection") or {}
    try:
        choice = recompute(
            selection.get("trials"),  # type: ignore[arg-type]
            budget=budget_for(case.case_spec.eval_grid.dim),
            target_error=float(selection.get("target_error")),  # type: ignore[arg-type]
        )
    except (ValueError, TypeError) as exc:
        return [f"the stored trial table does not recompute: {exc}"]
    if selection.get("rule") not in RULES or choice.index != selection.get("chosen"):
        problems.append(f"the stored choice {selection.get('chosen')} is not the rule's")
    if selection.get("budget_sec") != choice.budget:
        problems.append(f"the stored budget {selection.get('budget_sec')} is not the rule's")
    if selection.get("config") != selection["trials"][choice.index]["config"]:
        problems.append("the stored configuration is not the chosen trial's")
    if thresholds.get("protocol") != CURRENT_PROTOCOL or thresholds.get("t_null") is None:
        problems.append(f"not measured with protocol {CURRENT_PROTOCOL} and t_null")
    if not thresholds.get("e_base", 1.0) <= thresholds.get("tau_acc", 0.0):
        problems.append(
            f"the baseline does not pass its own accuracy gate (e_base {thresholds.get('e_base')}"
            f" > tau_acc {thresholds.get('tau_acc')})"
        )
    return problems


def check_reference(
    host: PluginHost, case: Case, thresholds: dict[str, Any], dataset_dir: Path
) -> list[str]:
    """Problems of a no-exact case's reference for the baseline of ``thresholds``: the
    reference arrays (``reference_path``) must be the finest level of a stored, current
    refinement study (its JSON next to them, :mod:`pdeagent.cases.reference_study`)
    whose error estimate is at most ``e_base / 10``. None for a manufactured case."""
    from pdeagent.cases.reference_study import is_current, read_study, reference_is_adequate

    meta = case.evaluation_metadata
    if meta.construction_method != "reference_numerical":
        return []
    if not meta.reference_path:
        return ["no reference_path"]
    path = dataset_dir / meta.reference_path
    study = read_study(path.parent, case.id)
    if study is None or path.name != f"{case.id}.npz":
        return [f"{meta.reference_path} is not the arrays of a stored reference study"]
    try:
        current = is_current(host, host.get_track(str(study.get("track"))), case, study)
    except (KeyError, ValueError) as exc:
        return [f"the reference study's track: {exc}"]
    if not current:
        return ["the reference study is stale (the case or the reference solver changed)"]
    ok, why = reference_is_adequate(study, thresholds.get("e_base"))  # type: ignore[arg-type]
    return [] if ok else [f"reference not adequate: {why}"]


def apply_frontier(
    host: PluginHost,
    track: Track,
    dataset: Path,
    *,
    output: Path,
    version: str,
    store: Path = DEFAULT_STORE,
    known_libraries: Sequence[str] = tuple(KNOWN_LIBRARIES),
) -> int:
    """Write ``dataset`` with ``version`` to ``output``, every supported case's
    thresholds[track] and calibration_config[track] from the store; returns the number of
    cases changed. Raises :class:`FrontierThresholdsError` (nothing written) when a case
    has no valid current result, or its reference is not adequate for it
    (:func:`check_reference`)."""
    dataset = Path(dataset).resolve()
    cases = load_cases(dataset, known_libraries=known_libraries)
    records, problems, changed = [], [], 0
    for case in cases:
        record = case_to_dict(case)
        record["dataset_version"] = version
        if track.name in case.supported_libraries:
            try:
                stored = read_stored(store, track, case.id, store_key(host, track, case))
            except (EvaluationSetupError, ValueError, KeyError) as exc:
                problems.append(f"{case.id}: {exc}")
                continue
            th = (stored or {}).get("thresholds")
            if not th:
                why = (stored or {}).get("failure") or "not measured (or its key changed)"
                problems.append(f"{case.id}: {str(why).splitlines()[0][:200]}")
                continue
            problems.extend(f"{case.id}: {p}" for p in check_stored(th, case))
            problems.extend(
                f"{case.id}: {p}" for p in check_reference(host, case, th, dataset.parent)
            )
            meta = record["evaluation_metadata"]
            meta["thresholds"][track.name] = th
            meta["calibration_config"] = {
                **(meta.get("calibration_config") or {}),
                track.name: th["selection"]["config"],
            }
            changed += 1
        records.append(case_to_dict(case_from_dict(record)))
    if problems:
        raise FrontierThresholdsError(
            f"{len(problems)} problems; nothing written:\n  " + "\n  ".join(problems[:40])
        )
    found = validate_records(records, known_libraries=known_libraries)
    if found:
        raise FrontierThresholdsError(
            f"the new dataset does not validate:\n{problems_summary(found)}"
        )
    check_bump(cases, [case_from_dict(r) for r in records], old_dir=dataset.parent,
               new_dir=dataset.parent)  # fmt: skip
    text = "\n".join(json.dumps(r, sort_keys=False) for r in records) + "\n"
    atomic_write_bytes(Path(output), text.encode("utf-8"))
    return changed
