"""Benchmark: the DOLFINx calibration baseline of every family on a representative case.

For each family it bundles the calibration solver (``DEFAULTS``), runs it through the
harness's own timing protocol in the real sandbox (accuracy run as warm-up, then the
timed repeats; ``t`` = median) and scores it against the manufactured solution on the
evaluation grid. It also runs the reference settings (``REFERENCE``) once, so the
ratio e_calibration / e_reference shows how much headroom the reference has.

    .venv/bin/python benchmarks/dolfinx_baselines.py [--families poisson,heat] [--repeats 3]

Prints one row per family: error, median runtime, runtime ratio to the 3 s target.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox
from pdeagent.sandbox.base import Limits
from pdeagent_dolfinx.bundle import bundle, module_settings
from pdeagent_dolfinx.representative import representative_case, representative_cases

TARGET_SEC = 3.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", help="comma-separated subset")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-reference", action="store_true")
    args = ap.parse_args()
    cases = representative_cases()
    families = args.families.split(",") if args.families else list(cases)
    host = load_plugins(strict=True)
    track = host.get_track("dolfinx")
    sandbox = default_sandbox()
    print(
        f"# machine: {platform.node()} {platform.machine()} {platform.processor() or ''} "
        f"python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    print(
        f"{'family':22s} {'e_calib':>9s} {'t_calib[s]':>10s} {'t/3s':>6s} "
        f"{'e_ref':>9s} {'e_cal/e_ref':>11s} {'dofs':>8s}"
    )
    failures = 0
    for family in families:
        case = representative_case(family, repeats=args.repeats)
        rows = {}
        for label, settings in (("calib", None), ("ref", module_settings(family, "REFERENCE"))):
            if label == "ref" and (args.no_reference or settings is None):
                continue
            with tempfile.TemporaryDirectory(prefix="pdeagent-bench-", dir="/var/tmp") as tmp:
                report = evaluate_source(
                    host,
                    track,
                    case,
                    bundle(family, settings),
                    sandbox=sandbox,
                    workroot=Path(tmp) / "w",
                    thresholds=None,
                    policy=GradingPolicy(timed_repeats=args.repeats if label == "calib" else 1),
                    limits=Limits(wall_time_sec=600),
                )
            rows[label] = report
        cal = rows["calib"]
        if cal.verdict is not None:
            failures += 1
            print(f"{family:22s} FAILED {cal.reason}: {cal.message} {cal.stderr_excerpt[-300:]}")
            continue
        ref = rows.get("ref")
        e_ref = ref.error if ref is not None and ref.error is not None else float("nan")
        dofs = (cal.diagnostics.get("solver_info") or {}).get("dofs", "-")
        print(
            f"{family:22s} {cal.error:9.2e} {cal.runtime_sec:10.2f} "
            f"{cal.runtime_sec / TARGET_SEC:6.2f} {e_ref:9.2e} "
            f"{cal.error / e_ref if e_ref == e_ref and e_ref > 0 else np.nan:11.1f} {dofs!s:>8s}"
        )
        sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
