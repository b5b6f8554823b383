"""The dataset build (`pdeagent cases build`): design matrix, candidates, a real build on the
NumPy finite-difference sample track (sandboxed runs, no FEM library)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.cheat import cheat_errors
from pdeagent.cases.construct import Instance, case_record
from pdeagent.cases.design import DesignError, candidates, load_design, load_designs
from pdeagent.cases.families import FAMILIES
from pdeagent.cases.io import load_cases
from pdeagent.cli.main import app
from pdeagent.evaluation.reference import reference_fields
from pdeagent.geometry import GEOMETRY_TEMPLATES
from pdeagent.plugins import load_plugins

from .conftest import REPO_ROOT

DESIGN = REPO_ROOT / "cases" / "design"
FD_DESIGN = Path(__file__).parent / "data" / "design_fd"

# SPEC §2: cases per family and per track (DOLFINx / Firedrake / deal.II).
SPEC_COUNTS = {
    "poisson": (91, 91, 60),
    "helmholtz": (62, 62, 29),
    "biharmonic": (57, 46, 15),
    "linear_elasticity": (63, 61, 30),
    "heat": (50, 50, 50),
    "convection_diffusion": (84, 84, 52),
    "reaction_diffusion": (64, 64, 22),
    "stokes": (61, 52, 27),
    "navier_stokes": (28, 0, 28),
    "burgers": (43, 0, 0),
    "wave": (42, 0, 0),
}


def test_design_matches_the_spec_composition():
    designs = load_designs(DESIGN)
    assert [d.family for d in designs] == list(FAMILIES)
    for d in designs:
        total, firedrake, dealii = SPEC_COUNTS[d.family]
        assert d.count == total, d.family
        assert d.coverage == {"firedrake": firedrake, "dealii": dealii}, d.family
    assert sum(d.count for d in designs) == 645
    assert sum(d.no_exact for d in designs) == 109
    assert sum(d.coverage["firedrake"] for d in designs) == 510
    assert sum(d.coverage["dealii"] for d in designs) == 313


def test_design_uses_every_geometry_and_has_spares():
    used: set[str] = set()
    for d in load_designs(DESIGN):
        for s in d.strata:
            cands = list(candidates(d, s))
            assert len(cands) >= s.count, f"{d.family}/{s.name} has fewer candidates than count"
            used.update(c.geometry for c in cands[: s.count])
    assert used == set(GEOMETRY_TEMPLATES)


def test_candidates_are_deterministic_and_rotate_geometries():
    design = load_designs(DESIGN, ["poisson"])[0]
    smooth = design.strata[0]
    first = [c.case_id for c in candidates(design, smooth)]
    again = [c.case_id for c in candidates(design, smooth)]
    assert first == again
    assert len(set(first)) == len(first)
    # every listed geometry appears before any geometry repeats
    n = len(smooth.geometry)
    assert {c.geometry for c in list(candidates(design, smooth))[:n]} == set(smooth.geometry)


def test_design_errors_name_the_file_and_key(tmp_path):
    bad = tmp_path / "poisson.toml"
    bad.write_text(
        'family = "poisson"\ncount = 3\n[[stratum]]\nname = "a"\nmethod = "mms"\ncount = 2\n'
        'geometry = ["unit_square"]\nsolution = ["trig"]\n',
        encoding="utf-8",
    )
    with pytest.raises(DesignError, match="sum to 2, the family count is 3"):
        load_design(bad)
    bad.write_text(
        'family = "poisson"\ncount = 1\n[[stratum]]\nname = "a"\nmethod = "reference"\n'
        'count = 1\ngeometry = ["unit_square"]\nsolution = ["unit_source"]\n',
        encoding="utf-8",
    )
    with pytest.raises(DesignError, match="needs a reference table"):
        load_design(bad)
    bad.write_text('family = "nope"\ncount = 1\n', encoding="utf-8")
    with pytest.raises(DesignError, match="unknown family 'nope'"):
        load_design(bad)


def test_manufactured_case_is_leak_free_and_consistent():
    """u* = g + phi w: the Dirichlet data equals u* on the boundary only and the stated
    forcing is the operator applied to u* (checked by finite differences here)."""
    inst = Instance("poisson", "s", 0, "mms", "unit_square", "trig", "dirichlet", {"kappa": 2.0})
    record = case_record(inst, dataset_version="1.0.0")
    assert record["dataset_version"] == "1.0.0"
    names = [d["name"] for d in record["case_spec"]["numerical_decisions"]]
    assert names == ["mesh_resolution", "element_degree", "linear_solver"]
    assert "manufactured_solution" not in json.dumps(record["case_spec"])
    from pdeagent.cases.expressions import compile_expression

    u = compile_expression(record["evaluation_metadata"]["manufactured_solution"]["u"], 2)
    g = compile_expression(record["case_spec"]["bc"]["dirichlet"][0]["value"], 2)
    f = compile_expression(record["case_spec"]["pde"]["forcing"]["f"], 2)
    s = np.linspace(0, 1, 11)
    for x, y in [(s, 0 * s), (s, 0 * s + 1), (0 * s, s), (0 * s + 1, s)]:
        assert np.allclose(u(x, y), g(x, y), atol=1e-12)
    x, y, h = 0.37, 0.61, 1e-3
    lap = (u(x + h, y) + u(x - h, y) + u(x, y + h) + u(x, y - h) - 4 * u(x, y)) / h**2
    assert -2.0 * lap == pytest.approx(float(f(x, y)), rel=1e-5)
    assert abs(float(u(x, y)) - float(g(x, y))) > 0.1  # differs inside


def test_pdeagent_reference_source_of_the_sample_track():
    host = load_plugins(strict=True)
    track = host.get_track("numpy_fd")
    view = {"case_spec": {}, "target_library": "numpy_fd"}
    ref = host.hook.pdeagent_reference_source(
        track=track, case_view=view, reference_config=None, fidelity="reference"
    )
    mid = host.hook.pdeagent_reference_source(
        track=track, case_view=view, reference_config=None, fidelity="intermediate"
    )
    assert "REFINE = 4  #" in ref and "REFINE = 2  #" in mid
    explicit = host.hook.pdeagent_reference_source(
        track=track,
        case_view=view,
        reference_config={"numpy_fd": {"refine": 8}},
        fidelity="reference",
    )
    assert "REFINE = 8  #" in explicit
    with pytest.raises(ValueError, match="unknown fidelity"):
        host.hook.pdeagent_reference_source(
            track=track, case_view=view, reference_config=None, fidelity="best"
        )
    other = type(track)("other", "X", "python", "s.py")
    assert (
        host.hook.pdeagent_reference_source(
            track=other, case_view=view, reference_config=None, fidelity="reference"
        )
        is None
    )


@pytest.fixture
def cli(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return cli


@pytest.mark.sandbox
def test_build_with_the_sample_track(cli, tmp_path):
    out = tmp_path / "ds" / "dataset.jsonl"
    build_dir = tmp_path / "build"
    args = [
        "cases",
        "build",
        "--design",
        str(FD_DESIGN),
        "--track",
        "numpy_fd",
        "--output",
        str(out),
        "--build-dir",
        str(build_dir),
        "--jobs",
        "2",
        "--json",
    ]
    result = cli.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["cases"] == 5 and summary["shortfall"] == {}
    refused = dict(summary["rejections"])
    assert refused and all(cid.startswith("poisson_gear_smooth_mms_") for cid in refused)
    assert all("construction" in why for why in refused.values())
    cases = load_cases(out, known_libraries={"numpy_fd"})
    assert [c.case_spec.domain.type for c in cases] == ["unit_square"] * 5
    mms = [c for c in cases if c.evaluation_metadata.construction_method != "reference_numerical"]
    ref = [c for c in cases if c.evaluation_metadata.construction_method == "reference_numerical"]
    assert len(mms) == 3 and len(ref) == 2
    for case in cases:
        th = case.evaluation_metadata.thresholds["numpy_fd"]
        assert case.supported_libraries == ["numpy_fd"]
        assert th.calibrated_on["cores"] >= 1 and th.t_base > 0
        assert th.tau_acc == pytest.approx(max(10 * th.e_base, 1e-6))
        reference = reference_fields(case, out.parent)
        cheat = cheat_errors(case, reference)
        assert cheat and min(cheat.values()) > th.tau_acc  # the cheat fails every case
    for case in mms:
        # 5-point scheme on the 65-point grid (h = 1/64): second-order error
        assert 1e-6 < case.evaluation_metadata.thresholds["numpy_fd"].e_base < 1e-2
    for case in ref:
        arrays = np.load(out.parent / case.evaluation_metadata.reference_path)
        assert arrays["u"].shape == (65, 65)
        trial = json.loads((build_dir / "trials" / f"{case.id}.json").read_text())
        gaps = trial["convergence"]
        # refinement 1, 2, 4 of a second-order scheme: successive gaps shrink ~4x
        ratio = gaps["gap_calibration_intermediate"] / gaps["gap_intermediate_reference"]
        assert 3.0 < ratio < 5.0, gaps
        assert trial["accepted"] is True
    card = (out.parent / "README.md").read_text(encoding="utf-8")
    assert "pdeagent dataset v1.0.0" in card

    # resumable and deterministic: the same build dir reproduces the file byte for byte,
    # and only a deleted trial is run again
    first = out.read_bytes()
    trials = sorted((build_dir / "trials").glob("*.json"))
    stamps = {p.name: p.stat().st_mtime_ns for p in trials}
    trials = [p for p in trials if json.loads(p.read_text())["accepted"]]
    trials[0].unlink()
    again = cli.invoke(app, args)
    assert again.exit_code == 0, again.output
    changed = [
        p.name
        for p in sorted((build_dir / "trials").glob("*.json"))
        if p.stat().st_mtime_ns != stamps[p.name]
    ]
    assert changed == [trials[0].name]
    rebuilt = out.read_text(encoding="utf-8").splitlines()
    before = first.decode().splitlines()
    assert [json.loads(x)["id"] for x in rebuilt] == [json.loads(x)["id"] for x in before]
    same = [a == b for a, b in zip(rebuilt, before, strict=True)]
    assert same.count(False) <= 1  # only the re-measured case's thresholds may differ
    assert agent_view(cases[0], "numpy_fd")["case_spec"] == json.loads(before[0])["case_spec"]
