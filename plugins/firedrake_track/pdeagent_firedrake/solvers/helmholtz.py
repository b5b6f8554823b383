"""Helmholtz: -laplace(u) - k**2 u = f (real-valued) with Dirichlet, Neumann
(du/dn = g), Robin (du/dn + alpha u = g) and periodic boundary parts.

k may be a constant or an expression in the space coordinates.  Continuous
Lagrange elements of degree ``degree``; the mesh is refined beyond ``resolution``
when needed to resolve the wavelength (rule below).  The system is symmetric but
indefinite: direct solve (MUMPS) by default.  On a periodic_square the mesh itself
is periodic.

Resolution rule: with k_max the largest |k| over the bounding box, L its longest
side and p the degree, the domain spans n_waves = k_max L / (2 pi) wavelengths;
the solver uses at least ``points_per_wavelength * max(1, n_waves)**(1/(2p))``
dofs per wavelength along a line (the growing factor compensates the pollution
error ~ k (kh)^(2p)), i.e. ``resolution >= ceil(that * n_waves / p)`` cells across L.
"""

import math
import time

import firedrake as fd
import numpy as np
import ufl

from ._common import (
    GridSampler,
    LinearSystem,
    boundary_terms,
    build_domain,
    check_scalar_bc,
    check_steady,
    dirichlet_conditions,
    merged_settings,
    mesh_info,
    output_fields,
    parameter,
    to_ufl,
    write_solution,
)

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 32,  # minimum cells across the longest side of the bounding box
    "degree": 2,  # Lagrange degree
    "points_per_wavelength": 30.0,  # dofs per wavelength (before the pollution factor)
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    "resolution": 96,
    "degree": 3,
    "points_per_wavelength": 60.0,
    "solver_parameters": None,
}

_HELMHOLTZ_SAMPLES = {2: 101, 3: 31}  # points per axis for sampling k over the bbox


def _helmholtz_numpy_namespace(X, params):
    names = {
        "sin": np.sin,
        "cos": np.cos,
        "tan": np.tan,
        "exp": np.exp,
        "log": np.log,
        "sqrt": np.sqrt,
        "abs": np.abs,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "tanh": np.tanh,
        "atan": np.arctan,
        "atan2": np.arctan2,
        "asin": np.arcsin,
        "acos": np.arccos,
        "sign": np.sign,
        "Min": np.minimum,
        "Max": np.maximum,
        "Heaviside": lambda a: np.where(np.asarray(a) >= 0, 1.0, 0.0),
        "pi": math.pi,
        "E": math.e,
        "x": X[0],
        "y": X[1],
        "z": X[2],
        "t": 0.0,
    }
    for key, value in (params or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            names[key] = float(value)
    return names


def _helmholtz_k_max(k_value, params, bbox):
    """max |k| over a regular sample of the bounding box (``bbox``: [[lo, hi], ...])."""
    if isinstance(k_value, bool):
        raise TypeError(f"pde.params.k must be a number or an expression, got {k_value!r}")
    if isinstance(k_value, (int, float)):
        k_max = abs(float(k_value))
    else:
        n = _HELMHOLTZ_SAMPLES[len(bbox)]
        axes = [np.linspace(float(lo), float(hi), n) for lo, hi in bbox]
        grid = np.meshgrid(*axes, indexing="ij")
        pts = np.zeros((3, grid[0].size))
        for i, arr in enumerate(grid):
            pts[i] = arr.ravel()
        raw = eval(str(k_value), {"__builtins__": {}}, _helmholtz_numpy_namespace(pts, params))
        values = np.broadcast_to(np.asarray(raw, dtype=float), (pts.shape[1],))
        if not np.all(np.isfinite(values)):
            raise ValueError("pde.params.k is not finite everywhere on the domain's bounding box")
        k_max = float(np.max(np.abs(values)))
    if not math.isfinite(k_max):
        raise ValueError(f"pde.params.k is not finite: {k_value!r}")
    return k_max


def wavelength_resolution(k_max, length, degree, points_per_wavelength):
    """Cells across ``length`` needed by the wavelength/pollution rule (module docstring)."""
    n_waves = k_max * length / (2.0 * math.pi)
    if n_waves <= 0.0:
        return 1
    ppw = points_per_wavelength * max(1.0, n_waves) ** (1.0 / (2.0 * degree))
    return max(1, math.ceil(ppw * n_waves / degree))


def _check(case_spec):
    pde = case_spec["pde"]
    check_steady("helmholtz", pde)
    params = pde.get("params") or {}
    if "k" not in params:
        raise KeyError("case_spec.pde.params has no 'k' (wave number)")
    forcing = pde.get("forcing") or {}
    if len(forcing) > 1 and "f" not in forcing:
        raise KeyError("with several forcing entries one must be named 'f'")
    extra = sorted(key for key in forcing if key != "f")
    if extra:
        raise NotImplementedError(f"helmholtz: additional forcing terms {extra} are not defined")
    check_scalar_bc("helmholtz", case_spec["bc"])
    return next(iter(forcing.values())) if forcing else 0.0


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    f_value = _check(case_spec)
    pde, bc = case_spec["pde"], case_spec["bc"]
    params = pde.get("params") or {}

    degree = int(cfg["degree"])
    bbox = case_spec["domain"].get("bounds")
    if not bbox:
        raise KeyError("case_spec.domain.bounds is required")
    length = max(float(hi) - float(lo) for lo, hi in bbox)
    k_max = _helmholtz_k_max(params["k"], params, bbox)
    needed = wavelength_resolution(k_max, length, degree, float(cfg["points_per_wavelength"]))
    resolution = max(int(cfg["resolution"]), needed)

    domain = build_domain(case_spec["domain"], resolution, periodic=bc.get("periodic"))
    msh = domain.msh
    V = fd.FunctionSpace(msh, "CG", degree)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    k = parameter(params, "k", msh)
    f = to_ufl(f_value, msh, params=params)
    robin_lhs, natural_rhs = boundary_terms(v, domain, bc, params=params, u=u)
    a = (ufl.inner(ufl.grad(u), ufl.grad(v)) - k * k * u * v) * ufl.dx + robin_lhs
    L = f * v * ufl.dx + natural_rhs
    bcs = dirichlet_conditions(V, domain, bc, params=params)
    uh = fd.Function(V)
    system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                          prefix="helmholtz_")  # fmt: skip
    system.solve()
    with uh.dat.vec_ro as vec:
        finite = math.isfinite(vec.norm())
    if not finite:
        raise RuntimeError("helmholtz: the discrete solution is not finite")
    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    info = {
        "family": "helmholtz",
        "resolution": resolution,
        "requested_resolution": int(cfg["resolution"]),
        "element_degree": degree,
        "k_max": k_max,
        "points_per_wavelength": float(cfg["points_per_wavelength"]),
        "dofs": V.dim(),
        **mesh_info(msh),
        **system.info(),
    }
    fields = output_fields(case_spec, {"u": values})
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
