"""Do the thresholds discriminate? Three solvers per case, graded side by side (issue #19).

For a stratified sample of each track's cases (one manufactured-solution case per family
by default), the track's own family solver runs in three configurations, each written
as a person would on a first try, through the real pipeline and the pristine protocol,
against the case's frontier thresholds (measured here and kept in the frontier store,
so a rerun reuses them):

- naive: degree 1 on a uniform mesh from a fixed rule (32 cells across the bounding box,
  8 per side in 3-D), the solver's first-order time scheme where it has one;
- textbook: degree 2 on a moderate mesh (24 cells across, the solvers' former calibration
  defaults), direct solve, second-order time stepping;
- (Stokes and Navier-Stokes: the lowest stable Taylor-Hood pair, P2-P1 / Q2-Q1, on 16
  cells across for naive and 32 for textbook);
- baseline: the frontier rule's chosen configuration (the calibration baseline).

Prints, per track and solver, the pass rate and the medians of error / tau_acc and
runtime / tau_time, then each case's verdicts.

    .venv/bin/python benchmarks/discrimination.py --track dolfinx --track dealii
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.frontier_thresholds import DEFAULT_STORE, measure_frontier, read_stored
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent.evaluation.pipeline import ResolvedThresholds, evaluate_source
from pdeagent.plugins import PluginHost, load_plugins
from pdeagent.sandbox import get_sandbox
from pdeagent.stages import Track

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO / "cases" / "pdeagent-v1.jsonl"

NAIVE_2D = {"degree": 1, "resolution": 32}
NAIVE_3D = {"resolution_3d": 8, "resolution_cube": 8}
FIRST_ORDER = {"scheme": "backward_euler"}
"""Families whose solver has a first-order scheme under this name (DOLFINx, Firedrake)."""
TEXTBOOK = {"degree": 2, "resolution": 24}


def _settings(track: Track, case: Case, family: str, kind: str) -> dict[str, Any]:
    """The naive or textbook settings of the family's solver (only keys it knows)."""
    defaults = _defaults(track.name, family)
    wanted: dict[str, Any] = {}
    if family in ("stokes", "navier_stokes"):
        # the lowest stable Taylor-Hood pair (P2-P1 / Q2-Q1) for both; deal.II's Stokes
        # program counts the velocity degree, the others the pressure degree
        lowest = 2 if (track.name, family) == ("dealii", "stokes") else 1
        wanted = {"degree": lowest, "resolution": 16 if kind == "naive" else 32}
    elif kind == "naive":
        wanted = {**NAIVE_2D, **NAIVE_3D}
        if defaults.get("scheme") in ("bdf2", "crank_nicolson"):
            wanted.update(FIRST_ORDER)
    elif kind == "textbook":
        wanted = dict(TEXTBOOK)
    return {k: v for k, v in wanted.items() if k in defaults}


def _defaults(track: str, family: str) -> dict[str, Any]:
    if track == "dolfinx":
        from pdeagent_dolfinx.bundle import module_settings

        return module_settings(family, "DEFAULTS") or {}
    if track == "firedrake":
        from pdeagent_firedrake.bundle import module_settings

        return module_settings(family, "DEFAULTS") or {}
    from pdeagent_dealii.bundle import DEFAULTS

    return dict(DEFAULTS.get(family, {}))


def sample(cases: list[Case], track: str, per_family: int) -> list[Case]:
    out: dict[str, list[Case]] = {}
    for case in sorted(cases, key=lambda c: c.id):
        if track not in case.supported_libraries:
            continue
        if case.evaluation_metadata.construction_method != "manufactured_solution":
            continue
        picked = out.setdefault(case.family, [])
        if len(picked) < per_family:
            picked.append(case)
    return [c for fam in sorted(out) for c in out[fam]]


def grade(
    host: PluginHost, track: Track, case: Case, config: dict[str, Any], th: dict[str, Any],
    sandbox: Any,
) -> dict[str, Any]:  # fmt: skip
    source = host.hook.pdeagent_calibration_source(
        track=track,
        case_view=agent_view(case, track.name),
        calibration_config={track.name: config},
    )
    resolved = ResolvedThresholds(
        tau_acc=th["tau_acc"], tau_time=th["tau_time"], e_base=th["e_base"],
        t_base=th["t_base"], source="frontier store", t_null=th["t_null"],
        time_rule="solve", protocol=th["protocol"], t_noise=th.get("t_noise"),
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="pdeagent-discr-", dir="/var/tmp") as tmp:
        report = evaluate_source(
            host, track, case, source, sandbox=sandbox, workroot=Path(tmp) / "w",
            thresholds=resolved, dataset_dir=DATASET.parent,
        )  # fmt: skip
    return {
        "verdict": report.verdict,
        "reason": report.reason,
        "error_ratio": None if report.error is None else report.error / th["tau_acc"],
        "time_ratio": None if report.runtime_sec is None else report.runtime_sec / th["tau_time"],
    }


def _median(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", action="append", required=True)
    parser.add_argument("--per-family", type=int, default=1)
    parser.add_argument("--store", type=Path, default=REPO / DEFAULT_STORE)
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--retry-failed", action="store_true", help="measure failed cases again")
    args = parser.parse_args()
    host = load_plugins(strict=True)
    sandbox = get_sandbox(args.sandbox)
    cases = load_cases(DATASET)
    results: dict[str, Any] = {}
    for name in args.track:
        track = host.get_track(name)
        picked = sample(cases, name, args.per_family)
        t0 = time.perf_counter()
        frontier = measure_frontier(
            host, track, DATASET, sandbox=sandbox, store=args.store,
            case_ids=[c.id for c in picked], retry_failed=args.retry_failed,
            progress=lambda stage, done, total: print(f"  {stage} {done}/{total}", flush=True),
        )  # fmt: skip
        took = time.perf_counter() - t0
        print(f"{name}: frontier thresholds of {len(picked)} cases "
              f"({len(frontier.measured)} measured, {len(frontier.reused)} reused, "
              f"{len(frontier.failed)} failed) in {took:.0f} s", flush=True)  # fmt: skip
        rows = []
        for case in picked:
            stored = read_stored(args.store, track, case.id, None) or {}
            th = stored.get("thresholds")
            if not th:
                print(f"  {case.id}: no frontier thresholds ({stored.get('failure')})")
                continue
            row: dict[str, Any] = {"case": case.id, "family": case.family}
            for kind in ("naive", "textbook", "baseline"):
                config = (
                    th["selection"]["config"]
                    if kind == "baseline"
                    else _settings(track, case, case.family, kind)
                )
                row[kind] = {"config": config, **grade(host, track, case, config, th, sandbox)}
                print(f"  {case.id} {kind}: {row[kind]['verdict']} {row[kind]['reason'] or ''} "
                      f"err/tau {row[kind]['error_ratio']} t/tau {row[kind]['time_ratio']}",
                      flush=True)  # fmt: skip
            rows.append(row)
        results[name] = rows
    print("\n| track | solver | cases | PASS | median error/tau_acc | median t/tau_time |")
    print("|---|---|---:|---:|---:|---:|")
    for name, rows in results.items():
        for kind in ("naive", "textbook", "baseline"):
            got = [r[kind] for r in rows]
            passed = sum(g["verdict"] == "PASS" for g in got)
            err = _median([g["error_ratio"] for g in got])
            tim = _median([g["time_ratio"] for g in got])
            print(f"| {name} | {kind} | {len(got)} | {passed} | "
                  f"{'-' if err is None else f'{err:.3g}'} | "
                  f"{'-' if tim is None else f'{tim:.2f}'} |")  # fmt: skip
    print("\n| track | case | naive | textbook | baseline |")
    print("|---|---|---|---|---|")
    for name, rows in results.items():
        for r in rows:
            cells = [f"{r[k]['verdict']}" for k in ("naive", "textbook", "baseline")]
            print(f"| {name} | {r['case']} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
