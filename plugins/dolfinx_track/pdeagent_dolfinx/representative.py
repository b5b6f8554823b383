"""Representative manufactured-solution cases, one per family, on the unit square.

Used by the calibration benchmark (``benchmarks/dolfinx_baselines.py``) and the
end-to-end tests; the boundary data here is the exact solution itself, which is
fine for measuring a solver and never used to build the benchmark's dataset.
"""

from __future__ import annotations

from pdeagent.cases.mms import divergence_free_from_stream, forcing
from pdeagent.cases.model import Case, case_from_dict
from pdeagent.geometry import get_geometry


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


def representative_cases(domain="unit_square"):
    """family -> (case_spec, exact arrays by output name) on ``domain``."""

    def spec(*args, **kw):
        return _spec(*args, domain=domain, **kw)

    s = "sin(pi*x)*sin(pi*y)"
    cases = {}
    u = f"{s} + x*y"
    cases["poisson"] = (
        spec("poisson", {"kappa": "1 + x**2"}, {"u": u}, bc=_dirichlet(u), output={"field": "u"}),
        {"u": u},
    )
    u = "sin(3*x)*cos(2*y) + x*y"
    cases["helmholtz"] = (
        spec("helmholtz", {"k": 10.0}, {"u": u}, bc=_dirichlet(u), output={"field": "u"}),
        {"u": u},
    )
    u = f"{s} + x*y"
    bc = {
        "dirichlet": [
            {"boundary": ["all"], "value": u, "quantity": "u"},
            {"boundary": ["all"], "value": f"-2*pi**2*{s}", "quantity": "laplacian_u"},
        ]
    }
    cases["biharmonic"] = (
        spec("biharmonic", {}, {"u": u}, bc=bc, output={"field": "u"}),
        {"u": u},
    )
    ue = [f"{s}", "x*y*(1 - x)"]
    params = {"E": 1.0, "nu": 0.3, "model": "plane_strain"}
    cases["linear_elasticity"] = (
        spec(
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
        spec(
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
        spec(
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
        spec("reaction_diffusion", params, {"u": u}, bc=_dirichlet(u), output={"field": "u"}),
        {"u": u},
    )
    vel = divergence_free_from_stream("sin(pi*x)**2*sin(pi*y)**2/pi + x*y**2")
    p = "cos(pi*x)*cos(pi*y)"
    mag = f"sqrt(({vel[0]})**2 + ({vel[1]})**2)"
    for fam, nu in (("stokes", 1.0), ("navier_stokes", 0.05)):
        cases[fam] = (
            spec(
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
        spec(
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
        spec(
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


def representative_case(family, *, repeats=3, domain="unit_square"):
    """The family's representative case as a record (manufactured solution)."""
    spec, exact = representative_cases(domain)[family]
    return case_from_dict(
        {
            "schema_version": 1,
            "id": f"representative_{family}_{domain}",
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


__all__ = ["Case", "representative_case", "representative_cases"]
