"""The dataset card (datasheet): a ``README.md`` next to a built dataset.

:func:`card_markdown` turns the loaded cases and the trial records of a build
directory (see :mod:`pdeagent.cases.build`) into Markdown; :func:`write_card` reads
both from disk and writes the file. The output is deterministic: everything is
sorted and no clock is read (the only time shown is the ``wall_sec`` passed in).

Sections: composition (families, geometries, track coverage), thresholds per track
(e_base and t_base distributions, how often ``tau_min`` is active, the machines the
baselines were measured on), reference validity per family (the convergence and
cheat checks of the build) and the build itself (trials, refusals by class, seconds).
The last two need the build directory and are skipped without it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pdeagent.cases.build import competent
from pdeagent.cases.families import FAMILIES
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent.cases.validate import KNOWN_LIBRARIES

try:
    from pdeagent.geometry import GEOMETRY_TEMPLATES

    GEOMETRY_ORDER: tuple[str, ...] = tuple(GEOMETRY_TEMPLATES)
except ImportError:  # pragma: no cover - the geometry package is part of the core
    GEOMETRY_ORDER = ()

GAP_KEYS: tuple[str, ...] = (
    "gap_intermediate_reference",
    "gap_calibration_intermediate",
    "gap_calibration_reference",
)
"""The three gaps of the convergence check of a no-exact candidate."""

NO_BUILD_NOTE = (
    "No build directory was available, so the reference-validity and build sections are skipped."
)

_KIND = re.compile(r"_(mms|ref)_\d+$")
_CLASS_WORD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_-]*)")
_DASH = "-"


# ------------------------------------------------------------------------------ helpers


def fmt(value: float) -> str:
    """A number with 3 significant digits."""
    return f"{value:.3g}"


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], *, left: int = 1) -> list[str]:
    """A Markdown table; the first ``left`` columns are left-aligned, the rest right."""
    align = [":---" if i < left else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for row in rows:
        cells = [str(c).replace("|", "\\|").replace("\n", " ") for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _track_order(tracks: Iterable[str]) -> list[str]:
    known = list(KNOWN_LIBRARIES)
    return sorted(set(tracks), key=lambda t: (known.index(t) if t in known else len(known), t))


def _family_order(families: Iterable[str]) -> list[str]:
    names = list(FAMILIES)
    return sorted(set(families), key=lambda f: (names.index(f) if f in names else len(names), f))


def family_of_id(case_id: str) -> str | None:
    """The family a candidate id starts with (longest family-name prefix), or None."""
    best = None
    for name in FAMILIES:
        if case_id.startswith(name + "_") and (best is None or len(name) > len(best)):
            best = name
    return best


def kind_of_id(case_id: str) -> str | None:
    """``mms`` or ``ref`` from a candidate id ``..._<mms|ref>_<NNN>``, else None."""
    match = _KIND.search(case_id)
    return match.group(1) if match else None


def refusal_class(reason: str) -> str:
    """The class word of a refusal reason (``cheat``, ``convergence``, ``e_base``, ...)."""
    match = _CLASS_WORD.match(reason)
    return match.group(1) if match else "(no reason)"


def _distribution(values: Sequence[float]) -> list[str]:
    """min / 5% / median / 95% / max, formatted."""
    arr = np.asarray(values, dtype=float)
    p5, p50, p95 = np.percentile(arr, [5, 50, 95])
    return [fmt(v) for v in (arr.min(), p5, p50, p95, arr.max())]


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({fmt(100.0 * part / whole)}%)" if whole else "0/0"


def _dataset_version(cases: Sequence[Case]) -> str:
    versions = sorted({c.dataset_version for c in cases if c.dataset_version})
    if not versions:
        return "(unversioned)"
    return " / ".join(f"v{v}" for v in versions)


# ------------------------------------------------------------------------------ sections


def _composition(cases: Sequence[Case]) -> list[str]:
    columns = (
        "total",
        "MMS",
        "no-exact",
        "3-D",
        "transient",
        "Neumann",
        "Robin",
        "periodic",
        "vector (component-wise)",
    )

    def flags(case: Case) -> tuple[int, ...]:
        spec = case.case_spec
        mms = case.evaluation_metadata.construction_method == "manufactured_solution"
        return (
            1,
            int(mms),
            int(not mms),
            int(spec.eval_grid.dim == 3),
            int(spec.pde.time is not None),
            int(bool(spec.bc.neumann)),
            int(bool(spec.bc.robin)),
            int(bool(spec.bc.periodic)),
            int(bool(spec.output.components)),
        )

    by_family: dict[str, list[int]] = {name: [0] * len(columns) for name in FAMILIES}
    for case in cases:
        row = by_family.setdefault(case.family, [0] * len(columns))
        for i, v in enumerate(flags(case)):
            row[i] += v
    rows = [[name, *by_family[name]] for name in _family_order(by_family)]
    totals = [sum(r[i + 1] for r in rows) for i in range(len(columns))]
    rows.append(["**total**", *totals])
    out = ["## Composition", "", "### Families", ""]
    out += _table(["family", *columns], rows)

    geometries = Counter(c.case_spec.domain.type for c in cases)
    known = list(GEOMETRY_ORDER) or sorted(geometries)
    names = known + sorted(set(geometries) - set(known))
    out += ["", "### Geometries", ""]
    rows = [[g, geometries.get(g, 0)] for g in names]
    out += _table(["geometry", "cases"], [*rows, ["**total**", sum(geometries.values())]])

    tracks = _track_order([*KNOWN_LIBRARIES, *(t for c in cases for t in c.supported_libraries)])
    coverage: dict[str, Counter[str]] = {name: Counter() for name in FAMILIES}
    for case in cases:
        coverage.setdefault(case.family, Counter()).update(set(case.supported_libraries))
    rows = [[f, *(coverage[f][t] for t in tracks)] for f in _family_order(coverage)]
    rows.append(["**total**", *(sum(coverage[f][t] for f in coverage) for t in tracks)])
    out += ["", "### Track coverage", "", "Cases per family that each track supports.", ""]
    out += _table(["family", *tracks], rows)
    return out


def _thresholds(cases: Sequence[Case]) -> list[str]:
    out = ["## Thresholds", ""]
    tracks = _track_order(t for c in cases for t in c.evaluation_metadata.thresholds)
    if not tracks:
        return [*out, "No case carries thresholds."]
    out += [
        "Baseline error `e_base`, time `t_base`, null-program time `t_null` and timing "
        "noise `t_noise` over the "
        "cases of each track (percentiles as `numpy.percentile`, linear); `tau_min` is "
        "active where `alpha_acc * e_base < tau_min`. Protocol 1: one cache per submission, "
        "`tau_time = alpha_time * t_base`; protocols 2 and 3: a pristine state for every "
        "run (3: the accuracy run is the first timed run), "
        "`tau_time = t_null + alpha_time * max(t_base - t_null, t_noise)`, the baseline "
        "chosen by the frontier rule.",
        "",
    ]
    rows = []
    by_protocol: list[list[Any]] = []
    by_rule: Counter[tuple[str, int, str]] = Counter()
    machines: Counter[tuple[str, str]] = Counter()
    for track in tracks:
        e_base, t_base, t_null, t_noise, active = [], [], [], [], 0
        protocols: Counter[int] = Counter()
        for case in cases:
            th = case.evaluation_metadata.thresholds.get(track)
            if th is None:
                continue
            e_base.append(th.e_base)
            t_base.append(th.t_base)
            if th.t_null is not None:
                t_null.append(th.t_null)
            if th.t_noise is not None:
                t_noise.append(th.t_noise)
            protocols[th.protocol] += 1
            by_rule[(track, th.protocol, th.rule)] += 1
            cfg = case.evaluation_config
            active += int(cfg.alpha_acc * th.e_base < cfg.tau_min)
            where = {k: v for k, v in th.calibrated_on.items() if k != "date"}
            machines[(track, json.dumps(where, sort_keys=True))] += 1
        by_protocol.append([track, protocols[1], protocols[2], protocols[3]])
        rows.append(
            [track, "e_base", len(e_base), *_distribution(e_base), _share(active, len(e_base))]
        )
        rows.append([track, "t_base [s]", len(t_base), *_distribution(t_base), _DASH])
        if t_null:
            rows.append([track, "t_null [s]", len(t_null), *_distribution(t_null), _DASH])
        if t_noise:
            rows.append([track, "t_noise [s]", len(t_noise), *_distribution(t_noise), _DASH])
    header = ["track", "quantity", "cases", "min", "5%", "median", "95%", "max", "tau_min active"]
    out += _table(header, rows, left=2)
    out += ["", "### Protocols", "", "Threshold sets per timing protocol.", ""]
    out += _table(["track", "protocol 1", "protocol 2", "protocol 3"], by_protocol)
    out += [
        "",
        "Threshold sets per timing protocol and the rule that chose their baseline "
        "(`default-baseline`: the track's calibration solver at its default configuration; "
        "`frontier-1`, `frontier-2`: the frontier rule).",
        "",
    ]
    rule_rows = sorted(by_rule.items(), key=lambda kv: (tracks.index(kv[0][0]), kv[0][1:]))
    out += _table(
        ["track", "protocol", "baseline rule", "cases"],
        [[track, protocol, f"`{rule}`", n] for (track, protocol, rule), n in rule_rows],
    )
    out += [
        "",
        "### Machines",
        "",
        "Fingerprints the thresholds were measured on (without date).",
        "",
    ]
    order = sorted(machines.items(), key=lambda kv: (tracks.index(kv[0][0]), kv[0][1]))
    out += _table(
        ["track", "fingerprint", "cases"],
        [[track, f"`{fp}`", n] for (track, fp), n in order],
        left=2,
    )
    return out


def _median(values: Sequence[float]) -> str:
    return fmt(float(np.median(values))) if values else _DASH


def _classify(
    trials: Sequence[Mapping[str, Any]], cases: Sequence[Case]
) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(family, kind, trial) of every trial; family/kind ``?`` when unknown."""
    by_id = {c.id: c for c in cases}
    out = []
    for trial in trials:
        cid = str(trial.get("id", ""))
        case = by_id.get(cid)
        if case is not None:
            family = case.family
            mms = case.evaluation_metadata.construction_method == "manufactured_solution"
            kind = "mms" if mms else "ref"
        else:
            family = family_of_id(cid) or "?"
            kind = kind_of_id(cid) or "?"
        out.append((family, kind, trial))
    return out


def _reference_validity(classified: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    out = ["## Reference validity", ""]
    ref: dict[str, list[Mapping[str, Any]]] = {}
    mms: dict[str, list[Mapping[str, Any]]] = {}
    unknown = 0
    for family, kind, trial in classified:
        if kind == "ref":
            ref.setdefault(family, []).append(trial)
        elif kind == "mms":
            mms.setdefault(family, []).append(trial)
        else:
            unknown += 1

    def refused(trials: Sequence[Mapping[str, Any]], word: str | None) -> int:
        n = 0
        for t in trials:
            if t.get("accepted"):
                continue
            cls = refusal_class(str(t.get("reason", "")))
            n += int(cls == word) if word is not None else 1
        return n

    def accepted(trials: Sequence[Mapping[str, Any]]) -> int:
        return sum(1 for t in trials if t.get("accepted"))

    def gaps(trials: Sequence[Mapping[str, Any]], key: str) -> list[float]:
        return [
            float(t["convergence"][key])
            for t in trials
            if t.get("accepted") and t.get("convergence") and key in t["convergence"]
        ]

    out += [
        "### No-exact (reference) candidates",
        "",
        "Kept only if gap(intermediate, reference) < gap(calibration, intermediate) and "
        "the calibration error against the reference is below 0.05; gaps are relative L2 "
        "on the grid, medians over the accepted candidates.",
        "",
    ]
    header = [
        "family",
        "tried",
        "accepted",
        "refused: convergence",
        "refused: other",
        "median gap(int., ref.)",
        "median gap(cal., int.)",
        "median gap(cal., ref.)",
    ]
    if ref:
        rows = []
        families = [*_family_order(ref), None]
        for family in families:
            ts = ref[family] if family is not None else [t for f in ref for t in ref[f]]
            conv = refused(ts, "convergence")
            rows.append(
                [
                    family if family is not None else "**total**",
                    len(ts),
                    accepted(ts),
                    conv,
                    refused(ts, None) - conv,
                    *(_median(gaps(ts, k)) for k in GAP_KEYS),
                ]
            )
        out += _table(header, rows)
    else:
        out.append("No no-exact candidates were tried.")

    out += [
        "",
        "### Manufactured-solution candidates",
        "",
        "Refused by the cheat check when sampling the boundary or initial data on the grid "
        "passes the accuracy gate; trial failures are calibration or production errors.",
        "",
    ]
    header = ["family", "tried", "accepted", "refused: cheat", "refused: trial", "refused: other"]
    if mms:
        rows = []
        for family in [*_family_order(mms), None]:
            ts = mms[family] if family is not None else [t for f in mms for t in mms[f]]
            cheat, trial = refused(ts, "cheat"), refused(ts, "trial")
            rows.append(
                [
                    family if family is not None else "**total**",
                    len(ts),
                    accepted(ts),
                    cheat,
                    trial,
                    refused(ts, None) - cheat - trial,
                ]
            )
        out += _table(header, rows)
    else:
        out.append("No manufactured-solution candidates were tried.")
    if unknown:
        out += ["", f"Trials of unknown kind (neither `_mms_` nor `_ref_` ids): {unknown}."]
    return out


def _build(
    trials: Sequence[Mapping[str, Any]], cases: Sequence[Case], wall_sec: float | None
) -> list[str]:
    ids = {c.id for c in cases}
    accepted = [t for t in trials if t.get("accepted")]
    used = sum(1 for t in accepted if t.get("id") in ids)
    tried = {t.get("id") for t in trials}
    refusals = Counter(
        refusal_class(str(t.get("reason", ""))) for t in trials if not t.get("accepted")
    )
    seconds = sum(float(t.get("seconds") or 0.0) for t in trials)
    out = ["## Build", ""]
    out += _table(
        ["quantity", "value"],
        [
            ["trials", len(trials)],
            ["accepted", len(accepted)],
            ["accepted and in the dataset", used],
            ["accepted spares (not in the dataset)", len(accepted) - used],
            ["refused", len(trials) - len(accepted)],
            ["dataset cases without a trial", len(ids - tried)],
            ["total trial time [s]", fmt(seconds)],
            *(
                [["wall time of the last build run [s]", fmt(wall_sec)]]
                if wall_sec is not None
                else []
            ),
        ],
    )
    out += ["", "### Refusals by class", ""]
    if refusals:
        rows = [[cls, n] for cls, n in sorted(refusals.items())]
        out += _table(["class", "trials"], rows)
    else:
        out.append("No candidate was refused.")
    return out


# ------------------------------------------------------------------------------ API


def card_markdown(
    cases: Sequence[Case],
    trials: Sequence[Mapping[str, Any]] | None,
    *,
    wall_sec: float | None = None,
    dataset_name: str | None = None,
) -> str:
    """The dataset card as Markdown.

    ``cases``: the dataset's records; ``trials``: the parsed trial records of the
    build directory (``None`` when there is none: the build sections are skipped);
    ``wall_sec``: wall time of the last build run, if known; ``dataset_name``: the
    dataset's file name, shown in the header.
    """
    trials = sorted(trials, key=lambda t: str(t.get("id", ""))) if trials is not None else None
    cases = sorted(cases, key=lambda c: c.id)
    out = [
        f"# pdeagent dataset {_dataset_version(cases)}",
        "",
        "Generated by `pdeagent cases build`; do not edit by hand.",
        "",
    ]
    where = f"`{dataset_name}`: " if dataset_name else ""
    out += [f"{where}{len(cases)} cases.", ""]
    out += _composition(cases)
    out += [""]
    out += _thresholds(cases)
    out += [""]
    if trials is None:
        out.append(NO_BUILD_NOTE)
    else:
        out += _reference_validity(_classify(trials, cases))
        out += [""]
        out += _build(trials, cases, wall_sec)
    return "\n".join(out) + "\n"


def load_trials(build_dir: Path | None) -> list[dict[str, Any]] | None:
    """The trial records under ``build_dir/trials`` (sorted by id); None without them."""
    if build_dir is None:
        return None
    directory = Path(build_dir) / "trials"
    if not directory.is_dir():
        return None
    trials = []
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"unreadable trial record {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"trial record {path} is not a JSON object")
        data.setdefault("id", path.stem)
        if data.get("accepted"):  # the build's selection rule over stored measurements
            ok, why = competent(data.get("thresholds"))
            data["accepted"], data["reason"] = ok, why
        trials.append(data)
    return sorted(trials, key=lambda t: str(t["id"]))


def write_card(
    dataset: Path,
    build_dir: Path | None,
    *,
    wall_sec: float | None = None,
    out: Path | None = None,
    known_libraries: Iterable[str] = KNOWN_LIBRARIES,
) -> Path:
    """Write the card of ``dataset`` (default: ``README.md`` next to it); returns its path.

    Raises :class:`pdeagent.cases.io.CaseFileError` if the dataset does not validate.
    """
    dataset = Path(dataset)
    cases = load_cases(dataset, known_libraries=known_libraries)
    text = card_markdown(
        cases, load_trials(build_dir), wall_sec=wall_sec, dataset_name=dataset.name
    )
    target = Path(out) if out is not None else dataset.parent / "README.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
