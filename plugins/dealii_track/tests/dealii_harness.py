"""Shared pieces of the deal.II track tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REQUIRE_ENV = "PDEAGENT_REQUIRE_RUNTIMES"
PROGRAMS = Path(__file__).parent / "programs"


def toolchain() -> dict[str, Any]:
    """The set-up deal.II toolchain; skip the test without it, unless
    $PDEAGENT_REQUIRE_RUNTIMES=1 (CI), where a missing toolchain fails it."""
    from pdeagent.stages import TrackUnavailable
    from pdeagent_dealii.environment import load_toolchain

    try:
        tc = load_toolchain()
    except TrackUnavailable as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    if not Path(tc["pch_header"] + ".gch").is_file():
        message = "the deal.II precompiled header is missing: pdeagent env setup dealii"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return tc
