"""The committed runtime manifest is what the Firedrake runtime reports; sympy imports."""

from __future__ import annotations

import subprocess

import pytest
from firedrake_harness import firedrake_record
from pdeagent_firedrake import TRACK, environment

from pdeagent.runtime_packages import load_manifest, manifest_json, write_command

pytestmark = pytest.mark.firedrake


def test_committed_manifest_matches_the_runtime() -> None:
    firedrake_record()  # skip (or fail under PDEAGENT_REQUIRE_RUNTIMES=1) without a runtime
    live = environment.runtime_packages()
    assert manifest_json(load_manifest(TRACK)) == manifest_json(live), (
        f"the runtime changed: run `{write_command(TRACK.name)}`"
    )


def test_sympy_imports_in_the_runtime() -> None:
    record = firedrake_record()
    proc = subprocess.run(
        [record["python"], "-c", "import sympy; print(sympy.sympify('sin(pi*x)').diff('x'))"],
        capture_output=True, text=True, timeout=300, env=environment.runtime_env(record),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "pi*cos(pi*x)"
