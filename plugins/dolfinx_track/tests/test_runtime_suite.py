"""Run the runtime-side test files (tests/runtime/) with the DOLFINx runtime's interpreter.

They import dolfinx directly, which the harness never does; pytest is installed into
the runtime environment by scripts/setup-dev.sh for this purpose.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from dolfinx_harness import dolfinx_python

from pdeagent.testing import runtime_missing
from pdeagent_dolfinx.environment import runtime_env

pytestmark = pytest.mark.dolfinx

RUNTIME_TESTS = Path(__file__).parent / "runtime"


@pytest.mark.parametrize("name", sorted(p.name for p in RUNTIME_TESTS.glob("test_*.py")))
def test_runtime_file_passes(name, tmp_path):
    python = dolfinx_python()
    env = runtime_env(python)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    probe = subprocess.run([str(python), "-c", "import pytest"], env=env, capture_output=True)
    if probe.returncode != 0:
        runtime_missing(f"pytest is not installed in the DOLFINx runtime ({python})")
    proc = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(RUNTIME_TESTS / name)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout.splitlines()[-1]
