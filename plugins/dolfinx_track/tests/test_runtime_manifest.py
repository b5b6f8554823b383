"""The committed runtime manifest is what the DOLFINx runtime reports; sympy imports."""

from __future__ import annotations

import subprocess

import pytest
from dolfinx_harness import dolfinx_python

from pdeagent.runtime_packages import load_manifest, manifest_json, write_command
from pdeagent_dolfinx import TRACK, environment

pytestmark = pytest.mark.dolfinx


def test_committed_manifest_matches_the_runtime() -> None:
    live = environment.runtime_packages(dolfinx_python())
    assert manifest_json(load_manifest(TRACK)) == manifest_json(live), (
        f"the runtime changed: run `{write_command(TRACK.name)}`"
    )


def test_sympy_imports_in_the_runtime() -> None:
    python = dolfinx_python()
    proc = subprocess.run(
        [str(python), "-c", "import sympy; print(sympy.sympify('sin(pi*x)').diff('x'))"],
        capture_output=True, text=True, timeout=300, env=environment.runtime_env(python),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "pi*cos(pi*x)"
