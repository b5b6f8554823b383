"""The Python catalogue of hostile submissions (:mod:`pdeagent.adversarial`) on the
Firedrake track, on every sandbox backend: each gets its verdict and reason (a small
Poisson case of the dataset; ``fake_meta_time`` runs the track's own calibration
solver), and afterwards no process of the run is left, nothing outside the work dir
changed, nothing secret was read, no connection was made and the harness still runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from firedrake_harness import firedrake_record

from pdeagent.adversarial import assert_attack_held, attacks_for
from pdeagent.cases.io import find_case, load_cases
from pdeagent.plugins import load_plugins

pytestmark = [pytest.mark.firedrake, pytest.mark.slow, pytest.mark.sandbox]

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"
CASE_ID = "poisson_unit_square_smooth_mms_000"
ATTACKS = [pytest.param(a, id=a.name) for a in attacks_for("python")]
PIPELINE_LEVEL = {"cache_replay", "accurate_once", "fill_cache"}
"""Attacks on what the pipeline gives every track alike (fresh caches per run, checked
repeats, the size watch): run here on the local backend only, to keep CI in its time."""


@pytest.fixture(scope="module")
def setup():
    firedrake_record()  # waits for a background setup; skips (or fails in CI) without one
    return load_plugins(strict=True), find_case(load_cases(DATASET), CASE_ID)


@pytest.mark.parametrize("attack", ATTACKS)
def test_hostile_submission_on_firedrake(attack, sandbox_backend, setup, tmp_path):
    host, case = setup
    if attack.name in PIPELINE_LEVEL and sandbox_backend != "local":
        pytest.skip("pipeline-level attack: every backend is covered on numpy_fd and DOLFINx")
    assert_attack_held(
        attack, host=host, track_name="firedrake", case=case, backend=sandbox_backend,
        workroot=tmp_path / "attack",
    )  # fmt: skip
