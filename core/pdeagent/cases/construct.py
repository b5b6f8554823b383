"""From one design-matrix instance to a case record (SPEC §3, §4).

A :class:`Instance` fixes the family, the geometry, the parameters, a named
solution (manufactured cases) or a named problem (no-exact cases), a boundary
pattern, the time horizon and the output form. :func:`case_record` turns it into
a record: forcing, boundary and initial data of manufactured cases derived
symbolically (:mod:`pdeagent.cases.mms`) from a leak-free solution
``u* = g + phi * w`` (``phi`` vanishes on every Dirichlet part, so the Dirichlet
data ``g`` equals ``u*`` there only); no-exact cases state their data and carry a
``reference_config``. Pure sympy/numpy: no FEM library.
"""

from __future__ import annotations

from typing import Any

import sympy as sp
from attrs import define, field

from pdeagent.cases.boundary_factor import boundary_factor
from pdeagent.cases.expressions import SYMBOLS, parse_expression
from pdeagent.cases.families import flow_pressure_normalization, get_family
from pdeagent.cases.mms import _s as mms_string
from pdeagent.cases.mms import forcing, lame
from pdeagent.cases.model import FLOW_FAMILIES, BoundaryConditions, converter
from pdeagent.geometry import get_geometry

X, Y, Z, T = (SYMBOLS[n] for n in ("x", "y", "z", "t"))
COORDS = (X, Y, Z)


class ConstructionError(ValueError):
    """The instance cannot be turned into a case (unknown name, unsupported combination)."""


@define(frozen=True)
class Instance:
    """One point of a family's design matrix."""

    family: str
    stratum: str
    index: int
    method: str
    """``mms`` (manufactured solution) or ``reference`` (no exact solution)."""
    geometry: str
    solution: str
    """Name in :data:`SOLUTIONS` (mms) or :data:`PROBLEMS` (reference)."""
    bc: str
    """Boundary pattern (see :func:`_boundary`)."""
    params: dict[str, Any] = field(factory=dict)
    t_end: float | None = None
    output: str = "scalar"
    """``scalar``, ``components`` (vector scored component-wise) or ``magnitude``."""
    time_profile: str = "decay"
    structure: str | None = None
    difficulty: str | None = None
    reference_config: dict[str, Any] | None = None
    decisions: list[str] = field(factory=list)

    @property
    def case_id(self) -> str:
        kind = "mms" if self.method == "mms" else "ref"
        return f"{self.family}_{self.geometry}_{self.stratum}_{kind}_{self.index:03d}"


# ----------------------------------------------------------------------------- solutions
# Scalar solutions: (g, w) with u* = g + phi * w. Placeholders {cx}, {cy} are the centre
# of the geometry's bounding box, {sx}, {sy} its half sizes.
SOLUTIONS: dict[str, tuple[str, str]] = {
    "trig": ("x*y + 1/2", "2*sin(pi*(x - {cx}))*cos(pi*(y - {cy})) + 1"),
    "poly": ("x**2 - y**2 + x/2 + 1", "1 + 2*x*y - y**2"),
    "exp": ("exp((x + y)/2)", "2*exp(-x*y) + cos(y)"),
    "oscillatory": ("cos(2*x) + y/2", "2*sin(3*pi*x)*sin(2*pi*y) + 1"),
    "peak": ("x/2 + y/3 + 1", "1 + 4*exp(-8*((x - {cx})**2 + (y - {cy})**2)/{sx}**2)"),
    "rational": ("1/(1 + x**2 + y**2)", "x - y + 2"),
    "sincos": ("sin(x)*cos(y) + 1", "cos(pi*x*y) + 1"),
    "quartic": ("x**4 + y**4/2 + 1/2", "1 + x - y/2"),
    "trig3d": ("x*y + z/2 + 1/2", "2*sin(pi*x)*cos(pi*y)*(1 + z) + 1"),
    "exp3d": ("exp(x + y/2 - z)/2", "1 + x*sin(pi*z)"),
    "poly3d": ("x**2 - y*z + 1", "1 + x*y*z + z**2"),
}
# Periodic-in-x solutions on periodic_square: (g, w), both 1-periodic in x.
PERIODIC_SOLUTIONS: dict[str, tuple[str, str]] = {
    "trig": ("cos(2*pi*x)/2 + y", "2*sin(2*pi*x)*cos(pi*y) + 1"),
    "oscillatory": ("sin(4*pi*x)*y/2 + 1", "2*cos(2*pi*x)*sin(2*pi*y) + sin(2*pi*x)"),
    "exp": ("exp(sin(2*pi*x))/2 + y", "cos(2*pi*x + y) + 1"),
}
# Fully periodic solutions (no Dirichlet data at all).
FULLY_PERIODIC: dict[str, str] = {
    "trig": "sin(2*pi*x)*cos(2*pi*y) + cos(2*pi*x)/2 + 1/4",
    "oscillatory": "sin(2*pi*x)*sin(4*pi*y) + cos(4*pi*x)*sin(2*pi*y)/2",
    "exp": "exp(sin(2*pi*x)*cos(2*pi*y)) - 1",
}
# Vector solutions (elasticity): (g, w) per component.
VECTOR_SOLUTIONS: dict[str, tuple[list[str], list[str]]] = {
    "trig": (["x*y/10", "(x - y**2)/20"], ["sin(pi*x)*cos(pi*y)/5 + 1/10", "cos(pi*x)/10 + y/10"]),
    "poly": (["(x**2 + y)/20", "x*y/10 - 1/20"], ["(1 + x*y)/10", "(x - y)**2/10 + 1/10"]),
    "exp": (["exp(x/2)/20", "y/10"], ["exp(-x*y)/10", "sin(x + y)/10 + 1/10"]),
    "trig3d": (
        ["x*y/10", "z/20", "(x - z)/20"],
        ["sin(pi*x)/10 + 1/10", "cos(pi*y)*z/10", "(1 + x*y)/10"],
    ),
    "poly3d": (["x*y/10", "y*z/10", "z*x/10"], ["(1 + x)/10", "(1 + y)/10", "(1 + z)/10"]),
}
# Stream functions for divergence-free velocities: (psi_g, psi_w); u* = curl(psi_g +
# phi**2 psi_w) so the Dirichlet velocity curl(psi_g) equals u* on the boundary only.
STREAM_SOLUTIONS: dict[str, tuple[str, str, str]] = {
    # name: (psi_g, psi_w, pressure)
    "trig": ("x**2*y/2 + y/2", "2 + sin(pi*x)*cos(pi*y)", "cos(pi*x)*sin(pi*y)"),
    "poly": ("x*y**2/2 - x**3/6 + y", "2 + x*y", "x**2 - y**2"),
    "exp": ("exp(x)*sin(y)/2", "2*exp(-x*y)", "x*y - 1/4"),
}
TIME_PROFILES: dict[str, str] = {
    "decay": "exp(-t)",
    "growth": "(1 + t)",
    "oscillate": "cos(2*t)",
}

# ----------------------------------------------------------------------------- no-exact
# Named problems of no-exact cases: forcing / boundary / initial data per family kind.
PROBLEMS: dict[str, dict[str, Any]] = {
    "gaussian_source": {"f": "10*exp(-60*((x - {px})**2 + (y - {py})**2)/{sx}**2)", "g": "0"},
    "two_sources": {
        "f": "8*exp(-80*((x - {px})**2 + (y - {cy})**2)/{sx}**2)"
        " - 8*exp(-80*((x - {qx})**2 + (y - {cy})**2)/{sx}**2)",
        "g": "0",
    },
    "unit_source": {"f": "1", "g": "0"},
    "graded_boundary": {"f": "0", "g": "(x - {cx})/{sx} + (y - {cy})**2/{sy}**2"},
    "gaussian_pulse": {
        "f": "0",
        "g": "0",
        "ic": "exp(-40*((x - {px})**2 + (y - {py})**2)/{sx}**2)",
    },
    "wide_pulse": {
        "f": "0",
        "g": "0",
        "ic": "exp(-20*((x - {px})**2 + (y - {py})**2)/{sx}**2)",
    },
    "random_phase_ic": {
        "f": "0",
        "g": "0",
        "ic": "cos(2*pi*x)*sin(pi*y)/2 + sin(3*pi*x + 1)*cos(2*pi*y)/4",
    },
    "body_force": {"f": ["0", "-exp(-4*((x - {cx})**2 + (y - {cy})**2)/{sx}**2)"], "g": ["0", "0"]},
    "shear_boundary": {"f": ["0", "0"], "g": ["(y - {y0})/(10*{sy})", "0"]},
    "lid_driven": {"f": ["0", "0"], "lid": "16*(x - {x0})**2*({x1} - x)**2/(4*{sx}**2)**2"},
    "vortex_force": {"f": ["-sin(pi*y)*cos(pi*x)", "sin(pi*x)*cos(pi*y)"], "g": ["0", "0"]},
}


def _placeholders(geometry: str, params: dict[str, Any]) -> dict[str, str]:
    geom = get_geometry(geometry, params)
    (x0, x1), (y0, y1) = geom.bbox()[:2]
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    sx, sy = (x1 - x0) / 2, (y1 - y0) / 2
    out = {
        "cx": cx,
        "cy": cy,
        "sx": sx,
        "sy": sy,
        "x0": x0,
        "x1": x1,
        "y0": y0,
        "y1": y1,
        # off-centre points inside most templates: a third of the way along the axes
        "px": cx - sx / 3,
        "py": cy + sy / 6,
        "qx": cx + sx / 3,
    }
    if geometry in ("annulus", "eccentric_annulus", "sector"):
        out["px"], out["py"], out["qx"] = cx - 0.7 * sx, cy + 0.2 * sy, cx + 0.7 * sx
    if geometry == "sector":
        out["px"], out["py"], out["qx"] = cx - 0.5 * sx, cy + 0.4 * sy, cx + 0.4 * sx
    if geometry == "t_junction":
        out["py"] = y1 - 0.1
    return {k: _num(v) for k, v in out.items()}


def _num(v: float) -> str:
    text = f"{v:.10g}"
    return f"({text})" if text.startswith("-") else text


def _fill(text: str, ph: dict[str, str]) -> str:
    for key, value in ph.items():
        text = text.replace("{" + key + "}", value)
    if "{" in text:
        raise ConstructionError(f"unfilled placeholder in {text!r}")
    return text


def _s(e: sp.Expr) -> str:
    return mms_string(e)


def _expr(text: str) -> sp.Expr:
    return parse_expression(text)


# ----------------------------------------------------------------------------- geometry
def _geometry_block(inst: Instance) -> tuple[dict[str, Any], dict[str, Any], int]:
    geom = get_geometry(inst.geometry, {})
    bounds = geom.bbox()
    dim = geom.dim
    domain = {"type": inst.geometry, "bounds": bounds, "geometry_params": dict(geom.params)}
    longest = max(b[1] - b[0] for b in bounds)
    n = 65 if dim == 2 else 25
    counts = [max(9, round((n - 1) * (b[1] - b[0]) / longest) + 1) for b in bounds]
    grid: dict[str, Any] = {
        "type": "cartesian",
        "nx": counts[0],
        "ny": counts[1],
        "nz": counts[2] if dim == 3 else None,
        "bbox": [c for pair in bounds for c in pair],
        "mask_outside": True,
    }
    return domain, grid, dim


# Outward normals of the axis-aligned sides (unit square / cube, periodic square).
NORMALS = {
    "xmin": (-1, 0, 0),
    "xmax": (1, 0, 0),
    "ymin": (0, -1, 0),
    "ymax": (0, 1, 0),
    "zmin": (0, 0, -1),
    "zmax": (0, 0, 1),
}


def _flux_coefficient(family: str, params: dict[str, Any]) -> sp.Expr:
    """D in the family's Neumann data D du/dn (templates/families/*.md.j2)."""
    key = {
        "poisson": "kappa",
        "heat": "kappa",
        "convection_diffusion": "epsilon",
        "reaction_diffusion": "epsilon",
        "burgers": "nu",
    }.get(family)
    if family == "helmholtz":
        return sp.Integer(1)
    if family == "wave":
        return _expr(str(params["c"])) ** 2
    if key is None:
        raise ConstructionError(f"{family}: no scalar flux")
    return _expr(str(params[key]))


def _normal_derivative(u: sp.Expr, tag: str, dim: int) -> sp.Expr:
    n = NORMALS[tag]
    return sum((n[i] * sp.diff(u, COORDS[i]) for i in range(dim)), sp.Integer(0))


# ----------------------------------------------------------------------------- records
def case_record(inst: Instance, *, dataset_version: str) -> dict[str, Any]:
    """The full case record (dict, JSON-able) of one design instance."""
    family = get_family(inst.family)
    domain, grid, dim = _geometry_block(inst)
    ph = _placeholders(inst.geometry, {})
    params = dict(inst.params)
    transient = inst.t_end is not None
    if family.time == "required" and not transient:
        raise ConstructionError(f"{inst.family} is transient: the instance needs t_end")
    if family.time == "forbidden" and transient:
        raise ConstructionError(f"{inst.family} is steady: the instance must not give t_end")
    if inst.method == "mms":
        pde_forcing, bc, ic, exact = _manufactured(inst, params, dim, ph)
        meta: dict[str, Any] = {
            "construction_method": "manufactured_solution",
            "manufactured_solution": exact,
            "reference_config": None,
            "calibration_config": None,
            "reference_path": None,
            "thresholds": {},
        }
    elif inst.method == "reference":
        pde_forcing, bc, ic = _no_exact(inst, params, dim, ph)
        meta = {
            "construction_method": "reference_numerical",
            "manufactured_solution": None,
            "reference_config": inst.reference_config or {},
            "calibration_config": None,
            "reference_path": f"references/{inst.case_id}.npz",
            "thresholds": {},
        }
    else:
        raise ConstructionError(f"unknown method {inst.method!r}")
    math_type = [family.primary_math_type]
    if transient and "parabolic" in family.math_types and "parabolic" not in math_type:
        math_type.append("parabolic")
    if not transient and inst.family in ("convection_diffusion", "reaction_diffusion"):
        math_type.append("elliptic")
    record: dict[str, Any] = {
        "schema_version": 1,
        "dataset_version": dataset_version,
        "id": inst.case_id,
        "pde_classification": {"equation_family": inst.family, "math_type": math_type},
        "case_spec": {
            "pde": {
                "type": inst.family,
                "params": params,
                "forcing": pde_forcing,
                "time": {"t0": 0.0, "t_end": inst.t_end} if transient else None,
            },
            "domain": domain,
            "bc": {"dirichlet": [], "neumann": [], "robin": [], "periodic": [], **bc},
            "ic": ic,
            "eval_grid": grid,
            "output": _output(inst, bc),
            "numerical_decisions": decisions(inst),
        },
        "evaluation_config": {
            "target_metric": "rel_L2_grid",
            "timeout_sec": 600.0,
            "alpha_acc": 10.0,
            "alpha_time": 3.0,
            "tau_min": 1e-6,
            "timed_repeats": 3,
        },
        "evaluation_metadata": meta,
        "tags": {"structure": inst.structure, "difficulty": inst.difficulty},
        "supported_libraries": ["dolfinx"],
    }
    return record


DECISION_ROLES: dict[str, str] = {
    "mesh_resolution": "resolves the solution's features to the accuracy the case demands",
    "element_degree": "trades unknowns against accuracy per unknown",
    "time_step": "controls the temporal error and the number of solves",
    "time_scheme": "sets the order and stability of the time integration",
    "stabilization": "controls oscillations where convection dominates diffusion",
    "linearization": "how the nonlinear term is treated (Newton, Picard, semi-implicit)",
    "linear_solver": "direct or preconditioned iterative solve of each linear system",
    "formulation": "which weak form / mixed spaces represent the problem stably",
}
"""Roles of the numerical decisions an agent makes (names and roles only, no values)."""

FAMILY_DECISIONS: dict[str, tuple[str, ...]] = {
    "poisson": ("mesh_resolution", "element_degree", "linear_solver"),
    "helmholtz": ("mesh_resolution", "element_degree", "linear_solver"),
    "biharmonic": ("formulation", "mesh_resolution", "element_degree", "linear_solver"),
    "linear_elasticity": ("formulation", "mesh_resolution", "element_degree", "linear_solver"),
    "heat": ("mesh_resolution", "element_degree", "time_step", "time_scheme", "linear_solver"),
    "convection_diffusion": ("mesh_resolution", "element_degree", "stabilization", "linear_solver"),
    "reaction_diffusion": ("mesh_resolution", "element_degree", "linearization", "linear_solver"),
    "stokes": ("formulation", "mesh_resolution", "element_degree", "linear_solver"),
    "navier_stokes": ("formulation", "mesh_resolution", "linearization", "linear_solver"),
    "burgers": (
        "mesh_resolution",
        "element_degree",
        "time_step",
        "time_scheme",
        "stabilization",
        "linearization",
    ),
    "wave": ("mesh_resolution", "element_degree", "time_step", "time_scheme"),
}


def decisions(inst: Instance) -> list[dict[str, str]]:
    """The family's decisions (plus time ones for transient instances), names and roles."""
    names = list(inst.decisions or FAMILY_DECISIONS[inst.family])
    if inst.t_end is not None:
        names += [n for n in ("time_step", "time_scheme") if n not in names]
    return [{"name": n, "role": DECISION_ROLES[n]} for n in names]


MAGNITUDE_REASON = (
    "The speed |u| alone is the output form of the paper's {title} cases; it is kept so "
    "that results on this case compare with the published numbers."
)
"""``output.reason`` of a flow case scored on the velocity magnitude only."""


def _field(inst: Instance) -> tuple[str, list[str] | None]:
    """The scored field's name and its component names (None: scored as one scalar)."""
    fam = get_family(inst.family)
    if not fam.vector_output:
        return "u", None
    elasticity = inst.family == "linear_elasticity"
    if inst.output == "components":
        dim = get_geometry(inst.geometry, {}).dim
        return "displacement" if elasticity else "velocity", ["u_x", "u_y", "u_z"][:dim]
    if inst.output == "magnitude":
        return "displacement_magnitude" if elasticity else "velocity_magnitude", None
    raise ConstructionError(f"{inst.family}: output must be components or magnitude")


def _output(inst: Instance, bc: dict[str, Any]) -> dict[str, Any]:
    """The output spec. A flow case scored component-wise also writes its pressure
    (``p``, scored separately) with the normalization its boundary conditions ``bc``
    imply (:func:`pdeagent.cases.families.flow_pressure_normalization`); a flow case
    scored on the magnitude states why (:data:`MAGNITUDE_REASON`)."""
    name, components = _field(inst)
    out: dict[str, Any] = {"format": "npz", "field": name, "components": components}
    if _scores_pressure(inst):
        out["pressure"] = {
            "array": PRESSURE_ARRAY,
            "normalization": _pressure_normalization(inst, bc),
        }
    elif inst.family in FLOW_FAMILIES and components is None:
        out["reason"] = MAGNITUDE_REASON.format(title=get_family(inst.family).title)
    return out


PRESSURE_ARRAY = "p"
"""Array name of a flow case's pressure."""


def _scores_pressure(inst: Instance) -> bool:
    """A flow case scored component-wise scores its pressure too."""
    return inst.family in FLOW_FAMILIES and inst.output == "components"


def _pressure_normalization(inst: Instance, bc: dict[str, Any]) -> str:
    full = {"dirichlet": [], "neumann": [], "robin": [], "periodic": [], **bc}
    tags = get_geometry(inst.geometry, {}).boundary_tags
    return flow_pressure_normalization(converter.structure(full, BoundaryConditions), tags)


def _scored(inst: Instance, u: list[sp.Expr] | sp.Expr, p: sp.Expr | None = None) -> dict[str, str]:
    """Manufactured solution per scored array name (:attr:`OutputSpec.arrays`): the
    field's arrays and, for a flow case scored component-wise, the pressure ``p``."""
    name, components = _field(inst)
    if not isinstance(u, list):
        return {name: _s(u)}
    if components is None:
        return {name: _s(sp.sqrt(sum(c**2 for c in u)))}
    scored = {n: _s(c) for n, c in zip(components, u, strict=True)}
    if _scores_pressure(inst):
        if p is None:
            raise ConstructionError(f"{inst.family}: no manufactured pressure")
        scored[PRESSURE_ARRAY] = _s(p)
    return scored


def _factor(inst: Instance, dirichlet_tags: list[str] | None) -> sp.Expr:
    """phi: zero on the Dirichlet parts (all of the boundary unless tags are given)."""
    if inst.geometry == "periodic_square":
        return 4 * Y * (1 - Y)
    if dirichlet_tags is None:
        return _expr(boundary_factor(inst.geometry, {}))
    # axis-aligned boxes: product over the Dirichlet sides only
    factors = {
        "xmin": X,
        "xmax": 1 - X,
        "ymin": Y,
        "ymax": 1 - Y,
        "zmin": Z,
        "zmax": 1 - Z,
    }
    phi = sp.Integer(1)
    for tag in dirichlet_tags:
        phi *= factors[tag]
    scale = {2: 4, 3: 4, 4: 16, 5: 16, 6: 64}.get(len(dirichlet_tags), 1)
    return phi * scale


def _bc_layout(inst: Instance, dim: int) -> tuple[list[str] | None, list[str], list[str]]:
    """(Dirichlet tags or None for the whole boundary, Neumann tags, Robin tags)."""
    sides = list(NORMALS)[: 2 * dim]
    if inst.bc == "dirichlet":
        return None, [], []
    if inst.geometry not in ("unit_square", "unit_cube"):
        raise ConstructionError(f"boundary pattern {inst.bc!r} needs the unit square or cube")
    if inst.bc == "neumann_mixed":
        neumann = ["xmax", "ymax"]
        return [s for s in sides if s not in neumann], neumann, []
    if inst.bc == "robin_mixed":
        robin = ["xmax"]
        return [s for s in sides if s not in robin], [], robin
    if inst.bc == "neumann_robin":
        return [s for s in sides if s not in ("xmax", "ymax")], ["ymax"], ["xmax"]
    raise ConstructionError(f"unknown boundary pattern {inst.bc!r}")


def _manufactured(
    inst: Instance, params: dict[str, Any], dim: int, ph: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None, dict[str, str]]:
    fam = inst.family
    transient = inst.t_end is not None
    profile = _expr(TIME_PROFILES[inst.time_profile]) if transient else sp.Integer(1)
    growth = (1 + T / 2) if transient else sp.Integer(1)
    if fam in ("stokes", "navier_stokes"):
        return _manufactured_flow(inst, params, dim, ph, profile)
    if fam == "linear_elasticity":
        return _manufactured_elasticity(inst, params, dim, ph)
    bc: dict[str, Any] = {}
    if inst.bc in ("periodic_x", "periodic_xy"):
        if inst.geometry != "periodic_square":
            raise ConstructionError("periodic patterns need the periodic_square template")
        if inst.bc == "periodic_xy":
            u = _expr(FULLY_PERIODIC[inst.solution]) * profile
            bc["periodic"] = [
                {"axis": "x", "boundary": "xmin", "partner": "xmax"},
                {"axis": "y", "boundary": "ymin", "partner": "ymax"},
            ]
            g = None
        else:
            gs, ws = PERIODIC_SOLUTIONS[inst.solution]
            g = _expr(gs) * growth
            u = g + _factor(inst, None) * _expr(ws) * profile
            bc["periodic"] = [{"axis": "x", "boundary": "xmin", "partner": "xmax"}]
            bc["dirichlet"] = [{"boundary": ["ymin", "ymax"], "value": _s(g), "quantity": None}]
    else:
        if inst.solution not in SOLUTIONS:
            raise ConstructionError(f"unknown solution {inst.solution!r}")
        gs, ws = SOLUTIONS[inst.solution]
        g = _expr(_fill(gs, ph)) * growth
        if fam == "biharmonic":
            dirichlet_tags, neumann_tags, robin_tags = None, [], []
        else:
            dirichlet_tags, neumann_tags, robin_tags = _bc_layout(inst, dim)
        phi = _factor(inst, dirichlet_tags)
        u = g + phi * _expr(_fill(ws, ph)) * profile
        if fam == "biharmonic":
            bc = _biharmonic_bc(inst, u, g, dim)
        else:
            bc["dirichlet"] = [
                {"boundary": dirichlet_tags or ["all"], "value": _s(g), "quantity": None}
            ]
            if neumann_tags or robin_tags:
                flux = _flux_coefficient(fam, params)
                bc["neumann"] = [
                    {
                        "boundary": [tag],
                        "value": _s(flux * _normal_derivative(u, tag, dim)),
                        "quantity": None,
                    }
                    for tag in neumann_tags
                ]
                alpha = 2
                bc["robin"] = [
                    {
                        "boundary": [tag],
                        "alpha": alpha,
                        "value": _s(flux * _normal_derivative(u, tag, dim) + alpha * u),
                    }
                    for tag in robin_tags
                ]
    exact = {"u": _s(u)}
    f = forcing(fam, exact, params, dim=dim, transient=transient)
    ic = None
    if transient:
        ic = {"u": _s(u.subs(T, 0))}
        if fam == "wave":
            ic["u_t"] = _s(sp.diff(u, T).subs(T, 0))
    return f, bc, ic, _scored(inst, u)


def _biharmonic_bc(inst: Instance, u: sp.Expr, g: sp.Expr, dim: int) -> dict[str, Any]:
    lap = sum((sp.diff(u, c, 2) for c in COORDS[:dim]), sp.Integer(0))
    entries = [{"boundary": ["all"], "value": _s(g), "quantity": "u"}]
    if inst.bc == "dirichlet":  # Navier (simply supported): u and laplacian(u)
        entries.append({"boundary": ["all"], "value": _s(lap), "quantity": "laplacian_u"})
        return {"dirichlet": entries}
    if inst.bc == "clamped":  # u and du/dn on every side of the square / cube
        if inst.geometry not in ("unit_square", "unit_cube"):
            raise ConstructionError("clamped biharmonic cases need the unit square or cube")
        for tag in list(NORMALS)[: 2 * dim]:
            entries.append(
                {
                    "boundary": [tag],
                    "value": _s(_normal_derivative(u, tag, dim)),
                    "quantity": "normal_derivative",
                }
            )
        return {"dirichlet": entries}
    raise ConstructionError(f"biharmonic: unknown boundary pattern {inst.bc!r}")


def _manufactured_flow(inst, params, dim, ph, profile):
    if dim != 2:
        raise ConstructionError("manufactured flow cases are built from a 2-D stream function")
    psi_g, psi_w, p = (_fill(s, ph) for s in STREAM_SOLUTIONS[inst.solution])
    phi = _expr(boundary_factor(inst.geometry, {}))
    psi = _expr(psi_g) + phi**2 * _expr(psi_w) * profile
    u = [sp.diff(psi, Y), -sp.diff(psi, X)]
    g = [sp.diff(_expr(psi_g), Y), -sp.diff(_expr(psi_g), X)]
    exact = {"u": [_s(c) for c in u], "p": p}
    transient = inst.t_end is not None
    f = forcing(inst.family, exact, params, dim=dim, transient=transient)
    bc = {"dirichlet": [{"boundary": ["all"], "value": [_s(c) for c in g], "quantity": "velocity"}]}
    ic = None
    if transient:
        ic = {"velocity": [_s(c.subs(T, 0)) for c in u]}
    return f, bc, ic, _scored(inst, u, _expr(p))


def _manufactured_elasticity(inst, params, dim, ph):
    gs, ws = VECTOR_SOLUTIONS[inst.solution]
    if len(gs) != dim:
        raise ConstructionError(f"elasticity solution {inst.solution!r} is not {dim}-D")
    dirichlet_tags, neumann_tags, robin_tags = _bc_layout(inst, dim)
    if robin_tags:
        raise ConstructionError("elasticity: no Robin conditions")
    phi = _factor(inst, dirichlet_tags)
    g = [_expr(_fill(c, ph)) for c in gs]
    u = [gi + phi * _expr(_fill(wi, ph)) for gi, wi in zip(g, ws, strict=True)]
    exact = {"u": [_s(c) for c in u]}
    f = forcing("linear_elasticity", exact, params, dim=dim)
    bc: dict[str, Any] = {
        "dirichlet": [
            {
                "boundary": dirichlet_tags or ["all"],
                "value": [_s(c) for c in g],
                "quantity": "displacement",
            }
        ]
    }
    if neumann_tags:
        lam, mu = lame(params, str(params.get("model", "plane_strain")))
        eps = sp.Matrix(
            dim, dim, lambda i, j: (sp.diff(u[i], COORDS[j]) + sp.diff(u[j], COORDS[i])) / 2
        )
        sigma = 2 * mu * eps + lam * eps.trace() * sp.eye(dim)
        bc["neumann"] = []
        for tag in neumann_tags:
            n = NORMALS[tag][:dim]
            traction = [(sum(sigma[i, j] * n[j] for j in range(dim))) for i in range(dim)]
            bc["neumann"].append(
                {"boundary": [tag], "value": [_s(c) for c in traction], "quantity": "traction"}
            )
    return f, bc, None, _scored(inst, u)


def _no_exact(
    inst: Instance, params: dict[str, Any], dim: int, ph: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    if inst.solution not in PROBLEMS:
        raise ConstructionError(f"unknown problem {inst.solution!r}")
    prob = PROBLEMS[inst.solution]
    fam = inst.family
    if dim == 3:
        ph = {**ph, "cz": "0.5"}

    def fill(v):
        if isinstance(v, list):
            return [_fill(c, ph) for c in v]
        return _fill(v, ph)

    bc: dict[str, Any] = {}
    ic = None
    if fam in ("stokes", "navier_stokes"):
        f = {"f": fill(prob["f"])}
        if "lid" in prob:
            if inst.geometry != "unit_square":
                raise ConstructionError("lid-driven flow needs the unit square")
            bc["dirichlet"] = [
                {"boundary": ["ymax"], "value": [fill(prob["lid"]), "0"], "quantity": "velocity"},
                {
                    "boundary": ["xmin", "xmax", "ymin"],
                    "value": ["0", "0"],
                    "quantity": "velocity",
                },
            ]
        else:
            bc["dirichlet"] = [
                {"boundary": ["all"], "value": fill(prob["g"]), "quantity": "velocity"}
            ]
        if inst.t_end is not None:
            ic = {"velocity": ["0", "0"]}
        return f, bc, ic
    if fam == "linear_elasticity":
        f = {"f": fill(prob["f"])}
        bc["dirichlet"] = [
            {"boundary": ["all"], "value": fill(prob["g"]), "quantity": "displacement"}
        ]
        return f, bc, None
    f = {"f": fill(prob["f"])}
    if fam == "biharmonic":
        bc["dirichlet"] = [
            {"boundary": ["all"], "value": fill(prob["g"]), "quantity": "u"},
            {"boundary": ["all"], "value": "0", "quantity": "laplacian_u"},
        ]
        return f, bc, None
    if inst.bc == "periodic_xy":
        bc["periodic"] = [
            {"axis": "x", "boundary": "xmin", "partner": "xmax"},
            {"axis": "y", "boundary": "ymin", "partner": "ymax"},
        ]
    elif inst.bc == "neumann_zero":
        bc["neumann"] = [{"boundary": ["all"], "value": "0", "quantity": None}]
    else:
        bc["dirichlet"] = [{"boundary": ["all"], "value": fill(prob["g"]), "quantity": None}]
    if inst.t_end is not None:
        ic = {"u": fill(prob.get("ic", "0"))}
        if fam == "wave":
            ic["u_t"] = "0"
    return f, bc, ic
