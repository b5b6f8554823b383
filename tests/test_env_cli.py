"""`pdeagent env setup` / `pdeagent tracks doctor` through the environment hooks."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from pdeagent import hookimpl
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.plugins import load_plugins
from pdeagent.stages import DoctorCheck, Track, TrackUnavailable

FAKE = Track("envtrack", "EnvLib", "python", "solver.py")


class EnvPlugin:
    """A track whose runtime is 'installed' by setup (state kept on the object)."""

    __name__ = "env_plugin"

    def __init__(self) -> None:
        self.installed = False
        self.forced = None

    @hookimpl
    def pdeagent_register_tracks(self, register):
        register(FAKE)

    def _checks(self):
        return [
            DoctorCheck("interpreter", True, "/opt/x/bin/python"),
            DoctorCheck(
                "library",
                self.installed,
                "EnvLib 1.0" if self.installed else "missing",
                None if self.installed else "run `pdeagent env setup envtrack`",
            ),
        ]

    @hookimpl
    def pdeagent_setup_environment(self, track, force, log):
        if track.name != FAKE.name:
            return None
        self.forced = force
        log("installing EnvLib")
        self.installed = True
        return self._checks()

    @hookimpl
    def pdeagent_doctor(self, track):
        if track.name != FAKE.name:
            return None
        return self._checks()


@pytest.fixture
def plugin(monkeypatch):
    plugin = EnvPlugin()
    monkeypatch.setattr(common, "_host", load_plugins(extra_plugins=[plugin], entry_points=[]))
    yield plugin
    common.reset_host()


def test_pdeagent_doctor_reports_missing_parts_with_a_fix(plugin):
    result = CliRunner().invoke(app, ["tracks", "doctor", "envtrack", "--json"])
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["library"]["ok"] is False
    assert checks["library"]["fix"] == "run `pdeagent env setup envtrack`"


def test_pdeagent_setup_environment_then_doctor_is_clean(plugin):
    result = CliRunner().invoke(app, ["env", "setup", "envtrack", "--force", "--json"])
    assert result.exit_code == 0, result.output
    assert plugin.forced is True
    assert all(c["ok"] for c in json.loads(result.stdout))
    assert CliRunner().invoke(app, ["tracks", "doctor", "envtrack"]).exit_code == 0


def test_setup_that_cannot_work_here_is_one_line(monkeypatch):
    class NoCompiler(EnvPlugin):
        @hookimpl
        def pdeagent_setup_environment(self, track, force, log):
            raise TrackUnavailable("no compiler on this machine: apt-get install g++")

    monkeypatch.setattr(
        common, "_host", load_plugins(extra_plugins=[NoCompiler()], entry_points=[])
    )
    try:
        result = CliRunner().invoke(app, ["env", "setup", "envtrack"])
    finally:
        common.reset_host()
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: no compiler on this machine: apt-get install g++"


def test_env_setup_unknown_track_is_one_line(plugin):
    result = CliRunner().invoke(app, ["env", "setup", "nope"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: unknown track 'nope'")


def test_track_without_environment_hooks(monkeypatch):
    class Bare:
        __name__ = "bare"

        @hookimpl
        def pdeagent_register_tracks(self, register):
            register(Track("bare", "B", "python", "s.py"))

    monkeypatch.setattr(common, "_host", load_plugins(extra_plugins=[Bare()], entry_points=[]))
    try:
        result = CliRunner().invoke(app, ["tracks", "doctor", "bare"])
    finally:
        common.reset_host()
    assert result.exit_code == 2
    assert "has no doctor checks" in result.stderr
