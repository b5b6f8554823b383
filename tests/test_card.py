"""The dataset card (pdeagent.cases.card) on a synthetic dataset and build directory."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pdeagent.cases.card import (
    NO_BUILD_NOTE,
    card_markdown,
    family_of_id,
    kind_of_id,
    load_trials,
    refusal_class,
    write_card,
)
from pdeagent.cases.io import CaseFileError, load_cases

EXAMPLES = Path(__file__).resolve().parents[1] / "cases" / "examples.jsonl"

MACHINE_A = {"cpu": "CPU A", "cores": 8, "machine": "x86_64", "library": "DOLFINx 0.11.0"}
MACHINE_B = {"cpu": "CPU B", "cores": 4, "machine": "x86_64", "library": "DOLFINx 0.11.0"}
MACHINE_F = {"cpu": "CPU A", "cores": 8, "machine": "x86_64", "library": "Firedrake 2025"}

# e_base / t_base of the dolfinx track, one per case in dataset order (10 cases).
E_BASE = [1e-8, 5e-8, 1e-4, 2e-4, 3e-4, 4e-4, 5e-4, 6e-4, 7e-4, 1e-3]
T_BASE = [2.0 * (i + 1) for i in range(10)]

REF_GAPS = {
    "helmholtz_unit_square_gaussian_ref_001": (0.001, 0.01, 0.011),
    "helmholtz_unit_square_gaussian_ref_005": (0.003, 0.02, 0.023),
    "reaction_diffusion_unit_square_allen_cahn_ref_001": (0.002, 0.004, 0.006),
}


def _thresholds(record: dict[str, Any], e_base: float, t_base: float, where: dict) -> dict:
    cfg = record["evaluation_config"]
    return {
        "e_base": e_base,
        "t_base": t_base,
        "tau_acc": max(cfg["alpha_acc"] * e_base, cfg["tau_min"]),
        "tau_time": cfg["alpha_time"] * t_base,
        "calibrated_on": where,
    }


def _records() -> list[dict[str, Any]]:
    base = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    by_id = {r["id"]: r for r in base}
    # A Robin case and a periodic case, derived from the plain Poisson example.
    robin = copy.deepcopy(by_id["poisson_unit_square_mms_001"])
    robin["id"] = "poisson_unit_square_robin_mms_002"
    robin["case_spec"]["bc"] = {
        "dirichlet": [{"boundary": ["xmin", "xmax"], "value": "x*y"}],
        "robin": [{"boundary": ["ymin", "ymax"], "alpha": 1.0, "value": "0"}],
    }
    periodic = copy.deepcopy(by_id["poisson_unit_square_mms_001"])
    periodic["id"] = "poisson_periodic_square_x_mms_003"
    periodic["case_spec"]["domain"]["type"] = "periodic_square"
    periodic["case_spec"]["bc"] = {
        "dirichlet": [{"boundary": ["ymin", "ymax"], "value": "x*y"}],
        "periodic": [{"axis": "x", "boundary": "xmin", "partner": "xmax"}],
    }
    periodic["supported_libraries"] = ["dolfinx", "firedrake"]
    records = [*base, robin, periodic]
    assert len(records) == 10
    for i, record in enumerate(records):
        record["dataset_version"] = "1.2.3"
        where = {**(MACHINE_A if i < 7 else MACHINE_B), "date": f"2026-01-{i + 1:02d}"}
        record["evaluation_metadata"]["thresholds"] = {
            "dolfinx": _thresholds(record, E_BASE[i], T_BASE[i], where)
        }
        assert "dolfinx" in record["supported_libraries"]
    # A second track on two cases.
    for case_id, e_base in (
        ("stokes_unit_square_mms_001", 0.002),
        ("helmholtz_unit_square_gaussian_ref_001", 0.004),
    ):
        record = next(r for r in records if r["id"] == case_id)
        assert "firedrake" in record["supported_libraries"]
        where = {**MACHINE_F, "date": "2026-02-01"}
        record["evaluation_metadata"]["thresholds"]["firedrake"] = _thresholds(
            record, e_base, 2.0, where
        )
    return records


def _trial(case_id: str, accepted: bool, reason: str = "", seconds: float = 2.0, **kw: Any):
    gaps = REF_GAPS.get(case_id)
    data = {
        "id": case_id,
        "key": f"key-{case_id}",
        "accepted": accepted,
        "reason": reason,
        "thresholds": None,
        "cheat": {},
        "convergence": (
            dict(
                zip(
                    (
                        "gap_intermediate_reference",
                        "gap_calibration_intermediate",
                        "gap_calibration_reference",
                    ),
                    gaps,
                    strict=True,
                )
            )
            if gaps
            else None
        ),
        "seconds": seconds,
        "schema": 1,
    }
    data.update(kw)
    return data


REFUSED = [
    (
        "helmholtz_unit_square_gaussian_ref_002",
        "convergence: gap(intermediate, reference) is not smaller",
        {
            "convergence": {
                "gap_intermediate_reference": 0.5,
                "gap_calibration_intermediate": 0.1,
                "gap_calibration_reference": 0.6,
            }
        },
    ),
    ("reaction_diffusion_unit_square_allen_cahn_ref_003", "e_base 0.07 >= 0.05", {}),
    (
        "linear_elasticity_unit_square_plane_strain_mms_002",
        "cheat: error 0.01 <= 0.05",
        {"cheat": {"dirichlet": 0.01}},
    ),
    ("stokes_unit_square_mms_002", "cheat: error 0.0001 <= tau_acc 0.001", {}),
    ("poisson_circle_variable_kappa_mms_002", "trial: timeout after 600 s", {}),
    ("navier_stokes_channel_inflow_mms_001", "validation: case x: bad thing", {}),
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "cases.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    return path


@pytest.fixture
def build_dir(tmp_path: Path, dataset: Path) -> Path:
    root = tmp_path / "build"
    trials = root / "trials"
    trials.mkdir(parents=True)
    entries = [_trial(r["id"], True) for r in _records()]
    entries.append(_trial("helmholtz_unit_square_gaussian_ref_005", True, seconds=1.5))
    entries += [_trial(cid, False, reason, seconds=1.5, **kw) for cid, reason, kw in REFUSED]
    for entry in entries:
        (trials / f"{entry['id']}.json").write_text(json.dumps(entry, indent=1))
    return root


def _rows(text: str, heading: str) -> dict[str, list[str]]:
    """The table under a Markdown heading (without its header): first cell -> other cells."""
    lines = text.splitlines()
    start = lines.index(heading)
    rows: dict[str, list[str]] = {}
    seen_table = False
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            seen_table = True
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set(cells[0]) <= {":", "-"}:
                rows.clear()  # what came before the separator was the header
                continue
            rows[cells[0]] = cells[1:]
        elif seen_table:
            break
    return rows


def _card(dataset: Path, build_dir: Path | None, **kw: Any) -> str:
    return write_card(dataset, build_dir, **kw).read_text()


def test_synthetic_dataset_is_valid(dataset: Path) -> None:
    cases = load_cases(dataset)
    assert len(cases) == 10


def test_header_and_location(dataset: Path, build_dir: Path) -> None:
    out = write_card(dataset, build_dir)
    assert out == dataset.parent / "README.md"
    text = out.read_text()
    assert text.splitlines()[0] == "# pdeagent dataset v1.2.3"
    assert "Generated by `pdeagent cases build`; do not edit by hand." in text
    assert "`cases.jsonl`: 10 cases." in text
    other = write_card(dataset, build_dir, out=dataset.parent / "sub" / "CARD.md")
    assert other == dataset.parent / "sub" / "CARD.md"
    assert other.read_text() == text


def test_composition(dataset: Path, build_dir: Path) -> None:
    text = _card(dataset, build_dir)
    fam = _rows(text, "### Families")
    # total, MMS, no-exact, 3-D, transient, Neumann, Robin, periodic, vector
    assert fam["**total**"] == ["10", "8", "2", "1", "2", "1", "1", "1", "1"]
    assert fam["poisson"] == ["5", "5", "0", "1", "0", "0", "1", "1", "0"]
    assert fam["reaction_diffusion"] == ["1", "0", "1", "0", "1", "1", "0", "0", "0"]
    assert fam["linear_elasticity"] == ["1", "1", "0", "0", "0", "0", "0", "0", "1"]
    assert fam["wave"] == ["0"] * 9
    # family order as in FAMILIES
    assert list(fam)[:4] == ["poisson", "helmholtz", "biharmonic", "linear_elasticity"]
    assert len(fam) == 12

    geo = _rows(text, "### Geometries")
    assert len(geo) == 15  # 14 templates + total
    assert list(geo)[:2] == ["unit_square", "unit_cube"]
    assert geo["unit_square"] == ["7"]
    assert geo["circle"] == ["1"]
    assert geo["periodic_square"] == ["1"]
    assert geo["gear"] == ["0"]
    assert geo["**total**"] == ["10"]

    cov = _rows(text, "### Track coverage")
    assert cov["**total**"] == ["10", "10", "8"]
    assert cov["poisson"] == ["5", "5", "4"]
    assert cov["stokes"] == ["1", "1", "0"]


def test_thresholds(dataset: Path, build_dir: Path) -> None:
    text = _card(dataset, build_dir)
    lines = text.splitlines()
    e_row = next(line for line in lines if line.startswith("| dolfinx | e_base |"))
    cells = [c.strip() for c in e_row.strip("|").split("|")]
    # cases, min, 5%, median, 95%, max, tau_min active
    assert cells[2:] == ["10", "1e-08", "2.8e-08", "0.00035", "0.000865", "0.001", "2/10 (20%)"]
    t_row = next(line for line in lines if line.startswith("| dolfinx | t_base [s] |"))
    cells = [c.strip() for c in t_row.strip("|").split("|")]
    assert cells[2:] == ["10", "2", "2.9", "11", "19.1", "20", "-"]
    f_row = next(line for line in lines if line.startswith("| firedrake | e_base |"))
    cells = [c.strip() for c in f_row.strip("|").split("|")]
    assert cells[2] == "2"
    assert cells[5] == "0.003"
    assert cells[-1] == "0/2 (0%)"
    # dolfinx rows come before firedrake rows
    assert text.index("| dolfinx | e_base |") < text.index("| firedrake | e_base |")
    # every synthetic threshold set is legacy (protocol 1): no t_null row
    assert "| dolfinx | 10 | 0 | 0 |" in lines and "| firedrake | 2 | 0 | 0 |" in lines
    # ... and none records a selection: every baseline is the default configuration
    assert "| dolfinx | 1 | `default-baseline` | 10 |" in lines
    assert "| firedrake | 1 | `default-baseline` | 2 |" in lines
    assert "t_null [s]" not in text

    machines = [
        line for line in lines if line.startswith("| dolfinx | `") or "| firedrake | `" in line
    ]
    assert len(machines) == 3
    assert "date" not in "".join(machines)
    counts = {line.split("`")[1]: line.rsplit("|", 2)[1].strip() for line in machines}
    assert counts[json.dumps(MACHINE_A, sort_keys=True)] == "7"
    assert counts[json.dumps(MACHINE_B, sort_keys=True)] == "3"
    assert counts[json.dumps(MACHINE_F, sort_keys=True)] == "2"


def test_reference_validity(dataset: Path, build_dir: Path) -> None:
    text = _card(dataset, build_dir)
    ref = _rows(text, "### No-exact (reference) candidates")
    # tried, accepted, refused: convergence, refused: other, three median gaps
    assert ref["helmholtz"] == ["3", "2", "1", "0", "0.002", "0.015", "0.017"]
    assert ref["reaction_diffusion"] == ["2", "1", "0", "1", "0.002", "0.004", "0.006"]
    assert ref["**total**"] == ["5", "3", "1", "1", "0.002", "0.01", "0.011"]
    assert list(ref) == ["helmholtz", "reaction_diffusion", "**total**"]

    mms = _rows(text, "### Manufactured-solution candidates")
    # tried, accepted, refused: cheat, refused: trial, refused: other
    assert mms["poisson"] == ["6", "5", "0", "1", "0"]
    assert mms["linear_elasticity"] == ["2", "1", "1", "0", "0"]
    assert mms["stokes"] == ["2", "1", "1", "0", "0"]
    assert mms["heat"] == ["1", "1", "0", "0", "0"]
    assert mms["navier_stokes"] == ["1", "0", "0", "0", "1"]
    assert mms["**total**"] == ["12", "8", "2", "1", "1"]
    assert "biharmonic" not in mms


def test_build_section(dataset: Path, build_dir: Path) -> None:
    text = _card(dataset, build_dir, wall_sec=3723.4)
    build = _rows(text, "## Build")
    assert build["trials"] == ["17"]
    assert build["accepted"] == ["11"]
    assert build["accepted and in the dataset"] == ["10"]
    assert build["accepted spares (not in the dataset)"] == ["1"]
    assert build["refused"] == ["6"]
    assert build["dataset cases without a trial"] == ["0"]
    # 10 x 2.0 s + 7 x 1.5 s
    assert build["total trial time [s]"] == ["30.5"]
    assert build["wall time of the last build run [s]"] == ["3.72e+03"]
    refusals = _rows(text, "### Refusals by class")
    assert refusals == {
        "cheat": ["2"],
        "convergence": ["1"],
        "e_base": ["1"],
        "trial": ["1"],
        "validation": ["1"],
    }
    assert list(refusals) == sorted(refusals)
    assert "wall time" not in _card(dataset, build_dir)


def test_deterministic(dataset: Path, build_dir: Path) -> None:
    first = _card(dataset, build_dir, wall_sec=10.0)
    second = _card(dataset, build_dir, wall_sec=10.0)
    assert first == second
    # independent of the order of cases and trials
    cases = load_cases(dataset)
    trials = load_trials(build_dir)
    assert trials is not None
    a = card_markdown(cases, trials, wall_sec=10.0, dataset_name="cases.jsonl")
    b = card_markdown(cases[::-1], trials[::-1], wall_sec=10.0, dataset_name="cases.jsonl")
    assert a == b == first


def test_missing_build_dir(dataset: Path, tmp_path: Path) -> None:
    for build in (None, tmp_path / "nowhere"):
        text = _card(dataset, build)
        assert NO_BUILD_NOTE in text
        assert "## Reference validity" not in text
        assert "## Build" not in text
        assert "### Refusals by class" not in text
        # the dataset sections are still there
        assert _rows(text, "### Families")["**total**"][0] == "10"
        assert "| dolfinx | e_base | 10 |" in text
    assert _card(dataset, None) == _card(dataset, tmp_path / "nowhere")


def test_invalid_dataset(tmp_path: Path) -> None:
    record = _records()[0]
    record["evaluation_metadata"]["thresholds"]["dolfinx"]["tau_acc"] = 1.0
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(CaseFileError):
        write_card(path, None)
    assert not (tmp_path / "README.md").exists()


def test_id_helpers() -> None:
    assert family_of_id("navier_stokes_channel_x_mms_001") == "navier_stokes"
    assert family_of_id("stokes_unit_square_mms_002") == "stokes"
    assert family_of_id("convection_diffusion_annulus_pe_ref_010") == "convection_diffusion"
    assert family_of_id("unknown_thing_mms_001") is None
    assert kind_of_id("heat_unit_square_a_ref_007") == "ref"
    assert kind_of_id("heat_unit_square_a_mms_007") == "mms"
    assert kind_of_id("heat_unit_square") is None
    assert refusal_class("cheat: error 0.01 <= 0.05") == "cheat"
    assert refusal_class("e_base 0.07 >= 0.05") == "e_base"
    assert refusal_class("") == "(no reason)"


def test_selection_rule_refuses_an_incompetent_baseline() -> None:
    from pdeagent.cases.build import competent

    assert competent({"e_base": 0.01}) == (True, "")
    ok, why = competent({"e_base": 0.08})
    assert not ok and why.startswith("e_base 0.08 >= 0.05")
