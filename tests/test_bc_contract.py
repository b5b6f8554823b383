"""The boundary-condition contract of the prompts (issue #20, item 4).

Every prompt of the dataset states the form of every kind of ``bc`` entry its family
takes (also when the case's list of that kind is empty), which kinds it does not take,
and what holds where a Dirichlet part meets another part. The stated Neumann and Robin
laws are checked against the manufactured solutions the cases were built from.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import sympy as sp

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.families import FAMILIES
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent.plugins import load_plugins
from pdeagent.prompts.builder import build_prompt

DATASET = Path(__file__).resolve().parents[1] / "cases" / "pdeagent-v1.jsonl"
KINDS = ("dirichlet", "neumann", "robin", "periodic")

SUPPORTED: dict[str, frozenset[str]] = {
    **{
        f: frozenset(KINDS)
        for f in ("poisson", "helmholtz", "heat", "convection_diffusion", "wave")
    },
    **{f: frozenset({"dirichlet", "neumann", "robin"}) for f in ("reaction_diffusion", "burgers")},
    **{
        f: frozenset({"dirichlet", "neumann"})
        for f in ("biharmonic", "linear_elasticity", "stokes", "navier_stokes")
    },
}
"""The kinds of bc entry each family takes (what the DOLFINx reference solvers accept)."""

PRECEDENCE = (
    "- Where parts meet (corner points in 2-D, edges and corners in 3-D), Dirichlet values "
    "hold at the shared points: a Dirichlet condition u = g on the unknown itself holds on "
    "the closure of its parts, end points included, also where they touch a part with a "
    "Neumann or Robin condition or the natural condition; those conditions act on the "
    "rest of their parts."
)
SCHEMA = {
    "dirichlet": '- `bc.dirichlet[i]` = `{"boundary": [part, ...], "value": g, "quantity": q}`:',
    "neumann": '- `bc.neumann[i]` = `{"boundary": [part, ...], "value": g, "quantity": q}`:',
    "robin": (
        '- `bc.robin[i]` = `{"boundary": [part, ...], "alpha": alpha, "value": g}` '
        "(no `quantity`): on the listed parts, "
    ),
    "periodic": (
        '- `bc.periodic[i]` = `{"axis": "x" | "y" | "z", "boundary": part, "partner": part}`:'
    ),
}
ROBIN_WEAK_FORM = (
    "the Robin part adds the integral of alpha * u * v over the part to the bilinear form "
    "and the integral of g * v to the right-hand side"
)


def absent(kind: str) -> str:
    word = {"robin": "Robin"}.get(kind, kind)
    return f"- `bc.{kind}`: this family takes no {word} conditions; the list is empty."


@cache
def cases() -> tuple[Case, ...]:
    return tuple(load_cases(DATASET))


@cache
def host():
    return load_plugins()


def render(case: Case, track_name: str) -> str:
    track = host().get_track(track_name)
    pieces = host().hook.pdeagent_prompt_pieces(
        track=track, case_view=agent_view(case, track_name), mode="single"
    )
    return build_prompt(case, track, pieces)


def prompts():
    for case in cases():
        for track in case.supported_libraries:
            yield case, track, render(case, track)


def test_the_table_covers_every_family_and_every_kind_the_dataset_uses() -> None:
    assert set(SUPPORTED) == set(FAMILIES)
    for case in cases():
        for kind in KINDS:
            if getattr(case.case_spec.bc, kind):
                assert kind in SUPPORTED[case.family], (case.id, kind)


def test_every_prompt_states_the_form_of_every_kind_and_the_precedence() -> None:
    tracks = set()
    for case, track, prompt in prompts():
        tracks.add(track)
        where = f"{case.id} on {track}"
        assert prompt.count(PRECEDENCE) == 1, where
        for kind in KINDS:
            if kind in SUPPORTED[case.family]:
                assert prompt.count(SCHEMA[kind]) == 1, (where, kind)
                assert absent(kind) not in prompt, (where, kind)
            else:
                assert SCHEMA[kind] not in prompt and absent(kind) in prompt, (where, kind)
        if "robin" in SUPPORTED[case.family]:
            assert ROBIN_WEAK_FORM in prompt, where
    assert tracks == {"dolfinx", "firedrake", "dealii"}


def law(prompt: str, kind: str) -> str:
    """The family's law of ``kind`` as the schema lines state it (quantity u or null)."""
    line = next(ln for ln in prompt.splitlines() if ln.startswith(SCHEMA[kind]))
    if kind == "robin":
        return line[len(SCHEMA[kind]) :].split(". ")[0]
    found = re.search(r'for q = `"u"` or null: ([^;]*?)[.;]?$', line)
    assert found, line
    return found.group(1)


def test_a_robin_schema_is_stated_when_the_case_has_no_robin_entry() -> None:
    case = next(
        c
        for c in cases()
        if c.family == "heat" and c.case_spec.bc.neumann and not c.case_spec.bc.robin
    )
    prompt = render(case, "dealii")
    assert "Robin on" not in prompt
    assert law(prompt, "robin") == "kappa * du/dn + alpha * u = g"


NORMALS = {"xmin": (-1, 0, 0), "xmax": (1, 0, 0), "ymin": (0, -1, 0), "ymax": (0, 1, 0)}
NORMALS |= {"zmin": (0, 0, -1), "zmax": (0, 0, 1)}


def test_stated_neumann_and_robin_laws_hold_for_the_manufactured_solutions() -> None:
    """g = D du/dn (Neumann) and g = D du/dn + alpha u (Robin), with D and the form of the
    law read from the prompt, at points of the side where the case applies them."""
    x, y, z, t = sp.symbols("x y z t")
    checked = 0
    for case in cases():
        if case.family not in SUPPORTED or "robin" not in SUPPORTED[case.family]:
            continue
        bc = case.case_spec.bc
        exact = (case.evaluation_metadata.manufactured_solution or {}).get("u")
        if not (bc.neumann or bc.robin) or not isinstance(exact, str):
            continue
        prompt = render(case, case.supported_libraries[0])
        params = {k: v for k, v in case.case_spec.pde.params.items() if isinstance(v, int | float)}
        u = sp.sympify(exact, locals={"x": x, "y": y, "z": z, "t": t})
        entries = [("neumann", e, 0) for e in bc.neumann]
        entries += [("robin", e, e.alpha) for e in bc.robin]
        for kind, entry, alpha in entries:
            (tag,) = entry.boundary
            n = NORMALS[tag]
            dudn = sum(c * sp.diff(u, s) for c, s in zip(n, (x, y, z), strict=True))
            lhs = law(prompt, kind).split(" = g")[0].replace("du/dn", "dudn")
            names = {"dudn": dudn, "u": u, "alpha": sp.sympify(alpha), "pi": sp.pi}
            names |= {k: sp.Float(v) for k, v in params.items()}
            stated = sp.sympify(lhs, locals=names)
            g = sp.sympify(str(entry.value), locals={"x": x, "y": y, "z": z, "t": t})
            side = {"x": 0.0 if tag == "xmin" else 1.0} if tag[0] == "x" else {}
            side = side or {tag[0]: 0.0 if tag.endswith("min") else 1.0}
            for s in (0.13, 0.58, 0.91):
                point = {x: s, y: 1 - s, z: s / 2, t: 0.37} | {
                    {"x": x, "y": y, "z": z}[k]: v for k, v in side.items()
                }
                diff = float((stated - g).subs(point))
                assert abs(diff) < 1e-8 * (1 + abs(float(g.subs(point)))), (case.id, kind, tag)
            checked += 1
    assert checked >= 20
