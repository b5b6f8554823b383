"""The DOLFINx calibration baseline served for a case (no runtime needed)."""

from __future__ import annotations

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import find_case, load_cases
from pdeagent.cli.common import REPO_ROOT
from pdeagent.plugins import load_plugins


def test_pdeagent_calibration_source_bundles_the_case_family_with_its_settings():
    host = load_plugins(strict=True)
    cases = load_cases(REPO_ROOT / "cases" / "examples.jsonl")
    case = find_case(cases, "heat_unit_square_mms_001")
    track = host.get_track("dolfinx")
    view = agent_view(case, "dolfinx")
    source = host.hook.pdeagent_calibration_source(
        track=track, case_view=view, calibration_config={"dolfinx": {"dt": 0.05}}
    )
    assert "# ---- heat" in source and "SETTINGS = {'dt': 0.05}" in source
    default = host.hook.pdeagent_calibration_source(
        track=track, case_view=view, calibration_config=None
    )
    assert "SETTINGS = {}" in default
