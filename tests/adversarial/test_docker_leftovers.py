"""The processes check's Docker half: a labelled container mounting a run's dir is a
leftover; one removed while the check lists containers (another run's, ending at that
moment) is gone, not an error that fails an attack's processes check."""

from __future__ import annotations

import pytest

from pdeagent.adversarial.probes import docker_leftovers
from pdeagent.sandbox.base import SandboxError
from pdeagent.testing import runtime_missing

pytestmark = [pytest.mark.docker, pytest.mark.sandbox]


@pytest.fixture
def client():
    from pdeagent.sandbox.docker import build_image, docker_client

    try:
        client = docker_client()
        tag = build_image()
    except SandboxError as exc:
        runtime_missing(f"no Docker daemon: {exc}")
    client.pdeagent_tag = tag
    yield client
    client.close()


def _labelled(client, root, name):
    from pdeagent.sandbox.docker import LABEL

    return client.containers.create(
        client.pdeagent_tag, command=["/bin/true"], labels={LABEL: name},
        volumes={str(root): {"bind": "/mnt/run", "mode": "ro"}}, network_mode="none",
    )  # fmt: skip


def test_a_labelled_container_mounting_the_run_is_a_leftover(client, tmp_path):
    run, other = tmp_path / "run", tmp_path / "other"
    run.mkdir()
    other.mkdir()
    kept = _labelled(client, run, "kept")
    elsewhere = _labelled(client, other, "elsewhere")
    try:
        assert docker_leftovers([run]) == [f"container {kept.short_id} (created)"]
    finally:
        kept.remove(force=True)
        elsewhere.remove(force=True)
    assert docker_leftovers([run]) == []


def test_a_container_removed_while_listing_is_not_an_error(client, tmp_path, monkeypatch):
    """The CI failure of stop 31: the listing named a container that another run removed
    before it was inspected, and the check reported ``cannot list containers: 404``."""
    from docker.api.client import APIClient

    run = tmp_path / "run"
    run.mkdir()
    kept = _labelled(client, run, "kept")
    vanishing = _labelled(client, tmp_path, "vanishing")
    real_inspect = APIClient.inspect_container
    removed = []

    def inspect_after_removal(self, container):
        if container in (vanishing.id, vanishing.short_id) and not removed:
            vanishing.remove(force=True)  # ends between the listing and the inspection
            removed.append(container)
        return real_inspect(self, container)

    monkeypatch.setattr(APIClient, "inspect_container", inspect_after_removal)
    try:
        assert docker_leftovers([run, tmp_path]) == [f"container {kept.short_id} (created)"]
        assert removed, "the listing never inspected the vanishing container"
    finally:
        kept.remove(force=True)
        if not removed:
            vanishing.remove(force=True)
