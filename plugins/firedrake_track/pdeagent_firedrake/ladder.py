"""Calibration ladders of the Firedrake track: the configurations the frontier
calibration (SPEC 7.1, issue #19) measures for one case.

:func:`ladder` returns chains of settings dicts for the case's family solver
(``solvers/<family>.py``; each dict is a valid ``calibration_config["firedrake"]``).
Within a chain everything but the mesh (and, for transient cases, the time step) is
fixed, and the rungs are ordered by cost: the search walks a chain until a rung fails,
leaves the solve budget (2 s in 2-D, 8 s in 3-D) or reaches the target error, so every
chain starts cheap enough for a hard case to have a rung within the budget and ends
well beyond it. Every rung of a ladder sets the same keys: all knobs the ladder varies
anywhere, and the fixed ones (scheme, tolerances, solver) explicitly, so no rung
silently inherits a default. Nothing here imports Firedrake (the harness calls it).

Common rules
------------
* One chain per element degree (the knob that changes the convergence rate); along a
  chain the resolution (cells across the longest side of the bounding box) grows by
  the factor 1.5 in 2-D and 1.4 in 3-D, so every rung adds about the same factor of
  unknowns (2.25x in 2-D, 2.7x in 3-D). Each degree's chain spans the same range of
  unknowns, so higher degrees start and stop at coarser meshes: from about 200 (2-D) /
  100 (3-D), below the cost of the solvers' DEFAULTS, to 3e5 (2-D) / 4e4 (3-D), beyond
  what a direct solve does in the budget (measured here: a 2-D P3 Poisson solve of 3e4
  unknowns 0.6 s; a 3-D one of 3e4 P2 unknowns 5.5 s, 3.6e4 P2 elasticity unknowns
  22 s). Degrees 1-4 where the element allows it: the cases' solutions are smooth
  (manufactured, or smooth data), where high degrees win at small errors.
* Linear systems: direct (MUMPS, the solvers' default) in 2-D and on every
  direct chain. In 3-D, where a direct solve's fill grows fastest, the families whose
  operator suits algebraic multigrid (Poisson, biharmonic by splitting, elasticity in
  displacement form) get CG + GAMG chains for degrees 2-3 (Poisson 2-4) from 5e3 to
  8e5 unknowns (relative residual 1e-12: measured, the same error as the direct
  solve; 4-8x faster than it at 3e4-6e4 unknowns).
* Transient cases (heat, and convection-diffusion / reaction-diffusion with
  ``pde.time``): BDF2 (second order, L-stable; the solvers' other second-order scheme,
  Crank-Nicolson, does not damp incompatible initial data), with the step refined
  with the mesh so the temporal error does not plateau a chain:

      dt = TIME_SCALE * (1 / resolution) ** ((p + 1) / 2),  TIME_SCALE = 2

  Spatial error ~ h^(p+1) and BDF2 error ~ dt^2 then fall by the same factor per rung.
  TIME_SCALE (in the cases' time units; their solutions vary on O(1) time scales)
  sets the balance: measured on a heat case with cos(2t) in time, BDF2's error was
  about 0.14 dt^2, and the rule keeps it at or below the spatial error there (with
  TIME_SCALE = 1 the temporal error was 10x below it: wasted steps). ``n_steps =
  ceil((t_end - t0) / dt)`` (at least 4) is set, ``dt`` the resulting step. A
  transient chain also stops once unknowns x steps exceed 3e7 (2-D) / 1e7 (3-D).
* At most :data:`MAX_RUNGS` rungs per ladder, at most :data:`MAX_CHAIN` per chain
  (the longest chains lose their top rungs first).
* Off the evaluation grid (SPEC §7.1, :mod:`pdeagent.evaluation.grid_alignment`): no
  rung puts more than ``MAX_ALIGNED_FRACTION`` (30%) of the case's evaluation grid on
  its mesh nodes, where a solution can be far more accurate than between them (nodal
  superconvergence: P2 on 32 x 32 cells has nodes on every point of the 65 x 65 grid
  and measured a grid error 50-200x below its true error, a baseline no other mesh
  reaches). :func:`node_lattices` gives a rung's node lattices as the solver builds
  its mesh: on the structured templates (unit_square and periodic_square: Firedrake's
  UnitSquareMesh / PeriodicRectangleMesh of n x n cells over [0, 1]^2; unit_cube:
  UnitCubeMesh of n^3 cells over [0, 1]^3; ``solvers/_meshing.py`` build_domain) the
  lattice of p n intervals per axis of every scored field's degree p; the gmsh
  templates (everything else) have none. Where the geometric sequence of a chain
  gives an aligned rung, that rung moves to the next larger resolution that is not
  aligned (n + 1, n + 2, ...; its time step and step count follow the moved
  resolution), and the sequence goes on from its unmoved value, so the chain stays
  strictly increasing and the rungs after it stay where they were (unless the moved
  one reaches the next: then that one moves up too). This happens in one place,
  :func:`_chain`. With the dataset's grids (65^2 points over [0, 1]^2,
  25^3 over [0, 1]^3) a rung is aligned when p n is a multiple of 64 (2-D) or 24
  (3-D) for a scored degree p (half of each axis on nodes, 26% of a 2-D grid, is
  allowed).

Per family
----------
poisson
    degree 1-4 x ``resolution`` (the solver reads ``resolution`` in 3-D too); 3-D adds
    CG + GAMG chains for degrees 2-4 (``solver_parameters``).
helmholtz
    degree 1-4 x ``resolution``. Every chain starts at or above the wavelength rule of
    the solver with 8 points per wavelength (``k_max`` over the bounding box; the
    pollution factor ``n_waves**(1/(2p))``), so high wavenumbers start finer; the
    rungs set ``points_per_wavelength`` to 4, below what the ladder's resolutions
    satisfy, so the solver never silently refines a rung. Direct solves only
    (indefinite).
biharmonic
    the method the solver's ``auto`` would take, set explicitly: ``mixed`` (Navier
    conditions: two Poisson solves) with degree 1-4 x ``resolution``, or ``cip``
    (clamped parts) with ``degree_cip`` 2-4 x ``resolution_cip`` (penalty 4). CIP
    matrices have condition numbers ~ h^-4 and lose accuracy to round-off at fine
    meshes, so CIP chains stop at 1e5 unknowns. 3-D: ``resolution_3d``, mixed degrees
    1-3 (+ CG + GAMG chains for degrees 2-3), CIP degrees 2-3.
linear_elasticity
    degree 1-4 (3-D: 1-3) x ``resolution`` / ``resolution_3d``, formulation ``auto``
    with the mixed (Taylor-Hood) form from nu >= 0.49 in plane strain / 3-D: there
    P1 (locking, and no Taylor-Hood pair) is left out. The 3-D displacement form adds
    CG + GAMG chains for degrees 2-3 (``solver_parameters_3d``; the solver attaches
    the rigid-body modes as near-null space).
heat
    degree 1-4 (3-D: 1-3) x ``resolution`` / ``resolution_3d`` x coupled BDF2 step;
    the first BDF2 step by 8 backward-Euler substeps (``startup_substeps``: damps
    incompatible initial data at an O(dt^2/8) error). Direct solves (one
    factorisation serves every step).
convection_diffusion
    degree 1-4 (3-D transient: 1-3) x resolution (x coupled BDF2 step when
    transient); SUPG where the cell Peclet number exceeds 1 (``stabilization="auto"``).
    The start moves up with the boundary-layer width delta = min eps / max |beta|: the
    first rung has at least (L / (4 delta))^d unknowns, capped at 8x the usual start
    (4x for transient cases, whose fine rungs also take many steps) so a cheap rung
    remains for the thinnest layers.
reaction_diffusion
    degree 1-4 (3-D transient: 1-3) x resolution (x coupled BDF2 step when
    transient); Newton to a relative residual of 1e-12 (absolute 1e-14, at most 50
    iterations), far below any discretisation error in the budget (measured: the
    nonlinear transient rungs converge, their error falls 5x per P3 rung).
stokes
    pressure degree k = 1-3 (Taylor-Hood P(k+1)-P(k); 3-D: k = 1-2) x ``resolution`` /
    ``resolution_3d``; direct solves.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from pdeagent.evaluation.grid_alignment import Lattice, first_off_grid
from pdeagent_firedrake.bundle import FAMILIES, module_settings

Rung = dict[str, Any]
Chain = list[Rung]

MAX_RUNGS = 40
MAX_CHAIN = 10
RATIO = {2: 1.5, 3: 1.4}  # resolution factor between rungs
MIN_RESOLUTION = {2: 4, 3: 2}
DOFS_START = {2: 200.0, 3: 100.0}  # unknowns of a chain's first rung (at least)
DOFS_TOP = {2: 3.0e5, 3: 4.0e4}  # a (direct) chain's last rung has at most this many unknowns
WORK_TOP = {2: 3.0e7, 3: 1.0e7}  # transient: unknowns x steps of the last rung
CIP_DOFS_TOP = 1.0e5  # biharmonic CIP: round-off ~ h^-4 beyond
LAYER_START_CAP = {2: 8.0, 3: 8.0}  # convection-diffusion: start at most this x higher
TRANSIENT_LAYER_START_CAP = 4.0  # the same for transient cases (the steps grow too)
ITERATIVE_DOFS = (5.0e3, 8.0e5)  # 3-D CG + GAMG chains: first / last rung's unknowns
TIME_SCALE = 2.0  # dt = TIME_SCALE * (1/resolution)**((p+1)/2)
MIN_STEPS = 4
HELMHOLTZ_PPW_START = 8.0  # points per wavelength of a Helmholtz chain's first rung
HELMHOLTZ_PPW_RUNG = 4.0  # the rungs' own (never binding) points_per_wavelength
NEWTON = {"newton_rtol": 1e-12, "newton_atol": 1e-14, "newton_max_it": 50}
GAMG: dict[str, Any] = {
    "ksp_type": "cg",
    "ksp_rtol": 1e-12,
    "ksp_atol": 1e-14,
    "ksp_max_it": 5000,
    "pc_type": "gamg",
    "pc_gamg_threshold": 0.02,
    "mg_levels_ksp_type": "chebyshev",
    "mg_levels_pc_type": "jacobi",
}

_UNIT_BOUNDS = {"unit_square": 2, "periodic_square": 2, "unit_cube": 3}
STRUCTURED_MESHES: dict[str, tuple[tuple[float, float], ...]] = {
    "unit_square": ((0.0, 1.0), (0.0, 1.0)),
    "periodic_square": ((0.0, 1.0), (0.0, 1.0)),
    "unit_cube": ((0.0, 1.0), (0.0, 1.0), (0.0, 1.0)),
}
"""The templates ``solvers/_meshing.py`` (build_domain) meshes with Firedrake's
structured built-in meshes of ``resolution`` cells per axis, and their extent: fixed by
the constructors (UnitSquareMesh(n, n); PeriodicRectangleMesh(n, n, 1.0, 1.0) with
the case's periodic directions, UnitSquareMesh(n, n) without; UnitCubeMesh(n, n, n)),
whatever the case's ``domain.bounds`` say. Every other template is meshed by gmsh
(unstructured)."""
MAX_MOVE = 1000  # a resolution moves off the grid by at most this many cells


# ---------------------------------------------------------------------------- case facts


class _Case:
    """The facts of a case_spec a ladder depends on."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.pde: dict[str, Any] = spec["pde"]
        self.params: dict[str, Any] = self.pde.get("params") or {}
        self.bc: dict[str, Any] = spec.get("bc") or {}
        domain = spec["domain"]
        bounds = domain.get("bounds")
        if not bounds:
            bounds = [[0.0, 1.0]] * _UNIT_BOUNDS.get(domain.get("type"), 2)
        self.bounds = [(float(lo), float(hi)) for lo, hi in bounds]
        self.dim = 3 if domain.get("type") == "unit_cube" or len(self.bounds) == 3 else 2
        self.length = max(hi - lo for lo, hi in self.bounds)
        time = self.pde.get("time")
        self.interval = (float(time["t0"]), float(time["t_end"])) if time else None

    @property
    def resolution_key(self) -> str:
        return "resolution_3d" if self.dim == 3 else "resolution"

    def sample(self, value: Any) -> np.ndarray | None:
        """Values of a number or expression of x, y(, z), t on a grid over the bounding
        box (and the time interval); None when it cannot be evaluated here."""
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return np.array([float(value)])
        if not isinstance(value, str):
            return None
        per_axis = 21 if self.dim == 2 else 9
        axes = [np.linspace(lo, hi, per_axis) for lo, hi in self.bounds]
        grid = [g.ravel() for g in np.meshgrid(*axes, indexing="ij")]
        times = [0.0] if self.interval is None else list(np.linspace(*self.interval, 3))
        z = grid[2] if self.dim == 3 else np.zeros_like(grid[0])
        out = []
        for t in times:
            names = {**_numpy_names(self.params), "x": grid[0], "y": grid[1], "z": z, "t": t}
            try:
                raw = eval(value, {"__builtins__": {}}, names)
                values = np.broadcast_to(np.asarray(raw, dtype=float), grid[0].shape)
            except Exception:
                return None
            out.append(values)
        result = np.concatenate(out)
        return result if np.all(np.isfinite(result)) else None


def _numpy_names(params: dict[str, Any]) -> dict[str, Any]:
    names: dict[str, Any] = {
        "sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "log": np.log,
        "sqrt": np.sqrt, "abs": np.abs, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
        "atan": np.arctan, "atan2": np.arctan2, "asin": np.arcsin, "acos": np.arccos,
        "sign": np.sign, "Min": np.minimum, "Max": np.maximum,
        "Heaviside": lambda a: np.where(np.asarray(a) >= 0, 1.0, 0.0),
        "pi": math.pi, "E": math.e,
    }  # fmt: skip
    for key, value in params.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            names[key] = float(value)
    return names


# ------------------------------------------------------------------------------- chains


def _unknowns(fields: Sequence[tuple[int, int]], n: int, dim: int) -> float:
    """Estimated unknowns of Lagrange fields ``(degree, components)`` on a mesh of ``n``
    cells across the bounding box."""
    return float(sum(comps * (degree * n + 1) ** dim for degree, comps in fields))


def _steps(case: _Case, degree: int, n: int) -> int:
    """Time steps of the coupled BDF2 rule (module docstring)."""
    assert case.interval is not None
    t0, t_end = case.interval
    dt = TIME_SCALE * (1.0 / n) ** ((degree + 1) / 2.0)
    return max(MIN_STEPS, math.ceil((t_end - t0) / dt - 1e-9))


def _chain(
    case: _Case,
    make: Callable[[int], Rung],
    fields: Sequence[tuple[int, int]],
    *,
    degree: int,
    start: float | None = None,
    top: float | None = None,
    n_min: int | None = None,
    transient: bool = False,
) -> Chain:
    """Rungs ``make(n)`` for resolutions n growing geometrically from the first with at
    least ``start`` unknowns (and at least ``n_min``) while the unknowns stay <= ``top``
    (and, transient, unknowns x steps <= WORK_TOP); the first rung always."""
    dim = case.dim
    start = DOFS_START[dim] if start is None else start
    top = DOFS_TOP[dim] if top is None else top
    n = max(MIN_RESOLUTION[dim], n_min or 0)
    while _unknowns(fields, n, dim) < start:
        n += 1
    chain: Chain = []
    x = float(n)
    n = _off_grid(case, make, n)
    while len(chain) < MAX_CHAIN:
        dofs = _unknowns(fields, n, dim)
        work = dofs * _steps(case, degree, n) if transient else dofs
        if chain and (dofs > top or (transient and work > WORK_TOP[dim])):
            break
        chain.append(copy.deepcopy(make(n)))  # rungs share no mutable values
        x *= RATIO[dim]
        n = _off_grid(case, make, max(n + 1, int(x + 0.5)))
    return chain


def _off_grid(case: _Case, make: Callable[[int], Rung], n: int) -> int:
    """The smallest resolution >= ``n`` whose rung ``make(n)`` is not grid-aligned
    (module docstring, "Off the evaluation grid")."""
    return first_off_grid(
        case.spec["eval_grid"], n, lambda r: _node_lattices(case.spec, make(r)), limit=MAX_MOVE
    )


# -------------------------------------------------------------------- node lattices


def node_lattices(case_view: dict, rung: dict) -> list[list[tuple[float, float, int]]] | None:
    """Where the nodes of the rung's scored fields lie: one lattice set (one
    :data:`~pdeagent.evaluation.grid_alignment.Lattice` per axis) per distinct node
    layout of the fields the case scores, or None on a gmsh (unstructured) mesh.

    As the family solver builds it from ``rung`` over its DEFAULTS: the mesh of
    :data:`STRUCTURED_MESHES` with the resolution key the solver reads there, and the
    Lagrange degree p of every scored field, giving ``(lo, hi, p * n)`` per axis: the
    equispaced node positions. Firedrake's "CG" takes the variant "spectral" (FInAT's
    GaussLobattoLegendre): for p <= 2 exactly those positions, for p >= 3 of them only
    the vertices, edge midpoints (even p) and face / cell centroids (P3 triangles and
    faces, P4 tetrahedra), its other nodes at irrational positions no grid point hits;
    so the lattice over-approximates (conservative). Scored: u (poisson, helmholtz,
    heat, convection-diffusion, reaction-diffusion; biharmonic: u of the method's
    degree, not the auxiliary w of the mixed method, which has the same layout), the
    displacement (linear elasticity: P_degree; the mixed form's pressure is not
    output), the velocity P(k+1) and, when the case's output asks for it, the pressure
    P(k) (stokes, Taylor-Hood).
    """
    return _node_lattices(case_view["case_spec"], rung)


@cache
def _defaults(family: str) -> dict[str, Any]:
    settings = module_settings(family, "DEFAULTS")
    if settings is None:
        raise ValueError(f"the {family} solver has no DEFAULTS")
    return settings


def _clamped(bc: dict[str, Any]) -> bool:
    """Whether a biharmonic case states a normal-derivative (clamped) condition."""
    return any(
        (entry.get("quantity") or "u") == "normal_derivative"
        for kind in ("dirichlet", "neumann")
        for entry in bc.get(kind) or []
    )


def _node_lattices(spec: dict[str, Any], rung: Rung) -> list[list[Lattice]] | None:
    extent = STRUCTURED_MESHES.get(spec["domain"].get("type"))
    if extent is None:
        return None
    n, degrees = _scored_layout(spec, {**_defaults(spec["pde"]["type"]), **rung})
    return [[(lo, hi, p * n) for lo, hi in extent] for p in sorted(set(degrees), reverse=True)]


def _scored_layout(spec: dict[str, Any], cfg: dict[str, Any]) -> tuple[int, list[int]]:
    """(cells per axis, Lagrange degrees of the scored fields) of a solve of ``spec`` with
    the merged settings ``cfg`` on a structured template, read as the solvers read them
    (``solvers/<family>.py`` and the shared ``_ufl_families`` / ``_ufl_forms``)."""
    family = spec["pde"]["type"]
    domain = spec["domain"]
    cube = domain.get("type") == "unit_cube"
    three_d = cube or len(domain.get("bounds") or []) == 3  # _scalar/_flow_resolution
    if family == "poisson":  # solvers/poisson.py: "resolution" in 3-D too
        return int(cfg["resolution"]), [int(cfg["degree"])]
    if family == "helmholtz":  # _ufl_forms._helmholtz_resolution: the wavelength rule
        degree = int(cfg["degree"])
        case = _Case(spec)  # k_max sampled as the ladder does (exact for a constant k)
        k = case.sample(case.params.get("k", 0.0))
        k_max = float(np.max(np.abs(k))) if k is not None else 0.0
        ppw = float(cfg["points_per_wavelength"])
        needed = _helmholtz_resolution(k_max, case.length, degree, ppw)
        return max(int(cfg["resolution"]), needed), [degree]
    if family == "biharmonic":  # _ufl_forms._bh_method
        method = cfg["method"]
        if method == "auto":
            method = "cip" if _clamped(spec.get("bc") or {}) else "mixed"
        suffix = "_cip" if method == "cip" else ""
        n = cfg["resolution_3d"] if cube else cfg["resolution" + suffix]
        return int(n), [int(cfg["degree" + suffix])]
    if family in ("linear_elasticity", "heat"):  # _el_begin / _heat_begin: unit_cube
        n = cfg["resolution_3d"] if cube else cfg["resolution"]
        return int(n), [int(cfg["degree"])]
    if family in ("convection_diffusion", "reaction_diffusion"):  # _scalar_resolution
        n = cfg["resolution_3d"] if three_d else cfg["resolution"]
        return int(n), [int(cfg["degree"])]
    if family == "stokes":  # _flow_resolution; Taylor-Hood P(k+1) velocity, P(k) pressure
        n = cfg["resolution_3d"] if three_d else cfg["resolution"]
        k = int(cfg["degree"])
        pressure = bool((spec.get("output") or {}).get("pressure"))
        return int(n), [k + 1, k] if pressure else [k + 1]
    raise ValueError(f"no node layout known for family {family!r}")


def _time_keys(case: _Case, degree: int, n: int) -> Rung:
    assert case.interval is not None
    steps = _steps(case, degree, n)
    return {"dt": (case.interval[1] - case.interval[0]) / steps, "n_steps": steps}


# ----------------------------------------------------------------------------- families


def _scalar_degrees(case: _Case) -> tuple[int, ...]:
    """P1-P4; a 3-D transient case P1-P3 (its steps grow like h^-(p+1)/2 on top of
    the (p n)^3 unknowns: a P4 chain would have hardly a rung in the budget)."""
    return (1, 2, 3) if case.dim == 3 and case.interval is not None else (1, 2, 3, 4)


def _poisson(case: _Case) -> list[Chain]:
    def rung(p: int, solver: dict[str, Any] | None) -> Callable[[int], Rung]:
        return lambda n: {"resolution": n, "degree": p, "solver_parameters": solver}

    chains = [_chain(case, rung(p, None), [(p, 1)], degree=p) for p in (1, 2, 3, 4)]
    if case.dim == 3:
        for p in (2, 3, 4):
            chains.append(_iterative_chain(case, rung(p, dict(GAMG)), [(p, 1)], p))
    return chains


def _iterative_chain(
    case: _Case, make: Callable[[int], Rung], fields: list[tuple[int, int]], degree: int
) -> Chain:
    lo, hi = ITERATIVE_DOFS
    return _chain(case, make, fields, degree=degree, start=lo, top=hi)


def _helmholtz_resolution(k_max: float, length: float, degree: int, ppw: float) -> int:
    """The Helmholtz solver's wavelength rule (``solvers/helmholtz.py``): cells across
    ``length`` for ``ppw`` points per wavelength with the pollution factor."""
    n_waves = k_max * length / (2.0 * math.pi)
    if n_waves <= 0.0:
        return 1
    points = ppw * max(1.0, n_waves) ** (1.0 / (2.0 * degree))
    return max(1, math.ceil(points * n_waves / degree))


def _helmholtz(case: _Case) -> list[Chain]:
    k = case.sample(case.params.get("k", 0.0))
    k_max = float(np.max(np.abs(k))) if k is not None else 0.0
    chains = []
    for p in (1, 2, 3, 4):
        n_min = _helmholtz_resolution(k_max, case.length, p, HELMHOLTZ_PPW_START)

        def rung(n: int, p: int = p) -> Rung:
            return {
                "resolution": n,
                "degree": p,
                "points_per_wavelength": HELMHOLTZ_PPW_RUNG,
                "solver_parameters": None,
            }

        chains.append(_chain(case, rung, [(p, 1)], degree=p, n_min=n_min))
    return chains


def _biharmonic(case: _Case) -> list[Chain]:
    clamped = _clamped(case.bc)
    three_d = case.dim == 3
    chains = []
    if clamped:  # C0 interior penalty
        res_key = "resolution_3d" if three_d else "resolution_cip"
        for p in (2, 3) if three_d else (2, 3, 4):

            def cip(n: int, p: int = p) -> Rung:
                return {"method": "cip", res_key: n, "degree_cip": p, "penalty": 4.0,
                        "solver_parameters": None}  # fmt: skip

            top = min(CIP_DOFS_TOP, DOFS_TOP[case.dim])
            chains.append(_chain(case, cip, [(p, 1)], degree=p, top=top))
        return chains
    res_key = case.resolution_key

    def mixed(p: int, solver: dict[str, Any] | None) -> Callable[[int], Rung]:
        return lambda n: {"method": "mixed", res_key: n, "degree": p, "solver_parameters": solver}

    for p in (1, 2, 3) if three_d else (1, 2, 3, 4):
        chains.append(_chain(case, mixed(p, None), [(p, 2)], degree=p))
    if three_d:
        for p in (2, 3):
            chains.append(_iterative_chain(case, mixed(p, dict(GAMG)), [(p, 2)], p))
    return chains


def _poisson_ratio_max(case: _Case) -> float | None:
    """Largest Poisson's ratio of the case's (3-D) law, None when not known here."""
    params = case.params
    if "E" in params and "nu" in params:
        nu = case.sample(params["nu"])
    elif "young_modulus" in params and "poisson_ratio" in params:
        nu = case.sample(params["poisson_ratio"])
    elif "lambda" in params and "mu" in params:
        lam, mu = case.sample(params["lambda"]), case.sample(params["mu"])
        if lam is None or mu is None:
            return None
        nu = lam / (2.0 * (lam + mu))
    else:
        return None
    return None if nu is None else float(np.max(nu))


def _linear_elasticity(case: _Case) -> list[Chain]:
    dim, three_d = case.dim, case.dim == 3
    nu_max = _poisson_ratio_max(case)
    threshold = 0.49
    plane_stress = case.params.get("model") == "plane_stress"
    mixed = not plane_stress and (nu_max is None or nu_max >= threshold)

    def rung(p: int, solver_3d: dict[str, Any] | None) -> Callable[[int], Rung]:
        return lambda n: {
            case.resolution_key: n,
            "degree": p,
            "formulation": "auto",
            "mixed_nu_threshold": threshold,
            "solver_parameters": None,
            "solver_parameters_3d": solver_3d,
            "solver_parameters_mixed": None,
            "solver_parameters_mixed_3d": None,
        }

    degrees = (1, 2, 3) if three_d else (1, 2, 3, 4)
    if mixed:  # Taylor-Hood P_k / P_(k-1), k >= 2
        degrees = tuple(p for p in degrees if p >= 2)
    chains = []
    for p in degrees:
        fields = [(p, dim), (p - 1, 1)] if mixed else [(p, dim)]
        chains.append(_chain(case, rung(p, None), fields, degree=p))
    if three_d and not mixed:
        for p in (2, 3):
            chains.append(_iterative_chain(case, rung(p, dict(GAMG)), [(p, dim)], p))
    return chains


def _heat(case: _Case) -> list[Chain]:
    if case.interval is None:
        raise ValueError("heat: the case has no pde.time (the heat equation is transient)")
    chains = []
    for p in _scalar_degrees(case):

        def rung(n: int, p: int = p) -> Rung:
            return {
                case.resolution_key: n,
                "degree": p,
                "scheme": "bdf2",
                "bdf2_startup": "backward_euler",
                "startup_substeps": 8,
                **_time_keys(case, p, n),
                "quadrature_degree": None,
                "solver_parameters": None,
            }

        chains.append(_chain(case, rung, [(p, 1)], degree=p, transient=True))
    return chains


def _layer_start(case: _Case) -> float:
    """Unknowns of a convection-diffusion chain's first rung: enough to come near the
    boundary-layer width eps / |beta| (module docstring), within a cap."""
    eps = case.sample(case.params.get("epsilon"))
    beta = case.params.get("beta")
    if eps is None or not isinstance(beta, list | tuple) or not beta:
        return DOFS_START[case.dim]
    components = [case.sample(b) for b in beta]
    if any(c is None for c in components):
        return DOFS_START[case.dim]
    speed = math.sqrt(sum(float(np.max(np.abs(c))) ** 2 for c in components if c is not None))
    eps_min = float(np.min(eps))
    if speed <= 0.0 or eps_min <= 0.0:
        return DOFS_START[case.dim]
    cells = case.length * speed / eps_min / 4.0  # h = 4 delta
    base = DOFS_START[case.dim]
    cap = LAYER_START_CAP[case.dim] if case.interval is None else TRANSIENT_LAYER_START_CAP
    return min(cap * base, max(base, cells**case.dim))


def _scalar_chains(case: _Case, fixed: Rung, start: float | None = None) -> list[Chain]:
    """Convection-diffusion / reaction-diffusion: steady, or transient with BDF2."""
    transient = case.interval is not None
    chains = []
    for p in _scalar_degrees(case):

        def rung(n: int, p: int = p) -> Rung:
            out: Rung = {case.resolution_key: n, "degree": p, **fixed}
            if transient:
                out.update({"scheme": "bdf2", **_time_keys(case, p, n)})
            return out

        chains.append(_chain(case, rung, [(p, 1)], degree=p, start=start,
                             transient=transient))  # fmt: skip
    return chains


def _convection_diffusion(case: _Case) -> list[Chain]:
    fixed = {"stabilization": "auto", "quadrature_degree": None, "solver_parameters": None}
    return _scalar_chains(case, fixed, start=_layer_start(case))


def _reaction_diffusion(case: _Case) -> list[Chain]:
    fixed = {**NEWTON, "quadrature_degree": None, "solver_parameters": None}
    return _scalar_chains(case, fixed)


def _stokes(case: _Case) -> list[Chain]:
    chains = []
    for k in (1, 2) if case.dim == 3 else (1, 2, 3):

        def rung(n: int, k: int = k) -> Rung:
            return {case.resolution_key: n, "degree": k, "solver_parameters": None}

        chains.append(_chain(case, rung, [(k + 1, case.dim), (k, 1)], degree=k + 1))
    return chains


_BUILDERS: dict[str, Callable[[_Case], list[Chain]]] = {
    "poisson": _poisson,
    "helmholtz": _helmholtz,
    "biharmonic": _biharmonic,
    "linear_elasticity": _linear_elasticity,
    "heat": _heat,
    "convection_diffusion": _convection_diffusion,
    "reaction_diffusion": _reaction_diffusion,
    "stokes": _stokes,
}
assert set(_BUILDERS) == set(FAMILIES), "a ladder for every family the track bundles"


def _trim(chains: list[Chain], limit: int) -> list[Chain]:
    """Drop the top rung of the longest chain (the first of equals) until ``limit``
    rungs remain."""
    chains = [list(c) for c in chains if c]
    while sum(len(c) for c in chains) > limit:
        longest = max(range(len(chains)), key=lambda i: (len(chains[i]), -i))
        chains[longest].pop()
    return [c for c in chains if c]


def ladder(case_view: dict) -> list[list[dict]]:
    """Chains of calibration settings for this case (family from
    case_view["case_spec"]["pde"]["type"])."""
    spec = case_view["case_spec"]
    family = spec["pde"]["type"]
    builder = _BUILDERS.get(family)
    if builder is None:
        raise ValueError(
            f"no calibration ladder for family {family!r}; known: {', '.join(FAMILIES)}"
        )
    return _trim(builder(_Case(spec)), MAX_RUNGS)
