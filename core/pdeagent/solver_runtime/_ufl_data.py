"""Case data as UFL for the solver programs of the UFL tracks (runtime code).

Shared by the tracks whose library speaks UFL (DOLFINx, Firedrake) and inlined into
their single-file solver programs (see ``pdeagent.contracts.python_bundle``):
standard library, numpy and ufl only. It holds the settings merge, the translation of
case expressions (numbers, strings, lists of them) into UFL (and into numpy functions
of points), the checks of a case's data and the Neumann/Robin boundary terms. The one
thing a track supplies is how its library makes a constant on a mesh: its ``_common``
calls :func:`use_constant` once.
"""

import math
import re

import numpy as np
import ufl

_ufl_constant_maker = []


def use_constant(make):
    """Register the track's ``make(msh, value)``: a UFL constant of its library."""
    _ufl_constant_maker[:] = [make]


def ufl_constant(msh, value):
    """``value`` (a number) as the track's UFL constant on ``msh``."""
    if not _ufl_constant_maker:
        raise RuntimeError("no UFL constant maker: the track's _common must call use_constant()")
    return _ufl_constant_maker[0](msh, value)


def merged_settings(defaults, settings):
    """Defaults overridden by ``settings`` (unknown keys are an error: typos must not pass)."""
    merged = dict(defaults)
    for key, value in (settings or {}).items():
        if key not in defaults:
            raise KeyError(f"unknown solver setting {key!r}; known: {sorted(defaults)}")
        merged[key] = value
    return merged


# ----------------------------------------------------------------------------- expressions


def _numeric_params(params):
    out = {}
    for key, value in (params or {}).items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[key] = float(value)
    return out


def _ufl_namespace(msh, t, params):
    x = ufl.SpatialCoordinate(msh)
    names = {
        "sin": ufl.sin,
        "cos": ufl.cos,
        "tan": ufl.tan,
        "exp": ufl.exp,
        "log": ufl.ln,
        "sqrt": ufl.sqrt,
        "abs": abs,
        "sinh": ufl.sinh,
        "cosh": ufl.cosh,
        "tanh": ufl.tanh,
        "atan": ufl.atan,
        "atan2": ufl.atan2,
        "asin": ufl.asin,
        "acos": ufl.acos,
        "sign": ufl.sign,
        "Min": ufl.min_value,
        "Max": ufl.max_value,
        "Heaviside": lambda a: ufl.conditional(ufl.ge(a, 0), 1.0, 0.0),
        "pi": math.pi,
        "E": math.e,
        "x": x[0],
        "y": x[1],
        "t": 0.0 if t is None else t,
    }
    if x.ufl_shape[0] == 3:
        names["z"] = x[2]
    names.update(_numeric_params(params))
    return names


def to_ufl(value, msh, t=None, params=None):
    """A case expression (number, string, or list of them) as a UFL expression.

    ``t`` should be a constant of the track's library for time-dependent data, so
    forms are compiled once and only the constant changes between steps.
    """
    if isinstance(value, bool):
        raise TypeError(f"expected a number or an expression, got {value!r}")
    if isinstance(value, (list, tuple)):
        return ufl.as_vector([_eval_ufl(v, msh, t, params) for v in value])
    return _eval_ufl(value, msh, t, params)


def _eval_ufl(text, msh, t, params):
    if isinstance(text, (int, float)):
        return ufl_constant(msh, text)
    result = eval(str(text), {"__builtins__": {}}, _ufl_namespace(msh, t, params))
    if isinstance(result, (int, float)):
        return ufl_constant(msh, result)
    return result


def _numpy_namespace(X, t, params):
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
        "t": t,
    }
    names.update(_numeric_params(params))
    return names


def to_numpy(value, params=None):
    """A case expression as ``f(X, t=0.0)`` for points X of shape (3, N)."""

    def evaluate(X, t=0.0):
        n = X.shape[1]
        items = value if isinstance(value, (list, tuple)) else [value]
        rows = []
        for item in items:
            if isinstance(item, (int, float)):
                rows.append(np.full(n, float(item)))
                continue
            out = eval(str(item), {"__builtins__": {}}, _numpy_namespace(X, t, params))
            rows.append(np.broadcast_to(np.asarray(out, dtype=float), (n,)).copy())
        return rows[0] if not isinstance(value, (list, tuple)) else np.vstack(rows)

    return evaluate


def parameter(params, name, msh, t=None):
    """A case parameter as UFL (numbers become constants; strings are expressions)."""
    if name not in params:
        raise KeyError(f"case_spec.pde.params has no {name!r}")
    return to_ufl(params[name], msh, t, params)


_T_TOKEN = re.compile(r"(?<![A-Za-z0-9_.])t(?![A-Za-z0-9_])")


def depends_on_t(value):
    """Whether case data (an expression or a list of them) mentions the time t."""
    if isinstance(value, (list, tuple)):
        return any(depends_on_t(v) for v in value)
    return isinstance(value, str) and _T_TOKEN.search(value) is not None


# ------------------------------------------------------------------------------ case checks


def single_source(family, pde):
    """The source term f of a scalar equation: 0 without forcing; a single entry is f
    whatever its name; several entries are an error (the equation has one source)."""
    forcing = pde.get("forcing") or {}
    if not forcing:
        return 0.0
    if len(forcing) == 1:
        (value,) = forcing.values()
        return value
    raise ValueError(
        f"{family}: unsupported forcing entries {sorted(forcing)}; the equation has one "
        "source term f"
    )


def check_scalar_bc(family, bc_spec):
    """Dirichlet/Neumann entries of a scalar equation may only prescribe u."""
    for kind in ("dirichlet", "neumann"):
        for entry in bc_spec.get(kind) or []:
            if entry.get("quantity") not in (None, "u"):
                raise ValueError(
                    f"{family}: a {kind} condition on quantity "
                    f"{entry.get('quantity')!r} is not defined (only u)"
                )


def check_steady(family, pde):
    if pde.get("time"):
        raise ValueError(f"the {family} problem is steady: pde.time must not be given")


def time_interval(case_spec):
    time_spec = case_spec["pde"].get("time")
    if not time_spec:
        return None
    return float(time_spec["t0"]), float(time_spec["t_end"])


# ----------------------------------------------------------------------- boundary conditions


def boundary_terms(v, domain, bc_spec, *, t=None, params=None, quantity=None, u=None):
    """Linear-form terms of Neumann data ``D du/dn = g`` and, with ``u`` given, the
    bilinear Robin terms ``D du/dn + alpha u = g``: returns (lhs, rhs) UFL forms or 0.

    ``domain`` is the track's meshed template: ``domain.msh`` and ``domain.ds(tags)``."""
    msh = domain.msh
    lhs, rhs = 0, 0
    for entry in bc_spec.get("neumann", []) or []:
        q = entry.get("quantity")
        if quantity is not None and q not in (None, quantity):
            continue
        g = to_ufl(entry["value"], msh, t, params)
        rhs = rhs + ufl.inner(g, v) * domain.ds(entry["boundary"])
    for entry in bc_spec.get("robin", []) or []:
        if u is None:
            raise ValueError("Robin conditions need the trial function")
        alpha = to_ufl(entry["alpha"], msh, t, params)
        g = to_ufl(entry["value"], msh, t, params)
        ds = domain.ds(entry["boundary"])
        lhs = lhs + alpha * ufl.inner(u, v) * ds
        rhs = rhs + ufl.inner(g, v) * ds
    return lhs, rhs


DIRECT = {"ksp_type": "preonly", "pc_type": "lu", "pc_factor_mat_solver_type": "mumps"}
