"""``pdeagent cases reference-study``: how accurate is a no-exact case's reference?

A no-exact case (``construction_method == "reference_numerical"``) is scored against
stored reference arrays, so the reference must be much more accurate than the calibration
baseline it judges (issue #19: at least 10x, shown by a refinement study stored with the
case). This module runs that study and keeps its result.

The levels. Level 0 is the case's own ``reference_config`` (the settings the stored
reference was solved with); level ``k`` multiplies ``mesh_resolution`` by ``factor**k``
(rounded to an integer) and, for a transient case, divides ``time_step`` by
``factor**k``, so that every discretization error the reference has shrinks along the
sequence. The sequence starts at ``start_level`` (default -2: two levels coarser than the
reference config, so the first estimate is the reference config's own, at a cost of
1/16 + 1/4 + 1 of its solve in 2-D instead of 1 + 4 + 16 units when the sequence starts
at level 0; it goes on to finer levels only while the estimate misses the target). The
element degree stays the case's (or a stated higher ``degree``, the same at every
level). Each level is one solve of the track's reference solver
(``pdeagent_reference_source(..., fidelity="reference")`` with the level's config), run
through :func:`pdeagent.evaluation.pipeline.produce_fields` exactly as the dataset build
runs the reference. The default factor is 2: the levels of a structured mesh are then
nested and keep one alignment with the evaluation grid (a grid point that is a mesh vertex
stays one), so the gaps follow ``C h^p`` with one constant. With a factor sqrt(2) the
alignment alternates from level to level and so do the observed ratios (0.17, 0.37, 0.14
on ``poisson_unit_square_noexact_ref_002``, against a clean 2^-4 with a factor 2), which
no ratio-based estimate can use. The price: in 2-D each level costs about 4x the one
before it (8x when the time step is refined too), so the three levels the first ratio
needs cost 1 + 4 + 16 units of the coarsest; hence the coarse start.

The rule (``geometric-tail-1``), in words. After each level ``k`` but the first, the gap
``g_k`` is the case's verdict error (:func:`pdeagent.scoring.metrics.case_error`: relative
L2 over the scored grid points) of level ``k - 1`` against level ``k``. From the third
level on the observed ratio is ``rho_k = g_k / g_(k-1)``. The estimate uses ``rho`` = the
larger of the last two observed ratios (the only one at the third level), and estimates
the error of level ``k`` by the geometric tail of the gaps still to come,
``e_est = g_k * rho / (1 - rho)``: if every later gap is at most ``rho`` times the one
before it, the distance from level ``k`` to the limit is at most the sum of those gaps,
``g_k (rho + rho^2 + ...)``. There
is no estimate (refused, with the reason) when fewer than three levels ran, when a gap is
not finite or a gap before the last is zero (two levels gave the same output), or when
either of the ratios used is ``>= rho_max`` (default 0.9: the sequence does not converge,
or too slowly for a tail sum to mean anything). With exact geometric convergence
``u_k = u* + C h_k^p w`` the estimate is exact; taking the larger of two ratios guards
against one noisy ratio, but no rule on observed gaps can see a slowdown (e.g. a
singularity that only the finer levels resolve) that has not shown yet.

The study stops at the first of: the estimate reaches ``target`` (default 1e-9, see
:data:`DEFAULT_TARGET`); the next level is predicted to exceed a cost cap
(wall seconds per solve, from the last level's time times the larger of the observed and
the nominal growth ``factor**dim`` (``factor**(dim+1)`` when time is refined too); or
unknowns, from the last level's dofs times ``factor**dim``); ``max_levels``; a level
failing (its solve error is recorded; the finest level that ran is the result). Every
solve also runs under a hard sandbox limit of ``max_seconds`` and ``memory_gib``.

The store: ``<store>/<case>.json`` holds the record (levels with config, wall seconds,
cells and dofs as the solver reports them, gaps, ratios, per-level estimates; the final
``e_est``, ``reached``, why it stopped, the settings, the machine fingerprint, the key)
and ``<store>/<case>.npz`` the finest level's arrays (the format of
``cases/references/*.npz``; its sha256 is in the record). Both are written atomically as
soon as a case is done. The key hashes what determines the study: the case record
(without its thresholds, calibration settings, dataset version, supported tracks and
reference path: where the result goes), the
track, the reference solver source of level 0 and the settings. A valid entry with the
same key is skipped; a failed study (nothing could be estimated because no level ran, or
setup failed) is stored with its reason and re-run only with ``retry_failed``.

:func:`reference_is_adequate` is the check the dataset 2.0 apply step calls:
``e_est <= e_base / 10``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from attrs import asdict, define, field

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.build import _npz_bytes
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case, case_to_dict
from pdeagent.cases.validate import KNOWN_LIBRARIES
from pdeagent.evaluation.calibration import track_identity
from pdeagent.evaluation.pipeline import EvaluationSetupError, ProductionError, produce_fields
from pdeagent.fileio import atomic_write_bytes
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.machine import fingerprint
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Limits, Sandbox
from pdeagent.scoring.metrics import case_error
from pdeagent.stages import Track

RULE_NAME = "geometric-tail-1"
"""Recorded with every study; bump it if the rule (module doc) ever changes."""
STUDY_SCHEMA = 1
DEFAULT_STORE = Path("cases") / "reference_studies"
DEFAULT_TARGET = 1e-9
"""A reference is adequate at a tenth of its baseline's error (:func:`reference_is_adequate`).
The frontier picks the cheapest baseline under 1e-7 (:data:`pdeagent.evaluation.frontier.
TARGET_ERROR`), which lands below it: over the 536 DOLFINx manufactured cases of dataset
2.0 the median e_base is 7.7e-8 and the 5th percentile 2.4e-8, so a tenth of 1e-7 would
not do for 59% of them; 1e-9 does for all but 1.7%."""
DEFAULT_FACTOR = 2.0
DEFAULT_RHO_MAX = 0.9
DEFAULT_MAX_SECONDS = 120.0
"""Wall seconds of one solve (predicted, and the hard limit): with the coarse start, 109
studies in about 3 hours (issue #33: the budget of dataset 2.0's reference studies)."""
DEFAULT_MAX_DOFS = {2: 6_000_000, 3: 1_000_000}
"""Unknowns of the next level, per dimension: a 2-D P3 solve of 6e6 unknowns (a unit
square at resolution 768) fits the memory cap with a direct solver; 3-D fill-in grows
much faster."""
DEFAULT_MEMORY_GIB = 16.0
DEFAULT_MAX_LEVELS = 6
MIN_LEVELS = 3
"""Levels needed for the first observed ratio (two gaps)."""
DEFAULT_START_LEVEL = -2
"""The first level: two levels coarser than the reference config (module doc)."""
MIN_RESOLUTION = 4
"""No level coarser than this mesh resolution (a coarse start on a coarse reference
config is refused rather than solved on a mesh that no longer resolves the domain)."""
ADEQUACY_FACTOR = 10.0

STOP_TARGET = "target"
STOP_COST = "cost"
STOP_MAX_LEVELS = "max_levels"
STOP_FAILED = "failed"


class ReferenceStudyError(RuntimeError):
    """A study could not be set up (unknown case, no reference solver, ...)."""


class LevelFailed(RuntimeError):
    """One level's solve failed (its message is recorded)."""


@define
class StudyOptions:
    """The settings of a study (all part of its key)."""

    target: float = DEFAULT_TARGET
    factor: float = DEFAULT_FACTOR
    degree: int | None = None
    """Element degree of every level; None: the case's ``reference_config``."""
    refine_time: bool = True
    """Divide ``time_step`` by the factor per level (transient cases)."""
    rho_max: float = DEFAULT_RHO_MAX
    max_seconds: float = DEFAULT_MAX_SECONDS
    max_dofs: int | None = None
    """None: :data:`DEFAULT_MAX_DOFS` of the case's dimension."""
    max_levels: int = DEFAULT_MAX_LEVELS
    """At most this many levels (counted from ``start_level``)."""
    memory_gib: float = DEFAULT_MEMORY_GIB
    start_level: int = DEFAULT_START_LEVEL
    """The first level solved (<= 0; negative: coarser than the reference config)."""

    def __attrs_post_init__(self) -> None:
        if not self.factor > 1.0:
            raise ValueError(f"factor must be > 1, got {self.factor}")
        if not 0.0 < self.rho_max <= 1.0:
            raise ValueError(f"rho_max must be in (0, 1], got {self.rho_max}")
        if not self.target > 0.0:
            raise ValueError(f"target must be > 0, got {self.target}")
        if self.max_levels < MIN_LEVELS:
            raise ValueError(f"max_levels must be >= {MIN_LEVELS}, got {self.max_levels}")
        if not self.max_seconds > 0:
            raise ValueError(f"max_seconds must be > 0, got {self.max_seconds}")
        if self.start_level > 0:
            raise ValueError(f"start_level must be <= 0, got {self.start_level}")

    def settings(self, dim: int) -> dict[str, Any]:
        """The recorded settings (the dimension's default dofs cap filled in)."""
        out = asdict(self)
        out["max_dofs"] = self.max_dofs if self.max_dofs is not None else DEFAULT_MAX_DOFS[dim]
        out["rule"] = RULE_NAME
        out["metric"] = "case_error"
        return out


@define
class Estimate:
    """The rule's estimate of the finest level's error; ``e_est`` None: refused (``why``)."""

    e_est: float | None
    rho: float | None
    why: str = ""


def estimate(gaps: Sequence[float], *, rho_max: float = DEFAULT_RHO_MAX) -> Estimate:
    """The error of the last level of a sequence with these consecutive ``gaps``
    (``gaps[i]`` between levels ``i`` and ``i + 1``), by the geometric tail (module doc)."""
    g = [float(x) for x in gaps]
    if len(g) < MIN_LEVELS - 1:
        return Estimate(None, None, f"{len(g) + 1} levels: the rule needs {MIN_LEVELS}")
    if not all(math.isfinite(x) and x >= 0 for x in g):
        return Estimate(None, None, f"a gap is not a finite number >= 0: {g}")
    window = g[-3:]
    if any(x == 0.0 for x in window[:-1]):
        return Estimate(None, None, "a gap is zero: two levels gave the same output")
    ratios = [b / a for a, b in itertools.pairwise(window)]
    rho = max(ratios)
    if rho >= rho_max:
        return Estimate(
            None,
            rho,
            f"not converging: observed ratio {rho:.3g} >= {rho_max:g} "
            f"(last ratios {', '.join(f'{r:.3g}' for r in ratios)})",
        )
    return Estimate(g[-1] * rho / (1.0 - rho), rho)


def level_config(base: Mapping[str, Any], k: int, options: StudyOptions) -> dict[str, Any]:
    """The ``reference_config`` of level ``k`` (level 0 is ``base`` itself, with the stated
    degree)."""
    if "mesh_resolution" not in base:
        raise ReferenceStudyError("reference_config has no mesh_resolution to refine")
    out = json.loads(json.dumps(dict(base)))
    scale = options.factor**k
    out["mesh_resolution"] = round(int(base["mesh_resolution"]) * scale)
    if out["mesh_resolution"] < MIN_RESOLUTION:
        raise ReferenceStudyError(
            f"level {k} would have mesh_resolution {out['mesh_resolution']} "
            f"(< {MIN_RESOLUTION}): start the study at a finer level"
        )
    if options.refine_time and base.get("time_step") is not None:
        out["time_step"] = float(base["time_step"]) / scale
    if options.degree is not None:
        out["element_degree"] = int(options.degree)
    return out


@define
class LevelOutput:
    """What one solve gives the study."""

    fields: dict[str, np.ndarray]
    seconds: float
    cells: int | None = None
    dofs: int | None = None
    solver_seconds: float | None = None


@define
class Level:
    level: int
    config: dict[str, Any]
    seconds: float
    cells: int | None = None
    dofs: int | None = None
    solver_seconds: float | None = None
    gap: float | None = None
    """Error of the previous level against this one."""
    ratio: float | None = None
    """``gap`` over the previous level's gap."""
    e_est: float | None = None
    """The rule's estimate of this level's error (None: refused, see ``why``)."""
    why: str = ""


@define
class LevelsResult:
    levels: list[Level] = field(factory=list)
    e_est: float | None = None
    rho: float | None = None
    why: str = ""
    reached: bool = False
    stopped: str = ""
    stop_detail: str = ""
    finest: dict[str, np.ndarray] | None = None


def run_levels(
    solve: Callable[[int, dict[str, Any]], LevelOutput],
    base_config: Mapping[str, Any],
    gap: Callable[[Mapping[str, np.ndarray], Mapping[str, np.ndarray]], float],
    *,
    options: StudyOptions,
    dim: int,
    on_level: Callable[[Level], None] | None = None,
) -> LevelsResult:
    """Solve level after level until a stop (module doc). ``solve(k, config)`` raises
    :class:`LevelFailed` for a failed solve; ``gap(coarse, fine)`` is the error of the
    coarse level's arrays against the fine level's. Knows no FEM library and no sandbox."""
    max_dofs = options.max_dofs if options.max_dofs is not None else DEFAULT_MAX_DOFS[dim]
    time_refined = options.refine_time and base_config.get("time_step") is not None
    nominal = options.factor ** (dim + (1 if time_refined else 0))
    out = LevelsResult()
    previous: dict[str, np.ndarray] | None = None
    gaps: list[float] = []
    k = options.start_level
    while True:
        config = level_config(base_config, k, options)
        try:
            result = solve(k, config)
        except LevelFailed as exc:
            out.stopped, out.stop_detail = STOP_FAILED, f"level {k}: {str(exc)[:2000]}"
            break
        level = Level(
            level=k,
            config=config,
            seconds=round(float(result.seconds), 3),
            cells=result.cells,
            dofs=result.dofs,
            solver_seconds=result.solver_seconds,
        )
        if previous is not None:
            level.gap = float(gap(previous, result.fields))
            if gaps and gaps[-1] > 0:
                level.ratio = level.gap / gaps[-1]
            gaps.append(level.gap)
        est = estimate(gaps, rho_max=options.rho_max)
        level.e_est, level.why = est.e_est, est.why
        out.levels.append(level)
        out.finest, previous = result.fields, result.fields
        out.e_est, out.rho, out.why = est.e_est, est.rho, est.why
        if on_level is not None:
            on_level(level)
        if est.e_est is not None and est.e_est <= options.target:
            out.reached = True
            out.stopped = STOP_TARGET
            out.stop_detail = f"e_est {est.e_est:.3g} <= target {options.target:g}"
            break
        if len(out.levels) >= options.max_levels:
            out.stopped, out.stop_detail = STOP_MAX_LEVELS, f"{options.max_levels} levels"
            break
        growth = nominal
        if len(out.levels) >= 2 and out.levels[-2].seconds > 0:
            growth = max(nominal, level.seconds / out.levels[-2].seconds)
        predicted = level.seconds * growth
        if predicted > options.max_seconds:
            out.stopped = STOP_COST
            out.stop_detail = (
                f"level {k + 1} predicted {predicted:.0f} s > {options.max_seconds:g} s"
            )
            break
        if level.dofs is not None and level.dofs * options.factor**dim > max_dofs:
            out.stopped = STOP_COST
            out.stop_detail = (
                f"level {k + 1} predicted {level.dofs * options.factor**dim:.3g} dofs "
                f"> {max_dofs:g}"
            )
            break
        k += 1
    return out


# -- one case on a track ---------------------------------------------------------------------


def _key_record(case: Case) -> dict[str, Any]:
    record = case_to_dict(case)
    for name in ("dataset_version", "supported_libraries"):
        record.pop(name, None)
    meta = record["evaluation_metadata"]
    meta.pop("thresholds", None)
    meta.pop("calibration_config", None)
    meta.pop("reference_path", None)  # where the result goes, not what determines it
    return record


def _source(host: PluginHost, track: Track, case: Case, config: dict[str, Any]) -> str:
    source = host.hook.pdeagent_reference_source(
        track=track,
        case_view=agent_view(case, track.name),
        reference_config=config,
        fidelity="reference",
    )
    if source is None:
        raise ReferenceStudyError(f"track {track.name!r} has no reference solver")
    return source


def _base_config(case: Case) -> dict[str, Any]:
    meta = case.evaluation_metadata
    if meta.construction_method != "reference_numerical":
        raise ReferenceStudyError(f"{case.id} is not a no-exact case")
    if not meta.reference_config:
        raise ReferenceStudyError(f"{case.id} has no reference_config")
    return dict(meta.reference_config)


def study_key(host: PluginHost, track: Track, case: Case, settings: Mapping[str, Any]) -> str:
    """What a stored study depends on: the case record (module doc), the track, its
    reference solver at level 0 and the settings (:meth:`StudyOptions.settings`)."""
    base = _base_config(case)
    level0 = dict(base)
    if settings.get("degree") is not None:
        level0["element_degree"] = int(settings["degree"])
    blob = json.dumps(
        {
            "record": _key_record(case),
            "track": track.name,
            "source": _source(host, track, case, level0),
            "settings": dict(settings),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def is_current(host: PluginHost, track: Track, case: Case, study: Mapping[str, Any]) -> bool:
    """Whether a stored study still belongs to ``case`` and the track's reference solver
    (its key recomputes with its own recorded settings)."""
    settings = study.get("settings")
    if not isinstance(settings, dict) or study.get("case") != case.id:
        return False
    try:
        return study.get("key") == study_key(host, track, case, settings)
    except (ReferenceStudyError, ValueError, KeyError, TypeError):
        return False


def _solver_info(workdir: Path) -> dict[str, Any]:
    try:
        meta = json.loads((workdir / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    info = dict(meta.get("solver_info") or {}) if isinstance(meta, dict) else {}
    if isinstance(meta, dict) and isinstance(meta.get("wall_time_sec"), int | float):
        info["_wall_time_sec"] = float(meta["wall_time_sec"])
    return info


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def study_case(
    host: PluginHost,
    track: Track,
    case: Case,
    *,
    sandbox: Sandbox,
    options: StudyOptions,
    workroot: Path,
    dataset_dir: Path | None = None,
    on_level: Callable[[Level], None] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray] | None]:
    """Run the study of one no-exact case: the record to store and the finest level's
    arrays (None when no level ran; the record then has ``failure``)."""
    started = time.perf_counter()
    spec = case.case_spec
    dim = spec.eval_grid.dim
    settings = options.settings(dim)
    record: dict[str, Any] = {
        "schema": STUDY_SCHEMA,
        "case": case.id,
        "track": track.name,
        "rule": RULE_NAME,
        "settings": settings,
    }
    base = _base_config(case)
    record["key"] = study_key(host, track, case, settings)
    record["reference_config"] = base
    scored = evaluation_mask(
        spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
    ).scored
    limits = Limits(
        wall_time_sec=float(options.max_seconds),
        address_space_bytes=int(options.memory_gib * 1024**3),
        memory_bytes=int(options.memory_gib * 1024**3),
    )
    cache = workroot / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}

    def solve(k: int, config: dict[str, Any]) -> LevelOutput:
        source = _source(host, track, case, config)
        if source in seen:
            raise LevelFailed(
                f"the solver of level {k} is the one of level {seen[source]}: the case's "
                f"reference_config[{track.name!r}] overrides the refined settings"
            )
        seen[source] = k
        work = workroot / f"level-{k}"
        t0 = time.perf_counter()
        try:
            fields = produce_fields(
                host, track, case, source, sandbox=sandbox, workroot=work, limits=limits,
                cache_dir=cache,
            )  # fmt: skip
        except (ProductionError, EvaluationSetupError) as exc:
            raise LevelFailed(str(exc)) from exc
        finally:
            seconds = time.perf_counter() - t0
        info = _solver_info(work / "exec-0")
        shutil.rmtree(work, ignore_errors=True)
        return LevelOutput(
            fields={name: np.asarray(v, dtype=np.float64) for name, v in fields.items()},
            seconds=seconds,
            cells=_int_or_none(info.get("cells")),
            dofs=_int_or_none(info.get("dofs")),
            solver_seconds=info.get("_wall_time_sec"),
        )

    def gap(coarse: Mapping[str, np.ndarray], fine: Mapping[str, np.ndarray]) -> float:
        return float(case_error(coarse, fine, scored, spec.output))

    result = run_levels(solve, base, gap, options=options, dim=dim, on_level=on_level)
    record["levels"] = [asdict(level) for level in result.levels]
    record["gaps"] = [lv.gap for lv in result.levels[1:]]
    record["ratios"] = [lv.ratio for lv in result.levels[2:]]
    record["rho"] = result.rho
    record["e_est"] = result.e_est
    record["why"] = result.why
    record["reached"] = result.reached
    record["stopped"] = result.stopped
    record["stop_detail"] = result.stop_detail
    if result.finest is None:
        record["failure"] = result.stop_detail or "no level ran"
    else:
        finest = result.levels[-1]
        record["finest"] = {"level": finest.level, "config": finest.config}
        record["stored_reference_error"] = _stored_error(case, dataset_dir, result.finest, gap)
    record["seconds"] = round(time.perf_counter() - started, 2)
    record["machine"] = fingerprint()
    record["track_identity"] = track_identity(track)
    return record, result.finest


def _stored_error(
    case: Case,
    dataset_dir: Path | None,
    finest: Mapping[str, np.ndarray],
    gap: Callable[[Mapping[str, np.ndarray], Mapping[str, np.ndarray]], float],
) -> float | None:
    """The error of the case's stored reference arrays against the finest level (None
    when they are not found): how far off today's reference is."""
    path = case.evaluation_metadata.reference_path
    if dataset_dir is None or not path or not (dataset_dir / path).is_file():
        return None
    with np.load(dataset_dir / path) as data:
        stored = {name: np.asarray(data[name]) for name in data.files}
    try:
        return float(gap(stored, finest))
    except (ValueError, KeyError):
        return None


# -- the store -------------------------------------------------------------------------------


def study_paths(store: Path, case_id: str) -> tuple[Path, Path]:
    return store / f"{case_id}.json", store / f"{case_id}.npz"


def read_study(store: Path, case_id: str, key: str | None = None) -> dict[str, Any] | None:
    """The stored study of a case (``key`` None: whatever key), or None when there is no
    valid entry: unreadable, another schema or key, or (a study with a result) its arrays
    missing or not the ones recorded."""
    json_path, npz_path = study_paths(store, case_id)
    try:
        data = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != STUDY_SCHEMA:
        return None
    if key is not None and data.get("key") != key:
        return None
    if "failure" not in data:
        try:
            digest = hashlib.sha256(npz_path.read_bytes()).hexdigest()
        except OSError:
            return None
        if digest != data.get("arrays_sha256"):
            return None
    return data


def write_study(
    store: Path, record: dict[str, Any], arrays: Mapping[str, np.ndarray] | None
) -> None:
    """Store a study: the arrays first, then the record naming their sha256 (atomic each;
    a crash between the two leaves an entry :func:`read_study` does not accept). A study
    without arrays (a failure) removes the arrays of an earlier study of the case."""
    json_path, npz_path = study_paths(store, record["case"])
    store.mkdir(parents=True, exist_ok=True)
    record = dict(record)
    if arrays is not None:
        blob = _npz_bytes(dict(arrays))
        atomic_write_bytes(npz_path, blob)
        record["arrays"] = npz_path.name
        record["arrays_sha256"] = hashlib.sha256(blob).hexdigest()
    atomic_write_bytes(json_path, json.dumps(record, indent=1, sort_keys=True).encode())
    if arrays is None:
        npz_path.unlink(missing_ok=True)  # an earlier study's arrays are no longer its result


@define
class StudiesResult:
    measured: list[str] = field(factory=list)
    reused: list[str] = field(factory=list)
    failed: list[tuple[str, str]] = field(factory=list)
    seconds: float = 0.0


def select_cases(
    dataset: Path,
    track: Track,
    *,
    case_ids: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    known_libraries: Sequence[str] = tuple(KNOWN_LIBRARIES),
) -> list[Case]:
    """The dataset's no-exact cases the track supports, filtered (unknown ids: error)."""
    cases = [
        c
        for c in load_cases(dataset, known_libraries=known_libraries)
        if c.evaluation_metadata.construction_method == "reference_numerical"
        and track.name in c.supported_libraries
        and (not case_ids or c.id in case_ids)
        and (not families or c.family in families)
    ]
    if case_ids:
        missing = sorted(set(case_ids) - {c.id for c in cases})
        if missing:
            raise ReferenceStudyError(
                f"not no-exact cases of {dataset.name} on track {track.name!r}: "
                + ", ".join(missing)
            )
    return cases


def run_studies(
    host: PluginHost,
    track: Track,
    dataset: Path,
    *,
    sandbox: Sandbox,
    store: Path = DEFAULT_STORE,
    options: StudyOptions | None = None,
    case_ids: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    limit: int | None = None,
    retry_failed: bool = False,
    known_libraries: Sequence[str] = tuple(KNOWN_LIBRARIES),
    workroot: Path = Path("/var/tmp"),
    progress: Callable[[str, int, int], None] | None = None,
    study: Callable[..., tuple[dict[str, Any], dict[str, np.ndarray] | None]] = study_case,
) -> StudiesResult:
    """Study (or reuse) the selected no-exact cases, one at a time, each stored as soon as
    it is done. ``limit`` bounds the number of new studies of this call. ``study`` is
    :func:`study_case` (a test passes a fake)."""
    started = time.perf_counter()
    options = options or StudyOptions()
    dataset = Path(dataset).resolve()
    cases = select_cases(
        dataset, track, case_ids=case_ids, families=families, known_libraries=known_libraries
    )
    result = StudiesResult()
    todo: list[tuple[Case, dict[str, Any], str]] = []
    for case in cases:
        settings = options.settings(case.case_spec.eval_grid.dim)
        try:
            key = study_key(host, track, case, settings)
        except ReferenceStudyError as exc:
            record = {"schema": STUDY_SCHEMA, "case": case.id, "track": track.name,
                      "key": None, "settings": settings, "failure": f"setup: {exc}"}  # fmt: skip
            write_study(store, record, None)
            result.failed.append((case.id, record["failure"]))
            continue
        stored = read_study(store, case.id, key)
        if stored is not None and ("failure" not in stored or not retry_failed):
            if "failure" in stored:
                result.failed.append((case.id, str(stored["failure"])))
            else:
                result.reused.append(case.id)
            continue
        todo.append((case, settings, key))
    if limit is not None:
        todo = todo[:limit]
    for done, (case, settings, key) in enumerate(todo):

        def on_level(level: Level, cid: str = case.id, n: int = done) -> None:
            if progress is not None:
                progress(
                    f"{track.name} reference study {cid}: level {level.level} "
                    f"(r={level.config.get('mesh_resolution')}, {level.seconds:.0f} s)",
                    n,
                    len(todo),
                )

        if progress is not None:
            progress(f"{track.name} reference study {case.id}", done, len(todo))
        with tempfile.TemporaryDirectory(prefix="pdeagent-refstudy-", dir=workroot) as tmp:
            try:
                record, arrays = study(
                    host, track, case, sandbox=sandbox, options=options, workroot=Path(tmp),
                    dataset_dir=dataset.parent, on_level=on_level,
                )  # fmt: skip
            except ReferenceStudyError as exc:
                record = {"schema": STUDY_SCHEMA, "case": case.id, "track": track.name,
                          "key": key, "settings": settings, "failure": f"setup: {exc}",
                          "machine": fingerprint()}  # fmt: skip
                arrays = None
        write_study(store, record, arrays)
        if "failure" in record:
            result.failed.append((case.id, str(record["failure"])))
        else:
            result.measured.append(case.id)
    if progress is not None:
        progress(f"{track.name} reference study", len(todo), len(todo))
    result.seconds = time.perf_counter() - started
    return result


def reference_is_adequate(
    study: Mapping[str, Any] | None, e_base: float, *, factor: float = ADEQUACY_FACTOR
) -> tuple[bool, str]:
    """Issue #19: a no-exact reference is adequate for a baseline of error ``e_base`` when
    the study estimates its error at most ``e_base / 10``. Returns (ok, why)."""
    if not study:
        return False, "no reference study"
    if study.get("failure"):
        return False, f"the reference study failed: {str(study['failure']).splitlines()[0]}"
    e_est = study.get("e_est")
    if e_est is None:
        return False, f"the reference study has no error estimate: {study.get('why') or '?'}"
    try:
        e_base = float(e_base)
        e_est = float(e_est)
    except (TypeError, ValueError):
        return False, f"not numbers: e_est {e_est!r}, e_base {e_base!r}"
    if not (math.isfinite(e_base) and e_base > 0):
        return False, f"e_base must be a finite number > 0, got {e_base}"
    if not (math.isfinite(e_est) and e_est >= 0):
        return False, f"e_est is not a finite number >= 0: {e_est}"
    bound = e_base / factor
    if e_est <= bound:
        return True, f"e_est {e_est:.3g} <= e_base/{factor:g} = {bound:.3g}"
    return False, (
        f"e_est {e_est:.3g} > e_base/{factor:g} = {bound:.3g}: the case needs a finer "
        "reference or a redesign"
    )
