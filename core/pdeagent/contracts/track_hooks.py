"""Library-neutral pieces of a track's stage hooks, shared by the in-tree tracks.

A track's hooks stay in its own plugin (the core calls a track's hooks only on the
plugin that registered it); these helpers are what the hook bodies of the in-tree
tracks have in common: the prompt pieces built from a guide shipped in the package and
a scaffold per family, and the order of the frontier calibration's ladder chains.
Nothing here imports a FEM library.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

from pdeagent.stages import PromptPieces


def case_family(case_view: dict[str, Any]) -> str:
    """The case's PDE family (``case_spec.pde.type``: ``poisson``, ``stokes``, ...)."""
    return case_view["case_spec"]["pde"]["type"]


def package_text(package: str, filename: str) -> str:
    """A UTF-8 text file shipped inside ``package`` (e.g. the track's API guide)."""
    return resources.files(package).joinpath(filename).read_text(encoding="utf-8")


def prompt_pieces(
    case_view: dict[str, Any],
    mode: str,
    *,
    contract: str,
    guide: str,
    scaffold: Callable[[str, str], str] | None = None,
    input_note: str | None = None,
) -> PromptPieces:
    """The prompt pieces of a case: ``contract`` (section 4), ``guide`` (section 6) and,
    in ``template`` mode, ``scaffold(family.name, family.title)`` of the case's family."""
    text = None
    if mode == "template" and scaffold is not None:
        from pdeagent.cases.families import get_family

        family = get_family(case_family(case_view))
        text = scaffold(family.name, family.title)
    return PromptPieces(contract=contract, guide=guide, scaffold=text, input_note=input_note)


def highest_degree_first(chains: Sequence[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """A ladder's chains (lowest element degree first) in the order the frontier
    calibration should try them: the highest degree first. It usually reaches the
    target soonest, and the search then skips the rungs of the other chains that are
    slower."""
    return list(chains)[::-1]
