"""PDE parameters and reaction laws of an upstream record."""

from __future__ import annotations

from typing import Any

from pdeagent.cases.upstream.oracle import _ORACLE_FILES, BURGERS_NU, FLOW_NU, ImportNote, _evidence
from pdeagent.cases.upstream.reading import _dict, _expression, _number, _short, _Skip


def _coefficient(pde: dict[str, Any], name: str) -> float | str | None:
    coeffs = _dict(pde.get("coefficients"), "oracle_config.pde.coefficients")
    spec = coeffs.get(name, _dict(pde.get("pde_params"), "pde_params").get(name))
    if spec is None:
        return None
    where = f"oracle_config.pde.coefficients.{name}"
    if isinstance(spec, dict):
        kind = spec.get("type")
        if kind == "constant":
            spec = spec.get("value")
        elif kind == "expr":
            spec = spec.get("expr")
        else:
            raise _Skip(f"{where}: unknown coefficient type {_short(kind)}")
    return _param_value(spec, where)


def _param_value(value: Any, where: str) -> float | str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value, where)
    return _expression(value, where)


def _params(
    family: str,
    pde: dict[str, Any],
    dim: int,
    notes: list[str],
    defaults: list[ImportNote],
) -> dict[str, Any]:
    raw = _dict(pde.get("pde_params"), "oracle_config.pde.pde_params")

    def need(name: str, default: float | None = None) -> float | str:
        value = _coefficient(pde, name)
        if value is None:
            if default is None:
                raise _Skip(f"parameter {name!r} is not given")
            if family in _ORACLE_FILES:
                defaults.append(
                    ImportNote(
                        f"case_spec.pde.params.{name}",
                        default,
                        f"the published {family} oracle uses {name} = {default} when the "
                        f"record gives none ({_evidence(family)})",
                    )
                )
            else:  # pragma: no cover - only the families above have a default here
                notes.append(f"{name} not given: stated the upstream oracle's default {default}")
            return default
        return value

    if family in ("poisson", "heat"):
        return {"kappa": need("kappa")}
    if family == "helmholtz":
        return {"k": need("k")}
    if family == "biharmonic":
        return {}
    if family == "wave":
        return {"c": need("c")}
    if family in ("stokes", "navier_stokes"):
        return {"nu": need("nu", FLOW_NU)}
    if family == "burgers":
        if dim != 2:
            raise _Skip("burgers: the upstream convection u*(u_x+u_y) is only verified in 2-D")
        notes.append("stated the upstream convective term u*(u_x+u_y) as b = [1, 1]")
        return {"nu": need("nu", BURGERS_NU), "b": [1.0, 1.0]}
    if family == "convection_diffusion":
        beta = raw.get("beta")
        if beta is None:
            raise _Skip("parameter 'beta' is not given")
        where = "oracle_config.pde.pde_params.beta"
        if not isinstance(beta, list) or len(beta) != dim:
            raise _Skip(f"{where} must list {dim} components")
        return {
            "epsilon": need("epsilon"),
            "beta": [_param_value(b, f"{where}[{i}]") for i, b in enumerate(beta)],
        }
    if family == "reaction_diffusion":
        eps = raw.get("epsilon", raw.get("diffusion"))
        if eps is None:
            notes.append("epsilon not given: stated the upstream oracle's default 0.1")
            eps = 0.1
        law, sigma = _reaction(raw.get("reaction", {"type": "linear", "alpha": 0.0}))
        notes.append(f"stated the reaction law {law} with sigma = {sigma}")
        return {
            "epsilon": _param_value(eps, "oracle_config.pde.pde_params.epsilon"),
            "sigma": sigma,
            "reaction_law": law,
        }
    if family == "linear_elasticity":
        model = "3d" if dim == 3 else "plane_strain"
        notes.append(f"stated model {model} (the upstream oracle's lambda formula)")
        if "lambda" in raw and "mu" in raw:
            where = "oracle_config.pde.pde_params"
            return {
                "lambda": _number(raw["lambda"], f"{where}.lambda"),
                "mu": _number(raw["mu"], f"{where}.mu"),
                "model": model,
            }
        return {"E": need("E", 1.0), "nu": need("nu", 0.3), "model": model}
    raise _Skip(f"unknown family {family!r}")  # pragma: no cover - families are checked first


def _reaction(spec: Any) -> tuple[str, float]:
    """Our (reaction_law, sigma) for the upstream reaction term R(u) (same sign convention:
    ``du/dt - epsilon laplace(u) + R(u) = f``)."""
    spec = _dict(spec, "oracle_config.pde.pde_params.reaction", required=True)
    kind = str(spec.get("type", "linear")).lower()
    where = "oracle_config.pde.pde_params.reaction"
    if kind == "linear":
        return "linear", _number(spec.get("alpha", 0.0), f"{where}.alpha")
    if kind in ("cubic", "poly3"):
        alpha = _number(spec.get("alpha", 0.0), f"{where}.alpha")
        beta = _number(spec.get("beta", 1.0), f"{where}.beta")
        if alpha == 0.0:
            return "cubic", beta
        if alpha == -beta:
            return "allen_cahn", beta
        raise _Skip(
            f"reaction alpha*u + beta*u**3 with alpha={alpha}, beta={beta} is none of our "
            "reaction laws (linear, cubic, allen_cahn, logistic)"
        )
    if kind in ("allen_cahn", "allen-cahn"):
        return "allen_cahn", _number(spec.get("lambda", spec.get("lam", 1.0)), f"{where}.lambda")
    if kind in ("logistic", "fisher_kpp", "fisher-kpp"):
        # upstream R(u) = rho*u*(1-u); ours R(u) = -sigma*u*(1-u)
        return "logistic", -_number(spec.get("rho", 1.0), f"{where}.rho")
    raise _Skip(f"unknown reaction type {_short(kind)}")
