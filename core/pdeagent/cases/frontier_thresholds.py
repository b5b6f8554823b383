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

Shipping in steps (dataset 2.0.0 has DOLFINx's frontier thresholds before Firedrake's and
deal.II's are measured). With ``carry_from`` (the released dataset), every other track of
a case keeps the thresholds it had there when they still grade the same problem
(:func:`carry_decision`, rule ``carry-1``): the record's case spec, construction method
and manufactured solution are unchanged, and a no-exact case's reference arrays are
unchanged or moved by at most a tenth of that track's ``e_base``. Otherwise the track is
*withheld* from the case (taken out of its ``supported_libraries``) until its own
thresholds are measured: a verdict never rests on thresholds measured for another
problem. Carried thresholds keep their protocol (a legacy one grades with the legacy
protocol, as it was measured).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from attrs import define, field

from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case, Thresholds, case_from_dict, case_to_dict, converter
from pdeagent.cases.reference_study import ADEQUACY_FACTOR
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
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.machine import fingerprint
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Sandbox
from pdeagent.scoring.metrics import case_error
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


def carry_decision(
    old: Case | None, new: Case, track: str, old_dir: Path, new_dir: Path
) -> tuple[Thresholds | None, str]:
    """The released thresholds of ``track`` that still grade ``new`` (rule ``carry-1``,
    module doc), or None; and why."""
    if old is None:
        return None, "not in the released dataset"
    th = old.evaluation_metadata.thresholds.get(track)
    if th is None:
        return None, "no thresholds in the released dataset"
    a, b = old.evaluation_metadata, new.evaluation_metadata
    changed = [
        name
        for name, x, y in (
            ("case_spec", case_to_dict(old)["case_spec"], case_to_dict(new)["case_spec"]),
            ("construction_method", a.construction_method, b.construction_method),
            ("manufactured_solution", a.manufactured_solution, b.manufactured_solution),
        )
        if x != y
    ]
    if changed:
        return None, f"the record changed ({', '.join(changed)})"
    if b.construction_method != "reference_numerical":
        return th, "unchanged"
    try:
        before = reference_fields(old, old_dir)
        after = reference_fields(new, new_dir)
    except ReferenceUnavailable as exc:
        return None, f"reference arrays: {exc}"
    if set(before) == set(after) and all(np.array_equal(before[k], after[k]) for k in before):
        return th, "unchanged (same reference arrays)"
    spec = new.case_spec
    scored = evaluation_mask(
        spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
    ).scored
    try:
        moved = float(case_error(before, after, scored, spec.output))
    except (KeyError, ValueError) as exc:
        return None, f"the references cannot be compared: {exc}"
    # the adequacy rule of a reference (issue #19): it may move by at most e_base / 10
    bound = th.e_base / ADEQUACY_FACTOR
    if moved <= bound:
        return th, f"the reference moved by {moved:.2g} <= e_base/{ADEQUACY_FACTOR:g} = {bound:.2g}"
    return None, f"the reference moved by {moved:.2g} > e_base/{ADEQUACY_FACTOR:g} = {bound:.2g}"


@define
class ApplyResult:
    changed: int = 0
    """Cases whose thresholds of the applied tracks were written."""
    carried: dict[str, list[str]] = field(factory=dict)
    """Per other track: the cases whose released thresholds were carried."""
    withheld: dict[str, list[tuple[str, str]]] = field(factory=dict)
    """Per other track: (case, why) of the cases it was taken out of."""


def apply_frontier(
    host: PluginHost,
    track: Track,
    dataset: Path,
    *,
    output: Path,
    version: str,
    store: Path = DEFAULT_STORE,
    known_libraries: Sequence[str] = tuple(KNOWN_LIBRARIES),
    carry_from: Path | None = None,
) -> ApplyResult:
    """Write ``dataset`` with ``version`` to ``output``, every supported case's
    thresholds[track] and calibration_config[track] from the store, and with
    ``carry_from``, every other track's thresholds carried from that dataset or the track
    withheld (module doc). Raises :class:`FrontierThresholdsError` (nothing written) when a
    case has no valid current result, or its reference is not adequate for it
    (:func:`check_reference`)."""
    dataset = Path(dataset).resolve()
    cases = load_cases(dataset, known_libraries=known_libraries)
    released: dict[str, Case] = {}
    if carry_from is not None:
        carry_from = Path(carry_from).resolve()
        released = {c.id: c for c in load_cases(carry_from, known_libraries=known_libraries)}
    records, problems = [], []
    result = ApplyResult()
    for case in cases:
        record = case_to_dict(case)
        record["dataset_version"] = version
        if carry_from is not None:
            _carry(record, case, track, released.get(case.id), carry_from.parent,
                   dataset.parent, result)  # fmt: skip
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
            result.changed += 1
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
    return result


def _carry(
    record: dict[str, Any],
    case: Case,
    applied: Track,
    old: Case | None,
    old_dir: Path,
    new_dir: Path,
    result: ApplyResult,
) -> None:
    """Carry or withhold every track of ``record`` but the applied one (in place)."""
    meta = record["evaluation_metadata"]
    for name in list(case.supported_libraries):
        if name == applied.name or name in (meta.get("thresholds") or {}):
            continue  # the applied track, or thresholds the input already has
        th, why = carry_decision(old, case, name, old_dir, new_dir)
        if th is None:
            record["supported_libraries"] = [t for t in record["supported_libraries"] if t != name]
            result.withheld.setdefault(name, []).append((case.id, why))
            continue
        # the baseline configuration stays the record's: the released thresholds were
        # measured with the configuration the records carry over from that release
        meta.setdefault("thresholds", {})[name] = converter.unstructure(th)
        result.carried.setdefault(name, []).append(case.id)
