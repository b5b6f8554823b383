"""Configuration ladders of the deal.II track for the frontier calibration (SPEC §7.1).

The frontier search (:mod:`pdeagent.evaluation.frontier`) picks a case's calibration
baseline from measured trials: the cheapest configuration with a relative L2 error
<= 1e-7 within the solve budget (2 s in 2-D, 8 s in 3-D, start-up excluded), otherwise
the most accurate one within the budget.  :func:`ladder` says which configurations it
tries: a list of *chains*, each a list of settings dicts for the family's program
(``programs/<family>.cc``, the same dicts ``calibration_config["dealii"]`` takes) in
order of increasing cost.  The search walks a chain rung by rung and stops it at the
first rung that fails, exceeds the budget or reaches 1e-7, so every chain starts
cheaply and ends far beyond what the budget allows.

Common rules
------------
- **One chain per element degree** p (Q_p, or the velocity degree of Taylor-Hood
  pairs): the degree fixes the convergence rate, so the search compares the cost of an
  accuracy across rates rather than only refining one discretisation.
- **Mesh resolution along a chain** (cells across the longest side of the domain's
  bounding box, as the programs' ``resolution`` means it), geometric with factor
  :data:`GROWTH` = 1.5 in the number of nodes per direction n = resolution * p, so the
  chains of all degrees cover the same range of unknowns: n from 12 to at least 461
  in 2-D and from 6 to at least 100 in 3-D (coarser start, smaller top).  The current
  calibration defaults sit at n = 48 to 72 (2-D) and 12 to 20 (3-D; Poisson 64); the
  tops are far beyond the budget (measured here: Poisson Q2 at n = 512 in 2-D, 263 000
  unknowns, solves in 9 s; the 3-D Poisson defaults, n = 64, already take 6 to 7 s).
  Resolutions are at least 4 (2-D) or 2 (3-D) cells; a degree whose rounding repeats
  a resolution skips the repeat.  A case with a small feature (a wavelength, a
  convective or reactive layer, below) starts its chains finer, at most at n = 64
  (2-D) or 12 (3-D) so that the first rung stays cheap, and then spans at least 7
  rungs.  At most 4 chains of at most 10 rungs: 40 rungs.
- **No rung with its nodes on the evaluation grid** (SPEC §7.1,
  :mod:`pdeagent.evaluation.grid_alignment`): a finite-element solution is far more
  accurate at its nodes than between them, so a rung whose mesh puts more than
  ``MAX_ALIGNED_FRACTION`` (30%) of the case's evaluation grid on nodes of a scored
  field would measure a grid error far below its true error and set an unfair tau_acc.
  :func:`node_lattices` says where a rung's nodes lie (structured domains only:
  unit_square, periodic_square, unit_cube; gmsh meshes have none), and where the
  geometric sequence above gives a resolution whose rung is aligned
  (``is_grid_aligned``), the rung takes the next larger resolution that is not (on the
  65 x 65 grid of the unit square: p * n a multiple of 64 for a scored Q_p field on n
  cells; on the 25^3 grid of the unit cube: a multiple of 24).  The move is made in one
  place (``_Case.chain``) before anything else derives from the resolution, so a
  transient rung's dt follows the moved resolution; a move that lands on or below the
  previous rung's resolution is a repeat and is skipped like a rounding repeat, so
  every chain stays strictly increasing and deterministic.
- **Time step coupled to the mesh** for the transient families, all of which use a
  second-order scheme (BDF2, started with backward-Euler substeps, one backward-Euler
  step or one Crank-Nicolson step): with spatial error ~ h^(p+1) and temporal error
  ~ dt^2, dt = :data:`STEP_SCALE` * (1/resolution)^((p+1)/2) (in the case's time unit;
  STEP_SCALE = 2 reproduces the heat calibration's 25 to 30 steps at resolution 24,
  Q2, over t in [0, 0.5]), rounded down so that a whole number of steps (at least
  :data:`MIN_STEPS`) ends at t_end.  Both errors then shrink by the same factor per
  rung and the time error never plateaus a chain.  A longer time interval gets
  proportionally more steps.
- **Solver tolerances** are explicit in every rung and far below what 1e-7 needs
  (iterative linear solves to a relative residual of 1e-12; Newton to 1e-10 of the
  initial residual, which with its quadratic convergence leaves the last iterate at
  rounding level; tighter residual targets than that sit at rounding level on fine
  meshes and would only make Newton fail).
- Every rung names every knob its family's program reads for the case (only keys of
  the program's declared calibration settings), so no rung silently inherits a
  default of a knob the ladder varies elsewhere.

Per family
----------
poisson
    Q1..Q4 (smooth manufactured solutions reward high order; Q1 stays for rough
    no-exact cases), ``resolution``.  CG + SSOR at the program's fixed 1e-12.
heat
    Q1..Q4, ``resolution`` (2-D) / ``resolution_cube`` (3-D) and ``dt`` by the rule
    above (BDF2 with 4 backward-Euler start-up substeps); CG tolerance 1e-12.  Solver:
    UMFPACK up to 150 000 unknowns in 2-D; in 3-D the step matrix is factorised by
    UMFPACK up to 25 000 unknowns when it is the same at every step (one factorisation
    for all steps beats a CG solve per step), and always solved by CG + SSOR when
    kappa or a Robin alpha depends on t (the matrix changes every step).
convection_diffusion
    Q1..Q4, ``resolution`` / ``resolution_cube``, ``dt`` by the rule for transient
    cases (BDF2 started with Crank-Nicolson), QGauss(p + 1).  With a global Peclet
    number Pe = |beta| L / min(epsilon), the chains start at n = Pe / 8 (a cell Peclet
    number of about 4: coarser meshes only smear the layer and SUPG-stabilised rungs
    there measure nothing useful).
reaction_diffusion
    Q1..Q4, ``resolution`` / ``resolution_cube``, ``dt`` for transient cases (BDF2
    started with Crank-Nicolson), Newton rtol 1e-10, atol 1e-12, step tolerance 1e-8
    (tested after the step is applied), 30 iterations.  Reaction layers of width
    sqrt(min(epsilon) / max(sigma)) start the chains at two nodes per layer width.
helmholtz
    Q1..Q4 with ``resolution`` set by the ladder from the wave number: n waves across
    the longest side L (k_max sampled over the bounds), the chains start at six points
    per wavelength with the pollution factor the program's rule uses,
    n = 6 * max(1, waves)^(1 + 1/(2p)), and refine from there; the program's own
    wavelength floor (``points_per_wavelength``) is set to 1 so it never overrides the
    ladder's resolution.  UMFPACK.
biharmonic
    The method the case needs, named explicitly: mixed (two Poisson solves, Q1..Q4,
    ``degree`` / ``resolution``) with Navier conditions, C0 interior penalty (Q2..Q4,
    ``degree_cip`` / ``resolution_cip``, penalty 4) with clamped ones; 3-D uses
    ``resolution_cube``.
linear_elasticity
    Displacement form Q1..Q4; when the case is near incompressible (max nu >= 0.49
    and not plane stress, as the program decides, or nu unknown), Taylor-Hood
    Q_p / Q_(p-1), p = 2..4.  ``resolution`` / ``resolution_cube``; in 3-D the
    displacement form is solved by CG + SSOR (one solve: cheaper and smaller than
    UMFPACK already at 15 000 unknowns) to 1e-12.
stokes
    Taylor-Hood Q_k / Q_(k-1), k = 2..4, ``resolution``.  UMFPACK.
navier_stokes
    Taylor-Hood Q_(k+1) / Q_k, k = 1..3 (``degree`` is the pressure degree), mapping
    degree k + 1, ``resolution``; transient cases BDF2 with ``dt`` by the rule for the
    velocity degree k + 1 (``min_steps`` 1: dt alone sets the steps); Newton rtol
    1e-10, atol 1e-12, step tolerance 1e-12, 25 iterations; steady cases keep the
    program's continuation in nu.

What the programs cannot vary: graded or layer-adapted meshes (the mesh size is
uniform), the time scheme's order (2 everywhere) and, for Poisson and convection-
diffusion, the linear solver.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from pdeagent.evaluation.grid_alignment import Lattice, first_off_grid

Settings = dict[str, Any]
Chain = list[Settings]

MAX_MOVE = 1000
"""A rung moves off the evaluation grid by at most this many cells (one suffices)."""

GROWTH = 1.5
"""Ratio of the nodes per direction of consecutive rungs of a chain."""
SPAN = {2: (12.0, 461.0), 3: (6.0, 100.0)}
"""Nodes per direction (resolution * degree) of a chain's first rung and the least of its
last rung, per dimension."""
START_CAP = {2: 64.0, 3: 12.0}
"""The finest first rung a case's small feature may ask for, per dimension."""
MIN_RESOLUTION = {2: 4, 3: 2}
"""Fewest cells across the longest side, per dimension."""
MIN_RUNGS = 7
"""A chain that starts finer still spans at least this many rungs."""
STEP_SCALE = 2.0
"""dt = STEP_SCALE * (1 / resolution)^((p + 1) / 2), in the case's time unit."""
MIN_STEPS = 4
"""Fewest time steps of a rung."""
HEAT_DIRECT_MAX_DOFS_3D = 25_000
"""3-D heat: UMFPACK (one factorisation for every step) up to this many unknowns."""

_NEWTON = {"newton_rtol": 1e-10, "newton_atol": 1e-12}
_MENTIONS_T = re.compile(r"(?<![\w.])t(?!\w)")


class _Case:
    """What of a case_spec shapes its ladder."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.bounds = [(float(lo), float(hi)) for lo, hi in spec["domain"]["bounds"]]
        self.dim = len(self.bounds)
        if self.dim not in SPAN:
            raise ValueError(f"the deal.II track has no {self.dim}-D programs")
        self.length = max(hi - lo for lo, hi in self.bounds)
        time = spec["pde"].get("time")
        self.interval = (float(time["t0"]), float(time["t_end"])) if time else None
        self.params: dict[str, Any] = spec["pde"].get("params") or {}

    @property
    def transient(self) -> bool:
        return self.interval is not None

    def resolution_key(self, plain: str = "resolution") -> str:
        return "resolution_cube" if self.dim == 3 else plain

    def samples(self, value: Any) -> np.ndarray | None:
        """|value| at a grid over the bounds (and over the time interval); None when it
        is neither a number nor an expression the core can evaluate."""
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return np.array([abs(float(value))])
        if not isinstance(value, str):
            return None
        from pdeagent.cases.expressions import compile_expression

        try:
            function = compile_expression(value, self.dim)
        except (ValueError, TypeError):
            return None
        points = 21 if self.dim == 2 else 11
        axes = [np.linspace(lo, hi, points) for lo, hi in self.bounds]
        grid = np.meshgrid(*axes, indexing="ij")
        times = np.linspace(*self.interval, 3) if self.interval else [0.0]
        values = np.concatenate([np.abs(function(*grid, t=t)).ravel() for t in times])
        values = values[np.isfinite(values)]
        return values if values.size else None

    def largest(self, value: Any) -> float | None:
        values = self.samples(value)
        return None if values is None else float(values.max())

    def smallest(self, value: Any) -> float | None:
        values = self.samples(value)
        return None if values is None else float(values.min())

    def geometric_resolutions(
        self, degree: int, feature_start: float | None = None
    ) -> Iterator[int]:
        """A chain's resolutions before the grid-alignment move, repeats included, for
        elements of ``degree`` nodes per cell and direction: n = resolution * degree
        geometric from the dimension's span (or from ``feature_start``, capped) with
        factor GROWTH."""
        first, last = SPAN[self.dim]
        if feature_start is not None and math.isfinite(feature_start):
            first = max(first, min(feature_start, START_CAP[self.dim]))
        last = max(last, first * GROWTH ** (MIN_RUNGS - 1))
        k, n = 0, 0.0
        while n < last * (1 - 1e-9):  # the last rung is the first at or beyond `last`
            n = first * GROWTH**k
            yield max(MIN_RESOLUTION[self.dim], math.floor(n / degree + 0.5))
            k += 1

    def chain(
        self,
        degree: int,
        rung: Callable[[int], Settings],
        feature_start: float | None = None,
    ) -> Chain:
        """The chain ``rung(resolution)`` over :meth:`geometric_resolutions`, each
        resolution whose rung puts its nodes on the evaluation grid moved to the next
        larger one whose rung does not (the one place of that rule), repeats skipped."""
        out: Chain = []
        last = 0
        for resolution in self.geometric_resolutions(degree, feature_start):
            resolution = self.unaligned(resolution, rung)
            if resolution > last:
                out.append(rung(resolution))
                last = resolution
        return out

    def unaligned(self, resolution: int, rung: Callable[[int], Settings]) -> int:
        """The least resolution >= ``resolution`` whose rung is not grid-aligned."""
        view = {"case_spec": self.spec}
        return first_off_grid(
            self.spec["eval_grid"], resolution, lambda r: node_lattices(view, rung(r)),
            limit=MAX_MOVE,
        )  # fmt: skip

    def time_step(self, resolution: int, order: int) -> float:
        """dt for a second-order scheme on a mesh of ``resolution`` whose spatial error
        is of ``order``: dt ~ h^(order / 2), a whole number of steps."""
        assert self.interval is not None
        duration = self.interval[1] - self.interval[0]
        target = STEP_SCALE * (1.0 / resolution) ** (order / 2)
        steps = max(MIN_STEPS, math.ceil(duration / target - 1e-9))
        return duration / steps


def _mentions_t(value: Any) -> bool:
    return isinstance(value, str) and _MENTIONS_T.search(value) is not None


def _bc_entries(spec: dict[str, Any], kind: str) -> Iterator[dict[str, Any]]:
    yield from (spec.get("bc") or {}).get(kind) or []


def _scalar_chains(
    case: _Case,
    degrees: tuple[int, ...],
    fixed: Settings,
    *,
    feature_start: Callable[[int], float | None] | None = None,
    key: str = "resolution",
) -> list[Chain]:
    """One chain per degree of a scalar Q_p program: resolution (and dt when
    transient) along the chain, ``fixed`` in every rung."""
    chains = []
    for p in degrees:

        def rung(r: int, p: int = p) -> Settings:
            settings: Settings = {key: r, "degree": p, **fixed}
            if case.transient:
                settings["dt"] = case.time_step(r, p + 1)
            return settings

        chains.append(case.chain(p, rung, feature_start(p) if feature_start else None))
    return chains


def _poisson(case: _Case) -> list[Chain]:
    return _scalar_chains(case, (1, 2, 3, 4), {})


def _heat(case: _Case) -> list[Chain]:
    kappa = case.params.get("kappa")
    changing = _mentions_t(kappa) or any(
        _mentions_t(entry.get("alpha")) for entry in _bc_entries(case.spec, "robin")
    )
    solver: Settings = (
        {"direct_max_dofs_cube": 0 if changing else HEAT_DIRECT_MAX_DOFS_3D}
        if case.dim == 3
        else {"direct_max_dofs": 150_000}
    )
    fixed = {"startup_substeps": 4, **solver, "tolerance": 1e-12}
    return _scalar_chains(case, (1, 2, 3, 4), fixed, key=case.resolution_key())


def _beta_norm(case: _Case) -> float | None:
    beta = case.params.get("beta")
    if not isinstance(beta, list):
        return None
    parts = [case.largest(b) for b in beta]
    if any(p is None for p in parts):
        return None
    return math.sqrt(sum(p * p for p in parts if p is not None))


def _convection_diffusion(case: _Case) -> list[Chain]:
    beta, epsilon = _beta_norm(case), case.smallest(case.params.get("epsilon"))
    start = None
    if beta and epsilon:
        peclet = beta * case.length / epsilon
        start = peclet / 8.0  # cell Peclet number |beta| h / (2 epsilon) of about 4
    return _scalar_chains(
        case,
        (1, 2, 3, 4),
        {"quadrature": 1},
        feature_start=lambda p: start,
        key=case.resolution_key(),
    )


def _reaction_diffusion(case: _Case) -> list[Chain]:
    epsilon = case.smallest(case.params.get("epsilon"))
    sigma = case.largest(case.params.get("sigma", 1.0))
    start = None
    if epsilon and sigma:
        start = 2.0 * case.length / math.sqrt(epsilon / sigma)  # two nodes per layer width
    fixed = {**_NEWTON, "newton_stol": 1e-8, "newton_max_it": 30}
    return _scalar_chains(
        case, (1, 2, 3, 4), fixed, feature_start=lambda p: start, key=case.resolution_key()
    )


def _helmholtz(case: _Case) -> list[Chain]:
    k = case.largest(case.params.get("k"))
    waves = (k or 0.0) * case.length / (2.0 * math.pi)

    def start(p: int) -> float:
        # six points per wavelength with the pollution factor of the program's rule
        return 6.0 * max(1.0, waves) ** (1.0 / (2 * p)) * waves

    return _scalar_chains(case, (1, 2, 3, 4), {"points_per_wavelength": 1}, feature_start=start)


def _clamped(spec: dict[str, Any]) -> bool:
    return any(
        entry.get("quantity") == "normal_derivative"
        for kind in ("dirichlet", "neumann")
        for entry in _bc_entries(spec, kind)
    )


def _biharmonic(case: _Case) -> list[Chain]:
    cip = _clamped(case.spec)
    suffix = "_cip" if cip else ""
    key = "resolution_cube" if case.dim == 3 else f"resolution{suffix}"
    fixed: Settings = {"method": 2, "penalty": 4.0} if cip else {"method": 1}
    return [
        case.chain(p, lambda r, p=p: {key: r, f"degree{suffix}": p, **fixed})
        for p in ((2, 3, 4) if cip else (1, 2, 3, 4))
    ]


def _largest_poisson_ratio(case: _Case) -> float | None:
    params = case.params
    for name in ("nu", "poisson_ratio"):
        if name in params:
            return case.largest(params[name])
    lam, mu = params.get("lambda"), params.get("mu")
    if isinstance(lam, int | float) and isinstance(mu, int | float) and lam + mu > 0:
        return float(lam) / (2.0 * (float(lam) + float(mu)))
    return None


def _linear_elasticity(case: _Case) -> list[Chain]:
    threshold = 0.49
    nu = _largest_poisson_ratio(case)
    mixed = case.params.get("model") != "plane_stress" and (nu is None or nu >= threshold)
    fixed: Settings = {"mixed_nu_threshold": threshold}
    if case.dim == 3:
        fixed |= {"iterative_cube": 1, "tolerance": 1e-12}
    degrees = (2, 3, 4) if mixed else (1, 2, 3, 4)
    return _scalar_chains(case, degrees, fixed, key=case.resolution_key())


def _stokes(case: _Case) -> list[Chain]:
    return [case.chain(k, lambda r, k=k: {"resolution": r, "degree": k}) for k in (2, 3, 4)]


def _navier_stokes(case: _Case) -> list[Chain]:
    chains = []
    for k in (1, 2, 3):
        velocity = k + 1

        def rung(r: int, k: int = k, velocity: int = velocity) -> Settings:
            settings: Settings = {
                "resolution": r,
                "degree": k,
                "geometry_degree": velocity,
                **_NEWTON,
                "newton_stol": 1e-12,
                "newton_max_it": 25,
            }
            if case.transient:
                settings |= {
                    "dt": case.time_step(r, velocity + 1),
                    "min_steps": 1,
                    "bdf_order": 2,
                }
            else:
                settings |= {
                    "continuation_steps": 6,
                    "continuation_reynolds": 10.0,
                    "continuation_max_failures": 12,
                }
            return settings

        chains.append(case.chain(velocity, rung))
    return chains


_LADDERS: dict[str, Callable[[_Case], list[Chain]]] = {
    "poisson": _poisson,
    "heat": _heat,
    "convection_diffusion": _convection_diffusion,
    "reaction_diffusion": _reaction_diffusion,
    "helmholtz": _helmholtz,
    "biharmonic": _biharmonic,
    "linear_elasticity": _linear_elasticity,
    "stokes": _stokes,
    "navier_stokes": _navier_stokes,
}


def ladder(case_view: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Chains of calibration settings for this case (family from
    ``case_view["case_spec"]["pde"]["type"]``), each in order of increasing cost.

    Raises ValueError for a family without a deal.II program."""
    spec = case_view["case_spec"]
    family = spec["pde"]["type"]
    build = _LADDERS.get(family)
    if build is None:
        raise ValueError(
            f"no deal.II calibration ladder for family {family!r} (have: {', '.join(_LADDERS)})"
        )
    return build(_Case(spec))


# --- where a rung's nodes lie (SPEC §7.1, pdeagent.evaluation.grid_alignment) ------------

_STRUCTURED = {"unit_square": 2, "periodic_square": 2, "unit_cube": 3}
"""Domains meshing.h builds with GridGenerator::subdivided_hyper_cube(tria, n, 0.0, 1.0)
(every other template is a gmsh mesh: no lattice), and their dimension."""
_EXTENT = (0.0, 1.0)
"""The extent of every axis of those meshes (meshing.h passes 0.0 and 1.0 whatever the
case's bounds)."""


@functools.cache
def _base_settings(family: str) -> Settings:
    """The settings a bundled program runs with when a rung names none: the program's
    ``#ifndef`` defaults under the family's declared calibration settings."""
    from pdeagent_dealii.bundle import bundle, settings_of

    carried, _ = settings_of(bundle(family))
    assert carried is not None
    return carried


def _cells_per_side(resolution: int) -> int:
    """meshing.h: h = mesh_size(domain, resolution) = 1.0 / resolution on these domains,
    then n = max(1, ceil(longest side / h - 1e-9)) cells per side (longest side 1.0)."""
    h = 1.0 / resolution
    return max(1, math.ceil(1.0 / h - 1e-9))


@functools.cache
def _largest_wave_number(k: Any, bounds: tuple[tuple[float, float], ...]) -> float:
    """helmholtz.cc's k_max: |k| of a number, else the largest |k(x)| over 101 (2-D) or 31
    (3-D) points per axis of the bounds."""
    if isinstance(k, int | float) and not isinstance(k, bool):
        return abs(float(k))
    from pdeagent.cases.expressions import compile_expression

    dim = len(bounds)
    points = 101 if dim == 2 else 31
    axes = [np.linspace(lo, hi, points) for lo, hi in bounds]
    values = compile_expression(str(k), dim)(*np.meshgrid(*axes, indexing="ij"))
    return float(np.max(np.abs(values)))


def _helmholtz_resolution(spec: dict[str, Any], settings: Settings) -> int:
    """helmholtz.cc: the larger of ``resolution`` and the wavelength rule's floor."""
    bounds = tuple((float(lo), float(hi)) for lo, hi in spec["domain"]["bounds"])
    length = max(hi - lo for lo, hi in bounds)
    k_max = _largest_wave_number(spec["pde"]["params"]["k"], bounds)
    p, ppw = int(settings["degree"]), float(settings["points_per_wavelength"])
    waves = k_max * length / (2.0 * math.pi)
    needed = 1
    if waves > 0.0:
        needed = max(1, math.ceil(ppw * max(1.0, waves) ** (1.0 / (2.0 * p)) * waves / p))
    return max(int(settings["resolution"]), needed)


def _scored_degrees(output: dict[str, Any], field: int, pressure: int | None) -> set[int]:
    """The degrees of the FE fields common.h's write_solution samples for ``output``: the
    primary unknown (degree ``field``: components, a magnitude, one component) or, for a
    field named p / pressure, the pressure; plus the pressure when ``output.pressure``
    names an array.  A pressure the program lacks is counted all the same (it refuses
    such an output, so the rung never runs: counting it is only stricter)."""
    wants_pressure = output.get("pressure") not in (None, False, {})
    degrees: set[int] = set()
    if output.get("field") in ("p", "pressure") and not output.get("components"):
        wants_pressure = True
    else:
        degrees.add(field)
    if wants_pressure and pressure is not None and pressure >= 1:
        degrees.add(pressure)
    return degrees or {field}


def _mesh_and_degrees(spec: dict[str, Any], settings: Settings) -> tuple[int, set[int]]:
    """The resolution a family's program builds its mesh from and the degrees of the
    Q_p spaces of its scored fields (programs/<family>.cc)."""
    family, dim = spec["pde"]["type"], len(spec["domain"]["bounds"])
    output = spec.get("output") or {}
    plain = "resolution_cube" if dim == 3 else "resolution"
    if family == "poisson":  # poisson.cc: PDEAGENT_RESOLUTION in 2-D and 3-D, FE_Q(p)
        return int(settings["resolution"]), {int(settings["degree"])}
    if family in ("heat", "convection_diffusion", "reaction_diffusion"):
        # dim == 3 ? PDEAGENT_RESOLUTION_CUBE : PDEAGENT_RESOLUTION, FE_Q(p)
        return int(settings[plain]), {int(settings["degree"])}
    if family == "helmholtz":  # resolution with the wavelength floor, FE_Q(p)
        return _helmholtz_resolution(spec, settings), {int(settings["degree"])}
    if family == "biharmonic":
        # method 0 picks cip (2) with a normal_derivative condition, else mixed (1); both
        # sample u in FE_Q(p); the unit cube takes PDEAGENT_RESOLUTION_CUBE for either
        method = int(settings["method"]) or (2 if _clamped(spec) else 1)
        suffix = "_cip" if method == 2 else ""
        key = "resolution_cube" if spec["domain"]["type"] == "unit_cube" else f"resolution{suffix}"
        return int(settings[key]), {int(settings[f"degree{suffix}"])}
    if family == "linear_elasticity":
        # displacement FE_Q(p)^dim (Taylor-Hood: plus a Q_(p-1) pressure, not an output)
        p = int(settings["degree"])
        return int(settings[plain]), _scored_degrees(output, p, p - 1)
    if family == "stokes":  # Taylor-Hood Q_k^dim / Q_(k-1), k = PDEAGENT_DEGREE
        k = int(settings["degree"])
        return int(settings["resolution"]), _scored_degrees(output, k, k - 1)
    if family == "navier_stokes":  # Taylor-Hood Q_(k+1)^dim / Q_k, k = PDEAGENT_DEGREE
        k = int(settings["degree"])
        return int(settings["resolution"]), _scored_degrees(output, k + 1, k)
    raise ValueError(f"no deal.II program for family {family!r}")


def node_lattices(case_view: dict[str, Any], rung: dict[str, Any]) -> list[list[Lattice]] | None:
    """Where the nodes of ``rung``'s scored fields lie on the case's domain: one lattice
    set per distinct node layout (a Q_p field on n cells per side: ``(0.0, 1.0, p n)``
    per axis), largest degree first; None for a gmsh (unstructured) mesh.

    As the programs build it (meshing.h): unit_square, periodic_square and unit_cube
    are ``subdivided_hyper_cube(tria, n, 0.0, 1.0)`` with n = ceil(1 / h) cells per side
    and h = 1 / resolution, no program refines it, and the scored fields are FE_Q
    spaces.  deal.II's FE_Q(p) puts its nodes at Gauss-Lobatto points: equispaced for
    p <= 2; for p >= 3 only the vertices (and the midpoints for even p) are lattice
    points, the other nodes are irrational and never on a grid point, so the lattice
    over-approximates the nodes, which only makes the check stricter.  ``rung`` is read
    over the settings the bundled program falls back on for a knob it does not name."""
    spec = case_view["case_spec"]
    dim = _STRUCTURED.get(spec["domain"]["type"])
    if dim is None:
        return None
    settings = {**_base_settings(spec["pde"]["type"]), **rung}
    resolution, degrees = _mesh_and_degrees(spec, settings)
    n = _cells_per_side(resolution)
    return [[(*_EXTENT, p * n)] * dim for p in sorted(degrees, reverse=True)]
