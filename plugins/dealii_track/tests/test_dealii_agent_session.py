"""An agent's session on deal.II (issue #22): ``build.sh`` compiles the calibration
program with the grader's compile command, the binary runs as the grader runs it, and
its output passes the grader's adapter."""

import json

import pytest
from dealii_harness import toolchain

from pdeagent.testing import check_agent_session
from pdeagent_dealii.bundle import SETTINGS_FILE, settings_of

pytestmark = [pytest.mark.dealii, pytest.mark.sandbox]


def settings_file(source: str) -> dict[str, str]:
    """A bundled program reads its settings at run time, from the file the compile
    stage writes; an agent's own program has none."""
    settings, _program = settings_of(source)
    return {} if settings is None else {SETTINGS_FILE: json.dumps(settings)}


def test_the_session_builds_and_runs_the_calibration_program(pdeagent_host, tmp_path):
    toolchain()  # skips without the toolchain (fails under PDEAGENT_REQUIRE_RUNTIMES)
    check_agent_session(
        pdeagent_host, "dealii", "poisson_annulus_smooth_mms_005", tmp_path,
        command="sh build.sh && ./solver case_spec.json .", extra_files=settings_file,
    )  # fmt: skip
