"""Plugin host: discovery through entry points, defensive loading, registration rules."""

from __future__ import annotations

import importlib.metadata
import json

import pytest
from typer.testing import CliRunner

from pdeagent import hookimpl
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.plugins import PluginLoadError, UnknownNameError, load_plugins
from pdeagent.providers import Generation, GenerationRequest, Provider
from pdeagent.stages import Track

GROUP = "pdeagent"


def ep(name: str, value: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name=name, value=value, group=GROUP)


class EchoProvider(Provider):
    name = "echo"
    description = "scripted fake provider"

    def generate(self, request: GenerationRequest) -> Generation:
        return Generation(text=f"```python\n# {request.model}\n```", finish_reason="stop")


def _track_plugin(fake_module, modname: str, track_name: str):
    @hookimpl
    def pdeagent_register_tracks(register):
        register(Track(track_name, "Lib", "python", "solver.py"))

    return fake_module(modname, pdeagent_register_tracks=pdeagent_register_tracks)


def test_pdeagent_register_providers_through_an_entry_point(fake_module):
    @hookimpl
    def pdeagent_register_providers(register):
        register(EchoProvider())

    fake_module("fake_provider_plugin", pdeagent_register_providers=pdeagent_register_providers)
    host = load_plugins(entry_points=[ep("fp", "fake_provider_plugin")], strict=True)
    provider = host.get_provider("echo")
    assert host.provider_owner["echo"] == "fp"
    assert (
        provider.generate(GenerationRequest(prompt="p", model="m1")).text == "```python\n# m1\n```"
    )


def test_pdeagent_register_providers_rejects_an_object_without_generate(fake_module):
    class NoGenerate(Provider):
        name = "mute"

    class NotAProvider:  # the old duck-typed shape: abilities would have to be guessed
        name = "duck"

        def generate(self, request):
            raise AssertionError

    class Undeclared(Provider):  # implements agent_step without declaring it
        name = "shy"

        def generate(self, request):
            raise AssertionError

        def agent_step(self, request):
            raise AssertionError

    class Overclaimed(Provider):  # declares an ability it does not implement
        name = "boastful"
        external_agent_command = True

        def generate(self, request):
            raise AssertionError

    expected = {
        "mute": "it does not implement generate()",
        "duck": "NotAProvider is not a pdeagent.providers.Provider subclass",
        "shy": "it implements agent_step() but does not declare agent_steps = True",
        "boastful": "it declares external_agent_command but does not implement external_agent()",
    }
    for obj in (NoGenerate(), NotAProvider(), Undeclared(), Overclaimed()):

        @hookimpl
        def pdeagent_register_providers(register, obj=obj):
            register(obj)

        fake_module(
            f"fake_{obj.name}_plugin", pdeagent_register_providers=pdeagent_register_providers
        )
        host = load_plugins(entry_points=[ep(obj.name, f"fake_{obj.name}_plugin")])
        assert obj.name not in host.providers
        [failure] = host.failures
        assert expected[obj.name] in failure.error, failure.error


def test_pdeagent_register_tracks_through_an_entry_point(fake_module):
    _track_plugin(fake_module, "fake_track_plugin", "faketrack")
    host = load_plugins(entry_points=[ep("ft", "fake_track_plugin")], strict=True)
    assert host.get_track("faketrack").library == "Lib"
    assert host.track_owner["faketrack"] == "ft"
    names = {p.name: p for p in host.plugins}
    assert names["ft"].hooks == ("pdeagent_register_tracks",)
    assert "pdeagent.builtin" in names  # the core's defaults are a plugin too
    assert set(names["pdeagent.builtin"].hooks) == {"pdeagent_adapt_output", "pdeagent_diagnostics"}


def test_installed_sample_track_is_found_through_its_entry_point():
    eps = {e.name: e for e in importlib.metadata.entry_points(group=GROUP)}
    assert "sample_fd" in eps, "install the sample track: pip install -e tests/sample_track"
    host = load_plugins(strict=True)
    assert host.get_track("numpy_fd").language == "python"
    assert host.track_owner["numpy_fd"] == "sample_fd"


def test_broken_plugin_is_reported_not_fatal(fake_module):
    _track_plugin(fake_module, "fake_ok_plugin", "oktrack")
    host = load_plugins(
        entry_points=[ep("broken", "no_such_module_xyz"), ep("ok", "fake_ok_plugin")], strict=False
    )
    assert [f.name for f in host.failures] == ["broken"]
    assert "ModuleNotFoundError" in host.failures[0].error
    assert "oktrack" in host.tracks


def test_strict_mode_makes_a_broken_plugin_fatal(monkeypatch):
    monkeypatch.setenv("PDEAGENT_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError, match="broken"):
        load_plugins(entry_points=[ep("broken", "no_such_module_xyz")])


def test_allow_and_block_lists(fake_module, monkeypatch):
    _track_plugin(fake_module, "fake_a", "track_a")
    _track_plugin(fake_module, "fake_b", "track_b")
    eps = [ep("a", "fake_a"), ep("b", "fake_b")]
    monkeypatch.setenv("PDEAGENT_PLUGINS", "a")
    assert set(load_plugins(entry_points=eps).tracks) == {"track_a"}
    monkeypatch.delenv("PDEAGENT_PLUGINS")
    monkeypatch.setenv("PDEAGENT_DISABLE_PLUGINS", "a")
    assert set(load_plugins(entry_points=eps).tracks) == {"track_b"}


def test_duplicate_track_name_is_a_failure_of_the_second_plugin(fake_module):
    _track_plugin(fake_module, "fake_first", "same")
    _track_plugin(fake_module, "fake_second", "same")
    host = load_plugins(entry_points=[ep("first", "fake_first"), ep("second", "fake_second")])
    assert host.track_owner["same"] in {"first", "second"}
    assert len(host.failures) == 1
    assert "already registered" in host.failures[0].error


def test_registering_a_non_track_is_rejected(fake_module):
    @hookimpl
    def pdeagent_register_tracks(register):
        register("not a track")

    fake_module("fake_bad_reg", pdeagent_register_tracks=pdeagent_register_tracks)
    host = load_plugins(entry_points=[ep("bad", "fake_bad_reg")])
    assert "expected a Track" in host.failures[0].error
    with pytest.raises(PluginLoadError):
        load_plugins(entry_points=[ep("bad", "fake_bad_reg")], strict=True)


def test_unknown_names_list_the_known_ones():
    host = load_plugins(entry_points=[])
    none = r"unknown track 'nope' \(known: none installed\); install a track plugin"
    with pytest.raises(UnknownNameError, match=none):
        host.get_track("nope")
    with pytest.raises(UnknownNameError, match="unknown provider"):
        host.get_provider("nope")


def test_cli_plugins_lists_hooks_and_failures(monkeypatch):
    monkeypatch.setenv("PDEAGENT_DISABLE_PLUGINS", "")
    common.reset_host()
    real = importlib.metadata.entry_points

    def with_broken(**kwargs):
        return [*real(**kwargs), ep("broken_cli", "no_such_module_abc")]

    monkeypatch.setattr(importlib.metadata, "entry_points", with_broken)
    try:
        result = CliRunner().invoke(app, ["plugins", "--json"])
    finally:
        common.reset_host()
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    by_name = {p["name"]: p for p in data["plugins"]}
    assert "pdeagent_prepare" in by_name["sample_fd"]["hooks"]
    assert by_name["sample_fd"]["distribution"] == "pdeagent-sample-fd"
    assert [f["name"] for f in data["failures"]] == ["broken_cli"]


def test_a_misspelt_hook_is_a_load_error_naming_plugin_and_hook(fake_module, monkeypatch):
    """A hook implementation no spec declares would never be called: the plugin fails to
    load, and the failure names the plugin, the hook and the closest real hook."""

    @hookimpl
    def pdeagent_register_tracks(register):
        register(Track("typo_track", "Lib", "python", "solver.py"))

    @hookimpl
    def pdeagent_calibration_sorce(track, case_view, calibration_config):  # sic
        return "print('never called')"

    fake_module(
        "fake_typo_plugin",
        pdeagent_register_tracks=pdeagent_register_tracks,
        pdeagent_calibration_sorce=pdeagent_calibration_sorce,
    )
    host = load_plugins(entry_points=[ep("typo", "fake_typo_plugin")])
    [failure] = host.failures
    assert failure.name == "typo"
    assert "'pdeagent_calibration_sorce'" in failure.error
    assert "did you mean 'pdeagent_calibration_source'?" in failure.error
    assert "typo_track" not in host.tracks  # nothing of the plugin is used
    assert "typo" not in {p.name for p in host.plugins}
    with pytest.raises(PluginLoadError, match="unknown hook"):
        load_plugins(entry_points=[ep("typo", "fake_typo_plugin")], strict=True)

    # `pdeagent plugins` shows it
    monkeypatch.setenv("PDEAGENT_DISABLE_PLUGINS", "")
    common.reset_host()
    real = importlib.metadata.entry_points
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda **kw: [*real(**kw), ep("typo", "fake_typo_plugin")],
    )
    try:
        result = CliRunner().invoke(app, ["plugins", "--json"])
    finally:
        common.reset_host()
    assert result.exit_code == 0, result.output
    [shown] = json.loads(result.stdout)["failures"]
    assert shown["name"] == "typo" and "pdeagent_calibration_sorce" in shown["error"]
