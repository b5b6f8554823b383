"""Runtime manifests: the prompt lists the committed packages of each track (issue #20)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pdeagent import hookimpl, runtime_packages
from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import case_from_dict
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.plugins import load_plugins
from pdeagent.prompts.builder import build_prompt
from pdeagent.runtime_packages import (
    ManifestError,
    load_manifest,
    load_pins,
    make_manifest,
    manifest_json,
    packages_line,
    python_runtime_manifest,
    requirement_closure,
    validate_manifest,
    write_constraints,
)
from pdeagent.stages import PromptPieces, Track

EXAMPLES = Path(__file__).resolve().parents[1] / "cases" / "examples.jsonl"
PYTHON_TRACKS = ("dolfinx", "firedrake")


def _case():
    return case_from_dict(json.loads(EXAMPLES.read_text().splitlines()[0]))


def _sandbox_section(prompt: str) -> str:
    return prompt.split("## 5.")[1].split("## 6.")[0].split("Sandbox:")[1]


@pytest.mark.parametrize("name", [*PYTHON_TRACKS, "dealii"])
def test_prompt_lists_the_committed_manifest(name: str, pdeagent_host) -> None:
    track = pdeagent_host.get_track(name)
    manifest = load_manifest(track)
    case = _case()
    pieces = pdeagent_host.hook.pdeagent_prompt_pieces(
        track=track, case_view=agent_view(case, name), mode="single"
    )
    sandbox = _sandbox_section(build_prompt(case, track, pieces))
    assert f"Available to your program: {packages_line(manifest)};" in sandbox
    for entry in manifest["packages"]:
        assert f"{entry['name']} {entry.get('version', '')}".strip() in sandbox
    for entry in manifest["dependencies"]:  # recorded, not named
        assert f" {entry['name']} " not in sandbox
    if name in PYTHON_TRACKS:
        sympy = [e for e in manifest["packages"] if e["name"] == "sympy"]
        assert sympy and "sympy" in sympy[0]["modules"]
        assert f"sympy {sympy[0]['version']}" in sandbox
        assert sandbox.count("the Python standard library") == 1


def test_missing_manifest_is_an_error_naming_the_command(tmp_path: Path) -> None:
    track = Track("dolfinx", "Demo", "python", "solver.py", runtime_manifest=tmp_path / "m.json")
    pieces = PromptPieces(contract="c", guide="g")
    with pytest.raises(ManifestError, match=r"pdeagent env packages -t dolfinx --write"):
        build_prompt(_case(), track, pieces)


def test_a_track_without_manifest_lists_nothing() -> None:
    prompt = build_prompt(
        _case(), Track("dolfinx", "Demo", "python", "solver.py"), PromptPieces("c", "g")
    )
    assert "Available to your program" not in prompt


def _probe(**dists: dict) -> dict:
    return {"python": "3.12.1", "marker_env": {"python_version": "3.12", "extra": "",
            "sys_platform": "linux", "implementation_name": "cpython"},
            "distributions": dists}  # fmt: skip


def _dist(version: str, *requires: str) -> dict:
    return {"version": version, "requires": list(requires), "modules": []}


def test_closure_follows_requirements_and_markers_only() -> None:
    probe = _probe(
        app=_dist("1.0", "Lib_A>=1", 'winonly; sys_platform == "win32"', 'tests; extra == "t"'),
        **{"lib-a": _dist("2.0", "lib_b")},
        lib_b=_dist("3.0"),
        handmade=_dist("9.9"),  # installed by hand: needed by nothing
        winonly=_dist("1.0"),
        tests=_dist("1.0"),
    )
    assert sorted(requirement_closure(probe, ["app==1.0"])) == ["app", "lib-a", "lib-b"]


def test_closure_refuses_a_runtime_off_its_pins_or_incomplete() -> None:
    probe = _probe(app=_dist("1.0", "gone"), gone=_dist("1.0"))
    with pytest.raises(ManifestError, match=r"not app==2\.0"):
        requirement_closure(probe, ["app==2.0"])
    with pytest.raises(ManifestError, match=r"gone \(needed by app\) is not installed"):
        requirement_closure(_probe(app=_dist("1.0", "gone")), ["app"])


def test_packages_line_says_what_to_import() -> None:
    manifest = make_manifest(
        "demo",
        runtime="Python 3.12.1",
        standard_library="the Python standard library",
        packages=[
            {"name": "zeta", "version": "1", "modules": ["zeta"]},
            {"name": "fenics-basix", "version": "0.11.0", "modules": ["basix"]},
            {"name": "sympy", "version": "1.14.0", "modules": ["isympy", "sympy"]},
        ],
        dependencies=[],
    )
    assert packages_line(manifest) == (
        "Python 3.12.1 with fenics-basix 0.11.0 (import basix), sympy 1.14.0 "
        "(also import isympy), zeta 1, and the Python standard library"
    )


def test_pins_hold_the_whole_closure_modules_or_not(monkeypatch, tmp_path: Path) -> None:
    dists = {
        "solver-lib": {**_dist("0.11.0", "mpich", "numpy>=2"), "modules": ["solver"]},
        "mpich": _dist("4.3.0"),  # a shared library only: not listed, but pinned
        "numpy": {**_dist("2.5.5"), "modules": ["numpy"]},
        "handmade": {**_dist("1.0"), "modules": ["handmade"]},  # not needed: not pinned
    }
    monkeypatch.setattr(runtime_packages, "probe_python_runtime", lambda p, e: _probe(**dists))
    manifest = python_runtime_manifest(
        "demo", Path("python"), {}, roots=["solver-lib==0.11.0"], listed=["solver-lib"]
    )
    assert manifest["pins"] == ["mpich==4.3.0", "numpy==2.5.5", "solver-lib==0.11.0"]
    assert [e["name"] for e in manifest["dependencies"]] == ["numpy"]
    path = write_constraints(manifest["pins"], tmp_path / "pins.txt")
    assert path.read_text() == "mpich==4.3.0\nnumpy==2.5.5\nsolver-lib==0.11.0\n"


@pytest.mark.parametrize(
    "pins, says",
    [
        ([], "non-empty list"),
        (["numpy>=2"], "name==version"),
        (["numpy==2.5.5 ; python_version<'3'"], "name==version"),
        (["numpy==2.5.5", "NumPy==2.6.0"], "pinned twice"),
    ],
)
def test_malformed_pins_are_refused(pins: list[str], says: str) -> None:
    manifest = {**_manifest_without_pins(), "pins": pins}
    with pytest.raises(ManifestError, match=says):
        validate_manifest(manifest, source="m.json")


def _manifest_without_pins() -> dict:
    return make_manifest(
        "pkgtrack",
        runtime="Python 3.12.1",
        standard_library="the Python standard library",
        packages=[{"name": "sympy", "version": "1.0", "modules": ["sympy"]}],
        dependencies=[],
    )


def test_a_manifest_without_pins_names_the_command_that_makes_them(tmp_path: Path) -> None:
    track = Track("pkgtrack", "Pkg", "python", "solver.py", runtime_manifest=tmp_path / "m.json")
    (tmp_path / "m.json").write_text(manifest_json(_manifest_without_pins()))
    with pytest.raises(ManifestError, match=r"pdeagent env setup pkgtrack --update-pins"):
        load_pins(track)


@pytest.mark.parametrize("name", PYTHON_TRACKS)
def test_the_python_tracks_pin_every_listed_package(name: str, pdeagent_host) -> None:
    manifest = load_manifest(pdeagent_host.get_track(name))
    pins = dict(p.split("==") for p in manifest["pins"])
    for entry in manifest["packages"] + manifest["dependencies"]:
        assert pins.get(entry["name"]) == entry["version"], entry["name"]


class PackagesPlugin:
    """A track whose 'runtime' reports ``self.version`` of its one package, and whose
    setup records how it was asked to install."""

    __name__ = "packages_plugin"

    def __init__(self, track: Track) -> None:
        self.track = track
        self.version = "1.0"
        self.setups: list[bool] = []

    @hookimpl
    def pdeagent_register_tracks(self, register):
        register(self.track)

    @hookimpl
    def pdeagent_setup_environment(self, track, force, log, update_pins):
        if track.name != self.track.name:
            return None
        self.setups.append(update_pins)
        if update_pins:
            self.version = "2.0"  # the newest version the requirements allow today
        return []

    @hookimpl
    def pdeagent_runtime_packages(self, track):
        if track.name != self.track.name:
            return None
        return make_manifest(
            track.name,
            runtime="Python 3.12.1",
            standard_library="the Python standard library",
            packages=[{"name": "sympy", "version": self.version, "modules": ["sympy"]}],
            dependencies=[],
            pins=["mpmath==1.3.0", f"sympy=={self.version}"],
        )


@pytest.fixture
def packages_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    track = Track("pkgtrack", "Pkg", "python", "solver.py", runtime_manifest=tmp_path / "m.json")
    plugin = PackagesPlugin(track)
    monkeypatch.setattr(common, "_host", load_plugins(extra_plugins=[plugin], entry_points=[]))
    yield plugin
    common.reset_host()


def test_pdeagent_runtime_packages_write_then_compare(packages_plugin) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["env", "packages", "-t", "pkgtrack"])
    assert missing.exit_code == 2
    assert "pdeagent env packages -t pkgtrack --write" in missing.output

    written = runner.invoke(app, ["env", "packages", "-t", "pkgtrack", "--write"])
    assert written.exit_code == 0, written.output
    manifest = load_manifest(packages_plugin.track)
    assert manifest["packages"] == [{"name": "sympy", "version": "1.0", "modules": ["sympy"]}]
    assert runner.invoke(app, ["env", "packages", "-t", "pkgtrack"]).exit_code == 0

    packages_plugin.version = "2.0"  # the runtime changed: the committed file is stale
    stale = runner.invoke(app, ["env", "packages", "-t", "pkgtrack", "--json"])
    assert stale.exit_code == 1
    assert json.loads(stale.stdout)["packages"][0]["version"] == "2.0"
    assert load_manifest(packages_plugin.track)["packages"][0]["version"] == "1.0"


def test_update_pins_rewrites_the_manifest_from_the_new_runtime(packages_plugin) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["env", "packages", "-t", "pkgtrack", "--write"]).exit_code == 0
    assert load_pins(packages_plugin.track) == ["mpmath==1.3.0", "sympy==1.0"]
    plain = runner.invoke(app, ["env", "setup", "pkgtrack"])
    assert plain.exit_code == 0, plain.output
    assert load_pins(packages_plugin.track) == ["mpmath==1.3.0", "sympy==1.0"]  # untouched
    moved = runner.invoke(app, ["env", "setup", "pkgtrack", "--update-pins"])
    assert moved.exit_code == 0, moved.output
    assert packages_plugin.setups == [False, True]
    assert load_pins(packages_plugin.track) == ["mpmath==1.3.0", "sympy==2.0"]
    assert load_manifest(packages_plugin.track)["packages"][0]["version"] == "2.0"
    assert "- sympy==1.0" in moved.output and "+ sympy==2.0" in moved.output
    assert "1 changed or new" in moved.output
    refused = runner.invoke(app, ["env", "setup", "--sandbox", "docker", "--update-pins"])
    assert refused.exit_code == 2 and "not a sandbox" in refused.output
