"""The families' weak forms for the solver programs of the UFL tracks (runtime code).

Shared by the tracks whose library speaks UFL (DOLFINx, Firedrake) and inlined into
their single-file solver programs with ``_ufl_data`` (see
``pdeagent.contracts.python_bundle``): standard library and ufl only. The forms are
written against what the track supplies: its meshed template ``domain``
(``domain.msh``, ``domain.ds(tags)``), the trial and test functions of its spaces,
and fields it builds itself (e.g. cell diameters); the track keeps the mesh, the
spaces, the Dirichlet conditions, the solve and the sampling.
"""

import ufl

from ._ufl_data import to_ufl, ufl_constant

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
