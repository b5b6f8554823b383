"""The catalogue's read, network, process and file attacks run through an agent's
``run`` tool (issue #22), on the sample track and every sandbox backend: an agent that
runs a hostile program while "testing" it gets nothing a graded submission would not
(no secret read or listed, no connection, no process left, nothing written outside),
and the harness and its bystander still run."""

from __future__ import annotations

import pytest

from pdeagent.adversarial import assert_attack_held, get_attack

pytestmark = pytest.mark.sandbox

SESSION_ATTACKS = (
    "read_case_file", "read_reference_array", "read_harness_source", "read_environment",
    "tcp_connect", "unix_socket_connect", "setsid_daemon", "write_outside", "kill_harness",
)  # fmt: skip


@pytest.mark.parametrize("name", SESSION_ATTACKS)
def test_hostile_program_through_the_run_tool(name, sandbox_backend, host, case, tmp_path):
    attack = get_attack(name, "python")
    outcome = assert_attack_held(
        attack, host=host, track_name="numpy_fd", case=case, backend=sandbox_backend,
        workroot=tmp_path / "attack", through_session=True,
    )  # fmt: skip
    assert outcome.executions and outcome.executions[0]["workdir"] == "exec-0"
    assert outcome.findings.get("attack") == name  # the program did run its attack
