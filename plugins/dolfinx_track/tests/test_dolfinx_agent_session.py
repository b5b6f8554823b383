"""An agent's session on DOLFINx (issue #22): the grader's command runs the calibration
solver there and leaves output the grader's adapter accepts."""

import pytest

from pdeagent.testing import check_agent_session, require_runtime

pytestmark = [pytest.mark.dolfinx, pytest.mark.sandbox]


def test_the_session_runs_the_calibration_solver_as_the_grader_does(pdeagent_host, tmp_path):
    from pdeagent_dolfinx import runtime_python

    require_runtime(runtime_python)
    check_agent_session(
        pdeagent_host, "dolfinx", "poisson_star_smooth_mms_008", tmp_path,
        command="python pdeagent_runner.py solver.py",
    )  # fmt: skip
