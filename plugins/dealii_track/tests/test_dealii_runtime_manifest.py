"""The committed runtime manifest is what the deal.II toolchain reports."""

from __future__ import annotations

import pytest
from dealii_harness import toolchain

from pdeagent.runtime_packages import load_manifest, manifest_json, write_command
from pdeagent_dealii import TRACK, environment

pytestmark = pytest.mark.dealii


def test_committed_manifest_matches_the_toolchain() -> None:
    live = environment.runtime_packages(toolchain())
    assert manifest_json(load_manifest(TRACK)) == manifest_json(live), (
        f"the toolchain changed: run `{write_command(TRACK.name)}`"
    )
    names = {e["name"]: e.get("version") for e in live["packages"]}
    assert names["deal.II"].startswith("9.4.")
    assert "nlohmann/json" in names
