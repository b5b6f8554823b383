"""The families' set-up shared by the solver programs of the UFL tracks (runtime code).

Shared by the tracks whose library speaks UFL (DOLFINx, Firedrake) and inlined into
their single-file solver programs with ``_ufl_data`` and ``_ufl_forms`` (see
``pdeagent.contracts.python_bundle``): standard library and ufl only. Where
``_ufl_forms`` holds the weak forms, this module holds what a family's ``solve`` does
around them that does not depend on the library: the settings merge and checks, the
choice of resolution and time steps, the case's coefficients as UFL, the choice of
stabilisation and the solver_info entries. The track keeps the mesh, the spaces, the
Dirichlet conditions, the assembly and solve, and the sampling; where this code needs
numbers from the library (e.g. a minimum over the cells) the track passes a function.
"""

import math

import numpy as np
import ufl

from ._output import output_fields
from ._ufl_data import (
    DIRECT,
    boundary_terms,
    merged_settings,
    parameter,
    single_source,
    time_interval,
    to_ufl,
)
from ._ufl_forms import (
    _BH_QUANTITIES,
    _EL_DIRICHLET_QUANTITIES,
    _EL_NEUMANN_QUANTITIES,
    _bh_check_counts,
    _bh_cip_forms,
    _bh_forcing,
    _bh_method,
    _bh_negated,
    _cd_beta,
    _cd_check,
    _cd_steady_system,
    _cd_tau_steady,
    _cd_time_dependent_matrix,
    _cd_transient_system,
    _cd_use_supg,
    _el_case,
    _el_eps,
    _heat_setup,
    _rd_check,
    _rd_coefficients,
    _rd_residual,
    _rd_time_dependent_matrix,
    _scalar_resolution,
    _step_coefficients,
    _time_steps,
)

# -------------------------------------------------------------------- convection-diffusion


class _CdSetup:
    """One convection-diffusion solve, the part of it that is the same in every UFL track.

    Discretisation: continuous Lagrange elements of degree ``degree``. Stabilisation
    (``stabilization``): "supg", "none" or "auto" (SUPG when the largest cell Peclet
    number Pe_K = |beta| h_K / (2 epsilon) exceeds 1, with h_K = cell diameter / degree);
    ``_ufl_forms`` (convection-diffusion) defines the SUPG residual and tau.
    Time stepping (``scheme``): "bdf2" (default; started with one Crank-Nicolson step),
    "crank_nicolson" or "backward_euler", constant step dt = (t_end - t0) / n with
    n = ``n_steps`` or ceil((t_end - t0) / ``dt``). Forms are compiled once; time enters
    through the track's constants. The matrix is assembled and factorised once (twice
    for bdf2), or every step when epsilon, beta or a Robin alpha depends on t. Cell
    integrals use the quadrature degree ``quadrature_degree`` (default 2 * degree + 2):
    UFL's estimate for expression data (sin, exp, ...) is far higher and makes assembly
    slow.
    """

    family = "convection_diffusion"

    def __init__(self, case_spec, defaults, settings):
        self.cfg = merged_settings(defaults, settings)
        _cd_check(case_spec, self.cfg)
        self.case_spec = case_spec
        self.bc_spec = case_spec["bc"]
        self.params = case_spec["pde"].get("params") or {}
        self.scheme = self.cfg["scheme"]
        self.interval = time_interval(case_spec)
        self.transient = self.interval is not None
        self.degree = int(self.cfg["degree"])
        self.resolution = _scalar_resolution(case_spec, self.cfg)
        self.t_start = 0.0 if not self.transient else self.interval[0]

    def beta(self, dim):
        """(beta as stated, whether it is 0): checks it has ``dim`` components."""
        self.beta_value, self.no_convection = _cd_beta(self.params, dim)
        return self.beta_value, self.no_convection

    def measure(self, msh):
        """The cell measure with the quadrature degree of the settings."""
        qdeg = self.cfg["quadrature_degree"]
        qdeg = 2 * self.degree + 2 if qdeg is None else int(qdeg)
        return ufl.Measure("dx", domain=msh, metadata={"quadrature_degree": qdeg})

    def coefficients(self, msh, t):
        """(epsilon, beta, f) as UFL at the time constant ``t``."""
        eps = parameter(self.params, "epsilon", msh, t)
        beta = parameter(self.params, "beta", msh, t)
        f = to_ufl(single_source(self.family, self.case_spec["pde"]), msh, t, self.params)
        return eps, beta, f

    def boundary(self, v, domain, t, u):
        """(Robin lhs, Neumann/Robin rhs) at the time constant ``t``."""
        return boundary_terms(v, domain, self.bc_spec, t=t, params=self.params, u=u)

    def stabilization(self, eps, beta, hK, set_time, cell_min, cell_max):
        """(tau_s or None, largest cell Peclet number): epsilon and Pe_K are looked at
        on the cells at t0, the middle and t_end (``set_time(value)`` sets the track's
        time constant, ``cell_min`` / ``cell_max`` reduce a scalar expression over the
        cells); raises unless epsilon > 0 there."""
        tau_s, pe = (None, None) if self.no_convection else _cd_tau_steady(beta, eps, hK)
        interval = self.interval
        times = [0.0] if not self.transient else [interval[0], 0.5 * sum(interval), interval[1]]
        pe_max, eps_min = 0.0, math.inf
        for tv in times:
            set_time(tv)
            eps_min = min(eps_min, cell_min(eps))
            if pe is not None:
                pe_max = max(pe_max, cell_max(pe))
        set_time(times[0])
        use = _cd_use_supg(self.cfg["stabilization"], self.no_convection, eps_min, pe_max)
        return (tau_s if use else None), pe_max

    def steady_system(self, u, v, dx, new, supg):
        """(a, L); ``new`` = (eps, beta, f, robin lhs, natural rhs)."""
        return _cd_steady_system(u, v, dx, new, supg)

    def time_steps(self):
        """(t0, n_steps, dt, time-dependent matrix, start and main coefficients)."""
        t0, n_steps, dt = _time_steps(self.family, self.case_spec, self.cfg, self.interval)
        dependent = _cd_time_dependent_matrix(self.params, self.beta_value, self.bc_spec)
        start, main = _step_coefficients(self.scheme)
        return t0, n_steps, dt, dependent, start, main

    def transient_system(self, u, v, dx, levels, k, coefficients, new, domain, t_old, supg):
        """(a, L) of one step; ``levels`` = (u_n, u_nm1); the old time level's data are
        made here at the time constant ``t_old``."""
        u_n, u_nm1 = levels
        msh = domain.msh
        old = (*self.coefficients(msh, t_old), *self.boundary(v, domain, t_old, u_n))
        return _cd_transient_system(u, v, dx, u_n, u_nm1, k, coefficients, new, old, supg)

    def info(self, supg, pe_max, track_info, step_info, system_info):
        """solver_info: the family's entries around the track's (``track_info``)."""
        return {
            "family": self.family,
            "resolution": self.resolution,
            "element_degree": self.degree,
            **track_info,
            "stabilization": "none" if supg is None else "supg",
            "max_cell_peclet": pe_max,
            **step_info,
            **system_info,
        }

    def step_info(self, n_steps, dt, matrix_assemblies):
        return {
            "time_steps": n_steps,
            "dt": dt,
            "scheme": self.scheme,
            "matrix_assemblies": matrix_assemblies,
        }


# ------------------------------------------------------------------------------------ heat


def _heat_begin(case_spec, defaults, settings):
    """(cfg, (t0, t_end, n_steps, dt), resolution) of a heat solve, after the checks of
    the settings and the case (``_ufl_forms._heat_setup``)."""
    cfg = merged_settings(defaults, settings)
    steps = _heat_setup(case_spec, cfg)
    is_3d = case_spec["domain"].get("type") == "unit_cube"
    return cfg, steps, cfg["resolution_3d"] if is_3d else cfg["resolution"]


def _heat_march(cfg, steps, k, constant, make_system, advance, save, restore):
    """Advance u from t0 to t_end with a constant step; returns the BDF2 start-up method
    (None for the one-step schemes).

    - ``backward_euler``  (first order),
    - ``crank_nicolson``  (second order; operator and data averaged between the levels),
    - ``bdf2``            (second order; the first step to t0 + dt by ``startup_substeps``
      backward-Euler substeps (default: their O(dt^2 / m) error keeps the global order 2
      and they damp incompatible initial data) or by one Crank-Nicolson step).

    The track supplies the step constant ``k``, ``constant(value)`` for a substep's,
    ``make_system(method, h, name)`` (the linear system of one step of ``method`` with
    step constant h), ``advance(system, t_from, t_to)`` (one solve; u_n, u_nm1 move on)
    and ``save()`` / ``restore(saved)`` of u_nm1's value (u_n before the start-up).
    """
    t0, t_end, n_steps, dt = steps
    scheme = cfg["scheme"]

    def level(step):
        return t_end if step == n_steps else t0 + step * dt

    first = 0
    startup = None
    if scheme == "bdf2":
        # the first step (to t0 + dt) by a one-step method: either leaves an O(dt^2) or
        # smaller error, so BDF2 stays second order
        startup = cfg["bdf2_startup"]
        u_start = save()
        if startup == "crank_nicolson":
            advance(make_system("crank_nicolson", k, "startup"), t0, level(1))
        else:
            m = int(cfg["startup_substeps"])
            if m < 1:
                raise ValueError(f"heat: startup_substeps must be positive, got {m}")
            system = make_system("backward_euler", constant(dt / m), "startup")
            for j in range(m):
                t_to = level(1) if j == m - 1 else t0 + (j + 1) * dt / m
                advance(system, t0 + j * dt / m, t_to)
        restore(u_start)
        first = 1
    if first < n_steps:
        main = make_system(scheme, k, scheme)
        for step in range(first, n_steps):
            advance(main, level(step), level(step + 1))
    return startup


def _heat_info(cfg, resolution, steps, startup, track_info, reassembled, systems, tail):
    """solver_info of a heat solve: the family's entries around the track's."""
    return {
        "family": "heat",
        "resolution": resolution,
        "element_degree": cfg["degree"],
        **track_info,
        "scheme": cfg["scheme"],
        "startup": startup,
        "dt": steps[3],
        "time_steps": steps[2],
        "matrix_reassembled_each_step": reassembled,
        **systems[-1].info(),
        "linear_iterations": sum(s.info()["linear_iterations"] for s in systems),
        **tail,
    }


# ---------------------------------------------------------------------- reaction-diffusion


class _RdSetup:
    """One reaction-diffusion solve, the part of it that is the same in every UFL track:
    settings, checks, resolution, the coefficients, the time-step residual and
    solver_info. Discretisation and time stepping: as the tracks' module docstrings say.
    """

    family = "reaction_diffusion"

    def __init__(self, case_spec, defaults, settings):
        self.cfg = merged_settings(defaults, settings)
        self.case_spec = case_spec
        self.params = case_spec["pde"].get("params") or {}
        self.bc_spec = case_spec["bc"]
        self.law = _rd_check(case_spec, self.cfg)
        self.interval = time_interval(case_spec)
        self.transient = self.interval is not None
        self.scheme = self.cfg["scheme"]
        self.degree = int(self.cfg["degree"])
        self.resolution = _scalar_resolution(case_spec, self.cfg)
        self.t_start = 0.0 if not self.transient else self.interval[0]
        self.linear = self.law == "linear"
        self.ic = case_spec.get("ic") or {}

    def measure(self, msh):
        """The cell measure with the quadrature degree of the settings."""
        qdeg = self.cfg["quadrature_degree"]
        qdeg = 2 * self.degree + 2 if qdeg is None else int(qdeg)
        return ufl.Measure("dx", domain=msh, metadata={"quadrature_degree": qdeg})

    def coefficients(self, msh, t, set_time, cell_min):
        """(epsilon, R, f) at the time constant ``t``, after checking epsilon > 0 on the
        cells at t0, the middle and t_end (``set_time(value)`` sets ``t``, ``cell_min``
        reduces a scalar expression over the cells)."""
        new = _rd_coefficients(self.case_spec, self.law, msh, t)
        interval = self.interval
        times = [interval[0], 0.5 * sum(interval), interval[1]] if self.transient else [0.0]
        eps_min = math.inf
        for tv in times:
            set_time(tv)
            eps_min = min(eps_min, cell_min(new[0]))
        set_time(times[0])
        if not eps_min > 0.0:
            raise ValueError(f"reaction_diffusion: epsilon must be positive (min {eps_min:g})")
        return new

    def steady_residual(self, w, v, dx, domain, t, new):
        return _rd_residual(w, v, dx, domain, self.case_spec, t, new, w)

    def time_steps(self):
        """(t0, n_steps, dt, time-dependent matrix, start and main coefficients)."""
        t0, n_steps, dt = _time_steps(self.family, self.case_spec, self.cfg, self.interval)
        dependent = _rd_time_dependent_matrix(self.params, self.bc_spec)
        start, main = _step_coefficients(self.scheme)
        return t0, n_steps, dt, dependent, start, main

    def transient_residual(self, w, v, dx, domain, levels, k, coefficients, new, times):
        """F of one step: ``levels`` = (u_n, u_nm1), ``coefficients`` = constants
        (c0, c1, c2, theta), ``times`` = the (new, old) time constants; the old level's
        coefficients are made here."""
        (u_n, u_nm1), (c0, c1, c2, theta), (t_new, t_old) = levels, coefficients, times
        case_spec = self.case_spec
        old = _rd_coefficients(case_spec, self.law, domain.msh, t_old)
        return (
            (c0 * w + c1 * u_n + c2 * u_nm1) / k * v * dx
            + theta * _rd_residual(w, v, dx, domain, case_spec, t_new, new, w)
            + (1.0 - theta) * _rd_residual(u_n, v, dx, domain, case_spec, t_old, old, u_n)
        )

    def info(self, track_info, step_info, solver_info):
        info = {
            "family": self.family,
            "reaction_law": self.law,
            "resolution": self.resolution,
            "element_degree": self.degree,
            **track_info,
            **step_info,
            **solver_info,
        }
        if self.linear:
            info["newton_iterations"] = 0
        return info


def _rd_lift_forms(p, q, dx, zero):
    """(a, L) of the harmonic extension of the Dirichlet data (natural condition
    elsewhere): trial p, test q, ``zero`` the track's constant 0."""
    return ufl.inner(ufl.grad(p), ufl.grad(q)) * dx, zero * q * dx


def _rd_newton_options(cfg, linear_key):
    """PETSc options of the Newton solve: SNES newtonls with a backtracking line search;
    the linear solver: ``cfg[linear_key]`` replaces the direct solve (not merged with it)."""
    options = {
        "snes_type": "newtonls",
        "snes_linesearch_type": "bt",
        "snes_rtol": cfg["newton_rtol"],
        "snes_atol": cfg["newton_atol"],
        "snes_max_it": int(cfg["newton_max_it"]),
    }
    options.update(cfg[linear_key] or DIRECT)
    return options


def _rd_newton_check(reason, iterations, where):
    """Raise unless the SNES converged (``reason`` > 0)."""
    if reason <= 0:
        raise RuntimeError(
            f"reaction_diffusion: Newton did not converge{where} (SNES reason {reason}, "
            f"{iterations} iterations); try a smaller dt or a better initial guess"
        )


def _rd_newton_info(iterations, linear_iterations, ksp):
    return {
        "newton_iterations": int(sum(iterations)),
        "max_newton_iterations": int(max(iterations)),
        "ksp_type": ksp.getType(),
        "pc_type": ksp.getPC().getType(),
        "linear_iterations": linear_iterations,
    }


# ------------------------------------------------------------------------------ biharmonic


class _BhSetup:
    """One biharmonic solve, the part of it that is the same in every UFL track: the
    settings, the stated conditions (``conditions``: (quantity, entry) pairs), the
    method, degree and resolution, the checks, the forms and solver_info.

    Two discretisations, chosen by the ``method`` setting:

    * ``"mixed"`` (splitting, Navier conditions on the whole boundary only): with
      ``w = -laplace(u)`` two Poisson solves with continuous Lagrange elements of degree
      ``degree`` on a mesh of ``resolution``: ``-laplace(w) = f, w = -g_lap`` then
      ``-laplace(u) = w, u = g_u``, both with strong Dirichlet data.  L2 order
      ``degree + 1`` (3 for P2).
    * ``"cip"`` (C0 interior penalty, any mix of Navier and clamped parts): continuous
      Lagrange of degree ``degree_cip >= 2`` on a mesh of ``resolution_cip``, ``u = g_u``
      strongly and the broken form ``sum_K (lap u, lap v)_K`` with symmetric consistency
      terms ``-({lap u}, [dv/dn]) - ({lap v}, [du/dn])`` and the penalty
      ``sigma = penalty * p**2 / h`` on the jumps of the normal derivative across
      interior facets; clamped data ``du/dn = g`` is imposed weakly by the same
      symmetric terms and penalty on its boundary parts (Nitsche), Navier data
      ``laplace(u) = g`` enters the right-hand side as ``(g, dv/dn)`` on its parts
      (``_ufl_forms._bh_cip_forms``).  L2 order 2 for P2 (suboptimal, as known for CIP),
      ``p + 1`` for ``p >= 3``.  h is the largest vertex distance of a cell (the track's
      ``cell_diameters``).  The CIP matrix has a condition number ~ h**-4, so round-off
      grows like resolution**4 (see the tracks' REFERENCE).

    ``method = "auto"`` (default) takes ``mixed`` when no ``normal_derivative``
    condition is stated (the coverage check then guarantees laplacian_u on every facet)
    and ``cip`` otherwise.  The unit cube (3-D) uses ``resolution_3d`` for both methods.
    """

    quantities = _BH_QUANTITIES

    def __init__(self, case_spec, defaults, settings):
        self.cfg = merged_settings(defaults, settings)
        self.pde = case_spec["pde"]
        self.params = self.pde.get("params") or {}
        self.conditions, self.method, self.degree, self.resolution = _bh_method(case_spec, self.cfg)

    def check_counts(self, count, allreduce, tag_ids):
        """Raise unless every exterior facet has exactly one u condition and exactly one
        second condition (``_ufl_forms._bh_check_counts``)."""
        _bh_check_counts(count, allreduce, tag_ids)

    def forcing(self, msh):
        return _bh_forcing(self.pde, msh, self.params)

    def check_degree(self):
        """Raise on a degree (or cip penalty) the method cannot use; returns the penalty
        (None for the mixed method)."""
        degree = self.degree
        if self.method == "mixed":
            if degree < 1:
                raise ValueError(f"biharmonic: degree must be >= 1, got {degree}")
            return None
        if degree < 2:
            raise ValueError(
                f"biharmonic: the C0 interior penalty method needs degree >= 2, got {degree}"
            )
        penalty = float(self.cfg["penalty"])
        if not penalty > 0:
            raise ValueError(f"biharmonic: cip penalty must be positive, got {penalty}")
        return penalty

    def dirichlet_data(self):
        """(w data, u data): the (entry, value) pairs of the strong Dirichlet conditions
        (the mixed method's w = -laplace(u) = -g on laplacian_u parts; u = g on u parts)."""
        conditions = self.conditions
        w_data = [(e, _bh_negated(e["value"])) for q, e in conditions if q == "laplacian_u"]
        u_data = [(e, e["value"]) for q, e in conditions if q == "u"]
        return w_data, u_data

    def cip_forms(self, u, v, domain, f, eta, h):
        """(a, L) of the C0 interior penalty method (``_ufl_forms._bh_cip_forms``)."""
        return _bh_cip_forms(u, v, domain, self.conditions, f, eta, h, self.params)

    @staticmethod
    def mixed_info(first, second, dofs):
        """solver_info of the mixed method's two Poisson solves (``dofs``: of one field)."""
        i1, i2 = first.info(), second.info()
        return {
            "ksp_type": i2["ksp_type"],
            "pc_type": i2["pc_type"],
            "linear_iterations": i1["linear_iterations"] + i2["linear_iterations"],
            "dofs": 2 * dofs,  # u and w, one Poisson solve each
            "dofs_per_field": dofs,
        }

    def info(self, track_info, solver_info):
        return {
            "family": "biharmonic",
            "method": self.method,
            "resolution": self.resolution,
            "element_degree": self.degree,
            **track_info,
            **solver_info,
        }


# ------------------------------------------------------------------------ linear elasticity


def _el_begin(case_spec, defaults, settings, *, check_bc=False):
    """(cfg, params, model, is_3d, resolution, degree) of a linear elasticity solve; with
    ``check_bc`` the boundary conditions are checked first too (:func:`_el_check_bc`).

    Discretisation: continuous vector Lagrange elements of degree ``degree`` for the
    displacement. Near the incompressible limit (plane strain / 3d with nu >=
    ``mixed_nu_threshold``, or ``formulation="mixed"``) the displacement-pressure form
    with p = lam div(u) is used instead: Taylor-Hood P_k / P_(k-1),

        2 mu (eps(u), eps(v)) + (p, div v) = (f, v) + <g, v>
        (div u, q) - (p / lam, q)          = 0,

    which does not lock (``_ufl_forms._el_bilinear``, ``_el_formulation``).
    """
    cfg = merged_settings(defaults, settings)
    params, model, is_3d = _el_case(case_spec)
    if check_bc:
        _el_check_bc(case_spec["bc"])
    resolution = cfg["resolution_3d"] if is_3d else cfg["resolution"]
    return cfg, params, model, is_3d, resolution, int(cfg["degree"])


def _el_check_neumann(entry):
    if entry.get("quantity") not in _EL_NEUMANN_QUANTITIES:
        raise ValueError(
            f"linear_elasticity: Neumann quantity {entry.get('quantity')!r} is not defined "
            "(expected traction)"
        )


def _el_check_dirichlet(entry):
    if entry.get("quantity") not in _EL_DIRICHLET_QUANTITIES:
        raise ValueError(
            f"linear_elasticity: Dirichlet quantity {entry.get('quantity')!r} is not "
            "defined (expected the displacement)"
        )


def _el_require_dirichlet(conditions):
    if not conditions:
        raise ValueError(
            "linear_elasticity: no displacement (Dirichlet) condition: rigid motions are not "
            "fixed and the problem has no unique solution"
        )


def _el_check_bc(bc_spec):
    """The quantities of the Neumann and Dirichlet entries, and that there is one
    displacement condition at least."""
    for entry in bc_spec.get("neumann") or []:
        _el_check_neumann(entry)
    for entry in bc_spec.get("dirichlet") or []:
        _el_check_dirichlet(entry)
    _el_require_dirichlet(bc_spec.get("dirichlet"))


def _el_options_key(prefix, formulation, is_3d):
    """The settings key of the linear solver options, e.g. ``petsc_options_mixed_3d``."""
    return prefix + ("_mixed" if formulation == "mixed" else "") + ("_3d" if is_3d else "")


def _el_field_split_form(u, v, p, q, mu, lam):
    """The preconditioning form of a field split of the mixed system:
    2 mu (eps(u), eps(v)) + (1/mu + 1/lam) (p, q)."""
    return (
        2.0 * mu * ufl.inner(_el_eps(u), _el_eps(v)) * ufl.dx
        + (1.0 / mu + 1.0 / lam) * p * q * ufl.dx
    )


def _el_output(case_spec, values, dim):
    """The output fields from the sampled displacement components ``values``."""
    comps = [values[i] for i in range(dim)]
    named = {"components": comps, "displacement_magnitude": np.sqrt(sum(c**2 for c in comps))}
    named.update({name: comps[i] for i, name in enumerate(("u_x", "u_y", "u_z")[:dim])})
    wanted = case_spec["output"].get("components")
    if wanted:
        if len(wanted) != dim:
            raise ValueError(f"linear_elasticity: expected {dim} output components, got {wanted}")
        named.update({name: comps[i] for i, name in enumerate(wanted)})
    return output_fields(case_spec, named)


def _el_info(model, formulation, resolution, degree, track_info, system_info):
    return {
        "family": "linear_elasticity",
        "model": model,
        "formulation": formulation,
        "resolution": resolution,
        "element_degree": degree,
        "pressure_degree": degree - 1 if formulation == "mixed" else None,
        **track_info,
        **system_info,
    }


# ------------------------------------------------------------------ Stokes / Navier-Stokes


def _flow_resolution(case_spec, cfg):
    """``resolution_3d`` on a 3-D domain, else ``resolution``."""
    spec = case_spec["domain"]
    three_d = spec.get("type") == "unit_cube" or len(spec.get("bounds") or []) == 3
    return cfg["resolution_3d"] if three_d else cfg["resolution"]


def _flow_quadrature(degree):
    """Quadrature of the data terms: the degree UFL estimates for expressions such as
    sin(...) * exp(...) is far too high (30+); 2 (k + 1) + 2 is ample for P(k+1)."""
    return {"quadrature_degree": 2 * (int(degree) + 1) + 2}


def _flow_vector(value, gdim, what):
    """Vector data as a list of expression strings. Numbers become strings so that
    ``to_ufl`` turns them into mesh constants (a list of bare floats gives a UFL vector
    without a mesh, which interpolation and zero-valued forms reject)."""
    if not isinstance(value, (list, tuple)) or len(value) != gdim:
        raise ValueError(f"{what} must be a list of {gdim} component expressions")
    return [repr(float(c)) if isinstance(c, (int, float)) else c for c in value]


def _flow_forcing_value(pde, gdim):
    """The body force f as a list of ``gdim`` expressions, or None without one."""
    forcing = pde.get("forcing") or {}
    extra = sorted(set(forcing) - {"f"})
    if extra:
        raise ValueError(f"unsupported forcing entries {extra}: only 'f' is defined")
    if forcing.get("f") is None:
        return None
    return _flow_vector(forcing["f"], gdim, "forcing f")


def _flow_boundary_data(domain, bc_spec, v, gdim, t, params, metadata):
    """Check a flow case's boundary conditions and split them: the velocity Dirichlet
    entries (``quantity`` "velocity", ``value`` a list of ``gdim`` expressions), for the
    track to impose, and the natural load term of the traction and pressure data
    (``nu du/dn - p n = g`` or ``= -g n``) on the test function ``v``. ``domain`` has
    ``msh`` and ``ds(tags)``; ``metadata`` is the data terms' quadrature."""
    msh = domain.msh
    n = ufl.FacetNormal(msh)
    if bc_spec.get("periodic"):
        raise NotImplementedError("periodic boundary conditions are not supported by this solver")
    if bc_spec.get("robin"):
        raise ValueError("Robin conditions are not defined for incompressible flow")
    velocity, natural = [], 0

    def ds(tags):
        return domain.ds(tags).reconstruct(metadata=metadata)

    def pressure_term(entry):
        if isinstance(entry["value"], (list, tuple)):
            raise ValueError("pressure data must be a scalar expression")
        g = to_ufl(entry["value"], msh, t, params)
        return -g * ufl.inner(n, v) * ds(entry["boundary"])

    for entry in bc_spec.get("dirichlet") or []:
        q = entry.get("quantity") or "velocity"
        if q == "velocity":
            value = _flow_vector(entry["value"], gdim, "velocity data")
            velocity.append({**entry, "value": value, "quantity": "velocity"})
        elif q == "pressure":
            natural = natural + pressure_term(entry)
        else:
            raise ValueError(f"Dirichlet quantity {q!r} is not defined (velocity, pressure)")
    for entry in bc_spec.get("neumann") or []:
        q = entry.get("quantity")
        if q == "traction":
            g = to_ufl(_flow_vector(entry["value"], gdim, "traction data"), msh, t, params)
            natural = natural + ufl.inner(g, v) * ds(entry["boundary"])
        elif q == "pressure":
            natural = natural + pressure_term(entry)
        else:
            raise ValueError(f"Neumann quantity {q!r} is not defined (traction, pressure)")
    return velocity, natural


def _stokes_begin(case_spec, defaults, settings):
    """(cfg, pde, params) of a Stokes solve (a steady case)."""
    cfg = merged_settings(defaults, settings)
    pde = case_spec["pde"]
    if pde.get("time"):
        raise ValueError("stokes is steady: pde.time must not be given")
    return cfg, pde, pde.get("params") or {}


def _stokes_forms(trial, test, nu, f, natural, dxq):
    """(a, L) of ``(grad u, grad(nu v)) - (p, div v) - (q, div u) = (f, v) + natural``
    (exact for a variable viscosity too); ``trial`` = (u, p), ``test`` = (v, q), ``dxq``
    the measure of the data terms."""
    (u, p), (v, q) = trial, test
    a = (
        ufl.inner(ufl.grad(u), ufl.grad(nu * v)) * dxq
        - p * ufl.div(v) * ufl.dx
        - q * ufl.div(u) * ufl.dx
    )
    return a, ufl.inner(f, v) * dxq + natural


def _stokes_info(resolution, degree, track_info, ksp, null_space, shift):
    return {
        "family": "stokes",
        "resolution": resolution,
        "degree": degree,
        "velocity_degree": degree + 1,
        "pressure_degree": degree,
        "element": f"Taylor-Hood P{degree + 1}-P{degree}",
        **track_info,
        "ksp_type": ksp.getType(),
        "pc_type": ksp.getPC().getType(),
        "linear_iterations": int(ksp.getIterationNumber()),
        "pressure_null_space": null_space,
        "pressure_shift": float(shift),
    }
