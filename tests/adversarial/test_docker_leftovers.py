"""Labelled containers seen from outside a run. The processes check's Docker half: one
mounting a run's dir is a leftover; one removed while the check lists containers
(another run's, ending at that moment) is gone, not an error that fails an attack's
processes check. The backend's start sweep: only stale ones are removed, and a
vanishing one does not stop it."""

from __future__ import annotations

import contextlib

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
        build_image()
    except SandboxError as exc:
        runtime_missing(f"no Docker daemon: {exc}")
    yield client
    client.close()


def _labelled(client, root, name):
    """A labelled container mounting ``root`` that can run ``/bin/true`` (the image is
    empty dirs: the host's system trees are mounted as the backend mounts them)."""
    from pdeagent.sandbox.docker import LABEL, image_tag, system_mounts

    volumes = {tree: {"bind": tree, "mode": "ro"} for tree in system_mounts()}
    volumes[str(root)] = {"bind": "/mnt/run", "mode": "ro"}
    return client.containers.create(
        image_tag(), command=["/bin/true"], labels={LABEL: name}, volumes=volumes,
        network_mode="none",
    )  # fmt: skip


def _removed_when_inspected(vanishing, monkeypatch) -> list:
    """Make Docker remove ``vanishing`` when it is first inspected, i.e. between a
    listing that named it and its inspection; the returned list is non-empty once it
    happened."""
    from docker.api.client import APIClient

    real_inspect = APIClient.inspect_container
    removed = []

    def inspect_after_removal(self, container):
        if container in (vanishing.id, vanishing.short_id) and not removed:
            vanishing.remove(force=True)
            removed.append(container)
        return real_inspect(self, container)

    monkeypatch.setattr(APIClient, "inspect_container", inspect_after_removal)
    return removed


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
    run = tmp_path / "run"
    run.mkdir()
    kept = _labelled(client, run, "kept")
    vanishing = _labelled(client, tmp_path, "vanishing")
    removed = _removed_when_inspected(vanishing, monkeypatch)
    try:
        assert docker_leftovers([run, tmp_path]) == [f"container {kept.short_id} (created)"]
        assert removed, "the listing never inspected the vanishing container"
    finally:
        kept.remove(force=True)
        if not removed:
            vanishing.remove(force=True)


def _exited(client, root, name):
    container = _labelled(client, root, name)
    try:
        container.start()
        container.wait(timeout=30)
        container.reload()
        assert container.status == "exited"
    except BaseException:
        container.remove(force=True)
        raise
    return container


def test_the_start_sweep_keeps_a_just_exited_container(client, tmp_path, monkeypatch):
    """A just-exited container may be a concurrent harness's, about to be waited for and
    removed (a sweep that removed it made that harness lose its container)."""
    import time

    from pdeagent.sandbox import docker as backend

    exited = _exited(client, tmp_path, "just-exited")
    created = _labelled(client, tmp_path, "never-started")
    try:
        now = time.time()
        for container in (exited, created):
            assert not backend._stale(container, now)
            assert backend._stale(container, now + backend.STALE_SEC + 5)
        monkeypatch.setattr(backend, "_swept", False)
        backend._sweep(client)
        exited.reload()  # still there
        assert exited.status == "exited"
    finally:
        exited.remove(force=True)
        created.remove(force=True)


def test_the_start_sweep_survives_a_container_vanishing_while_it_lists(
    client, tmp_path, monkeypatch
):
    """One removed between the listing and its inspection does not stop the sweep: the
    stale one is still removed. (Stale here means this test's own container only, so a
    concurrent test's containers are never touched.)"""
    from docker.errors import NotFound

    from pdeagent.sandbox import docker as backend

    stale = _exited(client, tmp_path, "stale")
    vanishing = _labelled(client, tmp_path, "vanishing")
    removed = _removed_when_inspected(vanishing, monkeypatch)
    monkeypatch.setattr(backend, "_stale", lambda container, now: container.id == stale.id)
    monkeypatch.setattr(backend, "_swept", False)
    try:
        backend._sweep(client)
        assert removed, "the sweep never listed the vanishing container"
        with pytest.raises(NotFound):
            stale.reload()
    finally:
        with contextlib.suppress(NotFound):
            stale.remove(force=True)
        if not removed:
            vanishing.remove(force=True)
