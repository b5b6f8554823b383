"""`pdeagent cases reconstruct`: re-deriving shipped cases from the design (dataset 2.0)."""

from __future__ import annotations

import json

import pytest

from pdeagent.cases.reconstruct import ReconstructionError, reconstruct

from .conftest import REPO_ROOT

DATASET = REPO_ROOT / "cases" / "pdeagent-v1.jsonl"
DESIGN = REPO_ROOT / "cases" / "design"
RECORDS = [json.loads(line) for line in DATASET.read_text(encoding="utf-8").splitlines()]


def _pick(family: str, kind: str, output: str | None = None, n: int = 2) -> list[dict]:
    out = []
    for r in RECORDS:
        if r["pde_classification"]["equation_family"] != family or f"_{kind}_" not in r["id"]:
            continue
        if output is not None and bool(r["case_spec"]["output"].get("components")) != (
            output == "components"
        ):
            continue
        out.append(r)
    return out[:n]


def test_unchanged_family_keeps_its_content_and_drops_thresholds():
    old = _pick("poisson", "mms") + _pick("heat", "ref", n=1)
    done = reconstruct(old, DESIGN, dataset_version="2.0.0")
    assert [d.record["id"] for d in done] == [r["id"] for r in old]
    for before, after in zip(old, done, strict=True):
        assert after.changed == []
        assert after.record["case_spec"] == before["case_spec"]
        assert after.record["evaluation_metadata"]["thresholds"] == {}
        assert after.record["dataset_version"] == "2.0.0"
        assert before["evaluation_metadata"]["thresholds"]  # the old record had some
        kept = {k: v for k, v in after.record.items() if k not in ("evaluation_metadata",)}
        assert kept == {**{k: v for k, v in before.items() if k != "evaluation_metadata"},
                        "dataset_version": "2.0.0"}  # fmt: skip


def test_flow_components_case_gains_the_pressure_and_its_exact_solution():
    old = _pick("stokes", "mms", "components", n=1)[0]
    (done,) = reconstruct([old], DESIGN, dataset_version="2.0.0")
    output = done.record["case_spec"]["output"]
    assert output["components"] == old["case_spec"]["output"]["components"]
    assert output["pressure"] == {"array": "p", "normalization": "zero_mean"}
    exact = done.record["evaluation_metadata"]["manufactured_solution"]
    assert set(exact) == {"u_x", "u_y", "p"}
    old_exact = old["evaluation_metadata"]["manufactured_solution"]
    assert {k: exact[k] for k in old_exact} == old_exact  # the velocity is the same
    assert done.changed == ["case_spec.output", "evaluation_metadata.manufactured_solution"]
    # the rest of the agent-visible case is the same problem
    same = {k: v for k, v in done.record["case_spec"].items() if k != "output"}
    assert same == {k: v for k, v in old["case_spec"].items() if k != "output"}


def test_magnitude_case_states_why():
    old = _pick("navier_stokes", "mms", "magnitude", n=1)[0]
    (done,) = reconstruct([old], DESIGN, dataset_version="2.0.0")
    output = done.record["case_spec"]["output"]
    assert output["field"] == "velocity_magnitude" and "pressure" not in output
    assert "paper" in output["reason"]


def test_only_the_named_families_are_constructed_again():
    old = _pick("stokes", "mms", "components", n=1) + _pick("poisson", "mms", n=1)
    done = reconstruct(old, DESIGN, dataset_version="2.0.0", families=["poisson"])
    assert "pressure" not in done[0].record["case_spec"]["output"]  # copied, not rebuilt
    assert done[0].record["evaluation_metadata"]["thresholds"] == {}


def test_an_id_without_a_design_candidate_is_an_error():
    bad = json.loads(json.dumps(_pick("poisson", "mms", n=1)[0]))
    bad["id"] = bad["id"][:-3] + "999"
    with pytest.raises(ReconstructionError, match=bad["id"]):
        reconstruct([bad], DESIGN, dataset_version="2.0.0")


def test_reference_dir_points_no_exact_cases_at_their_study():
    old = _pick("poisson", "ref", n=1) + _pick("poisson", "mms", n=1)
    done = reconstruct(old, DESIGN, dataset_version="2.0.0", reference_dir="reference_studies/")
    assert done[0].record["evaluation_metadata"]["reference_path"] == (
        f"reference_studies/{old[0]['id']}.npz"
    )
    assert done[1].record["evaluation_metadata"]["reference_path"] is None
    kept = reconstruct(old[:1], DESIGN, dataset_version="2.0.0")[0]
    assert (
        kept.record["evaluation_metadata"]["reference_path"]
        == (old[0]["evaluation_metadata"]["reference_path"])
    )
