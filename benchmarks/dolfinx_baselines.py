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

from pdeagent.cases.mms import divergence_free_from_stream, forcing
from pdeagent.cases.model import case_from_dict
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source
from pdeagent.geometry import get_geometry
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox
from pdeagent.sandbox.base import Limits
from pdeagent_dolfinx.bundle import bundle, module_settings

TARGET_SEC = 3.0


def _spec(family, params, exact, *, bc, output, time=None, ic=None, domain="unit_square", n=65):
    geom = get_geometry(domain, {})
    bounds = geom.bbox()
    transient = time is not None
    return {
        "pde": {
            "type": family,
            "params": params,
            "forcing": forcing(family, exact, params, dim=geom.dim, transient=transient),
            "time": time,
        },
        "domain": {"type": domain, "bounds": bounds, "geometry_params": dict(geom.params)},
        "bc": {"dirichlet": [], "neumann": [], "robin": [], "periodic": [], **bc},
        "ic": ic,
        "eval_grid": {
            "type": "cartesian",
            "nx": n,
            "ny": n,
            "nz": None,
            "bbox": [c for pair in bounds for c in pair],
            "mask_outside": True,
        },
        "output": {"format": "npz", "components": None, **output},
    }


def _dirichlet(value, quantity=None):
    return {"dirichlet": [{"boundary": ["all"], "value": value, "quantity": quantity}]}


def representative_cases():
    """family -> (case_spec, exact arrays by output name)."""
    s = "sin(pi*x)*sin(pi*y)"
    cases = {}
    u = f"{s} + x*y"
    cases["poisson"] = (
        _spec("poisson", {"kappa": "1 + x**2"}, {"u": u}, bc=_dirichlet(u), output={"field": "u"}),
        {"u": u},
    )
    u = "sin(3*x)*cos(2*y) + x*y"
    cases["helmholtz"] = (
        _spec("helmholtz", {"k": 10.0}, {"u": u}, bc=_dirichlet(u), output={"field": "u"}),
        {"u": u},
    )
    u = f"{s} + x*y"
    bc = {
        "dirichlet": [
            {"boundary": ["all"], "value": "x*y", "quantity": "u"},
            {"boundary": ["all"], "value": "0", "quantity": "laplacian_u"},
        ]
    }
    cases["biharmonic"] = (
        _spec("biharmonic", {}, {"u": u}, bc=bc, output={"field": "u"}),
        {"u": u},
    )
    ue = [f"{s}", "x*y*(1 - x)"]
    params = {"E": 1.0, "nu": 0.3, "model": "plane_strain"}
    cases["linear_elasticity"] = (
        _spec(
            "linear_elasticity",
            params,
            {"u": ue},
            bc=_dirichlet(ue),
            output={"field": "displacement", "components": ["u_x", "u_y"]},
        ),
        {"u_x": ue[0], "u_y": ue[1]},
    )
    u = f"exp(-t)*{s} + x*y"
    cases["heat"] = (
        _spec(
            "heat",
            {"kappa": 1.0},
            {"u": u},
            bc=_dirichlet(u),
            output={"field": "u"},
            time={"t0": 0.0, "t_end": 0.5},
            ic={"u": f"{s} + x*y"},
        ),
        {"u": u},
    )
    u = f"{s} + x*y"
    cases["convection_diffusion"] = (
        _spec(
            "convection_diffusion",
            {"epsilon": 0.01, "beta": ["1.0", "0.5"]},
            {"u": u},
            bc=_dirichlet(u),
            output={"field": "u"},
        ),
        {"u": u},
    )
    u = f"0.5*{s} + 0.25*x*y"
    params = {"epsilon": 0.1, "sigma": 1.0, "reaction_law": "allen_cahn"}
    cases["reaction_diffusion"] = (
        _spec("reaction_diffusion", params, {"u": u}, bc=_dirichlet(u), output={"field": "u"}),
        {"u": u},
    )
    vel = divergence_free_from_stream("sin(pi*x)**2*sin(pi*y)**2/pi + x*y**2")
    p = "cos(pi*x)*cos(pi*y)"
    mag = f"sqrt(({vel[0]})**2 + ({vel[1]})**2)"
    for fam, nu in (("stokes", 1.0), ("navier_stokes", 0.05)):
        cases[fam] = (
            _spec(
                fam,
                {"nu": nu},
                {"u": vel, "p": p},
                bc=_dirichlet(vel, "velocity"),
                output={"field": "velocity_magnitude"},
            ),
            {"velocity_magnitude": mag},
        )
    u = f"exp(-t)*{s} + 0.5*x*y"
    cases["burgers"] = (
        _spec(
            "burgers",
            {"nu": 0.05, "b": ["1.0", "1.0"]},
            {"u": u},
            bc=_dirichlet(u),
            output={"field": "u"},
            time={"t0": 0.0, "t_end": 0.5},
            ic={"u": f"{s} + 0.5*x*y"},
        ),
        {"u": u},
    )
    u = f"cos(sqrt(2)*pi*t)*{s} + x*y"
    cases["wave"] = (
        _spec(
            "wave",
            {"c": 1.0},
            {"u": u},
            bc=_dirichlet(u),
            output={"field": "u"},
            time={"t0": 0.0, "t_end": 0.5},
            ic={"u": f"{s} + x*y", "u_t": "0"},
        ),
        {"u": u},
    )
    return cases


def _record(family, spec, exact, repeats):
    return case_from_dict(
        {
            "schema_version": 1,
            "id": f"bench_{family}",
            "pde_classification": {"equation_family": family, "math_type": ["elliptic"]},
            "case_spec": spec,
            "evaluation_config": {"timeout_sec": 600.0, "timed_repeats": repeats},
            "evaluation_metadata": {
                "construction_method": "manufactured_solution",
                "manufactured_solution": exact,
            },
            "supported_libraries": ["dolfinx"],
        }
    )


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
        spec, exact = cases[family]
        case = _record(family, spec, exact, args.repeats)
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
