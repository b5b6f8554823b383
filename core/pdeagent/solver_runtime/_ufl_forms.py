"""The families' weak forms for the solver programs of the UFL tracks (runtime code).

Shared by the tracks whose library speaks UFL (DOLFINx, Firedrake) and inlined into
their single-file solver programs with ``_ufl_data`` (see
``pdeagent.contracts.python_bundle``): standard library, numpy and ufl only. The forms are
written against what the track supplies: its meshed template ``domain``
(``domain.msh``, ``domain.ds(tags)``), the trial and test functions of its spaces,
and fields it builds itself (e.g. cell diameters); the track keeps the mesh, the
spaces, the Dirichlet conditions, the solve and the sampling.
"""

import math

import numpy as np
import ufl

from ._ufl_data import (
    boundary_terms,
    check_scalar_bc,
    depends_on_t,
    parameter,
    single_source,
    time_interval,
    to_numpy,
    to_ufl,
    ufl_constant,
)

# ------------------------------------------------------------------------------ biharmonic

_BH_QUANTITIES = ("u", "laplacian_u", "normal_derivative")


def _bh_forcing(pde, msh, params):
    forcing = pde.get("forcing") or {}
    if not forcing:
        return ufl_constant(msh, 0.0)
    if len(forcing) == 1:
        return to_ufl(next(iter(forcing.values())), msh, params=params)
    if "f" not in forcing:
        raise ValueError(f"biharmonic: several forcing entries {sorted(forcing)} but none named f")
    extra = sorted(k for k in forcing if k != "f")
    raise ValueError(
        f"biharmonic: forcing entries {extra} have no place in laplace(laplace(u)) = f"
    )


def _bh_conditions(bc_spec):
    """The stated conditions as (quantity, entry) pairs; raises on kinds it cannot do."""
    if bc_spec.get("periodic"):
        raise NotImplementedError("periodic boundary conditions are not supported by this solver")
    if bc_spec.get("robin"):
        raise ValueError("biharmonic: Robin conditions are not defined for this family")
    conditions = []
    for kind in ("dirichlet", "neumann"):
        for entry in bc_spec.get(kind) or []:
            q = entry.get("quantity") or "u"
            if q not in _BH_QUANTITIES:
                raise ValueError(f"biharmonic: unknown boundary quantity {q!r} in bc.{kind}")
            if kind == "neumann" and q == "u":
                raise ValueError(
                    "biharmonic: a neumann condition must state quantity laplacian_u or "
                    "normal_derivative"
                )
            conditions.append((q, entry))
    return conditions


def _bh_check_counts(count, allreduce, tag_ids):
    """Raise unless every exterior facet has exactly one u condition and exactly one
    second condition. ``count[q]``: per exterior facet, how many conditions on q;
    ``allreduce`` sums an int over the processes."""
    second = count["laplacian_u"] + count["normal_derivative"]
    problems = {
        "without a condition on u": int((count["u"] == 0).sum()),
        "with several conditions on u": int((count["u"] > 1).sum()),
        "without laplacian_u or normal_derivative": int((second == 0).sum()),
        "with several laplacian_u/normal_derivative conditions": int((second > 1).sum()),
    }
    problems = {k: allreduce(v) for k, v in problems.items()}
    bad = {k: v for k, v in problems.items() if v}
    if bad:
        detail = "; ".join(f"{v} boundary facets {k}" for k, v in bad.items())
        raise ValueError(
            "biharmonic needs on every boundary part exactly one condition on u and exactly one "
            f"on laplacian_u or normal_derivative: {detail} (tags: {sorted(tag_ids)})"
        )


def _bh_negated(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return -float(value)
    return f"-({value})"


def _bh_method(case_spec, cfg):
    """(conditions, method, degree, resolution) of a biharmonic case under the settings
    ``cfg``: the stated conditions as (quantity, entry) pairs and the discretisation."""
    if case_spec["pde"].get("time"):
        raise ValueError("biharmonic is a steady family: pde.time must not be given")
    conditions = _bh_conditions(case_spec["bc"])
    clamped = any(q == "normal_derivative" for q, _ in conditions)
    method = cfg["method"]
    if method == "auto":
        method = "cip" if clamped else "mixed"
    if method not in ("mixed", "cip"):
        raise ValueError(f"biharmonic: unknown method {method!r} (auto, mixed, cip)")
    if method == "mixed" and clamped:
        raise ValueError(
            "biharmonic: method 'mixed' (splitting w = -laplace(u)) needs laplacian_u on the "
            "whole boundary; use method 'cip' for normal_derivative (clamped) conditions"
        )
    suffix = "_cip" if method == "cip" else ""
    degree = int(cfg["degree" + suffix])
    resolution = cfg["resolution" + suffix]
    if case_spec["domain"]["type"] == "unit_cube":
        resolution = cfg["resolution_3d"]
    return conditions, method, degree, resolution


def _bh_cip_forms(u, v, domain, conditions, f, eta, h, params):
    """The C0 interior penalty forms (a, L) with penalty ``eta / h`` (``h``: a DG0 field of
    cell diameters); u conditions are left to the track's strong Dirichlet data."""
    msh = domain.msh
    n = ufl.FacetNormal(msh)
    h_avg = 0.5 * (h("+") + h("-"))

    def lap(z):
        return ufl.div(ufl.grad(z))

    def dn(z):
        return ufl.dot(ufl.grad(z), n)

    def jump_dn(z):
        return ufl.jump(ufl.grad(z), n)

    a = (
        lap(u) * lap(v) * ufl.dx
        - (ufl.avg(lap(u)) * jump_dn(v) + ufl.avg(lap(v)) * jump_dn(u)) * ufl.dS
        + eta / h_avg * jump_dn(u) * jump_dn(v) * ufl.dS
    )
    L = f * v * ufl.dx
    for q, entry in conditions:
        if q == "u":
            continue
        g = to_ufl(entry["value"], msh, params=params)
        ds = domain.ds(entry["boundary"])
        if q == "laplacian_u":
            L = L + g * dn(v) * ds
        else:  # normal_derivative: weak, symmetric (Nitsche) imposition
            a = a + (-(lap(u) * dn(v) + lap(v) * dn(u)) + eta / h * dn(u) * dn(v)) * ds
            L = L + (-lap(v) * g + eta / h * g * dn(v)) * ds
    return a, L


# -------------------------------------------------------------- scalar transport, stepping

# (c0, c1, c2, theta) of du/dt ~ (c0 u + c1 u_n + c2 u_nm1) / dt and the theta-weighting
_STEP_COEFFICIENTS = {
    "bdf2": (1.5, -2.0, 0.5, 1.0),
    "crank_nicolson": (1.0, -1.0, 0.0, 0.5),
    "backward_euler": (1.0, -1.0, 0.0, 1.0),
}


def _step_coefficients(scheme):
    """(start, main) coefficients of a scheme: bdf2 starts with one Crank-Nicolson step."""
    main = _STEP_COEFFICIENTS[scheme]
    return (_STEP_COEFFICIENTS["crank_nicolson"] if scheme == "bdf2" else main), main


def _time_steps(family, case_spec, cfg, interval):
    """(t0, n_steps, dt) of a transient case (which must give ic.u): constant steps
    dt = (t_end - t0) / n, n = ``n_steps`` or ceil((t_end - t0) / ``dt``)."""
    t0, t_end = interval
    if not t_end > t0:
        raise ValueError(f"{family}: empty time interval {interval}")
    if "u" not in (case_spec.get("ic") or {}):
        raise KeyError(f"{family}: a transient case must give ic.u")
    if cfg["n_steps"] is not None:
        n_steps = int(cfg["n_steps"])
    else:
        n_steps = math.ceil((t_end - t0) / float(cfg["dt"]) - 1e-9)
    n_steps = max(n_steps, 1)
    return t0, n_steps, (t_end - t0) / n_steps


def _scalar_resolution(case_spec, cfg):
    """``resolution_3d`` on a 3-D domain, else ``resolution``."""
    is_3d = len(case_spec["domain"].get("bounds") or []) == 3 or (
        case_spec["domain"]["type"] == "unit_cube"
    )
    return cfg["resolution_3d"] if is_3d else cfg["resolution"]


# -------------------------------------------------------------------- convection-diffusion

# SUPG adds sum_K tau_K (r(u), beta . grad v)_K with the full (consistent) residual r
# of the discrete equation (time difference, both time levels of the theta scheme,
# -div(epsilon grad u) elementwise) and
#
#     tau_s = h_K / (2 |beta|) * (coth(Pe_K) - 1 / Pe_K)   (-> h_K^2 / (12 epsilon) as Pe -> 0)
#     tau   = tau_s                                         (steady)
#     tau   = 1 / sqrt(tau_s^-2 + (2 / dt)^2)               (transient)
#
# (the transient value is a smooth min(tau_s, dt / 2), as in Tezduyar's definition).

_CD_SCHEMES = ("bdf2", "crank_nicolson", "backward_euler")
_CD_STABILIZATIONS = ("auto", "supg", "none")


def _cd_check(case_spec, cfg):
    params = case_spec["pde"].get("params") or {}
    check_scalar_bc("convection_diffusion", case_spec["bc"])
    for name in ("epsilon", "beta"):
        if name not in params:
            raise KeyError(f"convection_diffusion: case_spec.pde.params has no {name!r}")
    if cfg["stabilization"] not in _CD_STABILIZATIONS:
        raise ValueError(
            f"unknown stabilization {cfg['stabilization']!r}; one of {_CD_STABILIZATIONS}"
        )
    if cfg["scheme"] not in _CD_SCHEMES:
        raise ValueError(f"unknown time scheme {cfg['scheme']!r}; one of {_CD_SCHEMES}")


def _cd_beta(params, dim):
    """The case's beta (checked: ``dim`` components) and whether it is the number 0 in
    every component (pure diffusion, nothing to stabilise)."""
    beta_value = params["beta"]
    if not isinstance(beta_value, (list, tuple)) or len(beta_value) != dim:
        raise ValueError(
            f"convection_diffusion: pde.params.beta must be a list of {dim} numbers or "
            f"expressions, got {beta_value!r}"
        )
    no_convection = all(
        isinstance(b, (int, float)) and not isinstance(b, bool) and b == 0 for b in beta_value
    )
    return beta_value, no_convection


def _cd_tau_steady(beta, eps, hK):
    """h/(2|beta|) (coth(Pe) - 1/Pe); series h^2/(12 eps) (1 - Pe^2/15) for small Pe."""
    bnorm = ufl.sqrt(ufl.dot(beta, beta))
    pe = bnorm * hK / (2.0 * eps)
    e2 = ufl.exp(-2.0 * pe)
    coth = (1.0 + e2) / (1.0 - e2)
    large = hK / (2.0 * bnorm) * (coth - 1.0 / pe)
    small = hK**2 / (12.0 * eps) * (1.0 - pe**2 / 15.0)
    return ufl.conditional(ufl.gt(pe, 1e-2), large, small), pe


def _cd_use_supg(stabilization, no_convection, eps_min, pe_max):
    """Whether SUPG is on, from the smallest epsilon and largest cell Peclet number."""
    if not eps_min > 0.0:
        raise ValueError(f"convection_diffusion: epsilon must be positive (min {eps_min:g})")
    return not no_convection and (
        stabilization == "supg" or (stabilization == "auto" and pe_max > 1.0)
    )


def _cd_time_dependent_matrix(params, beta_value, bc_spec):
    return any(
        depends_on_t(item)
        for item in [params["epsilon"], beta_value]
        + [e["alpha"] for e in bc_spec.get("robin") or []]
    )


def _cd_operator(w, v, dx, e, b, ff):
    """Cell part of the weak operator eps grad w . grad v + (b . grad w) v - f v."""
    return (e * ufl.inner(ufl.grad(w), ufl.grad(v)) + ufl.dot(b, ufl.grad(w)) * v - ff * v) * dx


def _cd_strong(w, e, b, ff):
    return -ufl.div(e * ufl.grad(w)) + ufl.dot(b, ufl.grad(w)) - ff


def _cd_steady_system(u, v, dx, new, tau_s):
    """(a, L) of the steady problem; ``new`` = (eps, beta, f, robin lhs, natural rhs);
    ``tau_s`` the SUPG parameter or None (no SUPG)."""
    eps, beta, f, robin_new, natural_new = new
    F = _cd_operator(u, v, dx, eps, beta, f) + robin_new - natural_new
    if tau_s is not None:
        F += tau_s * _cd_strong(u, eps, beta, f) * ufl.dot(beta, ufl.grad(v)) * dx
    return ufl.system(F)


def _cd_transient_system(u, v, dx, u_n, u_nm1, k, coefficients, new, old, tau_s):
    """(a, L) of one time step: ``coefficients`` = constants (c0, c1, c2, theta), ``new`` /
    ``old`` = (eps, beta, f, robin lhs, natural rhs) at the new / old time, ``k`` the step
    constant, ``tau_s`` the steady SUPG parameter or None (no SUPG)."""
    c0, c1, c2, theta = coefficients
    eps, beta, f, robin_new, natural_new = new
    eps_old, beta_old, f_old, robin_old, natural_old = old
    dudt = (c0 * u + c1 * u_n + c2 * u_nm1) / k
    F = (
        dudt * v * dx
        + theta * (_cd_operator(u, v, dx, eps, beta, f) + robin_new - natural_new)
        + (1.0 - theta)
        * (_cd_operator(u_n, v, dx, eps_old, beta_old, f_old) + robin_old - natural_old)
    )
    if tau_s is not None:
        tau = 1.0 / ufl.sqrt(tau_s ** (-2) + (2.0 / k) ** 2)
        residual = (
            dudt
            + theta * _cd_strong(u, eps, beta, f)
            + (1.0 - theta) * _cd_strong(u_n, eps_old, beta_old, f_old)
        )
        F += tau * residual * ufl.dot(beta, ufl.grad(v)) * dx
    return ufl.system(F)


# ---------------------------------------------------------------------- reaction-diffusion

_RD_LAWS = ("linear", "cubic", "allen_cahn", "logistic")
_RD_SCHEMES = ("bdf2", "crank_nicolson", "backward_euler")


def _rd_reaction(law, sigma):
    """R(w) for the stated law."""
    if law == "linear":
        return lambda w: sigma * w
    if law == "cubic":
        return lambda w: sigma * w**3
    if law == "allen_cahn":
        return lambda w: sigma * (w**3 - w)
    if law == "logistic":
        return lambda w: -sigma * w * (1.0 - w)
    raise ValueError(
        f"reaction_diffusion: unknown pde.params.reaction_law {law!r}; one of {_RD_LAWS}"
    )


def _rd_check(case_spec, cfg):
    """The case's reaction law, after checking the case and the time scheme."""
    params = case_spec["pde"].get("params") or {}
    bc_spec = case_spec["bc"]
    if bc_spec.get("periodic"):
        raise NotImplementedError(
            "periodic boundary conditions are not supported by this reaction_diffusion solver"
        )
    check_scalar_bc("reaction_diffusion", bc_spec)
    law = params.get("reaction_law")
    if law not in _RD_LAWS:
        raise ValueError(
            f"reaction_diffusion: pde.params.reaction_law must be one of {_RD_LAWS}, got {law!r}"
        )
    if "epsilon" not in params:
        raise KeyError("reaction_diffusion: case_spec.pde.params has no 'epsilon'")
    if cfg["scheme"] not in _RD_SCHEMES:
        raise ValueError(f"unknown time scheme {cfg['scheme']!r}; one of {_RD_SCHEMES}")
    return law


def _rd_coefficients(case_spec, law, msh, t):
    """(epsilon, R, f) at the time (constant) ``t``."""
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    eps = parameter(params, "epsilon", msh, t)
    sigma = parameter(params, "sigma", msh, t)  # stated by every case (no default)
    return (
        eps,
        _rd_reaction(law, sigma),
        to_ufl(single_source("reaction_diffusion", pde), msh, t, params),
    )


def _rd_residual(z, v, dx, domain, case_spec, t, coefficients, robin_u):
    """The steady residual form eps grad z . grad v + R(z) v - f v with the boundary
    terms at time ``t``; ``robin_u``: the unknown of the Robin terms."""
    eps, reaction, f = coefficients
    params = case_spec["pde"].get("params") or {}
    lhs, rhs = boundary_terms(v, domain, case_spec["bc"], t=t, params=params, u=robin_u)
    return (eps * ufl.inner(ufl.grad(z), ufl.grad(v)) + reaction(z) * v - f * v) * dx + lhs - rhs


def _rd_time_dependent_matrix(params, bc_spec):
    return any(
        depends_on_t(x)
        for x in [params["epsilon"], params.get("sigma")]
        + [e["alpha"] for e in bc_spec.get("robin") or []]
    )


# ------------------------------------------------------------------------------------ heat

_HEAT_SCHEMES = {
    # theta, coefficients (a0, a1, a2) of (a0 u^{n+1} + a1 u^n + a2 u^{n-1}) / dt
    "backward_euler": (1.0, (1.0, -1.0, 0.0)),
    "crank_nicolson": (0.5, (1.0, -1.0, 0.0)),
    "bdf2": (1.0, (1.5, -2.0, 0.5)),
}


def transient_time_steps(family, cfg, t0, t_end):
    """(n_steps, dt): constant steps ending exactly at t_end, n = ``n_steps`` or
    ceil((t_end - t0) / ``dt``)."""
    span = t_end - t0
    if not span > 0:
        raise ValueError(f"{family}: empty time interval [{t0}, {t_end}]")
    if cfg["n_steps"] is not None:
        n = int(cfg["n_steps"])
    else:
        dt = float(cfg["dt"])
        if not dt > 0:
            raise ValueError(f"{family}: dt must be positive, got {dt}")
        n = max(1, math.ceil(span / dt - 1e-9))
    if n < 1:
        raise ValueError(f"{family}: n_steps must be positive, got {n}")
    return n, span / n


def with_quadrature(form, degree):
    """``form`` with every integral (cell and facet) at the given quadrature degree
    (None: unchanged)."""
    if degree is None:
        return form
    return ufl.Form(
        [
            itg.reconstruct(metadata={**itg.metadata(), "quadrature_degree": degree})
            for itg in form.integrals()
        ]
    )


def _heat_setup(case_spec, cfg):
    """(t0, t_end, n_steps, dt) of a heat case, after checking the case and the scheme."""
    scheme = cfg["scheme"]
    if scheme not in _HEAT_SCHEMES:
        raise ValueError(f"heat: unknown scheme {scheme!r}; known: {sorted(_HEAT_SCHEMES)}")
    if cfg["bdf2_startup"] not in ("backward_euler", "crank_nicolson"):
        raise ValueError(
            f"heat: unknown bdf2_startup {cfg['bdf2_startup']!r}; known: "
            "['backward_euler', 'crank_nicolson']"
        )
    params = case_spec["pde"].get("params") or {}
    check_scalar_bc("heat", case_spec["bc"])
    interval = time_interval(case_spec)
    if interval is None:
        raise ValueError("heat: the case has no pde.time (the heat equation is transient)")
    t0, t_end = interval
    if "u" not in (case_spec.get("ic") or {}):
        raise KeyError("heat: the case_spec has no initial condition ic.u")
    if "kappa" not in params:
        raise KeyError("heat: case_spec.pde.params has no 'kappa' (diffusion coefficient)")
    n_steps, dt = transient_time_steps("heat", cfg, t0, t_end)
    single_source("heat", case_spec["pde"])  # the equation has one source term
    return t0, t_end, n_steps, dt


def _heat_step_forms(u, v, dx, domain, case_spec, levels, method, h, q):
    """(a, L) of one step of ``method`` (a key of _HEAT_SCHEMES) with step constant ``h``,
    all integrals at quadrature degree ``q``; ``levels`` = (u_n, u_nm1, t_old, t_new)."""
    u_n, u_nm1, t_old, t_new = levels
    msh = domain.msh
    pde, bc_spec = case_spec["pde"], case_spec["bc"]
    params = pde.get("params") or {}
    f_value = single_source("heat", pde)

    def operator(t, w):  # kappa(t) (grad w, grad v) + Robin alpha(t) (w, v)
        kappa = parameter(params, "kappa", msh, t)
        robin, _ = boundary_terms(v, domain, bc_spec, t=t, params=params, u=w)
        return kappa * ufl.inner(ufl.grad(w), ufl.grad(v)) * dx + robin

    def load(t):  # (f(t), v) + Neumann / Robin data at t
        f = to_ufl(f_value, msh, t, params)
        _, natural = boundary_terms(v, domain, bc_spec, t=t, params=params, u=u)
        return f * v * dx + natural

    theta, (a0, a1, a2) = _HEAT_SCHEMES[method]
    a = a0 * u * v * dx + theta * h * operator(t_new, u)
    rhs = -a1 * u_n
    if a2:
        rhs = rhs - a2 * u_nm1
    L = rhs * v * dx + theta * h * load(t_new)
    if theta != 1.0:
        L = L - (1.0 - theta) * h * (operator(t_old, u_n) - load(t_old))
    return with_quadrature(a, q), with_quadrature(L, q)


# ------------------------------------------------------------------------ linear elasticity

_EL_MODELS = ("plane_strain", "plane_stress", "3d")
_EL_DIRICHLET_QUANTITIES = (None, "u", "displacement")
_EL_NEUMANN_QUANTITIES = (None, "u", "traction")
_EL_PARAM_SETS = (("E", "nu"), ("young_modulus", "poisson_ratio"), ("lambda", "mu"))


def _el_param_set(params):
    for pair in _EL_PARAM_SETS:
        if pair[0] in params and pair[1] in params:
            return pair
    raise KeyError(
        "linear_elasticity: pde.params must state E and nu, young_modulus and poisson_ratio, "
        "or lambda and mu"
    )


def _el_case(case_spec):
    """(params, model, is_3d) of a linear elasticity case, after checking it is steady,
    has no periodic or Robin conditions and its model fits the domain."""
    pde, bc_spec = case_spec["pde"], case_spec["bc"]
    params = pde.get("params") or {}
    if pde.get("time"):
        raise ValueError("linear_elasticity is steady: pde.time must be absent")
    if bc_spec.get("periodic"):
        raise NotImplementedError("periodic boundary conditions are not supported by this solver")
    if bc_spec.get("robin"):
        raise ValueError("linear_elasticity: Robin conditions are not defined for this family")
    model = params.get("model")
    if model not in _EL_MODELS:
        raise ValueError(
            f"linear_elasticity: pde.params.model must be one of {_EL_MODELS}, got {model!r}"
        )
    is_3d = case_spec["domain"]["type"] == "unit_cube"
    if (model == "3d") != is_3d:
        raise ValueError(
            f"linear_elasticity: model {model!r} does not fit the "
            f"{case_spec['domain']['type']} domain"
        )
    return params, model, is_3d


def _el_lame(params, msh, model, sample):
    """(mu, lam_eff) as UFL, and the range of Poisson's ratio (of the 3-D law) sampled by
    the track's ``sample(name, expr)`` (numpy values of parameter ``name``, UFL ``expr``)
    on the mesh (used to choose the formulation and to reject invalid data)."""
    first, second = _el_param_set(params)
    a = parameter(params, first, msh)
    b = parameter(params, second, msh)
    na, nb = sample(first, a), sample(second, b)
    if first == "lambda":
        lam, mu = a, b
        if (nb <= 0).any():
            raise ValueError("linear_elasticity: mu must be positive")
        nu_values = na / (2.0 * (na + nb))
        if (na + 2.0 * nb / 3.0 <= 0).any():
            raise ValueError("linear_elasticity: the bulk modulus lambda + 2 mu / 3 must be > 0")
    else:
        young, nu = a, b
        if (na <= 0).any():
            raise ValueError(f"linear_elasticity: {first} must be positive")
        if (nb <= -1.0).any() or (nb >= 0.5).any():
            raise ValueError(f"linear_elasticity: {second} must lie in (-1, 0.5)")
        nu_values = nb
        mu = young / (2.0 * (1.0 + nu))
        lam = young * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    if model == "plane_stress":
        lam = 2.0 * lam * mu / (lam + 2.0 * mu)
    return mu, lam, float(nu_values.min()), float(nu_values.max())


def _el_formulation(cfg, model, degree, nu_min, nu_max):
    """ "displacement" or "mixed" (Taylor-Hood u-p, near the incompressible limit)."""
    formulation = cfg["formulation"]
    if formulation == "auto":
        near_limit = model != "plane_stress" and nu_max >= cfg["mixed_nu_threshold"]
        formulation = "mixed" if near_limit else "displacement"
    if formulation not in ("displacement", "mixed"):
        raise ValueError(f"unknown formulation {formulation!r} (auto, displacement or mixed)")
    if formulation == "mixed":
        if degree < 2:
            raise ValueError("the mixed (Taylor-Hood) formulation needs degree >= 2")
        if nu_min <= 0.0:
            raise ValueError("the mixed formulation needs lambda > 0 (nu > 0)")
    return formulation


def _el_eps(w):
    return ufl.sym(ufl.grad(w))


def _el_bilinear(formulation, u, v, mu, lam, dim, p=None, q=None):
    """The bilinear form: displacement 2 mu (eps u, eps v) + lam (div u, div v), or the
    mixed one with the pressure p (test q)."""
    if formulation == "mixed":
        return (
            2.0 * mu * ufl.inner(_el_eps(u), _el_eps(v)) * ufl.dx
            + p * ufl.div(v) * ufl.dx
            + q * ufl.div(u) * ufl.dx
            - (1.0 / lam) * p * q * ufl.dx
        )
    sigma = 2.0 * mu * _el_eps(u) + lam * ufl.tr(_el_eps(u)) * ufl.Identity(dim)
    return ufl.inner(sigma, _el_eps(v)) * ufl.dx


# ------------------------------------------------------------------------------- helmholtz

_HELMHOLTZ_SAMPLES = {2: 101, 3: 31}  # points per axis for sampling k over the bbox


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
        values = np.asarray(to_numpy(k_value, params)(pts), dtype=float)
        if not np.all(np.isfinite(values)):
            raise ValueError("pde.params.k is not finite everywhere on the domain's bounding box")
        k_max = float(np.max(np.abs(values)))
    if not math.isfinite(k_max):
        raise ValueError(f"pde.params.k is not finite: {k_value!r}")
    return k_max


def wavelength_resolution(k_max, length, degree, points_per_wavelength):
    """Cells across ``length`` needed by the wavelength/pollution rule: ``points_per_wavelength``
    dofs per wavelength, times n_waves ** (1 / (2 degree)) against the pollution error."""
    n_waves = k_max * length / (2.0 * math.pi)
    if n_waves <= 0.0:
        return 1
    ppw = points_per_wavelength * max(1.0, n_waves) ** (1.0 / (2.0 * degree))
    return max(1, math.ceil(ppw * n_waves / degree))


def _helmholtz_source(pde):
    """The source f of a Helmholtz case (0 without forcing), after checking it states k
    and no forcing term but f."""
    params = pde.get("params") or {}
    if "k" not in params:
        raise KeyError("case_spec.pde.params has no 'k' (wave number)")
    forcing = pde.get("forcing") or {}
    if len(forcing) > 1 and "f" not in forcing:
        raise KeyError("with several forcing entries one must be named 'f'")
    extra = sorted(key for key in forcing if key != "f")
    if extra:
        raise NotImplementedError(f"helmholtz: additional forcing terms {extra} are not defined")
    return next(iter(forcing.values())) if forcing else 0.0


def _helmholtz_resolution(case_spec, cfg, degree):
    """(resolution, k_max): the settings' resolution, raised to what the wavelength of the
    largest |k| on the bounding box needs."""
    params = case_spec["pde"].get("params") or {}
    bbox = case_spec["domain"].get("bounds")
    if not bbox:
        raise KeyError("case_spec.domain.bounds is required")
    length = max(float(hi) - float(lo) for lo, hi in bbox)
    k_max = _helmholtz_k_max(params["k"], params, bbox)
    needed = wavelength_resolution(k_max, length, degree, float(cfg["points_per_wavelength"]))
    return max(int(cfg["resolution"]), needed), k_max


def _helmholtz_forms(u, v, domain, case_spec, f_value):
    """(a, L) of -laplace(u) - k^2 u = f with the Neumann/Robin terms."""
    msh = domain.msh
    params = case_spec["pde"].get("params") or {}
    k = parameter(params, "k", msh)
    f = to_ufl(f_value, msh, params=params)
    robin_lhs, natural_rhs = boundary_terms(v, domain, case_spec["bc"], params=params, u=u)
    a = (ufl.inner(ufl.grad(u), ufl.grad(v)) - k * k * u * v) * ufl.dx + robin_lhs
    L = f * v * ufl.dx + natural_rhs
    return a, L


# --------------------------------------------------------------------------------- poisson


def _poisson_forms(u, v, domain, case_spec):
    """(a, L) of -div(kappa grad u) = f with the Neumann/Robin terms."""
    msh = domain.msh
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    kappa = parameter(params, "kappa", msh)
    f = to_ufl((pde.get("forcing") or {}).get("f", 0.0), msh, params=params)
    robin_lhs, natural_rhs = boundary_terms(v, domain, case_spec["bc"], params=params, u=u)
    a = kappa * ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx + robin_lhs
    L = f * v * ufl.dx + natural_rhs
    return a, L
