"""The per-track hooks every Python track with bundled family solvers writes the same
way: prompt pieces, the import stage, the calibration and reference sources, the
calibration ladder.

A track builds one :class:`PythonTrackHooks` and binds its methods to hook names in its
plugin module, where pluggy finds them (a track's hooks must live in the plugin that
registers the track)::

    HOOKS = PythonTrackHooks(TRACK, package=__name__, guide="MYFEM_GUIDE.md", bundler=BUNDLER)
    pdeagent_prompt_pieces = HOOKS.pdeagent_prompt_pieces
    pdeagent_calibration_source = HOOKS.pdeagent_calibration_source

Nothing here imports a FEM library: the track's ``scaffolds`` and ``ladder`` modules are
imported when a hook first needs them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from pdeagent import hookimpl
from pdeagent.contracts.python import contract_text, prepare_python
from pdeagent.contracts.python_bundle import PythonBundler
from pdeagent.contracts.track_hooks import highest_degree_first, package_text, prompt_pieces
from pdeagent.sandbox import Sandbox
from pdeagent.stages import PrepareResult, PromptPieces, Track


class PythonTrackHooks:
    """Hooks of ``track``. They need no check of the track they are called for: the core
    routes a per-track hook only to the plugin that registered the track
    (:meth:`pdeagent.plugins.PluginHost.track_hook_caller`).

    ``package`` is the track's plugin package. It ships ``guide`` (the API guide, a file
    name), ``<package>.scaffolds.scaffold(family, title) -> str`` (the template-mode
    scaffold) and ``<package>.ladder.ladder(case_view) -> chains`` (lowest degree first).
    ``bundler`` bundles the track's family solvers. The contract is
    :func:`~pdeagent.contracts.python.contract_text` of ``"<library> <library_version>"``."""

    def __init__(self, track: Track, *, package: str, guide: str, bundler: PythonBundler):
        self.track = track
        self.package = package
        self.guide = guide
        self.bundler = bundler

    def _module(self, name: str) -> Any:
        return importlib.import_module(f"{self.package}.{name}")

    @hookimpl
    def pdeagent_prompt_pieces(
        self, track: Track, case_view: dict[str, Any], mode: str
    ) -> PromptPieces | None:
        """The Python contract, the package's guide and, in template mode, its scaffold."""
        library = " ".join(filter(None, (track.library, track.library_version)))
        return prompt_pieces(
            case_view,
            mode,
            contract=contract_text(library),
            guide=package_text(self.package, self.guide),
            scaffold=self._module("scaffolds").scaffold,
        )

    @hookimpl
    def pdeagent_prepare(
        self, track: Track, source: str, build_dir: Path, sandbox: Sandbox
    ) -> PrepareResult | None:
        """:func:`~pdeagent.contracts.python.prepare_python`: parse, check, store."""
        return prepare_python(source, build_dir, track.source_filename)

    @hookimpl
    def pdeagent_calibration_source(
        self, track: Track, case_view: dict[str, Any], calibration_config: dict[str, Any] | None
    ) -> str | None:
        """The bundled calibration solver of the case's family; settings from the case's
        ``calibration_config[<track>]`` when given, else the module's DEFAULTS."""
        return self.bundler.calibration_source(case_view, calibration_config, track=track.name)

    @hookimpl
    def pdeagent_screening_source(self, track: Track, case_view: dict[str, Any]) -> str | None:
        """The bundled calibration solver of the case's family as a screening program."""
        return self.bundler.screening_source(case_view)

    @hookimpl
    def pdeagent_reference_source(
        self,
        track: Track,
        case_view: dict[str, Any],
        reference_config: dict[str, Any] | None,
        fidelity: str,
    ) -> str | None:
        """The bundled family solver at ``fidelity``; the case's generic reference config
        and ``reference_config[<track>]`` override the module's REFERENCE settings."""
        return self.bundler.reference_source(
            case_view, reference_config, fidelity, track=track.name
        )

    @hookimpl
    def pdeagent_calibration_ladder(
        self, track: Track, case_view: dict[str, Any]
    ) -> list[list[dict[str, Any]]] | None:
        """The chains of the package's ``ladder.py`` for the case, highest degree first."""
        return highest_degree_first(self._module("ladder").ladder(case_view))
