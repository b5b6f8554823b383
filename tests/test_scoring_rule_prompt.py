"""The prompt states the scoring rule from the constants the checker uses (issue #20)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case, case_from_dict
from pdeagent.evaluation import pipeline
from pdeagent.geometry import evaluation_mask, get_geometry, grid_axes
from pdeagent.geometry import mask as mask_module
from pdeagent.prompts.builder import build_prompt
from pdeagent.prompts.summary import fmt_num
from pdeagent.stages import PromptPieces, Track

EXAMPLES = Path(__file__).resolve().parents[1] / "cases" / "examples.jsonl"
CIRCLE = "poisson_circle_variable_kappa_mms_001"
TRACK = Track("dolfinx", "Demo", "python", "solver.py")  # no runtime manifest
PIECES = PromptPieces(contract="Define solve(case_spec).", guide="Demo guide.")
IGNORED_WORDS = "Any value is accepted there (NaN, inf or a number)"
SCORED_WORDS = "NaN or inf at a scored point fails the run"


def _case(case_id: str = CIRCLE) -> Case:
    for line in EXAMPLES.read_text().splitlines():
        if line.strip() and json.loads(line)["id"] == case_id:
            return case_from_dict(json.loads(line))
    raise AssertionError(f"{case_id} not in {EXAMPLES}")


def _mask(case: Case) -> mask_module.EvaluationMask:
    spec = case.case_spec
    return evaluation_mask(
        spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
    )


def _prompt(case: Case) -> str:
    return build_prompt(case, TRACK, PIECES)


def test_prompt_states_the_band_the_mask_uses() -> None:
    case = _case()
    mask = _mask(case)
    spacing = max(float(a[1] - a[0]) for a in grid_axes(case.case_spec.eval_grid))
    assert mask.band == pytest.approx(0.5 * spacing)
    prompt = _prompt(case)
    section5 = prompt.split("## 5.")[1].split("## 6.")[0]
    assert f"0.5 x {fmt_num(spacing)} = {fmt_num(mask.band)}" in section5
    assert f"closer than {fmt_num(mask.band)} to the boundary" in section5
    assert "points exactly on the boundary count as inside" in section5
    assert IGNORED_WORDS in section5 and SCORED_WORDS in section5
    assert "must be NaN" not in section5  # the checker does not require NaN outside


def test_the_constant_drives_both_prompt_and_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _case()
    before_mask, before_prompt = _mask(case), _prompt(case)
    monkeypatch.setattr(mask_module, "SCORED_BAND_FRACTION", 0.25)
    after_mask, after_prompt = _mask(case), _prompt(case)
    assert after_mask.band == pytest.approx(before_mask.band / 2)
    # a narrower band scores more points near the curved boundary
    assert after_mask.scored.sum() > before_mask.scored.sum()
    assert f"= {fmt_num(after_mask.band)}." in after_prompt
    assert "at least 0.25 times the largest grid spacing" in after_prompt
    assert fmt_num(before_mask.band) not in after_prompt
    assert f"= {fmt_num(before_mask.band)}." in before_prompt


def _check(case: Case, tmp_path: Path, u: np.ndarray, pdeagent_host) -> pipeline._Checked:
    spec = case.case_spec
    x, y = grid_axes(spec.eval_grid)
    arrays = {"x": x, "y": y, **{name: u for name in spec.output.arrays}}
    workdir = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    workdir.mkdir()
    np.savez(workdir / "solution.npz", **arrays)
    view = agent_view(case, "dolfinx")
    return pipeline.check_output(pdeagent_host, TRACK, case, workdir, view)


def test_artifact_check_does_what_the_prompt_says(tmp_path: Path, pdeagent_host) -> None:
    case = _case()
    mask = _mask(case)
    band_only = mask.inside & ~mask.scored
    assert band_only.any(), "the circle case must have in-domain points in the band"
    prompt = _prompt(case)
    assert IGNORED_WORDS in prompt and SCORED_WORDS in prompt

    base = np.where(mask.inside, 0.0, np.nan)
    assert _check(case, tmp_path, base, pdeagent_host).fields is not None

    # ignored points: in the band (NaN or inf) and outside the domain (any number)
    u = base.copy()
    u[np.argwhere(band_only)[0][0], np.argwhere(band_only)[0][1]] = np.nan
    u[tuple(np.argwhere(band_only)[-1])] = np.inf
    u[~mask.inside] = 1e300
    ok = _check(case, tmp_path, u, pdeagent_host)
    assert ok.fields is not None, ok.message

    # a scored point must be finite
    u = base.copy()
    u[tuple(np.argwhere(mask.scored)[0])] = np.nan
    bad = _check(case, tmp_path, u, pdeagent_host)
    assert bad.fields is None and bad.reason == "non_finite"
    assert "1 of" in bad.message
