"""The Python catalogue of hostile submissions on the sample track (numpy_fd), on every
sandbox backend: each gets its verdict and reason, and afterwards no process of the run
is left, nothing outside the work dir changed, nothing secret was read, no connection
was made and the harness (and its bystander process) still runs."""

from __future__ import annotations

import pytest

from pdeagent.adversarial import assert_attack_held, attacks_for

pytestmark = pytest.mark.sandbox

ATTACKS = [
    pytest.param(a, id=a.name, marks=[pytest.mark.slow] if a.slow else [])
    for a in attacks_for("python")
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_hostile_submission_on_the_sample_track(attack, sandbox_backend, host, case, tmp_path):
    assert_attack_held(
        attack, host=host, track_name="numpy_fd", case=case, backend=sandbox_backend,
        workroot=tmp_path / "attack",
    )  # fmt: skip
