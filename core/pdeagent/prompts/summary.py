"""Section 1 of a prompt: a natural-language summary generated from the agent view.

Only the agent-visible ``case_spec`` dict is read (SPEC §3, §4); the result is a
deterministic function of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pdeagent.cases.families import FAMILIES

QUANTITY_LABELS: dict[str, str] = {
    "u": "u",
    "laplacian_u": "the Laplacian Δu",
    "normal_derivative": "the normal derivative ∂u/∂n",
    "displacement": "the displacement",
    "traction": "the traction",
    "velocity": "the velocity",
    "pressure": "the pressure",
}
"""How ``BoundaryCondition.quantity`` values are named in prose."""

_KIND_TITLES = {"dirichlet": "Dirichlet", "neumann": "Neumann", "robin": "Robin"}


def fmt_num(value: Any) -> str:
    """Format a number (or pass an expression string through) deterministically.

    Integers and integral floats print without a fractional part; other floats
    use the shortest repr that round-trips.
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)


def boundary_parts(parts: str | Iterable[str]) -> str:
    """``["left", "top"]`` -> ``"`left`, `top`"``; ``all`` means the whole boundary."""
    if isinstance(parts, str):
        parts = [parts]
    names = list(parts)
    if "all" in names:
        return "the whole boundary"
    return ", ".join(f"`{p}`" for p in names)


def describe_domain(domain: Mapping[str, Any]) -> str:
    """One sentence for the domain, from the geometry template's ``describe()``."""
    from pdeagent.geometry import get_geometry

    sentence = get_geometry(domain["type"], dict(domain.get("geometry_params") or {})).describe()
    sentence = sentence.strip()
    return sentence if sentence.endswith(".") else sentence + "."


def describe_boundary_conditions(bc: Mapping[str, Any]) -> list[str]:
    """One phrase per stated condition, in the order kind (dirichlet, neumann, robin,
    periodic) and then as listed in the case."""
    phrases: list[str] = []
    for kind in ("dirichlet", "neumann", "robin"):
        for cond in bc.get(kind) or []:
            quantity = cond.get("quantity")
            what = f" condition for {QUANTITY_LABELS.get(quantity, quantity)}" if quantity else ""
            phrases.append(f"{_KIND_TITLES[kind]}{what} on {boundary_parts(cond['boundary'])}")
    for cond in bc.get("periodic") or []:
        phrases.append(
            f"periodic: `{cond['boundary']}` is identified with `{cond['partner']}` "
            f"(shift along {cond['axis']})"
        )
    return phrases


def _interval(lo: Any, hi: Any) -> str:
    return f"[{fmt_num(lo)}, {fmt_num(hi)}]"


def describe_grid(grid: Mapping[str, Any]) -> str:
    bbox = list(grid["bbox"])
    sizes = [fmt_num(grid["nx"]), fmt_num(grid["ny"])]
    boxes = [_interval(bbox[0], bbox[1]), _interval(bbox[2], bbox[3])]
    if grid.get("nz") is not None:
        sizes.append(fmt_num(grid["nz"]))
        boxes.append(_interval(bbox[4], bbox[5]))
    return f"a {' × '.join(sizes)} Cartesian grid over {' × '.join(boxes)}"


def describe_output(output: Mapping[str, Any]) -> str:
    """The scored arrays in words: the field (its components or the scalar) and, for a
    flow case that scores it, the pressure."""
    components = output.get("components")
    if components:
        names = ", ".join(f"`{c}`" for c in components)
        text = f"the components {names} of the vector field `{output['field']}`"
    else:
        text = f"the scalar field `{output['field']}`"
    pressure = output.get("pressure")
    if pressure:
        text += f" and the pressure `{pressure['array']}`"
    return text


def summarize_case(case_spec: Mapping[str, Any]) -> str:
    """The task summary (prompt section 1) for an agent-visible ``case_spec`` dict."""
    pde = case_spec["pde"]
    family_name = pde["type"]
    family = FAMILIES.get(family_name)
    title = family.title if family else family_name.replace("_", " ")
    params = pde.get("params") or {}
    grid = case_spec["eval_grid"]
    dim = 3 if grid.get("nz") is not None else 2
    time = pde.get("time")

    if time:
        kind = (
            f"a transient {dim}-D {title} problem on the time interval "
            f"t ∈ {_interval(time['t0'], time['t_end'])}"
        )
    else:
        kind = f"a steady {dim}-D {title} problem"
    options = sorted(k for k in (family.options if family else {}) if k in params)
    if options:
        kind += " with " + ", ".join(f"{k} = `{params[k]}`" for k in options)

    sentences = [f"Solve {kind}.", f"Domain: {describe_domain(case_spec['domain'])}"]
    phrases = describe_boundary_conditions(case_spec.get("bc") or {})
    if phrases:
        sentences.append("Boundary conditions: " + "; ".join(phrases) + ".")
    ic = case_spec.get("ic")
    if ic:
        fields = ", ".join(f"`{k}`" for k in sorted(ic))
        if time:
            sentences.append(f"Initial data are given for {fields} at t = {fmt_num(time['t0'])}.")
        else:
            sentences.append(f"An initial guess is given for {fields}.")
    when = f" at the final time t = {fmt_num(time['t_end'])}" if time else ""
    sentences.append(
        f"Output: {describe_output(case_spec['output'])}{when}, sampled on {describe_grid(grid)}."
    )
    return " ".join(sentences)
