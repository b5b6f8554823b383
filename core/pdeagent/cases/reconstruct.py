"""Re-derive existing cases from the design under the current construction rules.

A major dataset version (e.g. 2.0.0: flow cases score the pressure too) changes what
:mod:`pdeagent.cases.construct` makes of some design instances while keeping every case
id. :func:`reconstruct` finds each case's design instance by its id (an id names the
family, stratum and candidate index, so it maps to exactly one candidate), constructs
the record again, and takes from it the parts construction decides: the agent-visible
``case_spec`` and the exact solution (``manufactured_solution``). Everything the build
decided later is kept (supported tracks, tags, reference path and configuration), and
the thresholds are dropped: they belong to the old case and are measured again (``cases
frontier``). A case whose record comes out the same keeps its content unchanged, so the
result doubles as a determinism check of the construction.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from attrs import define, field

from pdeagent.cases.construct import Instance, case_record
from pdeagent.cases.design import candidates, load_designs

DERIVED_PARTS: tuple[str, ...] = ("case_spec", "evaluation_metadata.manufactured_solution")
"""The parts of a record that construction decides and :func:`reconstruct` replaces."""


class ReconstructionError(ValueError):
    """A case cannot be mapped to a design instance or constructed again."""


@define
class Reconstructed:
    """One case after :func:`reconstruct`."""

    record: dict[str, Any]
    """The new record (no thresholds, the new dataset version)."""
    changed: list[str] = field(factory=list)
    """The derived parts (:data:`DERIVED_PARTS`) whose content changed; each changed
    ``case_spec`` key is listed as ``case_spec.<key>``."""


def _instances(design_dir: Path, families: Iterable[str], wanted: set[str]) -> dict[str, Instance]:
    found: dict[str, Instance] = {}
    for design in load_designs(design_dir, sorted(set(families))):
        for stratum in design.strata:
            prefix = f"{design.family}_"
            if not any(cid.startswith(prefix) and f"_{stratum.name}_" in cid for cid in wanted):
                continue
            for inst in candidates(design, stratum):
                if inst.case_id in wanted:
                    found[inst.case_id] = inst
    return found


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    old_spec, new_spec = old.get("case_spec", {}), new.get("case_spec", {})
    for key in sorted(set(old_spec) | set(new_spec)):
        if old_spec.get(key) != new_spec.get(key):
            out.append(f"case_spec.{key}")
    old_exact = old.get("evaluation_metadata", {}).get("manufactured_solution")
    new_exact = new.get("evaluation_metadata", {}).get("manufactured_solution")
    if old_exact != new_exact:
        out.append("evaluation_metadata.manufactured_solution")
    return out


def reconstruct(
    records: list[dict[str, Any]],
    design_dir: Path,
    *,
    dataset_version: str,
    families: Iterable[str] | None = None,
    reference_dir: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Reconstructed]:
    """Every record, in order, with its derived parts constructed again (only the cases
    of ``families`` when given; the others are copied) and its thresholds dropped.

    ``reference_dir`` (relative to the records' directory, e.g. ``reference_studies``):
    a no-exact case's ``reference_path`` becomes ``<reference_dir>/<id>.npz``, the arrays
    its reference study stores (:mod:`pdeagent.cases.reference_study`); a changed output
    needs new reference arrays, so the old path is kept only without ``reference_dir``.

    Raises :class:`ReconstructionError` naming the case when an id maps to no design
    candidate or its construction fails: a case is never silently left as it was.
    """
    wanted = None if families is None else set(families)
    selected = [
        r for r in records
        if wanted is None or r["pde_classification"]["equation_family"] in wanted
    ]  # fmt: skip
    by_family = {r["pde_classification"]["equation_family"] for r in selected}
    instances = _instances(design_dir, by_family, {r["id"] for r in selected})
    selected_ids = {r["id"] for r in selected}
    out: list[Reconstructed] = []
    for n, old in enumerate(records, 1):
        new = copy.deepcopy(old)
        new["dataset_version"] = dataset_version
        meta = new["evaluation_metadata"]
        meta["thresholds"] = {}
        meta["calibration_config"] = None
        changed: list[str] = []
        if reference_dir is not None and meta["construction_method"] == "reference_numerical":
            meta["reference_path"] = f"{reference_dir.rstrip('/')}/{old['id']}.npz"
        if old["id"] in selected_ids:
            inst = instances.get(old["id"])
            if inst is None:
                raise ReconstructionError(
                    f"case {old['id']}: no candidate of the design in {design_dir} has this id"
                )
            try:
                made = case_record(inst, dataset_version=dataset_version)
            except ValueError as exc:
                raise ReconstructionError(f"case {old['id']}: {exc}") from exc
            changed = _changed(old, made)
            new["case_spec"] = made["case_spec"]
            meta["manufactured_solution"] = made["evaluation_metadata"]["manufactured_solution"]
        out.append(Reconstructed(new, changed))
        if progress is not None:
            progress(n, len(records))
    return out
