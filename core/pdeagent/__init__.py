"""pdeagent: a benchmark harness for LLM-written finite-element solvers."""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

PROJECT_NAME = "pdeagent"
"""The pluggy project name and the entry-point group of plugins."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

__all__ = ["PROJECT_NAME", "__version__", "hookimpl", "hookspec"]
