"""``pdeagent cases build``: design matrix -> checked, calibrated, packaged dataset.

Pipeline per candidate instance (SPEC; issue #4):

1. case record from the instance (:mod:`pdeagent.cases.construct`: symbolic forcing,
   boundary and initial data of a leak-free manufactured solution, or the stated
   data and ``reference_config`` of a no-exact case);
2. static validation (schema, semantics, the no-leak rule of the validator);
3. no-exact cases: reference solve, intermediate solve and calibration-settings
   solve of the build track; kept only if gap(intermediate, reference) <
   gap(calibration, intermediate) and the calibration error e_base < 0.05;
4. calibration: the track's baseline through the sandbox and timing protocol
   (e_base, t_base, the machine fingerprint);
5. the cheat check: sampling the Dirichlet expression (and the initial condition
   of transient cases) on the grid must fail the accuracy gate.

A stratum keeps the first ``count`` candidates (design order) that pass; the rest
are spares tried only when an earlier one is refused. Every trial is stored under
the build directory as soon as it finishes (keyed by the record's content), so an
interrupted build resumes where it stopped and a rebuild from the same directory
reproduces the same file byte for byte. Trials run in parallel (``jobs``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
from attrs import define, field

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.cheat import cheat_errors
from pdeagent.cases.construct import ConstructionError, Instance, case_record
from pdeagent.cases.design import FamilyDesign, Stratum, candidates, load_designs
from pdeagent.cases.model import Case, case_from_dict, case_to_dict, converter
from pdeagent.cases.validate import KNOWN_LIBRARIES, problems_summary, validate_records
from pdeagent.evaluation.calibration import CalibrationError, calibrate_case, track_identity
from pdeagent.evaluation.null import NullTiming, measure_null
from pdeagent.evaluation.pipeline import EvaluationSetupError, ProductionError, produce_fields
from pdeagent.evaluation.reference import reference_fields
from pdeagent.fileio import atomic_write_bytes
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Sandbox
from pdeagent.scoring.metrics import case_error
from pdeagent.stages import Track

TRIAL_SCHEMA = 1
E_BASE_LIMIT = 0.05
"""The calibration baseline's error (against the reference of no-exact cases, the exact
solution otherwise) must be below this for a case to be kept."""
CHEAT_FLOOR = 0.05
"""Refuse before any solve when a cheat gets within this relative error (any track's
tau_acc is checked again after calibration)."""


class BuildError(RuntimeError):
    pass


@define
class BuildOptions:
    design_dir: Path
    output: Path
    track: str
    build_dir: Path
    dataset_version: str = "1.0.0"
    jobs: int = 1
    families: list[str] | None = None
    scale: float = 1.0
    """Multiply every stratum count (small trial builds); 1.0 for the real dataset."""
    workroot: Path = Path("/var/tmp")


@define
class Trial:
    id: str
    key: str
    accepted: bool
    reason: str
    thresholds: dict[str, Any] | None = None
    cheat: dict[str, float] = field(factory=dict)
    convergence: dict[str, float] | None = None
    seconds: float = 0.0
    schema: int = TRIAL_SCHEMA


@define
class BuildSummary:
    output: Path
    cases: int
    trials: int
    rejected: list[tuple[str, str]]
    wall_sec: float
    shortfall: dict[str, int]
    """Strata that ran out of candidates: name -> missing count."""


def _key(record: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:20]


def _make_record(args: tuple[Instance, str]) -> tuple[str, dict[str, Any] | None, str]:
    inst, version = args
    try:
        return inst.case_id, case_record(inst, dataset_version=version), ""
    except (ConstructionError, ValueError, KeyError, TypeError) as exc:
        return inst.case_id, None, f"construction: {exc}"


class Builder:
    """One dataset build (see the module docstring)."""

    def __init__(
        self,
        host: PluginHost,
        sandbox: Sandbox,
        options: BuildOptions,
        *,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.host = host
        self.sandbox = sandbox
        self.options = options
        self.track: Track = host.get_track(options.track)
        self.progress = progress or (lambda *_: None)
        self.dir = options.build_dir
        (self.dir / "records").mkdir(parents=True, exist_ok=True)
        (self.dir / "trials").mkdir(parents=True, exist_ok=True)
        (self.dir / "references").mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._caches: list[Path] = []
        self._lock = threading.Lock()
        self._null: NullTiming | None = None
        """The track's null-program time, measured with the first calibration."""

    # -- records -------------------------------------------------------------------------
    def records(self, instances: list[Instance]) -> dict[str, tuple[dict | None, str]]:
        """Case records of the instances, cached under ``records/`` (sympy is slow)."""
        out: dict[str, tuple[dict | None, str]] = {}
        todo = []
        for inst in instances:
            path = self.dir / "records" / f"{inst.case_id}.json"
            if path.is_file():
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("instance") == converter.unstructure(inst):
                    out[inst.case_id] = (data["record"], data["error"])
                    continue
            todo.append(inst)
        if todo:
            version = self.options.dataset_version
            workers = max(1, self.options.jobs)
            spawn = multiprocessing.get_context("spawn")  # the builder runs threads: no fork
            with ProcessPoolExecutor(max_workers=workers, mp_context=spawn) as pool:
                by_id = {i.case_id: i for i in todo}
                futures = [pool.submit(_make_record, (i, version)) for i in todo]
                for n, fut in enumerate(as_completed(futures), 1):
                    cid, record, error = fut.result()
                    payload = {
                        "instance": converter.unstructure(by_id[cid]),
                        "record": record,
                        "error": error,
                    }
                    atomic_write_bytes(
                        self.dir / "records" / f"{cid}.json",
                        json.dumps(payload).encode(),
                    )
                    out[cid] = (record, error)
                    self.progress("constructing records", n, len(todo))
        return out

    # -- trials --------------------------------------------------------------------------
    def _cache_dir(self) -> Path:
        cache = getattr(self._local, "cache", None)
        if cache is None:
            cache = Path(
                tempfile.mkdtemp(prefix="pdeagent-build-cache-", dir=self.options.workroot)
            )
            self._local.cache = cache
            with self._lock:
                self._caches.append(cache)
        return cache

    def _trial_path(self, case_id: str) -> Path:
        return self.dir / "trials" / f"{case_id}.json"

    def cached_trial(self, case_id: str, key: str) -> Trial | None:
        path = self._trial_path(case_id)
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != key or data.get("schema") != TRIAL_SCHEMA:
            return None
        return converter.structure(data, Trial)

    def _sources(self, record: dict[str, Any]) -> dict[str, str | None]:
        """The track's solver sources this record's trial runs (part of the trial key, so
        a changed baseline or reference solver re-runs the trial)."""
        case = case_from_dict(record)
        view = agent_view(case, self.track.name)
        meta = case.evaluation_metadata
        out = {
            "calibration": self.host.hook.pdeagent_calibration_source(
                track=self.track, case_view=view, calibration_config=meta.calibration_config
            )
        }
        if meta.construction_method == "reference_numerical":
            for level in ("intermediate", "reference"):
                out[level] = self.host.hook.pdeagent_reference_source(
                    track=self.track,
                    case_view=view,
                    reference_config=meta.reference_config,
                    fidelity=level,
                )
        return out

    def trial(self, record: dict[str, Any]) -> Trial:
        try:
            sources = self._sources(record)
        except (ValueError, KeyError, TypeError) as exc:
            return self._refuse(record, _key(record), f"validation: {exc}")
        key = _key({"record": record, "sources": sources})
        cached = self.cached_trial(record["id"], key)
        if cached is not None:
            return cached
        started = time.perf_counter()
        trial = self._run_trial(record, key, sources)
        trial.seconds = round(time.perf_counter() - started, 2)
        self._store(trial)
        return trial

    def _store(self, trial: Trial) -> None:
        atomic_write_bytes(
            self._trial_path(trial.id),
            json.dumps(converter.unstructure(trial), sort_keys=True, indent=1).encode(),
        )

    def _refuse(self, record: dict, key: str, reason: str, **kw: Any) -> Trial:
        return Trial(id=record["id"], key=key, accepted=False, reason=reason, **kw)

    def _run_trial(self, record: dict[str, Any], key: str, sources: dict[str, str | None]) -> Trial:
        problems = validate_records([record], known_libraries=self._libraries())
        if problems:
            return self._refuse(record, key, "validation: " + problems_summary(problems, limit=3))
        case = case_from_dict(record)
        convergence = None
        with tempfile.TemporaryDirectory(prefix="pdeagent-build-", dir=self.options.workroot) as d:
            work = Path(d)
            try:
                if case.evaluation_metadata.construction_method == "manufactured_solution":
                    reference = reference_fields(case)
                else:
                    reference, convergence, why = self._reference(case, work, sources)
                    if why:
                        return self._refuse(record, key, why, convergence=convergence)
                cheat = cheat_errors(case, reference)
                worst = min(cheat.values(), default=float("inf"))
                if worst <= CHEAT_FLOOR:
                    return self._refuse(
                        record, key, f"cheat: error {worst:.3g} <= {CHEAT_FLOOR}", cheat=cheat
                    )
                with self._lock:  # the null program is measured once per build
                    if self._null is None:
                        self._null = measure_null(
                            self.host, self.track, case, sandbox=self.sandbox,
                            workroot=work / "null", reference=reference,
                        )  # fmt: skip
                thresholds = calibrate_case(
                    self.host,
                    self.track,
                    case,
                    sandbox=self.sandbox,
                    workroot=work / "calibration",
                    cache_dir=self._cache_dir(),
                    reference=reference,
                    source=sources["calibration"],
                    null=self._null,
                )
            except (CalibrationError, ProductionError, EvaluationSetupError) as exc:
                return self._refuse(record, key, f"trial: {str(exc)[:2000]}")
        th = converter.unstructure(thresholds)
        th["calibrated_on"]["build_jobs"] = self.options.jobs
        if worst <= thresholds.tau_acc:
            return self._refuse(
                record,
                key,
                f"cheat: error {worst:.3g} <= tau_acc {thresholds.tau_acc:.3g}",
                thresholds=th,
                cheat=cheat,
            )
        return Trial(
            id=record["id"],
            key=key,
            accepted=True,
            reason="",
            thresholds=th,
            cheat=cheat,
            convergence=convergence,
        )

    def _reference(
        self, case: Case, work: Path, sources: dict[str, str | None]
    ) -> tuple[dict[str, np.ndarray], dict[str, float] | None, str]:
        """Reference arrays of a no-exact case plus the convergence check; ``sources`` are
        the track's solvers from :meth:`_sources`."""
        spec = case.case_spec
        mask = evaluation_mask(
            spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
        ).scored
        fields: dict[str, dict[str, np.ndarray]] = {}
        for level in ("reference", "intermediate", "calibration"):
            source = sources.get(level)
            if source is None:
                raise EvaluationSetupError(f"track {self.track.name!r} has no {level} solver")
            fields[level] = produce_fields(
                self.host,
                self.track,
                case,
                source,
                sandbox=self.sandbox,
                workroot=work / f"solve-{level}",
                cache_dir=self._cache_dir(),
            )
        ref, mid, cal = fields["reference"], fields["intermediate"], fields["calibration"]
        output = spec.output  # the gaps are verdict errors: flow velocity and pressure apart
        convergence = {
            "gap_intermediate_reference": float(case_error(mid, ref, mask, output)),
            "gap_calibration_intermediate": float(case_error(cal, mid, mask, output)),
            "gap_calibration_reference": float(case_error(cal, ref, mask, output)),
        }
        path = self.dir / "references" / f"{case.id}.npz"
        buf = _npz_bytes(ref)
        atomic_write_bytes(path, buf)
        if not (
            convergence["gap_intermediate_reference"] < convergence["gap_calibration_intermediate"]
        ):
            return ref, convergence, "convergence: gap(intermediate, reference) is not smaller"
        if not convergence["gap_calibration_reference"] < E_BASE_LIMIT:
            return ref, convergence, "convergence: calibration error against the reference >= 0.05"
        return ref, convergence, ""

    def _libraries(self) -> set[str]:
        return set(KNOWN_LIBRARIES) | set(self.host.tracks)

    def cleanup(self) -> None:
        for cache in self._caches:
            shutil.rmtree(cache, ignore_errors=True)

    # -- the whole build -----------------------------------------------------------------
    def run(self) -> BuildSummary:
        started = time.perf_counter()
        designs = load_designs(self.options.design_dir, self.options.families)
        plan: list[tuple[FamilyDesign, Stratum, list[Instance], int]] = []
        for design in designs:
            for stratum in design.strata:
                want = max(1, round(stratum.count * self.options.scale))
                plan.append((design, stratum, list(candidates(design, stratum)), want))
        chosen: dict[tuple[str, str], list[tuple[dict, Trial]]] = {}
        cursor = {(d.family, s.name): 0 for d, s, _, _ in plan}
        rejected: list[tuple[str, str]] = []
        trials_run = 0
        try:
            while True:
                wave: list[Instance] = []
                for design, stratum, cands, want in plan:
                    k = (design.family, stratum.name)
                    have = len(chosen.get(k, []))
                    need = want - have
                    start = cursor[k]
                    take = cands[start : start + need]
                    cursor[k] = start + len(take)
                    wave.extend(take)
                if not wave:
                    break
                records = self.records(wave)
                ready = []
                for inst in wave:
                    record, error = records[inst.case_id]
                    if record is None:
                        rejected.append((inst.case_id, error))
                        key = _key(converter.unstructure(inst))
                        if self.cached_trial(inst.case_id, key) is None:
                            self._store(Trial(inst.case_id, key, accepted=False, reason=error))
                    else:
                        ready.append((inst, {**record, "supported_libraries": [self.track.name]}))
                results: dict[str, Trial] = {}
                with ThreadPoolExecutor(max_workers=max(1, self.options.jobs)) as pool:
                    futures = {pool.submit(self.trial, rec): inst for inst, rec in ready}
                    for n, fut in enumerate(as_completed(futures), 1):
                        inst = futures[fut]
                        results[inst.case_id] = fut.result()
                        self.progress("trial runs", n, len(ready))
                trials_run += len(ready)
                for inst, record in ready:
                    trial = results[inst.case_id]
                    ok, why = acceptance(trial)
                    if ok:
                        chosen.setdefault((inst.family, inst.stratum), []).append((record, trial))
                    else:
                        rejected.append((inst.case_id, why))
        finally:
            self.cleanup()
        shortfall = {}
        for design, stratum, _cands, want in plan:
            got = len(chosen.get((design.family, stratum.name), []))
            if got < want:
                shortfall[f"{design.family}/{stratum.name}"] = want - got
        cases = self._package(designs, plan, chosen)
        return BuildSummary(
            output=self.options.output,
            cases=cases,
            trials=trials_run,
            rejected=rejected,
            wall_sec=time.perf_counter() - started,
            shortfall=shortfall,
        )

    def _package(self, designs, plan, chosen) -> int:
        """Write the dataset file and its reference arrays (sorted, deterministic)."""
        out_dir = self.options.output.parent
        ref_dir = out_dir / "references"
        lines = []
        for design in designs:
            family_cases = []
            for d, stratum, _c, _w in plan:
                if d.family != design.family:
                    continue
                picked = chosen.get((d.family, stratum.name), [])
                picked.sort(key=lambda rt: rt[0]["id"])
                family_cases.extend(picked)
            scaled = {
                t: round(q * len(family_cases) / design.count) for t, q in design.coverage.items()
            }
            supported = _coverage([r["id"] for r, _ in family_cases], scaled, self.track.name)
            for record, trial in family_cases:
                record = json.loads(json.dumps(record))
                record["supported_libraries"] = supported[record["id"]]
                assert trial.thresholds is not None
                th = dict(trial.thresholds)
                th["calibrated_on"] = dict(
                    sorted({**th["calibrated_on"], **track_identity(self.track)}.items())
                )
                record["evaluation_metadata"]["thresholds"] = {self.track.name: th}
                record = case_to_dict(case_from_dict(record))  # canonical field order
                if record["evaluation_metadata"]["reference_path"]:
                    src = self.dir / "references" / f"{record['id']}.npz"
                    dst = out_dir / record["evaluation_metadata"]["reference_path"]
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
                lines.append(json.dumps(record, sort_keys=False))
        problems = validate_records(
            [json.loads(line) for line in lines], known_libraries=self._libraries()
        )
        if problems:
            raise BuildError(
                "the packaged dataset does not validate:\n" + problems_summary(problems)
            )
        ref_dir.mkdir(parents=True, exist_ok=True)
        kept = {json.loads(line)["id"] for line in lines}
        for _d, _s, cands, _w in plan:  # stale arrays of candidates no longer selected
            for inst in cands:
                if inst.case_id not in kept:
                    (ref_dir / f"{inst.case_id}.npz").unlink(missing_ok=True)
        atomic_write_bytes(self.options.output, ("\n".join(lines) + "\n").encode())
        return len(lines)


def acceptance(trial: Trial) -> tuple[bool, str]:
    """Selection rule over a trial's stored measurements: the trial passed its checks and
    the baseline is competent on the case (e_base < 0.05, so tau_acc < 0.5 and an all-zero
    output, error 1, can never pass)."""
    if not trial.accepted:
        return False, trial.reason
    return competent(trial.thresholds)


def competent(thresholds: dict[str, Any] | None) -> tuple[bool, str]:
    """The e_base part of :func:`acceptance`, over a trial's stored thresholds."""
    e_base = (thresholds or {}).get("e_base")
    if e_base is not None and not float(e_base) < E_BASE_LIMIT:
        return False, f"e_base {e_base:.3g} >= {E_BASE_LIMIT}: the baseline is not competent here"
    return True, ""


def _coverage(ids: list[str], coverage: dict[str, int], build_track: str) -> dict[str, list[str]]:
    """supported_libraries per case: the build track everywhere; each other track on an
    evenly spread, deterministic subset of the family's cases of the stated size."""
    order = ["dolfinx", "firedrake", "dealii"]
    out: dict[str, list[str]] = {cid: [build_track] for cid in ids}
    n = len(ids)
    for track, quota in sorted(
        coverage.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99
    ):
        if track == build_track or n == 0:
            continue
        quota = min(quota, n)
        picks = {int(i * n / quota) for i in range(quota)} if quota else set()
        for i in picks:
            out[ids[i]].append(track)
    for cid in out:
        out[cid].sort(key=lambda t: order.index(t) if t in order else 99)
    return out


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez_compressed(
        buf, **{k: np.asarray(v, dtype=np.float64) for k, v in sorted(arrays.items())}
    )
    return buf.getvalue()
