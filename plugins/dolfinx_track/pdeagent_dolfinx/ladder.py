"""Calibration ladders of the DOLFINx track: the configurations the frontier calibration
(SPEC 7.1, :mod:`pdeagent.evaluation.frontier`) measures for one case.

:func:`ladder` returns a list of *chains*; each chain is a list of settings dicts for the
family's calibration solver (``solvers/<family>.py``, the dicts ``bundle(family, rung)``
fixes as ``SETTINGS``) in order of increasing cost. The search walks each chain rung by
rung and stops it at the first rung that failed, went over the solve budget (2 s in 2-D,
8 s in 3-D) or reached the target error 1e-7, so every chain starts cheap (a few hundred
to a few thousand unknowns, a handful of time steps: within budget even for 3-D,
high-wavenumber or long transient cases) and ends well beyond what the budget allows.
Nothing here imports DOLFINx (the harness calls it); it is deterministic.

Common rules
------------
* One chain per element degree p (and, in 3-D, per linear solver). Along a chain only
  the mesh is refined (and with it the time step): the resolution (cells across the
  longest side of the bounding box; cells per side on the unit cube) grows geometrically
  by sqrt(2) per rung, so the cost roughly doubles (2-D) or triples (3-D) and the error
  of a smooth solution falls by 2^((p+1)/2) per rung. The chains span the same range of
  p * resolution (unknowns per direction) whatever p: in 2-D from 24, below every
  family's DEFAULTS, to 724 (P1: 24 -> 543 cells, P2: 12 -> 272, P4: 6 -> 136; ~300k
  unknowns on the unit square, beyond the 2 s budget), to 362 for time-dependent cases
  (their step counts grow along the chain too); in 3-D from 8 to 64 with a direct solver
  (P2: 4 -> 32 cells per side) and from 16 to 96 with an iterative one. Meshes that gmsh
  builds (every 2-D template but the unit and periodic squares) start at 12 cells
  across: gmsh gives the same mesh for coarser requests.
* No rung has its mesh nodes on the evaluation grid (SPEC §7.1,
  :mod:`pdeagent.evaluation.grid_alignment`): a finite-element solution is far more
  accurate at its nodes than between them, so a rung whose nodes cover the grid
  measures a grid error far below its true error (P2 on 32 x 32 cells of the unit
  square: every point of the 65 x 65 grid is a node, error 50-200x too small) and would
  set a tau_acc no solver on another mesh can reach. :func:`node_lattices` gives the
  node lattice of a rung on the structured templates (unit_square, periodic_square:
  ``create_unit_square`` on [0, 1]^2; unit_cube: ``create_unit_cube`` on [0, 1]^3, n
  cells per side whatever the case's bounds; one lattice ``(0, 1, q n)`` per axis and
  per distinct degree q of the scored fields' spaces, e.g. Taylor-Hood velocity k + 1
  and, when the case scores the pressure, k); gmsh meshes have none. Where the
  geometric sequence gives a resolution whose rung is grid-aligned
  (:func:`~pdeagent.evaluation.grid_alignment.is_grid_aligned`: more than 30 % of the
  grid's points on nodes of one lattice), the rung moves to the next larger resolution
  that is not (and a later rung that would then not be larger moves past it), in one
  place, :func:`_chains`, so the rung's time step follows the moved resolution. On the
  dataset's 65-point squares that moves every rung with 64 | q n (P1 192, 384; P2 96,
  192; P3 64, 128; P4 48, 96; Taylor-Hood k = 2 with a scored P2 pressure 32, 64, 128)
  and on its 25-point cube every rung with 24 | q n (P3 8), each by one cell.
* Degrees 1-4 in 2-D, 1-3 in 3-D (P4 tetrahedra cost much more per unknown; their
  chains would hit the budget within a rung or two). Every rung of a ladder has the same
  keys: the degree, the resolution key the case uses (``resolution`` or
  ``resolution_3d``) and every knob the ladder sets anywhere, so no rung silently
  depends on a DEFAULTS value the ladder varies elsewhere.
* 3-D linear solves: MUMPS factorisations grow like N^2 in 3-D and dominate the budget
  from a few 10k unknowns on (measured: Poisson P2, 118k unknowns, MUMPS 12 s, CG + GAMG
  5 s), so where the solver takes PETSc options and the operator suits algebraic
  multigrid each degree gets a second chain with CG + GAMG (symmetric positive definite
  operators) or GMRES + GAMG (convection-diffusion, reaction Jacobians), relative
  tolerance 1e-12, starting at twice the direct chain's first resolution and reaching
  1.5 times further. Indefinite or saddle-point systems (Helmholtz, Stokes,
  Navier-Stokes, mixed elasticity, C0-IP biharmonic) and Burgers stay direct, and so
  does 2-D (sparse LU of 2-D systems that fit in 2 s is cheap).
* Time-dependent cases use a second-order scheme (BDF2; Newmark average acceleration for
  the wave equation) with the time step refined together with the mesh: with h = 1 /
  resolution,

      dt = DT_ANCHOR * (h / h_anchor(p)) ** ((p + 1) / 2),   n_steps = ceil(T / dt)

  (at least 4 steps), T = t_end - t0. The spatial L2 error ~ h^(p+1) and the temporal
  error ~ dt^2 then keep a fixed ratio along the chain, so neither plateaus the other.
  The anchor is the mesh where a smooth dataset-like solution reaches ~1e-7 in space
  (h_anchor = 1 / {1024, 160, 64, 32} for p = 1..4); there dt = 1e-3, where BDF2's error
  on such a solution (time scale ~ 1) is ~1e-7 too. Rungs give ``n_steps`` and the
  matching ``dt``. (Measured on a heat case with a steep Gaussian: P3 and P4 chains fall
  by 4-7x per rung down to 6e-8 without a plateau.)
* Newton tolerances (reaction-diffusion, Navier-Stokes, Burgers) are the REFERENCE
  solvers' (relative 1e-11..1e-12, absolute 1e-13..1e-14): they never limit a 1e-7
  error, and Newton converges quadratically so they cost at most one more iteration.
* What of the case is used: the dimension and domain template (spans, gmsh floor, 3-D
  solver chains), the time interval (step counts), the wavenumber (Helmholtz start),
  Poisson's ratio and the model (elasticity formulation), the boundary conditions
  (biharmonic method) and whether the case is transient (Navier-Stokes chains).

Per family
----------
poisson
    degree 1-4, ``resolution`` (also the unit cube's cells per side), ``petsc_options``
    (3-D: a CG + GAMG chain per degree besides the MUMPS one).
helmholtz
    degree 1-4, ``resolution``; ``points_per_wavelength`` is 0 so the solver's own
    wavelength rule never overrides the ladder's mesh. Instead the chain *starts* at the
    mesh the solver's rule gives for 8 points per wavelength (with its pollution factor
    n_waves^(1/(2p))): for a high wavenumber k (k_max over the box, also for an
    expression) coarser meshes are pre-asymptotic (errors ~ 100%) and only waste trials.
    The chain then still spans at least 6 rungs (up to twice the usual top). Direct
    solves only (indefinite).
biharmonic
    the method follows the boundary conditions as the solver's ``auto`` does (stated
    explicitly in every rung): ``mixed`` (Navier conditions only: two Poisson solves,
    degree 1-4, ``resolution``) or ``cip`` (a clamped part: C0 interior penalty,
    ``degree_cip`` 2-4, ``resolution_cip``; its round-off grows like h^-4, so its chains
    may stall before 1e-7 and the most accurate rung within budget wins); 3-D uses
    ``resolution_3d``; mixed 3-D also gets CG + GAMG chains.
linear_elasticity
    ``formulation`` stated from Poisson's ratio (nu_max >= 0.49 outside plane stress:
    Taylor-Hood displacement-pressure, displacement degree 2-4 in 2-D, 2-3 in 3-D;
    otherwise the displacement form, degree 1-4 / 1-3); ``resolution`` or
    ``resolution_3d``; 3-D displacement form: a CG + GAMG chain (rigid-body near-null
    space, the REFERENCE options) per degree in ``petsc_options_3d``. Unknown nu
    (unparseable expressions): ``auto`` with degrees >= 2.
heat
    degree 1-4 (3-D 1-3), resolution, BDF2 (backward-Euler substep start-up) with the
    coupled dt above; 3-D: CG + GAMG chains besides MUMPS (the matrix M + dt K is
    factorised or set up once either way, unless kappa depends on t).
convection_diffusion
    degree 1-4 (3-D 1-3), resolution; transient: BDF2 and the coupled dt. SUPG stays
    ``auto`` (on where the cell Peclet number exceeds 1, so it switches off along a
    chain once the mesh resolves the flow). The Peclet number does not change the ladder:
    an unresolved layer only makes the coarse rungs inaccurate (they are cheap), and the
    chains' tops already lie beyond the budget for any layer width. 3-D: GMRES + GAMG
    chains.
reaction_diffusion
    degree 1-4 (3-D 1-3), resolution, tight Newton tolerances; transient: BDF2 and the
    coupled dt; 3-D: GMRES + GAMG for the Newton steps (the Allen-Cahn and logistic
    Jacobians need not be definite).
stokes, navier_stokes
    Taylor-Hood P(k+1)-P(k), k = ``degree`` 1-3 (3-D 1-2): the chain spans p * resolution
    with the velocity degree p = k + 1; ``resolution`` or ``resolution_3d``; MUMPS.
    Navier-Stokes adds tight Newton tolerances and, when transient, BDF2 with the coupled
    dt (``dt`` and ``min_steps``, with p = k + 1) and two kinds of chains: fully implicit
    convection (Newton every step, robust) for k = 1-3, and extrapolated convection (one
    linear Oseen solve per step, also second order; measured 2.5-3x cheaper per rung at a
    slightly larger error) for k = 1, 2.
burgers
    degree 1-4 (unit cube: 1-3, ``resolution`` is used there too), BDF2 with the coupled
    dt, tight Newton tolerances, SUPG ``auto``.
wave
    degree 1-4 (3-D 1-3), resolution, Newmark average acceleration (second order, the
    only scheme) with the coupled dt, ``richardson`` off (the coupled dt already keeps
    the second-order time error at the level of the spatial one); 3-D: CG + GAMG chains.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

from pdeagent.evaluation.grid_alignment import Lattice, first_off_grid
from pdeagent_dolfinx.bundle import module_settings

FACTOR = math.sqrt(2.0)
"""Resolution ratio of successive rungs of a chain."""

SPAN_2D = (24.0, 724.0)
"""Range of degree * resolution of a 2-D chain."""

SPAN_2D_TRANSIENT = (24.0, 362.0)
"""The same for time-dependent 2-D cases: their cost grows faster along a chain (the
time steps grow too), so the budget stops them earlier."""

SPAN_3D_DIRECT = (8.0, 64.0)
"""Range of degree * resolution of a 3-D chain with a direct solver."""

SPAN_3D_ITERATIVE = (16.0, 96.0)
"""Range of degree * resolution of a 3-D chain with an iterative solver."""

GMSH_MIN_RESOLUTION = 12
"""gmsh meshes the templates with a floor of cells; coarser requests give the same mesh."""

STRUCTURED = ("unit_square", "periodic_square", "unit_cube")
"""Templates meshed by DOLFINx's structured generators (any resolution >= 1 differs)."""

STRUCTURED_DIMENSION = {"unit_square": 2, "periodic_square": 2, "unit_cube": 3}
"""Axes of the structured meshes: ``solvers/_meshing.py`` ``build_domain`` makes
``create_unit_square(n, n)`` (triangles) for both squares and ``create_unit_cube(n, n,
n)`` (tetrahedra) for the cube, with n the rung's resolution, always on [0, 1] per axis
(the case's bounds are not read for them)."""

MAX_DEALIGN_STEPS = 64
"""Safety bound of the search for a resolution off the grid (one or two steps suffice)."""

DEGREES_2D = (1, 2, 3, 4)
DEGREES_3D = (1, 2, 3)

DT_ANCHOR = 1e-3
"""Time step at the anchor mesh of each degree (see the module docstring)."""

RESOLUTION_ANCHOR = {1: 1024.0, 2: 160.0, 3: 64.0, 4: 32.0, 5: 20.0}
"""Resolution at which a smooth solution's spatial error is ~1e-7, per degree."""

MIN_STEPS = 4

EXTRAPOLATED_DEGREES = (1, 2)
"""Transient Navier-Stokes: pressure degrees that also get a chain with extrapolated
(linearised, one Oseen solve per step) convection."""

HELMHOLTZ_MIN_PPW = 8.0
"""Points per wavelength (before the pollution factor) of a Helmholtz chain's first rung."""

MIN_RUNGS = 6
"""A chain whose start was raised (Helmholtz) still spans at least this many rungs."""

CG_GAMG: dict[str, Any] = {
    "ksp_type": "cg",
    "pc_type": "gamg",
    "ksp_rtol": 1e-12,
    "ksp_max_it": 2000,
}
GMRES_GAMG: dict[str, Any] = {
    "ksp_type": "gmres",
    "ksp_gmres_restart": 150,
    "pc_type": "gamg",
    "ksp_rtol": 1e-12,
    "ksp_max_it": 2000,
}
ELASTICITY_GAMG: dict[str, Any] = dict(
    module_settings("linear_elasticity", "REFERENCE")["petsc_options_3d"]
)  # CG + GAMG with the rigid-body modes, as the solver's own high-fidelity settings

NEWTON = {
    "reaction_diffusion": {"newton_rtol": 1e-12, "newton_atol": 1e-14, "newton_max_it": 30},
    "navier_stokes": {"newton_rtol": 1e-12, "newton_atol": 1e-13, "newton_max_it": 25},
    "burgers": {"newton_rtol": 1e-11, "newton_atol": 1e-13, "newton_max_it": 25},
}

MIXED_NU_THRESHOLD = 0.49
"""linear_elasticity DEFAULTS["mixed_nu_threshold"]: the mixed form from this nu on."""

_SAMPLES = {2: 21, 3: 9}
"""Points per axis when sampling an expression coefficient over the bounding box."""


# ------------------------------------------------------------------------------ case data


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bounds(spec: dict[str, Any]) -> list[tuple[float, float]]:
    bounds = spec["domain"].get("bounds") or [[0.0, 1.0], [0.0, 1.0]]
    return [(float(lo), float(hi)) for lo, hi in bounds]


def _dimension(spec: dict[str, Any]) -> int:
    return 3 if spec["domain"].get("type") == "unit_cube" or len(_bounds(spec)) == 3 else 2


def _time_span(spec: dict[str, Any]) -> float | None:
    time = spec["pde"].get("time")
    if not time:
        return None
    span = float(time["t_end"]) - float(time["t0"])
    if not span > 0:
        raise ValueError(f"empty time interval {time!r}")
    return span


def _sample(value: Any, spec: dict[str, Any], samples: int | None = None) -> list[float] | None:
    """Values of a coefficient (number or expression) on a grid over the bounding box
    (``samples`` points per axis, default :data:`_SAMPLES`) at a few times; None when an
    expression cannot be evaluated here."""
    if _is_number(value):
        return [float(value)]
    if not isinstance(value, str):
        return None
    try:
        import numpy as np

        from pdeagent.cases.expressions import compile_expression

        bounds = _bounds(spec)
        dim = len(bounds)
        params = {
            k: float(v) for k, v in (spec["pde"].get("params") or {}).items() if _is_number(v)
        }
        fn = compile_expression(value, dim, parameters=params)
        axes = [np.linspace(lo, hi, samples or _SAMPLES.get(dim, 9)) for lo, hi in bounds]
        points = np.meshgrid(*axes, indexing="ij")
        time = spec["pde"].get("time")
        times = [0.0]
        if time:
            t0, t1 = float(time["t0"]), float(time["t_end"])
            times = [t0, 0.5 * (t0 + t1), t1]
        values = np.concatenate([np.ravel(fn(*points, t=t)) for t in times])
    except Exception:  # an unparseable coefficient: the caller falls back
        return None
    if values.size == 0 or not np.all(np.isfinite(values)):
        return None
    return [float(v) for v in values]


# ------------------------------------------------------------------------------ meshes


def _floor(spec: dict[str, Any]) -> int:
    return 1 if spec["domain"].get("type") in STRUCTURED else GMSH_MIN_RESOLUTION


def _resolutions(
    degree: int, span: tuple[float, float], floor: int, start: int | None = None
) -> list[int]:
    """Strictly increasing resolutions of one chain: from ``span[0] / degree`` (or
    ``start``) by :data:`FACTOR` up to ``span[1] / degree``; when the start was raised,
    at least :data:`MIN_RUNGS` rungs, but never beyond twice that top."""
    lo, hi = span[0] / degree, span[1] / degree
    first = max(floor, round(lo), start or 0)
    top = min(max(hi, first * FACTOR ** (MIN_RUNGS - 1)), 2.0 * hi)
    out = [first]  # a start beyond the top still gives a (one-rung) chain
    k = 1
    while (value := first * FACTOR**k) <= top * 1.01:  # 1 %: rounding of the span's ends
        if round(value) > out[-1]:
            out.append(round(value))
        k += 1
    return out


@cache
def _defaults(family: str) -> dict[str, Any]:
    return module_settings(family, "DEFAULTS") or {}


def _helmholtz_cells(spec: dict[str, Any], cfg: dict[str, Any], degree: int) -> int:
    """The Helmholtz solver's mesh (``_ufl_forms._helmholtz_resolution``): the setting
    ``resolution``, raised by the wavelength rule unless ``points_per_wavelength`` is 0
    (as on every rung of the ladder)."""
    resolution = int(cfg["resolution"])
    ppw = float(cfg["points_per_wavelength"])
    if ppw <= 0.0:
        return resolution  # the rule then asks for one cell
    bounds = _bounds(spec)
    k = (spec["pde"].get("params") or {}).get("k")
    values = _sample(k, spec, {2: 101, 3: 31}[len(bounds)])  # _HELMHOLTZ_SAMPLES
    if not values:
        raise ValueError(f"helmholtz: cannot evaluate the wavenumber {k!r}")
    n_waves = max(abs(v) for v in values) * max(hi - lo for lo, hi in bounds) / (2 * math.pi)
    if n_waves <= 0.0:
        return resolution
    needed = math.ceil(ppw * max(1.0, n_waves) ** (1.0 / (2.0 * degree)) * n_waves / degree)
    return max(resolution, needed)


def _mesh_and_degrees(
    family: str, spec: dict[str, Any], cfg: dict[str, Any]
) -> tuple[int, list[int]]:
    """(cells per side of the structured mesh, Lagrange degrees of the scored fields'
    spaces) of a solve with the settings ``cfg``, as the family's solver reads them."""
    cube = spec["domain"].get("type") == "unit_cube"
    key = "resolution_3d" if cube else "resolution"
    if family in ("poisson", "burgers"):  # poisson.py:53, burgers.py:196: no 3-D key
        return int(cfg["resolution"]), [int(cfg["degree"])]
    if family in ("heat", "wave", "convection_diffusion", "reaction_diffusion"):
        return int(cfg[key]), [int(cfg["degree"])]  # _heat_begin, wave.py:104, ...
    if family == "helmholtz":
        degree = int(cfg["degree"])
        return _helmholtz_cells(spec, cfg, degree), [degree]
    if family == "biharmonic":  # _ufl_forms._bh_method: u alone is scored
        method = cfg["method"]
        if method == "auto":
            method = "cip" if _clamped(spec) else "mixed"
        suffix = "_cip" if method == "cip" else ""
        return int(cfg[key if cube else "resolution" + suffix]), [int(cfg["degree" + suffix])]
    if family == "linear_elasticity":  # the displacement alone is scored (also mixed)
        return int(cfg[key]), [int(cfg["degree"])]
    if family in ("stokes", "navier_stokes"):  # _flow._flow_space: P(k+1)^d x P(k)
        k = int(cfg["degree"])
        scored = [k + 1] + ([k] if (spec.get("output") or {}).get("pressure") else [])
        return int(cfg[key]), scored
    raise ValueError(f"no node lattices for family {family!r}")


def _node_lattices(spec: dict[str, Any], rung: dict[str, Any]) -> list[list[Lattice]] | None:
    name = spec["domain"].get("type")
    if name not in STRUCTURED_DIMENSION:
        return None
    family = spec["pde"]["type"]
    cells, degrees = _mesh_and_degrees(family, spec, {**_defaults(family), **rung})
    axes = STRUCTURED_DIMENSION[name]
    return [[(0.0, 1.0, q * cells)] * axes for q in sorted(set(degrees), reverse=True)]


def node_lattices(case_view: dict, rung: dict) -> list[list[tuple[float, float, int]]] | None:
    """Where the nodes of the scored fields of a solve with the settings ``rung`` lie:
    one lattice set (a :data:`~pdeagent.evaluation.grid_alignment.Lattice` per axis) per
    distinct node layout, for :func:`~pdeagent.evaluation.grid_alignment.is_grid_aligned`;
    None on a gmsh (unstructured) mesh, which has no lattice.

    The structured meshes (``solvers/_meshing.py`` ``build_domain``) have n cells per
    side on [0, 1] per axis, n the resolution the family's solver reads from the settings
    (``resolution`` or, on the unit cube, ``resolution_3d`` -- Poisson and Burgers always
    ``resolution``; biharmonic ``resolution_cip`` for the CIP method in 2-D; Helmholtz
    raised by its wavelength rule unless ``points_per_wavelength`` is 0). A scored field
    of Lagrange degree q has its nodes on ``(0, 1, q n)``: the equispaced positions, a
    superset of the vertices, edge midpoints and the other rational nodes of DOLFINx's
    GLL-warped variant. Scored spaces: the solution's (biharmonic: u, not the auxiliary
    w; linear elasticity: the displacement, also in the mixed form whose pressure is not
    output); Stokes and Navier-Stokes: the velocity P(k + 1) and, when the case scores
    the pressure (``output.pressure``), P(k). Settings the rung omits are the family's
    DEFAULTS, as in the solver."""
    return _node_lattices(case_view["case_spec"], rung)


def _grid_lattices(spec: dict[str, Any], rung: dict[str, Any]) -> list[list[Lattice]] | None:
    """The rung's lattice sets over the axes of the case's evaluation grid."""
    lattices = _node_lattices(spec, rung)
    if lattices is None:
        return None
    grid = spec["eval_grid"]
    axes = 2 if grid.get("nz") is None else 3
    # A 2-D grid on the unit cube (not in the dataset) is sampled at z = 0
    # (_common.grid_points), a plane of nodes: the x and y lattices decide.
    return [per_axis[:axes] for per_axis in lattices]


def _off_grid(
    spec: dict[str, Any], resolutions: list[int], make: Callable[[int], dict[str, Any]]
) -> list[dict[str, Any]]:
    """The rungs ``make(r)`` of a chain, each moved to the next larger resolution whose
    rung is not grid-aligned (module docstring), the chain kept strictly increasing."""
    rungs: list[dict[str, Any]] = []
    last = 0
    for wanted in resolutions:
        last = first_off_grid(
            spec["eval_grid"], max(wanted, last + 1), lambda r: _grid_lattices(spec, make(r)),
            limit=MAX_DEALIGN_STEPS,
        )  # fmt: skip
        rungs.append(make(last))
    return rungs


def _steps(span: float, degree: int, resolution: int) -> int:
    """Time steps of a rung: dt coupled to h = 1 / resolution (module docstring)."""
    anchor = RESOLUTION_ANCHOR[min(max(degree, 1), 5)]
    dt = DT_ANCHOR * (anchor / resolution) ** ((degree + 1) / 2.0)
    return max(MIN_STEPS, math.ceil(span / dt - 1e-9))


# ------------------------------------------------------------------------------ chains


Rung = Callable[[int, int, dict[str, Any] | None], dict[str, Any]]
"""``rung(degree, resolution, petsc_options)`` -> one settings dict."""


def _chains(
    spec: dict[str, Any],
    degrees: tuple[int, ...],
    rung: Rung,
    *,
    iterative: dict[str, Any] | None = None,
    start: Callable[[int], int | None] | None = None,
    order: Callable[[int], int] | None = None,
) -> list[list[dict[str, Any]]]:
    """One chain per degree (and in 3-D a second one with ``iterative`` options).

    ``rung(degree, resolution, petsc_options)`` builds a settings dict;
    ``order(degree)`` is the polynomial order that sets the mesh span (default: the
    degree); ``start(degree)`` an optional raised first resolution."""
    dim = _dimension(spec)
    floor = _floor(spec)
    chains: list[list[dict[str, Any]]] = []
    solvers: list[tuple[tuple[float, float], dict[str, Any] | None]]
    if dim == 3:
        solvers = [(SPAN_3D_DIRECT, None)]
        if iterative is not None:
            solvers.append((SPAN_3D_ITERATIVE, iterative))
    else:
        solvers = [(SPAN_2D if _time_span(spec) is None else SPAN_2D_TRANSIENT, None)]
    for degree in degrees:
        p = order(degree) if order is not None else degree
        first = start(degree) if start is not None else None
        for span, options in solvers:
            resolutions = _resolutions(p, span, floor, first)

            def make(r: int, degree: int = degree, options: dict | None = options) -> dict:
                return rung(degree, r, None if options is None else dict(options))

            chains.append(_off_grid(spec, resolutions, make))
    return chains


def _degrees(spec: dict[str, Any], lowest: int = 1) -> tuple[int, ...]:
    degrees = DEGREES_3D if _dimension(spec) == 3 else DEGREES_2D
    return tuple(p for p in degrees if p >= lowest)


def _resolution_key(spec: dict[str, Any], has_3d_key: bool = True) -> str:
    return "resolution_3d" if has_3d_key and _dimension(spec) == 3 else "resolution"


def _transient(
    spec: dict[str, Any], degree: int, resolution: int, *, scheme: str | None
) -> dict[str, Any]:
    span = _time_span(spec)
    if span is None:
        return {}
    n = _steps(span, degree, resolution)
    out: dict[str, Any] = {"dt": span / n, "n_steps": n}
    if scheme is not None:
        out["scheme"] = scheme
    return out


def _require_time(family: str, spec: dict[str, Any]) -> None:
    if _time_span(spec) is None:
        raise ValueError(f"{family}: the case has no pde.time (the family is transient)")


# ------------------------------------------------------------------------------ families


def _scalar(
    family: str, spec: dict[str, Any], *, iterative: dict[str, Any]
) -> list[list[dict[str, Any]]]:
    """poisson, heat, convection_diffusion, reaction_diffusion, wave."""
    key = _resolution_key(spec, has_3d_key=family != "poisson")
    timed = family != "poisson"  # poisson has no time settings (and no pde.time)
    scheme = "newmark" if family == "wave" else "bdf2"
    extra: dict[str, Any] = dict(NEWTON.get(family, {}))
    if family == "wave":
        extra["richardson"] = False

    def rung(degree: int, r: int, options: dict[str, Any] | None) -> dict[str, Any]:
        timing = _transient(spec, degree, r, scheme=scheme) if timed else {}
        return {key: r, "degree": degree, **timing, **extra, "petsc_options": options}

    return _chains(spec, _degrees(spec), rung, iterative=iterative)


def _helmholtz(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    bounds = _bounds(spec)
    length = max(hi - lo for lo, hi in bounds)
    values = _sample((spec["pde"].get("params") or {}).get("k"), spec)
    k_max = max(abs(v) for v in values) if values else 0.0
    n_waves = k_max * length / (2.0 * math.pi)

    def start(degree: int) -> int | None:
        if n_waves <= 0.0:
            return None
        ppw = HELMHOLTZ_MIN_PPW * max(1.0, n_waves) ** (1.0 / (2.0 * degree))
        return math.ceil(ppw * n_waves / degree)

    def rung(degree: int, r: int, options: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "resolution": r,
            "degree": degree,
            "points_per_wavelength": 0.0,
            "petsc_options": options,
        }

    return _chains(spec, _degrees(spec), rung, start=start)


def _clamped(spec: dict[str, Any]) -> bool:
    bc = spec.get("bc") or {}
    return any(
        entry.get("quantity") == "normal_derivative"
        for kind in ("dirichlet", "neumann")
        for entry in bc.get(kind) or []
    )


def _biharmonic(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    three_d = _dimension(spec) == 3
    method = "cip" if _clamped(spec) else "mixed"
    suffix = "_cip" if method == "cip" else ""
    key = "resolution_3d" if three_d else "resolution" + suffix

    def rung(degree: int, r: int, options: dict[str, Any] | None) -> dict[str, Any]:
        return {"method": method, key: r, "degree" + suffix: degree, "petsc_options": options}

    lowest = 2 if method == "cip" else 1
    iterative = CG_GAMG if method == "mixed" else None
    return _chains(spec, _degrees(spec, lowest), rung, iterative=iterative)


def _poisson_ratio_max(spec: dict[str, Any]) -> float | None:
    params = spec["pde"].get("params") or {}
    for first, second in (("E", "nu"), ("young_modulus", "poisson_ratio")):
        if first in params and second in params:
            values = _sample(params[second], spec)
            return max(values) if values else None
    if "lambda" in params and "mu" in params:
        lam, mu = _sample(params["lambda"], spec), _sample(params["mu"], spec)
        if not lam or not mu:
            return None
        if len(lam) == 1:
            lam = lam * len(mu)
        if len(mu) == 1:
            mu = mu * len(lam)
        if len(lam) != len(mu):
            return None
        return max(a / (2.0 * (a + b)) for a, b in zip(lam, mu, strict=True))
    return None


def _linear_elasticity(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    three_d = _dimension(spec) == 3
    key = _resolution_key(spec)
    model = (spec["pde"].get("params") or {}).get("model")
    nu_max = _poisson_ratio_max(spec)
    if model == "plane_stress":
        formulation = "displacement"
    elif nu_max is None:
        formulation = "auto"
    else:
        formulation = "mixed" if nu_max >= MIXED_NU_THRESHOLD else "displacement"
    options_key = "petsc_options" + ("_mixed" if formulation == "mixed" else "")
    options_key += "_3d" if three_d else ""

    def rung(degree: int, r: int, options: dict[str, Any] | None) -> dict[str, Any]:
        return {key: r, "degree": degree, "formulation": formulation, options_key: options}

    lowest = 1 if formulation == "displacement" else 2
    iterative = ELASTICITY_GAMG if formulation != "mixed" else None
    return _chains(spec, _degrees(spec, lowest), rung, iterative=iterative)


def _flow(family: str, spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    key = _resolution_key(spec)
    degrees = (1, 2) if _dimension(spec) == 3 else (1, 2, 3)
    transient = family == "navier_stokes" and _time_span(spec) is not None
    extra: dict[str, Any] = dict(NEWTON["navier_stokes"]) if family == "navier_stokes" else {}

    def make(convection: str) -> Rung:
        def rung(degree: int, r: int, options: dict[str, Any] | None) -> dict[str, Any]:
            out: dict[str, Any] = {key: r, "degree": degree, **extra, "petsc_options": options}
            if transient:
                timing = _transient(spec, degree + 1, r, scheme=None)
                out["dt"] = timing["dt"]
                out["min_steps"] = timing["n_steps"]
                out["scheme"] = "bdf2"
                out["convection"] = convection
            return out

        return rung

    chains = _chains(spec, degrees, make("implicit"), order=lambda k: k + 1)
    if transient:
        chains += _chains(spec, EXTRAPOLATED_DEGREES, make("extrapolated"), order=lambda k: k + 1)
    return chains


def _burgers(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    _require_time("burgers", spec)

    def rung(degree: int, r: int, options: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "resolution": r,
            "degree": degree,
            **_transient(spec, degree, r, scheme="bdf2"),
            **NEWTON["burgers"],
            "petsc_options": options,
        }

    return _chains(spec, _degrees(spec), rung)


def ladder(case_view: dict) -> list[list[dict]]:
    """Chains of calibration settings for this case (family from
    case_view["case_spec"]["pde"]["type"])."""
    spec = case_view["case_spec"]
    family = spec["pde"]["type"]
    if family in ("heat", "wave"):
        _require_time(family, spec)
    if family in ("poisson", "heat", "wave"):
        return _scalar(family, spec, iterative=CG_GAMG)
    if family in ("convection_diffusion", "reaction_diffusion"):
        return _scalar(family, spec, iterative=GMRES_GAMG)
    if family == "helmholtz":
        return _helmholtz(spec)
    if family == "biharmonic":
        return _biharmonic(spec)
    if family == "linear_elasticity":
        return _linear_elasticity(spec)
    if family in ("stokes", "navier_stokes"):
        return _flow(family, spec)
    if family == "burgers":
        return _burgers(spec)
    raise ValueError(f"no calibration ladder for family {family!r}")
