"""Flow outputs (issue #19 item 4): Stokes and Navier-Stokes score the velocity and the
pressure as separate groups; the case's error is the larger of the two relative L2
errors, a ``zero_mean`` pressure compared after subtracting its own mean on each side.

Metrics by the numbers, validation messages, the construction of the design's flow cases
(the manufactured (u, p) satisfy the family's equations), references, the artifact check,
the prompt, and a graded run through the sandbox on the sample track.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy as sp

from pdeagent.cases.agent_view import EVALUATOR_ONLY_FIELDS, agent_view
from pdeagent.cases.cheat import cheat_errors
from pdeagent.cases.construct import MAGNITUDE_REASON, Instance, case_record
from pdeagent.cases.design import candidates, load_designs
from pdeagent.cases.expressions import parse_expression
from pdeagent.cases.families import flow_pressure_normalization
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import (
    BoundaryConditions,
    Case,
    OutputSpec,
    case_from_dict,
    case_to_dict,
    converter,
    output_arrays,
)
from pdeagent.cases.validate import validate_records
from pdeagent.evaluation.reference import ReferenceUnavailable, reference_fields
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.prompts.builder import build_prompt
from pdeagent.scoring.artifacts import check_solution
from pdeagent.scoring.metrics import (
    case_error,
    compute_metrics,
    group_errors,
    normalized_arrays,
    relative_l2,
)

from .conftest import REPO_ROOT
from .test_prompts import PIECES, THRESHOLD_NUMBERS, TRACK

DESIGN = REPO_ROOT / "cases" / "design"
DATASET = REPO_ROOT / "cases" / "pdeagent-v1.jsonl"
ZERO_MEAN_SENTENCE = (
    "The pressure is determined only up to a constant; report it with zero mean over the "
    "domain — scoring subtracts the mean over the scored grid points from your pressure and "
    "from the reference, so the constant you choose does not change the score."
)


def _output(normalization: str | None = "zero_mean", **kw: Any) -> OutputSpec:
    data: dict[str, Any] = {"format": "npz", "field": "velocity", "components": ["u_x", "u_y"]}
    if normalization is not None:
        data["pressure"] = {"array": "p", "normalization": normalization}
    data.update(kw)
    return converter.structure(data, OutputSpec)


def _fields(rng: np.random.Generator, names: list[str], shape=(13, 17)) -> dict[str, np.ndarray]:
    return {n: rng.normal(size=shape) * (1 + i) + i for i, n in enumerate(names)}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(19)


@pytest.fixture
def mask(rng) -> np.ndarray:
    m = rng.random((13, 17)) < 0.7
    m[0, 0] = True
    return m


# ------------------------------------------------------------------------------ the model


def test_output_spec_arrays_and_groups():
    out = _output("zero_mean")
    assert out.field_arrays == ["u_x", "u_y"]
    assert out.arrays == ["u_x", "u_y", "p"]
    assert out.groups == [("velocity", ["u_x", "u_y"]), ("p", ["p"])]
    assert output_arrays(converter.unstructure(out)) == ["u_x", "u_y", "p"]
    old = _output(None)
    assert old.arrays == ["u_x", "u_y"] and old.groups == [("velocity", ["u_x", "u_y"])]
    mag = converter.structure({"field": "velocity_magnitude", "reason": "why"}, OutputSpec)
    assert mag.arrays == ["velocity_magnitude"]
    assert mag.groups == [("velocity_magnitude", ["velocity_magnitude"])]
    # unset optional entries stay out of the record (old records keep their exact form)
    assert converter.unstructure(old) == {
        "field": "velocity",
        "components": ["u_x", "u_y"],
        "format": "npz",
    }
    assert converter.unstructure(out)["pressure"] == {"array": "p", "normalization": "zero_mean"}


# ---------------------------------------------------------------------------- the metric


@pytest.mark.parametrize(
    "output",
    [
        converter.structure({"field": "u"}, OutputSpec),
        _output(None),
        converter.structure({"field": "velocity_magnitude", "reason": "r"}, OutputSpec),
    ],
    ids=["scalar", "components", "magnitude"],
)
def test_one_group_is_relative_l2_bit_for_bit(rng, mask, output):
    ref = _fields(rng, output.arrays)
    for scale in (1e-3, 0.3, 2.0):
        sub = {n: v + scale * rng.normal(size=v.shape) for n, v in ref.items()}
        sub[output.arrays[0]][~mask] = np.nan  # never read
        want = relative_l2(sub, ref, mask)
        assert case_error(sub, ref, mask, output) == want  # exactly: the same call
        assert group_errors(sub, ref, mask, output) == {output.field: want}
        assert compute_metrics(sub, ref, mask, output=output)["rel_l2"] == want
        plain = compute_metrics(sub, ref, mask)
        grouped = compute_metrics(sub, ref, mask, output=output)
        assert grouped.pop("rel_l2_groups") == {output.field: want}
        assert grouped == plain


def test_zero_mean_pressure_ignores_any_constant(rng, mask):
    ref = _fields(rng, ["u_x", "u_y", "p"])
    ref["p"] = 5.0 * ref["p"]
    sub = {n: v.copy() for n, v in ref.items()}
    sub["p"] = ref["p"] + 123.4
    sub["p"][~mask] = np.nan
    assert case_error(sub, ref, mask, _output("zero_mean")) <= 1e-14
    # the reference's own constant does not matter either
    shifted_ref = {**ref, "p": ref["p"] - 55.5}
    assert case_error(sub, shifted_ref, mask, _output("zero_mean")) <= 1e-14
    # an absolute pressure keeps its constant: the offset is the whole error
    error = case_error(sub, ref, mask, _output("absolute"))
    p = ref["p"][mask]
    assert error == pytest.approx(123.4 * math.sqrt(p.size) / np.linalg.norm(p), rel=1e-12)
    assert error > 5


def test_the_larger_group_error_decides(rng, mask):
    ref = _fields(rng, ["u_x", "u_y", "p"])
    out = _output("zero_mean")
    p_mean = float(ref["p"][mask].mean())
    # velocity exact, pressure 10 % off (plus an arbitrary constant)
    sub = {n: v.copy() for n, v in ref.items()}
    sub["p"] = ref["p"] + 0.1 * (ref["p"] - p_mean) + 7.0
    groups = group_errors(sub, ref, mask, out)
    assert groups["velocity"] == 0.0
    assert groups["p"] == pytest.approx(0.1, rel=1e-12)
    assert case_error(sub, ref, mask, out) == pytest.approx(0.1, rel=1e-12)
    # pressure exact, velocity 10 % off
    sub = {n: v.copy() for n, v in ref.items()}
    sub["u_x"], sub["u_y"] = 1.1 * ref["u_x"], 1.1 * ref["u_y"]
    groups = group_errors(sub, ref, mask, out)
    assert groups == {"velocity": pytest.approx(0.1, rel=1e-12), "p": 0.0}
    assert case_error(sub, ref, mask, out) == pytest.approx(0.1, rel=1e-12)
    # both off: the larger one, not a combination
    sub["u_x"], sub["u_y"] = 1.03 * ref["u_x"], 1.03 * ref["u_y"]
    sub["p"] = ref["p"] - 0.1 * (ref["p"] - p_mean)
    assert case_error(sub, ref, mask, out) == pytest.approx(0.1, rel=1e-12)
    metrics = compute_metrics(sub, ref, mask, output=out)
    assert metrics["rel_l2_groups"] == {
        "velocity": pytest.approx(0.03, rel=1e-12),
        "p": pytest.approx(0.1, rel=1e-12),
    }
    assert metrics["rel_l2"] == pytest.approx(0.1, rel=1e-12)


def test_a_large_pressure_does_not_hide_a_velocity_error(rng, mask):
    """The old metric (one L2 over everything) lets a big pressure swamp the velocity."""
    ref = _fields(rng, ["u_x", "u_y", "p"])
    ref["p"] = 1e3 * (ref["p"] - ref["p"][mask].mean())
    sub = {**ref, "u_x": 1.5 * ref["u_x"], "u_y": 1.5 * ref["u_y"]}
    assert relative_l2(sub, ref, mask) < 0.01
    assert case_error(sub, ref, mask, _output("absolute")) == pytest.approx(0.5, rel=1e-12)


def test_normalized_arrays_and_name_checks(rng, mask):
    ref = _fields(rng, ["u_x", "u_y", "p"])
    out = _output("zero_mean")
    norm = normalized_arrays(ref, mask, out)
    assert abs(norm["p"][mask].mean()) < 1e-14
    assert norm["u_x"] is ref["u_x"]
    assert normalized_arrays(ref, mask, _output("absolute"))["p"] is ref["p"]
    with pytest.raises(ValueError, match="not those of the output spec"):
        case_error({"u_x": ref["u_x"]}, {"u_x": ref["u_x"]}, mask, out)


# ---------------------------------------------------------------------------- validation


def _flow_record(**kw: Any) -> dict[str, Any]:
    inst = Instance(
        kw.pop("family", "stokes"), "s", 0, "mms", "unit_square", "trig", "dirichlet",
        {"nu": 1.0}, output=kw.pop("output", "components"),
    )  # fmt: skip
    return case_record(inst, dataset_version="2.0.0")


def _messages(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.field, p.message) for p in validate_records([record])]


def test_constructed_flow_records_validate_and_old_form_still_does():
    record = _flow_record()
    assert _messages(record) == []
    old = copy.deepcopy(record)
    del old["case_spec"]["output"]["pressure"]
    del old["evaluation_metadata"]["manufactured_solution"]["p"]
    assert _messages(old) == []
    # the manufactured pressure is required once the output names it
    no_p = copy.deepcopy(record)
    del no_p["evaluation_metadata"]["manufactured_solution"]["p"]
    assert _messages(no_p) == [
        ("evaluation_metadata.manufactured_solution", "missing expression for output array 'p'")
    ]


def test_bad_normalization_is_rejected():
    record = _flow_record()
    record["case_spec"]["output"]["pressure"]["normalization"] = "mean_free"
    ((field, message),) = _messages(record)
    assert field == "case_spec.output.pressure.normalization"
    assert "'mean_free' is not one of ['zero_mean', 'absolute']" in message


def test_normalization_must_fit_the_boundary_conditions():
    record = _flow_record()
    record["case_spec"]["output"]["pressure"]["normalization"] = "absolute"
    ((field, message),) = _messages(record)
    assert field == "case_spec.output.pressure.normalization"
    assert "determined only up to a constant" in message and "'zero_mean'" in message


def test_pressure_on_a_poisson_case_is_rejected():
    inst = Instance("poisson", "s", 0, "mms", "unit_square", "trig", "dirichlet", {"kappa": 1.0})
    record = case_record(inst, dataset_version="2.0.0")
    record["case_spec"]["output"]["pressure"] = {"array": "p", "normalization": "zero_mean"}
    record["evaluation_metadata"]["manufactured_solution"]["p"] = "x"
    ((field, message),) = _messages(record)
    assert field == "case_spec.output.pressure"
    assert message == (
        "a pressure output is defined only for navier_stokes and stokes; family poisson has "
        "no pressure"
    )


@pytest.mark.parametrize("name", ["u_x", "velocity", "x", "2p"])
def test_pressure_array_name_must_be_new_and_an_identifier(name):
    record = _flow_record()
    record["case_spec"]["output"]["pressure"]["array"] = name
    record["evaluation_metadata"]["manufactured_solution"][name] = "x"
    if name in ("u_x", "velocity"):
        text = f"array name {name!r} is already the name of the field or a component"
    else:
        text = f"array name {name!r} must be an identifier and not x, y or z"
    assert _messages(record) == [("case_spec.output.pressure.array", text)]


def test_reason_only_on_a_magnitude_output():
    record = _flow_record()
    record["case_spec"]["output"]["reason"] = "because"
    ((field, message),) = _messages(record)
    assert field == "case_spec.output.reason"
    assert "derived scalar output" in message
    magnitude = _flow_record(output="magnitude")
    assert _messages(magnitude) == []
    magnitude["case_spec"]["output"]["reason"] = "  "
    assert _messages(magnitude) == [("case_spec.output.reason", "reason must not be empty")]


def test_flow_pressure_normalization_rule():
    tags = get_geometry("unit_square", {}).boundary_tags

    def rule(bc: dict[str, Any]) -> str:
        full = {"dirichlet": [], "neumann": [], "robin": [], "periodic": [], **bc}
        return flow_pressure_normalization(converter.structure(full, BoundaryConditions), tags)

    vel = {"value": ["0", "0"], "quantity": "velocity"}
    assert rule({"dirichlet": [{"boundary": ["all"], **vel}]}) == "zero_mean"
    lid = [{"boundary": ["ymax"], **vel}, {"boundary": ["xmin", "xmax", "ymin"], **vel}]
    assert rule({"dirichlet": lid}) == "zero_mean"
    assert rule({"dirichlet": lid[1:]}) == "absolute"  # ymax: natural outflow condition
    traction = {"boundary": ["ymax"], "value": ["0", "0"], "quantity": "traction"}
    assert rule({"dirichlet": lid[1:], "neumann": [traction]}) == "absolute"
    pressure = {"boundary": ["ymax"], "value": "1", "quantity": "pressure"}
    assert rule({"dirichlet": [lid[1], pressure]}) == "absolute"
    periodic = [{"axis": "x", "boundary": "xmin", "partner": "xmax"}]
    walls = [{"boundary": ["ymin", "ymax"], **vel}]
    assert rule({"dirichlet": walls, "periodic": periodic}) == "zero_mean"


# -------------------------------------------------------------------------- construction


def _design_records(family: str) -> list[dict[str, Any]]:
    """The first candidates of every stratum of the family's design."""
    (design,) = load_designs(DESIGN, [family])
    records = []
    for stratum in design.strata:
        for inst in list(candidates(design, stratum))[:4]:
            records.append(case_record(inst, dataset_version="2.0.0"))
    return records


X, Y, T = sp.symbols("x y t")


def _residual_max(record: dict[str, Any]) -> tuple[float, float, float]:
    """Largest |momentum residual|, |div u| and |f| of the manufactured (u, p) at sample
    points (sympy derivatives, evaluated numerically)."""
    spec = record["case_spec"]
    exact = record["evaluation_metadata"]["manufactured_solution"]
    params = {k: v for k, v in spec["pde"]["params"].items() if isinstance(v, int | float)}
    nu = sp.Float(spec["pde"]["params"]["nu"])
    u = [parse_expression(exact[n], parameters=params) for n in ("u_x", "u_y")]
    p = parse_expression(exact["p"], parameters=params)
    f = [parse_expression(c, parameters=params) for c in spec["pde"]["forcing"]["f"]]
    transient = spec["pde"]["time"] is not None
    residual = []
    for i, c in enumerate((X, Y)):
        r = -nu * (sp.diff(u[i], X, 2) + sp.diff(u[i], Y, 2)) + sp.diff(p, c) - f[i]
        if spec["pde"]["type"] == "navier_stokes":
            r += u[0] * sp.diff(u[i], X) + u[1] * sp.diff(u[i], Y)
        if transient:
            r += sp.diff(u[i], T)
        residual.append(r)
    div = sp.diff(u[0], X) + sp.diff(u[1], Y)
    fn = sp.lambdify((X, Y, T), [*residual, div, *f], "numpy")
    pts = np.random.default_rng(4).random((2, 25))
    worst = [0.0, 0.0, 0.0]
    for t in (0.0, 0.37) if transient else (0.0,):
        values = [np.broadcast_to(np.asarray(v, float), (25,)) for v in fn(pts[0], pts[1], t)]
        worst[0] = max(worst[0], float(np.max(np.abs(values[0]))), np.max(np.abs(values[1])))
        worst[1] = max(worst[1], float(np.max(np.abs(values[2]))))
        worst[2] = max(worst[2], float(np.max(np.abs(values[3]))), np.max(np.abs(values[4])))
    return worst[0], worst[1], worst[2]


@pytest.mark.parametrize("family", ["stokes", "navier_stokes"])
def test_design_flow_cases_score_the_pressure(family):
    records = _design_records(family)
    kinds = {"components": 0, "magnitude": 0, "transient": 0, "reference": 0}
    for record in records:
        assert _messages(record) == [], record["id"]
        case = case_from_dict(record)
        output = case.case_spec.output
        exact = record["evaluation_metadata"]["manufactured_solution"]
        if output.components:
            kinds["components"] += 1
            assert output.arrays == ["u_x", "u_y", "p"]
            assert output.pressure is not None
            assert output.pressure.normalization == "zero_mean"  # velocity on all boundaries
            assert output.reason is None
            if exact is None:
                kinds["reference"] += 1
                continue
            assert set(exact) == {"u_x", "u_y", "p"}
            kinds["transient"] += case.case_spec.pde.time is not None
            momentum, div, scale = _residual_max(record)
            assert momentum <= 1e-9 * max(scale, 1.0), (record["id"], momentum, scale)
            assert div <= 1e-9 * max(scale, 1.0), (record["id"], div)
            ref = reference_fields(case)
            assert set(ref) == {"u_x", "u_y", "p"}
            scored = evaluation_mask(
                case.case_spec.eval_grid, get_geometry(case.case_spec.domain.type, {})
            ).scored
            assert all(v.shape == case.case_spec.eval_grid.shape for v in ref.values())
            assert np.isfinite(ref["p"][scored]).all() and np.ptp(ref["p"][scored]) > 0.1
            # the data-sampling cheat is scored on the velocity (the data give no pressure)
            errors = cheat_errors(case, ref)
            assert errors and min(errors.values()) > 0.05
        else:
            kinds["magnitude"] += 1
            assert output.arrays == ["velocity_magnitude"] and output.pressure is None
            title = "Stokes" if family == "stokes" else "Navier-Stokes"
            assert output.reason == MAGNITUDE_REASON.format(title=title)
            assert "paper" in output.reason and "published" in output.reason
            if exact is not None:
                assert set(exact) == {"velocity_magnitude"}
    assert kinds["components"] >= 3 and kinds["magnitude"] >= 2 and kinds["reference"] >= 1
    if family == "navier_stokes":
        assert kinds["transient"] >= 1


def test_no_exact_flow_reference_holds_the_pressure(tmp_path):
    inst = Instance(
        "stokes", "lid", 0, "reference", "unit_square", "lid_driven", "dirichlet",
        {"nu": 1.0}, output="components",
        reference_config={"mesh_resolution": 64, "element_degree": 3},
    )  # fmt: skip
    record = case_record(inst, dataset_version="2.0.0")
    assert _messages(record) == []
    assert record["case_spec"]["output"]["pressure"] == {
        "array": "p",
        "normalization": "zero_mean",
    }
    case = case_from_dict(record)
    shape = case.case_spec.eval_grid.shape
    path = tmp_path / case.evaluation_metadata.reference_path
    path.parent.mkdir(parents=True)
    arrays = {n: np.full(shape, float(i)) for i, n in enumerate(("u_x", "u_y", "p"))}
    np.savez(path, **arrays)
    ref = reference_fields(case, tmp_path)
    assert sorted(ref) == ["p", "u_x", "u_y"] and (ref["p"] == 2.0).all()
    np.savez(path, u_x=arrays["u_x"], u_y=arrays["u_y"])
    with pytest.raises(ReferenceUnavailable, match="lacks 'p'"):
        reference_fields(case, tmp_path)


def test_shipped_dataset_flow_cases_keep_the_old_metric():
    cases = [c for c in load_cases(DATASET) if c.family in ("stokes", "navier_stokes")]
    assert cases
    rng = np.random.default_rng(3)
    for case in cases[:12]:
        output = case.case_spec.output
        assert output.pressure is None and output.reason is None
        assert len(output.groups) == 1
        ref = {n: rng.normal(size=(9, 11)) for n in output.arrays}
        sub = {n: v + 0.01 * rng.normal(size=v.shape) for n, v in ref.items()}
        mask = rng.random((9, 11)) < 0.8
        assert case_error(sub, ref, mask, output) == relative_l2(sub, ref, mask)
        # the record's form is unchanged by a round trip
        assert "pressure" not in case_to_dict(case)["case_spec"]["output"]


# ------------------------------------------------------------------- artifacts and prompt


def test_artifact_without_the_pressure_is_refused():
    case = case_from_dict(_flow_record())
    grid = case.case_spec.eval_grid
    mask = np.ones(grid.shape, dtype=bool)
    arrays = {
        "x": np.linspace(0, 1, grid.nx),
        "y": np.linspace(0, 1, grid.ny),
        "u_x": np.zeros(grid.shape),
        "u_y": np.zeros(grid.shape),
    }
    res = check_solution(arrays, grid, case.case_spec.output, mask)
    assert (res.ok, res.reason) == (False, "bad_components")
    assert res.message.startswith("missing arrays ['p']")
    res = check_solution({**arrays, "p": np.zeros(grid.shape)}, grid, case.case_spec.output, mask)
    assert res.ok and sorted(res.fields) == ["p", "u_x", "u_y"]


def test_python_null_program_writes_the_pressure_too(tmp_path, monkeypatch):
    from pdeagent.contracts.python_null import null_source

    case = case_from_dict(_flow_record())
    namespace: dict[str, Any] = {}
    exec(compile(null_source("NumPy", []), "null.py", "exec"), namespace)
    monkeypatch.chdir(tmp_path)
    namespace["solve"](agent_view(case, "dolfinx")["case_spec"])
    with np.load(tmp_path / "solution.npz") as data:
        assert sorted(data.files) == ["p", "u_x", "u_y", "x", "y"]
        assert data["p"].shape == case.case_spec.eval_grid.shape


def _demo_case(record: dict[str, Any]) -> Case:
    record = copy.deepcopy(record)
    record["supported_libraries"] = ["demo", "dolfinx"]
    record["evaluation_metadata"]["thresholds"] = {
        "demo": {**THRESHOLD_NUMBERS, "calibrated_on": {}},
    }
    return case_from_dict(record)


def test_agent_view_and_prompt_of_a_flow_case_with_pressure():
    case = _demo_case(_flow_record(family="navier_stokes"))
    view = agent_view(case, "demo")
    assert view["case_spec"]["output"]["pressure"] == {"array": "p", "normalization": "zero_mean"}
    text = json.dumps(view)
    assert not any(key in text for key in EVALUATOR_ONLY_FIELDS)
    assert "manufactured" not in text
    prompt = build_prompt(case, TRACK, PIECES)
    assert "`u_x`, `u_y`, `p`." in prompt  # the arrays to write
    assert "the pressure `p`" in prompt
    assert "one relative L2 error over `u_x`, `u_y` and one over `p`" in prompt
    assert "each must be within the accuracy tolerance" in prompt
    assert ZERO_MEAN_SENTENCE in prompt
    for number in THRESHOLD_NUMBERS.values():
        assert str(number) not in prompt and f"{number:.4e}" not in prompt


def test_prompt_of_a_magnitude_case_states_its_reason():
    case = _demo_case(_flow_record(output="magnitude"))
    assert "reason" in agent_view(case, "demo")["case_spec"]["output"]
    prompt = build_prompt(case, TRACK, PIECES)
    assert MAGNITUDE_REASON.format(title="Stokes") in prompt
    assert "`p`" not in prompt and ZERO_MEAN_SENTENCE not in prompt


# ------------------------------------------------------- graded through the sandbox


SUBMISSION = """\
import numpy as np

EXACT = {exact!r}
OFFSET = {offset!r}
NAMES = {names!r}


def solve(case_spec):
    g = case_spec["eval_grid"]
    b = g["bbox"]
    x = np.linspace(b[0], b[1], g["nx"])
    y = np.linspace(b[2], b[3], g["ny"])
    X, Y = np.meshgrid(x, y)
    env = {{"x": X, "y": Y, "t": 0.0, "pi": np.pi, "sin": np.sin, "cos": np.cos,
            "exp": np.exp, "sqrt": np.sqrt}}
    out = {{}}
    for name in NAMES:
        value = eval(EXACT[name], {{"__builtins__": {{}}}}, env)
        out[name] = np.broadcast_to(np.asarray(value, float), X.shape).copy()
    out["p"] = out["p"] * {p_scale!r} + OFFSET if "p" in out else None
    np.savez("solution.npz", x=x, y=y, **{{k: v for k, v in out.items() if v is not None}})
"""


@pytest.fixture(scope="module")
def flow_case() -> Case:
    record = _flow_record()
    record["case_spec"]["eval_grid"].update(nx=17, ny=17)
    record["supported_libraries"] = ["numpy_fd"]
    record["evaluation_config"]["timed_repeats"] = 1
    record["evaluation_config"]["timeout_sec"] = 60.0
    return case_from_dict(record)


def _grade(host, track, case: Case, names: list[str], offset: float = 0.0, p_scale: float = 1.0):
    from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
    from pdeagent.sandbox import default_sandbox
    from pdeagent.sandbox.base import Limits

    exact = dict(case.evaluation_metadata.manufactured_solution or {})
    source = SUBMISSION.format(exact=exact, offset=offset, names=names, p_scale=p_scale)
    policy = GradingPolicy(tau_acc=1e-2, tau_time=60.0)
    with tempfile.TemporaryDirectory(prefix="pdeagent-test-", dir="/var/tmp") as d:
        return evaluate_source(
            host,
            track,
            case,
            source,
            sandbox=default_sandbox(),
            workroot=Path(d) / "eval",
            thresholds=resolve_thresholds(case, track.name, policy),
            policy=policy,
            limits=Limits(wall_time_sec=60.0, address_space_bytes=4 * 1024**3),
        )


@pytest.mark.sandbox
def test_graded_flow_case_pressure_constant_and_missing_pressure(host, track, flow_case):
    # exact velocity, exact pressure plus a constant: PASS with a round-off error
    report = _grade(host, track, flow_case, ["u_x", "u_y", "p"], offset=123.4)
    assert report.verdict == "PASS", report
    assert report.error < 1e-12
    assert set(report.metrics["rel_l2_groups"]) == {"velocity", "p"}
    assert report.metrics["rel_l2"] == report.error
    # a 10 % pressure error fails the accuracy gate with that error, named per group
    report = _grade(host, track, flow_case, ["u_x", "u_y", "p"], offset=-3.0, p_scale=1.1)
    assert report.verdict == "F-Acc", report
    assert report.metrics["rel_l2_groups"]["velocity"] < 1e-12
    assert report.error == pytest.approx(0.1, rel=1e-9)
    assert "velocity" in report.message and "p 1.000e-01" in report.message
    # no pressure array: refused before any scoring
    report = _grade(host, track, flow_case, ["u_x", "u_y"])
    assert (report.verdict, report.reason) == ("F-Exec", "bad_components")
    assert "missing arrays ['p']" in report.message
