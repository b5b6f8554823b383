"""Every in-tree plugin pins a compatible range of the core it is written against
(issue #21), and that range admits the core of this checkout."""

from __future__ import annotations

import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import pdeagent

from .conftest import REPO_ROOT

PLUGINS = sorted(
    p.parent.relative_to(REPO_ROOT).as_posix()
    for p in (REPO_ROOT / "plugins").glob("**/pyproject.toml")
)


def core_version() -> Version:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == pdeagent.__version__, "pyproject.toml and __version__ differ"
    return Version(project["version"])


def test_the_in_tree_plugins_are_found():
    assert {"plugins/dolfinx_track", "plugins/dealii_track", "plugins/firedrake_track"} <= set(
        PLUGINS
    )
    assert len([p for p in PLUGINS if p.startswith("plugins/providers/")]) >= 4


@pytest.mark.parametrize("plugin", PLUGINS)
def test_plugin_pins_a_range_that_admits_this_core(plugin):
    project = tomllib.loads((REPO_ROOT / plugin / "pyproject.toml").read_text())["project"]
    pins = [Requirement(d) for d in project["dependencies"]]
    core = [r for r in pins if r.name == "pdeagent"]
    assert len(core) == 1, f"{plugin} must depend on pdeagent exactly once"
    spec = core[0].specifier
    lower = [s for s in spec if s.operator in (">=", "~=", "==")]
    upper = [s for s in spec if s.operator in ("<", "~=", "==")]
    assert lower and upper, f"{plugin}: pdeagent needs a lower and an upper bound, got {spec!r}"
    version = core_version()
    assert spec.contains(version), f"{plugin}: {spec} does not admit the core {version}"
    # the range is a compatible one: it excludes the next breaking release
    breaking = (
        Version(f"{version.major + 1}.0") if version.major else Version(f"0.{version.minor + 1}")
    )
    assert not spec.contains(breaking), f"{plugin}: {spec} admits the breaking {breaking}"
