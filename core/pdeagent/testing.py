"""pytest plugin for plugin authors (auto-loaded through the ``pytest11`` entry point).

Fixtures:

- ``pdeagent_host``: a fresh :class:`~pdeagent.plugins.PluginHost` with every installed
  plugin loaded strictly (a plugin that fails to import fails the test).
- ``pdeagent_host_factory``: call it with ``extra_plugins=[...]`` (e.g. a scripted fake
  provider module or object) to get a fresh host that also has those registered.
- ``sandbox_backend``: parametrized over every sandbox backend (``docker``, ``bwrap``,
  ``local``); its value is the backend's name (``get_sandbox(name)`` gives an
  instance). An unavailable backend skips, except under ``PDEAGENT_REQUIRE_RUNTIMES=1``
  (CI), where it fails with the reason.

Helper: :func:`run_baseline_sample` runs the main job for a track (``pdeagent run
--provider baseline --sample N``) in a subprocess, as a user would, and returns the
report's JSON summary and the run manifest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pdeagent.plugins import PluginHost, load_plugins


@pytest.fixture
def pdeagent_host_factory() -> Callable[..., PluginHost]:
    def make(**kwargs: Any) -> PluginHost:
        kwargs.setdefault("strict", True)
        return load_plugins(**kwargs)

    return make


_BACKEND_STATUS: dict[str, str | None] = {}


@pytest.fixture(params=["docker", "bwrap", "local"])
def sandbox_backend(request: pytest.FixtureRequest) -> str:
    from pdeagent.sandbox.select import BACKENDS, backend_status

    name = str(request.param)
    assert name in BACKENDS
    if not _BACKEND_STATUS:
        _BACKEND_STATUS.update(backend_status())
    why = _BACKEND_STATUS[name]
    if why is not None:
        if os.environ.get("PDEAGENT_REQUIRE_RUNTIMES") == "1":
            pytest.fail(f"sandbox backend {name} is required here but unavailable: {why}")
        pytest.skip(f"sandbox backend {name} unavailable: {why}")
    return name


@pytest.fixture
def pdeagent_host(pdeagent_host_factory: Callable[..., PluginHost]) -> PluginHost:
    return pdeagent_host_factory()


def run_baseline_sample(
    track: str, sample: int, out: Path, *, timeout_sec: float = 1800
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``pdeagent run --track TRACK --provider baseline --sample SAMPLE --no-cache --out
    OUT`` then ``pdeagent report OUT --json``: (the report summary, the run manifest).
    Fails the calling test with the command's stderr when either command fails."""
    cli = [sys.executable, "-m", "pdeagent.cli.main"]
    run = subprocess.run(
        [*cli, "run", "--track", track, "--provider", "baseline", "--sample", str(sample),
         "--no-cache", "--out", str(out)],
        capture_output=True, text=True, timeout=timeout_sec, check=False,
    )  # fmt: skip
    if run.returncode != 0:
        pytest.fail(f"pdeagent run failed ({run.returncode}):\n{run.stderr[-3000:]}")
    report = subprocess.run(
        [*cli, "report", str(out), "--json", "--no-figures"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if report.returncode != 0:
        pytest.fail(f"pdeagent report failed ({report.returncode}):\n{report.stderr[-3000:]}")
    manifest = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return json.loads(report.stdout), manifest
