"""The deal.II output adapter and the muparser view (no compiler needed)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.scoring.artifacts import load_solution_npz
from pdeagent_dealii import TRACK, muparser_view, output_arrays, pdeagent_adapt_output

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


PRESSURE = {"array": "p", "normalization": "zero_mean"}


def flow_view(cases, **output):
    """A 2-D Stokes case of the dataset with the given output (plus the npz format)."""
    v = copy.deepcopy(
        view(cases, lambda c: c.family == "stokes" and len(c.case_spec.domain.bounds) == 2)
    )
    v["case_spec"]["output"] = {"format": "npz", "components": None, **output}
    return v


def test_output_arrays_append_the_pressure_array():
    assert output_arrays({"field": "u", "components": None}) == ["u"]
    assert output_arrays({"field": "velocity", "components": ["u_x", "u_y"]}) == ["u_x", "u_y"]
    velocity = {"field": "velocity", "components": ["u_x", "u_y"], "pressure": PRESSURE}
    assert output_arrays(velocity) == ["u_x", "u_y", "p"]
    magnitude = {"field": "velocity_magnitude", "reason": "...", "pressure": PRESSURE}
    assert output_arrays(magnitude) == ["velocity_magnitude", "p"]
    assert output_arrays({"field": "u", "pressure": None}) == ["u"]
    with pytest.raises(ValueError, match="must name its array"):
        output_arrays({"field": "velocity_magnitude", "pressure": {"normalization": "absolute"}})


def test_velocity_and_pressure_files_become_u_x_u_y_p(cases, tmp_path):
    v = flow_view(cases, field="velocity", components=["u_x", "u_y"], pressure=PRESSURE)
    g = v["case_spec"]["eval_grid"]
    shape = (g["ny"], g["nx"])
    for k, name in enumerate(("u_x", "u_y", "p")):
        write(tmp_path / f"solution_grid_{name}.bin", np.full(shape, float(k + 1)))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    arrays = load_solution_npz(out.npz_path, workdir=tmp_path)
    assert sorted(set(arrays) - {"x", "y"}) == ["p", "u_x", "u_y"]
    assert [float(arrays[n].max()) for n in ("u_x", "u_y", "p")] == [1.0, 2.0, 3.0]
    assert arrays["p"].shape == shape


def test_missing_pressure_file_is_a_missing_artifact(cases, tmp_path):
    v = flow_view(cases, field="velocity", components=["u_x", "u_y"], pressure=PRESSURE)
    g = v["case_spec"]["eval_grid"]
    for name in ("u_x", "u_y"):
        write(tmp_path / f"solution_grid_{name}.bin", np.zeros((g["ny"], g["nx"])))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    assert out.npz_path is None and out.reason == "missing_artifact"
    assert "solution_grid_p.bin" in out.message


def test_magnitude_with_pressure_needs_one_file_per_array(cases, tmp_path):
    """A single field plus the pressure are two arrays: solution_grid.bin is not read."""
    v = flow_view(cases, field="velocity_magnitude", reason="x", pressure=PRESSURE)
    g = v["case_spec"]["eval_grid"]
    shape = (g["ny"], g["nx"])
    write(tmp_path / "solution_grid.bin", np.ones(shape))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    assert (
        out.reason == "missing_artifact" and "solution_grid_velocity_magnitude.bin" in out.message
    )
    write(tmp_path / "solution_grid_velocity_magnitude.bin", np.ones(shape))
    write(tmp_path / "solution_grid_p.bin", np.full(shape, -1.0))
    out = pdeagent_adapt_output(track=TRACK, workdir=tmp_path, case_view=v)
    arrays = load_solution_npz(out.npz_path, workdir=tmp_path)
    assert sorted(set(arrays) - {"x", "y"}) == ["p", "velocity_magnitude"]
    assert float(arrays["p"].min()) == -1.0


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
