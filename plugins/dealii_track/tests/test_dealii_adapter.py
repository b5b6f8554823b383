"""The deal.II output adapter and the muparser view (no compiler needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.scoring.artifacts import load_solution_npz
from pdeagent_dealii import TRACK, muparser_view, pdeagent_adapt_output

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"


@pytest.fixture(scope="module")
def cases():
    return load_cases(DATASET)


def view(cases, predicate):
    case = next(c for c in cases if "dealii" in c.supported_libraries and predicate(c))
    return agent_view(case, "dealii")


def write(path: Path, values: np.ndarray) -> None:
    path.write_bytes(np.ascontiguousarray(values, dtype="<f8").tobytes())


def test_2d_grid_file_becomes_the_canonical_npz(cases, tmp_path):
    v = view(cases, lambda c: c.family == "poisson" and c.case_spec.domain.type == "unit_square")
    g = v["case_spec"]["eval_grid"]
    x, y = np.linspace(*g["bbox"][:2], g["nx"]), np.linspace(*g["bbox"][2:4], g["ny"])
    u = np.sin(x)[None, :] * np.cos(y)[:, None]  # u[j, i] = u(x_i, y_j)
    write(tmp_path / "solution_grid.bin", u)
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    arrays = load_solution_npz(out.npz_path, workdir=tmp_path)
    assert np.array_equal(arrays["u"], u) and np.array_equal(arrays["x"], x)
    assert np.array_equal(arrays["y"], y) and "z" not in arrays


def test_3d_grid_file_is_nz_ny_nx(cases, tmp_path):
    v = view(
        cases,
        lambda c: c.case_spec.domain.type == "unit_cube" and not c.case_spec.output.components,
    )
    g = v["case_spec"]["eval_grid"]
    shape = (g["nz"], g["ny"], g["nx"])
    u = np.arange(np.prod(shape), dtype=float).reshape(shape)
    write(tmp_path / "solution_grid.bin", u)
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    arrays = load_solution_npz(out.npz_path, workdir=tmp_path)
    name = v["case_spec"]["output"]["field"]
    assert arrays[name].shape == shape and arrays[name][1, 2, 3] == u[1, 2, 3]
    assert arrays["z"].shape == (g["nz"],)


def test_vector_output_needs_one_file_per_array(cases, tmp_path):
    v = view(cases, lambda c: bool(c.case_spec.output.components))
    g = v["case_spec"]["eval_grid"]
    names = v["case_spec"]["output"]["components"]
    shape = (g["ny"], g["nx"]) if g.get("nz") is None else (g["nz"], g["ny"], g["nx"])
    write(tmp_path / f"solution_grid_{names[0]}.bin", np.ones(shape))
    missing = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    assert missing.npz_path is None and missing.reason == "missing_artifact"
    assert f"solution_grid_{names[1]}.bin" in missing.message
    for k, name in enumerate(names):
        write(tmp_path / f"solution_grid_{name}.bin", np.full(shape, float(k)))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    arrays = load_solution_npz(out.npz_path, workdir=tmp_path)
    assert [float(arrays[n].max()) for n in names] == [float(k) for k in range(len(names))]


def test_wrong_size_is_bad_shape_with_both_sizes(cases, tmp_path):
    v = view(cases, lambda c: c.family == "poisson" and c.case_spec.domain.type == "unit_square")
    g = v["case_spec"]["eval_grid"]
    write(tmp_path / "solution_grid.bin", np.zeros((g["ny"] - 1) * g["nx"]))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    assert out.npz_path is None and out.reason == "bad_shape"
    expected = g["nx"] * g["ny"]
    assert f"expected {8 * expected} bytes ({expected} values)" in out.message
    assert f"{(g['ny'] - 1) * g['nx']} float64 values" in out.message
    assert f"{g['ny']} x {g['nx']}" in out.message


def test_hostile_grid_files_are_refused(cases, tmp_path):
    v = view(cases, lambda c: c.family == "poisson" and c.case_spec.domain.type == "unit_square")
    secret = tmp_path / "secret.bin"
    g = v["case_spec"]["eval_grid"]
    write(secret, np.zeros(g["nx"] * g["ny"]))
    work = tmp_path / "work"
    work.mkdir()
    (work / "solution_grid.bin").symlink_to(secret)
    out = pdeagent_adapt_output(track=TRACK, workdir=work, case_view=v)
    assert out.npz_path is None and out.reason == "bad_artifact"
    (work / "solution_grid.bin").unlink()
    (work / "solution_grid.bin").mkdir()
    out = pdeagent_adapt_output(track=TRACK, workdir=work, case_view=v)
    assert out.npz_path is None and out.reason == "bad_artifact"


def test_muparser_view_mirrors_every_expression(cases):
    for family in ("heat", "stokes", "poisson", "linear_elasticity"):
        v = view(cases, lambda c, f=family: c.family == f)
        spec = v["case_spec"]
        mp = muparser_view(spec)
        text = json.dumps(mp)
        assert "**" not in text
        forcing = spec["pde"]["forcing"]["f"]
        if "**" in json.dumps(forcing):
            assert "^" in json.dumps(mp["pde"]["forcing"])
        if isinstance(forcing, list):
            assert len(mp["pde"]["forcing"]["f"]) == len(forcing)
        assert len(mp["bc"]["dirichlet"]) == len(spec["bc"]["dirichlet"])
        if spec.get("ic"):
            assert set(mp["ic"]) == set(spec["ic"])
    # numbers for pi, parameters substituted, ln for log
    assert (
        muparser_view(
            {
                "domain": {"bounds": [[0, 1], [0, 1]]},
                "pde": {"params": {"k": 2.0}, "forcing": {"f": "k*log(x)*pi*y**2"}, "time": None},
                "bc": {},
                "ic": None,
            }
        )["pde"]["forcing"]["f"]
        == "(((2.0)*ln(x))*3.141592653589793)*(y^2)"
    )
