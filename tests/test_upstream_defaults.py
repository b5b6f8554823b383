"""The upstream oracles' implicit defaults, stated by the importer (issue #20, item 7).

Each record below leaves a value implicit that the published oracle fills in silently; the
importer must state it in the case and record a note (field, value, why with the oracle's
repository path), and refuse only what it cannot state, with a reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pdeagent.cases.model import case_to_dict
from pdeagent.cases.upstream import (
    BURGERS_DT,
    BURGERS_NU,
    BURGERS_T_FINAL,
    FLOW_NU,
    UPSTREAM_REPO,
    UpstreamImport,
    import_upstream,
    summary_dict,
)
from pdeagent.cases.validate import validate_records
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.prompts.builder import build_prompt
from pdeagent.stages import Track

from .test_prompts import PIECES

LEAK_MARK = "SPEC §4 leak"


def _record(upstream_id: str, family: str, pde: dict[str, Any], bc: Any) -> dict[str, Any]:
    return {
        "id": upstream_id,
        "pde_classification": {"equation_type": family, "math_type": []},
        "oracle_config": {
            "pde": {"type": family, **pde},
            "domain": {"type": "unit_square"},
            "mesh": {"resolution": 32, "cell_type": "triangle"},
            "fem": {"family": "Lagrange", "degree": 2},
            "bc": bc,
            "output": {"format": "npz", "grid": {"bbox": [0, 1, 0, 1], "nx": 33, "ny": 33}},
        },
        "supported_libraries": ["dolfinx"],
    }


def _burgers(upstream_id: str, **pde: Any) -> dict[str, Any]:
    pde.setdefault("pde_params", {"nu": 0.05})
    pde.setdefault("manufactured_solution", {"u": "exp(-t)*sin(pi*x)*sin(pi*y)"})
    return _record(upstream_id, "burgers", pde, {"dirichlet": {"on": "all", "value": "u"}})


def _channel(upstream_id: str, family: str = "stokes", **pde: Any) -> dict[str, Any]:
    """Inflow on x = 0, walls y = 0 and y = 1, nothing said about x = 1 (the outflow)."""
    pde.setdefault("pde_params", {"nu": 0.5})
    pde.setdefault("source_term", ["0.0", "0.0"])
    bc = {
        "dirichlet": [
            {"on": "x0", "value": ["4*y*(1-y)", "0.0"]},
            {"on": "y0", "value": ["0.0", "0.0"]},
            {"on": "y1", "value": ["0.0", "0.0"]},
        ]
    }
    rec = _record(upstream_id, family, pde, bc)
    rec["oracle_config"]["reference_config"] = {
        "mesh": {"resolution": 64},
        "fem": {"degree_u": 2, "degree_p": 1},
    }
    return rec


def _run(tmp_path: Path, *records: dict[str, Any]) -> UpstreamImport:
    path = tmp_path / "upstream.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return import_upstream(path)


def _notes(result: UpstreamImport, case_id: str) -> dict[str, Any]:
    """field -> note of one imported case."""
    return {n.field: n for n in result.import_notes[case_id]}


def _problems_besides_leak(case) -> list[str]:
    return [p.message for p in validate_records([case_to_dict(case)]) if LEAK_MARK not in p.message]


# ----------------------------------------------------------------------------- Burgers


def test_burgers_without_time_interval_gets_the_oracle_end_time(tmp_path):
    result = _run(tmp_path, _burgers("burgers_no_time"))
    assert result.skipped == []
    (case,) = result.cases
    time = case.case_spec.pde.time
    assert (time.t0, time.t_end) == (0.0, BURGERS_T_FINAL) == (0.0, 0.1)
    notes = _notes(result, case.id)
    t_end = notes["case_spec.pde.time.t_end"]
    assert t_end.value == 0.1
    assert "t_final = 0.1" in t_end.why
    assert f"{UPSTREAM_REPO}/pdebench/oracle/burger.py" in t_end.why
    assert notes["case_spec.pde.time.t0"].value == 0.0
    # a manufactured case has no reference_config, so no time step is stated for it
    assert "evaluation_metadata.reference_config.time_step" not in notes
    assert case.evaluation_metadata.reference_config is None
    assert _problems_besides_leak(case) == []


def test_burgers_without_viscosity_gets_the_oracle_default(tmp_path):
    result = _run(tmp_path, _burgers("burgers_no_nu", pde_params={}))
    (case,) = result.cases
    assert case.case_spec.pde.params["nu"] == BURGERS_NU == 0.01
    note = _notes(result, case.id)["case_spec.pde.params.nu"]
    assert note.value == 0.01 and "burger.py" in note.why


def test_burgers_t_final_and_dt_are_read_where_the_oracle_reads_them(tmp_path):
    # the oracle takes max(1, int(0.25 / 0.1)) = 2 steps: it stops at t = 0.2
    result = _run(tmp_path, _burgers("burgers_steps", t_final=0.25, dt=0.1))
    (case,) = result.cases
    assert case.case_spec.pde.time.t_end == pytest.approx(0.2)
    note = _notes(result, case.id)["case_spec.pde.time.t_end"]
    assert note.value == pytest.approx(0.2) and "2 steps" in note.why
    # a t_final the oracle reaches exactly is the record's own value: no t_end note
    exact = _run(tmp_path, _burgers("burgers_exact_end", t_final=0.3, dt=0.01))
    (case,) = exact.cases
    assert case.case_spec.pde.time.t_end == pytest.approx(0.3)
    assert "case_spec.pde.time.t_end" not in _notes(exact, case.id)


def test_burgers_without_manufactured_solution_starts_from_zero(tmp_path):
    rec = _burgers("burgers_ref", source_term="exp(-50*((x-0.5)**2+(y-0.5)**2))")
    del rec["oracle_config"]["pde"]["manufactured_solution"]
    rec["oracle_config"]["pde"]["initial_condition"] = "sin(pi*x)*sin(pi*y)"
    rec["oracle_config"]["bc"] = {"dirichlet": {"on": "all", "value": "0.0"}}
    rec["oracle_config"]["reference_config"] = {"mesh": {"resolution": 64}, "fem": {"degree": 2}}
    result = _run(tmp_path, rec)
    assert result.skipped == []
    (case,) = result.cases
    assert case.case_spec.ic == {"u": "0"}
    notes = _notes(result, case.id)
    assert notes["case_spec.ic.u"].value == "0"
    assert "never reads oracle_config.pde.initial_condition" in notes["case_spec.ic.u"].why
    step = notes["evaluation_metadata.reference_config.time_step"]
    assert step.value == BURGERS_DT == 0.01
    assert case.evaluation_metadata.reference_config["time_step"] == 0.01
    assert validate_records([case_to_dict(case)]) == []


def test_burgers_time_interval_the_oracle_ignores_is_refused(tmp_path):
    rec = _burgers("burgers_contradiction", time={"t0": 0.0, "t_end": 0.5, "dt": 0.01})
    result = _run(tmp_path, rec)
    assert result.cases == []
    ((who, why),) = result.skipped
    assert who == "burgers_contradiction"
    assert "ignores that field" in why and "[0, 0.1]" in why
    # the same field agreeing with what the oracle integrates over is fine
    agree = _run(tmp_path, _burgers("burgers_agree", time={"t0": 0.0, "t_end": 0.1}))
    assert agree.skipped == [] and len(agree.cases) == 1


# ----------------------------------------------------------------------------- flows


@pytest.mark.parametrize("family", ["stokes", "navier_stokes"])
def test_partial_dirichlet_flow_gets_zero_traction_on_the_rest(tmp_path, family):
    result = _run(tmp_path, _channel(f"{family}_channel", family))
    assert result.skipped == []
    (case,) = result.cases
    (neumann,) = case.case_spec.bc.neumann
    assert neumann.boundary == ["xmax"]
    assert neumann.quantity == "traction"
    assert neumann.value == ["0", "0"]
    note = _notes(result, case.id)["case_spec.bc.neumann"]
    assert note.value == {"boundary": ["xmax"], "quantity": "traction", "value": ["0", "0"]}
    assert "nu*du/dn - p*n = 0" in note.why
    assert f"{UPSTREAM_REPO}/pdebench/oracle/{family}.py" in note.why
    # pdeagent's own validation accepts the case as it is (no-exact: no leak rule)
    assert validate_records([case_to_dict(case)]) == []


def test_stokes_prompt_states_the_outflow_condition(tmp_path):
    result = _run(tmp_path, _channel("stokes_channel"))
    (case,) = result.cases
    prompt = build_prompt(case, Track("dolfinx", "DOLFINx", "python", "solver.py"), PIECES)
    flat = " ".join(prompt.split())
    # the condition on the outflow side is named in words ...
    assert "Neumann condition for the traction on `xmax`" in flat
    assert "Neumann on `xmax`: nu * du/dn - p * n = g, with g = `bc.neumann[0].value`" in flat
    # ... and its data g = 0 are in the case_spec the prompt shows
    block = flat[flat.index('"neumann": [') :]
    block = block[: block.index("]", block.index('"value": [')) + 1]
    assert '"boundary": [ "xmax" ]' in block and '"quantity": "traction"' in block
    assert '"value": [ "0", "0" ]' in block


def test_stokes_without_viscosity_gets_the_oracle_default(tmp_path):
    rec = _channel("stokes_no_nu", pde_params={})
    result = _run(tmp_path, rec)
    (case,) = result.cases
    assert case.case_spec.pde.params["nu"] == FLOW_NU == 1.0
    note = _notes(result, case.id)["case_spec.pde.params.nu"]
    assert note.value == 1.0 and "pdebench/oracle/stokes.py" in note.why


def test_full_dirichlet_flow_has_no_traction_and_no_note(tmp_path):
    rec = _channel("stokes_closed")
    rec["oracle_config"]["bc"] = {"dirichlet": {"on": "all", "value": ["0.0", "0.0"]}}
    rec["oracle_config"]["pde"]["source_term"] = ["sin(pi*y)", "0.0"]
    result = _run(tmp_path, rec)
    (case,) = result.cases
    assert case.case_spec.bc.neumann == []
    assert case.id not in result.import_notes


# ----------------------------------------------------------------------------- report


def test_remaining_refusals_have_reasons_and_counts(tmp_path):
    star = _channel("star_flow")
    star["oracle_config"]["domain"] = {"type": "star", "geometry_params": {}}
    star2 = _channel("star_flow_2")
    star2["oracle_config"]["domain"] = {"type": "star", "geometry_params": {}}
    cubic = _burgers("burgers_3d")
    cubic["oracle_config"]["output"]["grid"] = {
        "bbox": [0, 1, 0, 1, 0, 1],
        "nx": 5,
        "ny": 5,
        "nz": 5,
    }
    cubic["oracle_config"]["domain"] = {"type": "unit_cube"}
    result = _run(tmp_path, star, star2, cubic, _burgers("burgers_ok"))
    assert [c.id for c in result.cases] == ["upstream_burgers_ok"]
    reasons = result.skipped_by_reason()
    assert sum(reasons.values()) == 3 == len(result.skipped)
    star_reason = next(r for r in reasons if "zig-zag polygon" in r)
    assert reasons[star_reason] == 2
    assert any("only verified in 2-D" in r and n == 1 for r, n in reasons.items())
    data = summary_dict(result)
    assert data["skipped_by_reason"][0] == {"reason": star_reason, "count": 2}
    (entry,) = data["import_notes"]
    assert entry["case_id"] == "upstream_burgers_ok" and entry["upstream_id"] == "burgers_ok"
    fields = {n["field"]: n["value"] for n in entry["notes"]}
    assert fields["case_spec.pde.time.t_end"] == 0.1


def test_cli_json_lists_notes_and_reasons(tmp_path):
    star = _channel("star_flow")
    star["oracle_config"]["domain"] = {"type": "star", "geometry_params": {}}
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (_burgers("b1"), _channel("s1"), star)))
    common.reset_host()
    try:
        run = CliRunner().invoke(app, ["cases", "import-upstream", str(path), "--json"])
        text = CliRunner().invoke(app, ["cases", "import-upstream", str(path)])
    finally:
        common.reset_host()
    assert run.exit_code == 0, run.output
    data = json.loads(run.stdout)
    assert data["imported"] == 2
    notes = {e["upstream_id"]: {n["field"] for n in e["notes"]} for e in data["import_notes"]}
    assert "case_spec.pde.time.t_end" in notes["b1"]
    assert "case_spec.bc.neumann" in notes["s1"]
    assert [r["count"] for r in data["skipped_by_reason"]] == [1]
    assert text.exit_code == 0, text.output
    flat = " ".join(text.stdout.split())
    assert "stated case_spec.pde.time.t_end = 0.1" in flat
    assert "refused 1x:" in flat
