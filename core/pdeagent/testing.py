"""pytest plugin for plugin authors (auto-loaded through the ``pytest11`` entry point).

Fixtures:

- ``pdeagent_host``: a fresh :class:`~pdeagent.plugins.PluginHost` with every installed
  plugin loaded strictly (a plugin that fails to import fails the test).
- ``pdeagent_host_factory``: call it with ``extra_plugins=[...]`` (e.g. a scripted fake
  provider module or object) to get a fresh host that also has those registered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pdeagent.plugins import PluginHost, load_plugins


@pytest.fixture
def pdeagent_host_factory() -> Callable[..., PluginHost]:
    def make(**kwargs: Any) -> PluginHost:
        kwargs.setdefault("strict", True)
        return load_plugins(**kwargs)

    return make


@pytest.fixture
def pdeagent_host(pdeagent_host_factory: Callable[..., PluginHost]) -> PluginHost:
    return pdeagent_host_factory()
