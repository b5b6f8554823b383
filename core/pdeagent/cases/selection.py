"""Which cases a run grades: filters, a limit, and a stratified sample.

The stratified sample of N cases spreads over families first and geometries second:
families take turns (in name order), each family gives its next case, preferring a
geometry it has not given yet; within a family the order is a shuffle seeded by
``seed``, so the same arguments always select the same cases.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from pdeagent.cases.model import Case


class SelectionError(ValueError):
    """The selection is empty or names cases that do not exist on the track."""


def stratified_sample(cases: Sequence[Case], n: int, seed: int = 0) -> list[Case]:
    if n < 1:
        raise SelectionError(f"--sample must be >= 1, got {n}")
    by_family: dict[str, list[Case]] = {}
    for case in sorted(cases, key=lambda c: c.id):
        by_family.setdefault(case.family, []).append(case)
    for family, members in by_family.items():
        random.Random(f"{seed}:{family}").shuffle(members)
    seen_geometry: dict[str, set[str]] = {f: set() for f in by_family}
    chosen: list[Case] = []
    while len(chosen) < n and any(by_family.values()):
        for family in sorted(by_family):
            members = by_family[family]
            if not members or len(chosen) >= n:
                continue
            fresh = [c for c in members if c.case_spec.domain.type not in seen_geometry[family]]
            pick = (fresh or members)[0]
            members.remove(pick)
            seen_geometry[family].add(pick.case_spec.domain.type)
            chosen.append(pick)
    return chosen


def select_cases(
    cases: Iterable[Case],
    track: str,
    *,
    ids: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    geometries: Sequence[str] | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> list[Case]:
    """The run's cases in a stable order (by id); raises :class:`SelectionError`."""
    all_cases = list(cases)
    offered = [c for c in all_cases if track in c.supported_libraries]
    if ids:
        known = {c.id: c for c in all_cases}
        missing = [i for i in ids if i not in known]
        if missing:
            raise SelectionError(f"unknown case id(s): {', '.join(missing)}")
        off_track = [i for i in ids if track not in known[i].supported_libraries]
        if off_track:
            raise SelectionError(f"not offered on track {track!r}: {', '.join(off_track)}")
        wanted = set(ids)
        offered = [c for c in offered if c.id in wanted]
    if families:
        known_families = {c.family for c in offered}
        bad = sorted(set(families) - known_families)
        if bad:
            raise SelectionError(
                f"no cases of family {', '.join(bad)} on track {track!r} "
                f"(families: {', '.join(sorted(known_families))})"
            )
        offered = [c for c in offered if c.family in set(families)]
    if geometries:
        offered = [c for c in offered if c.case_spec.domain.type in set(geometries)]
    if sample is not None:
        offered = stratified_sample(offered, sample, seed)
    offered = sorted(offered, key=lambda c: c.id)
    if limit is not None:
        if limit < 1:
            raise SelectionError(f"--limit must be >= 1, got {limit}")
        offered = offered[:limit]
    if not offered:
        raise SelectionError(f"no case matches the selection on track {track!r}")
    return offered
