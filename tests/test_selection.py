"""Case selection for runs, on the shipped dataset."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pdeagent.cases.io import load_cases
from pdeagent.cases.selection import SelectionError, select_cases

DATASET = Path(__file__).resolve().parents[1] / "cases" / "pdeagent-v1.jsonl"


@pytest.fixture(scope="module")
def cases():
    return load_cases(DATASET)


def test_stratified_sample_covers_every_family_then_spreads_geometries(cases):
    picked = select_cases(cases, "dolfinx", sample=12)
    families = Counter(c.family for c in picked)
    assert len(picked) == 12 and len(families) == 11  # one of each, then a second
    assert max(families.values()) == 2
    assert picked == select_cases(cases, "dolfinx", sample=12)  # deterministic
    assert picked != select_cases(cases, "dolfinx", sample=12, seed=1)
    poisson = select_cases(cases, "dolfinx", families=["poisson"], sample=14)
    assert len({c.case_spec.domain.type for c in poisson}) == 14  # 14 geometries first


def test_sample_respects_the_track(cases):
    dealii = select_cases(cases, "dealii", sample=20)
    assert all("dealii" in c.supported_libraries for c in dealii)
    assert {c.family for c in dealii}.isdisjoint({"burgers", "wave"})


def test_filters_and_limit(cases):
    heat = select_cases(cases, "dolfinx", families=["heat"], geometries=["annulus"])
    assert heat and all(c.family == "heat" and c.case_spec.domain.type == "annulus" for c in heat)
    assert [c.id for c in select_cases(cases, "dolfinx", limit=3)] == sorted(c.id for c in cases)[
        :3
    ]
    one = select_cases(cases, "dolfinx", ids=["poisson_star_smooth_mms_008"])
    assert [c.id for c in one] == ["poisson_star_smooth_mms_008"]


def test_bad_selections_say_why(cases):
    with pytest.raises(SelectionError, match="unknown case id"):
        select_cases(cases, "dolfinx", ids=["nope"])
    with pytest.raises(SelectionError, match="family navier"):
        select_cases(cases, "dolfinx", families=["navier"])
    with pytest.raises(SelectionError, match="not offered on track 'dealii'"):
        burgers = next(c for c in cases if c.family == "burgers")
        select_cases(cases, "dealii", ids=[burgers.id])
    with pytest.raises(SelectionError, match="no case matches"):
        select_cases(cases, "dolfinx", geometries=["klein_bottle"])
    with pytest.raises(SelectionError, match="--sample"):
        select_cases(cases, "dolfinx", sample=0)
