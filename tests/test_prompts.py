"""Prompt building (SPEC §8, §9): determinism, section order, no leaks, every family."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pdeagent.cases.families import FAMILIES
from pdeagent.cases.model import Case, case_from_dict
from pdeagent.prompts import builder
from pdeagent.prompts.builder import (
    PREVIOUS_CODE_CHARS,
    Feedback,
    build_feedback_turn,
    build_prompt,
    make_environment,
    templates_dir,
)
from pdeagent.prompts.summary import summarize_case
from pdeagent.stages import PromptPieces, Track

agent_view_module = pytest.importorskip("pdeagent.cases.agent_view")
agent_view = agent_view_module.agent_view

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "cases" / "examples.jsonl"

TRACK = Track("demo", "Demo", "python", "solver.py")
PIECES = PromptPieces(
    contract="Define `solve(case_spec: dict) -> None` in solver.py; write solution.npz.",
    guide="Demo API guide: `demo.mesh(n)`, `demo.solve(form)`.",
    scaffold="import demo\n\n\ndef solve(case_spec):\n    ...  # NUMERICAL CORE HERE\n",
    input_note="Expressions arrive as sympy strings.",
)
HEADINGS = [
    "## 1. Task summary",
    "## 2. Governing equations",
    "## 3. Case specification",
    "## 4. Implementation contract",
    "## 5. Output and sandbox requirements",
    "## 6. Demo API guide",
]
SCAFFOLD_HEADING = "## Scaffold (template-guided mode)"

CANARIES = {
    "manufactured": "CANARYMMS7731",
    "reference": "CANARYREF4410",
    "calibration": "CANARYCAL9902",
    "calibrated_on": "CANARYMACHINE5521",
    "structure": "CANARYSTRUCT1187",
    "difficulty": "CANARYDIFF6634",
    "reference_path": "CANARYPATH3309",
}
THRESHOLD_NUMBERS = {
    "e_base": 0.000123457,
    "t_base": 7.654321,
    "tau_acc": 0.00234567,
    "tau_time": 22.962963,
}

# Minimal agent-visible pieces per family: (params, forcing, bc, ic, time, output, domain).
_STEADY = None
_TIME = {"t0": 0.0, "t_end": 0.5}


def _scalar_bc() -> dict[str, Any]:
    return {"dirichlet": [{"boundary": ["all"], "value": "x + y", "quantity": None}]}


def _flow_bc() -> dict[str, Any]:
    return {"dirichlet": [{"boundary": ["all"], "value": ["y", "-x"], "quantity": "velocity"}]}


FAMILY_CASES: dict[str, dict[str, Any]] = {
    "poisson": {"params": {"kappa": 1.0}, "forcing": {"f": "1"}, "bc": _scalar_bc()},
    "helmholtz": {"params": {"k": 4.0}, "forcing": {"f": "x"}, "bc": _scalar_bc()},
    "biharmonic": {
        "params": {},
        "forcing": {"f": "1"},
        "bc": {
            "dirichlet": [
                {"boundary": ["all"], "value": "0", "quantity": "u"},
                {"boundary": ["all"], "value": "0", "quantity": "laplacian_u"},
            ]
        },
    },
    "linear_elasticity": {
        "params": {"E": 1.0, "nu": 0.3, "model": "plane_strain"},
        "forcing": {"f": ["0", "-1"]},
        "bc": {"dirichlet": [{"boundary": ["xmin"], "value": ["0", "0"], "quantity": "u"}]},
        "output": {"format": "npz", "field": "u", "components": ["u_x", "u_y"]},
    },
    "heat": {
        "params": {"kappa": 0.5},
        "forcing": {"f": "0"},
        "bc": _scalar_bc(),
        "ic": {"u": "sin(pi*x)"},
        "time": _TIME,
    },
    "convection_diffusion": {
        "params": {"epsilon": 0.01, "beta": [1.0, 0.5]},
        "forcing": {"f": "1"},
        "bc": _scalar_bc(),
    },
    "reaction_diffusion": {
        "params": {"epsilon": 0.1, "sigma": 2.0, "reaction_law": "allen_cahn"},
        "forcing": {"f": "0"},
        "bc": _scalar_bc(),
        "ic": {"u": "0.1*x"},
        "time": _TIME,
    },
    "stokes": {
        "params": {"nu": 1.0},
        "forcing": {"f": ["0", "0"]},
        "bc": _flow_bc(),
        "output": {"format": "npz", "field": "velocity", "components": ["u_x", "u_y"]},
    },
    "navier_stokes": {
        "params": {"nu": 0.1},
        "forcing": {"f": ["0", "0"]},
        "bc": _flow_bc(),
        "output": {"format": "npz", "field": "velocity_magnitude", "components": None},
    },
    "burgers": {
        "params": {"nu": 0.05, "b": [1.0, 1.0]},
        "forcing": {"f": "0"},
        "bc": _scalar_bc(),
        "ic": {"u": "x**2 + y**2"},
        "time": _TIME,
    },
    "wave": {
        "params": {"c": 1.0},
        "forcing": {"f": "0"},
        "bc": _scalar_bc(),
        "ic": {"u": "sin(pi*x)*sin(pi*y)", "u_t": "0"},
        "time": {"t0": 0.0, "t_end": 1.0},
    },
}


def record(family: str, **overrides: Any) -> dict[str, Any]:
    """A minimal valid record of ``family`` with canaries in every evaluator-only field."""
    info = FAMILY_CASES[family]
    fam = FAMILIES[family]
    bc = {"dirichlet": [], "neumann": [], "robin": [], "periodic": []}
    bc.update(copy.deepcopy(info["bc"]))
    thresholds = {
        **THRESHOLD_NUMBERS,
        "calibrated_on": {"machine": CANARIES["calibrated_on"]},
    }
    data: dict[str, Any] = {
        "id": f"{family}_minimal",
        "schema_version": 1,
        "pde_classification": {
            "equation_family": family,
            "math_type": [fam.primary_math_type],
        },
        "case_spec": {
            "pde": {
                "type": family,
                "params": copy.deepcopy(info["params"]),
                "forcing": copy.deepcopy(info["forcing"]),
                "time": info.get("time"),
            },
            "domain": {
                "type": "unit_square",
                "bounds": [[0.0, 1.0], [0.0, 1.0]],
                "geometry_params": {},
            },
            "bc": bc,
            "ic": copy.deepcopy(info.get("ic")),
            "eval_grid": {
                "type": "cartesian",
                "nx": 33,
                "ny": 17,
                "nz": None,
                "bbox": [0.0, 1.0, 0.0, 1.0],
                "mask_outside": True,
            },
            "output": copy.deepcopy(
                info.get("output", {"format": "npz", "field": "u", "components": None})
            ),
        },
        "evaluation_config": {
            "target_metric": "rel_L2_grid",
            "timeout_sec": 321.0,
            "alpha_acc": 10.0,
            "alpha_time": 3.0,
            "tau_min": 1e-6,
            "timed_repeats": 3,
        },
        "evaluation_metadata": {
            "construction_method": "manufactured_solution",
            "manufactured_solution": {
                a: f"{CANARIES['manufactured']}*x"
                for a in ["u", "u_x", "u_y", "velocity_magnitude"]
            },
            "reference_config": {"mesh": CANARIES["reference"]},
            "calibration_config": {"solver": CANARIES["calibration"]},
            "reference_path": CANARIES["reference_path"],
            "thresholds": {"demo": thresholds, "dolfinx": thresholds},
        },
        "supported_libraries": ["demo", "dolfinx", "firedrake", "dealii"],
        "tags": {"structure": CANARIES["structure"], "difficulty": CANARIES["difficulty"]},
    }
    for key, value in overrides.items():
        data["case_spec"][key] = value
    return data


def make_case(family: str, **overrides: Any) -> Case:
    return case_from_dict(record(family, **overrides))


FEEDBACKS = {
    "F-Exec": Feedback(
        1,
        "x" * 5000 + "TAILMARKER",
        "F-Exec",
        "runtime_error",
        "ZeroDivisionError",
        "Traceback ...\n" + "e" * 10000,
        None,
        None,
    ),
    "F-Acc": Feedback(2, "import demo\n", "F-Acc", None, "", "", 0.0421, 1.5),
    "F-Time": Feedback(1, "import demo\n", "F-Time", None, "", "", 1e-5, 98.765),
    "F-Gen": Feedback(1, "", "F-Gen", "no_code", "no fenced code block", "", None, None),
}


def all_prompts(case: Case) -> list[str]:
    prompts = [build_prompt(case, TRACK, PIECES, mode=m) for m in ("single", "template")]
    for fb in FEEDBACKS.values():
        prompts.append(build_prompt(case, TRACK, PIECES, mode="feedback", feedback=fb))
    return prompts


def json_block(prompt: str) -> Any:
    match = re.search(r"^(`{3,})json\n(.*?)^\1$", prompt, re.S | re.M)
    assert match, "no fenced json block"
    return json.loads(match.group(2))


# --- templates location --------------------------------------------------------------


def test_templates_dir_is_checkout_templates() -> None:
    path = templates_dir()
    assert (path / "prompt.md.j2").is_file()
    assert (path / "feedback.md.j2").is_file()
    assert (path / "feedback_turn.md.j2").is_file()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_has_a_template(family: str) -> None:
    assert (templates_dir() / "families" / f"{family}.md.j2").is_file()


def test_environment_is_strict() -> None:
    env = make_environment()
    assert env.undefined.__name__ == "StrictUndefined"
    assert env.autoescape is False
    assert env.keep_trailing_newline is True


# --- determinism and structure -------------------------------------------------------


@pytest.mark.parametrize("mode", ["single", "template", "feedback"])
def test_deterministic_across_environments(mode: str) -> None:
    case = make_case("heat")
    fb = FEEDBACKS["F-Acc"] if mode == "feedback" else None
    first = build_prompt(case, TRACK, PIECES, mode=mode, feedback=fb)
    again = build_prompt(case, TRACK, PIECES, mode=mode, feedback=fb)
    builder._environment.cache_clear()
    fresh = build_prompt(make_case("heat"), TRACK, PIECES, mode=mode, feedback=fb)
    assert first == again == fresh
    assert first.encode() == fresh.encode()


def test_summary_is_deterministic_and_informative() -> None:
    spec = agent_view(make_case("heat"), "demo")["case_spec"]
    text = summarize_case(spec)
    assert text == summarize_case(copy.deepcopy(spec))
    assert "transient 2-D Heat problem" in text
    assert "[0, 0.5]" in text
    assert "unit square" in text
    assert "Dirichlet on the whole boundary" in text
    assert "33 × 17" in text
    assert "`u`" in text


def test_section_order() -> None:
    prompt = build_prompt(make_case("poisson"), TRACK, PIECES)
    positions = [prompt.index(h) for h in HEADINGS]
    assert positions == sorted(positions)
    assert SCAFFOLD_HEADING not in prompt


def test_template_mode_adds_scaffold_after_contract() -> None:
    prompt = build_prompt(make_case("poisson"), TRACK, PIECES, mode="template")
    assert "NUMERICAL CORE HERE" in prompt
    scaffold_at = prompt.index(SCAFFOLD_HEADING)
    assert prompt.index(HEADINGS[3]) < scaffold_at < prompt.index(HEADINGS[4])
    assert prompt.index("```python\nimport demo") > scaffold_at


def test_pieces_and_limits_are_in_prompt() -> None:
    prompt = build_prompt(make_case("poisson"), TRACK, PIECES)
    assert PIECES.contract in prompt
    assert PIECES.guide in prompt
    assert PIECES.input_note is not None and PIECES.input_note in prompt
    assert "321 seconds" in prompt
    assert "linspace(0, 1, 33)" in prompt and "linspace(0, 1, 17)" in prompt
    assert "u[j, i] = u(x_i, y_j)" in prompt
    assert "NaN" in prompt and "network" in prompt


def test_case_spec_block_round_trips() -> None:
    for family in sorted(FAMILIES):
        case = make_case(family)
        prompt = build_prompt(case, TRACK, PIECES)
        assert json_block(prompt) == agent_view(case, "demo")["case_spec"]


def test_three_d_grid_statement() -> None:
    case = make_case(
        "poisson",
        domain={"type": "unit_cube", "bounds": [[0, 1], [0, 1], [0, 1]], "geometry_params": {}},
        eval_grid={
            "type": "cartesian",
            "nx": 9,
            "ny": 8,
            "nz": 7,
            "bbox": [0, 1, 0, 1, 0, 1],
            "mask_outside": True,
        },
    )
    prompt = build_prompt(case, TRACK, PIECES)
    assert "(nz, ny, nx) = (7, 8, 9)" in prompt
    assert "u[k, j, i] = u(x_i, y_j, z_k)" in prompt
    assert "3-D Poisson" in prompt


# --- no leaks ------------------------------------------------------------------------


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_canaries_never_leak(family: str) -> None:
    for prompt in all_prompts(make_case(family)):
        for canary in CANARIES.values():
            assert canary not in prompt
        for number in THRESHOLD_NUMBERS.values():
            assert str(number) not in prompt
            assert f"{number:.4e}" not in prompt


def test_feedback_block_contents() -> None:
    case = make_case("poisson")
    prompt = build_prompt(case, TRACK, PIECES, mode="feedback", feedback=FEEDBACKS["F-Exec"])
    single = build_prompt(case, TRACK, PIECES)
    assert prompt.endswith(single)
    block = prompt[: -len(single)]
    assert "TAILMARKER" not in block
    assert "x" * PREVIOUS_CODE_CHARS in block
    assert "x" * (PREVIOUS_CODE_CHARS + 1) not in block
    assert "runtime_error" in block and "ZeroDivisionError" in block
    assert "e" * 10000 not in block
    assert block.index("Feedback on your previous attempt") < block.index("Failed stage")

    acc = build_prompt(case, TRACK, PIECES, mode="feedback", feedback=FEEDBACKS["F-Acc"])
    assert "4.2100e-02" in acc
    assert "98.77 s" in build_prompt(
        case, TRACK, PIECES, mode="feedback", feedback=FEEDBACKS["F-Time"]
    )


def test_feedback_turn_and_single_message_share_the_stage_text() -> None:
    case = make_case("heat")
    for fb in FEEDBACKS.values():
        turn = build_feedback_turn(case, TRACK, fb)
        block = build_prompt(case, TRACK, PIECES, mode="feedback", feedback=fb)
        stage_line = next(ln for ln in turn.splitlines() if ln.startswith("Failed stage"))
        assert stage_line in block
        advice = turn[turn.index("Advice:") : turn.index("Now write attempt")].strip()
        assert advice in block
        assert "## 1. Task summary" in block and "## 1. Task summary" not in turn


# --- every family and every example renders --------------------------------------------


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_renders(family: str) -> None:
    case = make_case(family)
    prompt = build_prompt(case, TRACK, PIECES)
    assert FAMILIES[family].title in prompt
    assert "Numerical consideration:" in prompt
    assert "{{" not in prompt and "{%" not in prompt


def test_problem_definition_is_stated() -> None:
    burgers = build_prompt(make_case("burgers"), TRACK, PIECES)
    assert "du/dt + u * (b . grad(u)) = nu * laplace(u) + f" in burgers
    rd = build_prompt(make_case("reaction_diffusion"), TRACK, PIECES)
    assert "R(u) = sigma * (u**3 - u)" in rd
    el = build_prompt(make_case("linear_elasticity"), TRACK, PIECES)
    assert "plane_strain" in el and "zero out-of-plane strain" in el
    bih = build_prompt(make_case("biharmonic"), TRACK, PIECES)
    assert "laplace(u) = g" in bih and "u = g" in bih
    wave = build_prompt(make_case("wave"), TRACK, PIECES)
    assert "`ic.u_t`" in wave
    stokes = build_prompt(make_case("stokes"), TRACK, PIECES)
    assert "zero mean" in stokes


@pytest.mark.parametrize("law", ["linear", "cubic", "allen_cahn", "logistic"])
def test_reaction_laws(law: str) -> None:
    data = record("reaction_diffusion")
    data["case_spec"]["pde"]["params"]["reaction_law"] = law
    prompt = build_prompt(case_from_dict(data), TRACK, PIECES)
    assert f"Reaction law `{law}`" in prompt and "R(u) =" in prompt


def test_neumann_robin_periodic_statements() -> None:
    bc = {
        "dirichlet": [{"boundary": ["xmin"], "value": "0", "quantity": None}],
        "neumann": [{"boundary": ["ymax"], "value": "1", "quantity": None}],
        "robin": [{"boundary": ["xmax"], "alpha": 2.0, "value": "0"}],
        "periodic": [],
    }
    prompt = build_prompt(make_case("poisson", bc=bc), TRACK, PIECES)
    assert "Neumann on `ymax`: kappa * du/dn = g" in prompt
    assert "Robin on `xmax`: kappa * du/dn + alpha * u = g" in prompt
    assert "outward unit normal" in prompt
    assert "natural condition kappa * du/dn = 0" in prompt
    periodic = {
        "dirichlet": [{"boundary": ["ymin", "ymax"], "value": "0", "quantity": None}],
        "neumann": [],
        "robin": [],
        "periodic": [{"axis": "x", "boundary": "xmin", "partner": "xmax"}],
    }
    prompt = build_prompt(make_case("poisson", bc=periodic), TRACK, PIECES)
    assert "Periodic between `xmin` and `xmax`" in prompt


def test_examples_render() -> None:
    if not EXAMPLES.is_file():
        pytest.skip("cases/examples.jsonl not present")
    lines = [ln for ln in EXAMPLES.read_text().splitlines() if ln.strip()]
    assert lines
    for line in lines:
        case = case_from_dict(json.loads(line))
        for library in case.supported_libraries:
            track = Track(library, library.capitalize(), "python", "solver.py")
            prompt = build_prompt(case, track, PIECES)
            assert json_block(prompt) == agent_view(case, library)["case_spec"]


# --- mode errors ---------------------------------------------------------------------


def test_mode_errors() -> None:
    case = make_case("poisson")
    with pytest.raises(ValueError, match="mode"):
        build_prompt(case, TRACK, PIECES, mode="multi")
    no_scaffold = PromptPieces(contract="c", guide="g")
    with pytest.raises(ValueError, match="demo"):
        build_prompt(case, TRACK, no_scaffold, mode="template")
    with pytest.raises(ValueError, match="Feedback"):
        build_prompt(case, TRACK, PIECES, mode="feedback")
    with pytest.raises(ValueError, match="stage"):
        bad = Feedback(1, "", "F-What", None, "", "", None, None)
        build_prompt(case, TRACK, PIECES, mode="feedback", feedback=bad)


def test_missing_definition_fails_loudly() -> None:
    data = record("reaction_diffusion")
    del data["case_spec"]["pde"]["params"]["epsilon"]
    with pytest.raises(ValueError, match="epsilon"):
        build_prompt(case_from_dict(data), TRACK, PIECES)
    data = record("linear_elasticity")
    del data["case_spec"]["pde"]["params"]["model"]
    with pytest.raises(ValueError, match="model"):
        build_prompt(case_from_dict(data), TRACK, PIECES)


def test_reaction_coefficient_must_be_stated() -> None:
    data = record("reaction_diffusion")
    prompt = build_prompt(case_from_dict(data), TRACK, PIECES)
    assert "`sigma` = `pde.params.sigma`" in prompt and "R(u) = sigma * (u**3 - u)" in prompt
    del data["case_spec"]["pde"]["params"]["sigma"]
    with pytest.raises(ValueError, match="sigma"):
        build_prompt(case_from_dict(data), TRACK, PIECES)


@pytest.mark.parametrize(
    "params",
    [
        {"young_modulus": 2.0, "poisson_ratio": 0.25, "model": "plane_stress"},
        {"lambda": 1.0, "mu": 0.5, "model": "plane_strain"},
    ],
)
def test_elasticity_parameter_spellings(params: dict[str, Any]) -> None:
    data = record("linear_elasticity")
    data["case_spec"]["pde"]["params"] = params
    prompt = build_prompt(case_from_dict(data), TRACK, PIECES)
    assert f"`{params['model']}`" in prompt
    assert "lam =" in prompt
