"""The hostile submissions on the real tracks, on every sandbox backend: the Python
catalogue on DOLFINx (``fake_meta_time`` runs the track's own calibration solver) and
the C++ catalogue on deal.II (compiled by the track's sandboxed g++, run as
``./solver case_spec.json .``), both on a small Poisson case of the dataset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pdeagent.adversarial import assert_attack_held, attacks_for
from pdeagent.testing import require_runtime

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

DATASET = Path(__file__).resolve().parents[2] / "cases" / "pdeagent-v1.jsonl"
CASE_ID = "poisson_unit_square_smooth_mms_000"


def _setup(check_runtime: Callable[[], None]):
    """The plugin host and the case; skips when ``check_runtime`` finds the track's runtime
    missing, unless $PDEAGENT_REQUIRE_RUNTIMES=1 (CI), where that fails."""
    from pdeagent.cases.io import find_case, load_cases
    from pdeagent.plugins import load_plugins

    require_runtime(check_runtime)
    return load_plugins(strict=True), find_case(load_cases(DATASET), CASE_ID)


def _dolfinx_runtime() -> None:
    from pdeagent_dolfinx import runtime_python

    runtime_python()


def _dealii_toolchain() -> None:
    from pdeagent.stages import TrackUnavailable
    from pdeagent_dealii.environment import load_toolchain

    if not Path(load_toolchain()["pch_header"] + ".gch").is_file():
        raise TrackUnavailable("the deal.II precompiled header is missing")


@pytest.fixture(scope="module")
def dolfinx_setup():
    return _setup(_dolfinx_runtime)


@pytest.fixture(scope="module")
def dealii_setup():
    return _setup(_dealii_toolchain)


@pytest.mark.dolfinx
@pytest.mark.parametrize("attack", [pytest.param(a, id=a.name) for a in attacks_for("python")])
def test_hostile_submission_on_dolfinx(attack, sandbox_backend, dolfinx_setup, tmp_path):
    host, case = dolfinx_setup
    assert_attack_held(attack, host=host, track_name="dolfinx", case=case,
                       backend=sandbox_backend, workroot=tmp_path / "attack")  # fmt: skip


@pytest.mark.dealii
@pytest.mark.parametrize("attack", [pytest.param(a, id=a.name) for a in attacks_for("cpp")])
def test_hostile_program_on_dealii(attack, sandbox_backend, dealii_setup, tmp_path):
    host, case = dealii_setup
    assert_attack_held(attack, host=host, track_name="dealii", case=case,
                       backend=sandbox_backend, workroot=tmp_path / "attack")  # fmt: skip
