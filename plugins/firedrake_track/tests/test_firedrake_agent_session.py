"""An agent's session on Firedrake (issue #22): the grader's command runs the
calibration solver there and leaves output the grader's adapter accepts."""

import pytest
from firedrake_harness import firedrake_record

from pdeagent.testing import check_agent_session

pytestmark = [pytest.mark.firedrake, pytest.mark.sandbox]


def test_the_session_runs_the_calibration_solver_as_the_grader_does(pdeagent_host, tmp_path):
    firedrake_record()  # waits for a running setup; skips without the runtime
    check_agent_session(
        pdeagent_host, "firedrake", "poisson_star_smooth_mms_008", tmp_path,
        command="python pdeagent_runner.py solver.py",
    )  # fmt: skip
