"""A sample pdeagent track (NumPy finite differences), registered only via its entry point."""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from pdeagent import hookimpl
from pdeagent.contracts.python import contract_text, prepare_python, python_invocation
from pdeagent.sandbox import Sandbox, python_runtime_expose
from pdeagent.stages import Capabilities, Invocation, PrepareResult, PromptPieces, Track

TRACK = Track(
    name="numpy_fd",
    library="NumPy",
    language="python",
    source_filename="solver.py",
    library_version=None,
    description="Sample track: finite differences with NumPy only (no FEM library).",
    # fd_poisson.py: -div(kappa grad u) = f with Dirichlet data on a 2-D rectangle
    capabilities=Capabilities(
        families=["poisson"],
        domains=["unit_square"],
        dimensions=[2],
        time_dependence=["steady"],
        outputs=["scalar"],
        boundary_conditions=["dirichlet"],
    ),
)

GUIDE = """\
# NumPy finite-difference guide (sample track)

Only `numpy` is available. Build the grid with `numpy.linspace`, assemble the
5-point Laplacian on the interior points, solve with `numpy.linalg.solve`, and
write `solution.npz` with `numpy.savez("solution.npz", x=x, y=y, u=U)` where
`U[j, i] = u(x[i], y[j])`.
"""


def _python() -> Path:
    """Interpreter of the sandboxed run: $PDEAGENT_SAMPLE_FD_PYTHON or the harness's own."""
    return Path(os.environ.get("PDEAGENT_SAMPLE_FD_PYTHON", sys.executable))


@hookimpl
def pdeagent_register_tracks(register) -> None:
    register(TRACK)


@hookimpl
def pdeagent_prompt_pieces(
    track: Track, case_view: dict[str, Any], mode: str
) -> PromptPieces | None:
    scaffold = None
    if mode == "template":
        scaffold = (
            "import json\nimport numpy as np\n\n\ndef solve(case_spec):\n"
            "    # TODO: the numerical core\n    raise NotImplementedError\n"
        )
    return PromptPieces(contract=contract_text(TRACK.library), guide=GUIDE, scaffold=scaffold)


@hookimpl
def pdeagent_prepare(
    track: Track, source: str, build_dir: Path, sandbox: Sandbox
) -> PrepareResult | None:
    return prepare_python(source, build_dir, TRACK.source_filename)


@hookimpl
def pdeagent_null_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """Imports NumPy and writes zeros (the core's Python null program)."""
    from pdeagent.contracts.python_null import null_source

    return null_source(TRACK.library, [])


@hookimpl
def pdeagent_calibration_source(
    track: Track, case_view: dict[str, Any], calibration_config: dict[str, Any] | None
) -> str | None:
    """The sample track's baseline: the finite-difference solver shipped in this package,
    on the grid refined ``calibration_config["numpy_fd"]["refine"]`` times (default 1)."""
    refine = int(((calibration_config or {}).get("numpy_fd") or {}).get("refine", 1))
    return _refined(refine)


def _refined(refine: int) -> str:
    source = resources.files(__name__).joinpath("fd_poisson.py").read_text(encoding="utf-8")
    marker = "REFINE = 1  #"
    if marker not in source:
        raise RuntimeError("fd_poisson.py lost its REFINE line")
    return source.replace(marker, f"REFINE = {refine}  #", 1)


@hookimpl
def pdeagent_calibration_ladder(track: Track, case_view: dict[str, Any]) -> list | None:
    """One chain: the evaluation grid refined 1, 2, 3, 4 times per axis."""
    return [[{"refine": r} for r in (1, 2, 3, 4)]]


SCREENING_ENV = "PDEAGENT_SAMPLE_FD_SCREENING"
"""Set to 1 and the track offers a screening program (the frontier-2 search); unset, it
is calibrated by frontier-1, so the tests reach both searches."""


@hookimpl
def pdeagent_screening_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """The baseline solver (its ``solve`` takes ``{"refine": r}`` settings) as a screening
    program, when :data:`SCREENING_ENV` is 1."""
    if os.environ.get(SCREENING_ENV) != "1":
        return None
    from pdeagent.contracts.python_bundle import with_screening_driver

    return with_screening_driver(_refined(1))


REFINEMENT = {"intermediate": 2, "reference": 4}


@hookimpl
def pdeagent_reference_source(
    track: Track, case_view: dict[str, Any], reference_config: dict[str, Any] | None, fidelity: str
) -> str | None:
    """The baseline on a grid refined 2x (intermediate) or 4x (reference) per axis, or
    ``reference_config["numpy_fd"]["refine"]`` when the case states it."""
    if fidelity not in REFINEMENT:
        raise ValueError(f"unknown fidelity {fidelity!r}; known: {sorted(REFINEMENT)}")
    refine = REFINEMENT[fidelity]
    if fidelity == "reference":
        refine = int(((reference_config or {}).get("numpy_fd") or {}).get("refine", refine))
    return _refined(refine)


@hookimpl
def pdeagent_invocation(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> Invocation | None:
    python = _python()
    return python_invocation(
        python, filename=TRACK.source_filename, expose=python_runtime_expose(python)
    )
