"""Import of upstream (PDEAgent-Bench) records: conversion, validation, leak report, CLI."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.expressions import SYMBOLS, parse_expression
from pdeagent.cases.model import case_to_dict
from pdeagent.cases.upstream import (
    LEAK_TOLERANCE,
    MAX_LINE_BYTES,
    UpstreamImport,
    import_upstream,
    sanitize_id,
    summary_dict,
)
from pdeagent.cases.validate import validate_records
from pdeagent.cli.main import app
from pdeagent.geometry import get_geometry

SAMPLE = Path(os.environ.get("PDEAGENT_UPSTREAM_SAMPLE", "/work/shared/data/upstream_sample.jsonl"))
LEAK_MARK = "SPEC §4 leak"


# ----------------------------------------------------------------------------- helpers


def _numeric(text: str, points: tuple[np.ndarray, ...], t: float) -> np.ndarray:
    """Evaluate an expression string with plain sympy/numpy (independent of the importer)."""
    names = ("x", "y", "z")[: len(points)]
    expr = parse_expression(text, allowed_symbols=(*names, "t"))
    fn = sympy.lambdify([SYMBOLS[n] for n in (*names, "t")], expr, "numpy")
    with np.errstate(all="ignore"):
        value = np.asarray(fn(*points, t), dtype=float)
    return np.broadcast_to(value, points[0].shape)


def _field(value: Any, points: tuple[np.ndarray, ...], t: float) -> np.ndarray:
    parts = value if isinstance(value, list) else [value]
    return np.stack([_numeric(str(v), points, t) for v in parts])


def _key_anywhere(obj: Any, key: str) -> bool:
    if isinstance(obj, dict):
        return key in obj or any(_key_anywhere(v, key) for v in obj.values())
    if isinstance(obj, list):
        return any(_key_anywhere(v, key) for v in obj)
    return False


def _independent_leaks(records: list[dict[str, Any]], result: UpstreamImport) -> set[str]:
    """Case ids whose upstream Dirichlet (at t_end) or initial data sampled on the grid are
    within LEAK_TOLERANCE (relative L2, scored points) of the manufactured solution."""
    imported = {c.id: c for c in result.cases}
    leaking = set()
    for rec in records:
        case = imported.get(sanitize_id(rec["id"]))
        pde = rec["oracle_config"]["pde"]
        if case is None or "manufactured_solution" not in pde:
            continue
        grid = rec["oracle_config"]["output"]["grid"]
        counts = [grid["nx"], grid["ny"]] + ([grid["nz"]] if "nz" in grid else [])
        axes = [
            np.linspace(grid["bbox"][2 * k], grid["bbox"][2 * k + 1], n)
            for k, n in enumerate(counts)
        ]
        points = tuple(np.meshgrid(*axes, indexing="ij"))
        geometry = get_geometry(case.case_spec.domain.type, case.case_spec.domain.geometry_params)
        band = 0.5 * max(float(a[1] - a[0]) for a in axes)
        scored = geometry.inside(*points) & (geometry.distance_to_boundary(*points) >= band)
        time = pde.get("time") or {}
        t0, t_end = time.get("t0", 0.0), time.get("t_end", 0.0)
        exact = pde["manufactured_solution"]["u"]
        truth = _field(exact, points, t_end)[:, scored]
        norm = np.linalg.norm(truth)
        cheats = []
        dirichlet = rec["oracle_config"]["bc"]["dirichlet"]
        entries = dirichlet if isinstance(dirichlet, list) else [dirichlet]
        first = next((e for e in entries if e.get("on", "all") == "all"), None)
        if first is not None:
            value = first["value"]
            cheats.append((exact if value in ("u", "u_exact") else value, t_end))
        if "initial_condition" in pde:
            cheats.append((pde["initial_condition"], t0))
        for value, t in cheats:
            guess = _field(value, points, t)
            if guess.shape[0] != truth.shape[0]:
                guess = np.broadcast_to(guess, (truth.shape[0], *guess.shape[1:]))
            if np.linalg.norm(guess[:, scored] - truth) / norm < LEAK_TOLERANCE:
                leaking.add(case.id)
    return leaking


# ----------------------------------------------------------------------------- the sample


@pytest.fixture(scope="module")
def sample() -> tuple[list[dict[str, Any]], UpstreamImport]:
    if not SAMPLE.is_file():
        pytest.skip(f"upstream sample not found: {SAMPLE}")
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    return records, import_upstream(SAMPLE)


def test_sample_every_record_is_imported_or_skipped_with_a_reason(sample):
    records, result = sample
    assert result.cases, "nothing imported from the sample"
    assert len(result.cases) + len(result.skipped) == len(records)
    assert all(reason for _, reason in result.skipped)
    upstream_ids = {r["id"] for r in records}
    assert {who for who, _ in result.skipped} <= upstream_ids
    assert set(result.upstream_ids.values()) <= upstream_ids
    reasons = dict(result.skipped)
    # records of the shipped sample whose verdict is known
    if "burgers_annulus_v1" in upstream_ids:
        # imported since the Burgers oracle's end time is stated (issue #20, item 7)
        assert "burgers_annulus_v1" not in reasons
        notes = result.import_notes["upstream_burgers_annulus_v1"]
        assert {n.field: n.value for n in notes}["case_spec.pde.time.t_end"] == 0.1
    if "rd_annulus_cubic" in upstream_ids:
        assert "none of our reaction laws" in reasons["rd_annulus_cubic"]


def test_sample_import_count(sample):
    """The shipped 21-record sample: 19 imported before the oracles' defaults were stated,
    20 after (only the cubic reaction law without a matching law of ours is refused)."""
    records, result = sample
    if len(records) != 21:
        pytest.skip(f"not the 21-record sample this count was taken on: {SAMPLE}")
    assert len(result.cases) == 20
    assert [who for who, _ in result.skipped] == ["rd_annulus_cubic"]


def test_sample_cases_validate(sample):
    _, result = sample
    rejected = set(result.rejected_by_validator)
    for case in result.cases:
        problems = validate_records([case_to_dict(case)])
        others = [p for p in problems if LEAK_MARK not in p.message]
        assert others == [], (case.id, others)
        assert bool(problems) == (case.id in rejected), case.id
    writable = result.writable_cases()
    assert len(writable) == len(result.cases) - len(rejected)
    assert validate_records([case_to_dict(c) for c in writable]) == []


def test_sample_agent_view_hides_the_manufactured_solution(sample):
    _, result = sample
    manufactured = [c for c in result.cases if c.evaluation_metadata.manufactured_solution]
    assert manufactured, "the sample should contain manufactured-solution cases"
    for case in result.cases:
        view = agent_view(case, case.supported_libraries[0])
        assert set(view) == {"case_spec", "target_library"}
        assert not _key_anywhere(view, "manufactured_solution"), case.id
        assert not _key_anywhere(view, "evaluation_metadata"), case.id
        assert not _key_anywhere(view, "source_term"), case.id


def test_sample_leak_count_matches_an_independent_check(sample):
    records, result = sample
    expected = _independent_leaks(records, result)
    assert {r.case_id for r in result.leaks} == expected
    assert len(result.leaks) == len(expected)
    for leak in result.leaks:
        assert leak.expressions and leak.error < LEAK_TOLERANCE
    # the validator's own no-leak rule rejects at least the cases we report as leaking
    assert expected <= set(result.rejected_by_validator)
    n, k = len(result.cases), len(expected)
    assert result.leak_share == pytest.approx(k / n)
    assert result.leak_summary().startswith(
        f"{k} of {n} imported cases leak their solution through the boundary or initial data "
        f"({100 * k / n:.0f}%"
    )
    data = summary_dict(result)
    assert data["leaking"] == k and data["imported"] == n
    assert data["leak_share"] == pytest.approx(k / n)


# ----------------------------------------------------------------------------- synthetic


def _poisson(
    upstream_id: str, solution: str | None, dirichlet: str, source: str | None = None
) -> dict[str, Any]:
    pde: dict[str, Any] = {
        "type": "poisson",
        "coefficients": {"kappa": {"type": "constant", "value": 1.0}},
    }
    if source is not None:
        pde["source_term"] = source
    if solution is not None:
        pde["manufactured_solution"] = {"u": solution}
    return {
        "id": upstream_id,
        "pde_classification": {"equation_type": "poisson", "math_type": ["elliptic"]},
        "oracle_config": {
            "pde": pde,
            "domain": {"type": "unit_square"},
            "mesh": {"resolution": 32, "cell_type": "triangle"},
            "fem": {"family": "Lagrange", "degree": 1},
            "bc": {"dirichlet": {"on": "all", "value": dirichlet}},
            "output": {
                "format": "npz",
                "field": "scalar",
                "grid": {"bbox": [0, 1, 0, 1], "nx": 41, "ny": 41},
            },
        },
        "evaluation_config": {"target_metric": "rel_L2_grid", "timeout_sec": 300},
        "supported_libraries": ["dolfinx", "firedrake", "some_other_library"],
    }


def _heat_ic_leak() -> dict[str, Any]:
    """Heat with a time-independent solution: the boundary data are only x*y, but the
    initial condition is the solution itself (an initial-data leak)."""
    rec = _poisson("Heat IC-Leak", "x*y + sin(pi*x)*sin(pi*y)", "x*y")
    rec["pde_classification"] = {"equation_type": "heat", "math_type": ["parabolic"]}
    pde = rec["oracle_config"]["pde"]
    pde["type"] = "heat"
    pde["time"] = {"t0": 0.0, "t_end": 0.5, "dt": 0.01}
    pde["initial_condition"] = "sin(pi*y)*sin(pi*x) + y*x"
    return rec


def _write(path: Path, lines: list[str | bytes]) -> Path:
    with path.open("wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else line.encode())
            fh.write(b"\n")
    return path


@pytest.fixture
def synthetic(tmp_path) -> tuple[Path, Path]:
    marker = tmp_path / "pwned"
    unknown_family = _poisson("unknown-family", "x", "x")
    unknown_family["pde_classification"]["equation_type"] = "maxwell"
    unknown_family["oracle_config"]["pde"]["type"] = "maxwell"
    hostile = _poisson("hostile", f"__import__('pathlib').Path('{marker}').touch()", "0")
    star = _poisson("star-domain", "x*y", "x*y")
    star["oracle_config"]["domain"] = {"type": "star", "geometry_params": {"points": 5}}
    records: list[str | bytes] = [
        # leaks: the Dirichlet expression is the solution (written differently)
        json.dumps(
            _poisson("Leak-MMS 1", "exp(x)*cos(y)", "cos(y)*exp(x)", source="exp(x)*cos(y)")
        ),
        # does not leak: boundary data x*y, solution x*y + sin(pi x) sin(pi y)
        json.dumps(
            _poisson(
                "no_leak.mms",
                "x*y + sin(pi*x)*sin(pi*y)",
                "x*y",
                source="2*pi**2*sin(pi*x)*sin(pi*y)",
            )
        ),
        json.dumps(_heat_ic_leak()),
        "",
        '{"id": "broken", "oracle_config": ',
        json.dumps(unknown_family),
        json.dumps(hostile),
        json.dumps(star),
        b"\xff\xfe not utf-8",
        b'{"id": "huge", "pad": "' + b"a" * (MAX_LINE_BYTES + 10) + b'"}',
        json.dumps(_poisson("Leak-MMS 1", "x", "x")),  # duplicate id after sanitising
    ]
    return _write(tmp_path / "upstream.jsonl", records), marker


def test_synthetic_import_verdicts(synthetic):
    path, marker = synthetic
    result = import_upstream(path)
    ids = [c.id for c in result.cases]
    assert ids == ["upstream_leak_mms_1", "upstream_no_leak_mms", "upstream_heat_ic_leak"]

    leaks = {r.case_id: r for r in result.leaks}
    assert set(leaks) == {"upstream_leak_mms_1", "upstream_heat_ic_leak"}
    assert leaks["upstream_leak_mms_1"].expressions == ("dirichlet",)
    assert leaks["upstream_leak_mms_1"].error < 1e-12
    heat = leaks["upstream_heat_ic_leak"]
    assert heat.expressions == ("initial_condition",)
    assert heat.errors["initial_condition"] < 1e-12
    assert heat.errors["dirichlet"] > 0.1
    assert result.leak_share == pytest.approx(2 / 3)
    assert result.leak_summary().startswith("2 of 3 imported cases leak")

    no_leak = result.cases[1]
    assert no_leak.case_spec.bc.dirichlet[0].value == "x*y"  # kept as given
    meta = no_leak.evaluation_metadata
    assert meta.manufactured_solution == {"u": "x*y + sin(pi*x)*sin(pi*y)"}
    assert meta.thresholds == {}
    assert no_leak.supported_libraries == ["dolfinx", "firedrake"]
    assert "upstream_no_leak_mms" not in result.rejected_by_validator
    assert result.cheat_errors["upstream_no_leak_mms"]["dirichlet"] > 0.1
    assert [c.id for c in result.writable_cases()] == ["upstream_no_leak_mms"]

    # forcing: recomputed; the first record's upstream source is wrong, the second's right
    diffs = {d.case_id: d for d in result.forcing_differences}
    assert set(diffs) == {"upstream_leak_mms_1"}
    assert diffs["upstream_leak_mms_1"].relative_difference == pytest.approx(1.0)
    forcing = result.cases[0].case_spec.pde.forcing["f"]
    assert isinstance(forcing, str) and forcing.replace(" ", "") == "0"  # -lap(e^x cos y) = 0

    skipped = dict(result.skipped)
    assert len(result.skipped) == 7, result.skipped
    assert "malformed JSON" in skipped["line 5"]
    assert "unknown family 'maxwell'" in skipped["unknown-family"]
    assert "unparsable expression" in skipped["hostile"]
    assert "zig-zag polygon" in skipped["star-domain"]
    assert "not valid UTF-8" in skipped["line 9"]
    assert "longer than" in skipped["line 10"]
    assert "duplicate id upstream_leak_mms_1" in skipped["Leak-MMS 1"]
    assert not marker.exists()


def test_non_leaking_case_error_is_large(tmp_path):
    path = _write(
        tmp_path / "one.jsonl",
        [json.dumps(_poisson("nl", "x*y + sin(pi*x)*sin(pi*y)", "x*y"))],
    )
    result = import_upstream(path)
    assert [c.id for c in result.cases] == ["upstream_nl"] and result.leaks == []
    # the Dirichlet cheat's error, rebuilt independently on the scored points of the grid
    x, y = np.meshgrid(np.linspace(0, 1, 41), np.linspace(0, 1, 41))
    scored = np.minimum.reduce([x, 1 - x, y, 1 - y]) >= 0.5 / 40
    u = x * y + np.sin(np.pi * x) * np.sin(np.pi * y)
    error = np.linalg.norm((x * y - u)[scored]) / np.linalg.norm(u[scored])
    assert error > 0.1
    assert result.cheat_errors["upstream_nl"]["dirichlet"] == pytest.approx(error, rel=1e-9)


def test_dirichlet_inconsistent_with_the_solution_is_skipped(tmp_path):
    rec = _poisson("bad-bc", "x*y + 1", "x*y")  # differs from u on the boundary
    result = import_upstream(_write(tmp_path / "bad.jsonl", [json.dumps(rec)]))
    assert result.cases == []
    assert "differ from the manufactured solution on the boundary" in dict(result.skipped)["bad-bc"]


def test_geometry_and_parameter_mapping(tmp_path):
    annulus = _poisson("ann", None, "0", source="1")
    annulus["oracle_config"]["domain"] = {
        "type": "annulus",
        "geometry_params": {"center": [0, 0], "inner_r": 0.25, "outer_r": 0.9},
    }
    annulus["oracle_config"]["output"]["grid"]["bbox"] = [-0.9, 0.9, -0.9, 0.9]
    rd = copy.deepcopy(_poisson("rd", None, "0", source="1"))
    rd["pde_classification"] = {"equation_type": "reaction_diffusion", "math_type": []}
    rd["oracle_config"]["pde"] = {
        "type": "reaction_diffusion",
        "pde_params": {"epsilon": 0.03, "reaction": {"type": "logistic", "rho": 2.0}},
        "source_term": "1",
        "time": {"t0": 0.0, "t_end": 0.25, "dt": 0.005},
        "initial_condition": "0",
    }
    path = _write(tmp_path / "geo.jsonl", [json.dumps(annulus), json.dumps(rd)])
    result = import_upstream(path)
    assert not result.skipped, result.skipped
    ann, reac = result.cases
    assert ann.case_spec.domain.type == "annulus"
    assert ann.case_spec.domain.geometry_params == {
        "center": [0.0, 0.0],
        "r_inner": 0.25,
        "r_outer": 0.9,
    }
    assert ann.evaluation_metadata.construction_method == "reference_numerical"
    assert ann.evaluation_metadata.reference_config["mesh_resolution"] == 32
    params = reac.case_spec.pde.params
    assert params == {"epsilon": 0.03, "sigma": -2.0, "reaction_law": "logistic"}
    assert reac.pde_classification.math_type == ["reaction_diffusion"]
    assert reac.evaluation_metadata.reference_config["time_step"] == 0.005


# ----------------------------------------------------------------------------- CLI


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_cli_writes_valid_jsonl_and_refuses_to_overwrite(cli, synthetic, tmp_path):
    path, _ = synthetic
    out = tmp_path / "out.jsonl"

    result = cli.invoke(app, ["cases", "import-upstream", str(path)])
    assert result.exit_code == 0, result.output
    assert "2 of 3 imported cases leak" in _flat(result.stdout)
    assert "nothing written" in result.stdout and not out.exists()

    result = cli.invoke(app, ["cases", "import-upstream", str(path), "--output", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["upstream_no_leak_mms"]
    assert "wrote 1 case(s)" in _flat(result.stdout)

    check = cli.invoke(app, ["cases", "validate", str(out)])
    assert check.exit_code == 0, check.output
    assert "OK" in check.stdout

    before = out.read_text()
    again = cli.invoke(app, ["cases", "import-upstream", str(path), "--output", str(out)])
    assert again.exit_code == 2
    assert "refusing to overwrite" in again.stderr and "--force" in again.stderr
    assert out.read_text() == before

    forced = cli.invoke(
        app, ["cases", "import-upstream", str(path), "--output", str(out), "--force"]
    )
    assert forced.exit_code == 0, forced.output
    assert out.read_text() == before


def test_cli_json_report(cli, synthetic):
    path, _ = synthetic
    result = cli.invoke(app, ["cases", "import-upstream", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["imported"] == 3 and data["leaking"] == 2 and data["written"] == 0
    assert data["leak_share"] == pytest.approx(2 / 3)
    assert {d["upstream"] for d in data["skipped"]} >= {"hostile", "unknown-family", "line 5"}
    assert data["rejected_by_validator"] == ["upstream_leak_mms_1", "upstream_heat_ic_leak"]


def test_cli_missing_file_is_a_one_line_error(cli, tmp_path):
    result = cli.invoke(app, ["cases", "import-upstream", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error:") and "Traceback" not in result.output
