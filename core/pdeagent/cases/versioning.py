"""Dataset versions (``major.minor.patch``) and the change rule between two datasets.

- adding cases, or adding a track's thresholds to a case that had none for that track
  (``pdeagent cases add-track``), is a **minor** change (every existing score stays
  comparable);
- changing or removing a case's reference (manufactured solution, reference arrays or
  reference configuration), evaluation grid, thresholds or output contract is a
  **major** change (scores are no longer comparable);
- any other change to an existing case (a tag, the wording of numerical decisions,
  supported tracks) is a **patch**.

Old majors stay loadable: each major is its own file (``pdeagent-v1.jsonl``,
``pdeagent-v2.jsonl``, ...), and :func:`check_bump` refuses a new file whose
version does not reflect its changes.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from attrs import define, field

from pdeagent.cases.model import Case, converter

Bump = Literal["none", "patch", "minor", "major"]
_ORDER: dict[str, int] = {"none": 0, "patch": 1, "minor": 2, "major": 3}
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


class VersionError(ValueError):
    pass


def parse_version(text: str | None) -> tuple[int, int, int]:
    match = _VERSION.match(text or "")
    if not match:
        raise VersionError(f"dataset version {text!r} is not major.minor.patch")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def bump_of(old: str, new: str) -> Bump:
    """Which component changed from ``old`` to ``new`` (raises when ``new`` is older)."""
    a, b = parse_version(old), parse_version(new)
    if b < a:
        raise VersionError(f"version {new} is older than {old}")
    if b[0] > a[0]:
        return "major"
    if b[1] > a[1]:
        return "minor"
    if b[2] > a[2]:
        return "patch"
    return "none"


def _digest(obj: object) -> str:
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _scoring_identity(case: Case, dataset_dir: Path | None) -> dict[str, object]:
    """Everything that decides a score: the problem, the grid, the output contract, the
    reference and the thresholds."""
    data = converter.unstructure(case)
    meta = data["evaluation_metadata"]
    ref_digest = None
    if case.evaluation_metadata.reference_path and dataset_dir is not None:
        path = dataset_dir / case.evaluation_metadata.reference_path
        ref_digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
    spec = dict(data["case_spec"])
    spec.pop("numerical_decisions", None)
    return {
        "case_spec": spec,
        "evaluation_config": data["evaluation_config"],
        "manufactured_solution": meta["manufactured_solution"],
        "reference_config": meta["reference_config"],
        "reference_arrays": ref_digest,
    }


def _thresholds(case: Case) -> dict[str, str]:
    """Each track's thresholds (without the machine record) by digest."""
    data = converter.unstructure(case.evaluation_metadata.thresholds)
    return {
        track: _digest({k: v for k, v in th.items() if k != "calibrated_on"})
        for track, th in data.items()
    }


@define
class DatasetDiff:
    added: list[str] = field(factory=list)
    removed: list[str] = field(factory=list)
    major: list[str] = field(factory=list)
    """Cases whose reference, grid, thresholds, problem or output contract changed."""
    thresholds_added: list[str] = field(factory=list)
    """Cases that gained thresholds for a track (and changed in no scoring way)."""
    patch: list[str] = field(factory=list)
    """Cases changed in other ways only."""

    @property
    def required(self) -> Bump:
        if self.removed or self.major:
            return "major"
        if self.added or self.thresholds_added:
            return "minor"
        if self.patch:
            return "patch"
        return "none"


def diff(
    old: Iterable[Case],
    new: Iterable[Case],
    *,
    old_dir: Path | None = None,
    new_dir: Path | None = None,
) -> DatasetDiff:
    before = {c.id: c for c in old}
    after = {c.id: c for c in new}
    out = DatasetDiff(
        added=sorted(set(after) - set(before)), removed=sorted(set(before) - set(after))
    )
    for cid in sorted(set(before) & set(after)):
        a, b = before[cid], after[cid]
        th_a, th_b = _thresholds(a), _thresholds(b)
        kept = all(th_b.get(track) == digest for track, digest in th_a.items())
        if not kept or _digest(_scoring_identity(a, old_dir)) != _digest(
            _scoring_identity(b, new_dir)
        ):
            out.major.append(cid)
            continue
        if set(th_b) - set(th_a):
            out.thresholds_added.append(cid)
            continue
        ua, ub = converter.unstructure(a), converter.unstructure(b)
        ua.pop("dataset_version"), ub.pop("dataset_version")
        if _digest(ua) != _digest(ub):
            out.patch.append(cid)
    return out


def explain(
    old: Iterable[Case],
    new: Iterable[Case],
    *,
    old_dir: Path | None = None,
    new_dir: Path | None = None,
) -> dict[str, dict[str, int]]:
    """What changed between two datasets, counted: ``"scoring"`` counts the cases per
    changed part of what decides a score (``case_spec.output``, ``manufactured_solution``,
    ``reference_arrays``, ...); ``"track <name>"`` counts the cases per change of that
    track's thresholds: ``kept (protocol P, R)``, ``replaced: protocol P, R -> protocol
    Q, S``, ``added (...)``, ``withheld (no longer offered)``, ``removed``."""
    before = {c.id: c for c in old}
    after = {c.id: c for c in new}
    out: dict[str, Counter[str]] = {"scoring": Counter()}
    for cid in sorted(set(before) & set(after)):
        a, b = before[cid], after[cid]
        ia, ib = _scoring_identity(a, old_dir), _scoring_identity(b, new_dir)
        for key in ia:
            if key == "case_spec":
                spec_a, spec_b = ia[key], ib[key]
                assert isinstance(spec_a, dict) and isinstance(spec_b, dict)
                for part in sorted(set(spec_a) | set(spec_b)):
                    if spec_a.get(part) != spec_b.get(part):
                        out["scoring"][f"case_spec.{part}"] += 1
            elif ia[key] != ib[key]:
                out["scoring"][key] += 1
        ta, tb = a.evaluation_metadata.thresholds, b.evaluation_metadata.thresholds
        da, db = _thresholds(a), _thresholds(b)
        for track in sorted(set(ta) | set(tb)):
            counts = out.setdefault(f"track {track}", Counter())
            if track in ta and track in tb:
                was = f"protocol {ta[track].protocol}, {ta[track].rule}"
                now = f"protocol {tb[track].protocol}, {tb[track].rule}"
                counts[
                    f"kept ({was})" if da[track] == db[track] else f"replaced: {was} -> {now}"
                ] += 1
            elif track in tb:
                counts[f"added (protocol {tb[track].protocol}, {tb[track].rule})"] += 1
            elif track not in b.supported_libraries:
                counts["withheld (no longer offered)"] += 1
            else:
                counts["removed (offered without thresholds)"] += 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def dataset_version(cases: Iterable[Case]) -> str:
    """The one version every record of a dataset carries."""
    versions = {c.dataset_version for c in cases}
    if len(versions) != 1 or None in versions:
        raise VersionError(
            f"a dataset must carry one dataset_version, found {sorted(map(str, versions))}"
        )
    return versions.pop()  # type: ignore[return-value]


def check_bump(
    old: list[Case],
    new: list[Case],
    *,
    old_dir: Path | None = None,
    new_dir: Path | None = None,
) -> tuple[DatasetDiff, Bump]:
    """Raise :class:`VersionError` when ``new``'s version bump is smaller than its changes
    require; returns the diff and the bump made."""
    changes = diff(old, new, old_dir=old_dir, new_dir=new_dir)
    made = bump_of(dataset_version(old), dataset_version(new))
    need = changes.required
    if _ORDER[made] < _ORDER[need]:
        raise VersionError(
            f"the changes need a {need} version bump (added {len(changes.added)}, removed "
            f"{len(changes.removed)}, scoring changed {len(changes.major)}, thresholds added "
            f"{len(changes.thresholds_added)}, other "
            f"{len(changes.patch)}), but {dataset_version(old)} -> {dataset_version(new)} "
            f"is a {made} bump"
        )
    return changes, made
