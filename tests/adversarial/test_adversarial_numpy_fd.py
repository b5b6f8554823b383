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


@pytest.mark.slow
def test_cache_replay_passes_the_legacy_protocol_it_targets(host, case, tmp_path):
    """Control: under the legacy protocol (one cache per submission, kept from the accuracy
    run to the timed repeats) the cache-replay attack does replay its answer and pass the
    time gate; the pristine protocol (the test above, every backend) stops it."""
    from pdeagent.adversarial import get_attack, run_attack
    from pdeagent.cases.model import LEGACY_PROTOCOL

    attack = get_attack("cache_replay", "python")
    outcome = run_attack(
        attack, host=host, track_name="numpy_fd", case=case, backend="local",
        workroot=tmp_path / "attack", protocol=LEGACY_PROTOCOL,
    )  # fmt: skip
    assert (outcome.verdict, outcome.reason) == ("PASS", None), outcome.explain()
    replays = {k: v["replayed_from"] for k, v in outcome.findings.items() if k.startswith("run ")}
    assert replays["run exec-0"] is None
    assert replays["run exec-1"] and replays["run exec-2"], replays
    assert all(r.endswith("/cache/.pdeagent-adv-answer") for r in list(replays.values())[1:])
